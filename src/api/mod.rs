//! `/api/v1`: the versioned API for code (CI gates, launchers, BI pulls), behind API tokens
//! only (`Authorization: Bearer brt_…`; a session cookie opens nothing here, and a token
//! opens nothing else). A token limited to one team reaches that team's figures only; every
//! role may call the read routes so far. Errors are `application/problem+json`.

mod approvals;
pub mod bearer;
mod budgets;
pub mod problem;
mod routes;

pub use bearer::{ApiCaller, require_token};
pub use problem::Problem;
pub use routes::routes;
