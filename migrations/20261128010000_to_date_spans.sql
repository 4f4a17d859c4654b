-- Month-to-date rows replace the week and month blocks of the page rollups (#20): a 'to_date'
-- row at a day holds its key's sum from the first of the month through that day, carried
-- over days without spend to the month's end (`spans::cover` says which rows sum a range).
-- Any range is then two rows per key, plus one per further month, where weeks and months
-- left up to a dozen single days at its edges.
--
-- The rollups are derived: they are emptied here and written again at the next `serve`
-- start, by `allocation::rollups::fill_missing`, for every day the allocation has.

truncate team_daily_costs, allocated_project_spans, owned_spend_spans;

alter table allocated_project_spans drop constraint allocated_project_spans_span_check;
alter table allocated_project_spans add constraint allocated_project_spans_span_check
    check (span in ('day', 'to_date'));
alter table owned_spend_spans drop constraint owned_spend_spans_span_check;
alter table owned_spend_spans add constraint owned_spend_spans_span_check
    check (span in ('day', 'to_date'));
