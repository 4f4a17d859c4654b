//! Allocation: who each dollar belongs to. One precedence (the project's team, then the user
//! tag's team, then the account's team, then the shared-cost rules, then Unassigned; see
//! `engine`) is applied to every day's spend and stored beside the daily totals, so every
//! view, budget and statement reads the same answer. The page rollups derive from it.
//!
//! It sits above `costs`: `facts::written`, called in the transaction that wrote facts,
//! rewrites the daily totals and then the allocation of the same days.

pub mod model;
pub mod pages;
pub mod server_fns;

pub use model::{PartLine, Preview, PreviewRow, RuleTeam, Selector, SharedRule, Source, SplitKind};

#[cfg(feature = "ssr")]
pub mod days;
#[cfg(feature = "ssr")]
pub mod edit;
#[cfg(feature = "ssr")]
pub mod engine;
#[cfg(feature = "ssr")]
pub mod facts;
#[cfg(feature = "ssr")]
pub mod moves;
#[cfg(feature = "ssr")]
pub mod reads;
#[cfg(feature = "ssr")]
pub mod rollups;
#[cfg(feature = "ssr")]
pub mod rule_store;
#[cfg(feature = "ssr")]
pub mod rules;
#[cfg(feature = "ssr")]
pub mod spans;
#[cfg(feature = "ssr")]
pub mod split;
#[cfg(feature = "ssr")]
pub mod store;
