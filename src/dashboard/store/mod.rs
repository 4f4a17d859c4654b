//! The dashboard's SQL: the Overview (`overview`) and the Teams, Team and Project pages
//! (`breakdown`), each assembling cost figures with budget use and enforcement flags.

pub mod accounts;
pub mod breakdown;
pub mod overview;
pub mod scope_figures;
