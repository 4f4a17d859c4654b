-- The escalation ladder: a threshold may carry addresses told of that threshold only
-- (80 % → the director, 100 % → finance), on top of the team owners and the budget's own
-- recipients, who hear of every threshold.
alter table budget_thresholds add column recipients text[] not null default '{}';
