//! The dashboard pages: the Overview and the Teams, Team and Project breakdowns.

pub mod breakdown;
pub mod first_steps;
pub mod overview;
