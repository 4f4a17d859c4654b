-- Accounts in the allocation (#33): the daily rollup and the allocation are kept per linked
-- account, so that a team can be given the untagged spend of its own accounts (the
-- "account → team" step) and every page can be filtered to one account.

-- Which team an AWS account's unclaimed spend goes to: at most one team per account.
create table team_accounts (
    account_id text primary key check (account_id ~ '^[0-9]{12}$'),
    team_id bigint not null references teams (id) on delete cascade,
    updated_at timestamptz not null default now()
);
create index team_accounts_team on team_accounts (team_id);
create trigger team_accounts_version after insert or update or delete or truncate on team_accounts
    for each statement execute function bump_data_version();

-- The rollup holds one row per project, day and account ('' for facts stored before
-- accounts were). It is written again here from the facts, in this transaction, so no
-- reader (budgets, enforcement, statements, exports) ever sees it empty or partial. The
-- allocation keeps its rows (account '') until `allocation::store::fill_gaps` rewrites the
-- days whose rollup has accounts, at the next `serve` start or `burnrate migrate`; until
-- then its totals are right and only its split by account is missing.
alter table daily_project_costs add column account_id text not null default '',
    drop constraint daily_project_costs_pkey;
truncate daily_project_costs;
insert into daily_project_costs
    (day, project, account_id, unblended, amortized, gpu_unblended, gpu_amortized, spot_unblended, spot_amortized,
     estimated)
select c.day, c.project, c.account_id, sum(c.unblended), sum(c.amortized),
       coalesce(sum(c.unblended) filter (where u.gpu_count > 0), 0),
       coalesce(sum(c.amortized) filter (where u.gpu_count > 0), 0),
       coalesce(sum(c.unblended) filter (where u.purchase_option = 'spot'), 0),
       coalesce(sum(c.amortized) filter (where u.purchase_option = 'spot'), 0),
       bool_or(c.estimated)
from costs_by_usage_type c
left join usage_types u on u.usage_type = c.usage_type
group by c.day, c.project, c.account_id;
update daily_project_costs r set
    credit_unblended = k.credit_unblended, credit_amortized = k.credit_amortized,
    refund_unblended = k.refund_unblended, refund_amortized = k.refund_amortized,
    tax_unblended = k.tax_unblended, tax_amortized = k.tax_amortized
from (
    select day, project, account_id,
           coalesce(sum(unblended) filter (where record_type = 'Credit'), 0) as credit_unblended,
           coalesce(sum(amortized) filter (where record_type = 'Credit'), 0) as credit_amortized,
           coalesce(sum(unblended) filter (where record_type = 'Refund'), 0) as refund_unblended,
           coalesce(sum(amortized) filter (where record_type = 'Refund'), 0) as refund_amortized,
           coalesce(sum(unblended) filter (where record_type = 'Tax'), 0) as tax_unblended,
           coalesce(sum(amortized) filter (where record_type = 'Tax'), 0) as tax_amortized
    from costs_by_record_type
    where record_type in ('Credit', 'Refund', 'Tax')
    group by 1, 2, 3
) k
where k.day = r.day and k.project = r.project and k.account_id = r.account_id;
alter table daily_project_costs add primary key (day, project, account_id);

alter table allocated_daily_costs add column account_id text not null default '',
    drop constraint allocated_daily_costs_source_check,
    add constraint allocated_daily_costs_source_check
        check (source in ('direct', 'user', 'account', 'shared', 'unassigned'));
-- An account-filtered page reads the allocation itself, not the page rollups.
create index allocated_daily_costs_account_day on allocated_daily_costs (account_id, day);
-- The days an account has spend on: what mapping it to a team rewrites.
create index daily_project_costs_account on daily_project_costs (account_id, day);
