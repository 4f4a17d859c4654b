-- Budgets on one linked AWS account (#33): `scope: {account: ID}`, synced to AWS Budgets
-- with a LINKED_ACCOUNT filter. Spend is the account's whole daily rollup.
alter table budgets add column account_id text check (account_id ~ '^[0-9]{12}$');
alter table budgets drop constraint budgets_scope_kind_check,
    add constraint budgets_scope_kind_check check (scope_kind in ('org', 'team', 'project', 'account'));
alter table budgets drop constraint budgets_check,
    add constraint budgets_check check (
        (scope_kind = 'org' and team_id is null and project is null and account_id is null)
        or (scope_kind = 'team' and team_id is not null and project is null and account_id is null)
        or (scope_kind = 'project' and team_id is null and project is not null and account_id is null)
        or (scope_kind = 'account' and team_id is null and project is null and account_id is not null)
    );
