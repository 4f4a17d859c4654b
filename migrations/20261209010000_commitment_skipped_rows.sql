-- Coverage rows Cost Explorer answered that burnrate could not read (an attribute it does not
-- know), each with why: skipped, the rest of the read kept, and named on the Savings page
-- (#52). Written with the read that found them.
alter table commitment_reads add column skipped text[] not null default '{}';
