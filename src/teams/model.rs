//! The Teams admin page's data.

use serde::{Deserialize, Serialize};

/// A team as the admin page edits it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamRow {
    pub name: String,
    pub owners: Vec<String>,
    pub projects: Vec<String>,
    pub users: Vec<String>,
    /// AWS account IDs whose unclaimed spend is the team's.
    pub accounts: Vec<String>,
}

/// A project, user or AWS account no team owns, with its recent spend (for an account, the
/// part of it no project or user mapping claims).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct Unmapped {
    pub kind: String,
    pub name: String,
    /// The account's name as Cost Explorer gives it; empty for projects and users.
    pub detail: String,
    /// Unblended spend over the last 30 days, so the costliest gaps come first.
    pub spend_30d: rust_decimal::Decimal,
}

/// The Teams admin page's data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamsAdminData {
    pub teams: Vec<TeamRow>,
    pub unmapped: Vec<Unmapped>,
}
