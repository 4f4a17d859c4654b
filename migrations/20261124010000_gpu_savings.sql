-- GPU savings: what each project runs (workload and model), the pricing an admin keeps as
-- code, decisions on recommendations (the savings ledger), and the weekly digest.

-- A fractional GPU (g6f: an eighth of an L4) counts as a fraction in GPU-hours.
alter table usage_types alter column gpu_count type numeric using gpu_count::numeric,
    alter column gpu_memory_gib type numeric using gpu_memory_gib::numeric;

-- What a project runs. SageMaker usage types override it per usage (Train: is training,
-- Host: serving, Notebk: dev). A model is declared whole or not at all.
alter table projects
    add column workload text not null default 'unknown'
        check (workload in ('training', 'batch', 'serving', 'dev', 'unknown')),
    add column model_params_b numeric check (model_params_b > 0 and model_params_b <= 100000),
    add column model_precision text check (model_precision in ('fp32', 'bf16', 'fp16', 'int8', 'int4')),
    add constraint projects_model_whole check ((model_params_b is null) = (model_precision is null));

-- The `pricing:` section of the config file, as imported (validated by burnrate first).
-- One row; absent means the catalogue's prices and defaults.
create table pricing_settings (
    id boolean primary key default true check (id),
    document jsonb not null,
    updated_at timestamptz not null default now()
);
create trigger pricing_settings_version after insert or update or delete or truncate on pricing_settings
    for each statement execute function bump_data_version();

-- A decision on one recommendation, identified by its key (kind, project, usage type,
-- instance type). Accepting records what was proposed and the baseline 30 days before,
-- so the realised saving can be measured against it later. Rows are never updated: a new
-- decision ends the previous one (`ended_at`), keeping the history.
create table savings_decisions (
    id bigint generated always as identity primary key,
    recommendation_key text not null check (length(recommendation_key) between 1 and 2000),
    kind text not null check (kind in ('spot', 'rightsize', 'always_on', 'commitment', 'idle_gpu', 'underused')),
    team text not null default '',
    project text not null default '',
    usage_type text not null default '',
    instance_type text not null default '',
    decision text not null check (decision in ('accepted', 'dismissed')),
    reason text not null check (length(reason) between 1 and 2000),
    proposed_monthly_saving numeric not null,
    decided_by text not null,
    decided_on date not null,
    decided_at timestamptz not null default now(),
    ended_at timestamptz
);
create unique index savings_decisions_current on savings_decisions (recommendation_key) where ended_at is null;
create trigger savings_decisions_version after insert or update or delete or truncate on savings_decisions
    for each statement execute function bump_data_version();

-- One weekly digest per team and week, composed once; its deliveries go through the alert
-- outbox, one per owner, like budget alerts.
create table savings_digests (
    id bigint generated always as identity primary key,
    team_id bigint not null references teams (id) on delete cascade,
    week_start date not null,
    subject text not null,
    body_text text not null,
    body_html text not null,
    created_at timestamptz not null default now(),
    unique (team_id, week_start)
);

alter table alert_deliveries
    add column savings_digest_id bigint references savings_digests (id) on delete cascade,
    drop constraint alert_deliveries_one_source,
    add constraint alert_deliveries_one_source
        check (num_nonnulls(alert_id, enforcement_action_id, savings_digest_id) = 1);
create unique index alert_deliveries_digest on alert_deliveries (savings_digest_id, recipient)
    where savings_digest_id is not null;
