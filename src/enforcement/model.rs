//! What the Approvals and Enforcement pages show, as both builds (de)serialize it.

use chrono::NaiveDate;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use super::Approval;

/// One version of an approval, for the history table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct ApprovalVersion {
    #[cfg_attr(feature = "ssr", sqlx(flatten))]
    pub approval: Approval,
    pub created_by: String,
    pub created_at: String,
    /// `edited` or `revoked`; `None` for the current version.
    pub ended_how: Option<String>,
    pub ended_by: Option<String>,
    pub ended_at: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalsView {
    pub current: Vec<Approval>,
    pub history: Vec<ApprovalVersion>,
    pub today: NaiveDate,
    pub is_admin: bool,
}

/// A recorded violation with its actions' states.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViolationRow {
    pub project: String,
    pub team: String,
    pub period_start: NaiveDate,
    pub reason: String,
    pub spend: Decimal,
    pub limit: Decimal,
    pub actions: Vec<ActionState>,
    pub last_seen: String,
    /// The project holds an approval in force now, so executed actions may be reversed.
    pub approved_now: bool,
}

/// One action of a violation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct ActionState {
    pub id: i64,
    pub action: String,
    pub mode: String,
    pub status: String,
    /// The last outcome in words (SMTP reply, AWS message, why it waits).
    pub last_message: Option<String>,
}

/// One audit log entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct AuditRow {
    pub id: i64,
    pub at: String,
    pub actor: String,
    pub event: String,
    pub action_id: i64,
    pub project: String,
    pub action: String,
    pub aws_request_id: Option<String>,
    pub response: Option<String>,
}

/// Everything `/enforcement` shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnforcementView {
    pub violations: Vec<ViolationRow>,
    pub policies: Vec<super::policy::Policy>,
    pub audit: Vec<AuditRow>,
    pub teams: Vec<String>,
    pub is_admin: bool,
}
