-- The credits, refunds and tax in each project-day of the rollup (from the project × record
-- type grain), so every cost page can show its figures net of credits or before them
-- without joining the record types at read time. Rewritten with the rollup.
alter table daily_project_costs
    add column credit_unblended numeric not null default 0,
    add column credit_amortized numeric not null default 0,
    add column refund_unblended numeric not null default 0,
    add column refund_amortized numeric not null default 0,
    add column tax_unblended numeric not null default 0,
    add column tax_amortized numeric not null default 0;

update daily_project_costs r set
    credit_unblended = k.credit_unblended, credit_amortized = k.credit_amortized,
    refund_unblended = k.refund_unblended, refund_amortized = k.refund_amortized,
    tax_unblended = k.tax_unblended, tax_amortized = k.tax_amortized
from (
    select day, project,
           coalesce(sum(unblended) filter (where record_type = 'Credit'), 0) as credit_unblended,
           coalesce(sum(amortized) filter (where record_type = 'Credit'), 0) as credit_amortized,
           coalesce(sum(unblended) filter (where record_type = 'Refund'), 0) as refund_unblended,
           coalesce(sum(amortized) filter (where record_type = 'Refund'), 0) as refund_amortized,
           coalesce(sum(unblended) filter (where record_type = 'Tax'), 0) as tax_unblended,
           coalesce(sum(amortized) filter (where record_type = 'Tax'), 0) as tax_amortized
    from costs_by_record_type group by 1, 2
) k
where k.day = r.day and k.project = r.project;

-- A budget counts its spend net of credits and refunds (as AWS Budgets does by default) or
-- before them, for a team whose credits will run out.
alter table budgets add column credits text not null default 'net' check (credits in ('net', 'gross'));
