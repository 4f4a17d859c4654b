//! GPU savings: recommendations in dollars per month from the organisation's own billing
//! data (spot, right-sizing, always-on, commitments) and DCGM utilisation (idle and
//! underused GPUs), the savings ledger, the weekly digest, and the what-if calculator.
//! Formulas are stated in each rule's file and in `docs/SAVINGS.md`.

#[cfg(feature = "ssr")]
pub mod cloudwatch;
#[cfg(feature = "ssr")]
pub mod commitments;
#[cfg(feature = "ssr")]
pub mod compounding;
#[cfg(feature = "ssr")]
pub mod csv;
#[cfg(feature = "ssr")]
pub mod digest;
#[cfg(feature = "ssr")]
pub mod download;
#[cfg(feature = "ssr")]
pub mod facts;
#[cfg(feature = "ssr")]
pub mod gpu_series;
#[cfg(feature = "ssr")]
pub mod idle_alerts;
#[cfg(feature = "ssr")]
pub mod inference;
#[cfg(feature = "ssr")]
pub mod insights;
#[cfg(feature = "ssr")]
pub mod ledger;
pub mod model;
pub mod pages;
#[cfg(feature = "ssr")]
pub mod pricing;
#[cfg(feature = "ssr")]
pub mod prometheus;
#[cfg(feature = "ssr")]
pub mod realised;
#[cfg(feature = "ssr")]
pub mod report;
#[cfg(feature = "ssr")]
pub mod report_render;
#[cfg(feature = "ssr")]
pub mod rules;
pub mod server_fns;
#[cfg(feature = "ssr")]
pub mod service;
#[cfg(feature = "ssr")]
pub mod store;
#[cfg(feature = "ssr")]
pub mod what_if;

pub use model::{Kind, ProjectFacts, Recommendation, Workload};
