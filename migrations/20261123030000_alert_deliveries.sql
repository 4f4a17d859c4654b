-- Each alert email is delivered to each recipient on its own: one rejected or malformed
-- address fails only that recipient. A sender claims a delivery with a lease, sends outside
-- any transaction, then records the outcome; a process that dies mid-send leaves a lease
-- that expires, and the next sender delivers it again (with the same Message-ID).

create table alert_deliveries (
    id bigint generated always as identity primary key,
    alert_id bigint not null references budget_alerts (id) on delete cascade,
    recipient text not null,
    status text not null default 'queued'
        check (status in ('queued', 'sending', 'sent', 'failed', 'cancelled')),
    attempts integer not null default 0,
    next_attempt_at timestamptz not null default now(),
    -- While 'sending': the claim's end. Past it, the claim is taken to be dead.
    lease_until timestamptz,
    -- The SMTP server's last reply for this recipient (or the connection error).
    last_reply text,
    sent_at timestamptz,
    created_at timestamptz not null default now(),
    unique (alert_id, recipient),
    check ((status = 'sending') = (lease_until is not null))
);
create index alert_deliveries_pending on alert_deliveries (id) where status in ('queued', 'sending');

-- Alerts queued before this change keep their outcome, one delivery per recipient.
insert into alert_deliveries (alert_id, recipient, status, attempts, last_reply, sent_at, next_attempt_at)
select a.id, r.recipient,
       case a.status when 'rearmed' then 'cancelled' else a.status end,
       a.attempts, a.last_reply, a.sent_at, a.next_attempt_at
from budget_alerts a cross join lateral unnest(a.recipients) as r(recipient)
on conflict do nothing;
