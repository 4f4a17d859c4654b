//! The forecast as both builds (de)serialize it.

use chrono::NaiveDate;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

/// Where the period is heading: settled spend plus the run-rate for each later day, with a
/// range from the slowest to the fastest of the run-rate's days (see `costs::forecast`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Forecast {
    /// The period's last day.
    pub last_day: NaiveDate,
    /// The first day projected at the run-rate: the day after the last settled one.
    pub projected_from: NaiveDate,
    /// Days from `projected_from` to the period's end, provisional days included.
    pub projected_days: i64,
    pub expected: Decimal,
    pub low: Decimal,
    pub high: Decimal,
}
