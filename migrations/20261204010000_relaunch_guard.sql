-- A resource stop may also prevent relaunch (#35): burnrate attaches the policy's deny
-- policy to the roles it names, each role its own row (kind `iam_role`, region `global`),
-- and detaches it on reversal. What reversal restores from is now an endpoint's config or
-- a role's deny policy, so the column says that.
alter table enforcement_resources rename column endpoint_config to restore_from;
alter table enforcement_resources drop constraint enforcement_resources_kind_check;
alter table enforcement_resources add constraint enforcement_resources_kind_check
    check (kind in ('ec2', 'notebook', 'training_job', 'processing_job', 'endpoint', 'iam_role'));
