//! Costs: the daily facts, their per-project totals, the forecast and exports.
//! Pages that combine costs with budgets and enforcement live in `dashboard`.

#[cfg(feature = "ssr")]
pub mod aws_account_views;
#[cfg(feature = "ssr")]
pub mod aws_accounts;
#[cfg(feature = "ssr")]
pub mod forecast;
pub mod model;

#[cfg(feature = "ssr")]
pub mod daily_totals;
#[cfg(feature = "ssr")]
pub mod download;
#[cfg(feature = "ssr")]
pub mod export;
#[cfg(feature = "ssr")]
pub mod grain;
#[cfg(feature = "ssr")]
pub mod paged;
#[cfg(feature = "ssr")]
pub mod queries;
#[cfg(feature = "ssr")]
pub mod settlement;
#[cfg(feature = "ssr")]
pub mod store;

pub use model::Forecast;
