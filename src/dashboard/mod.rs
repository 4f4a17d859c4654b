//! The dashboard: the Overview (`/`), Teams (`/teams`), Team and Project pages. They
//! combine costs with budget use and enforcement flags, so they sit above all three.

pub mod first_steps;
pub mod model;
pub mod pages;
#[cfg(feature = "ssr")]
pub mod reads;
pub mod server_fns;
