//! Reporting periods and cost metrics as they appear in the URL query string.
//! Billing days are UTC dates; every range is half-open (`to` is exclusive, as in Cost Explorer).

use chrono::{Datelike, Days, Months, NaiveDate};
use serde::{Deserialize, Serialize};

/// A named reporting period, relative to today (UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum Period {
    #[default]
    MonthToDate,
    PreviousMonth,
    Last30Days,
    Last90Days,
}

impl Period {
    pub const ALL: [Period; 4] = [
        Period::MonthToDate,
        Period::PreviousMonth,
        Period::Last30Days,
        Period::Last90Days,
    ];

    /// The value used in `?period=`.
    pub fn key(self) -> &'static str {
        match self {
            Period::MonthToDate => "mtd",
            Period::PreviousMonth => "prev",
            Period::Last30Days => "30d",
            Period::Last90Days => "90d",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Period::MonthToDate => "Month to date",
            Period::PreviousMonth => "Previous month",
            Period::Last30Days => "Last 30 days",
            Period::Last90Days => "Last 90 days",
        }
    }

    /// Parses `?period=`; an absent value means month to date.
    pub fn parse(value: Option<&str>) -> Result<Period, String> {
        match value.unwrap_or("") {
            "" => Ok(Period::default()),
            text => Period::ALL
                .into_iter()
                .find(|p| p.key() == text)
                .ok_or_else(|| format!("unknown period {text:?}; expected one of mtd, prev, 30d, 90d")),
        }
    }

    /// The half-open day range `[from, to)` this period covers, given today's UTC date.
    /// Ranges that reach today include it: today's figures are estimated but real.
    pub fn range(self, today: NaiveDate) -> DateRange {
        let tomorrow = next_day(today);
        let month_start = today.with_day(1).unwrap_or(today);
        match self {
            Period::MonthToDate => DateRange {
                from: month_start,
                to: tomorrow,
            },
            Period::PreviousMonth => DateRange {
                from: month_start.checked_sub_months(Months::new(1)).unwrap_or(month_start),
                to: month_start,
            },
            Period::Last30Days => DateRange {
                from: days_before(tomorrow, 30),
                to: tomorrow,
            },
            Period::Last90Days => DateRange {
                from: days_before(tomorrow, 90),
                to: tomorrow,
            },
        }
    }
}

/// The cost metric a view sums.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum Metric {
    /// What was billed on each day.
    #[default]
    Unblended,
    /// Upfront reservation and savings-plan fees spread over the days they cover.
    Amortized,
}

impl Metric {
    pub fn key(self) -> &'static str {
        match self {
            Metric::Unblended => "unblended",
            Metric::Amortized => "amortized",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Metric::Unblended => "Unblended",
            Metric::Amortized => "Amortized",
        }
    }

    pub fn parse(value: Option<&str>) -> Result<Metric, String> {
        match value.unwrap_or("") {
            "" => Ok(Metric::default()),
            "unblended" => Ok(Metric::Unblended),
            "amortized" => Ok(Metric::Amortized),
            other => Err(format!("unknown metric {other:?}; expected unblended or amortized")),
        }
    }
}

/// A half-open range of UTC days: `from` is included, `to` is not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DateRange {
    pub from: NaiveDate,
    pub to: NaiveDate,
}

impl DateRange {
    pub fn days(&self) -> i64 {
        (self.to - self.from).num_days().max(0)
    }

    /// The last day included, for display.
    pub fn last_day(&self) -> NaiveDate {
        self.to.pred_opt().unwrap_or(self.to)
    }
}

pub fn next_day(day: NaiveDate) -> NaiveDate {
    day.checked_add_days(Days::new(1)).unwrap_or(day)
}

pub fn days_before(day: NaiveDate, n: u64) -> NaiveDate {
    day.checked_sub_days(Days::new(n)).unwrap_or(day)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).expect("valid test date")
    }

    #[test]
    fn month_to_date_runs_from_the_first_to_today_inclusive() {
        let r = Period::MonthToDate.range(day(2026, 3, 15));
        assert_eq!((r.from, r.to), (day(2026, 3, 1), day(2026, 3, 16)));
        assert_eq!(r.days(), 15);
    }

    #[test]
    fn previous_month_crosses_the_year_boundary() {
        let r = Period::PreviousMonth.range(day(2026, 1, 10));
        assert_eq!((r.from, r.to), (day(2025, 12, 1), day(2026, 1, 1)));
        assert_eq!(r.last_day(), day(2025, 12, 31));
    }

    #[test]
    fn rolling_periods_cover_exactly_n_days_ending_today() {
        let r = Period::Last30Days.range(day(2026, 3, 1));
        assert_eq!(r.days(), 30);
        assert_eq!(r.last_day(), day(2026, 3, 1));
        assert_eq!(Period::Last90Days.range(day(2026, 3, 1)).days(), 90);
    }

    #[test]
    fn unknown_period_and_metric_are_rejected_with_the_allowed_values() {
        assert_eq!(Period::parse(None), Ok(Period::MonthToDate));
        assert_eq!(Period::parse(Some("prev")), Ok(Period::PreviousMonth));
        let err = Period::parse(Some("1' or 1=1")).expect_err("must reject");
        assert!(err.contains("mtd, prev, 30d, 90d"));
        assert_eq!(Metric::parse(Some("amortized")), Ok(Metric::Amortized));
        assert!(Metric::parse(Some("blended")).is_err());
    }
}
