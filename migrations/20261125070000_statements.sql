-- Chargeback statements, frozen once their month's figures are final: the lines as they
-- stood, the data version they were computed at and the shared-cost rules in force. A later
-- restatement of a frozen month shows as an adjustment on the next month's statement.
create table statements (
    month date primary key check (extract(day from month) = 1),
    frozen_at timestamptz not null default now(),
    data_version bigint not null,
    rules jsonb not null,
    lines jsonb not null
);
