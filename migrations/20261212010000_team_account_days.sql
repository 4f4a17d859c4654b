-- The allocation per team, step and AWS account, per day (#54): what a Team page's
-- accounts table, the `?account=` views of the Teams and Team pages, the unmapped accounts
-- list and the API's costs by team read, instead of the allocation's rows of every project
-- and user tag (at 10M facts, 110,000 rows of one team's month against a few hundred here).
-- Derived like the other page rollups: `allocation::rollups::write_days` rewrites it in the
-- transaction that rewrites the allocation of the same days.
create table team_account_daily_costs (
    day date not null,
    team_id bigint,
    source text not null,
    account_id text not null,
    unblended numeric not null,
    amortized numeric not null,
    gpu_unblended numeric not null,
    gpu_amortized numeric not null,
    credit_unblended numeric not null,
    credit_amortized numeric not null,
    refund_unblended numeric not null,
    refund_amortized numeric not null,
    tax_unblended numeric not null,
    tax_amortized numeric not null,
    unique nulls not distinct (day, team_id, source, account_id)
);
create index team_account_daily_costs_team on team_account_daily_costs (team_id, day);
create index team_account_daily_costs_account on team_account_daily_costs (account_id, day);

insert into team_account_daily_costs
select day, team_id, source, account_id, sum(unblended), sum(amortized), sum(gpu_unblended), sum(gpu_amortized),
       sum(credit_unblended), sum(credit_amortized), sum(refund_unblended), sum(refund_amortized),
       sum(tax_unblended), sum(tax_amortized)
from allocated_daily_costs group by day, team_id, source, account_id;

create trigger team_account_daily_costs_version
    after insert or update or delete or truncate on team_account_daily_costs
    for each statement execute function bump_data_version();

-- A Team page filtered to one account reads the team's rows of the allocation in it (its
-- parts by step, project and rule): through the account's rows of every team, one month of
-- the account with most spend took 25 ms at 10M facts; through this index, under 1 ms.
create index allocated_daily_costs_account_team on allocated_daily_costs (account_id, team_id, day);
