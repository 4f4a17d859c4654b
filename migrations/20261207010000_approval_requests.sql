-- Approval requests: a lead asks for a project's approval (cap, until, reason); an admin
-- approves it (perhaps with another cap or last day), which makes the approval current with
-- the admin as approver, or denies it with a reason. At most one request per project waits.
create table approval_requests (
    id bigint generated always as identity primary key,
    project text not null check (project <> ''),
    cap numeric(15, 2) not null check (cap > 0 and cap <= 1000000000000),
    -- The last day (UTC) the approval would count.
    until date not null,
    reason text not null check (length(reason) between 1 and 1000),
    requested_by text not null,
    requested_at timestamptz not null default now(),
    status text not null default 'pending' check (status in ('pending', 'approved', 'denied')),
    decided_by text,
    decided_at timestamptz,
    decision_note text check (length(decision_note) <= 1000),
    -- What was approved: the request's cap and day, or the admin's.
    approved_cap numeric(15, 2),
    approved_until date,
    check ((status = 'pending') = (decided_by is null)),
    check ((status = 'approved') = (approved_cap is not null and approved_until is not null)),
    check (status <> 'denied' or length(decision_note) >= 1)
);
create unique index approval_requests_one_pending on approval_requests (project) where status = 'pending';
create index approval_requests_recent on approval_requests (requested_at desc);

-- The emails about one version of an approval: at 80 % of its cap in a period of the
-- governing policy (once per period: the cap is per period), and when 7 days are left (once).
-- A new cap or day is a new version, which may warn again.
create table approval_notices (
    id bigint generated always as identity primary key,
    approval_id bigint not null references approvals (id) on delete cascade,
    kind text not null check (kind in ('cap_80', 'expiry_7')),
    -- What makes it due once: the period's first day for cap_80, the last day for expiry_7.
    occasion date not null,
    project text not null,
    subject text not null,
    body_text text not null,
    body_html text not null,
    created_at timestamptz not null default now(),
    unique (approval_id, kind, occasion)
);

alter table alert_deliveries
    add column approval_notice_id bigint references approval_notices (id) on delete cascade,
    drop constraint alert_deliveries_one_source,
    add constraint alert_deliveries_one_source
        check (num_nonnulls(alert_id, enforcement_action_id, savings_digest_id, idle_alert_id, approval_notice_id) = 1);
create unique index alert_deliveries_approval_notice on alert_deliveries (approval_notice_id, recipient)
    where approval_notice_id is not null;
