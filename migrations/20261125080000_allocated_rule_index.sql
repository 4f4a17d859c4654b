-- Deleting or replacing a shared-cost rule cascades to its allocated rows: without an index
-- each rule deleted would scan the whole allocation.
create index allocated_daily_costs_rule on allocated_daily_costs (rule_id) where rule_id is not null;
