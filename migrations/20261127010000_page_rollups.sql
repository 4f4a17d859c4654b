-- Page rollups (#20): what the dashboard's pages read, so that a page's first view after a
-- data change, and a range nobody asked for before, aggregate hundreds of rows instead of a
-- month of facts. All of them are derived, rewritten by `allocation::rollups` in the
-- transaction that rewrites the allocation of the same days (ingestion, the demo, mapping,
-- team and rule changes, a catalogue update), so they never disagree with it.
--
-- `span` rows: 'day' rows hold one day; 'week' rows (Monday to Sunday) and 'month' rows
-- hold the sum of their days' rows, keyed by the block's first day (`spans::cover` says which
-- blocks tile a range). No foreign keys: a deleted team's or rule's rows are rewritten in
-- the same transaction, and a cascade over these tables would only slow that down.

-- The allocation per team (NULL: Unassigned), day and step: the Teams table, team totals,
-- the Overview's teams and burn chart, and budgets of teams and of the organisation.
create table team_daily_costs (
    day date not null,
    team_id bigint,
    source text not null,
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
    unique nulls not distinct (day, team_id, source)
);

-- The allocation without its user grain, per block: a team's parts by step, project and
-- rule, and the projects a team's Overview lists.
create table allocated_project_spans (
    span text not null check (span in ('day', 'week', 'month')),
    day date not null,
    team_id bigint,
    source text not null,
    rule_id bigint,
    project text not null,
    unblended numeric not null,
    amortized numeric not null,
    gpu_unblended numeric not null,
    gpu_amortized numeric not null,
    credit_unblended numeric not null,
    credit_amortized numeric not null,
    refund_unblended numeric not null,
    refund_amortized numeric not null,
    tax_unblended numeric not null,
    tax_amortized numeric not null
);
create index allocated_project_spans_block on allocated_project_spans (span, day, team_id);

-- The spend of the projects each team owns (NULL: projects no team owns, untagged
-- included), per block, broken down as a Team page shows it:
--   total     ''             the team's projects together (its chart's "other projects")
--   project   project        with its credit and refund parts, for the credits switch
--   user      user tag value
--   service   service
--   family    'p4d (A100)'   GPU usage only, with its GPU-hours
--   workload  workload       what a SageMaker usage type says
--   declared  project        spend whose usage type says no workload: the project's declared
--                            workload applies, read when the page is (so declaring one
--                            rewrites nothing)
--   purchase  'spot' or 'on_demand'
-- Breakdowns other than project are net of credits, as Cost Explorer reports them.
create table owned_spend_spans (
    dimension text not null
        check (dimension in ('total', 'project', 'user', 'service', 'family', 'workload', 'declared', 'purchase')),
    span text not null check (span in ('day', 'week', 'month')),
    day date not null,
    team_id bigint,
    key text not null,
    unblended numeric not null,
    amortized numeric not null,
    credit_unblended numeric not null default 0,
    credit_amortized numeric not null default 0,
    refund_unblended numeric not null default 0,
    refund_amortized numeric not null default 0,
    gpu_hours numeric not null default 0
);
create index owned_spend_spans_block on owned_spend_spans (dimension, span, day, team_id, key);

-- The organisation's spend per day and record type: the Overview's record-type lines.
create table record_type_days (
    day date not null,
    record_type text not null,
    unblended numeric not null,
    amortized numeric not null,
    primary key (day, record_type)
);

-- A project's page and budget read its own rows: without these, a range of days is read
-- through the day-first primary keys, every project's rows of those days.
create index daily_project_costs_project on daily_project_costs (project, day);
create index costs_by_user_project on costs_by_user (project, day);
create index costs_by_service_project on costs_by_service (project, day);
create index costs_by_usage_type_project on costs_by_usage_type (project, day);

-- Existing databases are filled at start-up (`allocation::rollups::fill_missing`), by the
-- code that writes them from now on.

create trigger team_daily_costs_version after insert or update or delete or truncate on team_daily_costs
    for each statement execute function bump_data_version();
create trigger allocated_project_spans_version after insert or update or delete or truncate on allocated_project_spans
    for each statement execute function bump_data_version();
create trigger owned_spend_spans_version after insert or update or delete or truncate on owned_spend_spans
    for each statement execute function bump_data_version();
create trigger record_type_days_version after insert or update or delete or truncate on record_type_days
    for each statement execute function bump_data_version();
