-- Cost Explorer's RECORD_TYPE as a fourth grain (project × record type per day): usage apart
-- from credits, refunds, tax and Savings Plan and RI fees. Like the other grains it sums to
-- its own query's answer, and a run cross-checks its daily totals against the others.
create table costs_by_record_type (
    day date not null,
    project text not null,
    record_type text not null,
    unblended numeric not null,
    amortized numeric not null,
    usage_quantity numeric not null,
    estimated boolean not null,
    primary key (day, project, record_type)
);
create trigger costs_by_record_type_version after insert or update or delete or truncate on costs_by_record_type
    for each statement execute function bump_data_version();
