//! The pre-flight budget check (seed 003): before a training launch or a CI job spends, ask
//! whether the budgets and the enforcement policy allow it (`POST /api/v1/preflight`,
//! `burnrate check`).

#[cfg(feature = "ssr")]
pub mod check;
pub mod model;

pub use model::{PreflightAnswer, PreflightRequest, Verdict};
