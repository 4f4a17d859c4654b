//! `/api/v1`: the versioned API for code (CI gates, launchers, BI pulls), behind API tokens
//! only (`Authorization: Bearer brt_…`; a session cookie opens nothing here, and a token
//! opens nothing else). A token limited to one team reaches that team's figures only; every
//! role may call the read routes; writes check the role as the dashboard does. Errors are
//! `application/problem+json`.

mod approvals;
pub mod bearer;
mod budget_writes;
mod budgets;
mod costs;
mod enforcement;
pub mod openapi;
mod preflight;
pub mod problem;
mod responses;
mod routes;
mod savings;
mod teams;

pub use bearer::{ApiCaller, require_token};
pub use openapi::ApiDoc;
pub use problem::Problem;
pub use routes::routes;
