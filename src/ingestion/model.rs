//! The Ingestion page's data: the schedule's state and the recent runs.

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

/// What the schedule inside `serve` is doing, or why it cannot.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduleStatus {
    /// True when an admin has something to fix (no credentials, failing runs).
    pub problem: bool,
    pub message: String,
}

/// The Ingestion page's data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IngestionOverview {
    pub schedule: ScheduleStatus,
    pub runs: Vec<RunSummary>,
}

/// One ingestion run as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunSummary {
    pub id: i64,
    pub trigger: String,
    pub status: String,
    pub started_at: String,
    /// `None` while running.
    pub duration_seconds: Option<i64>,
    /// `from – last day`, when the run covered a window.
    pub window: Option<String>,
    pub days: Option<i64>,
    pub rows_written: i64,
    pub requests: i32,
    pub api_cost: Decimal,
    /// The largest daily difference between the group-by pairs' totals that the run
    /// accepted (Cost Explorer rounds each group on its own); `None` before a fetch.
    pub grain_difference: Option<Decimal>,
    pub error: Option<String>,
}
