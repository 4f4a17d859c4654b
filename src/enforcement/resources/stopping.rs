//! Stopping a claimed or tracked stop's resources, one AWS call and one row each, and where
//! the stop stands after.
//!
//! A resource is marked `requested` (compare-and-set from `listed`) before its stop call, so
//! a run killed between the call and its record is found by the next pass, which
//! re-describes the resource and asks again only if AWS still runs it. A call refused by AWS
//! is checked against a fresh describe before it is recorded as failed: a resource that was
//! terminated or finished meanwhile is `gone`, one still pending is asked again later.

use sqlx::{PgConnection, PgPool};

use super::act::{self, Seen};
use super::store::{self, ResourceRow};
use super::{AwsAccounts, CallError, Clients, Kind};
use crate::enforcement::claims::Settled;

/// Whether more resources may be stopped: the violation still holds (`judge`, under the
/// decision lock). When it does not, nothing more is stopped and what was is left for the
/// lift to restart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopping {
    Continue,
    Hold,
}

/// True when stop `id` is still `executing`, not snoozed, and its violation holds as of
/// `today`: judged with the row locked under the decision lock, which every approval,
/// request decision, policy change, snooze and reversal takes too. Asked before each call
/// that stops something, so a decision that commits during a stop holds back everything
/// not yet stopped; the window left is the one AWS call already sent.
pub async fn still_holds(pool: &PgPool, id: i64, today: chrono::NaiveDate) -> Result<bool, sqlx::Error> {
    let mut tx = pool.begin().await?;
    crate::enforcement::claims::lock_decisions(&mut tx).await?;
    let Some(row) = crate::enforcement::claims::lock(&mut tx, id).await? else {
        return Ok(false);
    };
    let snoozed = row.snoozed_until.is_some_and(|until| until > chrono::Utc::now());
    if row.status != "executing" || snoozed {
        return Ok(false);
    }
    let verdict = crate::enforcement::judge::judge(&mut tx, &row, today).await?;
    tx.commit().await?;
    Ok(verdict == crate::enforcement::judge::Verdict::Holds)
}

/// Moves every resource of a stop in progress on by one step, and returns the rows as they
/// now stand with whether it may still stop more. A listed one is stopped; a requested one
/// is re-described and stopped again only if AWS still runs it; a stopping one is
/// re-described. The violation is judged again before every stop call: once it no longer
/// holds (`Hold`), nothing more is stopped, and a requested one AWS still runs goes back to
/// `listed`.
pub async fn advance(
    pool: &PgPool,
    accounts: &mut AwsAccounts<'_>,
    action_id: i64,
    today: chrono::NaiveDate,
) -> Result<(Vec<ResourceRow>, Stopping), sqlx::Error> {
    let mut may = judged(pool, action_id, today).await?;
    let rows = store::of_action(&mut *pool.acquire().await?, action_id).await?;
    for r in rows {
        let Some(kind) = r.kind() else { continue };
        if !matches!(r.status.as_str(), "listed" | "requested" | "stopping") {
            continue;
        }
        let mut conn = pool.acquire().await?;
        let clients = match accounts.sdk(&r.account_id).await {
            Ok(sdk) => Clients::acting(&sdk, &r.region),
            Err(err) => {
                note_fault(&mut conn, &r, &r.status, &err).await?;
                continue;
            }
        };
        // The last word before a call that changes something.
        let stops_now = matches!(r.status.as_str(), "listed" | "requested");
        if stops_now && may == Stopping::Continue {
            may = judged(pool, action_id, today).await?;
        }
        match (r.status.as_str(), may) {
            ("listed", Stopping::Continue) => {
                if kind == Kind::Role
                    && (already_denied(pool, &mut conn, &clients, &r).await?
                        || !guard_ready(pool, &mut conn, &clients, &r).await?)
                {
                    continue;
                }
                if !store::set_status(&mut conn, r.id, &["listed"], "requested", None).await? {
                    continue;
                }
                let answer = act::stop(&clients, kind, &r.resource_id, r.restore_from.as_deref()).await;
                record_stop(&mut conn, &clients, &r, kind, answer).await?;
            }
            ("requested", _) => match act::describe(&clients, kind, &r.resource_id, r.restore_from.as_deref()).await {
                Ok(Seen::Running | Seen::Starting) if may == Stopping::Continue => {
                    let answer = act::stop(&clients, kind, &r.resource_id, r.restore_from.as_deref()).await;
                    record_stop(&mut conn, &clients, &r, kind, answer).await?;
                }
                Ok(Seen::Running | Seen::Starting) => {
                    let note = "not stopped: the violation no longer holds";
                    store::set_status(&mut conn, r.id, &["requested"], "listed", Some(note)).await?;
                }
                Ok(seen) => record_seen(&mut conn, &r, kind, seen).await?,
                Err(err) => note_fault(&mut conn, &r, "requested", &err).await?,
            },
            ("stopping", _) => match act::describe(&clients, kind, &r.resource_id, r.restore_from.as_deref()).await {
                Ok(seen) => record_seen(&mut conn, &r, kind, seen).await?,
                Err(err) => note_fault(&mut conn, &r, "stopping", &err).await?,
            },
            _ => {}
        }
    }
    Ok((store::of_action(&mut *pool.acquire().await?, action_id).await?, may))
}

async fn judged(pool: &PgPool, action_id: i64, today: chrono::NaiveDate) -> Result<Stopping, sqlx::Error> {
    Ok(if still_holds(pool, action_id, today).await? {
        Stopping::Continue
    } else {
        Stopping::Hold
    })
}

/// A role that has the deny policy already, before this stop attaches it: held with another
/// stop in force that attached it (both must end before it is detached), or left as it is
/// when it was attached outside burnrate, so no reversal takes away a guard someone else set.
/// True when it settled the row.
async fn already_denied(
    pool: &PgPool,
    conn: &mut PgConnection,
    clients: &Clients,
    r: &ResourceRow,
) -> Result<bool, sqlx::Error> {
    match act::describe(clients, Kind::Role, &r.resource_id, r.restore_from.as_deref()).await {
        Ok(Seen::Stopped) if store::held_elsewhere(pool, r).await? => {
            let note =
                "the deny policy is attached: this role cannot launch GPUs; another stop in force attached it too";
            store::set_status(conn, r.id, &["listed"], "stopped", Some(note)).await?;
            Ok(true)
        }
        Ok(Seen::Stopped) => {
            let note = "the deny policy was already attached outside burnrate: left as it is, and reversal leaves it";
            store::set_status(conn, r.id, &["listed"], "skipped", Some(note)).await?;
            Ok(true)
        }
        // Not attached, or unknown: the attach call settles it (and names IAM's refusal).
        _ => Ok(false),
    }
}

/// Before a role's deny policy is attached: the project's own policy is created (unless it
/// exists); a team-wide policy named by the stop is not attached while another project of
/// the team is approved, since it would block that project's launches too. False when it
/// settled the row instead.
async fn guard_ready(
    pool: &PgPool,
    conn: &mut PgConnection,
    clients: &Clients,
    r: &ResourceRow,
) -> Result<bool, sqlx::Error> {
    let policy = r.restore_from.as_deref().unwrap_or_default();
    if super::relaunch::is_ours(policy) {
        let Some((key, project)) = r.tags.0.first() else {
            let note = "the project's deny policy has no recorded project tag";
            store::set_status(conn, r.id, &["listed"], "failed", Some(note)).await?;
            return Ok(false);
        };
        return match super::relaunch::ensure(&clients.iam, policy, key, project).await {
            Ok(()) => Ok(true),
            Err(err) => note_fault(conn, r, "listed", &err).await.map(|_| false),
        };
    }
    let approved: Option<String> = sqlx::query_scalar(
        "select ap.project from approvals ap
         join projects p on p.name = ap.project
         join enforcement_actions a on a.id = $1
         join violations v on v.id = a.violation_id
         join projects own on own.name = v.project
         where ap.ended_at is null and ap.expires >= (now() at time zone 'utc')::date
           and p.team_id = own.team_id and ap.project <> v.project
         order by ap.project limit 1",
    )
    .bind(r.action_id)
    .fetch_optional(pool)
    .await?;
    let Some(approved) = approved else {
        return Ok(true);
    };
    let note = format!(
        "not attached: the named deny policy blocks every project on the role, and approved project {approved:?} of \
         the team may launch through it (leave policy_arn out for a deny policy of this project alone)"
    );
    store::set_status(conn, r.id, &["listed"], "skipped", Some(&note)).await?;
    Ok(false)
}

/// What a stop of this kind means beyond "stopped".
fn stop_note(kind: Kind) -> Option<&'static str> {
    match kind {
        Kind::TrainingJob | Kind::ProcessingJob => {
            Some("progress since the job's last checkpoint is lost, and reversal cannot bring the job back")
        }
        Kind::Role => Some(
            "the deny policy is attached: this role cannot launch GPUs it denies (with the project's own policy: \
             what is tagged with the project, exactly) until the stop is reversed",
        ),
        _ => None,
    }
}

/// Records what AWS answered a stop call on a `requested` resource.
async fn record_stop(
    conn: &mut PgConnection,
    clients: &Clients,
    r: &ResourceRow,
    kind: Kind,
    answer: Result<Seen, CallError>,
) -> Result<(), sqlx::Error> {
    let err = match answer {
        Ok(seen) => return record_seen(conn, r, kind, seen).await,
        Err(err) if err.transient => return note_fault(conn, r, "requested", &err).await,
        Err(err) => err,
    };
    if err.code.as_deref() == Some("UnsupportedOperation") {
        let note = format!("AWS cannot stop it ({}): left running, never terminated", err.message);
        return store::set_status(conn, r.id, &["requested"], "skipped", Some(&note))
            .await
            .map(drop);
    }
    // A role or deny policy IAM does not know is a configuration error, not a role gone.
    if kind == Kind::Role {
        return store::set_status(conn, r.id, &["requested"], "failed", Some(&err.message))
            .await
            .map(drop);
    }
    // Refused: where does it stand now? Ended meanwhile, or still pending, is no failure.
    match act::describe(clients, kind, &r.resource_id, r.restore_from.as_deref()).await {
        Ok(Seen::Starting) => {
            let note = format!("{}; it is still starting, asked again on the next pass", err.message);
            store::set_status(conn, r.id, &["requested"], "requested", Some(&note))
                .await
                .map(drop)
        }
        Ok(seen @ (Seen::Stopped | Seen::Stopping | Seen::Gone)) => record_seen(conn, r, kind, seen).await,
        _ => store::set_status(conn, r.id, &["requested"], "failed", Some(&err.message))
            .await
            .map(drop),
    }
}

/// Records where AWS reports a resource of a stop in progress.
async fn record_seen(conn: &mut PgConnection, r: &ResourceRow, kind: Kind, seen: Seen) -> Result<(), sqlx::Error> {
    let from = &["requested", "stopping"];
    match seen {
        Seen::Stopped => store::set_status(conn, r.id, from, "stopped", stop_note(kind)).await,
        Seen::Stopping => store::set_status(conn, r.id, from, "stopping", stop_note(kind)).await,
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

/// A failed describe or call on a resource in `status`: a passing fault leaves it there,
/// with why, for the next pass; AWS's own refusal fails it.
pub(super) async fn note_fault(
    conn: &mut PgConnection,
    r: &ResourceRow,
    status: &str,
    err: &CallError,
) -> Result<(), sqlx::Error> {
    if err.transient {
        let note = format!("{}; asked again on the next pass", err.message);
        return store::set_status(conn, r.id, &[status], status, Some(&note))
            .await
            .map(drop);
    }
    store::set_status(conn, r.id, &[status], "failed", Some(&err.message))
        .await
        .map(drop)
}

/// Where a stop stands once its calls are made: executing while AWS is still stopping
/// something (or, while the violation holds, something is still to be stopped), executed
/// once every resource is settled, failed when AWS refused them all.
pub fn outcome(rows: &[ResourceRow], may: Stopping) -> Settled<'static> {
    let count = |status: &str| rows.iter().filter(|r| r.status == status).count();
    let waiting = if may == Stopping::Continue { count("listed") } else { 0 };
    let (moving, stopped, failed) = (
        count("requested") + count("stopping") + waiting,
        count("stopped"),
        count("failed"),
    );
    let summary = format!(
        "{stopped} stopped, {moving} stopping, {failed} failed, {} left running, {} gone",
        count("skipped"),
        count("gone")
    );
    let settled = Settled::new;
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
