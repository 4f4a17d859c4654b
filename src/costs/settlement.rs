//! When a day's figures are final.
//!
//! Cost Explorer flags a day `Estimated` while its billing period is open: every day of the
//! current month from the 1st, and the previous month's days until that bill closes a few
//! days into the next month ("Estimated" in `ResultByTime`,
//! <https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_ResultByTime.html>;
//! "your data for the current month is estimated",
//! <https://docs.aws.amazon.com/cost-management/latest/userguide/ce-exploring-data.html>).
//! The figures themselves move mostly while AWS is still publishing a day, over the few days
//! after it. So "not Estimated" cannot mean "settled", or the run-rate, forecast and savings
//! would rest on last month all month.
//!
//! A day is **settled** once its bill has closed (no longer Estimated) or it was last fetched
//! when already older than the restatement window (`BURNRATE_RESTATE_DAYS`, default 3: the
//! days ingestion re-fetches on every run). Each successful ingestion records where that
//! window began on its day (`settlement.window_from`); only Estimated days from there on are
//! **provisional**. Counting from the last fetch rather than the clock means a day stored
//! partial stays provisional while ingestion is stopped, however much time passes. The flag
//! is kept as AWS sent it.

use chrono::NaiveDate;

use crate::period::{DateRange, days_before};

/// The SQL condition for a settled row of a table with `day` and `estimated` columns. With
/// no ingestion recorded yet, only days off an open bill are settled.
pub const SETTLED: &str =
    "(not estimated or day < (select coalesce(max(window_from), '-infinity'::date) from settlement))";

/// Where the restatement window of a fetch made on `today` begins: the days before it were
/// already older than the window.
pub fn window_from(today: NaiveDate, restate_days: u32) -> NaiveDate {
    days_before(today, u64::from(restate_days))
}

/// Records the window of a fetch made on `today`, in the transaction that stores it.
pub async fn record_fetch(
    conn: &mut sqlx::PgConnection,
    today: NaiveDate,
    restate_days: u32,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "insert into settlement (id, window_from) values (true, $1)
         on conflict (id) do update set window_from = excluded.window_from",
    )
    .bind(window_from(today, restate_days))
    .execute(conn)
    .await?;
    Ok(())
}

/// Whether a fetch of the days from `from` re-fetched every day now provisional: only then
/// may it move the window on (a later window alone says nothing of the days before it).
pub async fn covers_provisional(conn: &mut sqlx::PgConnection, from: NaiveDate) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar(&format!(
        "select not exists (select 1 from ingested_days where day < $1 and not {SETTLED})"
    ))
    .bind(from)
    .fetch_one(conn)
    .await
}

/// True once every day of `period` is stored and its bill has closed: Cost Explorer no
/// longer calls any of its days Estimated. Only then is a month's statement frozen and the
/// judgement of its budgets and policies final. The restatement window (`SETTLED`) is not
/// enough here: late tax, support charges and invoice-time credits land on a month until
/// AWS closes its bill, and a threshold they push over must still be alerted. The run-rate,
/// forecast and savings keep reading `SETTLED` days.
pub async fn period_is_closed(conn: &mut sqlx::PgConnection, period: DateRange) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar(
        "select coalesce((select max(day) from daily_project_costs), '-infinity'::date) >= $2::date - 1
            and not exists (select 1 from daily_project_costs where day >= $1 and day < $2 and estimated)",
    )
    .bind(period.from)
    .bind(period.to)
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
    fn the_window_of_a_fetch_is_its_last_restate_days_days() {
        // Fetched on the 10th with 3 days: the 7th, 8th and 9th may still be restated.
        assert_eq!(window_from(d("2026-11-10"), 3), d("2026-11-07"));
        // No window: every day before the fetch is settled.
        assert_eq!(window_from(d("2026-11-10"), 0), d("2026-11-10"));
    }
}
