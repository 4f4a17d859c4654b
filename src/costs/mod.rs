//! Costs: the daily facts, their rollup, the forecast, exports, and usage-type parsing.
//! Pages that combine costs with budgets and enforcement live in `dashboard`.

#[cfg(feature = "ssr")]
pub mod accounts;
#[cfg(feature = "ssr")]
pub mod forecast;
pub mod model;

#[cfg(feature = "ssr")]
pub mod download;
#[cfg(feature = "ssr")]
pub mod export;
#[cfg(feature = "ssr")]
pub mod grain;
#[cfg(feature = "ssr")]
pub mod queries;
#[cfg(feature = "ssr")]
pub mod rollups;
#[cfg(feature = "ssr")]
pub mod settlement;
#[cfg(feature = "ssr")]
pub mod store;
#[cfg(feature = "ssr")]
pub mod usage_type;

pub use model::Forecast;
