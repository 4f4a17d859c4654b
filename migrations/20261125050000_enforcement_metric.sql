-- A policy judges the cost metric it names: unblended (what was billed each day) or
-- amortized (reserved-instance and Savings Plan fees spread over the days they cover, so a
-- project on reserved capacity does not look almost free).
alter table enforcement_policies add column metric text not null default 'unblended'
    check (metric in ('unblended', 'amortized'));
