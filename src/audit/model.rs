//! The Audit log page's data.

use serde::{Deserialize, Serialize};

/// One audit entry as shown to admins.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEntry {
    pub id: i64,
    pub at: String,
    pub actor: String,
    pub action: String,
    pub subject: String,
    pub details: String,
}
