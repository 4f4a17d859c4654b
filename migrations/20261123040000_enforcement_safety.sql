-- Enforcement actions move through short transactions: a claim with a lease, the call to
-- AWS with no transaction open, then the record, fenced by the claim's token. AWS runs a
-- budget action asynchronously, so a stop is `executing` until AWS reports SUCCESS or
-- FAILURE, and `reversing` until the reversal lands. An action whose violation no longer
-- holds when it is about to run (approved, period over, policy changed) is `cancelled`.

alter table enforcement_actions drop constraint enforcement_actions_status_check;
alter table enforcement_actions add constraint enforcement_actions_status_check check (status in (
    'proposed', 'awaiting_approval', 'running', 'executing', 'executed', 'failed', 'reversing', 'reversed',
    'cancelled'));

alter table enforcement_actions
    -- While `running`: the status to return to when the claim dies with nothing done in AWS,
    -- the claim's fencing token, and the lease's end.
    add column claimed_from text,
    add column claim bigint,
    add column lease_until timestamptz,
    -- AWS's last reported status of the budget action (STANDBY, PENDING, EXECUTION_…).
    add column aws_status text,
    -- The AWS budget and its action are to be deleted (after reversal, approval, the end of
    -- the period, or a switch out of automatic mode).
    add column aws_cleanup boolean not null default false,
    -- The notify email, composed once so every recipient (and every resend) gets the same.
    add column subject text,
    add column body_text text,
    add column body_html text,
    add constraint enforcement_actions_claim_check
        check ((status = 'running') = (claim is not null and lease_until is not null and claimed_from is not null));

create sequence enforcement_claims;

drop index enforcement_actions_open;
create index enforcement_actions_open on enforcement_actions (status)
    where status in ('proposed', 'awaiting_approval', 'running', 'executing', 'failed', 'reversing');
create index enforcement_actions_cleanup on enforcement_actions (id) where aws_cleanup;

alter table enforcement_audit drop constraint enforcement_audit_event_check;
alter table enforcement_audit add constraint enforcement_audit_event_check check (event in (
    'proposed', 'approved', 'executed', 'failed', 'reversed', 'retried', 'started', 'reversal_started',
    'cancelled', 'disarmed', 'interrupted', 'cleaned_up'));

-- Enforcement's notify emails go through the alert outbox: one delivery per recipient.
alter table alert_deliveries alter column alert_id drop not null;
alter table alert_deliveries
    add column enforcement_action_id bigint references enforcement_actions (id),
    add constraint alert_deliveries_one_source check (num_nonnulls(alert_id, enforcement_action_id) = 1);
create unique index alert_deliveries_enforcement on alert_deliveries (enforcement_action_id, recipient)
    where enforcement_action_id is not null;
