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
pub struct IngestionData {
    pub schedule: ScheduleStatus,
    pub runs: Vec<RunSummary>,
    /// Usage types naming an accelerator instance type the GPU catalogue does not know:
    /// their spend is counted, but not as GPU spend, until the catalogue learns them.
    pub unknown_instance_types: Vec<UnknownInstanceType>,
    /// This month's Cost Explorer bill at the current pace; `None` before a run fetched.
    pub bill: Option<ProjectedBill>,
}

/// The month's Cost Explorer bill from burnrate's own requests (USD 0.01 each): runs a day
/// × days in the month × requests a run, plus the commitments reads the same way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectedBill {
    /// `YYYY-MM`, UTC.
    pub month: String,
    pub days: u32,
    pub runs_a_day: Decimal,
    /// Where `runs_a_day` comes from: the schedule, or the last week's runs when it is off.
    pub runs_basis: String,
    /// The median of the last 10 successful runs that fetched.
    pub requests_a_run: i64,
    pub reads_a_day: Decimal,
    pub requests_a_read: i64,
    pub usd: Decimal,
}

/// A usage type whose instance type is missing from the GPU catalogue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct UnknownInstanceType {
    pub usage_type: String,
    pub instance_type: String,
    /// Unblended spend over the last 30 days with data.
    pub spend_30d: Decimal,
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
