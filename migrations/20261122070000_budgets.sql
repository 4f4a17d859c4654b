-- Budgets at org, team or project scope, their thresholds, and the alert outbox.

create table budgets (
    id bigint generated always as identity primary key,
    name text not null unique check (length(name) between 1 and 200),
    scope_kind text not null check (scope_kind in ('org', 'team', 'project')),
    -- Deferred, so one transaction may delete a team and the budgets that name it in either
    -- order (`config import`); a team with budgets left at commit is refused.
    team_id bigint references teams (id) deferrable initially deferred,
    project text check (project <> ''),
    period text not null check (period in ('monthly', 'quarterly', 'annual')),
    amount numeric(15, 2) not null check (amount > 0 and amount <= 1000000000000),
    metric text not null check (metric in ('amortized', 'unblended')),
    -- Addresses alerted in addition to the scope's team owners.
    recipients text[] not null default '{}',
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    check (
        (scope_kind = 'org' and team_id is null and project is null)
        or (scope_kind = 'team' and team_id is not null and project is null)
        or (scope_kind = 'project' and team_id is null and project is not null)
    )
);
create index budgets_team_id on budgets (team_id);

create table budget_thresholds (
    budget_id bigint not null references budgets (id) on delete cascade,
    percent numeric(6, 2) not null check (percent >= 1 and percent <= 1000),
    kind text not null check (kind in ('actual', 'forecasted')),
    primary key (budget_id, kind, percent)
);

-- The outbox: one row per (budget, period, threshold, type), ever. Evaluators insert with
-- ON CONFLICT DO NOTHING, so repeated or concurrent evaluations cannot queue an alert twice;
-- the sender claims rows with FOR UPDATE SKIP LOCKED, so two senders never send one row.
create table budget_alerts (
    id bigint generated always as identity primary key,
    budget_id bigint not null references budgets (id) on delete cascade,
    period_start date not null,
    percent numeric(6, 2) not null,
    kind text not null check (kind in ('actual', 'forecasted')),
    -- The figures when the threshold was crossed, as the email states them.
    spend numeric not null,
    forecast numeric,
    amount numeric not null,
    recipients text[] not null,
    subject text not null,
    body_text text not null,
    body_html text not null,
    status text not null default 'queued' check (status in ('queued', 'sent', 'failed')),
    attempts integer not null default 0,
    next_attempt_at timestamptz not null default now(),
    -- The SMTP server's last reply (or the connection error), shown in the alert history.
    last_reply text,
    created_at timestamptz not null default now(),
    sent_at timestamptz,
    unique (budget_id, period_start, percent, kind)
);
create index budget_alerts_due on budget_alerts (next_attempt_at) where status = 'queued';

-- What `budgets sync` last wrote to AWS for each budget, so an unchanged budget costs no
-- writes and a changed one (recipients included, which AWS cannot list back) is replaced.
create table budget_aws_sync (
    budget_id bigint primary key references budgets (id) on delete cascade,
    aws_name text not null,
    fingerprint text not null,
    synced_at timestamptz not null default now()
);

-- Budget figures appear on cached cost pages, so budget edits invalidate them too.
create trigger budgets_version after insert or update or delete or truncate on budgets
    for each statement execute function bump_data_version();
create trigger budget_thresholds_version after insert or update or delete or truncate on budget_thresholds
    for each statement execute function bump_data_version();
