//! The `enforcement_resources` rows: what a stop found, and what became of each resource.

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use sqlx::PgConnection;

use super::{Found, Kind};

/// One resource of a stop, as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ResourceRow {
    pub id: i64,
    pub action_id: i64,
    pub account_id: String,
    pub region: String,
    pub kind: String,
    pub resource_id: String,
    pub instance_type: String,
    pub gpus: Decimal,
    pub usd_per_hour: Option<Decimal>,
    pub launched_at: Option<DateTime<Utc>>,
    pub user_tag: Option<String>,
    pub status: String,
    pub note: Option<String>,
    pub restore_from: Option<String>,
    /// Every tag it had when listed (key, value), for what reversal creates again.
    pub tags: sqlx::types::Json<Vec<(String, String)>>,
}

impl ResourceRow {
    pub fn kind(&self) -> Option<Kind> {
        Kind::from_key(&self.kind)
    }
}

const COLUMNS: &str = "id, action_id, account_id, region, kind, resource_id, instance_type, gpus, usd_per_hour, launched_at, \
                       user_tag, status, note, restore_from, tags";

/// Makes the stop's listing what was just found: new resources are added as `listed` (or
/// `skipped`, with why), listed ones no longer running go, and rows the stop has in hand
/// (requested, stopping, stopped, starting) are kept as they are. A resource this stop
/// restarted, lost or failed on, found running again, is listed again: a stop that runs
/// again (after a snooze, or a Retry) acts on it anew. Marks the action as a resource stop,
/// listed as long ago as `age` (how old the oldest read behind the listing is; an age, not
/// a clock time, so the database's clock alone dates it).
pub async fn record_listing(
    conn: &mut PgConnection,
    action_id: i64,
    found: &[Found],
    age: chrono::Duration,
) -> Result<(), sqlx::Error> {
    let keys: Vec<String> = found
        .iter()
        .map(|f| format!("{}/{}/{}/{}", f.account, f.region, f.kind.key(), f.id))
        .collect();
    sqlx::query(
        "delete from enforcement_resources
         where action_id = $1 and status in ('listed', 'skipped')
           and not (account_id || '/' || region || '/' || kind || '/' || resource_id = any($2))",
    )
    .bind(action_id)
    .bind(&keys)
    .execute(&mut *conn)
    .await?;
    for f in found {
        let (gpus, usd_per_hour) = f.sized().map_or((Decimal::ZERO, None), |(g, p)| (g, Some(p)));
        let status = if f.skip.is_some() { "skipped" } else { "listed" };
        sqlx::query(
            "insert into enforcement_resources (action_id, region, kind, resource_id, instance_type, gpus, usd_per_hour,
                                                launched_at, user_tag, status, note, restore_from, account_id, tags)
             values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
             on conflict (action_id, account_id, region, kind, resource_id) do update
                set instance_type = excluded.instance_type, gpus = excluded.gpus, usd_per_hour = excluded.usd_per_hour,
                    launched_at = excluded.launched_at, user_tag = excluded.user_tag, status = excluded.status,
                    note = excluded.note, restore_from = excluded.restore_from, tags = excluded.tags,
                    updated_at = now()
                where enforcement_resources.status in ('listed', 'skipped', 'restarted', 'gone', 'failed')",
        )
        .bind(action_id)
        .bind(&f.region)
        .bind(f.kind.key())
        .bind(&f.id)
        .bind(&f.instance_type)
        .bind(gpus)
        .bind(usd_per_hour)
        .bind(f.launched_at)
        .bind(&f.user)
        .bind(status)
        .bind(f.skip.as_ref().or(f.warning.as_ref()))
        .bind(&f.restore_from)
        .bind(&f.account)
        .bind(sqlx::types::Json(&f.tags))
        .execute(&mut *conn)
        .await?;
    }
    sqlx::query(
        "update enforcement_actions set stops_resources = true,
                resources_listed_at = now() - make_interval(secs => $2) where id = $1",
    )
    .bind(action_id)
    .bind(age.num_milliseconds().max(0) as f64 / 1000.0)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// The stop's resources, in a stable order.
pub async fn of_action(conn: &mut PgConnection, action_id: i64) -> Result<Vec<ResourceRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "select {COLUMNS} from enforcement_resources where action_id = $1 order by account_id, region, kind, resource_id"
    ))
    .bind(action_id)
    .fetch_all(conn)
    .await
}

/// The resources of several stops, for a page.
pub async fn of_actions(conn: &mut PgConnection, action_ids: &[i64]) -> Result<Vec<ResourceRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "select {COLUMNS} from enforcement_resources where action_id = any($1) order by action_id, account_id, region, kind, resource_id"
    ))
    .bind(action_ids)
    .fetch_all(conn)
    .await
}

/// Moves one resource from one of `from` to `to`, with a note (kept when `None`). False
/// when it was in none of `from` (another run moved it first).
pub async fn set_status(
    conn: &mut PgConnection,
    id: i64,
    from: &[&str],
    to: &str,
    note: Option<&str>,
) -> Result<bool, sqlx::Error> {
    let from: Vec<String> = from.iter().map(|s| s.to_string()).collect();
    let done = sqlx::query(
        "update enforcement_resources set status = $3, note = coalesce($4, note), updated_at = now()
         where id = $1 and status = any($2)",
    )
    .bind(id)
    .bind(&from)
    .bind(to)
    .bind(note)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// True when another stop in force holds the same resource stopped (a role: denied by the
/// same policy).
pub async fn held_elsewhere(pool: &sqlx::PgPool, r: &ResourceRow) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar(
        "select exists (
           select 1 from enforcement_resources o join enforcement_actions a on a.id = o.action_id
           where o.action_id <> $1 and o.region = $2 and o.kind = $3 and o.resource_id = $4
             and o.account_id = $5
             and (o.kind <> 'iam_role' or o.restore_from is not distinct from $6)
             and o.status in ('requested', 'stopping', 'stopped')
             and a.status in ('running', 'executing', 'executed'))",
    )
    .bind(r.action_id)
    .bind(&r.region)
    .bind(&r.kind)
    .bind(&r.resource_id)
    .bind(&r.account_id)
    .bind(&r.restore_from)
    .fetch_one(pool)
    .await
}
