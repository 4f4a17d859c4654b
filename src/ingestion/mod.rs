//! Cost Explorer ingestion (`burnrate ingest` and the schedule in `serve`) and the
//! Ingestion page (`/ingestion`): recent runs with their status, size and cost.

#[cfg(feature = "ssr")]
pub mod bench;
#[cfg(feature = "ssr")]
pub mod cost_explorer;
#[cfg(feature = "ssr")]
pub mod plan;
#[cfg(feature = "ssr")]
pub mod response;
#[cfg(feature = "ssr")]
pub mod run;
#[cfg(feature = "ssr")]
pub mod schedule;
#[cfg(feature = "ssr")]
pub mod store;

use leptos::prelude::*;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use crate::error::AppError;
use crate::format::usd;
use crate::ui::page::PageHeader;
use crate::ui::table::TableHead;

/// Why an ingestion run failed, in words fit for the run's record and the terminal.
/// Typed by kind, so callers and tests can tell AWS's refusals from bad answers, failed
/// checks and the database.
#[cfg(feature = "ssr")]
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// Cost Explorer refused the request or could not be reached: credentials, endpoint,
    /// permissions, timeout.
    #[error("{0}")]
    CostExplorer(String),
    /// A retryable failure that lasted through every attempt.
    #[error("gave up after {attempts} attempts: {last}")]
    GaveUp { attempts: u32, last: Box<IngestError> },
    /// Cost Explorer's answer is not what burnrate can store: a shape, date or amount it
    /// did not expect.
    #[error("{0}")]
    Malformed(String),
    /// A group of one day's result was malformed.
    #[error("Cost Explorer result for {day}: {source}")]
    InResult {
        day: chrono::NaiveDate,
        source: Box<IngestError>,
    },
    /// The window asked for, or the figures fetched, fail a check; nothing is stored.
    #[error("{0}")]
    Rejected(String),
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    #[error(transparent)]
    Staging(#[from] crate::costs::store::StagingError),
}

#[cfg(feature = "ssr")]
impl IngestError {
    pub fn malformed(message: impl Into<String>) -> IngestError {
        IngestError::Malformed(message.into())
    }

    pub fn rejected(message: impl Into<String>) -> IngestError {
        IngestError::Rejected(message.into())
    }
}

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

/// The schedule's state and the 50 newest runs, newest first. Any signed-in account may read them.
#[server(prefix = "/api", endpoint = "ingestion_runs")]
pub async fn list_runs() -> Result<IngestionOverview, AppError> {
    crate::error::with_status(
        async {
            crate::auth::caller()?;
            let pool = crate::ctx::pool()?;
            let runs = store::recent_runs(&pool).await?;
            let schedule = crate::ctx::get::<schedule::SharedStatus>()?
                .read()
                .map(|s| s.clone())
                .unwrap_or_default();
            Ok(IngestionOverview { schedule, runs })
        }
        .await,
    )
}

#[component]
pub fn IngestionPage() -> impl IntoView {
    let runs = crate::codec::resource(|| (), |_| list_runs());
    view! {
        <PageHeader title="Ingestion"/>
        {crate::ui::page::loaded(runs, move |overview| view! {
                        <p class=if overview.schedule.problem { "notice notice-problem" } else { "notice" } data-testid="schedule-status">
                            {overview.schedule.message}
                        </p>
                        <RunsTable runs=overview.runs/>
                    })}
    }
}

#[component]
fn RunsTable(runs: Vec<RunSummary>) -> impl IntoView {
    if runs.is_empty() {
        return view! {
            <section class="empty" data-testid="empty-state">
                <h2>"No cost data has been loaded yet"</h2>
                <p>"Run " <code>"burnrate ingest"</code> " with AWS credentials, or load the demo organisation with "
                   <code>"burnrate demo"</code> "."</p>
            </section>
        }
        .into_any();
    }
    view! {
                        <table class="data" data-testid="runs-table">
                            <TableHead columns=&["Started", "Trigger", "Status", "Window", "Days", "Rows", "Requests", "API cost", "Grain difference", "Duration", "Error"]/>
                            <tbody>
                                {runs.into_iter().map(|run| view! {
                                    <tr data-testid="run-row">
                                        <td>{run.started_at}</td>
                                        <td>{run.trigger}</td>
                                        <td><span class=format!("status status-{}", run.status)>{run.status.clone()}</span></td>
                                        <td>{run.window.unwrap_or_default()}</td>
                                        <td class="num">{run.days.map(|d| d.to_string()).unwrap_or_default()}</td>
                                        <td class="num">{run.rows_written}</td>
                                        <td class="num">{run.requests}</td>
                                        <td class="num">{usd(run.api_cost)}</td>
                                        <td class="num" data-testid="grain-difference" title="The largest daily difference between the three group-by queries' totals: Cost Explorer rounds each group on its own. Runs fail above USD 0.01.">
                                            {run.grain_difference.map(|d| format!("${}", d.normalize())).unwrap_or_default()}
                                        </td>
                                        <td class="num">{run.duration_seconds.map(|s| format!("{s} s")).unwrap_or_else(|| "running".into())}</td>
                                        <td>{run.error.unwrap_or_default()}</td>
                                    </tr>
                                }).collect_view()}
                            </tbody>
                        </table>
    }
    .into_any()
}
