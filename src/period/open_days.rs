//! The days of a range whose figures are not final, as both builds (de)serialize them.

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

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
