-- Teams, the projects and tagged users mapped to them, the usage-type catalogue,
-- daily cost facts at the grains Cost Explorer can fill, their rollup, and ingestion runs.

create table teams (
    id bigint generated always as identity primary key,
    -- 'Unassigned' is where unmapped spend is shown, so no team may take that name.
    name text not null unique check (length(name) between 1 and 100 and lower(name) <> 'unassigned'),
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
);

create table team_owners (
    team_id bigint not null references teams (id) on delete cascade,
    email text not null check (position('@' in email) > 1),
    name text not null default '',
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    primary key (team_id, email)
);

-- Values of the project cost-allocation tag, verbatim. Untagged spend ('' in the facts) has no row.
create table projects (
    name text primary key check (name <> ''),
    team_id bigint references teams (id) on delete set null,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
);
create index projects_team_id on projects (team_id);

-- Values of the user cost-allocation tag, verbatim (not sign-in accounts).
create table tagged_users (
    name text primary key check (name <> ''),
    team_id bigint references teams (id) on delete set null,
    display_name text not null default '',
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
);
create index tagged_users_team_id on tagged_users (team_id);

-- What a usage type means, parsed once when it is first seen rather than per row.
create table usage_types (
    usage_type text primary key,
    purchase_option text not null check (purchase_option in ('on_demand', 'spot', 'reserved', 'other')),
    instance_type text,
    instance_family text,
    gpu_model text,
    gpu_count integer,
    gpu_memory_gib integer,
    created_at timestamptz not null default now()
);

-- Cost Explorer answers at most two group-bys per request, so each fact table holds exactly
-- one request's grain. Every table sums to the same daily total as Cost Explorer itself.
-- '' in a tag column means the tag was absent (untagged spend); it is kept, never dropped.
create table costs_by_user (
    day date not null,
    project text not null,
    user_name text not null,
    unblended numeric not null,
    amortized numeric not null,
    usage_quantity numeric not null,
    estimated boolean not null,
    primary key (day, project, user_name)
);

create table costs_by_usage_type (
    day date not null,
    project text not null,
    usage_type text not null,
    unblended numeric not null,
    amortized numeric not null,
    usage_quantity numeric not null,
    estimated boolean not null,
    primary key (day, project, usage_type)
);

create table costs_by_service (
    day date not null,
    project text not null,
    service text not null,
    unblended numeric not null,
    amortized numeric not null,
    usage_quantity numeric not null,
    estimated boolean not null,
    primary key (day, project, service)
);

-- Daily totals per project, rewritten in the same transaction as the facts they summarise,
-- so pages read a few thousand rows instead of aggregating millions per request.
create table daily_project_costs (
    day date not null,
    project text not null,
    unblended numeric not null,
    amortized numeric not null,
    gpu_unblended numeric not null,
    gpu_amortized numeric not null,
    spot_unblended numeric not null,
    spot_amortized numeric not null,
    primary key (day, project)
);

create table ingestion_runs (
    id bigint generated always as identity primary key,
    trigger text not null check (trigger in ('schedule', 'cli', 'demo')),
    status text not null check (status in ('running', 'succeeded', 'failed')),
    window_from date,
    window_to date,
    requests integer not null default 0,
    api_cost numeric(12, 2) not null default 0,
    rows_written bigint not null default 0,
    error text,
    started_at timestamptz not null default now(),
    finished_at timestamptz,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
);
create index ingestion_runs_started_at on ingestion_runs (started_at desc);
