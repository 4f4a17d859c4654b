-- Approved high-cost projects, enforcement policies, and the violations and actions that
-- evaluation records.

-- Every version of every approval is kept: an edit ends the current row ('edited') and adds
-- a new one, a revocation ends it ('revoked'). At most one current row per project.
create table approvals (
    id bigint generated always as identity primary key,
    project text not null check (project <> ''),
    approver text not null check (position('@' in approver) > 1),
    reason text not null check (length(reason) between 1 and 1000),
    cap numeric(15, 2) not null check (cap > 0 and cap <= 1000000000000),
    -- The last day (UTC) the approval counts.
    expires date not null,
    created_by text not null,
    created_at timestamptz not null default now(),
    ended_at timestamptz,
    ended_by text,
    ended_how text check (ended_how in ('edited', 'revoked')),
    check ((ended_at is null) = (ended_how is null))
);
create unique index approvals_current on approvals (project) where ended_at is null;

-- The org default (team_id null) and per-team overrides.
create table enforcement_policies (
    id bigint generated always as identity primary key,
    team_id bigint references teams (id) on delete cascade,
    spend_limit numeric(15, 2) not null check (spend_limit > 0),
    period text not null default 'monthly' check (period in ('monthly', 'quarterly', 'annual')),
    actions text[] not null default '{notify,flag}',
    mode text not null default 'dry-run' check (mode in ('dry-run', 'manual', 'automatic')),
    -- The stop action, through an AWS Budgets action: deny GPU launches with an IAM policy
    -- attached to roles, or stop EC2 instances with an SSM document.
    stop_type text check (stop_type in ('APPLY_IAM_POLICY', 'RUN_SSM_DOCUMENTS')),
    execution_role_arn text,
    iam_policy_arn text,
    iam_roles text[] not null default '{}',
    instance_ids text[] not null default '{}',
    instance_region text,
    updated_at timestamptz not null default now(),
    check ('stop' <> all(actions) or (stop_type is not null and execution_role_arn is not null))
);
create unique index enforcement_policies_team on enforcement_policies (coalesce(team_id, 0));
insert into enforcement_policies (team_id, spend_limit) values (null, 1000);

-- One row per project, period and reason; one action row per violation and action kind, so
-- repeated evaluation records each action once.
create table violations (
    id bigint generated always as identity primary key,
    project text not null,
    period_start date not null,
    reason text not null check (reason in ('unapproved', 'approval_expired', 'over_cap')),
    spend numeric not null,
    spend_limit numeric not null,
    first_seen_at timestamptz not null default now(),
    last_seen_at timestamptz not null default now(),
    unique (project, period_start, reason)
);

create table enforcement_actions (
    id bigint generated always as identity primary key,
    violation_id bigint not null references violations (id),
    action text not null check (action in ('notify', 'flag', 'stop')),
    mode text not null check (mode in ('dry-run', 'manual', 'automatic')),
    status text not null check (status in ('proposed', 'awaiting_approval', 'executed', 'failed', 'reversed')),
    -- The AWS budget and budget action a stop runs through, once created.
    aws_budget_name text,
    aws_action_id text,
    -- The last outcome in words: the SMTP reply, AWS's message, or why it waits.
    last_message text,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    unique (violation_id, action)
);
create index enforcement_actions_open on enforcement_actions (status) where status in ('proposed', 'awaiting_approval', 'failed');

-- The audit log: every proposal, approval, execution, reversal and failure, with who, when,
-- the AWS request id and the response. Append-only: updates and deletes are refused.
create table enforcement_audit (
    id bigint generated always as identity primary key,
    at timestamptz not null default now(),
    actor text not null,
    event text not null check (event in ('proposed', 'approved', 'executed', 'failed', 'reversed', 'retried')),
    action_id bigint not null references enforcement_actions (id),
    project text not null,
    action text not null,
    aws_request_id text,
    response text
);
create index enforcement_audit_action on enforcement_audit (action_id);

create function refuse_audit_change() returns trigger language plpgsql as $$
begin
    raise exception 'enforcement_audit is append-only: % refused', tg_op;
end
$$;
create trigger enforcement_audit_append_only before update or delete or truncate on enforcement_audit
    for each statement execute function refuse_audit_change();

-- Flags show on cached cost pages, so action changes invalidate them.
create trigger enforcement_actions_version after insert or update or delete or truncate on enforcement_actions
    for each statement execute function bump_data_version();
