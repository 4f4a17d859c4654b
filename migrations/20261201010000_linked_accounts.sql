-- Linked accounts (#33): the AWS account each fact's spend is in, as Cost Explorer's
-- LINKED_ACCOUNT dimension reports it. Facts stored before this change keep '' (account not
-- recorded) until ingestion fetches their days again: the first run after the upgrade goes
-- back as far as Cost Explorer keeps daily data (ingestion::plan), so only days older than
-- that stay without an account. Nothing is deleted.
alter table costs_by_user add column account_id text not null default '';
alter table costs_by_usage_type add column account_id text not null default '';
alter table costs_by_service add column account_id text not null default '';
alter table costs_by_record_type add column account_id text not null default '';
alter table costs_by_user_credit add column account_id text not null default '';
alter table costs_by_user_refund add column account_id text not null default '';
alter table costs_by_user_tax add column account_id text not null default '';

-- A group is unique per account: the same project and usage type in two accounts are two
-- facts.
alter table costs_by_user drop constraint costs_by_user_pkey,
    add primary key (day, project, user_name, account_id);
alter table costs_by_usage_type drop constraint costs_by_usage_type_pkey,
    add primary key (day, project, usage_type, account_id);
alter table costs_by_service drop constraint costs_by_service_pkey,
    add primary key (day, project, service, account_id);
alter table costs_by_record_type drop constraint costs_by_record_type_pkey,
    add primary key (day, project, record_type, account_id);
alter table costs_by_user_credit drop constraint costs_by_user_credit_pkey,
    add primary key (day, project, user_name, account_id);
alter table costs_by_user_refund drop constraint costs_by_user_refund_pkey,
    add primary key (day, project, user_name, account_id);
alter table costs_by_user_tax drop constraint costs_by_user_tax_pkey,
    add primary key (day, project, user_name, account_id);

-- The accounts Cost Explorer named, with the name from its DimensionValueAttributes
-- ("description"), kept as AWS last sent it.
create table aws_accounts (
    account_id text primary key check (account_id <> ''),
    name text not null default '',
    updated_at timestamptz not null default now()
);
create trigger aws_accounts_version after insert or update or delete or truncate on aws_accounts
    for each statement execute function bump_data_version();

-- Whether a day's facts were fetched with their accounts: days stored before the upgrade
-- are false, and the next run fetches them again (those Cost Explorer still keeps).
alter table ingested_days add column with_accounts boolean not null default false;
-- Days written from now on are fetched with their accounts: a writer that leaves the column
-- out must not send the next run 13 months back.
alter table ingested_days alter column with_accounts set default true;
