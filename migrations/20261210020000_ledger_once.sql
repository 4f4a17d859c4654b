-- A decision keeps what its row added after the others it was proposed with (the compounded
-- figure the Savings page sums), besides the row's own saving, and the data version of the
-- recommendation set it was taken on: the ledger's Accepted sums the compounded figures, so
-- rows on the same spend are not counted twice. Decisions from before keep their own figure.
alter table savings_decisions add column compounded_monthly_saving numeric;
update savings_decisions set compounded_monthly_saving = proposed_monthly_saving;
alter table savings_decisions alter column compounded_monthly_saving set not null;
alter table savings_decisions add column data_version bigint;
