-- Which days Cost Explorer has answered for, and whether AWS still called them Estimated.
-- Incremental runs re-fetch estimated days and a restatement lookback; settled days stay.
create table ingested_days (
    day date primary key,
    estimated boolean not null,
    run_id bigint not null references ingestion_runs (id),
    fetched_at timestamptz not null default now()
);
create index ingested_days_estimated on ingested_days (day) where estimated;
