//! What the ingestion schedule inside `serve` (`jobs::ingest_on_schedule`) is doing, as
//! the Ingestion page shows it.

use std::sync::{Arc, RwLock};

use super::model::ScheduleStatus;
use crate::config::IngestSettings;

/// What the schedule is doing, shared with the Ingestion page.
pub type SharedStatus = Arc<RwLock<ScheduleStatus>>;

/// The schedule's status `serve` provided to this request's server functions.
pub fn shared() -> Result<SharedStatus, crate::error::AppError> {
    crate::ctx::get::<SharedStatus>()
}

pub fn initial_status(settings: &IngestSettings) -> ScheduleStatus {
    match settings.interval {
        None => ScheduleStatus {
            problem: false,
            message: "Scheduled ingestion is off (BURNRATE_INGEST_INTERVAL=off). Run `burnrate ingest` from cron \
                      or another scheduler."
                .into(),
        },
        Some(_) => ScheduleStatus {
            problem: false,
            message: "Scheduled ingestion is starting.".into(),
        },
    }
}

pub fn set(status: &SharedStatus, problem: bool, message: String) {
    if let Ok(mut guard) = status.write() {
        *guard = ScheduleStatus { problem, message };
    }
}

pub fn humanize(interval: std::time::Duration) -> String {
    let secs = interval.as_secs();
    match secs {
        s if s % 86400 == 0 => format!("{}d", s / 86400),
        s if s % 3600 == 0 => format!("{}h", s / 3600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}
