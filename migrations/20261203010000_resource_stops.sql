-- A stop that reaches the violating project's own resources (#35): the policy lists which
-- kinds it stops and where, and each resource it found or acted on is its own row.

-- `stop:` with `resources:` (and optionally `regions:`) instead of an AWS Budgets action's
-- `type:`. Empty `stop_resources`: the Budgets action, as before.
alter table enforcement_policies
    add column stop_resources text[] not null default '{}'
        check (stop_resources <@ array['ec2', 'notebooks', 'training_jobs', 'processing_jobs', 'endpoints']),
    add column stop_regions text[] not null default '{}',
    -- Another AWS account the stop acts in, through the role BURNRATE_AWS_ASSUME_ROLE names
    -- there; null: the account burnrate's own credentials are in.
    add column stop_account text check (stop_account ~ '^[0-9]{12}$');
-- A stop has its kinds of resource, or an AWS Budgets action's type and role.
alter table enforcement_policies drop constraint enforcement_policies_check;
alter table enforcement_policies add constraint enforcement_policies_stop_check
    check ('stop' <> all(actions) or cardinality(stop_resources) > 0
           or (stop_type is not null and execution_role_arn is not null));

-- Every resource a stop found running under the project's tag (status `listed` until it
-- acts), and what became of it. Reversal restarts exactly the rows it stopped.
create table enforcement_resources (
    id bigint generated always as identity primary key,
    action_id bigint not null references enforcement_actions (id) on delete cascade,
    -- The account it runs in ('' for burnrate's own), so tracking uses its credentials.
    account_id text not null default '',
    region text not null,
    kind text not null check (kind in ('ec2', 'notebook', 'training_job', 'processing_job', 'endpoint')),
    -- The instance ID, or the notebook's, job's or endpoint's name.
    resource_id text not null,
    instance_type text not null default '',
    -- Accelerators across the resource (instances × per instance), from the catalogue.
    gpus numeric not null default 0,
    -- List price across the resource, USD per hour, from the catalogue; null when unknown.
    usd_per_hour numeric,
    launched_at timestamptz,
    user_tag text,
    -- held: left stopped on reversal because another stop in force holds it stopped;
    -- restart_failed: AWS refused to start it again (the stop stays in force).
    status text not null check (status in ('listed', 'skipped', 'requested', 'stopping', 'stopped', 'failed',
                                           'starting', 'restarted', 'held', 'restart_failed', 'gone')),
    -- Why it was skipped, AWS's message for a failure, or what reversal cannot undo.
    note text,
    -- An endpoint's config, recorded before it is deleted, so reversal can create it again.
    endpoint_config text,
    updated_at timestamptz not null default now(),
    unique (action_id, account_id, region, kind, resource_id)
);
create index enforcement_resources_moving on enforcement_resources (action_id)
    where status in ('requested', 'stopping', 'starting');
create index enforcement_resources_resource on enforcement_resources (account_id, region, kind, resource_id);

-- When the stop last listed the project's resources (dry-run and manual stops are listed
-- again now and then, so what an admin approves is what runs).
alter table enforcement_actions add column resources_listed_at timestamptz;

-- True once the stop acts on the project's resources rather than through an AWS Budgets
-- action: it has no AWS budget to clean up, and its resources' rows say where it stands.
alter table enforcement_actions add column stops_resources boolean not null default false;

-- A lead (own team) or admin may snooze a pending or executed stop for 1 to 72 hours: it
-- does not run meanwhile (an executed one is reversed), and the snooze ends by itself.
alter table enforcement_actions
    add column snoozed_until timestamptz,
    add column snooze_reason text check (length(snooze_reason) between 1 and 500),
    add column snoozed_by text,
    add constraint enforcement_actions_snooze_check
        check ((snoozed_until is null) = (snooze_reason is null) and (snoozed_until is null) = (snoozed_by is null));

alter table enforcement_audit drop constraint enforcement_audit_event_check;
alter table enforcement_audit add constraint enforcement_audit_event_check check (event in (
    'proposed', 'approved', 'executed', 'failed', 'reversed', 'retried', 'started', 'reversal_started',
    'cancelled', 'disarmed', 'interrupted', 'cleaned_up', 'snoozed', 'snooze_ended'));
