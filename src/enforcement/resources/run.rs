//! A resource stop, claimed: list what the project runs and confirm the violation still
//! holds under the decision lock, then end the claim as `executing` (or, to reverse,
//! `reversing`). Tracking makes the stop and start calls, one resource at a time, at once
//! and at every pass until AWS confirms each: one tracker per stop (a session advisory
//! lock), and a stop under way stops more only while its violation still holds.
//!
//! No AWS call is made with a transaction open. Each resource is marked `requested` before
//! its stop call (`stopping`), so a process killed between the call and its record is found
//! by the next pass, which re-describes the resource and acts only on what AWS reports. A
//! transient failure (throttling, a 5xx, a timeout) leaves the resource where it was for
//! the next pass; only AWS's own refusal is recorded as failed.

use sqlx::PgPool;

use super::listing::{self, Listings, Plan, plan};
use super::restarting;
use super::stopping;
use super::store::{self, ResourceRow};
use super::{AwsAccounts, Kind};
use crate::enforcement::claims::{self, ActionRow, Intent, Settled, Step};
use crate::enforcement::executor::Executor;

/// Runs a claimed resource stop for `intent` and ends the claim; returns the status it
/// ended in.
pub async fn run_claimed(
    pool: &PgPool,
    exec: &Executor,
    row: &ActionRow,
    claim: i64,
    actor: &str,
    (intent, today): (Intent, chrono::NaiveDate),
) -> Result<String, sqlx::Error> {
    if intent == Intent::Reverse {
        // Reversing again (an admin's Reverse after AWS refused a start) tries those again.
        sqlx::query(
            "update enforcement_resources set status = 'stopped', updated_at = now()
             where action_id = $1 and status = 'restart_failed'",
        )
        .bind(row.id)
        .execute(pool)
        .await?;
    }
    let outcome = match intent {
        // The calls are made by tracking, once the claim has ended (below).
        Intent::Reverse => Step::End(Settled::new(
            "reversing",
            "reversal_started",
            "restarting what the stop stopped; burnrate shows it done when AWS confirms each".into(),
        )),
        _ => match plan(pool, exec, row).await? {
            None => Step::End(Settled::new(
                "failed",
                "failed",
                "the policy no longer stops the project's resources".into(),
            )),
            Some(plan) => run(pool, exec, row, claim, &plan, (intent, today)).await?,
        },
    };
    let status = claims::end(&mut *pool.acquire().await?, row, claim, actor, intent, outcome).await?;
    if !matches!(status.as_str(), "executing" | "reversing") {
        return Ok(status);
    }
    // The AWS calls, one resource at a time, by the same path every later pass takes: no
    // claim's lease to outlast, one tracker per stop.
    let Some(row) = claims::read(&mut *pool.acquire().await?, row.id).await? else {
        return Ok(status);
    };
    track(pool, exec, &row, today).await?;
    let now: Option<String> = sqlx::query_scalar("select status from enforcement_actions where id = $1")
        .bind(row.id)
        .fetch_optional(pool)
        .await?;
    Ok(now.unwrap_or(status))
}

async fn run(
    pool: &PgPool,
    exec: &Executor,
    row: &ActionRow,
    claim: i64,
    plan: &Plan,
    (intent, today): (Intent, chrono::NaiveDate),
) -> Result<Step, sqlx::Error> {
    // A stop about to run lists afresh: no read shared with proposals.
    let found = match listing::discover_all(exec, row, plan, &mut Listings::fresh()).await {
        Ok((found, _)) => found,
        Err(err) if err.transient => {
            // An admin's approval stands: the next pass tries again either way.
            return Ok(Step::Release(format!(
                "listing the project's resources did not succeed ({}); tried again on the next pass",
                err.message
            )));
        }
        Err(err) => return Ok(Step::End(Settled::new("failed", "failed", err.message))),
    };
    {
        let mut tx = pool.begin().await?;
        let ours: Option<i64> =
            sqlx::query_scalar("select id from enforcement_actions where id = $1 and claim = $2 for update")
                .bind(row.id)
                .bind(claim)
                .fetch_optional(&mut *tx)
                .await?;
        if ours.is_none() {
            return Ok(Step::Lost);
        }
        store::record_listing(&mut tx, row.id, &found, chrono::Duration::zero()).await?;
        tx.commit().await?;
    }
    if intent == Intent::Prepare {
        let rows = store::of_action(&mut *pool.acquire().await?, row.id).await?;
        return Ok(Step::Release(format!(
            "{}; nothing is stopped until an admin approves",
            describe_listing(&rows)
        )));
    }
    // The last word before AWS acts: judged again under the decision lock, claim checked.
    if !crate::enforcement::judge::confirm(&mut *pool.acquire().await?, row.id, claim, exec.lease, today).await? {
        return Ok(Step::Lost);
    }
    Ok(Step::End(Settled::new(
        "executing",
        "started",
        "stopping the project's resources; burnrate shows it done when AWS confirms each".into(),
    )))
}

/// "3 resources would be stopped (2 skipped)" and the like.
fn describe_listing(rows: &[ResourceRow]) -> String {
    let (roles, resources): (Vec<&ResourceRow>, Vec<&ResourceRow>) =
        rows.iter().partition(|r| r.kind() == Some(Kind::Role));
    let listed = resources.iter().filter(|r| r.status == "listed").count();
    let skipped = resources.iter().filter(|r| r.status == "skipped").count();
    let what = match (listed, skipped) {
        (0, 0) => "the project runs no GPU resources of the listed kinds now".into(),
        (n, 0) => format!("{n} of the project's GPU resources would be stopped"),
        (n, s) => format!("{n} of the project's GPU resources would be stopped; {s} would be left running"),
    };
    match roles.len() {
        0 => what,
        n => format!("{what}; the deny policy would be attached to {n} role(s), so they cannot launch GPUs"),
    }
}

/// The project tag a stop's recreated endpoints carry.
fn project_tag<'a>(exec: &'a Executor, row: &'a ActionRow) -> restarting::Tag<'a> {
    restarting::Tag {
        key: &exec.tag_key,
        value: &row.project,
    }
}

/// `pg_try_advisory_lock` key space for tracking one resource stop ("reso" in ASCII, then
/// the action id): one tracker at a time per stop, across passes and replicas.
const TRACK_LOCK: i64 = 0x7265_736f_0000_0000;

/// Follows an unclaimed `executing` or `reversing` resource stop one step, and records it
/// done once AWS has confirmed every resource. A stop under way stops more resources only
/// while its violation still holds (judged under the decision lock); otherwise it ends with
/// what it stopped, for the lift to restart. Returns true when the action moved on.
pub async fn track(
    pool: &PgPool,
    exec: &Executor,
    row: &ActionRow,
    today: chrono::NaiveDate,
) -> Result<bool, sqlx::Error> {
    // A session lock, not a transaction: held across the AWS calls, it locks no row, and it
    // ends with the connection if this process dies.
    let mut guard = pool.acquire().await?;
    let ours: bool = sqlx::query_scalar("select pg_try_advisory_lock($1)")
        .bind(TRACK_LOCK + row.id)
        .fetch_one(&mut *guard)
        .await?;
    if !ours {
        return Ok(false);
    }
    let moved = track_locked(pool, exec, row, today).await;
    sqlx::query("select pg_advisory_unlock($1)")
        .bind(TRACK_LOCK + row.id)
        .execute(&mut *guard)
        .await?;
    moved
}

async fn track_locked(
    pool: &PgPool,
    exec: &Executor,
    row: &ActionRow,
    today: chrono::NaiveDate,
) -> Result<bool, sqlx::Error> {
    let mut accounts = AwsAccounts::new(exec);
    let next = match row.status.as_str() {
        "executing" => {
            let (rows, may) = stopping::advance(pool, &mut accounts, row.id, today).await?;
            stopping::outcome(&rows, may)
        }
        "reversing" => match restarting::step(pool, &mut accounts, row.id, project_tag(exec, row)).await? {
            // A reversal AWS refused leaves the stop in force, with why.
            failed if failed.status == "failed" => Settled {
                message: format!("reversal failed: {}", failed.message),
                ..Settled::new("executed", "failed", String::new())
            },
            next => next,
        },
        _ => return Ok(false),
    };
    if next.status == row.status {
        return Ok(false);
    }
    let mut conn = pool.acquire().await?;
    claims::transition(&mut conn, row, &row.status, &next).await
}

/// Ends the claim of a resource stop whose runner died. A claimed run makes no stop or
/// start call (tracking does, after the claim), so nothing was done in AWS: the stop returns
/// to where it was claimed from, to run again.
pub async fn resume(pool: &PgPool, row: &ActionRow, claim: i64) -> Result<(), sqlx::Error> {
    let mut conn = pool.acquire().await?;
    claims::release(
        &mut conn,
        row,
        claim,
        Some(("system", "interrupted")),
        "the run was interrupted before it stopped or restarted anything; it runs again",
    )
    .await?;
    Ok(())
}
