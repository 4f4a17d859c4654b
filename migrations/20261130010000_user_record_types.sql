-- Each user tag's own credits, refunds and tax per project and day (Cost Explorer grouped by
-- the project and user tags, filtered to one RECORD_TYPE), so an unowned project's credit is
-- split by whose credit it is, not by the users' net spend. Same shape as costs_by_user.
create table costs_by_user_credit (like costs_by_user including all);
create table costs_by_user_refund (like costs_by_user including all);
create table costs_by_user_tax (like costs_by_user including all);
create index costs_by_user_credit_project on costs_by_user_credit (project, day);
create index costs_by_user_refund_project on costs_by_user_refund (project, day);
create index costs_by_user_tax_project on costs_by_user_tax (project, day);

create trigger costs_by_user_credit_version after insert or update or delete or truncate on costs_by_user_credit
    for each statement execute function bump_data_version();
create trigger costs_by_user_refund_version after insert or update or delete or truncate on costs_by_user_refund
    for each statement execute function bump_data_version();
create trigger costs_by_user_tax_version after insert or update or delete or truncate on costs_by_user_tax
    for each statement execute function bump_data_version();
