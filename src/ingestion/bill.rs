//! The month's projected Cost Explorer bill, as the Ingestion page and docs/CONFIGURATION.md
//! ("Cost Explorer ingestion") state it:
//! Cost Explorer charges USD 0.01 per request, each page included
//! (<https://aws.amazon.com/aws-cost-management/pricing/>), and burnrate makes every one
//! of its requests itself, so its pace is its bill.

use std::time::Duration;

use chrono::{Datelike, NaiveDate};
use rust_decimal::{Decimal, RoundingStrategy};
use sqlx::PgPool;

use super::model::ProjectedBill;
use super::run::api_cost;
use crate::config::IngestSettings;
use crate::ingestion::commitments::{EVERY_HOURS, RETRY_HOURS};

/// What the projection reads from the runs and reads so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pace {
    /// Requests of the newest successful runs that fetched a window, newest first.
    pub recent_requests: Vec<i64>,
    /// Runs (any outcome, demo loads aside) started in the last 7 days.
    pub runs_last_week: i64,
    /// Requests of the last commitments read, when one was attempted.
    pub requests_a_read: Option<i64>,
    /// Whether that attempt failed: reads are then tried again every [`RETRY_HOURS`].
    pub read_failed: bool,
}

const DAY_SECONDS: u64 = 86_400;

/// The projection for the month of `today`, or `None` before any run fetched.
pub fn project(settings: &IngestSettings, pace: &Pace, today: NaiveDate) -> Option<ProjectedBill> {
    let requests_a_run = median(&pace.recent_requests)?;
    let days = days_in_month(today);
    // The schedule's pace, or the runs seen when there were more (replicas each run the
    // schedule, taking turns; cron may run `burnrate ingest` besides).
    let seen = Decimal::from(pace.runs_last_week) / Decimal::from(7);
    let scheduled = settings
        .interval
        .filter(|i| i.as_secs() > 0)
        .map(|i| (i, Decimal::from(DAY_SECONDS) / Decimal::from(i.as_secs())));
    let (runs_a_day, runs_basis) = match scheduled {
        Some((interval, pace)) if pace >= seen => (
            pace,
            format!(
                "the schedule runs every {}",
                crate::ingestion::schedule::humanize(interval)
            ),
        ),
        Some(_) => (
            seen,
            format!(
                "{} runs in the last 7 days, more than the schedule alone makes",
                pace.runs_last_week
            ),
        ),
        None => (
            seen,
            format!(
                "{} runs in the last 7 days (scheduled ingestion is off)",
                pace.runs_last_week
            ),
        ),
    };
    let requests_a_read = pace.requests_a_read.filter(|_| settings.read_commitments).unwrap_or(0);
    let every_hours = if pace.read_failed { RETRY_HOURS } else { EVERY_HOURS };
    let reads_a_day = match requests_a_read {
        0 => Decimal::ZERO,
        _ => reads_a_day(settings.interval, runs_a_day, every_hours),
    };
    let requests_a_day = runs_a_day * Decimal::from(requests_a_run) + reads_a_day * Decimal::from(requests_a_read);
    let usd = (requests_a_day * Decimal::from(days) * api_cost(1))
        .round_dp_with_strategy(2, RoundingStrategy::MidpointAwayFromZero);
    Some(ProjectedBill {
        month: today.format("%Y-%m").to_string(),
        days,
        runs_a_day: runs_a_day.round_dp(2).normalize(),
        runs_basis,
        requests_a_run,
        reads_a_day: reads_a_day.round_dp(2).normalize(),
        requests_a_read,
        usd,
    })
}

/// Commitments are read after a run once the last read is [`EVERY_HOURS`] old (a failed one
/// [`RETRY_HOURS`]): with a run every `interval`, every ⌈20 h / interval⌉-th run reads.
/// Without a schedule, at most as often as runs happen and never more than that.
fn reads_a_day(interval: Option<Duration>, runs_a_day: Decimal, every_hours: i64) -> Decimal {
    let every = every_hours.unsigned_abs() * 3600;
    let most = runs_a_day.min(Decimal::from(DAY_SECONDS) / Decimal::from(every.max(1)));
    match interval.map(|i| i.as_secs()).filter(|s| *s > 0) {
        Some(secs) => (Decimal::from(DAY_SECONDS) / Decimal::from(every.div_ceil(secs) * secs)).min(most),
        None => most,
    }
}

/// The middle value (the upper of the two middles for an even count).
fn median(values: &[i64]) -> Option<i64> {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    sorted.get(sorted.len() / 2).copied()
}

fn days_in_month(day: NaiveDate) -> u32 {
    let first = day.with_day(1).unwrap_or(day);
    let next = first.checked_add_months(chrono::Months::new(1)).unwrap_or(first);
    (next - first).num_days() as u32
}

/// The runs and reads the projection is paced on.
pub async fn pace(pool: &PgPool) -> Result<Pace, sqlx::Error> {
    let recent_requests: Vec<i64> = sqlx::query_scalar(
        "select requests::bigint from ingestion_runs
         where trigger <> 'demo' and status = 'succeeded' and window_from is not null
         order by started_at desc, id desc limit 10",
    )
    .fetch_all(pool)
    .await?;
    let runs_last_week: i64 = sqlx::query_scalar(
        "select count(*) from ingestion_runs where trigger <> 'demo' and started_at > now() - interval '7 days'",
    )
    .fetch_one(pool)
    .await?;
    let read: Option<(i64, bool)> =
        sqlx::query_as("select requests::bigint, problem is not null from commitment_reads")
            .fetch_optional(pool)
            .await?;
    Ok(Pace {
        recent_requests,
        runs_last_week,
        requests_a_read: read.map(|r| r.0),
        read_failed: read.is_some_and(|r| r.1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(interval_hours: Option<u64>, read_commitments: bool) -> IngestSettings {
        IngestSettings {
            interval: interval_hours.map(|h| Duration::from_secs(h * 3600)),
            read_commitments,
            ..IngestSettings::default()
        }
    }

    fn day(text: &str) -> NaiveDate {
        NaiveDate::parse_from_str(text, "%Y-%m-%d").expect("date")
    }

    #[test]
    fn a_six_hour_schedule_of_eight_request_runs_costs_nine_sixty_in_november() {
        // 4 runs a day × 30 days × 8 requests × USD 0.01 = USD 9.60, worked by hand; the
        // commitments read (14 requests) happens on every 4th run (20 h ⌈/⌉ 6 h = 4 runs, 24 h),
        // so once a day: 30 × 14 × 0.01 = USD 4.20 more.
        let pace = Pace {
            recent_requests: vec![8, 8, 9, 8, 120],
            runs_last_week: 28,
            requests_a_read: Some(14),
            read_failed: false,
        };
        let bill = project(&settings(Some(6), true), &pace, day("2026-11-28")).expect("bill");
        assert_eq!(bill.days, 30);
        assert_eq!(bill.runs_a_day, Decimal::from(4));
        assert_eq!(bill.requests_a_run, 8, "the backfill's 120 is not the pace");
        assert_eq!(bill.reads_a_day, Decimal::ONE);
        assert_eq!(bill.usd, Decimal::new(1380, 2));
        let off = project(&settings(Some(6), false), &pace, day("2026-11-28")).expect("bill");
        assert_eq!(off.usd, Decimal::new(960, 2));
    }

    #[test]
    fn without_a_schedule_the_last_weeks_runs_set_the_pace() {
        // 14 runs in 7 days: 2 a day × 31 days × 10 requests × 0.01 = USD 6.20; reads at most
        // every 20 hours: min(2, 1.2) = 1.2 a day × 31 × 5 × 0.01 = USD 1.86.
        let pace = Pace {
            recent_requests: vec![10],
            runs_last_week: 14,
            requests_a_read: Some(5),
            read_failed: false,
        };
        let bill = project(&settings(None, true), &pace, day("2026-12-03")).expect("bill");
        assert_eq!((bill.days, bill.runs_a_day), (31, Decimal::from(2)));
        assert_eq!(bill.reads_a_day, Decimal::new(12, 1));
        assert_eq!(bill.usd, Decimal::new(806, 2));
        assert!(
            bill.runs_basis.contains("14 runs in the last 7 days"),
            "{}",
            bill.runs_basis
        );
    }

    #[test]
    fn an_odd_interval_is_exact_to_the_cent_and_no_run_means_no_projection() {
        // Every 7 h: 24/7 runs a day × 28 days (February 2027) = 96 runs, × 9 requests = 864
        // requests = USD 8.64, though 24/7 has no exact decimal.
        let pace = Pace {
            recent_requests: vec![9],
            runs_last_week: 0,
            requests_a_read: None,
            read_failed: false,
        };
        let bill = project(&settings(Some(7), true), &pace, day("2027-02-10")).expect("bill");
        assert_eq!(bill.usd, Decimal::new(864, 2));
        assert_eq!(bill.runs_a_day, Decimal::new(343, 2));
        assert_eq!(
            project(&settings(Some(6), true), &Pace::default(), day("2027-02-10")),
            None
        );
    }

    #[test]
    fn reads_follow_the_runs_that_make_them() {
        let day_reads = |hours: u64, failed: bool| {
            let pace = Pace {
                recent_requests: vec![10],
                runs_last_week: 0,
                requests_a_read: Some(10),
                read_failed: failed,
            };
            project(&settings(Some(hours), true), &pace, day("2026-11-28"))
                .expect("bill")
                .reads_a_day
        };
        // Every 7 h: the 3rd run after a read is 21 h on, so a read every 21 h: 24/21 a day.
        assert_eq!(day_reads(7, false), Decimal::new(114, 2));
        // Daily runs read daily; runs every 2 days read every 2 days.
        assert_eq!(day_reads(24, false), Decimal::ONE);
        assert_eq!(day_reads(48, false), Decimal::new(5, 1));
        // A failed read is tried again 3 h on: every 6-hour run reads until one succeeds.
        assert_eq!(day_reads(6, true), Decimal::from(4));
    }

    #[test]
    fn more_runs_than_the_schedule_makes_set_the_pace() {
        // Two replicas on a 6-hour schedule: 56 runs in 7 days, 8 a day.
        let pace = Pace {
            recent_requests: vec![10],
            runs_last_week: 56,
            requests_a_read: None,
            read_failed: false,
        };
        let bill = project(&settings(Some(6), false), &pace, day("2026-11-28")).expect("bill");
        assert_eq!(bill.runs_a_day, Decimal::from(8));
        assert_eq!(bill.usd, Decimal::new(2400, 2), "8 × 30 × 10 × 0.01");
        assert!(bill.runs_basis.contains("56 runs"), "{}", bill.runs_basis);
    }
}
