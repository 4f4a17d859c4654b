//! `burnrate bench ingest`: rows per second from parsed Cost Explorer pages into PostgreSQL,
//! through the same parsing, staging and storing code as a real run. The synthetic window lies in
//! 1900 and the transaction is rolled back, so the benchmark leaves the database as it was.

use std::time::{Duration, Instant};

use aws_sdk_costexplorer::types::{DateInterval, Group, MetricValue, ResultByTime};
use chrono::NaiveDate;
use sqlx::{Acquire, PgPool};

use super::IngestError;
use super::response::{GrainSummary, GroupKeys};
use super::run;
use crate::config::IngestSettings;
use crate::costs::store::{Grain, Staging};
use crate::period::DateRange;

/// The shape the issue names: 40 projects, 120 users (and 120 usage types and services).
const PROJECTS: usize = 40;
const SECONDS: usize = 120;
/// Groups per synthetic page.
const PAGE: usize = 5_000;

#[derive(Debug)]
pub struct BenchReport {
    pub rows: usize,
    pub days: usize,
    pub parse: Duration,
    pub store: Duration,
    /// The process's peak resident memory at the end (VmHWM), when the OS reports it.
    pub peak_rss_bytes: Option<u64>,
}

impl std::fmt::Display for BenchReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let rate = |d: Duration| (self.rows as f64 / d.as_secs_f64().max(1e-9)).round();
        write!(
            f,
            "ingest benchmark: {} rows ({} days x {PROJECTS} projects x {SECONDS} values x 3 group-by pairs)\n\
             make and parse pages: {:.2} s ({} rows/s)\n\
             store (COPY to staging, replace the window, totals and allocation, commit-equivalent): {:.2} s ({} rows/s)\n\
             overall: {} rows/s\n\
             peak RSS: {}",
            self.rows,
            self.days,
            self.parse.as_secs_f64(),
            rate(self.parse),
            self.store.as_secs_f64(),
            rate(self.store),
            rate(self.parse + self.store),
            self.peak_rss_bytes
                .map_or("unknown".to_string(), |b| format!("{} MB", b / 1_000_000))
        )
    }
}

/// Streams synthetic pages through the run's own path: parse a page, COPY it to staging,
/// check the group-by pairs agree, replace the window. Pages are made one at a time, as
/// Cost Explorer would send them, so peak memory is what a real backfill needs.
pub async fn ingest(pool: &PgPool, rows: usize) -> Result<BenchReport, IngestError> {
    let settings = IngestSettings::default();
    // The grains of one record type (credits, refunds, tax by user) are sparse on a real
    // account, and GPU spend by user a part of it; the synthetic history fills only the grains
    // of all spend.
    let grains: Vec<Grain> = Grain::ALL.into_iter().filter(|g| g.whole()).collect();
    let per_day = PROJECTS * SECONDS * grains.len();
    let days = rows.div_ceil(per_day).max(1);
    let from = NaiveDate::from_ymd_opt(1900, 1, 1).ok_or_else(|| IngestError::rejected("date"))?;
    let window = DateRange {
        from,
        to: from + chrono::Days::new(days as u64),
    };

    let mut conn = pool.acquire().await?;
    let staging = Staging::begin(&mut conn).await?;
    let (mut parse, mut store) = (Duration::ZERO, Duration::ZERO);
    let mut summaries = Vec::new();
    for grain in grains {
        let keys = GroupKeys::for_grain(grain, &settings, "123456789012");
        let mut summary = GrainSummary::default();
        let groups_per_grain = days * PROJECTS * SECONDS;
        for first in (0..groups_per_grain).step_by(PAGE) {
            let started = Instant::now();
            let page = synthetic_page(grain, window, &settings, first..(first + PAGE).min(groups_per_grain));
            let rows = summary.add_page(&page, &keys)?;
            parse += started.elapsed();
            let started = Instant::now();
            staging.append(&mut conn, grain, &rows).await?;
            store += started.elapsed();
        }
        summaries.push(summary);
    }
    run::check_consistent(window, &summaries)?;
    let started = Instant::now();
    let mut tx = conn.begin().await?;
    let written = staging.replace_window(&mut tx, window).await?;
    crate::allocation::facts::written(&mut tx, window).await?;
    tx.rollback().await?;
    store += started.elapsed();
    staging.clear(&mut conn).await?;
    Ok(BenchReport {
        rows: written as usize,
        days,
        parse,
        store,
        peak_rss_bytes: peak_rss_bytes(),
    })
}

/// VmHWM from /proc/self/status (Linux); `None` elsewhere.
fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Groups `groups` (numbered day-major across the window) of one grain, as one page.
fn synthetic_page(
    grain: Grain,
    window: DateRange,
    settings: &IngestSettings,
    groups: std::ops::Range<usize>,
) -> Vec<ResultByTime> {
    let metric = |amount: String, unit: &str| MetricValue::builder().amount(amount).unit(unit).build();
    let mut results: Vec<ResultByTime> = Vec::new();
    for n in groups {
        let (d, p, s) = (n / (PROJECTS * SECONDS), (n / SECONDS) % PROJECTS, n % SECONDS);
        let day = window.from + chrono::Days::new(d as u64);
        let second = match grain {
            Grain::ByUsageType => format!("USE1-BoxUsage:g5.{s}xlarge"),
            Grain::ByService => format!("Service {s}"),
            Grain::ByRecordType => format!("Record type {s}"),
            _ => format!("{}$user-{s:03}", settings.tag_user),
        };
        let cents = 100 + ((d * 31 + p * 7 + s) % 5000);
        let group = Group::builder()
            .keys(format!("{}$project-{p:02}", settings.tag_project))
            .keys(second)
            .metrics("UnblendedCost", metric(format!("{cents}.0123456789"), "USD"))
            .metrics("AmortizedCost", metric(format!("{cents}.0000000001"), "USD"))
            .metrics("UsageQuantity", metric("24".into(), "Hrs"))
            .build();
        let same_day = results
            .last()
            .and_then(|r| r.time_period())
            .is_some_and(|period| period.start() == day.to_string());
        if !same_day {
            let period = DateInterval::builder()
                .start(day.to_string())
                .end((day + chrono::Days::new(1)).to_string())
                .build()
                .ok();
            results.push(ResultByTime::builder().set_time_period(period).estimated(false).build());
        }
        if let Some(last) = results.last_mut() {
            last.groups.get_or_insert_with(Vec::new).push(group);
        }
    }
    results
}
