-- Allocation: shared-cost rules, and each day's spend as allocated to teams by the one
-- precedence (project's team, user tag's team, shared-cost rules, Unassigned).

-- Shared-cost rules, applied in `position` order to spend the first two steps left.
create table allocation_rules (
    id bigint generated always as identity primary key,
    name text not null check (length(name) between 1 and 200),
    position integer not null,
    -- What the rule takes: untagged spend, named projects, or named services' share.
    selector text not null check (selector in ('untagged', 'projects', 'services')),
    selector_values text[] not null default '{}',
    split text not null check (split in ('even', 'proportional', 'fixed')),
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
);
create unique index allocation_rules_name on allocation_rules (lower(name));

-- The teams a rule divides among (none listed: every team) and, for fixed splits, each
-- one's percentage. A team a rule names cannot be deleted until the rule lets it go: the
-- check is deferred so one `config import` may drop both.
create table allocation_rule_teams (
    rule_id bigint not null references allocation_rules (id) on delete cascade,
    team_id bigint not null references teams (id) deferrable initially deferred,
    percent numeric(7, 4),
    primary key (rule_id, team_id)
);
create index allocation_rule_teams_team on allocation_rule_teams (team_id);

-- Each day's spend as allocated: one row per team (null: Unassigned), source, rule, source
-- project and user tag value. A day's rows add up to its `daily_project_costs` to the last
-- digit. Rewritten with the rollup, and whenever mappings or rules change.
create table allocated_daily_costs (
    day date not null,
    team_id bigint references teams (id) on delete cascade,
    source text not null check (source in ('direct', 'user', 'shared', 'unassigned')),
    rule_id bigint references allocation_rules (id) on delete cascade,
    project text not null,
    user_name text not null default '',
    unblended numeric not null,
    amortized numeric not null,
    gpu_unblended numeric not null,
    gpu_amortized numeric not null,
    estimated boolean not null
);
create index allocated_daily_costs_day on allocated_daily_costs (day);
create index allocated_daily_costs_team_day on allocated_daily_costs (team_id, day);

create trigger allocated_daily_costs_version after insert or update or delete or truncate on allocated_daily_costs
    for each statement execute function bump_data_version();
create trigger allocation_rules_version after insert or update or delete or truncate on allocation_rules
    for each statement execute function bump_data_version();
create trigger allocation_rule_teams_version after insert or update or delete or truncate on allocation_rule_teams
    for each statement execute function bump_data_version();
create trigger tagged_users_version after insert or update or delete or truncate on tagged_users
    for each statement execute function bump_data_version();
