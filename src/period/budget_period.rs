//! How long a budget's period is: calendar-aligned in UTC, as in AWS Budgets. A budget,
//! the policy limits judged per period and the enforcement budgets in AWS all use it.

use chrono::{Datelike, Months, NaiveDate};
use serde::{Deserialize, Serialize};

use super::DateRange;

/// Budget periods are calendar-aligned in UTC, as in AWS Budgets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum BudgetPeriod {
    Monthly,
    Quarterly,
    Annual,
}

impl BudgetPeriod {
    pub const ALL: [BudgetPeriod; 3] = [BudgetPeriod::Monthly, BudgetPeriod::Quarterly, BudgetPeriod::Annual];

    pub fn key(self) -> &'static str {
        match self {
            BudgetPeriod::Monthly => "monthly",
            BudgetPeriod::Quarterly => "quarterly",
            BudgetPeriod::Annual => "annual",
        }
    }

    /// "this month", "this quarter", "this year".
    pub fn noun(self) -> &'static str {
        match self {
            BudgetPeriod::Monthly => "month",
            BudgetPeriod::Quarterly => "quarter",
            BudgetPeriod::Annual => "year",
        }
    }

    pub fn parse(text: &str) -> Option<BudgetPeriod> {
        BudgetPeriod::ALL.into_iter().find(|p| p.key() == text.trim())
    }

    fn months(self) -> u32 {
        match self {
            BudgetPeriod::Monthly => 1,
            BudgetPeriod::Quarterly => 3,
            BudgetPeriod::Annual => 12,
        }
    }

    /// The period holding `day`: its first day and the first day after it.
    pub fn containing(self, day: NaiveDate) -> DateRange {
        let months = self.months();
        let month0 = (day.month0() / months) * months;
        let from = NaiveDate::from_ymd_opt(day.year(), month0 + 1, 1).unwrap_or(day);
        DateRange {
            from,
            to: from.checked_add_months(Months::new(months)).unwrap_or(from),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).expect("valid date")
    }

    #[test]
    fn periods_are_calendar_aligned() {
        use BudgetPeriod::{Annual, Monthly, Quarterly};
        for (period, on, from, to) in [
            (Monthly, day(2026, 11, 22), day(2026, 11, 1), day(2026, 12, 1)),
            (Monthly, day(2026, 12, 31), day(2026, 12, 1), day(2027, 1, 1)),
            (Quarterly, day(2026, 11, 22), day(2026, 10, 1), day(2027, 1, 1)),
            (Quarterly, day(2026, 3, 31), day(2026, 1, 1), day(2026, 4, 1)),
            (Annual, day(2026, 2, 28), day(2026, 1, 1), day(2027, 1, 1)),
        ] {
            let range = period.containing(on);
            assert_eq!((range.from, range.to), (from, to), "{period:?} {on}");
        }
    }
}
