//! `burnrate bench ingest`: rows per second from parsed Cost Explorer pages into PostgreSQL,
//! through the same parsing and storing code as a real run. The synthetic window lies in
//! 1900 and the transaction is rolled back, so the benchmark leaves the database as it was.

use std::time::{Duration, Instant};

use aws_sdk_costexplorer::types::{DateInterval, Group, MetricValue, ResultByTime};
use chrono::NaiveDate;
use sqlx::{Acquire, PgPool};

use super::IngestError;
use super::pages::{GrainPages, GroupKeys};
use crate::config::IngestSettings;
use crate::costs::period::DateRange;
use crate::costs::store::{self, CostBatch, Grain};

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
}

impl std::fmt::Display for BenchReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let rate = |d: Duration| (self.rows as f64 / d.as_secs_f64().max(1e-9)).round();
        write!(
            f,
            "ingest benchmark: {} rows ({} days x {PROJECTS} projects x {SECONDS} values x 3 group-by pairs)\n\
             parse pages: {:.2} s ({} rows/s)\n\
             store (COPY, rollup, commit-equivalent): {:.2} s ({} rows/s)\n\
             overall: {} rows/s",
            self.rows,
            self.days,
            self.parse.as_secs_f64(),
            rate(self.parse),
            self.store.as_secs_f64(),
            rate(self.store),
            rate(self.parse + self.store)
        )
    }
}

pub async fn ingest(pool: &PgPool, rows: usize) -> Result<BenchReport, IngestError> {
    let settings = IngestSettings::default();
    let per_day = PROJECTS * SECONDS * Grain::ALL.len();
    let days = rows.div_ceil(per_day).max(1);
    let from = NaiveDate::from_ymd_opt(1900, 1, 1).ok_or_else(|| IngestError::new("date"))?;
    let window = DateRange {
        from,
        to: from + chrono::Days::new(days as u64),
    };
    let pages: Vec<Vec<Vec<ResultByTime>>> = Grain::ALL
        .iter()
        .map(|grain| synthetic_pages(*grain, window, &settings))
        .collect();

    let started = Instant::now();
    let mut parsed = Vec::new();
    for (grain, grain_pages) in Grain::ALL.iter().zip(&pages) {
        let keys = GroupKeys::for_grain(*grain, &settings);
        let mut collected = GrainPages::default();
        for page in grain_pages {
            collected.add_page(page, &keys)?;
        }
        parsed.push(collected.rows);
    }
    let parse = started.elapsed();
    let [by_user, by_usage_type, by_service] = parsed.try_into().map_err(|_| IngestError::new("grain count"))?;
    let batch = CostBatch {
        by_user,
        by_usage_type,
        by_service,
    };

    let started = Instant::now();
    let mut conn = pool.acquire().await?;
    let mut tx = conn.begin().await?;
    let written = store::replace_window(&mut tx, window, &batch).await?;
    let store = started.elapsed();
    tx.rollback().await?;
    Ok(BenchReport {
        rows: written as usize,
        days,
        parse,
        store,
    })
}

fn synthetic_pages(grain: Grain, window: DateRange, settings: &IngestSettings) -> Vec<Vec<ResultByTime>> {
    let metric = |amount: String, unit: &str| MetricValue::builder().amount(amount).unit(unit).build();
    let mut groups: Vec<(NaiveDate, Group)> = Vec::new();
    for (d, day) in window.from.iter_days().take_while(|d| *d < window.to).enumerate() {
        for p in 0..PROJECTS {
            for s in 0..SECONDS {
                let second = match grain {
                    Grain::ByUser => format!("{}$user-{s:03}", settings.tag_user),
                    Grain::ByUsageType => format!("USE1-BoxUsage:g5.{s}xlarge"),
                    Grain::ByService => format!("Service {s}"),
                };
                let cents = 100 + ((d * 31 + p * 7 + s) % 5000);
                let group = Group::builder()
                    .keys(format!("{}$project-{p:02}", settings.tag_project))
                    .keys(second)
                    .metrics("UnblendedCost", metric(format!("{cents}.0123456789"), "USD"))
                    .metrics("AmortizedCost", metric(format!("{cents}.0000000001"), "USD"))
                    .metrics("UsageQuantity", metric("24".into(), "Hrs"))
                    .build();
                groups.push((day, group));
            }
        }
    }
    groups
        .chunks(PAGE)
        .map(|chunk| {
            let mut results: Vec<ResultByTime> = Vec::new();
            for (day, group) in chunk {
                let period = DateInterval::builder()
                    .start(day.to_string())
                    .end((*day + chrono::Days::new(1)).to_string())
                    .build()
                    .ok();
                let same_day = results
                    .last()
                    .and_then(|r| r.time_period())
                    .is_some_and(|p| p.start() == day.to_string());
                if !same_day {
                    results.push(ResultByTime::builder().set_time_period(period).estimated(false).build());
                }
                if let Some(last) = results.last_mut() {
                    last.groups.get_or_insert_with(Vec::new).push(group.clone());
                }
            }
            results
        })
        .collect()
}
