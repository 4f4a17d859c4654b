//! Budgets: a limit on spend at org, team, project or account scope for a calendar period, with
//! thresholds that queue alert emails exactly once, kept in sync with AWS Budgets.

pub mod model;
pub mod pages;
pub mod server_fns;

pub use model::{
    AlertRecord, Budget, BudgetScope, BudgetSpec, BudgetStatus, BudgetUse, Escalation, ScopeChoices, Threshold,
    ThresholdKind,
};

#[cfg(feature = "ssr")]
pub mod access;
#[cfg(feature = "ssr")]
pub mod aws_sync;
#[cfg(feature = "ssr")]
pub mod chart;
#[cfg(feature = "ssr")]
pub mod email;
#[cfg(feature = "ssr")]
pub mod evaluate;
#[cfg(feature = "ssr")]
pub mod spec;
#[cfg(feature = "ssr")]
pub mod store;

/// Evaluates every budget and sends what that queued (and anything else due): what runs after
/// each ingestion and on `burnrate budgets evaluate`. `every_queued` ignores retry backoff.
#[cfg(feature = "ssr")]
pub async fn evaluate_and_send(
    pool: &sqlx::PgPool,
    sender: &crate::outbox::AlertSender,
    public_url: Option<&str>,
    today: chrono::NaiveDate,
    every_queued: bool,
) -> Result<EvaluatedAndSent, sqlx::Error> {
    let evaluation = evaluate::evaluate(pool, today, public_url).await?;
    let delivery = if every_queued {
        sender.deliver_now(pool).await?
    } else {
        sender.deliver_due(pool).await?
    };
    Ok(EvaluatedAndSent { evaluation, delivery })
}

/// What [`evaluate_and_send`] did: the evaluation, then the deliveries.
#[cfg(feature = "ssr")]
pub struct EvaluatedAndSent {
    pub evaluation: evaluate::EvaluationReport,
    pub delivery: crate::outbox::DeliveryReport,
}
