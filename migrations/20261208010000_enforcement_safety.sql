-- Enforcement that cannot touch the wrong thing (#51).

-- A resource stop leaves running what a controller would replace (#51): burnrate knows
-- Auto Scaling, EC2 and Spot Fleet, EMR, Karpenter, AWS Batch and EKS node groups by their
-- tags; a policy may name more tag keys (`stop: managed_by_tags:`).
alter table enforcement_policies add column stop_managed_by_tags text[] not null default '{}';

-- Snoozes add up (#51): a lead may hold a stop for 72 hours in all; past that, an admin.
alter table enforcement_actions add column snoozed_hours_total integer not null default 0;

-- An admin's approval of a stop is kept until the stop runs or no longer holds (#51): an
-- approval whose final judgement waited past the lock timeout, or whose AWS calls met a
-- passing fault, runs on a later pass instead of returning quietly to awaiting approval.
alter table enforcement_actions add column approved_by text;

-- Most GPU instance types carry NVMe instance store, which a stop erases (#51): such
-- instances are left running unless the policy allows it (`stop: instance_store: allow`).
alter table enforcement_policies add column stop_allow_instance_store boolean not null default false;

-- Every tag a resource had when it was listed (#51): a re-created endpoint carries them all
-- again (its `user` and cost-allocation tags, not only the project's).
alter table enforcement_resources add column tags jsonb not null default '[]';
