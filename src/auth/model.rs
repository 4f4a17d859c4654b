//! What the Users page shows.

use serde::{Deserialize, Serialize};

use super::Role;

/// One account as the Users page lists it (never its password hash).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountSummary {
    pub id: i64,
    pub email: String,
    pub display_name: String,
    pub role: Role,
    pub created_at: String,
    pub disabled: bool,
}
