//! The demo's approvals and enforcement policies, sized from its own spend so the
//! Enforcement page shows each kind of case whatever the day of the month:
//! - the org default (dry-run: notify, flag, and a stop of the project's own EC2 GPUs and
//!   notebooks) proposes actions for the big unapproved projects, each stop with what it
//!   would touch (`stop_listing`);
//! - vision is on a manual policy, so its violations wait for an admin's approval;
//! - recsys flags automatically, so one of its projects carries the flag badge;
//! - three projects are approved within their caps, one approval has expired, and one
//!   project has gone over its approved cap.
//!
//! The month judged is the one with the demo's last day. On the 1st (nothing of the month
//! stored yet) it is the month before, which evaluation still judges while it settles.

use chrono::{Datelike, Months, NaiveDate};
use rust_decimal::Decimal;
use sqlx::PgConnection;

use crate::audit_log::Actor;
use crate::enforcement::Approval;
use crate::enforcement::policy::{self, Policy};
use crate::period::{days_before, next_day};

/// An approved project: its cap is `cap_share` times its spend in the month judged.
struct DemoApproval {
    project: &'static str,
    approver: &'static str,
    reason: &'static str,
    cap_share: Decimal,
    expiry: Expiry,
}

enum Expiry {
    /// The end of the quarter after the month judged.
    NextQuarter,
    /// The day before the month judged began: the approval has lapsed.
    Lapsed,
}

const fn share(hundredths: u32) -> Decimal {
    Decimal::from_parts(hundredths, 0, 0, false, 2)
}

const APPROVALS: [DemoApproval; 5] = [
    DemoApproval {
        project: "llm-pretrain",
        approver: "cfo@example.com",
        reason: "Pretraining the 70B model: in the annual plan, reviewed each quarter",
        cap_share: share(160),
        expiry: Expiry::NextQuarter,
    },
    DemoApproval {
        project: "llm-finetune",
        approver: "director@example.com",
        reason: "Fine-tuning runs for the assistant launch",
        cap_share: share(200),
        expiry: Expiry::NextQuarter,
    },
    DemoApproval {
        project: "chat-serving",
        approver: "director@example.com",
        reason: "Production chat endpoint; right-sizing tracked on the Savings page",
        cap_share: share(130),
        expiry: Expiry::NextQuarter,
    },
    DemoApproval {
        project: "detector-v3",
        approver: "director@example.com",
        reason: "Detector retraining, approved for last quarter only",
        cap_share: share(200),
        expiry: Expiry::Lapsed,
    },
    DemoApproval {
        project: "asr-large",
        approver: "finance@example.com",
        reason: "Speech model training, capped while the data set is cleaned",
        cap_share: share(60),
        expiry: Expiry::NextQuarter,
    },
];

/// Writes the demo's approvals and policies; `until` is its last day with figures.
pub async fn insert(conn: &mut PgConnection, until: NaiveDate) -> Result<(), sqlx::Error> {
    let actor = Actor::system("demo");
    let month = until.with_day(1).unwrap_or(until);
    let judged = month..next_day(until);
    // A project of weight 1 in the demo organisation: policy limits are multiples of it.
    let unit = project_spend(conn, "llm-pretrain", &judged).await? / Decimal::TEN;
    for demo in &APPROVALS {
        let spend = project_spend(conn, demo.project, &judged).await?;
        let expires = match demo.expiry {
            Expiry::NextQuarter => quarter_end_after(month),
            Expiry::Lapsed => days_before(month, 1),
        };
        let approval = Approval {
            key: None,
            project: demo.project.into(),
            approver: demo.approver.into(),
            reason: demo.reason.into(),
            cap: round_thousands(spend * demo.cap_share),
            expires,
        };
        crate::enforcement::approvals::set(conn, &actor, &approval).await?;
    }
    let policies = [
        // Projects of weight 4 and more go over it.
        // With a stop of the projects' own EC2 GPUs and notebooks, proposed only: each
        // proposal shows what it would touch (`stop_listing`).
        Policy {
            stop: Some(resource_stop()),
            ..policy(
                None,
                round_thousands(unit * Decimal::new(35, 1)),
                &["notify", "flag", "stop"],
                "dry-run",
            )
        },
        policy(
            Some("vision"),
            round_thousands(unit * Decimal::new(25, 1)),
            &["notify", "flag"],
            "manual",
        ),
        policy(
            Some("recsys"),
            round_thousands(unit * Decimal::new(25, 1)),
            &["flag"],
            "automatic",
        ),
    ];
    for policy in &policies {
        policy::save(conn, &actor, policy).await.map_err(|error| match error {
            policy::SaveError::Database(error) => error,
            policy::SaveError::Invalid(field) => {
                sqlx::Error::Protocol(format!("the demo's policy is invalid: {}", field.message))
            }
        })?;
    }
    Ok(())
}

fn policy(team: Option<&str>, limit: Decimal, actions: &[&str], mode: &str) -> Policy {
    Policy {
        key: None,
        team: team.map(str::to_string),
        limit,
        period: "monthly".into(),
        metric: crate::period::Metric::Unblended,
        actions: actions.iter().map(|a| a.to_string()).collect(),
        mode: mode.into(),
        stop: None,
    }
}

/// A stop of the project's own EC2 instances and notebooks, in the configured regions.
fn resource_stop() -> policy::StopConfig {
    policy::StopConfig {
        stop_type: String::new(),
        resources: vec!["ec2".into(), "notebooks".into()],
        regions: Vec::new(),
        account: None,
        managed_by_tags: Vec::new(),
        allow_instance_store: false,
        execution_role_arn: String::new(),
        iam_policy_arn: String::new(),
        iam_roles: Vec::new(),
        instance_ids: Vec::new(),
        instance_region: String::new(),
    }
}

async fn project_spend(
    conn: &mut PgConnection,
    project: &str,
    range: &std::ops::Range<NaiveDate>,
) -> Result<Decimal, sqlx::Error> {
    sqlx::query_scalar(
        "select coalesce(sum(unblended), 0) from daily_project_costs where project = $1 and day >= $2 and day < $3",
    )
    .bind(project)
    .bind(range.start)
    .bind(range.end)
    .fetch_one(conn)
    .await
}

/// Whole thousands, at least one thousand: limits and caps as people set them.
fn round_thousands(amount: Decimal) -> Decimal {
    (amount / Decimal::ONE_THOUSAND).round().max(Decimal::ONE) * Decimal::ONE_THOUSAND
}

/// The last day of the quarter after the one holding `month`.
fn quarter_end_after(month: NaiveDate) -> NaiveDate {
    let quarter_start = month.with_month0(month.month0() / 3 * 3).unwrap_or(month);
    quarter_start
        .checked_add_months(Months::new(6))
        .map_or(month, |after| days_before(after, 1))
}
