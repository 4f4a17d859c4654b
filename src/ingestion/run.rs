//! One ingestion run, the same for `burnrate ingest` and the schedule inside `serve`:
//! lock, plan, fetch every group-by pair, check they agree, then replace the window in one
//! transaction. Until that commit nothing is visible; a failure or a kill leaves the old data.

use std::collections::BTreeMap;

use chrono::NaiveDate;
use rust_decimal::Decimal;
use sqlx::{Acquire, PgConnection, PgPool};

use super::IngestError;
use super::cost_explorer::{Backoff, CostExplorer, RequestMeter};
use super::pages::GrainPages;
use super::plan;
use crate::config::IngestSettings;
use crate::costs::period::DateRange;
use crate::costs::store::{self, CostBatch, Grain};

/// One advisory lock key for ingestion across every replica ("burnrate" in ASCII).
pub const LOCK_KEY: i64 = 0x6275_726e_7261_7465;

/// Cost Explorer's price per request, each page included.
pub fn api_cost(requests: u32) -> Decimal {
    Decimal::new(i64::from(requests), 2)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    Schedule,
    Cli,
}

impl Trigger {
    fn key(self) -> &'static str {
        match self {
            Trigger::Schedule => "schedule",
            Trigger::Cli => "cli",
        }
    }
}

#[derive(Debug, Clone)]
pub struct RunOptions {
    pub settings: IngestSettings,
    /// `--from/--to`; `None` lets the stored history decide.
    pub window: Option<DateRange>,
    /// The UTC date the run treats as today.
    pub today: NaiveDate,
    pub backoff: Backoff,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunReport {
    pub run_id: i64,
    pub window: Option<DateRange>,
    pub requests: u32,
    pub rows_written: u64,
    pub days: usize,
    pub estimated_days: usize,
}

impl std::fmt::Display for RunReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.window {
            None => write!(f, "nothing to fetch: every stored day is settled")?,
            Some(window) => write!(
                f,
                "ingested {} to {}: {} days ({} estimated), {} rows",
                window.from,
                window.last_day(),
                self.days,
                self.estimated_days,
                self.rows_written
            )?,
        }
        write!(
            f,
            "; {} Cost Explorer requests (USD {})",
            self.requests,
            api_cost(self.requests)
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Finished(RunReport),
    /// Another process holds the lock; nothing was touched.
    AlreadyRunning,
}

pub async fn run(
    pool: &PgPool,
    cost_explorer: &CostExplorer,
    trigger: Trigger,
    options: &RunOptions,
) -> Result<Outcome, IngestError> {
    // A detached connection closes when dropped, so the lock can never linger in the pool.
    let mut lock = pool.acquire().await?.detach();
    let locked: bool = sqlx::query_scalar("select pg_try_advisory_lock($1)")
        .bind(LOCK_KEY)
        .fetch_one(&mut lock)
        .await?;
    if !locked {
        return Ok(Outcome::AlreadyRunning);
    }
    let result = locked_run(pool, cost_explorer, trigger, options).await;
    let _ = sqlx::query("select pg_advisory_unlock($1)")
        .bind(LOCK_KEY)
        .execute(&mut lock)
        .await;
    result.map(Outcome::Finished)
}

async fn locked_run(
    pool: &PgPool,
    cost_explorer: &CostExplorer,
    trigger: Trigger,
    options: &RunOptions,
) -> Result<RunReport, IngestError> {
    let mut conn = pool.acquire().await?;
    // Holding the lock means no run is in progress anywhere: a 'running' row is a dead one.
    sqlx::query(
        "update ingestion_runs
         set status = 'failed', finished_at = now(), updated_at = now(),
             error = 'interrupted: the process stopped before the run finished; no data from it was stored'
         where status = 'running' and trigger <> 'demo'",
    )
    .execute(&mut *conn)
    .await?;
    let window = match options.window {
        Some(window) => Some(window),
        None => plan::incremental_window(plan::coverage(&mut conn).await?, &options.settings, options.today),
    };
    let run_id: i64 = sqlx::query_scalar(
        "insert into ingestion_runs (trigger, status, window_from, window_to) values ($1, 'running', $2, $3) returning id",
    )
    .bind(trigger.key())
    .bind(window.map(|w| w.from))
    .bind(window.map(|w| w.to))
    .fetch_one(&mut *conn)
    .await?;
    tracing::info!(run_id, trigger = trigger.key(), ?window, "ingestion started");

    let mut meter = RequestMeter::default();
    let result = match window {
        None => finish(&mut conn, run_id, &meter, 0, None)
            .await
            .map(|_| (0, 0, 0))
            .map_err(IngestError::from),
        Some(window) => fetch_and_store(&mut conn, cost_explorer, window, options, run_id, &mut meter).await,
    };
    match result {
        Ok((rows_written, days, estimated_days)) => {
            let report = RunReport {
                run_id,
                window,
                requests: meter.requests,
                rows_written,
                days,
                estimated_days,
            };
            tracing::info!(
                run_id,
                requests = meter.requests,
                rows = rows_written,
                "ingestion succeeded"
            );
            Ok(report)
        }
        Err(error) => {
            tracing::error!(run_id, requests = meter.requests, %error, "ingestion failed");
            finish(&mut conn, run_id, &meter, 0, Some(&error.to_string())).await?;
            Err(error)
        }
    }
}

/// Returns rows written, days covered and how many of them were Estimated.
async fn fetch_and_store(
    conn: &mut PgConnection,
    cost_explorer: &CostExplorer,
    window: DateRange,
    options: &RunOptions,
    run_id: i64,
    meter: &mut RequestMeter,
) -> Result<(u64, usize, usize), IngestError> {
    if let Some(problem) = cost_explorer.credentials_problem().await {
        return Err(IngestError::new(problem));
    }
    let mut grains = Vec::with_capacity(Grain::ALL.len());
    for grain in Grain::ALL {
        let pages = cost_explorer
            .fetch_grain(window, grain, &options.settings, options.backoff, meter)
            .await;
        grains.push(pages?);
    }
    let days = check_consistent(window, &grains)?;
    let [by_user, by_usage_type, by_service] = grains.try_into().map_err(|_| IngestError::new("grain count"))?;
    let batch = CostBatch {
        by_user: by_user.rows,
        by_usage_type: by_usage_type.rows,
        by_service: by_service.rows,
    };

    let mut tx = conn.begin().await?;
    let rows_written = store::replace_window(&mut tx, window, &batch).await?;
    sqlx::query(
        "insert into ingested_days (day, estimated, run_id)
         select unnest($1::date[]), unnest($2::bool[]), $3
         on conflict (day) do update set estimated = excluded.estimated, run_id = excluded.run_id, fetched_at = now()",
    )
    .bind(days.keys().copied().collect::<Vec<_>>())
    .bind(days.values().copied().collect::<Vec<_>>())
    .bind(run_id)
    .execute(&mut *tx)
    .await?;
    finish(&mut tx, run_id, meter, rows_written, None).await?;
    tx.commit().await?;
    if rows_written >= store::ANALYZE_AFTER_ROWS {
        store::refresh_statistics(conn).await?;
    }
    let estimated_days = days.values().filter(|e| **e).count();
    Ok((rows_written, days.len(), estimated_days))
}

const GRAIN_NAMES: [&str; 3] = ["project × user", "project × usage type", "project × service"];

/// Every group-by pair must cover every day of the window with the same totals; otherwise
/// AWS restated figures between requests (or answered wrongly) and storing would break
/// reconciliation. Returns each day and whether it is Estimated.
fn check_consistent(window: DateRange, grains: &[GrainPages]) -> Result<BTreeMap<NaiveDate, bool>, IngestError> {
    let mut days: BTreeMap<NaiveDate, bool> = BTreeMap::new();
    for grain in grains {
        for (day, estimated) in &grain.days {
            if *day < window.from || *day >= window.to {
                return Err(IngestError::new(format!(
                    "Cost Explorer returned {day}, outside the requested {} to {}",
                    window.from,
                    window.last_day()
                )));
            }
            *days.entry(*day).or_default() |= *estimated;
        }
    }
    if days.len() as i64 != window.days() {
        return Err(IngestError::new(format!(
            "Cost Explorer answered for {} of the {} days requested",
            days.len(),
            window.days()
        )));
    }
    let totals: Vec<_> = grains.iter().map(GrainPages::daily_totals).collect();
    for (day, reference) in &totals[0] {
        for (grain, other) in GRAIN_NAMES.iter().zip(&totals).skip(1) {
            let theirs = other.get(day).copied().unwrap_or_default();
            if theirs != *reference {
                return Err(IngestError::new(format!(
                    "Cost Explorer's totals for {day} differ between group-bys (project × user: unblended {}, \
                     amortized {}; {grain}: unblended {}, amortized {}). AWS probably restated them during the run; \
                     nothing was stored and the next run fetches them again",
                    reference.0, reference.1, theirs.0, theirs.1
                )));
            }
        }
    }
    Ok(days)
}

async fn finish(
    conn: &mut PgConnection,
    run_id: i64,
    meter: &RequestMeter,
    rows_written: u64,
    error: Option<&str>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "update ingestion_runs
         set status = case when $5::text is null then 'succeeded' else 'failed' end,
             requests = $2, api_cost = $3, rows_written = $4, error = $5,
             finished_at = now(), updated_at = now()
         where id = $1",
    )
    .bind(run_id)
    .bind(meter.requests as i32)
    .bind(api_cost(meter.requests))
    .bind(rows_written as i64)
    .bind(error)
    .execute(conn)
    .await?;
    Ok(())
}
