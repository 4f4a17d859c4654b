//! The forecast and a range's unfinished days, as both builds (de)serialize them.

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
    /// Days from `projected_from` to the period's end, Estimated days included.
    pub projected_days: i64,
    pub expected: Decimal,
    pub low: Decimal,
    pub high: Decimal,
}

/// The days of a range whose figures are not final (see `costs::settlement`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenDays {
    /// Estimated days inside the restatement window: AWS may still restate them. Charts
    /// draw them lighter, tables mark them, and the run-rate leaves them out.
    pub provisional: Vec<NaiveDate>,
    /// Older days AWS still flags Estimated because their bill is open. Their figures no
    /// longer move, so burnrate counts them as settled.
    pub bill_open: Vec<NaiveDate>,
}

impl OpenDays {
    /// How a table marks `day`: "Provisional", "Bill open", or nothing when final.
    pub fn label(&self, day: NaiveDate) -> &'static str {
        if self.provisional.contains(&day) {
            "Provisional"
        } else if self.bill_open.contains(&day) {
            "Bill open"
        } else {
            ""
        }
    }
}
