-- Commitments the organisation owns, as Cost Explorer reports them (#37): Savings Plans and
-- Reserved Instance coverage and utilisation over the last read period, and AWS's own Savings
-- Plans purchase recommendation. Each read replaces the previous one whole; a failed read
-- keeps the last good figures and records why.
create table commitment_reads (
    id boolean primary key default true check (id),
    -- The period the figures cover (`period_to` exclusive); null until a read succeeded.
    period_from date,
    period_to date,
    read_at timestamptz,
    -- Why the last attempt failed, when it did.
    problem text,
    attempted_at timestamptz not null default now(),
    check ((period_from is null) = (period_to is null) and (period_from is null) = (read_at is null)),
    check (period_from is null or period_from < period_to)
);

create table commitment_coverage (
    offer text not null check (offer in ('savings_plan', 'reserved')),
    sagemaker boolean not null,
    -- The instance family (Savings Plans) or instance type (Reserved Instances).
    scope text not null,
    covered_usd numeric not null check (covered_usd >= 0),
    on_demand_usd numeric not null check (on_demand_usd >= 0),
    covered_hours numeric not null check (covered_hours >= 0),
    on_demand_hours numeric not null check (on_demand_hours >= 0),
    primary key (offer, sagemaker, scope)
);

create table commitment_use (
    offer text not null check (offer in ('savings_plan', 'reserved')),
    -- The Savings Plans type, or the reservation's subscription ID.
    id text not null,
    instance_type text not null default '',
    commitment_usd numeric not null check (commitment_usd >= 0),
    used_usd numeric not null check (used_usd >= 0 and used_usd <= commitment_usd),
    net_savings_usd numeric not null,
    primary key (offer, id)
);

create table aws_savings_plan_recommendations (
    plan_type text primary key,
    hourly_commitment numeric not null check (hourly_commitment >= 0),
    monthly_saving numeric not null,
    saving_share numeric,
    lookback_days integer not null check (lookback_days > 0)
);
