//! Reporting periods and metrics as in the URL; UTC days in half-open ranges, as in Cost Explorer.

use chrono::{Datelike, Days, Months, NaiveDate};
use serde::{Deserialize, Serialize};
mod aws_account;
mod budget_period;
mod open_days;
pub use aws_account::AwsAccountId;
pub use budget_period::BudgetPeriod;
pub use open_days::OpenDays;

/// A reporting period: a named one relative to today (UTC), a calendar month, or any range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum Period {
    #[default]
    MonthToDate,
    PreviousMonth,
    Last30Days,
    Last90Days,
    /// `?period=2026-10`: the month starting on this day.
    Month(NaiveDate),
    /// `?period=2026-10-01..2026-11-01`: `to` exclusive, as in Cost Explorer.
    Custom(DateRange),
}

/// Days in the run-rate window: the last 7 settled days (`costs::forecast`).
pub const RUN_RATE_DAYS: i64 = 7;

const MAX_CUSTOM_DAYS: i64 = 3 * 366; // the longest custom range: Cost Explorer's daily history

impl Period {
    pub const ALL: [Period; 4] = [
        Period::MonthToDate,
        Period::PreviousMonth,
        Period::Last30Days,
        Period::Last90Days,
    ];

    /// The value used in `?period=`.
    pub fn key(self) -> String {
        match self {
            Period::MonthToDate => "mtd".into(),
            Period::PreviousMonth => "prev".into(),
            Period::Last30Days => "30d".into(),
            Period::Last90Days => "90d".into(),
            Period::Month(first) => first.format("%Y-%m").to_string(),
            Period::Custom(range) => format!("{}..{}", range.from, range.to),
        }
    }

    pub fn label(self) -> String {
        match self {
            Period::MonthToDate => "Month to date".into(),
            Period::PreviousMonth => "Previous month".into(),
            Period::Last30Days => "Last 30 days".into(),
            Period::Last90Days => "Last 90 days".into(),
            Period::Month(first) => first.format("%B %Y").to_string(),
            Period::Custom(range) => format!("{} – {}", range.from, range.last_day()),
        }
    }

    /// Parses `?period=`: mtd, prev, 30d, 90d, a month `YYYY-MM`, or a range
    /// `YYYY-MM-DD..YYYY-MM-DD` (end exclusive). An absent value means month to date.
    pub fn parse(value: Option<&str>) -> Result<Period, String> {
        let text = value.unwrap_or("").trim();
        if text.is_empty() {
            return Ok(Period::default());
        }
        if let Some(preset) = Period::ALL.into_iter().find(|p| p.key() == text) {
            return Ok(preset);
        }
        let date = |s: &str| NaiveDate::parse_from_str(s, "%Y-%m-%d").ok();
        if let Some((from, to)) = text.split_once("..") {
            let (Some(from), Some(to)) = (date(from), date(to)) else {
                return Err(format!("period {text:?}: expected YYYY-MM-DD..YYYY-MM-DD"));
            };
            if from >= to {
                return Err("the range's end must be after its start (the end is exclusive)".into());
            }
            if (to - from).num_days() > MAX_CUSTOM_DAYS {
                return Err(format!("a range may cover at most {MAX_CUSTOM_DAYS} days"));
            }
            return Ok(Period::Custom(DateRange { from, to }));
        }
        if let Some(first) = date(&format!("{text}-01")).filter(|_| text.len() == 7) {
            return Ok(Period::Month(first));
        }
        Err(format!(
            "unknown period {text:?}; expected one of mtd, prev, 30d, 90d, a month YYYY-MM or a range YYYY-MM-DD..YYYY-MM-DD"
        ))
    }

    /// The `?period=` a page shows when its URL came from the month picker (`?month=`) or the
    /// range form (`?from=&to=`, `to` inclusive as people type it) rather than a link.
    pub fn query_value(
        period: Option<String>,
        month: Option<String>,
        from: Option<String>,
        to: Option<String>,
    ) -> Option<String> {
        if let Some(month) = month.filter(|m| !m.is_empty()) {
            return Some(month);
        }
        if let (Some(from), Some(to)) = (from.filter(|f| !f.is_empty()), to.filter(|t| !t.is_empty())) {
            let end = NaiveDate::parse_from_str(&to, "%Y-%m-%d")
                .map(|last| next_day(last).to_string())
                .unwrap_or(to);
            return Some(format!("{from}..{end}"));
        }
        period
    }

    /// The half-open day range `[from, to)` this period covers, given today's UTC date, cut
    /// at today: Cost Explorer has no figures for today yet (ingestion never stores it), so
    /// no period counts it. On the 1st, month to date is empty (`from == to`).
    pub fn range(self, today: NaiveDate) -> DateRange {
        let month_start = today.with_day(1).unwrap_or(today);
        let nominal = match self {
            Period::MonthToDate => DateRange {
                from: month_start,
                to: today,
            },
            Period::PreviousMonth => DateRange {
                from: month_start.checked_sub_months(Months::new(1)).unwrap_or(month_start),
                to: month_start,
            },
            Period::Last30Days => DateRange {
                from: days_before(today, 30),
                to: today,
            },
            Period::Last90Days => DateRange {
                from: days_before(today, 90),
                to: today,
            },
            Period::Month(first) => DateRange {
                from: first,
                to: first.checked_add_months(Months::new(1)).unwrap_or(first),
            },
            Period::Custom(range) => range,
        };
        nominal.cut_at(today)
    }

    /// The calendar month a month-to-date forecast runs to; `None` for other periods.
    pub fn forecast_period(self, today: NaiveDate) -> Option<DateRange> {
        let from = today.with_day(1)?;
        (self == Period::MonthToDate).then(|| DateRange {
            from,
            to: from.checked_add_months(Months::new(1)).unwrap_or(from),
        })
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

/// Whether cost figures include credits and refunds (net, as the bill and AWS Budgets count
/// by default) or leave them out (gross: usage, fees and tax as charged before any credit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum Credits {
    /// Credits and refunds subtracted: what the organisation pays.
    #[default]
    Net,
    /// Credits and refunds left out: the burn that credits hide until they run out.
    Gross,
}

impl Credits {
    pub const ALL: [Credits; 2] = [Credits::Net, Credits::Gross];

    pub fn key(self) -> &'static str {
        match self {
            Credits::Net => "net",
            Credits::Gross => "gross",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Credits::Net => "Net of credits",
            Credits::Gross => "Before credits",
        }
    }

    /// One sentence saying what the figures include, for pages and emails.
    pub fn describe(self) -> &'static str {
        match self {
            Credits::Net => "net of credits and refunds",
            Credits::Gross => "before credits and refunds",
        }
    }

    /// Parses `?credits=`: net or gross; absent means net.
    pub fn parse(value: Option<&str>) -> Result<Credits, String> {
        match value.unwrap_or("") {
            "" | "net" => Ok(Credits::Net),
            "gross" => Ok(Credits::Gross),
            other => Err(format!("unknown credits {other:?}; expected net or gross")),
        }
    }
}

/// What each amount on a cost page counts: the metric, net of credits or before them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Basis {
    pub metric: Metric,
    pub credits: Credits,
}

/// A metric alone counts net of credits, as the bill does.
impl From<Metric> for Basis {
    fn from(metric: Metric) -> Basis {
        Basis {
            metric,
            credits: Credits::Net,
        }
    }
}

impl Basis {
    /// The SQL for one row's spend as this basis counts it: `alias` names a row with each
    /// amount's credit and refund parts (negative, as Cost Explorer reports them).
    pub fn spend_sql(self, alias: &str) -> String {
        let metric = self.metric.key();
        match self.credits {
            Credits::Net => format!("{alias}.{metric}"),
            Credits::Gross => format!("({alias}.{metric} - {alias}.credit_{metric} - {alias}.refund_{metric})"),
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

    /// The days of this range before `end`; empty (`from == to`) when none are.
    pub fn cut_at(self, end: NaiveDate) -> DateRange {
        let to = self.to.min(end).max(self.from);
        DateRange { from: self.from, to }
    }

    /// The `days` days just before this range: what a period is compared with.
    pub fn days_before(self, days: i64) -> DateRange {
        DateRange {
            from: days_before(self.from, days.max(0) as u64),
            to: self.from,
        }
    }

    /// `2026-11-01 – 2026-11-22`, or a note when the range has no day yet.
    pub fn label(&self) -> String {
        if self.days() == 0 {
            format!("no day since {} has figures yet", self.from)
        } else {
            format!("{} – {}", self.from, self.last_day())
        }
    }
}

/// `2026-10` as that month's days.
pub fn parse_month(text: &str) -> Result<DateRange, String> {
    let from = NaiveDate::parse_from_str(&format!("{}-01", text.trim()), "%Y-%m-%d")
        .map_err(|_| format!("{text:?} is not a month such as 2026-10"))?;
    let to = from
        .checked_add_months(chrono::Months::new(1))
        .ok_or_else(|| format!("{text:?} is out of range"))?;
    Ok(DateRange { from, to })
}

/// `2026-10` for a month's first day.
pub fn month_label(first: NaiveDate) -> String {
    first.format("%Y-%m").to_string()
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

    #[test]
    fn credits_parse_net_by_default_and_name_a_bad_value() {
        assert_eq!(Credits::parse(None), Ok(Credits::Net));
        assert_eq!(Credits::parse(Some("")), Ok(Credits::Net));
        assert_eq!(Credits::parse(Some("gross")), Ok(Credits::Gross));
        assert_eq!(
            Credits::parse(Some("Gross")),
            Err("unknown credits \"Gross\"; expected net or gross".to_string())
        );
        for credits in Credits::ALL {
            assert_eq!(Credits::parse(Some(credits.key())), Ok(credits));
        }
    }

    #[test]
    fn gross_spend_takes_the_credit_and_refund_parts_back_out() {
        let basis = |metric, credits| Basis { metric, credits };
        assert_eq!(basis(Metric::Amortized, Credits::Net).spend_sql("r"), "r.amortized");
        assert_eq!(
            basis(Metric::Unblended, Credits::Gross).spend_sql("a"),
            "(a.unblended - a.credit_unblended - a.refund_unblended)"
        );
        assert_eq!(Basis::from(Metric::Amortized), basis(Metric::Amortized, Credits::Net));
    }

    fn day(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).expect("valid test date")
    }

    #[test]
    fn month_to_date_runs_from_the_first_to_yesterday() {
        let r = Period::MonthToDate.range(day(2026, 3, 15));
        assert_eq!((r.from, r.to), (day(2026, 3, 1), day(2026, 3, 15)));
        assert_eq!(r.days(), 14);
        // The 2nd: one day with figures; the 1st: none yet.
        assert_eq!(Period::MonthToDate.range(day(2026, 3, 2)).days(), 1);
        let first = Period::MonthToDate.range(day(2026, 3, 1));
        assert_eq!((first.from, first.days()), (day(2026, 3, 1), 0));
        assert_eq!(first.label(), "no day since 2026-03-01 has figures yet");
        // The last day of a month, and 29 February.
        assert_eq!(Period::MonthToDate.range(day(2026, 3, 31)).days(), 30);
        assert_eq!(
            Period::MonthToDate.range(day(2028, 2, 29)),
            DateRange {
                from: day(2028, 2, 1),
                to: day(2028, 2, 29)
            }
        );
        // 1 January: month to date is empty; the previous month is last December.
        assert_eq!(Period::MonthToDate.range(day(2027, 1, 1)).days(), 0);
        assert_eq!(
            Period::PreviousMonth.range(day(2027, 1, 1)),
            DateRange {
                from: day(2026, 12, 1),
                to: day(2027, 1, 1)
            }
        );
    }

    #[test]
    fn the_current_month_and_ranges_into_the_future_stop_before_today() {
        let today = day(2026, 11, 22);
        let november = Period::parse(Some("2026-11")).expect("month");
        assert_eq!(november.range(today).to, today);
        let future = Period::parse(Some("2026-12-01..2026-12-05")).expect("range");
        assert_eq!(future.range(today).days(), 0);
        assert_eq!(
            Period::MonthToDate.forecast_period(day(2028, 2, 29)),
            Some(DateRange {
                from: day(2028, 2, 1),
                to: day(2028, 3, 1)
            })
        );
        assert_eq!(Period::Last30Days.forecast_period(today), None);
    }

    #[test]
    fn previous_month_crosses_the_year_boundary() {
        let r = Period::PreviousMonth.range(day(2026, 1, 10));
        assert_eq!((r.from, r.to), (day(2025, 12, 1), day(2026, 1, 1)));
        assert_eq!(r.last_day(), day(2025, 12, 31));
    }

    #[test]
    fn rolling_periods_cover_exactly_n_days_ending_yesterday() {
        let r = Period::Last30Days.range(day(2026, 3, 1));
        assert_eq!(r.days(), 30);
        assert_eq!(r.last_day(), day(2026, 2, 28));
        assert_eq!(Period::Last90Days.range(day(2026, 3, 1)).days(), 90);
    }

    #[test]
    fn months_and_custom_ranges_round_trip_through_the_query_string() {
        let october = Period::parse(Some("2026-10")).expect("month");
        assert_eq!(
            october.range(day(2026, 11, 22)),
            DateRange {
                from: day(2026, 10, 1),
                to: day(2026, 11, 1)
            }
        );
        assert_eq!(october.label(), "October 2026");
        assert_eq!(Period::parse(Some(&october.key())), Ok(october));
        let custom = Period::parse(Some("2026-10-05..2026-10-12")).expect("range");
        assert_eq!(custom.range(day(2026, 11, 22)).days(), 7);
        assert_eq!(Period::parse(Some(&custom.key())), Ok(custom));
        // The range form's end is the last day people want included.
        assert_eq!(
            Period::query_value(None, None, Some("2026-10-05".into()), Some("2026-10-11".into())),
            Some("2026-10-05..2026-10-12".into())
        );
        assert_eq!(
            Period::query_value(Some("30d".into()), Some("2026-09".into()), None, None),
            Some("2026-09".into())
        );
    }

    #[test]
    fn unknown_period_and_metric_are_rejected_with_the_allowed_values() {
        assert_eq!(Period::parse(None), Ok(Period::MonthToDate));
        assert_eq!(Period::parse(Some("prev")), Ok(Period::PreviousMonth));
        let err = Period::parse(Some("1' or 1=1")).expect_err("must reject");
        assert!(err.contains("mtd, prev, 30d, 90d"));
        for bad in [
            "2026-13",
            "2026-1",
            "2026-11-05..2026-11-01",
            "2020-01-01..2026-01-01",
            "2026-11-01..x",
        ] {
            assert!(Period::parse(Some(bad)).is_err(), "{bad}");
        }
        assert_eq!(Metric::parse(Some("amortized")), Ok(Metric::Amortized));
        assert!(Metric::parse(Some("blended")).is_err());
    }
}
