//! The Teams admin page's data.

use serde::{Deserialize, Serialize};

/// A team as the admin page edits it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamRow {
    pub name: String,
    pub owners: Vec<String>,
    pub projects: Vec<String>,
    pub users: Vec<String>,
}

/// A project or user no team owns, with its recent spend.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct Unmapped {
    pub kind: String,
    pub name: String,
    /// Unblended spend over the last 30 days, so the costliest gaps come first.
    pub spend_30d: rust_decimal::Decimal,
}

/// The Teams admin page's data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamMappings {
    pub teams: Vec<TeamRow>,
    pub unmapped: Vec<Unmapped>,
}
