//! Approved high-cost projects and enforcement: which projects may spend above the policy
//! limit, and the violations and actions evaluation records for the rest.
//!
//! Approvals are kept as code and with full history; policies (an org default, overridable
//! per team) set the limit, the actions (notify, flag, stop) and the mode (dry-run, manual,
//! automatic); evaluation records each violation's actions once; `actions` runs, retries
//! and reverses them, deciding under `claims`' locks after `judge` has checked the violation
//! still holds; `stop_run` makes a stop's AWS calls with no transaction open, through an
//! AWS Budgets action or, for a policy listing `resources`, on the project's own resources
//! (`resources`); `reconcile`
//! follows AWS until it has finished and cleans up; `notify` queues emails in the alert
//! outbox; `trail` keeps the append-only action trail.

pub mod model;
pub mod pages;
pub mod policy;
pub mod server_fns;

pub use model::{Approval, Reason};

#[cfg(feature = "ssr")]
pub mod actions;
#[cfg(feature = "ssr")]
pub mod approval_notices;
#[cfg(feature = "ssr")]
pub mod approvals;
#[cfg(feature = "ssr")]
pub mod aws_stop;
#[cfg(feature = "ssr")]
pub mod changes;
#[cfg(feature = "ssr")]
pub mod claims;
#[cfg(feature = "ssr")]
pub mod download;
#[cfg(feature = "ssr")]
pub mod evaluate;
#[cfg(feature = "ssr")]
pub mod executor;
#[cfg(feature = "ssr")]
pub mod flags;
#[cfg(feature = "ssr")]
pub mod judge;
#[cfg(feature = "ssr")]
pub mod near_limit;
#[cfg(feature = "ssr")]
pub mod notify;
#[cfg(feature = "ssr")]
pub mod orphans;
#[cfg(feature = "ssr")]
pub mod reconcile;
#[cfg(feature = "ssr")]
pub mod requests;
#[cfg(feature = "ssr")]
pub mod resources;
#[cfg(feature = "ssr")]
pub mod reverse;
#[cfg(feature = "ssr")]
pub mod snooze;
#[cfg(feature = "ssr")]
pub mod standing;
#[cfg(feature = "ssr")]
pub mod stop_run;
#[cfg(feature = "ssr")]
pub mod store;
#[cfg(feature = "ssr")]
pub mod trail;
