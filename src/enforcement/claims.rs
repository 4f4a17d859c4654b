//! The short transactions actions move through. Every decision about whether an action
//! runs (evaluation, an approval, a policy change, a claim) takes one transaction-scoped
//! advisory lock first, so they happen one after another and always in the same lock order:
//! no deadlock, and no stop claimed against an approval that committed first. No call to
//! AWS or SMTP is made while a transaction is open: a stop is claimed with a lease, the
//! calls run, and the outcome is recorded only if the claim is still this caller's.

use std::time::Duration;

use chrono::NaiveDate;
use rust_decimal::Decimal;
use sqlx::PgConnection;

use super::trail::{self, Entry};

/// `pg_advisory_xact_lock` key for enforcement decisions ("burnrate enforce" in ASCII).
pub const DECISIONS_LOCK: i64 = 0x0062_7572_6e65_6e66;

/// Waits for the enforcement decision lock; released when the transaction ends. The wait is
/// bounded by the session's `lock_timeout` (`BURNRATE_DB_LOCK_TIMEOUT`), or 5 s on a
/// connection that has none: past it the statement fails with SQLSTATE 55P03, which a
/// person's request answers as `AppError::Busy` (503 with `Retry-After`) and the pass as a
/// pass to run again. The bound holds for the row locks the transaction takes after it.
pub async fn lock_decisions(conn: &mut PgConnection) -> Result<(), sqlx::Error> {
    sqlx::query(
        "select set_config('lock_timeout',
                case when current_setting('lock_timeout') = '0' then '5s' else current_setting('lock_timeout') end,
                true)",
    )
    .execute(&mut *conn)
    .await?;
    sqlx::query("select pg_advisory_xact_lock($1)")
        .bind(DECISIONS_LOCK)
        .execute(conn)
        .await?;
    Ok(())
}

/// What a claim on a stop is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intent {
    /// Run it: an admin's approval or retry, or automatic mode.
    Run { by_admin: bool },
    /// Create its AWS budget and action only, so AWS evaluates it before an admin approves.
    Prepare,
    /// Undo it (REVERSE_BUDGET_ACTION).
    Reverse,
}

/// How a claimed run ends.
pub enum Step {
    /// End the claim with this outcome.
    End(Settled<'static>),
    /// Nothing happened in AWS: back to the status it was claimed from, with why.
    Release(String),
    /// Another run took the claim over, or the claim was ended meanwhile: nothing to write.
    Lost,
    /// AWS may or may not have acted (no answer): the claim stays until its lease expires and
    /// the next pass settles it from what AWS reports.
    Keep,
}

/// Ends `claim` on `row` as `step` says, and returns the status the action is in after. A
/// failed reversal leaves the stop in force (`executed`, with why).
pub async fn end(
    conn: &mut PgConnection,
    row: &ActionRow,
    claim: i64,
    actor: &str,
    intent: Intent,
    step: Step,
) -> Result<String, sqlx::Error> {
    let from = row.claimed_from.clone().unwrap_or_else(|| row.status.clone());
    match step {
        Step::Lost | Step::Keep => {}
        Step::Release(message) => {
            // Waiting on AWS is not an event: the message says why, the status is unchanged.
            release(conn, row, claim, None, &message).await?;
        }
        Step::End(mut settled) => {
            if intent == Intent::Reverse && settled.status == "failed" {
                settled.status = "executed";
                settled.message = format!("reversal failed: {}", settled.message);
            }
            finish(conn, row, claim, actor, &settled).await?;
        }
    }
    let status: Option<String> = sqlx::query_scalar("select status from enforcement_actions where id = $1")
        .bind(row.id)
        .fetch_optional(conn)
        .await?;
    Ok(status.unwrap_or(from))
}

/// An action with its violation, as the runner and the judge need it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ActionRow {
    pub id: i64,
    pub action: String,
    pub mode: String,
    pub status: String,
    pub aws_budget_name: Option<String>,
    pub aws_action_id: Option<String>,
    pub aws_cleanup: bool,
    /// The stop acts on the project's own resources (`resources::run`), not through an AWS
    /// Budgets action.
    pub stops_resources: bool,
    /// A lead or admin holds the stop until then (`snooze`).
    pub snoozed_until: Option<chrono::DateTime<chrono::Utc>>,
    /// The admin whose approval stands until the stop runs or no longer holds.
    pub approved_by: Option<String>,
    pub claim: Option<i64>,
    pub claimed_from: Option<String>,
    pub project: String,
    pub team: Option<String>,
    pub team_id: Option<i64>,
    pub period_start: NaiveDate,
    pub spend: Decimal,
    pub spend_limit: Decimal,
    pub reason: String,
}

const SELECT_ROW: &str = "select a.id, a.action, a.mode, a.status, a.aws_budget_name, a.aws_action_id, a.aws_cleanup,
        a.stops_resources, a.snoozed_until, a.approved_by, a.claim, a.claimed_from, v.project, t.name as team, t.id as team_id, v.period_start, v.spend,
        v.spend_limit, v.reason
     from enforcement_actions a join violations v on v.id = a.violation_id
     left join projects p on p.name = v.project left join teams t on t.id = p.team_id";

/// The action, its row locked until the transaction ends.
pub async fn lock(conn: &mut PgConnection, id: i64) -> Result<Option<ActionRow>, sqlx::Error> {
    sqlx::query_as(&format!("{SELECT_ROW} where a.id = $1 for update of a"))
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// The action as it stands, unlocked.
pub async fn read(conn: &mut PgConnection, id: i64) -> Result<Option<ActionRow>, sqlx::Error> {
    sqlx::query_as(&format!("{SELECT_ROW} where a.id = $1"))
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// Marks the locked `row` as running under a new claim whose lease ends after `lease`;
/// returns the claim's token. The caller commits, then calls out.
pub async fn claim(conn: &mut PgConnection, row: &ActionRow, lease: Duration) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "update enforcement_actions
         set claimed_from = case when status = 'running' then claimed_from else status end,
             status = 'running', claim = nextval('enforcement_claims'),
             lease_until = now() + make_interval(secs => $2), updated_at = now()
         where id = $1 returning claim",
    )
    .bind(row.id)
    .bind(lease.as_secs_f64())
    .fetch_one(conn)
    .await
}

/// What a claim ended in.
#[derive(Debug, Clone)]
pub struct Settled<'a> {
    pub status: &'a str,
    pub event: &'a str,
    pub message: String,
    pub request_id: Option<String>,
    pub aws_status: Option<String>,
}

impl<'a> Settled<'a> {
    /// An outcome with no AWS request id or status to record.
    pub fn new(status: &'a str, event: &'a str, message: String) -> Settled<'a> {
        Settled {
            status,
            event,
            message,
            request_id: None,
            aws_status: None,
        }
    }
}

/// Ends `claim` on `row` with `settled` and its audit entry, in one transaction. False when
/// the claim is no longer this caller's (its lease expired and another run took it over):
/// then nothing is written, and the other run's record stands.
pub async fn finish(
    conn: &mut PgConnection,
    row: &ActionRow,
    claim: i64,
    actor: &str,
    settled: &Settled<'_>,
) -> Result<bool, sqlx::Error> {
    settle(conn, row, Guard::Claim(claim), actor, settled).await
}

/// What must still be true of the row for an outcome to be written.
enum Guard<'a> {
    /// This caller still holds the claim.
    Claim(i64),
    /// The row is still in this status (no one else moved it on).
    Status(&'a str),
}

/// Writes `settled` (and, unless its event is empty, the audit entry) if `guard` still
/// holds; releases any claim. False when it no longer holds: nothing is written.
async fn settle(
    conn: &mut PgConnection,
    row: &ActionRow,
    guard: Guard<'_>,
    actor: &str,
    settled: &Settled<'_>,
) -> Result<bool, sqlx::Error> {
    let (condition, claim, from) = match guard {
        Guard::Claim(claim) => ("claim = $2", Some(claim), None),
        Guard::Status(from) => ("status = $6", None, Some(from)),
    };
    let mut tx = sqlx::Acquire::begin(conn).await?;
    let done = sqlx::query(&format!(
        "update enforcement_actions
         set status = $3, last_message = $4, aws_status = coalesce($5, aws_status),
             claim = null, lease_until = null, claimed_from = null, updated_at = now(),
             aws_cleanup = aws_cleanup or ($3 in ('reversed', 'cancelled') and action = 'stop' and not stops_resources),
             approved_by = case when $3 = 'awaiting_approval' then approved_by end
         where id = $1 and {condition}"
    ))
    .bind(row.id)
    .bind(claim)
    .bind(settled.status)
    .bind(&settled.message)
    .bind(&settled.aws_status)
    .bind(from)
    .execute(&mut *tx)
    .await?;
    if done.rows_affected() == 0 {
        return Ok(false);
    }
    if !settled.event.is_empty() {
        let entry = Entry::new(actor, settled.event, row.id, &row.project, &row.action)
            .response(&settled.message)
            .request_id(settled.request_id.clone());
        trail::append(&mut tx, &entry).await?;
    }
    tx.commit().await?;
    Ok(true)
}

/// Stores the AWS budget and action a claimed stop runs through, as soon as they exist, so
/// a run that dies next finds them instead of creating them again.
pub async fn record_prepared(
    conn: &mut PgConnection,
    id: i64,
    claim: i64,
    budget: &str,
    action: &str,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "update enforcement_actions set aws_budget_name = $3, aws_action_id = $4
         where id = $1 and claim = $2",
    )
    .bind(id)
    .bind(claim)
    .bind(budget)
    .bind(action)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Sets an unclaimed action's status, message and audit entry inside the caller's transaction
/// (which holds the row lock): for steps that call nobody.
pub async fn set_status(
    conn: &mut PgConnection,
    row: &ActionRow,
    actor: &str,
    (status, event): (&str, &str),
    message: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "update enforcement_actions set status = $2, last_message = $3, updated_at = now(),
             aws_cleanup = aws_cleanup or ($2 in ('reversed', 'cancelled') and action = 'stop' and not stops_resources),
             approved_by = null
         where id = $1",
    )
    .bind(row.id)
    .bind(status)
    .bind(message)
    .execute(&mut *conn)
    .await?;
    trail::append(
        conn,
        &Entry::new(actor, event, row.id, &row.project, &row.action).response(message),
    )
    .await
}

/// Ends `claim` with nothing done: the action returns to the status it was claimed from,
/// with `message` (and, for `event`, an audit entry). False when the claim is not this
/// caller's any more.
pub async fn release(
    conn: &mut PgConnection,
    row: &ActionRow,
    claim: i64,
    event: Option<(&str, &str)>,
    message: &str,
) -> Result<bool, sqlx::Error> {
    let mut tx = sqlx::Acquire::begin(conn).await?;
    let done = sqlx::query(
        "update enforcement_actions
         set status = claimed_from, last_message = $3, claim = null, lease_until = null, claimed_from = null,
             updated_at = now()
         where id = $1 and claim = $2",
    )
    .bind(row.id)
    .bind(claim)
    .bind(message)
    .execute(&mut *tx)
    .await?;
    if done.rows_affected() == 0 {
        return Ok(false);
    }
    if let Some((actor, event)) = event {
        let entry = Entry::new(actor, event, row.id, &row.project, &row.action).response(message);
        trail::append(&mut tx, &entry).await?;
    }
    tx.commit().await?;
    Ok(true)
}

/// Takes over a claim whose lease has expired (its runner died or hung past it); returns
/// the new claim, or `None` when the lease is still live or the action moved on.
pub async fn take_over(conn: &mut PgConnection, id: i64, lease: Duration) -> Result<Option<i64>, sqlx::Error> {
    sqlx::query_scalar(
        "update enforcement_actions
         set claim = nextval('enforcement_claims'), lease_until = now() + make_interval(secs => $2)
         where id = $1 and status = 'running' and lease_until < now() returning claim",
    )
    .bind(id)
    .bind(lease.as_secs_f64())
    .fetch_optional(conn)
    .await
}

/// Moves an unclaimed action from `from` to `settled.status` with its audit entry, if it is
/// still in `from`; safe to repeat (a second poller finds it moved and writes nothing).
pub async fn transition(
    conn: &mut PgConnection,
    row: &ActionRow,
    from: &str,
    settled: &Settled<'_>,
) -> Result<bool, sqlx::Error> {
    settle(conn, row, Guard::Status(from), "system", settled).await
}
