//! Chargeback statements: per month and team, usage by project and shared-cost rule,
//! credits, refunds, tax and the total, from the allocation; frozen once the month is final.
//! In the tier of `dashboard` (it reads the allocation and budgets' tables by SQL), below
//! `as_code`.

pub mod model;
pub mod pages;
pub mod server_fns;

#[cfg(feature = "ssr")]
pub mod adjust;
#[cfg(feature = "ssr")]
pub mod compute;
#[cfg(feature = "ssr")]
pub mod download;
#[cfg(feature = "ssr")]
pub mod render;
#[cfg(feature = "ssr")]
pub mod store;
