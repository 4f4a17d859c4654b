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
-- accounts were). It is derived: emptied here, and written again from the facts at the next
-- `serve` start (`costs::rollups::fill_missing`), the allocation and page rollups with it.
truncate daily_project_costs, allocated_daily_costs, team_daily_costs, allocated_project_spans,
         owned_spend_spans, record_type_days;
alter table daily_project_costs add column account_id text not null default '',
    drop constraint daily_project_costs_pkey,
    add primary key (day, project, account_id);

alter table allocated_daily_costs add column account_id text not null default '',
    drop constraint allocated_daily_costs_source_check,
    add constraint allocated_daily_costs_source_check
        check (source in ('direct', 'user', 'account', 'shared', 'unassigned'));
-- An account-filtered page reads the allocation itself, not the page rollups.
create index allocated_daily_costs_account_day on allocated_daily_costs (account_id, day);
-- The days an account has spend on: what mapping it to a team rewrites.
create index daily_project_costs_account on daily_project_costs (account_id, day);
