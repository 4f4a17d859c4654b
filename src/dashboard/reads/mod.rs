//! The dashboard's reads (it owns no table, so it has no store): the Overview (`overview`) and the Teams, Team and Project pages
//! (`breakdown`), each assembling cost figures with budget use and enforcement flags.

pub mod aws_accounts;
pub mod breakdown;
pub mod overview;
pub mod scope_figures;
