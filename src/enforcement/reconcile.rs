//! One enforcement pass, after every evaluation and every minute in `serve`: disarm what no
//! longer holds, resume runs that died, follow stops AWS is still executing or reversing,
//! lift stops whose project was approved or whose period ended, delete AWS budgets nothing
//! needs, then prepare manual stops and run automatic actions. Every step is safe to repeat,
//! and a pass looks at a bounded number of actions.

use std::time::Duration;

use chrono::NaiveDate;
use sqlx::PgPool;

use super::actions::{self, Trigger};
use super::claims;
use super::claims::Intent;
use super::executor::Executor;
use super::judge;
use super::resources;
use super::stop_run;

/// Actions one step of a pass looks at, so a pass always ends.
const STEP_LIMIT: i64 = 1000;

/// What a pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PassReport {
    /// Actions whose status changed.
    pub changed: usize,
    /// Stops AWS is still executing or reversing, and runs still claimed.
    pub in_flight: usize,
}

async fn ids(pool: &PgPool, sql: &str) -> Result<Vec<i64>, sqlx::Error> {
    sqlx::query_scalar(sql).bind(STEP_LIMIT).fetch_all(pool).await
}

async fn status_of(pool: &PgPool, id: i64) -> Result<Option<String>, sqlx::Error> {
    sqlx::query_scalar("select status from enforcement_actions where id = $1")
        .bind(id)
        .fetch_optional(pool)
        .await
}

/// Runs a waiting action for `trigger`; 1 when it moved on.
async fn run_waiting(
    pool: &PgPool,
    exec: &Executor,
    id: i64,
    (actor, trigger): (&str, Trigger),
    (before, today): (Option<String>, NaiveDate),
) -> Result<usize, sqlx::Error> {
    match actions::run(pool, exec, id, actor, trigger, today).await {
        Ok(status) if Some(&status) != before.as_ref() => Ok(1),
        Ok(_) => Ok(0),
        // Another pass or an admin moved it first.
        Err(
            actions::ActionError::Refused(_) | actions::ActionError::NotFound(_) | actions::ActionError::Forbidden(_),
        ) => Ok(0),
        Err(actions::ActionError::Database(e)) => Err(e),
    }
}

/// One pass as of `today`.
pub async fn pass(pool: &PgPool, exec: &Executor, today: NaiveDate) -> Result<PassReport, sqlx::Error> {
    let mut report = PassReport::default();
    report.changed += judge::disarm_stale_in_pass(pool, today, STEP_LIMIT).await?;
    // Runs whose runner died: the lease expired. AWS's record decides where they stand.
    for id in ids(
        pool,
        "select id from enforcement_actions where status = 'running' and lease_until < now() order by id limit $1",
    )
    .await?
    {
        let mut conn = pool.acquire().await?;
        let Some(claim) = claims::take_over(&mut conn, id, exec.lease).await? else {
            continue;
        };
        let Some(row) = claims::read(&mut conn, id).await? else {
            continue;
        };
        drop(conn);
        if row.stops_resources {
            resources::run::resume(pool, &row, claim).await?;
        } else {
            stop_run::resume(pool, exec, &row, claim).await?;
        }
        report.changed += 1;
    }
    for id in ids(
        pool,
        "select id from enforcement_actions
         where action = 'stop' and stops_resources and status in ('executing', 'reversing') order by id limit $1",
    )
    .await?
    {
        let Some(row) = claims::read(&mut *pool.acquire().await?, id).await? else {
            continue;
        };
        if resources::run::track(pool, exec, &row, today).await? {
            report.changed += 1;
        }
    }
    let in_flight = ids(
        pool,
        "select id from enforcement_actions
         where action = 'stop' and not stops_resources and status in ('executing', 'reversing') order by id limit $1",
    )
    .await?;
    if !in_flight.is_empty() {
        match exec.aws().await {
            Ok(aws) => {
                for id in in_flight {
                    let Some(row) = claims::read(&mut *pool.acquire().await?, id).await? else {
                        continue;
                    };
                    if stop_run::track(pool, &aws, &row).await? {
                        report.changed += 1;
                    }
                }
            }
            Err(failure) => tracing::warn!(error = %failure.message, "cannot poll AWS budget actions"),
        }
    }
    report.changed += super::snooze::wake(pool).await?;
    report.changed += lift(pool, exec, today).await?;
    clean_up(pool, exec).await?;
    let waiting = ids(
        pool,
        "select id from enforcement_actions
         where snoozed_until is null and ((mode = 'automatic' and status = 'proposed')
            or (mode = 'manual' and status = 'awaiting_approval' and action = 'stop'
                and aws_action_id is null and not aws_cleanup and not stops_resources))
         order by id limit $1",
    )
    .await?;
    for id in waiting {
        let before = status_of(pool, id).await?;
        let trigger = match before.as_deref() {
            Some("proposed") => Trigger::Automatic,
            _ => Trigger::Prepare,
        };
        report.changed += run_waiting(pool, exec, id, ("system", trigger), (before, today)).await?;
    }
    // Stops an admin approved that could not run then (the last judgement waited past the
    // lock timeout, or AWS failed in passing): the approval stands, and they run now.
    let approved: Vec<(i64, String)> = sqlx::query_as(
        "select id, approved_by from enforcement_actions
         where status = 'awaiting_approval' and approved_by is not null and snoozed_until is null
         order by id limit $1",
    )
    .bind(STEP_LIMIT)
    .fetch_all(pool)
    .await?;
    for (id, admin) in approved {
        let before = Some("awaiting_approval".to_string());
        report.changed += run_waiting(pool, exec, id, (&admin, Trigger::Approve), (before, today)).await?;
    }
    let open: i64 = sqlx::query_scalar(
        "select count(*) from enforcement_actions where status in ('running', 'executing', 'reversing')",
    )
    .fetch_one(pool)
    .await?;
    report.in_flight = open as usize;
    Ok(report)
}

/// Reverses executed stops and flags no longer justified: the project is approved, the
/// period has ended, the limit is now above the spend, the policy drops the action,
/// switches to dry-run or manual, or no longer governs the project's team (it moved). A stop
/// lasts for the period it was for, and never against an approval; a flag is removed in the
/// decision's transaction.
async fn lift(pool: &PgPool, exec: &Executor, today: NaiveDate) -> Result<usize, sqlx::Error> {
    let mut lifted = 0;
    for id in ids(
        pool,
        // A stop whose reversal failed waits for an admin rather than being retried each minute.
        "select id from enforcement_actions
         where action in ('stop', 'flag') and status = 'executed'
           and coalesce(last_message, '') not like 'reversal failed%'
         order by id limit $1",
    )
    .await?
    {
        let mut tx = pool.begin().await?;
        claims::lock_decisions(&mut tx).await?;
        let Some(row) = claims::lock(&mut tx, id).await? else {
            continue;
        };
        if row.status != "executed" {
            continue;
        }
        let Some(why) = judge::judge(&mut tx, &row, today).await?.lifts_a_stop() else {
            continue;
        };
        let entry = super::trail::Entry::new("system", "disarmed", row.id, &row.project, &row.action)
            .response(&format!("lifting the {}: {why}", row.action));
        super::trail::append(&mut tx, &entry).await?;
        if row.action == "flag" {
            let message = format!("flag removed: {why}");
            claims::set_status(&mut tx, &row, "system", ("reversed", "reversed"), &message).await?;
            tx.commit().await?;
            lifted += 1;
            continue;
        }
        let claim = claims::claim(&mut tx, &row, exec.lease).await?;
        tx.commit().await?;
        let row = claims::ActionRow {
            claimed_from: Some("executed".into()),
            ..row
        };
        stop_run::run_claimed(pool, exec, &row, claim, "system", (Intent::Reverse, today)).await?;
        lifted += 1;
    }
    Ok(lifted)
}

/// Deletes the AWS budgets of stops that are reversed, cancelled or disarmed.
async fn clean_up(pool: &PgPool, exec: &Executor) -> Result<(), sqlx::Error> {
    let due = ids(
        pool,
        "select id from enforcement_actions where aws_cleanup and status <> 'running' order by id limit $1",
    )
    .await?;
    if due.is_empty() {
        return Ok(());
    }
    let aws = match exec.aws().await {
        Ok(aws) => aws,
        Err(failure) => {
            tracing::warn!(error = %failure.message, "cannot delete enforcement budgets in AWS");
            return Ok(());
        }
    };
    for id in due {
        if let Some(row) = claims::read(&mut *pool.acquire().await?, id).await? {
            stop_run::clean_up(pool, &aws, &row).await?;
        }
    }
    Ok(())
}

/// Stops still in force whose justification has gone, with why: those whose reversal AWS
/// refused (the lift reverses every other one at its next pass, within a minute). At most
/// 200, judged without the decision lock: for the Enforcement page.
pub async fn unjustified(pool: &PgPool, today: NaiveDate) -> Result<Vec<(i64, String, String)>, sqlx::Error> {
    let mut out = Vec::new();
    for id in ids(
        pool,
        "select id from enforcement_actions
         where action = 'stop' and status = 'executed' and last_message like 'reversal failed%'
         order by id desc limit least($1, 200)",
    )
    .await?
    {
        let mut conn = pool.acquire().await?;
        let Some(row) = claims::read(&mut conn, id).await? else {
            continue;
        };
        if let Some(why) = judge::judge(&mut conn, &row, today).await?.lifts_a_stop() {
            out.push((row.id, row.project, why));
        }
    }
    Ok(out)
}

/// `serve`'s loop: a pass every `every` (a minute), and at once when woken (an approval or
/// a policy change to carry out in AWS).
pub async fn run_forever(pool: PgPool, exec: Executor, every: Duration) {
    let mut ticker = tokio::time::interval(every);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            () = exec.wake.notified() => {}
        }
        let today = chrono::Utc::now().date_naive();
        match pass(&pool, &exec, today).await {
            Ok(report) if report.changed > 0 => {
                tracing::info!(
                    changed = report.changed,
                    in_flight = report.in_flight,
                    "enforcement pass"
                );
            }
            Ok(_) => {}
            Err(error) => tracing::error!(%error, "enforcement pass failed"),
        }
    }
}
