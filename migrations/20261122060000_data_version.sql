-- A counter bumped by every statement that changes what cost pages show, so computed page
-- data can be cached per version and is never served stale, across replicas too.
create table data_version (
    id boolean primary key default true check (id),
    version bigint not null
);
insert into data_version (id, version) values (true, 1);

create function bump_data_version() returns trigger language plpgsql as $$
begin
    update data_version set version = version + 1;
    return null;
end $$;

create trigger daily_project_costs_version after insert or update or delete or truncate on daily_project_costs
    for each statement execute function bump_data_version();
create trigger costs_by_user_version after insert or update or delete or truncate on costs_by_user
    for each statement execute function bump_data_version();
create trigger costs_by_usage_type_version after insert or update or delete or truncate on costs_by_usage_type
    for each statement execute function bump_data_version();
create trigger costs_by_service_version after insert or update or delete or truncate on costs_by_service
    for each statement execute function bump_data_version();
create trigger projects_version after insert or update or delete or truncate on projects
    for each statement execute function bump_data_version();
create trigger teams_version after insert or update or delete or truncate on teams
    for each statement execute function bump_data_version();
create trigger usage_types_version after insert or update or delete or truncate on usage_types
    for each statement execute function bump_data_version();
