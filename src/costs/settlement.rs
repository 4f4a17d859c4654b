//! When a day's figures are final.
//!
//! Cost Explorer flags a day `Estimated` while its billing period is open: every day of the
//! current month from the 1st, and the previous month's days until that bill closes a few
//! days into the next month ("Estimated" in `ResultByTime`,
//! <https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_ResultByTime.html>;
//! "your data for the current month is estimated",
//! <https://docs.aws.amazon.com/cost-management/latest/userguide/ce-exploring-data.html>).
//! The figures themselves move only while AWS is still publishing a day, over the few days
//! after it. So "not Estimated" cannot mean "settled", or the run-rate, forecast and savings
//! would rest on last month all month.
//!
//! A day is **settled** once it is older than the restatement window
//! (`BURNRATE_RESTATE_DAYS`, default 3: the days ingestion re-fetches on every run) or its
//! bill has closed (no longer Estimated). Only days inside the window are **provisional**;
//! older Estimated days are merely on an open bill. The flag is kept as AWS sent it.

use std::sync::atomic::{AtomicU32, Ordering};

use chrono::NaiveDate;

use crate::period::{DateRange, days_before};

/// The deployment's restatement window, set once from the configuration at start-up.
static RESTATE_DAYS: AtomicU32 = AtomicU32::new(3);

/// Sets the restatement window (`BURNRATE_RESTATE_DAYS`) for this process.
pub fn set_restate_days(days: u32) {
    RESTATE_DAYS.store(days, Ordering::Relaxed);
}

/// Which days are settled as of one day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settlement {
    /// The first day still inside the restatement window: every day before it is settled,
    /// Estimated or not.
    pub window_from: NaiveDate,
}

impl Settlement {
    /// As of `today` (UTC), with the configured restatement window.
    pub fn on(today: NaiveDate) -> Settlement {
        Settlement::with_window(today, RESTATE_DAYS.load(Ordering::Relaxed))
    }

    /// As of `today` with a window of `restate_days` days.
    pub fn with_window(today: NaiveDate, restate_days: u32) -> Settlement {
        Settlement {
            window_from: days_before(today, u64::from(restate_days)),
        }
    }

    /// Whether a day AWS flags `estimated` is settled.
    pub fn is_settled(self, day: NaiveDate, estimated: bool) -> bool {
        !estimated || day < self.window_from
    }
}

/// The SQL condition for a settled row of a table with `day` and `estimated` columns, with
/// [`Settlement::window_from`] bound as parameter `$n`.
pub fn settled_sql(n: u8) -> String {
    format!("(not estimated or day < ${n})")
}

/// True once every day of `period` is stored and settled as of `settlement`: its figures
/// will not move again, so there is nothing left to alert, judge or restate for it.
pub async fn period_is_settled(
    conn: &mut sqlx::PgConnection,
    period: DateRange,
    settlement: Settlement,
) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar(&format!(
        "select coalesce((select max(day) from daily_project_costs), '-infinity'::date) >= $2::date - 1
            and not exists (select 1 from daily_project_costs where day >= $1 and day < $2 and not {})",
        settled_sql(3)
    ))
    .bind(period.from)
    .bind(period.to)
    .bind(settlement.window_from)
    .fetch_one(conn)
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(text: &str) -> NaiveDate {
        text.parse().expect("date")
    }

    #[test]
    fn a_day_is_settled_once_older_than_the_window_or_off_an_open_bill() {
        let on_the_10th = Settlement::with_window(d("2026-11-10"), 3);
        assert_eq!(on_the_10th.window_from, d("2026-11-07"));
        // The whole open month is Estimated; only the last three days are provisional.
        assert!(on_the_10th.is_settled(d("2026-11-06"), true));
        assert!(!on_the_10th.is_settled(d("2026-11-07"), true));
        assert!(!on_the_10th.is_settled(d("2026-11-09"), true));
        // A closed bill's day is settled at once, however recent.
        assert!(on_the_10th.is_settled(d("2026-11-09"), false));
        // No window: every day before today is settled.
        let no_window = Settlement::with_window(d("2026-11-10"), 0);
        assert!(no_window.is_settled(d("2026-11-09"), true));
    }
}
