-- Idle GPUs and endpoints reach people: one email per idle stretch to the project's team
-- owners, through the alert outbox like budget alerts and the weekly digest.
-- A stretch is one row; later passes while it lasts only move `last_idle_at`, so a stretch
-- that outlives the utilisation window is still the same stretch.
create table idle_alerts (
    id bigint generated always as identity primary key,
    -- `<host>/gpu<index>`, `<region>/<instance>/gpu<index>` or `endpoint/<region>/<name>/<variant>`
    resource text not null,
    project text not null,
    team_id bigint references teams (id) on delete set null,
    idle_since timestamptz not null,
    last_idle_at timestamptz not null,
    hours_at_alert numeric not null,
    usd_at_alert numeric,
    subject text not null,
    body_text text not null,
    body_html text not null,
    created_at timestamptz not null default now(),
    unique (resource, idle_since)
);
create index idle_alerts_latest on idle_alerts (resource, idle_since desc);

-- A lead or admin silences one resource's idle alerts until a time (audited).
create table idle_snoozes (
    resource text primary key,
    until timestamptz not null,
    reason text not null,
    snoozed_by text not null,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
);

alter table alert_deliveries
    add column idle_alert_id bigint references idle_alerts (id) on delete cascade,
    drop constraint alert_deliveries_one_source,
    add constraint alert_deliveries_one_source
        check (num_nonnulls(alert_id, enforcement_action_id, savings_digest_id, idle_alert_id) = 1);
create unique index alert_deliveries_idle on alert_deliveries (idle_alert_id, recipient)
    where idle_alert_id is not null;

-- A decision on an idle endpoint is a decision like any other.
alter table savings_decisions drop constraint savings_decisions_kind_check;
alter table savings_decisions add constraint savings_decisions_kind_check
    check (kind in ('spot', 'rightsize', 'always_on', 'commitment', 'idle_gpu', 'underused', 'idle_endpoint'));
