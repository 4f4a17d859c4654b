//! The one run-rate and forecast behind the Overview, the budget pages, FORECASTED
//! thresholds and alert emails.
//!
//! - **Run-rate:** the mean daily spend of the last [`RUN_RATE_DAYS`] days up to the last
//!   settled day (`costs::settlement`; a day without rows counts as zero). With fewer settled
//!   days stored, the mean of those there are; with none, there is no run-rate and no forecast.
//! - **Forecast:** the period's spend on settled days, plus the run-rate for every later day
//!   to the period's end. Provisional days are projected too, because their figures are still
//!   partial; the forecast is never below the spend already recorded, provisional days included.
//!   Its range uses the cheapest and the dearest day of the run-rate's days instead.
//!
//! Amounts stay exact here: they are rounded once, when displayed (`format::usd`).

use chrono::NaiveDate;
use rust_decimal::Decimal;

use super::Forecast;
use crate::period::{DateRange, RUN_RATE_DAYS, days_before, next_day};

/// What is stored, as far as a run-rate is concerned.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Settled {
    /// The first day with any figures.
    pub first_day: Option<NaiveDate>,
    /// The last settled day before the end asked for.
    pub last_day: Option<NaiveDate>,
}

/// The settled days before `end` (exclusive), organisation-wide: Estimated is a property of
/// a day in Cost Explorer, not of a team. Three index lookups: [`super::settlement::SETTLED`] (not estimated,
/// or before the restatement window) split in its two halves, so that neither walks back
/// over the open month's estimated rows (8,000 at 10M facts, 7 ms for each budget on every
/// first view after a data change).
pub async fn settled_before(conn: impl sqlx::PgExecutor<'_>, end: NaiveDate) -> Result<Settled, sqlx::Error> {
    let (first_day, last_day) = sqlx::query_as(
        "select (select min(day) from daily_project_costs),
                greatest(
                    (select max(day) from daily_project_costs where day < $1 and not estimated),
                    (select max(day) from daily_project_costs
                     where day < $1 and day < (select coalesce(max(window_from), '-infinity'::date) from settlement)))",
    )
    .bind(end)
    .fetch_one(conn)
    .await?;
    Ok(Settled { first_day, last_day })
}

impl Settled {
    /// The last [`RUN_RATE_DAYS`] days through the last settled one, never before the first
    /// stored day; `None` while no day is settled.
    pub fn run_rate_window(&self) -> Option<DateRange> {
        let last = self.last_day?;
        let to = next_day(last);
        let from = days_before(to, RUN_RATE_DAYS as u64).max(self.first_day.unwrap_or(last).min(last));
        Some(DateRange { from, to })
    }
}

/// Mean daily spend over a window, with its cheapest and dearest day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunRate {
    pub window: DateRange,
    /// Spend over the window; the forecast multiplies before it divides, so it stays exact.
    pub total: Decimal,
    pub per_day: Decimal,
    pub lowest: Decimal,
    pub highest: Decimal,
}

/// The run-rate of `window` from daily spend (days without an entry spent nothing).
pub fn run_rate(window: DateRange, daily: &[(NaiveDate, Decimal)]) -> RunRate {
    let values: Vec<Decimal> = window
        .from
        .iter_days()
        .take(window.days() as usize)
        .map(|day| daily.iter().find(|(d, _)| *d == day).map_or(Decimal::ZERO, |(_, v)| *v))
        .collect();
    let total: Decimal = values.iter().sum();
    RunRate {
        window,
        total,
        per_day: total / Decimal::from(values.len().max(1) as i64),
        lowest: values.iter().copied().min().unwrap_or_default(),
        highest: values.iter().copied().max().unwrap_or_default(),
    }
}

/// Where `period` ends up: settled spend so far plus the run-rate for each later day.
/// `None` without a run-rate.
pub fn forecast(period: DateRange, daily: &[(NaiveDate, Decimal)], rate: Option<&RunRate>) -> Option<Forecast> {
    let rate = rate?;
    let projected_from = rate.window.to.clamp(period.from, period.to);
    let in_period = |from: NaiveDate, to: NaiveDate| -> Decimal {
        daily
            .iter()
            .filter(|(d, _)| *d >= from && *d < to)
            .map(|(_, v)| *v)
            .sum()
    };
    let settled = in_period(period.from, projected_from);
    let recorded = in_period(period.from, period.to);
    let projected_days = (period.to - projected_from).num_days();
    let days = Decimal::from(projected_days);
    let window_days = Decimal::from(rate.window.days().max(1));
    let at = |projected: Decimal| (settled + projected).max(recorded);
    Some(Forecast {
        last_day: period.last_day(),
        projected_from,
        projected_days,
        expected: at(rate.total * days / window_days),
        low: at(rate.lowest * days),
        high: at(rate.highest * days),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).expect("valid test date")
    }

    fn flat(from: NaiveDate, to: NaiveDate, amount: i64) -> Vec<(NaiveDate, Decimal)> {
        from.iter_days()
            .take_while(|d| *d < to)
            .map(|d| (d, Decimal::from(amount)))
            .collect()
    }

    #[test]
    fn the_window_is_the_seven_days_through_the_last_settled_one() {
        let settled = Settled {
            first_day: Some(day(2025, 10, 1)),
            last_day: Some(day(2026, 3, 1)),
        };
        // Across a month end and a leap day: 24 Feb to 1 Mar 2026 (not a leap year) ...
        assert_eq!(
            settled.run_rate_window(),
            Some(DateRange {
                from: day(2026, 2, 23),
                to: day(2026, 3, 2)
            })
        );
        // ... and 2028 is one: 24 Feb to 1 Mar is seven days including the 29th.
        let leap = Settled {
            last_day: Some(day(2028, 3, 1)),
            ..settled
        };
        let window = leap.run_rate_window().expect("window");
        assert_eq!((window.from, window.days()), (day(2028, 2, 24), 7));
    }

    #[test]
    fn with_fewer_settled_days_the_run_rate_uses_those_there_are_and_with_none_there_is_none() {
        let short = Settled {
            first_day: Some(day(2026, 1, 1)),
            last_day: Some(day(2026, 1, 3)),
        };
        let window = short.run_rate_window().expect("window");
        assert_eq!((window.from, window.days()), (day(2026, 1, 1), 3));
        let rate = run_rate(window, &flat(day(2026, 1, 1), day(2026, 1, 4), 30));
        assert_eq!(rate.per_day, Decimal::from(30));
        let none = Settled {
            first_day: Some(day(2026, 1, 1)),
            last_day: None,
        };
        assert_eq!(none.run_rate_window(), None);
        assert_eq!(forecast(window, &[], None), None);
    }

    #[test]
    fn a_day_without_rows_counts_as_zero_in_the_run_rate_and_its_range() {
        let window = DateRange {
            from: day(2026, 1, 1),
            to: day(2026, 1, 8),
        };
        let mut daily = flat(day(2026, 1, 1), day(2026, 1, 8), 70);
        daily.retain(|(d, _)| *d != day(2026, 1, 3) && *d != day(2026, 1, 5));
        let rate = run_rate(window, &daily);
        assert_eq!(rate.per_day, Decimal::from(50), "5 days of 70 over 7 days");
        assert_eq!((rate.lowest, rate.highest), (Decimal::ZERO, Decimal::from(70)));
    }

    #[test]
    fn estimated_days_are_projected_at_the_run_rate_but_the_forecast_never_falls_below_spend() {
        // 1 Jan is the first of the month and of the year; data through 31 Jan, its last
        // three days Estimated and partial.
        let period = DateRange {
            from: day(2026, 1, 1),
            to: day(2026, 2, 1),
        };
        let mut daily = flat(day(2026, 1, 1), day(2026, 1, 29), 100);
        daily.extend([
            (day(2026, 1, 29), Decimal::from(90)),
            (day(2026, 1, 30), Decimal::from(60)),
            (day(2026, 1, 31), Decimal::from(20)),
        ]);
        let window = Settled {
            first_day: Some(day(2025, 12, 1)),
            last_day: Some(day(2026, 1, 28)),
        }
        .run_rate_window()
        .expect("window");
        let rate = run_rate(window, &daily);
        let f = forecast(period, &daily, Some(&rate)).expect("forecast");
        assert_eq!(f.projected_from, day(2026, 1, 29));
        assert_eq!(f.projected_days, 3);
        assert_eq!(f.expected, Decimal::from(2800 + 300));
        assert_eq!(f.last_day, day(2026, 1, 31));

        // A spike on an Estimated day above what the run-rate projects: the forecast is the spend.
        daily.push((day(2026, 1, 30), Decimal::from(5000)));
        let spiked = forecast(period, &daily, Some(&rate)).expect("forecast");
        let recorded: Decimal = daily.iter().map(|(_, v)| *v).sum();
        assert_eq!(spiked.expected, recorded);
        assert_eq!(spiked.low, recorded);
    }

    #[test]
    fn on_the_first_day_of_a_month_everything_is_projected_from_the_previous_months_run_rate() {
        // 1 March 2028, after a 29 February: no day of March has figures yet.
        let period = DateRange {
            from: day(2028, 3, 1),
            to: day(2028, 4, 1),
        };
        let daily = flat(day(2028, 2, 20), day(2028, 3, 1), 10);
        let window = Settled {
            first_day: Some(day(2027, 2, 1)),
            last_day: Some(day(2028, 2, 29)),
        }
        .run_rate_window()
        .expect("window");
        let f = forecast(period, &daily, Some(&run_rate(window, &daily))).expect("forecast");
        assert_eq!((f.projected_from, f.projected_days), (day(2028, 3, 1), 31));
        assert_eq!(f.expected, Decimal::from(310));
    }
}
