-- The parts of each allocated row that are credits, refunds and tax (from the project's
-- record-type answer for the day, split like the row's cost), so a team's spend can be shown
-- net of credits or gross, and a statement can list them apart. Rows written before this
-- migration are of days ingested before burnrate read record types (the record-type grain
-- ships in the same release), which have no credit, refund or tax answer: 0 is right.
alter table allocated_daily_costs
    add column credit_unblended numeric not null default 0,
    add column credit_amortized numeric not null default 0,
    add column refund_unblended numeric not null default 0,
    add column refund_amortized numeric not null default 0,
    add column tax_unblended numeric not null default 0,
    add column tax_amortized numeric not null default 0;
