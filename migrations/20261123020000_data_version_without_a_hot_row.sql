-- The data version without a hot row. Every statement that changes what cost pages show
-- used to update one `data_version` row, so every writer queued behind whichever
-- transaction held it (an ingestion holds its transaction for the whole window swap).
-- Now each such statement appends a row to `data_changes`, and inserts never wait on each
-- other. The version is the sum of the rows' weights as the reader's snapshot sees them:
-- a commit adds its rows at once, a rollback adds nothing, and no reader can see a new
-- version with old data. Old rows are folded into one row of the same total weight now and
-- then, so the sum stays cheap and the version never goes back.

create table data_changes (
    id bigint generated always as identity primary key,
    weight bigint not null default 1 check (weight > 0)
);
insert into data_changes (weight) select version from data_version;

-- Folds every change but the newest into one row of the same total weight. At most one
-- folding at a time (the others skip rather than wait), inside the writer's own transaction.
create function fold_data_changes() returns void language plpgsql as $$
declare
    newest bigint;
    folded bigint;
begin
    if not pg_try_advisory_xact_lock(7100706567) then
        return;
    end if;
    select max(id) into newest from data_changes;
    with gone as (delete from data_changes where id < newest returning weight)
    select sum(weight) into folded from gone;
    if folded is not null then
        insert into data_changes (weight) values (folded);
    end if;
end $$;

create or replace function bump_data_version() returns trigger language plpgsql as $$
declare
    added bigint;
begin
    insert into data_changes default values returning id into added;
    if added % 256 = 0 then
        perform fold_data_changes();
    end if;
    return null;
end $$;

drop table data_version;
-- What readers select: `select version from data_version`, as before.
create view data_version as select coalesce(sum(weight), 0)::bigint as version from data_changes;
