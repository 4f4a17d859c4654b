//! Ingestion on a timer inside `serve`, through the same `run::run` as `burnrate ingest`.
//! Missing credentials do not stop the server: the log and the Ingestion page say what to do.

use std::sync::{Arc, RwLock};

use sqlx::PgPool;

use super::ScheduleStatus;
use super::cost_explorer::{Backoff, CostExplorer};
use super::run::{self, Outcome, RunOptions, Trigger};
use crate::config::IngestSettings;

/// What the schedule is doing, shared with the Ingestion page.
pub type SharedStatus = Arc<RwLock<ScheduleStatus>>;

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

fn set(status: &SharedStatus, problem: bool, message: String) {
    if let Ok(mut guard) = status.write() {
        *guard = ScheduleStatus { problem, message };
    }
}

/// Runs until the task is dropped; does nothing when the interval is `off`. Budgets and
/// enforcement are evaluated after every successful run (`jobs::after_ingestion`).
pub async fn run_forever(
    pool: PgPool,
    settings: IngestSettings,
    status: SharedStatus,
    alerts: crate::budgets::outbox::AlertSender,
    public_url: Option<String>,
    enforcement: crate::enforcement::executor::Executor,
) {
    let Some(interval) = settings.interval else {
        return;
    };
    let every = humanize(interval);
    let cost_explorer = CostExplorer::from_environment().await;
    loop {
        if let Some(problem) = cost_explorer.credentials_problem().await {
            tracing::warn!("scheduled ingestion skipped: {problem}");
            set(
                &status,
                true,
                format!("Scheduled ingestion (every {every}) is waiting: {problem}"),
            );
        } else {
            let options = RunOptions {
                settings: settings.clone(),
                window: None,
                today: chrono::Utc::now().date_naive(),
                backoff: Backoff::default(),
            };
            match run::run(&pool, &cost_explorer, Trigger::Schedule, &options).await {
                Ok(Outcome::Finished(report)) => {
                    set(
                        &status,
                        false,
                        format!("Ingestion runs every {every}. Last run: {report}."),
                    );
                    let today = chrono::Utc::now().date_naive();
                    // Failures are logged inside; the next run evaluates again.
                    let _ =
                        crate::jobs::after_ingestion(&pool, &alerts, public_url.as_deref(), &enforcement, today).await;
                }
                Ok(Outcome::AlreadyRunning) => {
                    tracing::info!("scheduled ingestion skipped: another ingestion is running");
                }
                Err(error) => {
                    set(
                        &status,
                        true,
                        format!("Ingestion runs every {every}. The last run failed: {error}"),
                    );
                }
            }
        }
        tokio::time::sleep(interval).await;
    }
}

fn humanize(interval: std::time::Duration) -> String {
    let secs = interval.as_secs();
    match secs {
        s if s % 86400 == 0 => format!("{}d", s / 86400),
        s if s % 3600 == 0 => format!("{}h", s / 3600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}
