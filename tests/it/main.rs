//! The integration tests, one binary: each module was its own test binary, and linking
//! 16 copies of the server took most of a rebuild (docs/PERFORMANCE.md, "Test build").
//! Every test runs against a real PostgreSQL (`#[sqlx::test]` gives each its own
//! database), real SMTP and AWS test servers, and the server's own `serve_until`.

mod common;

mod accounts;
mod allocation;
mod auth;
mod breakdown;
mod budgets;
mod credits;
mod enforcement;
mod enforcement_actions;
mod enforcement_safety;
mod export;
mod faults;
mod first_run;
mod http;
mod ingestion;
mod ingestion_cli;
mod open_bill;
mod overview_queries;
mod page_cache;
mod page_rollups;
mod private_cluster;
mod reallocation;
mod savings;
mod schema_and_rollups;
mod statements;
mod teams_config;
mod to_date_rows;
