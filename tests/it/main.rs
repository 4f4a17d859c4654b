//! The integration tests, one binary: each module was its own test binary, and linking
//! 16 copies of the server took most of a rebuild (docs/PERFORMANCE.md, "Test build").
//! Every test runs against a real PostgreSQL (`#[sqlx::test]` gives each its own
//! database), real SMTP and AWS test servers, and the server's own `serve_until`.

mod common;

mod allocation;
mod anomalies;
mod api;
mod as_code;
mod auth;
mod budgets;
mod costs;
mod dashboard;
mod db;
mod doctor;
mod enforcement;
mod ingestion;
mod metrics;
mod savings;
mod server;
mod statements;
