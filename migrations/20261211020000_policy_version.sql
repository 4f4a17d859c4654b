-- An enforcement policy's limit decides which projects /metrics reports near it, and /metrics
-- now computes those figures once per data version (#54): a policy change moves the version,
-- as a budget's does.
create trigger enforcement_policies_version after insert or update or delete or truncate on enforcement_policies
    for each statement execute function bump_data_version();
