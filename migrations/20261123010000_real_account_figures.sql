-- Figures as a real AWS account gives them: grains that differ by rounding, provisional
-- (Estimated) days, budgets raised mid-period, and stable keys for budgets as code.

-- The largest per-day, per-metric difference between the three group-by pairs that a run
-- accepted (each is stored as answered; they may differ by rounding, never by a cent).
alter table ingestion_runs add column grain_difference numeric;

-- Whether AWS still called the day's figures Estimated, so pages can mark provisional days
-- and the run-rate can skip them.
alter table daily_project_costs add column estimated boolean not null default false;
create index daily_project_costs_settled on daily_project_costs (day) where not estimated;
create index daily_project_costs_estimated on daily_project_costs (day) where estimated;
-- Days an earlier ingestion stored as Estimated are marked from the start.
update daily_project_costs d set estimated = true from ingested_days i where i.day = d.day and i.estimated;

-- A budget raised mid-period re-arms the thresholds it no longer crosses: their alerts stay
-- in the history as 'rearmed', and a later crossing of the raised amount queues a new one.
alter table budget_alerts drop constraint budget_alerts_budget_id_period_start_percent_kind_key;
alter table budget_alerts drop constraint budget_alerts_status_check;
alter table budget_alerts add constraint budget_alerts_status_check
    check (status in ('queued', 'sent', 'failed', 'rearmed'));
create unique index budget_alerts_live on budget_alerts (budget_id, period_start, percent, kind)
    where status <> 'rearmed';

-- A stable identity for budgets kept as code: a rename in the YAML keeps the budget, its
-- alert history and its AWS budget. Without `key:` the name is the key.
alter table budgets add column key text;
update budgets set key = name;
alter table budgets alter column key set not null;
alter table budgets add constraint budgets_key_check check (length(key) between 1 and 200);
create unique index budgets_key on budgets (lower(key));

-- The same for approvals: every version carries its approval's key (the project when none
-- was given), so a project whose tag value is renamed keeps one history.
alter table approvals add column key text;
update approvals set key = project;
alter table approvals alter column key set not null;
alter table approvals add constraint approvals_key_check check (length(key) between 1 and 200);
-- Case-sensitive, as project tag values are.
create unique index approvals_current_key on approvals (key) where ended_at is null;

-- And for enforcement policies: `team:<name>` (`org` for the default) when none is given,
-- which no two policies can share whatever their teams are called.
alter table enforcement_policies add column key text;
update enforcement_policies p set key = coalesce((select 'team:' || t.name from teams t where t.id = p.team_id), 'org');
alter table enforcement_policies alter column key set not null;
alter table enforcement_policies add constraint enforcement_policies_key_check check (length(key) between 1 and 200);
create unique index enforcement_policies_key on enforcement_policies (lower(key));
-- Rows written without a key (the built-in default, scripts) get `team:<name>` or `org`.
create function enforcement_policy_default_key() returns trigger language plpgsql as $$
begin
    if new.key is null then
        new.key := coalesce((select 'team:' || name from teams where id = new.team_id), 'org');
    end if;
    return new;
end $$;
create trigger enforcement_policies_default_key before insert on enforcement_policies
    for each row execute function enforcement_policy_default_key();
