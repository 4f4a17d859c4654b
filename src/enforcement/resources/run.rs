//! A resource stop, claimed: list what the project runs, confirm the violation still holds
//! under the decision lock, then stop each resource with its own call and record each
//! outcome; tracking re-describes what AWS is still stopping or starting until AWS confirms
//! it; reversal restarts exactly the resources this stop stopped.
//!
//! No AWS call is made with a transaction open. Each resource is marked `requested` before
//! its call, so a run killed between the call and its record is found by the next pass,
//! which re-describes the resource and acts only on what AWS reports: nothing is stopped
//! twice or forgotten. A transient failure (throttling, a 5xx, a timeout) leaves the
//! resource where it was for the next pass; only AWS's own refusal is recorded as failed.

use aws_config::SdkConfig;
use sqlx::PgPool;

use super::act::{self, Seen};
use super::discover::{self, Tags};
use super::store::{self, ResourceRow};
use super::{CallError, Clients, Found, Kind};
use crate::enforcement::claims::{self, ActionRow, Intent, Settled, Step};
use crate::enforcement::executor::Executor;
use crate::enforcement::policy;

/// What a resource stop reaches: the kinds its policy lists, in these regions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub kinds: Vec<Kind>,
    pub regions: Vec<String>,
}

/// The plan of the policy that governs `row`'s team now, when its stop lists resources;
/// `None` for a stop through an AWS Budgets action.
pub async fn plan(pool: &PgPool, exec: &Executor, row: &ActionRow) -> Result<Option<Plan>, sqlx::Error> {
    let mut conn = pool.acquire().await?;
    let policy = policy::for_team(&mut conn, row.team.as_deref()).await?;
    let Some(stop) = policy.and_then(|p| p.stop).filter(|s| s.on_resources()) else {
        return Ok(None);
    };
    let kinds = stop.resources.iter().filter_map(|k| Kind::from_policy_key(k)).collect();
    let regions = if stop.regions.is_empty() {
        exec.regions().await
    } else {
        stop.regions.clone()
    };
    Ok(Some(Plan { kinds, regions }))
}

fn settled(status: &'static str, event: &'static str, message: String) -> Settled<'static> {
    Settled {
        status,
        event,
        message,
        request_id: None,
        aws_status: None,
    }
}

/// The project's accelerated resources of the plan's kinds in every region of the plan.
async fn discover_all(sdk: &SdkConfig, exec: &Executor, row: &ActionRow, plan: &Plan) -> Result<Vec<Found>, CallError> {
    let tags = Tags {
        project_key: &exec.tag_key,
        user_key: &exec.user_tag_key,
        project: &row.project,
    };
    let mut found = Vec::new();
    for region in &plan.regions {
        let readers = Clients::reading(sdk, region);
        let listed = discover::running(&readers, region, tags, &plan.kinds).await?;
        found.extend(listed.into_iter().filter(Found::is_accelerated));
    }
    Ok(found)
}

/// Lists an unclaimed dry-run or manual stop's resources, so the proposal shows exactly what
/// a stop would touch. Recorded only while the stop is still a proposal. Returns whether it
/// recorded a listing.
pub async fn list_proposal(pool: &PgPool, exec: &Executor, row: &ActionRow, plan: &Plan) -> Result<bool, sqlx::Error> {
    let sdk = exec.sdk().await;
    let found = match discover_all(&sdk, exec, row, plan).await {
        Ok(found) => found,
        Err(err) => {
            tracing::warn!(action = row.id, error = %err.message, "listing a stop's resources failed; tried again next pass");
            return Ok(false);
        }
    };
    let mut tx = pool.begin().await?;
    let still: Option<String> = sqlx::query_scalar(
        "select status from enforcement_actions where id = $1 and status in ('proposed', 'awaiting_approval') for update",
    )
    .bind(row.id)
    .fetch_optional(&mut *tx)
    .await?;
    if still.is_none() {
        return Ok(false);
    }
    store::record_listing(&mut tx, row.id, &found).await?;
    tx.commit().await?;
    Ok(true)
}

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
    let sdk = exec.sdk().await;
    let outcome = match intent {
        Intent::Reverse => Step::End(reverse(pool, &sdk, row).await?),
        _ => match plan(pool, exec, row).await? {
            None => Step::End(settled(
                "failed",
                "failed",
                "the policy no longer stops the project's resources".into(),
            )),
            Some(plan) => run(pool, exec, &sdk, row, claim, &plan, (intent, today)).await?,
        },
    };
    claims::end(&mut *pool.acquire().await?, row, claim, actor, intent, outcome).await
}

async fn run(
    pool: &PgPool,
    exec: &Executor,
    sdk: &SdkConfig,
    row: &ActionRow,
    claim: i64,
    plan: &Plan,
    (intent, today): (Intent, chrono::NaiveDate),
) -> Result<Step, sqlx::Error> {
    let found = match discover_all(sdk, exec, row, plan).await {
        Ok(found) => found,
        Err(err) if err.transient => {
            return Ok(Step::Release(format!(
                "listing the project's resources did not succeed ({}); tried again on the next pass",
                err.message
            )));
        }
        Err(err) => return Ok(Step::End(settled("failed", "failed", err.message))),
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
        store::record_listing(&mut tx, row.id, &found).await?;
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
    let rows = advance(pool, sdk, row.id).await?;
    Ok(Step::End(stop_outcome(&rows)))
}

/// "3 resources would be stopped (2 skipped)" and the like.
fn describe_listing(rows: &[ResourceRow]) -> String {
    let listed = rows.iter().filter(|r| r.status == "listed").count();
    let skipped = rows.iter().filter(|r| r.status == "skipped").count();
    match (listed, skipped) {
        (0, 0) => "the project runs no GPU resources of the listed kinds now".into(),
        (n, 0) => format!("{n} of the project's GPU resources would be stopped"),
        (n, s) => format!("{n} of the project's GPU resources would be stopped; {s} would be left running"),
    }
}

/// Where a stop stands once its calls are made: executing while AWS is still stopping
/// something, executed once every resource is settled, failed when AWS refused them all.
fn stop_outcome(rows: &[ResourceRow]) -> Settled<'static> {
    let count = |status: &str| rows.iter().filter(|r| r.status == status).count();
    let (moving, stopped, failed) = (
        count("requested") + count("stopping") + count("listed"),
        count("stopped"),
        count("failed"),
    );
    let summary = format!(
        "{stopped} stopped, {moving} stopping, {failed} failed, {} left running, {} gone",
        count("skipped"),
        count("gone")
    );
    if moving > 0 {
        settled(
            "executing",
            "started",
            format!("stopping the project's resources: {summary}; burnrate shows it done when AWS confirms each"),
        )
    } else if failed > 0 && stopped == 0 {
        settled(
            "failed",
            "failed",
            format!("AWS refused to stop the project's resources: {summary}"),
        )
    } else {
        settled("executed", "executed", format!("the project's resources: {summary}"))
    }
}

/// Moves every resource of a stop in progress on by one step: a listed one is stopped, a
/// requested one (a run that died after marking it) is re-described and stopped only if AWS
/// still runs it, a stopping one is re-described. Returns the rows as they now stand.
async fn advance(pool: &PgPool, sdk: &SdkConfig, action_id: i64) -> Result<Vec<ResourceRow>, sqlx::Error> {
    let rows = store::of_action(&mut *pool.acquire().await?, action_id).await?;
    for r in rows {
        let Some(kind) = r.kind() else { continue };
        let writers = Clients::acting(sdk, &r.region);
        let mut conn = pool.acquire().await?;
        match r.status.as_str() {
            "listed" => {
                if !store::set_status(&mut conn, r.id, &["listed"], "requested", None).await? {
                    continue;
                }
                let answer = act::stop(&writers, kind, &r.resource_id).await;
                record_stop(&mut conn, &r, kind, answer).await?;
            }
            "requested" => match act::describe(&writers, kind, &r.resource_id).await {
                Ok(Seen::Running) | Ok(Seen::Starting) => {
                    let answer = act::stop(&writers, kind, &r.resource_id).await;
                    record_stop(&mut conn, &r, kind, answer).await?;
                }
                Ok(seen) => record_seen(&mut conn, &r, kind, seen).await?,
                Err(err) => note_transient(&mut conn, &r, &err).await?,
            },
            "stopping" => match act::describe(&writers, kind, &r.resource_id).await {
                Ok(seen) => record_seen(&mut conn, &r, kind, seen).await?,
                Err(err) => note_transient(&mut conn, &r, &err).await?,
            },
            _ => {}
        }
    }
    store::of_action(&mut *pool.acquire().await?, action_id).await
}

fn job_note(kind: Kind) -> Option<&'static str> {
    (!kind.restorable())
        .then_some("progress since the job's last checkpoint is lost, and reversal cannot bring the job back")
}

/// Records what AWS answered a stop call.
async fn record_stop(
    conn: &mut sqlx::PgConnection,
    r: &ResourceRow,
    kind: Kind,
    answer: Result<Seen, CallError>,
) -> Result<(), sqlx::Error> {
    match answer {
        Ok(seen) => record_seen(conn, r, kind, seen).await,
        Err(err) if err.transient => note_transient(conn, r, &err).await,
        Err(err) if err.code.as_deref() == Some("UnsupportedOperation") => {
            let note = format!("AWS cannot stop it ({}): left running, never terminated", err.message);
            store::set_status(conn, r.id, &["requested"], "skipped", Some(&note))
                .await
                .map(drop)
        }
        Err(err) => store::set_status(conn, r.id, &["requested"], "failed", Some(&err.message))
            .await
            .map(drop),
    }
}

/// Records where AWS reports a resource of a stop in progress.
async fn record_seen(
    conn: &mut sqlx::PgConnection,
    r: &ResourceRow,
    kind: Kind,
    seen: Seen,
) -> Result<(), sqlx::Error> {
    let from = &["requested", "stopping"];
    match seen {
        Seen::Stopped => store::set_status(conn, r.id, from, "stopped", job_note(kind)).await,
        Seen::Stopping => store::set_status(conn, r.id, from, "stopping", job_note(kind)).await,
        Seen::Gone => {
            store::set_status(
                conn,
                r.id,
                from,
                "gone",
                Some("it ended or was removed outside burnrate"),
            )
            .await
        }
        // Still running after AWS accepted the stop: asked again from `requested`.
        Seen::Running | Seen::Starting => store::set_status(conn, r.id, from, "requested", None).await,
        Seen::Other(state) => {
            let note = format!("AWS reports it as {state}");
            store::set_status(conn, r.id, from, "failed", Some(&note)).await
        }
    }
    .map(drop)
}

/// A passing AWS fault: the resource stays where it is, with why, for the next pass.
async fn note_transient(conn: &mut sqlx::PgConnection, r: &ResourceRow, err: &CallError) -> Result<(), sqlx::Error> {
    if !err.transient {
        return store::set_status(
            conn,
            r.id,
            &["requested", "stopping", "starting"],
            "failed",
            Some(&err.message),
        )
        .await
        .map(drop);
    }
    let note = format!("{}; asked again on the next pass", err.message);
    store::set_status(conn, r.id, &[r.status.as_str()], &r.status, Some(&note))
        .await
        .map(drop)
}

/// Restarts what this stop stopped: instances and notebooks are started, endpoints created
/// again from their recorded config. Jobs stay stopped (AWS cannot restart them).
async fn reverse(pool: &PgPool, sdk: &SdkConfig, row: &ActionRow) -> Result<Settled<'static>, sqlx::Error> {
    let rows = store::of_action(&mut *pool.acquire().await?, row.id).await?;
    for r in rows.iter().filter(|r| r.status == "stopped") {
        let Some(kind) = r.kind().filter(|k| k.restorable()) else {
            continue;
        };
        let writers = Clients::acting(sdk, &r.region);
        let mut conn = pool.acquire().await?;
        if !store::set_status(&mut conn, r.id, &["stopped"], "starting", None).await? {
            continue;
        }
        match act::start(&writers, kind, &r.resource_id, r.endpoint_config.as_deref()).await {
            Ok(Seen::Running) => store::set_status(&mut conn, r.id, &["starting"], "restarted", None).await?,
            Ok(_) => true,
            Err(err) if err.transient => {
                // Not started: back to stopped, so the next reversal asks again.
                let note = format!("{}; asked again on the next pass", err.message);
                store::set_status(&mut conn, r.id, &["starting"], "stopped", Some(&note)).await?
            }
            Err(err) => store::set_status(&mut conn, r.id, &["starting"], "failed", Some(&err.message)).await?,
        };
    }
    let rows = store::of_action(&mut *pool.acquire().await?, row.id).await?;
    Ok(reverse_outcome(&rows))
}

fn reverse_outcome(rows: &[ResourceRow]) -> Settled<'static> {
    let count = |status: &str| rows.iter().filter(|r| r.status == status).count();
    let restorable_stopped = rows
        .iter()
        .filter(|r| r.status == "stopped" && r.kind().is_some_and(Kind::restorable))
        .count();
    let summary = format!(
        "{} restarted, {} starting, {} still stopped, {} failed",
        count("restarted"),
        count("starting"),
        count("stopped"),
        count("failed")
    );
    if count("starting") > 0 || restorable_stopped > 0 {
        settled(
            "reversing",
            "reversal_started",
            format!("restarting what the stop stopped: {summary}"),
        )
    } else {
        settled(
            "reversed",
            "reversed",
            format!("restarted what the stop stopped: {summary}"),
        )
    }
}

/// Follows an unclaimed `executing` or `reversing` resource stop one step, and records it
/// done once AWS has confirmed every resource. Returns true when the action moved on.
pub async fn track(pool: &PgPool, exec: &Executor, row: &ActionRow) -> Result<bool, sqlx::Error> {
    let sdk = exec.sdk().await;
    let next = match row.status.as_str() {
        "executing" => stop_outcome(&advance(pool, &sdk, row.id).await?),
        "reversing" => {
            follow_starts(pool, &sdk, row.id).await?;
            reverse(pool, &sdk, row).await?
        }
        _ => return Ok(false),
    };
    if next.status == row.status {
        return Ok(false);
    }
    let mut conn = pool.acquire().await?;
    claims::transition(&mut conn, row, &row.status, &next).await
}

/// Re-describes what a reversal is starting.
async fn follow_starts(pool: &PgPool, sdk: &SdkConfig, action_id: i64) -> Result<(), sqlx::Error> {
    let rows = store::of_action(&mut *pool.acquire().await?, action_id).await?;
    for r in rows.iter().filter(|r| r.status == "starting") {
        let Some(kind) = r.kind() else { continue };
        let writers = Clients::acting(sdk, &r.region);
        let mut conn = pool.acquire().await?;
        match act::describe(&writers, kind, &r.resource_id).await {
            Ok(Seen::Running) => store::set_status(&mut conn, r.id, &["starting"], "restarted", None).await?,
            Ok(Seen::Gone) => {
                store::set_status(&mut conn, r.id, &["starting"], "gone", Some("removed outside burnrate")).await?
            }
            Ok(_) => false,
            Err(err) => {
                note_transient(&mut conn, r, &err).await?;
                false
            }
        };
    }
    Ok(())
}

/// Ends the claim of a resource stop whose runner died: its resources' rows say where it
/// stands, and tracking carries on from there.
pub async fn resume(pool: &PgPool, row: &ActionRow, claim: i64) -> Result<(), sqlx::Error> {
    let reversing = row.claimed_from.as_deref() == Some("executed");
    let rows = store::of_action(&mut *pool.acquire().await?, row.id).await?;
    let acted = rows.iter().any(|r| !matches!(r.status.as_str(), "listed" | "skipped"));
    let mut conn = pool.acquire().await?;
    let message = "the run was interrupted; each resource is re-described with AWS and the stop carries on";
    match (reversing, acted) {
        (true, _) => {
            let settled = settled("reversing", "interrupted", message.into());
            claims::finish(&mut conn, row, claim, "system", &settled).await?;
        }
        (false, true) => {
            let settled = settled("executing", "interrupted", message.into());
            claims::finish(&mut conn, row, claim, "system", &settled).await?;
        }
        (false, false) => {
            claims::release(
                &mut conn,
                row,
                claim,
                Some(("system", "interrupted")),
                "the run was interrupted before it stopped anything",
            )
            .await?;
        }
    }
    Ok(())
}
