//! Idle GPUs reach people. A GPU or endpoint idle longer than `BURNRATE_IDLE_ALERT_HOURS`
//! sends one email per idle stretch to its project's team owners, through the alert outbox
//! (one delivery per owner, retried, never lost). A lead of the team or an admin can snooze
//! one resource's alerts for a while; the snooze is audited and ends by itself.
//!
//! One email per stretch: each stretch is a row; a later pass that finds the resource still
//! idle since a time the row already saw idle only moves the row's `last_idle_at`. Passes
//! are serialised per resource by an advisory lock, and nothing is sent inside the
//! transaction: the outbox sends after commit.

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use sqlx::{PgConnection, PgPool};

use super::model::{IdleNow, IdleRow};
use crate::audit_log::{self, Actor};
use crate::format::{number, tag_label, usd};
use crate::mail::compose::{escape, facts_message, one_line};

/// Snoozes last from one hour to a week.
pub const SNOOZE_HOURS: std::ops::RangeInclusive<u32> = 1..=168;

fn hours_since(since: i64, now: DateTime<Utc>) -> Decimal {
    (Decimal::from(now.timestamp() - since) / Decimal::from(3600)).round_dp(1)
}

/// Queues an email for every resource idle at least `threshold_hours` whose stretch has not
/// had one, unless snoozed; returns how many were queued.
pub async fn queue_due(
    pool: &PgPool,
    idle: &[IdleNow],
    now: DateTime<Utc>,
    threshold_hours: u32,
    public_url: Option<&str>,
) -> Result<usize, sqlx::Error> {
    let mut queued = 0;
    let due = idle
        .iter()
        .filter(|i| !i.team.is_empty() && now.timestamp() - i.since >= i64::from(threshold_hours) * 3600);
    for resource in due {
        let mut tx = pool.begin().await?;
        if queue_one(&mut tx, resource, now, public_url).await? {
            queued += 1;
        }
        tx.commit().await?;
    }
    Ok(queued)
}

async fn queue_one(
    conn: &mut PgConnection,
    idle: &IdleNow,
    now: DateTime<Utc>,
    public_url: Option<&str>,
) -> Result<bool, sqlx::Error> {
    sqlx::query("select pg_advisory_xact_lock(hashtext('idle:' || $1))")
        .bind(&idle.resource)
        .execute(&mut *conn)
        .await?;
    let snoozed: bool =
        sqlx::query_scalar("select exists (select 1 from idle_snoozes where resource = $1 and until > $2)")
            .bind(&idle.resource)
            .bind(now)
            .fetch_one(&mut *conn)
            .await?;
    if snoozed {
        return Ok(false);
    }
    let since = DateTime::<Utc>::from_timestamp(idle.since, 0).unwrap_or(now);
    // Idle as of the data, not of this pass: an hour-old CloudWatch read must not stretch a
    // stretch over a time nobody saw.
    let seen = DateTime::<Utc>::from_timestamp(idle.seen_at, 0).unwrap_or(now).min(now);
    // The same stretch, seen again (perhaps from a later window that no longer reaches its
    // start): only remember that it is still idle.
    let continued = sqlx::query(
        "update idle_alerts set last_idle_at = greatest(last_idle_at, $3)
         where id = (select id from idle_alerts where resource = $1 order by idle_since desc limit 1)
           and last_idle_at >= $2",
    )
    .bind(&idle.resource)
    .bind(since)
    .bind(seen)
    .execute(&mut *conn)
    .await?;
    if continued.rows_affected() > 0 {
        return Ok(false);
    }
    let owners: Vec<String> = sqlx::query_scalar(
        "select o.email from team_owners o join teams t on t.id = o.team_id where t.name = $1 order by o.email",
    )
    .bind(&idle.team)
    .fetch_all(&mut *conn)
    .await?;
    if owners.is_empty() {
        return Ok(false);
    }
    let hours = hours_since(idle.since, now);
    let so_far = idle.usd_per_hour.map(|rate| rate * hours);
    let (subject, text, html) = compose(idle, hours, so_far, public_url);
    let id: Option<i64> = sqlx::query_scalar(
        "insert into idle_alerts (resource, project, team_id, idle_since, last_idle_at, hours_at_alert, usd_at_alert,
             subject, body_text, body_html)
         values ($1, $2, (select id from teams where name = $3), $4, $5, $6, $7, $8, $9, $10)
         on conflict (resource, idle_since) do nothing returning id",
    )
    .bind(&idle.resource)
    .bind(&idle.project)
    .bind(&idle.team)
    .bind(since)
    .bind(seen)
    .bind(hours)
    .bind(so_far)
    .bind(&subject)
    .bind(&text)
    .bind(&html)
    .fetch_optional(&mut *conn)
    .await?;
    let Some(id) = id else {
        return Ok(false);
    };
    sqlx::query(
        "insert into alert_deliveries (idle_alert_id, recipient) select $1, unnest($2::text[]) on conflict do nothing",
    )
    .bind(id)
    .bind(&owners)
    .execute(&mut *conn)
    .await?;
    Ok(true)
}

fn compose(
    idle: &IdleNow,
    hours: Decimal,
    so_far: Option<Decimal>,
    public_url: Option<&str>,
) -> (String, String, String) {
    let project = tag_label(&idle.project).to_string();
    let subject = one_line(&format!(
        "burnrate: {} of {project} idle for {} hours",
        idle.resource,
        number(hours, 1)
    ));
    let link = format!(
        "{}/savings?team={}",
        public_url.unwrap_or(""),
        crate::format::url_encode(&idle.team)
    );
    let since = DateTime::<Utc>::from_timestamp(idle.since, 0)
        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_default();
    let mut body = facts_message(
        &subject,
        &[
            ("Resource", idle.resource.clone()),
            ("Project", project),
            ("Team", idle.team.clone()),
            ("GPUs", idle.gpus.to_string()),
            ("Idle since", since),
            ("Hours idle", number(hours, 1)),
            (
                "Spent while idle",
                so_far.map(usd).unwrap_or_else(|| "unknown (no price for it)".into()),
            ),
        ],
    );
    body.text.push_str(&format!(
        "\nIdle means kernels ran less than 1 % of the time (or, for an endpoint, no invocation), whatever memory is resident. Stop or release it, or snooze this alert, at {link}\n"
    ));
    body.html.push_str(&format!(
        "<p>Idle means kernels ran less than 1 % of the time (or, for an endpoint, no invocation), whatever memory is resident.</p><p><a href=\"{}\">Stop or release it, or snooze this alert, in burnrate</a></p></body></html>",
        escape(&link)
    ));
    (subject, body.text, body.html)
}

/// The page's rows: each idle resource with its hours, cost so far and snooze.
pub async fn rows(
    conn: &mut PgConnection,
    idle: &[IdleNow],
    now: DateTime<Utc>,
    may_snooze: impl Fn(&str) -> bool,
) -> Result<Vec<IdleRow>, sqlx::Error> {
    let snoozes: Vec<(String, DateTime<Utc>, String)> =
        sqlx::query_as("select resource, until, reason from idle_snoozes where until > $1")
            .bind(now)
            .fetch_all(&mut *conn)
            .await?;
    Ok(idle
        .iter()
        .map(|i| {
            let hours = hours_since(i.since, now);
            let snooze = snoozes.iter().find(|(r, _, _)| *r == i.resource);
            IdleRow {
                hours,
                usd_so_far: i.usd_per_hour.map(|rate| rate * hours),
                snoozed_until: snooze.map(|(_, until, _)| until.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
                snooze_reason: snooze.map(|(_, _, reason)| reason.clone()).unwrap_or_default(),
                can_snooze: may_snooze(&i.team),
                idle: i.clone(),
            }
        })
        .collect())
}

/// Snoozes one resource's idle alerts for `hours`, recorded in the audit log in the same
/// transaction. A second snooze replaces the first.
pub async fn snooze(
    conn: &mut PgConnection,
    actor: &Actor,
    idle: &IdleNow,
    hours: u32,
    reason: &str,
) -> Result<DateTime<Utc>, sqlx::Error> {
    let until: DateTime<Utc> = sqlx::query_scalar(
        "insert into idle_snoozes (resource, until, reason, snoozed_by)
         values ($1, now() + make_interval(hours => $2), $3, $4)
         on conflict (resource) do update set until = excluded.until, reason = excluded.reason,
             snoozed_by = excluded.snoozed_by, updated_at = now()
         returning until",
    )
    .bind(&idle.resource)
    .bind(hours as i32)
    .bind(reason)
    .bind(&actor.label)
    .fetch_one(&mut *conn)
    .await?;
    audit_log::record(
        conn,
        actor,
        "savings.idle_snooze",
        &idle.resource,
        serde_json::json!({
            "project": idle.project,
            "team": idle.team,
            "hours": hours,
            "until": until.to_rfc3339(),
            "reason": reason,
        }),
    )
    .await?;
    Ok(until)
}
