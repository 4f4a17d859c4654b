-- Cost Explorer's own account views, each asked once per run, unfiltered: LINKED_ACCOUNT
-- alone, and LINKED_ACCOUNT × RECORD_TYPE. AWS rounds every group on its own, so a sum over
-- the project grains differs from its account view in the last digits; exports by account
-- read these instead, and equal Cost Explorer's answer to the last digit.
create table costs_by_account (
    day date not null,
    account_id text not null,
    unblended numeric not null,
    amortized numeric not null,
    usage_quantity numeric not null,
    estimated boolean not null,
    primary key (day, account_id)
);
create trigger costs_by_account_version after insert or update or delete or truncate on costs_by_account
    for each statement execute function bump_data_version();

create table costs_by_account_record_type (
    day date not null,
    account_id text not null,
    record_type text not null,
    unblended numeric not null,
    amortized numeric not null,
    usage_quantity numeric not null,
    estimated boolean not null,
    primary key (day, account_id, record_type)
);
create trigger costs_by_account_record_type_version
    after insert or update or delete or truncate on costs_by_account_record_type
    for each statement execute function bump_data_version();

-- Days stored before these views: the account view from the service grain (what exports by
-- account read until now), the record types from their grain (days stored before record types
-- have none, as there). The next run's window replaces the days it fetches with AWS's answer.
insert into costs_by_account
select day, account_id, sum(unblended), sum(amortized), sum(usage_quantity), bool_or(estimated)
from costs_by_service group by day, account_id;
insert into costs_by_account_record_type
select day, account_id, record_type, sum(unblended), sum(amortized), sum(usage_quantity), bool_or(estimated)
from costs_by_record_type group by day, account_id, record_type;

-- The requests the last commitments read made (each costs USD 0.01), for the Ingestion
-- page's projected Cost Explorer bill.
alter table commitment_reads add column requests integer not null default 0;
