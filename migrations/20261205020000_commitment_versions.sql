-- A new Cost Explorer read of owned commitments, or a failed one, changes what the Savings
-- page shows: bump the data version so cached page data is not served stale.
create trigger commitment_reads_version after insert or update or delete or truncate on commitment_reads
    for each statement execute function bump_data_version();
create trigger commitment_coverage_version after insert or update or delete or truncate on commitment_coverage
    for each statement execute function bump_data_version();
create trigger commitment_use_version after insert or update or delete or truncate on commitment_use
    for each statement execute function bump_data_version();
create trigger aws_savings_plan_recommendations_version after insert or update or delete or truncate
    on aws_savings_plan_recommendations for each statement execute function bump_data_version();
