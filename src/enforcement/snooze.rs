//! Snoozing a stop: a lead of the project's team, or an admin, holds a pending or executed
//! stop for 1 to 72 hours with a reason. A pending stop does not run meanwhile; an executed
//! one is reversed now (its resources restarted). When the snooze ends, by itself at the
//! next pass, the stop is pending again in its policy's mode, so an automatic stop that is
//! still justified runs again and a manual one waits for approval. Each step is audited in
//! the action trail.

use sqlx::PgPool;

use super::actions::ActionError;
use super::claims::Intent;
use super::claims::{self, ActionRow};
use super::executor::Executor;
use super::stop_run;
use crate::error::FieldError;

/// The longest snooze.
pub const MAX_HOURS: i32 = 72;

/// A checked snooze request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snooze {
    pub hours: i32,
    pub reason: String,
}

/// Hours (a whole number, 1 to 72) and a reason (1 to 500 characters), each with its error.
pub fn validate(hours: &str, reason: &str) -> Result<Snooze, Vec<FieldError>> {
    let mut errors = Vec::new();
    let hours = match hours.trim().parse::<i32>() {
        Ok(h) if (1..=MAX_HOURS).contains(&h) => h,
        _ => {
            errors.push(FieldError::new(
                "hours",
                format!("a whole number of hours from 1 to {MAX_HOURS}"),
            ));
            0
        }
    };
    let reason = reason.trim().to_string();
    if reason.is_empty() || reason.chars().count() > 500 {
        errors.push(FieldError::new("reason", "say why, in at most 500 characters"));
    }
    if errors.is_empty() {
        Ok(Snooze { hours, reason })
    } else {
        Err(errors)
    }
}

/// Snoozes stop `id`; returns the status it is in after (an executed stop is reversed).
pub async fn snooze(
    pool: &PgPool,
    exec: &Executor,
    id: i64,
    (actor, by_admin): (&str, bool),
    snooze: &Snooze,
) -> Result<String, ActionError> {
    let mut tx = pool.begin().await?;
    claims::lock_decisions(&mut tx).await?;
    let row = claims::lock(&mut tx, id).await?.ok_or(ActionError::NotFound(id))?;
    if row.action != "stop" {
        return Err(ActionError::Refused("only a stop can be snoozed".into()));
    }
    if let Some(until) = row.snoozed_until {
        return Err(ActionError::Refused(format!(
            "the stop is already snoozed until {}",
            until.format("%Y-%m-%d %H:%M UTC")
        )));
    }
    // Snoozes add up, checked under the lock: past 72 hours in all, only an admin holds the
    // stop longer, so a lead cannot keep a justified stop off by renewing it.
    let total: i32 = sqlx::query_scalar("select snoozed_hours_total from enforcement_actions where id = $1")
        .bind(id)
        .fetch_one(&mut *tx)
        .await?;
    if !by_admin && total + snooze.hours > MAX_HOURS {
        return Err(ActionError::Forbidden(format!(
            "this stop has been snoozed for {total} h already; a lead may hold it for {MAX_HOURS} h in all, so \
             only an admin may snooze it longer"
        )));
    }
    if !matches!(row.status.as_str(), "proposed" | "awaiting_approval" | "executed") {
        return Err(ActionError::Refused(format!(
            "the stop is {}; only a pending or executed stop can be snoozed",
            row.status.replace('_', " ")
        )));
    }
    let until: String = sqlx::query_scalar(
        "update enforcement_actions
         set snoozed_until = now() + make_interval(hours => $2), snooze_reason = $3, snoozed_by = $4,
             snoozed_hours_total = snoozed_hours_total + $2, approved_by = null, updated_at = now()
         where id = $1
         returning to_char(snoozed_until at time zone 'UTC', 'YYYY-MM-DD HH24:MI \"UTC\"')",
    )
    .bind(id)
    .bind(snooze.hours)
    .bind(&snooze.reason)
    .bind(actor)
    .fetch_one(&mut *tx)
    .await?;
    let note = format!("snoozed for {} h, until {until}: {}", snooze.hours, snooze.reason);
    let entry = super::trail::Entry::new(actor, "snoozed", row.id, &row.project, &row.action).response(&note);
    super::trail::append(&mut tx, &entry).await?;
    if row.status != "executed" {
        tx.commit().await?;
        return Ok(row.status);
    }
    let claim = claims::claim(&mut tx, &row, exec.lease).await?;
    tx.commit().await?;
    let row = ActionRow {
        claimed_from: Some(row.status.clone()),
        ..row
    };
    let today = chrono::Utc::now().date_naive();
    Ok(stop_run::run_claimed(pool, exec, &row, claim, actor, (Intent::Reverse, today)).await?)
}

/// Ends every snooze whose time is up: a stop the snooze reversed is pending again in its
/// mode. Returns how many ended.
pub async fn wake(pool: &PgPool) -> Result<usize, sqlx::Error> {
    let mut tx = pool.begin().await?;
    claims::lock_decisions(&mut tx).await?;
    let ended: Vec<(i64, String, String)> = sqlx::query_as(
        "update enforcement_actions a
         set status = case when a.status = 'reversed'
                           then case a.mode when 'manual' then 'awaiting_approval' else 'proposed' end
                           else a.status end,
             snoozed_until = null, snooze_reason = null, snoozed_by = null, updated_at = now()
         from violations v
         where v.id = a.violation_id and a.snoozed_until <= now() and a.status not in ('running', 'reversing')
         returning a.id, v.project, a.action",
    )
    .fetch_all(&mut *tx)
    .await?;
    for (id, project, action) in &ended {
        let entry = super::trail::Entry::new("system", "snooze_ended", *id, project, action)
            .response("the snooze ended; the stop applies again while its violation holds");
        super::trail::append(&mut tx, &entry).await?;
    }
    tx.commit().await?;
    Ok(ended.len())
}
