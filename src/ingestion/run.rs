//! One ingestion run, the same for `burnrate ingest` and the schedule inside `serve`:
//! lock, plan, fetch every group-by pair, check they agree, then replace the window in one
//! transaction. Until that commit nothing is visible; a failure or a kill leaves the old data.

use std::collections::{BTreeMap, BTreeSet};

use chrono::NaiveDate;
use rust_decimal::Decimal;
use sqlx::{Acquire, PgConnection, PgPool};

use super::IngestError;
use super::cost_explorer::{Backoff, CostExplorer, LinkedAccount, RequestMeter};
use super::plan;
use super::response::GrainSummary;
use crate::config::IngestSettings;
use crate::costs::aws_account_views::{AwsAccountView, ViewStaging};
use crate::costs::store::{self, Grain, Staging};
use crate::format::count;
use crate::period::DateRange;

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
    /// The `--to` asked for, when it reached past today and the window was cut there.
    pub clipped_from: Option<NaiveDate>,
    pub requests: u32,
    pub rows_written: u64,
    pub days: usize,
    pub estimated_days: usize,
    /// The largest daily difference between the group-by pairs (rounding), in USD.
    pub grain_difference: Decimal,
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
                count(self.days),
                count(self.estimated_days),
                count(self.rows_written)
            )?,
        }
        if self.window.is_some() {
            write!(
                f,
                "; group-by totals within USD {} of each other",
                self.grain_difference.normalize()
            )?;
        }
        if let Some(asked) = self.clipped_from {
            write!(
                f,
                "; --to {asked} reached past today, so the window stops at yesterday (today has no figures yet)"
            )?;
        }
        write!(
            f,
            "; {} Cost Explorer requests (USD {})",
            count(self.requests),
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
    // The lock is held by the connection that writes, detached from the pool: if that
    // connection is lost, the lock goes with it and so does every write the run could make,
    // so two runs can never overlap; and dropping it can never leave the lock in the pool.
    let mut conn = pool.acquire().await?.detach();
    let locked: bool = sqlx::query_scalar("select pg_try_advisory_lock($1)")
        .bind(LOCK_KEY)
        .fetch_one(&mut conn)
        .await?;
    if !locked {
        return Ok(Outcome::AlreadyRunning);
    }
    // Replacing a 14-month window takes longer than a request's statement may.
    crate::db::lift_statement_timeout(&mut conn).await?;
    let result = locked_run(&mut conn, cost_explorer, trigger, options).await;
    let _ = sqlx::query("select pg_advisory_unlock($1)")
        .bind(LOCK_KEY)
        .execute(&mut conn)
        .await;
    let _ = sqlx::Connection::close(conn).await;
    result.map(Outcome::Finished)
}

async fn locked_run(
    conn: &mut PgConnection,
    cost_explorer: &CostExplorer,
    trigger: Trigger,
    options: &RunOptions,
) -> Result<RunReport, IngestError> {
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
        Some(window) => Some(plan::clip_to_complete_days(window, options.today)?),
        None => plan::incremental_window(
            plan::coverage(&mut *conn, options.today).await?,
            &options.settings,
            options.today,
        ),
    };
    let clipped = options.window.filter(|asked| window.is_some_and(|w| w.to < asked.to));
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
        None => finish(conn, run_id, &meter, 0, None)
            .await
            .map(|_| Stored::default())
            .map_err(IngestError::from),
        Some(window) => fetch_and_store(conn, cost_explorer, window, options, run_id, &mut meter).await,
    };
    match result {
        Ok(stored) => {
            let report = RunReport {
                run_id,
                window,
                clipped_from: clipped.map(|asked| asked.to),
                requests: meter.requests,
                rows_written: stored.rows_written,
                days: stored.days,
                estimated_days: stored.estimated_days,
                grain_difference: stored.grain_difference,
            };
            tracing::info!(
                run_id,
                requests = meter.requests,
                rows = stored.rows_written,
                grain_difference = %stored.grain_difference,
                "ingestion succeeded"
            );
            Ok(report)
        }
        Err(error) => {
            tracing::error!(run_id, requests = meter.requests, %error, "ingestion failed");
            finish(conn, run_id, &meter, 0, Some(&error.to_string())).await?;
            Err(error)
        }
    }
}

/// What a successful fetch stored.
#[derive(Default)]
struct Stored {
    rows_written: u64,
    days: usize,
    estimated_days: usize,
    grain_difference: Decimal,
}

/// Streams every group-by pair's pages into staging tables, checks the pairs agree, then
/// replaces the window in one transaction that makes no AWS call.
async fn fetch_and_store(
    conn: &mut PgConnection,
    cost_explorer: &CostExplorer,
    window: DateRange,
    options: &RunOptions,
    run_id: i64,
    meter: &mut RequestMeter,
) -> Result<Stored, IngestError> {
    if let Some(problem) = cost_explorer.credentials_problem().await {
        return Err(IngestError::CostExplorer(problem));
    }
    let staging = Staging::begin(conn).await?;
    let views = ViewStaging::begin(conn).await?;
    let result = stage_and_replace(conn, cost_explorer, (&staging, &views), window, options, run_id, meter).await;
    if let Err(error) = views.clear(conn).await {
        tracing::warn!(%error, "clearing the ingestion's account-view staging tables failed");
    }
    // The staged rows are only a copy; a failure to free them must not hide the outcome.
    if let Err(error) = staging.clear(conn).await {
        tracing::warn!(%error, "clearing the ingestion's staging tables failed");
    }
    result
}

async fn stage_and_replace(
    conn: &mut PgConnection,
    cost_explorer: &CostExplorer,
    (staging, views): (&Staging, &ViewStaging),
    window: DateRange,
    options: &RunOptions,
    run_id: i64,
    meter: &mut RequestMeter,
) -> Result<Stored, IngestError> {
    // Every fact carries its linked account: each grain is asked once per account with spend
    // in the window (a third grouping is not allowed), and a window with none is asked once
    // unfiltered, so its days are still answered. The account views come first: they are
    // AWS's own account figures, they name every account with spend (one the listing left
    // out included), and they say which accounts have credits, refunds or tax at all.
    let listed = cost_explorer.linked_accounts(window, options.backoff, meter).await?;
    let mut view_summaries = Vec::with_capacity(AwsAccountView::ALL.len());
    // Each account the views name, with the record types it has.
    let mut record_types: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for view in AwsAccountView::ALL {
        let mut summary = GrainSummary::default();
        let mut pager = cost_explorer.account_pager(window, view);
        while let Some(rows) = pager.next(&mut summary, options.backoff, meter).await? {
            for row in &rows {
                let types = record_types.entry(row.account.clone()).or_default();
                types.extend(row.record_type.clone());
            }
            views.append(conn, view, &rows).await?;
        }
        view_summaries.push(summary);
    }
    let accounts = with_unlisted(listed, record_types.keys());
    let filters: Vec<Option<&LinkedAccount>> = match accounts.is_empty() {
        true => vec![None],
        false => accounts.iter().map(Some).collect(),
    };
    // The grains of all spend must agree with each other; those of one record type, or of the
    // GPU usage types, cover a part of it only, so they are stored but not compared, and asked
    // only of the accounts whose record types include theirs, or that have GPU spend.
    let mut summaries = Vec::with_capacity(Grain::ALL.len() + AwsAccountView::ALL.len());
    let mut gpu_usage_types = BTreeMap::new();
    for grain in Grain::ALL {
        let mut summary = GrainSummary::default();
        if grain == Grain::ByUserGpu {
            // The usage-type grain is staged by now (`Grain::ALL`'s order).
            gpu_usage_types = staging.gpu_usage_types(conn).await?;
        }
        let asked = filters.iter().filter(|account| match (grain, grain.record_type()) {
            (Grain::ByUserGpu, _) => account.is_some_and(|a| gpu_usage_types.contains_key(&a.id)),
            (_, None) => true,
            (_, Some(kind)) => account.is_some_and(|a| record_types.get(&a.id).is_some_and(|t| t.contains(kind))),
        });
        for account in asked {
            let only = match (grain, account) {
                (Grain::ByUserGpu, Some(a)) => gpu_usage_types.get(&a.id).map_or(&[][..], Vec::as_slice),
                _ => &[],
            };
            let mut pager = cost_explorer
                .pager(window, grain, *account, &options.settings)
                .of_usage_types(only);
            while let Some(rows) = pager.next(&mut summary, options.backoff, meter).await? {
                staging.append(conn, grain, &rows).await?;
            }
        }
        if grain.whole() {
            summaries.push(summary);
        }
    }
    // With no account listed there can be no spend: an answer with some would be stored
    // without its account, as if from before accounts were recorded.
    if accounts.is_empty() && summaries.iter().any(|s| s.rows > 0) {
        return Err(IngestError::rejected(
            "Cost Explorer listed no linked account for the window but reported spend in it; nothing was stored \
             and the next run asks again",
        ));
    }
    // A group answered twice would inflate its view's totals: name it before comparing.
    if let Some(twice) = views.duplicate(conn).await? {
        return Err(IngestError::malformed(twice));
    }
    summaries.extend(view_summaries);
    // A group answered twice would also inflate its pair's totals: name that first.
    staging.check_unique(conn).await?;
    let agreement = check_consistent(window, &summaries)?;

    let mut tx = conn.begin().await?;
    let rows_written = staging
        .replace_window(&mut tx, window)
        .await
        .map_err(duplicate_group_error)?;
    crate::allocation::facts::written(&mut tx, window)
        .await
        .map_err(duplicate_group_error)?;
    views
        .replace_window(&mut tx, window)
        .await
        .map_err(duplicate_group_error)?;
    let days = &agreement.days;
    let (named, unnamed): (Vec<&LinkedAccount>, Vec<&LinkedAccount>) = accounts.iter().partition(|a| a.listed);
    crate::costs::aws_accounts::record(
        &mut tx,
        &named.iter().map(|a| (a.id.clone(), a.name.clone())).collect::<Vec<_>>(),
    )
    .await?;
    crate::costs::aws_accounts::record_unnamed(&mut tx, &unnamed.iter().map(|a| a.id.clone()).collect::<Vec<_>>())
        .await?;
    sqlx::query(
        "insert into ingested_days (day, estimated, run_id, with_accounts)
         select unnest($1::date[]), unnest($2::bool[]), $3, true
         on conflict (day) do update set estimated = excluded.estimated, run_id = excluded.run_id,
             with_accounts = true, fetched_at = now()",
    )
    .bind(days.keys().copied().collect::<Vec<_>>())
    .bind(days.values().copied().collect::<Vec<_>>())
    .bind(run_id)
    .execute(&mut *tx)
    .await?;
    // A run that re-fetched every provisional day through yesterday settles what was older
    // than its window; a window re-fetched by hand that misses some says nothing of them.
    if window.to >= options.today && crate::costs::settlement::covers_provisional(&mut tx, window.from).await? {
        crate::costs::settlement::record_fetch(&mut tx, options.today, options.settings.restate_days).await?;
    }
    finish(&mut tx, run_id, meter, rows_written, None).await?;
    record_difference(&mut tx, run_id, agreement.largest_difference).await?;
    tx.commit().await?;
    if rows_written >= store::ANALYZE_AFTER_ROWS {
        store::refresh_statistics(conn).await?;
    }
    Ok(Stored {
        rows_written,
        days: days.len(),
        estimated_days: days.values().filter(|e| **e).count(),
        grain_difference: agreement.largest_difference,
    })
}

/// A group answered twice for one day would break the fact table's key; say what AWS did.
fn duplicate_group_error(error: sqlx::Error) -> IngestError {
    match &error {
        sqlx::Error::Database(db) if db.code().as_deref() == Some("23505") => IngestError::malformed(format!(
            "Cost Explorer returned the same group twice for one day ({}); nothing was stored",
            db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>()
                .and_then(|pg| pg.detail())
                .unwrap_or("no detail")
        )),
        _ => IngestError::from(error),
    }
}

async fn record_difference(conn: &mut PgConnection, run_id: i64, difference: Decimal) -> Result<(), sqlx::Error> {
    sqlx::query("update ingestion_runs set grain_difference = $2 where id = $1")
        .bind(run_id)
        .bind(difference)
        .execute(conn)
        .await?;
    Ok(())
}

/// The compared answers, in the order `check_consistent` is given them: the four grains of all
/// spend (all `bench ingest` has), then the account views.
const GRAIN_NAMES: [&str; 6] = [
    "project × user",
    "project × usage type",
    "project × service",
    "project × record type",
    "account",
    "account × record type",
];

/// The listed accounts and any the account views name that `GetDimensionValues` left out:
/// their spend is asked for too (without a name, which a later listing fills in).
fn with_unlisted<'a>(mut listed: Vec<LinkedAccount>, seen: impl Iterator<Item = &'a String>) -> Vec<LinkedAccount> {
    for id in seen {
        if listed.iter().all(|a| &a.id != id) {
            tracing::warn!(account = %id, "Cost Explorer's account view has spend in an account GetDimensionValues did not list; its spend is fetched too");
            listed.push(LinkedAccount {
                id: id.clone(),
                name: String::new(),
                listed: false,
            });
        }
    }
    listed.sort_by(|a, b| a.id.cmp(&b.id));
    listed
}

/// How far apart the group-by pairs' daily totals may be. Cost Explorer rounds each group's
/// amount on its own (to about 10 decimals), so sums over different group-bys differ in the
/// last digits; a restatement between requests moves them by far more.
pub const GRAIN_TOLERANCE: Decimal = Decimal::from_parts(1, 0, 0, false, 2);

/// The days of a window whose group-by pairs agree, and by how much they differed at most.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agreement {
    /// Every day and whether it is Estimated.
    pub days: BTreeMap<NaiveDate, bool>,
    /// The largest difference, over days, pairs and the two cost metrics.
    pub largest_difference: Decimal,
}

/// Every group-by pair must cover every day of the window, with daily totals within
/// [`GRAIN_TOLERANCE`] of each other per metric; otherwise AWS restated figures between
/// requests (or answered wrongly) and storing would break reconciliation.
pub fn check_consistent(window: DateRange, grains: &[GrainSummary]) -> Result<Agreement, IngestError> {
    let mut days: BTreeMap<NaiveDate, bool> = BTreeMap::new();
    for grain in grains {
        for (day, estimated) in &grain.days {
            if *day < window.from || *day >= window.to {
                return Err(IngestError::rejected(format!(
                    "Cost Explorer returned {day}, outside the requested {} to {}",
                    window.from,
                    window.last_day()
                )));
            }
            *days.entry(*day).or_default() |= *estimated;
        }
    }
    if days.len() as i64 != window.days() {
        return Err(IngestError::rejected(format!(
            "Cost Explorer answered for {} of the {} days requested",
            days.len(),
            window.days()
        )));
    }
    let mut largest_difference = Decimal::ZERO;
    for day in days.keys() {
        let totals: Vec<(Decimal, Decimal)> = grains
            .iter()
            .map(|grain| grain.totals.get(day).copied().unwrap_or_default())
            .collect();
        // The spread over all the grains, per metric: each against every other.
        let spread = |metric: fn(&(Decimal, Decimal)) -> Decimal| {
            let values = totals.iter().map(metric);
            values.clone().max().unwrap_or_default() - values.min().unwrap_or_default()
        };
        let difference = spread(|t| t.0).max(spread(|t| t.1));
        if difference > GRAIN_TOLERANCE {
            let amounts: Vec<String> = GRAIN_NAMES
                .iter()
                .zip(&totals)
                .map(|(grain, (unblended, amortized))| format!("{grain}: unblended {unblended}, amortized {amortized}"))
                .collect();
            return Err(IngestError::rejected(format!(
                "Cost Explorer's totals for {day} differ between group-bys by more than a cent ({}). AWS probably \
                 restated them during the run; nothing was stored and the next run fetches them again",
                amounts.join("; ")
            )));
        }
        largest_difference = largest_difference.max(difference);
    }
    Ok(Agreement {
        days,
        largest_difference,
    })
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
