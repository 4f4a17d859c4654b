-- Each user tag's own credits, refunds and tax per project and day (Cost Explorer grouped by
-- the project and user tags, filtered to one RECORD_TYPE), so an unowned project's credit is
-- split by whose credit it is, not by the users' net spend. Same shape (and indexes) as
-- costs_by_user.
create table costs_by_user_credit (like costs_by_user including all);
create table costs_by_user_refund (like costs_by_user including all);
create table costs_by_user_tax (like costs_by_user including all);

create trigger costs_by_user_credit_version after insert or update or delete or truncate on costs_by_user_credit
    for each statement execute function bump_data_version();
create trigger costs_by_user_refund_version after insert or update or delete or truncate on costs_by_user_refund
    for each statement execute function bump_data_version();
create trigger costs_by_user_tax_version after insert or update or delete or truncate on costs_by_user_tax
    for each statement execute function bump_data_version();

-- Where the restatement window of the last successful fetch began: Estimated days before it
-- are settled (costs::settlement). Until a fetch records it, only days off an open bill are.
create table settlement (
    id boolean primary key default true check (id),
    window_from date not null
);
create trigger settlement_version after insert or update or delete or truncate on settlement
    for each statement execute function bump_data_version();
