//! What follows a successful ingestion, wherever it ran: budgets are evaluated (and due
//! alerts sent), then enforcement judges every project and runs what its policies allow.
//! `serve` calls it after each scheduled run and `burnrate ingest` after its own, so cron
//! mode behaves as the in-process schedule does.

use chrono::NaiveDate;
use sqlx::PgPool;

use crate::budgets::outbox::AlertSender;
use crate::enforcement::executor::Executor;

/// What the evaluations after an ingestion did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AfterIngestion {
    pub budgets: usize,
    pub alerts_queued: usize,
    pub alerts_sent: usize,
    pub alerts_still_queued: usize,
    pub violations: usize,
}

impl std::fmt::Display for AfterIngestion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "evaluated {} budgets: {} alerts queued; emails {} sent, {} still queued; enforcement: {} violation actions",
            self.budgets, self.alerts_queued, self.alerts_sent, self.alerts_still_queued, self.violations
        )
    }
}

/// Budgets, then enforcement. Each step's failure is reported and does not stop the other:
/// the costs are stored either way, and the next run evaluates again.
pub async fn after_ingestion(
    pool: &PgPool,
    alerts: &AlertSender,
    public_url: Option<&str>,
    enforcement: &Executor,
    today: NaiveDate,
) -> Result<AfterIngestion, String> {
    let mut done = AfterIngestion::default();
    let mut failures = Vec::new();
    match crate::budgets::evaluate_and_send(pool, alerts, public_url, today, false).await {
        Ok((evaluation, delivery)) => {
            done.budgets = evaluation.statuses.len();
            done.alerts_queued = evaluation.queued;
            done.alerts_sent = delivery.sent;
            done.alerts_still_queued = delivery.queued;
            tracing::info!(
                budgets = done.budgets,
                queued = evaluation.queued,
                sent = delivery.sent,
                "budgets evaluated"
            );
        }
        Err(error) => {
            tracing::error!(%error, "evaluating budgets failed");
            failures.push(format!("evaluating budgets failed: {error}"));
        }
    }
    match crate::enforcement::evaluate::evaluate_and_act(pool, today, enforcement).await {
        Ok(lines) => {
            done.violations = lines.len();
            tracing::info!(violations = lines.len(), "enforcement evaluated");
        }
        Err(error) => {
            tracing::error!(%error, "evaluating enforcement failed");
            failures.push(format!("evaluating enforcement failed: {error}"));
        }
    }
    if failures.is_empty() {
        Ok(done)
    } else {
        Err(failures.join("; "))
    }
}
