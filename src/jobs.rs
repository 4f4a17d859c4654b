//! What follows a successful ingestion, wherever it ran: budgets are evaluated (and due
//! alerts sent), then enforcement judges every project and runs what its policies allow.
//! `serve` calls it after each scheduled run and `burnrate ingest` after its own, so cron
//! mode behaves as the in-process schedule does. The schedule itself is here too, and the
//! CLI's one-off evaluations (`budgets evaluate`, `enforce evaluate`).

use chrono::NaiveDate;
use sqlx::PgPool;

use crate::config::IngestSettings;
use crate::enforcement::executor::Executor;
use crate::ingestion::cost_explorer::{Backoff, CostExplorer};
use crate::ingestion::run::{self, Outcome, RunOptions, Trigger};
use crate::ingestion::schedule::{self, SharedStatus};
use crate::outbox::AlertSender;

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

/// What the evaluations need: the alert sender, the enforcement runner and the public URL
/// emails link to, built once from the settings by `serve` (`AppState`) or a CLI run.
#[derive(Clone)]
pub struct Workers {
    pub alerts: AlertSender,
    pub executor: Executor,
    pub public_url: Option<String>,
}

impl Workers {
    pub fn from_config(config: &crate::config::Config) -> Workers {
        let alerts = AlertSender::new(config.smtp.as_ref(), Default::default());
        Workers {
            executor: Executor::from_config(config, &alerts),
            public_url: config.public_url.as_ref().map(|u| u.origin.clone()),
            alerts,
        }
    }
}

/// `burnrate budgets evaluate`: every budget evaluated, then every queued alert sent now
/// (retry backoff ignored: someone is waiting for the answer).
pub async fn evaluate_budgets(
    pool: &PgPool,
    workers: &Workers,
    today: NaiveDate,
) -> Result<crate::budgets::EvaluatedAndSent, sqlx::Error> {
    crate::budgets::evaluate_and_send(pool, &workers.alerts, workers.public_url.as_deref(), today, true).await
}

/// `burnrate enforce evaluate`: violations recorded, one enforcement pass, then one round of
/// the proposal lister (what `serve` runs apart from the pass), so a cron job that runs this
/// command lists what proposed stops would touch too.
pub async fn evaluate_enforcement(
    pool: &PgPool,
    workers: &Workers,
    today: NaiveDate,
) -> Result<Vec<crate::enforcement::evaluate::ViolationLine>, sqlx::Error> {
    let lines = crate::enforcement::evaluate::evaluate_and_act(pool, today, &workers.executor).await?;
    let mut listings = crate::enforcement::resources::listing::Listings::default();
    crate::enforcement::resources::listing::list_due(pool, &workers.executor, &mut listings).await?;
    Ok(lines)
}

/// Budgets, then enforcement. Each step's failure is reported and does not stop the other:
/// the costs are stored either way, and the next run evaluates again.
pub async fn after_ingestion(pool: &PgPool, workers: &Workers, today: NaiveDate) -> anyhow::Result<AfterIngestion> {
    let Workers {
        alerts,
        executor: enforcement,
        public_url,
    } = workers;
    let public_url = public_url.as_deref();
    let mut done = AfterIngestion::default();
    let mut failures = Vec::new();
    match crate::budgets::evaluate_and_send(pool, alerts, public_url, today, false).await {
        Ok(crate::budgets::EvaluatedAndSent { evaluation, delivery }) => {
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
    // Approvals near their cap or their last day: emails queued once each, sent by the outbox.
    match crate::enforcement::approval_notices::queue_due(pool, today, public_url).await {
        Ok(queued) => {
            if queued > 0 {
                alerts.wake();
            }
            tracing::info!(queued, "approval warnings queued");
        }
        Err(error) => {
            tracing::error!(%error, "queueing approval warnings failed");
            failures.push(format!("queueing approval warnings failed: {error}"));
        }
    }
    match failures.is_empty() {
        true => Ok(done),
        // Each step runs whatever the others did, so every failure is reported together.
        false => Err(anyhow::anyhow!(failures.join("; "))),
    }
}

/// Ingestion on a timer inside `serve`, through the same `run::run` as `burnrate ingest`,
/// until the task is dropped; nothing when the interval is `off`. Budgets and enforcement
/// are evaluated after every successful run ([`after_ingestion`]). Missing credentials do
/// not stop the server: the log and the Ingestion page say what to do.
pub async fn ingest_on_schedule(pool: PgPool, settings: IngestSettings, status: SharedStatus, workers: Workers) {
    let Some(interval) = settings.interval else {
        return;
    };
    let every = schedule::humanize(interval);
    let cost_explorer = CostExplorer::from_environment().await;
    loop {
        if let Some(problem) = cost_explorer.credentials_problem().await {
            tracing::warn!("scheduled ingestion skipped: {problem}");
            schedule::set(
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
                    schedule::set(
                        &status,
                        false,
                        format!("Ingestion runs every {every}. Last run: {report}."),
                    );
                    let today = chrono::Utc::now().date_naive();
                    // Failures are logged inside; the next run evaluates again.
                    let _ = after_ingestion(&pool, &workers, today).await;
                    // After the alerts, which must not wait on it. A failure is recorded for
                    // the Savings page, and tried again after a later run.
                    refresh_commitments(&pool, &cost_explorer, &settings).await;
                }
                Ok(Outcome::AlreadyRunning) => {
                    tracing::info!("scheduled ingestion skipped: another ingestion is running");
                }
                Err(error) => {
                    schedule::set(
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

/// Reads owned commitments when due (`BURNRATE_COMMITMENTS=on`), or forgets any read
/// (`off`, so nothing owned is subtracted). Failures are logged and recorded.
pub async fn refresh_commitments(pool: &PgPool, cost_explorer: &CostExplorer, settings: &IngestSettings) {
    if !settings.read_commitments {
        if let Err(error) = crate::savings::commitments::store::clear(pool).await {
            tracing::warn!(%error, "the stored commitments could not be cleared");
        }
        return;
    }
    match crate::ingestion::commitments::refresh(pool, cost_explorer, chrono::Utc::now(), Backoff::default()).await {
        Ok(refresh) => tracing::info!("{refresh}"),
        Err(error) => tracing::warn!(%error, "owned commitments could not be stored"),
    }
}

/// The weekly savings digest inside `serve`: looked at hourly; on Mondays (UTC) the teams
/// without this week's digest get one, and the alert sender is woken to send it.
pub async fn digest_on_schedule(pool: PgPool, savings: crate::config::SavingsSettings, workers: Workers) {
    use crate::savings::{digest, insights, service::WINDOW_DAYS};
    use chrono::Datelike;
    if !savings.weekly_digest {
        return;
    }
    // Teams with nothing open get no digest, so they stay "waiting": one pass a Monday is
    // enough (a restart passes again, and finds the digests already queued).
    let mut passed_on = None;
    loop {
        let now = chrono::Utc::now();
        let today = now.date_naive();
        if today.weekday() == chrono::Weekday::Mon && passed_on != Some(today) {
            let queued = match digest::teams_waiting(&pool, digest::week_start(today)).await {
                Ok(false) => Ok(0),
                Ok(true) => match insights::compute(&pool, WINDOW_DAYS, (&savings).into(), now).await {
                    Ok(found) => digest::queue_due(&pool, &found, today, workers.public_url.as_deref()).await,
                    Err(error) => Err(error),
                },
                Err(error) => Err(error),
            };
            match queued {
                Ok(0) => passed_on = Some(today),
                Ok(count) => {
                    passed_on = Some(today);
                    tracing::info!(digests = count, "weekly savings digests queued");
                    workers.alerts.wake();
                }
                // The next hour tries again; each team gets one digest a week whatever happens.
                Err(error) => tracing::error!(%error, "queueing the weekly savings digest failed"),
            }
        }
        tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
    }
}

/// The Savings page's recommendations kept ready inside `serve`: every minute, when the data
/// (or the day, or the utilisation bucket) moved since the last set, a new one is computed in
/// the background, so the page and the API answer from a complete set and none waits for it.
pub async fn savings_on_schedule(
    pool: PgPool,
    cache: crate::page_data::PageDataCache,
    config: std::sync::Arc<crate::config::Config>,
) {
    loop {
        if let Err(error) = crate::savings::service::refresh_insights(&pool, &cache, &config).await {
            tracing::warn!(%error, "reading the data version for the savings recommendations failed; tried again in a minute");
        }
        tokio::time::sleep(std::time::Duration::from_secs(60)).await;
    }
}

/// Idle GPU alerts inside `serve`, every five minutes while a utilisation source is
/// configured: resources idle past `BURNRATE_IDLE_ALERT_HOURS` get one email per stretch,
/// and the alert sender is woken to send it. The read shares the Savings page's cache, so a
/// pass costs no extra Prometheus or CloudWatch reads.
pub async fn idle_alerts_on_schedule(
    pool: PgPool,
    cache: crate::page_data::PageDataCache,
    config: std::sync::Arc<crate::config::Config>,
    workers: Workers,
) {
    use crate::savings::{idle_alerts, service};
    let savings = &config.savings;
    if savings.prometheus.is_none() && savings.cloudwatch.is_none() {
        return;
    }
    loop {
        let now = chrono::Utc::now();
        // Only a set of the current data and utilisation: an older one could alert on a
        // resource that has since restarted. The next pass finds the newer set.
        let queued = match service::latest_insights(&pool, &cache, &config, now).await {
            Ok(found) if found.current => idle_alerts::queue_due(
                &pool,
                &found.value.idle_now,
                now,
                savings.idle_alert_hours,
                workers.public_url.as_deref(),
            )
            .await
            .map_err(service::InsightsError::from),
            Ok(_) => Ok(0),
            Err(error) => Err(error),
        };
        match queued {
            Ok(0) => {}
            Ok(count) => {
                tracing::info!(alerts = count, "idle GPU alerts queued");
                workers.alerts.wake();
            }
            // The next pass tries again; each stretch gets one email whatever happens.
            Err(error) => tracing::error!(%error, "queueing idle GPU alerts failed"),
        }
        tokio::time::sleep(std::time::Duration::from_secs(300)).await;
    }
}
