//! Approvals, the violation rule, and what the Approvals and Enforcement pages show, as
//! both builds (de)serialize them.

use chrono::NaiveDate;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

/// A project allowed to spend above the policy limit, up to `cap` per period, through `expires`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct Approval {
    /// The stable identity of an approval kept as code (`key:` in the YAML): its versions
    /// stay one history when the project's tag value is renamed. `None` on a new approval
    /// means the project; on a change, the key it has.
    #[serde(default)]
    pub key: Option<String>,
    pub project: String,
    pub approver: String,
    pub reason: String,
    pub cap: Decimal,
    /// The last day (UTC) the approval counts.
    pub expires: NaiveDate,
}

/// Why a project over the limit is in violation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Reason {
    Unapproved,
    ApprovalExpired,
    OverCap,
}

impl Reason {
    pub fn key(self) -> &'static str {
        match self {
            Reason::Unapproved => "unapproved",
            Reason::ApprovalExpired => "approval_expired",
            Reason::OverCap => "over_cap",
        }
    }

    /// The rule, applied to a project whose period spend already exceeds the limit. An
    /// approval counts through its expiry date; from the next day the whole period's spend
    /// is judged without it.
    pub fn judge(spend: Decimal, approval: Option<&Approval>, today: NaiveDate) -> Option<Reason> {
        match approval {
            None => Some(Reason::Unapproved),
            Some(a) if a.expires < today => Some(Reason::ApprovalExpired),
            Some(a) if spend > a.cap => Some(Reason::OverCap),
            Some(_) => None,
        }
    }
}

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
pub struct ApprovalsData {
    pub current: Vec<Approval>,
    /// Each current approval's spend against its cap and days left, by project.
    #[serde(default)]
    pub standing: Vec<ApprovalStanding>,
    pub history: Vec<ApprovalVersion>,
    /// Waiting requests first, then the decided ones, newest first.
    #[serde(default)]
    pub requests: Vec<ApprovalRequest>,
    pub today: NaiveDate,
    pub is_admin: bool,
    /// The caller may ask for approvals: an admin, or a lead of some team.
    #[serde(default)]
    pub may_request: bool,
}

/// A current approval against its cap: the project's spend in the governing policy's
/// current period, and the days left before it expires.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ApprovalStanding {
    pub project: String,
    /// The team that owns the project, if any.
    pub team: Option<String>,
    pub approver: String,
    pub reason: String,
    pub cap: Decimal,
    /// The last day (UTC) it counts.
    pub expires: NaiveDate,
    /// Days from today to `expires`, counting that day; 0 or less once it has expired.
    pub days_left: i64,
    /// The project's spend in the governing policy's current period, in its metric.
    pub spend: Decimal,
    pub period_from: NaiveDate,
    /// Exclusive.
    pub period_to: NaiveDate,
    /// Spend as a share of the cap (0.8 is 80 %).
    pub used: Decimal,
}

/// A lead's request for an approval, and what an admin decided.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow, utoipa::ToSchema))]
pub struct ApprovalRequest {
    pub id: i64,
    pub project: String,
    /// The team that owns the project now, if any.
    pub team: Option<String>,
    pub cap: Decimal,
    /// The last day (UTC) the approval would count.
    pub until: NaiveDate,
    pub reason: String,
    pub requested_by: String,
    /// `YYYY-MM-DD HH:MM UTC`.
    pub requested_at: String,
    /// `pending`, `approved` or `denied`.
    pub status: String,
    /// The admin who decided (the signed-in account or the token's).
    pub decided_by: Option<String>,
    pub decided_at: Option<String>,
    /// The admin's words: why denied, or what the approval changed.
    pub decision_note: Option<String>,
    /// What was approved: the request's cap and day, or the admin's.
    pub approved_cap: Option<Decimal>,
    pub approved_until: Option<NaiveDate>,
}

/// A recorded violation with its actions' states.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
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
    /// The caller may snooze this violation's stop: an admin, or a lead of its team.
    #[serde(default)]
    pub can_snooze: bool,
}

/// One action of a violation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ActionState {
    pub id: i64,
    pub action: String,
    pub mode: String,
    pub status: String,
    /// The last outcome in words (SMTP reply, AWS message, why it waits).
    pub last_message: Option<String>,
    /// Held until then (UTC), by whom and why (`snooze`).
    #[serde(default)]
    pub snoozed_until: Option<String>,
    #[serde(default)]
    pub snoozed_by: Option<String>,
    #[serde(default)]
    pub snooze_reason: Option<String>,
    /// A stop on the project's resources: each one it found or acted on.
    #[serde(default)]
    #[cfg_attr(feature = "ssr", sqlx(skip))]
    pub resources: Vec<StopResource>,
}

/// One resource a stop found running under the project's tag, and what became of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct StopResource {
    /// The AWS account it runs in; empty for burnrate's own.
    #[serde(default)]
    pub account: String,
    pub region: String,
    /// `ec2`, `notebook`, `training_job`, `processing_job`, `endpoint` or `iam_role`.
    pub kind: String,
    /// The instance ID, or the notebook's, job's or endpoint's name (from AWS: untrusted).
    pub resource_id: String,
    pub instance_type: String,
    pub gpus: Decimal,
    /// List price across the resource, from the catalogue; `None` for an unknown type.
    pub usd_per_hour: Option<Decimal>,
    /// Hours since it was launched or created, when AWS says.
    pub age_hours: Option<i64>,
    /// The `user` tag's value, when present (from AWS: untrusted).
    pub user: Option<String>,
    /// `listed`, `skipped`, `requested`, `stopping`, `stopped`, `failed`, `starting`,
    /// `restarted`, `held`, `restart_failed` or `gone`.
    pub status: String,
    /// Why it is left running, AWS's message, or what reversal cannot undo.
    pub note: Option<String>,
}

/// One entry of the action trail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct TrailRow {
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
pub struct EnforcementData {
    pub violations: Vec<ViolationRow>,
    pub policies: Vec<super::policy::Policy>,
    /// Named `audit` on the wire, as before the action trail had its own name, so a page
    /// and a server of neighbouring versions still understand each other.
    #[serde(rename = "audit")]
    pub trail: Vec<TrailRow>,
    pub teams: Vec<String>,
    pub is_admin: bool,
    /// Stops still in force whose justification has gone: (action id, project, why).
    #[serde(default)]
    pub unjustified: Vec<(i64, String, String)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_edge_of_the_rule() {
        let day = |d| NaiveDate::from_ymd_opt(2026, 11, d).expect("date");
        let approval = Approval {
            key: None,
            project: "llm".into(),
            approver: "cfo@example.com".into(),
            reason: "Q4 run".into(),
            cap: Decimal::from(5000),
            expires: day(22),
        };
        assert_eq!(
            Reason::judge(Decimal::from(2000), None, day(22)),
            Some(Reason::Unapproved)
        );
        // Valid through its expiry day, expired the day after.
        assert_eq!(Reason::judge(Decimal::from(2000), Some(&approval), day(22)), None);
        assert_eq!(
            Reason::judge(Decimal::from(2000), Some(&approval), day(23)),
            Some(Reason::ApprovalExpired)
        );
        // Exactly at the cap is within it.
        assert_eq!(Reason::judge(Decimal::from(5000), Some(&approval), day(22)), None);
        assert_eq!(
            Reason::judge(Decimal::new(500001, 2), Some(&approval), day(22)),
            Some(Reason::OverCap)
        );
    }
}
