//! Approved high-cost projects and enforcement: which projects may spend above the policy
//! limit, and the violations and actions evaluation records for the rest.
//!
//! Approvals are kept as code and with full history; policies (an org default, overridable
//! per team) set the limit, the actions (notify, flag, stop) and the mode (dry-run, manual,
//! automatic); evaluation records each violation's actions once; `actions` runs, retries
//! and reverses them, deciding under `claims`' locks after `judge` has checked the violation
//! still holds; `stop_run` makes a stop's AWS calls with no transaction open; `reconcile`
//! follows AWS until it has finished and cleans up; `notify` queues emails in the alert
//! outbox; `audit` keeps the append-only log.

pub mod api;
pub mod model;
pub mod pages;
pub mod policy;

#[cfg(feature = "ssr")]
pub mod actions;
#[cfg(feature = "ssr")]
pub mod approvals;
#[cfg(feature = "ssr")]
pub mod audit;
#[cfg(feature = "ssr")]
pub mod aws_stop;
#[cfg(feature = "ssr")]
pub mod claims;
#[cfg(feature = "ssr")]
pub mod download;
#[cfg(feature = "ssr")]
pub mod evaluate;
#[cfg(feature = "ssr")]
pub mod executor;
#[cfg(feature = "ssr")]
pub mod flags;
#[cfg(feature = "ssr")]
pub mod judge;
#[cfg(feature = "ssr")]
pub mod notify;
#[cfg(feature = "ssr")]
pub mod orphans;
#[cfg(feature = "ssr")]
pub mod reconcile;
#[cfg(feature = "ssr")]
pub mod reverse;
#[cfg(feature = "ssr")]
pub mod stop_run;
#[cfg(feature = "ssr")]
pub mod store;

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
