//! The demo's alert history: last month's budget alerts, as the demo organisation's mail
//! server accepted them. They are made by the real evaluation, run as of three days of
//! last month, so each carries the figures and the email that day would have had; only
//! their delivery is recorded rather than performed, since the demo has no mail server.

use chrono::{Datelike, Months, NaiveDate};
use sqlx::PgPool;

/// Days of last month the history is evaluated on, and the hour (UTC) its emails went out.
const EVALUATED_ON: [u32; 3] = [9, 18, 27];
const SENT_AT_HOUR: u32 = 6;

/// Evaluates every budget as of a few days of the month before `until`'s, and records the
/// alerts that evaluation queued (for that month, just now) as sent then. Budgets must
/// exist; run before the current evaluation. Run it with no alert sender working on the
/// database (as `cli` does, before `serve` starts its own), or that sender may mail them
/// in the moment between their queueing and this record.
pub async fn sent_alerts(pool: &PgPool, until: NaiveDate, public_url: Option<&str>) -> Result<usize, sqlx::Error> {
    let this_month = until.with_day(1).unwrap_or(until);
    let Some(last_month) = this_month.checked_sub_months(Months::new(1)) else {
        return Ok(0);
    };
    let mut recorded = 0;
    for day in EVALUATED_ON {
        let Some(today) = last_month.with_day(day) else {
            continue;
        };
        let started: chrono::DateTime<chrono::Utc> = sqlx::query_scalar("select now()").fetch_one(pool).await?;
        crate::budgets::evaluate::evaluate(pool, today, public_url).await?;
        let sent_at = today.and_hms_opt(SENT_AT_HOUR, 0, 0).unwrap_or_default().and_utc();
        let mut tx = pool.begin().await?;
        let alerts: Vec<i64> = sqlx::query_scalar(
            "update budget_alerts set status = 'sent', attempts = 1, sent_at = $1,
                    created_at = $1 - interval '2 minutes', next_attempt_at = $1,
                    last_reply = '250 2.0.0 Ok: queued'
             where status = 'queued' and period_start = $2 and created_at >= $3 returning id",
        )
        .bind(sent_at)
        .bind(last_month)
        .bind(started)
        .fetch_all(&mut *tx)
        .await?;
        sqlx::query(
            "update alert_deliveries set status = 'sent', attempts = 1, sent_at = $2, next_attempt_at = $2,
                    created_at = $2 - interval '2 minutes', last_reply = '250 2.0.0 Ok: queued'
             where alert_id = any($1) and status = 'queued'",
        )
        .bind(&alerts)
        .bind(sent_at)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        recorded += alerts.len();
    }
    Ok(recorded)
}
