//! Running enforcement actions: approve, retry and the automatic mode (reversal is
//! `reverse`, the flag badge's read is `flags`).
//!
//! Each step decides in one short transaction, under the enforcement decision lock and the
//! action's row lock: the action must be in the state the step expects, and its violation
//! must still hold (`judge`), or it is cancelled with the reason in the action trail. A flag is
//! set there and then; a notify email is queued in the alert outbox; a stop is claimed with a
//! lease and its AWS calls run after the commit (`stop_run`). Nothing is shown as executed
//! before AWS or the SMTP server says so.

use chrono::NaiveDate;
use sqlx::PgPool;

use super::claims::Intent;
use super::claims::{self, ActionRow};
use super::executor::Executor;
use super::judge::{self, Verdict};
use super::stop_run;

/// Why a requested step was refused before anything ran.
#[derive(Debug, thiserror::Error)]
pub enum ActionError {
    #[error("no enforcement action {0}")]
    NotFound(i64),
    #[error("{0}")]
    Refused(String),
    /// The caller may not take this step (a lead past what a lead may do).
    #[error("{0}")]
    Forbidden(String),
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// Who asked for a run, and from which state it may start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Trigger {
    Approve,
    Retry,
    /// Automatic mode, on an evaluation pass.
    Automatic,
    /// Create a manual stop's AWS side ahead of approval.
    Prepare,
}

impl Trigger {
    fn expected_status(self) -> &'static str {
        match self {
            Trigger::Approve | Trigger::Prepare => "awaiting_approval",
            Trigger::Retry => "failed",
            Trigger::Automatic => "proposed",
        }
    }
}

fn refusal(row: &ActionRow, trigger: Trigger) -> Option<String> {
    if row.mode == "dry-run" {
        return Some(
            "the policy is in dry-run mode: its actions are only recorded; switch the policy to manual to run them"
                .into(),
        );
    }
    if let Some(until) = row.snoozed_until.filter(|_| trigger != Trigger::Prepare) {
        return Some(format!(
            "the stop is snoozed until {}; it runs once the snooze ends",
            until.format("%Y-%m-%d %H:%M UTC")
        ));
    }
    if row.status != trigger.expected_status() {
        let verb = match trigger {
            Trigger::Retry => "retried",
            _ => "approved",
        };
        return Some(format!(
            "the action is {}, so it cannot be {verb}",
            row.status.replace('_', " ")
        ));
    }
    None
}

/// Runs `id` for `trigger`: the decision under locks, then (for a stop) the AWS calls with no
/// transaction open. Returns the status it ended in.
pub(super) async fn run(
    pool: &PgPool,
    exec: &Executor,
    id: i64,
    actor: &str,
    trigger: Trigger,
    today: NaiveDate,
) -> Result<String, ActionError> {
    let mut tx = pool.begin().await?;
    claims::lock_decisions(&mut tx).await?;
    let row = claims::lock(&mut tx, id).await?.ok_or(ActionError::NotFound(id))?;
    if let Some(why) = refusal(&row, trigger) {
        return Err(ActionError::Refused(why));
    }
    if row.action == "stop" && row.aws_cleanup {
        return Err(ActionError::Refused(
            "the stop's earlier AWS budget is still being deleted; try again in a minute".into(),
        ));
    }
    let verdict = judge::judge(&mut tx, &row, today).await?;
    if verdict != Verdict::Holds {
        judge::apply(&mut tx, &row, actor, &verdict).await?;
        tx.commit().await?;
        exec.wake.notify_one();
        let status = claims::read(&mut *pool.acquire().await?, id).await?.map(|r| r.status);
        return Ok(status.unwrap_or_default());
    }
    let event = match trigger {
        Trigger::Approve => Some("approved"),
        Trigger::Retry => Some("retried"),
        Trigger::Automatic | Trigger::Prepare => None,
    };
    // An approval already recorded (a later pass running it) is not recorded again.
    let event = event.filter(|_| !(trigger == Trigger::Approve && row.approved_by.is_some()));
    if let Some(event) = event {
        super::trail::append(
            &mut tx,
            &super::trail::Entry::new(actor, event, row.id, &row.project, &row.action),
        )
        .await?;
    }
    if trigger == Trigger::Approve && row.action == "stop" {
        // The approval stands until the stop runs or no longer holds: should its last
        // judgement time out on the lock, or AWS fail in passing, a later pass runs it.
        sqlx::query("update enforcement_actions set approved_by = $2 where id = $1")
            .bind(row.id)
            .bind(actor)
            .execute(&mut *tx)
            .await?;
    }
    match row.action.as_str() {
        "flag" => {
            let message = "flagged on the project's and team's pages and on the Overview";
            claims::set_status(&mut tx, &row, actor, ("executed", "executed"), message).await?;
            tx.commit().await?;
            Ok("executed".into())
        }
        "notify" => {
            let status = match super::notify::enqueue(&mut tx, &row, exec.public_url.as_deref()).await? {
                Ok(_) => "executing",
                Err(why) => {
                    claims::set_status(&mut tx, &row, actor, ("failed", "failed"), &why).await?;
                    "failed"
                }
            };
            tx.commit().await?;
            exec.alerts.wake();
            Ok(status.into())
        }
        _ => {
            let claim = claims::claim(&mut tx, &row, exec.lease).await?;
            tx.commit().await?;
            let intent = match trigger {
                Trigger::Prepare => Intent::Prepare,
                Trigger::Automatic => Intent::Run { by_admin: false },
                Trigger::Approve | Trigger::Retry => Intent::Run { by_admin: true },
            };
            let row = ActionRow {
                claimed_from: Some(row.status.clone()),
                ..row
            };
            match stop_run::run_claimed(pool, exec, &row, claim, actor, (intent, today)).await {
                // Claimed and recorded already: a lock wait that timed out later (the last
                // judgement before AWS) leaves the claim to expire and the pass to resume it,
                // so the answer is where the stop stands, not an error saying nothing changed.
                Err(err) if crate::error::is_lock_timeout(&err) => {
                    tracing::warn!(
                        action = id,
                        "a claimed stop waited too long for the decision lock; its approval stands and a pass runs it"
                    );
                    Ok("running".into())
                }
                other => Ok(other?),
            }
        }
    }
}

/// An admin approves an action awaiting approval; it runs now if its violation still holds.
pub async fn approve(
    pool: &PgPool,
    exec: &Executor,
    id: i64,
    actor: &str,
    today: NaiveDate,
) -> Result<String, ActionError> {
    run(pool, exec, id, actor, Trigger::Approve, today).await
}

/// Runs a failed action again (a stop AWS failed to run: RETRY_BUDGET_ACTION).
pub async fn retry(
    pool: &PgPool,
    exec: &Executor,
    id: i64,
    actor: &str,
    today: NaiveDate,
) -> Result<String, ActionError> {
    run(pool, exec, id, actor, Trigger::Retry, today).await
}
