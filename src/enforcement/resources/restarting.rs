//! Reversing a resource stop: restart exactly what it stopped. Instances and notebooks are
//! started, endpoints created again from their recorded config with every tag they had, a
//! role's deny policy detached; jobs stay stopped (AWS cannot restart them). Each resource is described first, so a start sent
//! before a lost answer is not sent twice, and one that another stop in force still holds
//! stopped is left stopped (`held`). A start AWS refuses is `restart_failed`, and the
//! reversal fails with it: the stop stays in force, with why.

use sqlx::PgPool;

use super::act::{self, Seen};
use super::store::{self, ResourceRow};
use super::{AwsAccounts, Clients, Kind};
use crate::enforcement::claims::Settled;

/// The project tag a recreated endpoint carries, so its spend stays attributed.
pub struct Tag<'a> {
    pub key: &'a str,
    pub value: &'a str,
}

/// One step of the reversal: follows what is starting, starts what is still stopped, and
/// returns where the reversal stands.
pub async fn step(
    pool: &PgPool,
    accounts: &mut AwsAccounts<'_>,
    action_id: i64,
    tag: Tag<'_>,
) -> Result<Settled<'static>, sqlx::Error> {
    let rows = store::of_action(&mut *pool.acquire().await?, action_id).await?;
    for r in &rows {
        let Some(kind) = r.kind().filter(|k| k.restorable()) else {
            continue;
        };
        if !matches!(r.status.as_str(), "stopped" | "starting") {
            continue;
        }
        let mut conn = pool.acquire().await?;
        let from = r.status.as_str();
        let clients = match accounts.sdk(&r.account_id).await {
            Ok(sdk) => Clients::acting(&sdk, &r.region),
            Err(err) => {
                restart_fault(&mut conn, r, from, &err).await?;
                continue;
            }
        };
        let seen = match act::describe(&clients, kind, &r.resource_id, r.restore_from.as_deref()).await {
            Ok(seen) => seen,
            Err(err) => {
                restart_fault(&mut conn, r, from, &err).await?;
                continue;
            }
        };
        match seen {
            Seen::Running => store::set_status(&mut conn, r.id, &[from], "restarted", None).await?,
            Seen::Starting => store::set_status(&mut conn, r.id, &[from], "starting", None).await?,
            Seen::Gone if kind != Kind::Endpoint => {
                store::set_status(&mut conn, r.id, &[from], "gone", Some("removed outside burnrate")).await?
            }
            Seen::Stopped | Seen::Gone if store::held_elsewhere(pool, r).await? => {
                let note = "another stop in force holds it stopped";
                store::set_status(&mut conn, r.id, &[from], "held", Some(note)).await?
            }
            Seen::Stopped | Seen::Gone => start(&mut conn, &clients, r, kind, from, &tag).await?,
            Seen::Stopping => false,
            Seen::Other(state) => {
                let note = format!("AWS reports it as {state}");
                store::set_status(&mut conn, r.id, &[from], "restart_failed", Some(&note)).await?
            }
        };
    }
    let rows = store::of_action(&mut *pool.acquire().await?, action_id).await?;
    Ok(outcome(&rows))
}

/// A failed describe or credential on a resource being restarted: a passing fault leaves
/// it for the next pass; anything else is `restart_failed`, so the reversal fails loudly and
/// the stop stays in force.
async fn restart_fault(
    conn: &mut sqlx::PgConnection,
    r: &ResourceRow,
    from: &str,
    err: &super::CallError,
) -> Result<(), sqlx::Error> {
    if err.transient {
        return super::stopping::note_fault(conn, r, from, err).await;
    }
    store::set_status(conn, r.id, &[from], "restart_failed", Some(&err.message))
        .await
        .map(drop)
}

async fn start(
    conn: &mut sqlx::PgConnection,
    clients: &Clients,
    r: &ResourceRow,
    kind: Kind,
    from: &str,
    tag: &Tag<'_>,
) -> Result<bool, sqlx::Error> {
    if !store::set_status(conn, r.id, &[from], "starting", None).await? {
        return Ok(false);
    }
    let config = r.restore_from.as_deref();
    // Every tag it had when listed, and the project's in any case, so its spend stays
    // attributed as before (`user`, cost-allocation tags).
    let mut tags = r.tags.0.clone();
    if !tags.iter().any(|(key, _)| key == tag.key) {
        tags.push((tag.key.to_string(), tag.value.to_string()));
    }
    match act::start(clients, kind, &r.resource_id, config, &tags).await {
        Ok(Seen::Running) => store::set_status(conn, r.id, &["starting"], "restarted", None).await,
        Ok(_) => Ok(true),
        Err(err) if err.transient => {
            // Described before the next try, so a start that did go through is not sent again.
            let note = format!("{}; asked again on the next pass", err.message);
            store::set_status(conn, r.id, &["starting"], "starting", Some(&note)).await
        }
        Err(err) => store::set_status(conn, r.id, &["starting"], "restart_failed", Some(&err.message)).await,
    }
}

fn outcome(rows: &[ResourceRow]) -> Settled<'static> {
    let count = |status: &str| rows.iter().filter(|r| r.status == status).count();
    let pending = rows
        .iter()
        .filter(|r| matches!(r.status.as_str(), "stopped" | "starting") && r.kind().is_some_and(Kind::restorable))
        .count();
    let summary = format!(
        "{} restarted, {pending} starting, {} held stopped by another stop, {} could not be restarted, {} jobs stay stopped",
        count("restarted"),
        count("held"),
        count("restart_failed"),
        rows.iter()
            .filter(|r| r.status == "stopped" && !r.kind().is_some_and(Kind::restorable))
            .count(),
    );
    let settled = Settled::new;
    if pending > 0 {
        settled(
            "reversing",
            "reversal_started",
            format!("restarting what the stop stopped: {summary}"),
        )
    } else if count("restart_failed") > 0 {
        settled(
            "failed",
            "failed",
            format!("AWS refused to restart some of what the stop stopped: {summary}"),
        )
    } else {
        settled(
            "reversed",
            "reversed",
            format!("restarted what the stop stopped: {summary}"),
        )
    }
}
