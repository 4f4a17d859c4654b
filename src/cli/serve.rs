//! `burnrate serve`, `migrate` and `demo`: the server with its background jobs, and the database set-up.

use anyhow::Context;

use crate::config::Config;
use crate::db::Database;
use crate::demo::{self, DemoOptions};
use crate::period::days_before;
use crate::server::{self, AppState};

pub(super) async fn serve(config: Config, demo: bool) -> anyhow::Result<()> {
    // Bind first: a taken port should fail before a database cluster is started.
    let listener = tokio::net::TcpListener::bind(config.addr)
        .await
        .with_context(|| format!("cannot listen on {}", config.addr))?;
    let db = Database::open(&config).await?;
    let state = AppState::new(config, db.pool.clone());
    let result = async {
        if demo {
            let yesterday = days_before(chrono::Utc::now().date_naive(), 1);
            let loaded = if demo::database_is_empty(&db.pool).await? {
                let options = DemoOptions {
                    scale: 1,
                    until: yesterday,
                };
                demo::load(&db.pool, options).await.context("loading the demo")?;
                Some(true)
            } else if demo::holds_only_demo_data(&db.pool).await? {
                // A demo started again days later restates its Estimated days, as ingestion would.
                let restated = demo::refresh(&db.pool, yesterday)
                    .await
                    .context("bringing the demo up to date")?;
                restated.map(|_| false)
            } else {
                None
            };
            if let Some(fresh) = loaded {
                evaluate_demo(&db.pool, &state.workers(), yesterday, fresh).await;
            }
            if let Some(created) = demo::accounts::create_if_none(&db.pool).await? {
                println!("{}", demo::accounts::credentials_banner(&created));
            }
        }
        // A newer GPU catalogue may know usage types an older one did not.
        let reread = crate::allocation::facts::reread_usage_types(&db.pool)
            .await
            .context("reading usage types with this build's GPU catalogue")?;
        if reread > 0 {
            tracing::info!(usage_types = reread, "usage types read again with the GPU catalogue");
        }
        fill_derived(&db.pool).await?;
        // `/metrics` on an address of its own, when one is set.
        let metrics = match state.config.metrics.addr {
            None => None,
            Some(addr) => {
                let listener = tokio::net::TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("listening for /metrics on {addr} (BURNRATE_METRICS_ADDR)"))?;
                tracing::info!("metrics are served on http://{}/metrics", listener.local_addr()?);
                let app = crate::metrics::own_listener(
                    db.pool.clone(),
                    state.page_data.clone(),
                    state.config.timeouts.request,
                );
                Some(tokio::spawn(async move { axum::serve(listener, app).await }))
            }
        };
        let addr = listener.local_addr()?;
        tracing::info!("burnrate is serving on http://{addr}");
        // A demo with no AWS settings has nothing to ingest from: say how to connect, once.
        let mut ingest = state.config.ingest.clone();
        if demo && ingest.interval.is_some() && !crate::aws::settings_present() {
            ingest.interval = None;
            let how = "set AWS credentials (AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or an \
                       instance role) and run `burnrate ingest`, or `burnrate serve` without --demo";
            tracing::info!("demo without AWS settings: scheduled ingestion is off; to load your own costs, {how}");
            crate::ingestion::schedule::set(
                &state.ingest_status,
                false,
                format!("Demo without AWS settings: scheduled ingestion is off. To load your own costs, {how}."),
            );
        }
        let schedule = tokio::spawn(crate::jobs::ingest_on_schedule(
            db.pool.clone(),
            ingest,
            state.ingest_status.clone(),
            state.workers(),
        ));
        // Alerts queued while SMTP was down go out within a minute of its return.
        let alerts = tokio::spawn(
            crate::outbox::AlertSender::clone(&state.alerts)
                .run_forever(db.pool.clone(), std::time::Duration::from_secs(60)),
        );
        // Stops AWS is executing are followed every minute; disarms reach AWS when woken.
        let enforcement = tokio::spawn(crate::enforcement::reconcile::run_forever(
            db.pool.clone(),
            crate::enforcement::executor::Executor::clone(&state.enforcement),
            std::time::Duration::from_secs(60),
        ));
        // What proposed stops would touch, listed apart from the pass. A demo without AWS
        // settings has nothing to list from: its proposals carry a seeded listing.
        let lister = (!demo || crate::aws::settings_present()).then(|| {
            tokio::spawn(crate::enforcement::resources::listing::list_forever(
                db.pool.clone(),
                crate::enforcement::executor::Executor::clone(&state.enforcement),
                std::time::Duration::from_secs(60),
            ))
        });
        let digest = tokio::spawn(crate::jobs::digest_on_schedule(
            db.pool.clone(),
            state.config.savings.clone(),
            state.workers(),
        ));
        let idle = tokio::spawn(crate::jobs::idle_alerts_on_schedule(
            db.pool.clone(),
            state.page_data.clone(),
            state.config.clone(),
            state.workers(),
        ));
        let savings = tokio::spawn(crate::jobs::savings_on_schedule(
            db.pool.clone(),
            state.page_data.clone(),
            state.config.clone(),
        ));
        let served = server::serve(listener, state).await.context("serving");
        savings.abort();
        if let Some(metrics) = metrics {
            metrics.abort();
        }
        idle.abort();
        digest.abort();
        schedule.abort();
        alerts.abort();
        enforcement.abort();
        if let Some(lister) = lister {
            lister.abort();
        }
        served
    }
    .await;
    db.close().await;
    result
}

/// Allocates the days the allocation lacks or holds without accounts (after an upgrade),
/// with their page rollups, in one transaction with no statement bound; nothing to do costs
/// a few index probes. Readers see the old allocation until it commits.
pub(super) async fn fill_derived(pool: &sqlx::PgPool) -> anyhow::Result<()> {
    if crate::allocation::store::fill_gaps_in_transaction(pool)
        .await
        .context("allocating stored spend to teams")?
    {
        tracing::info!("stored spend allocated to teams and rolled up for the pages");
    }
    Ok(())
}

pub(super) async fn migrate(config: Config) -> anyhow::Result<()> {
    let db = Database::open_for_batch(&config).await?;
    let filled = fill_derived(&db.pool).await;
    db.close().await;
    filled?;
    tracing::info!("migrations are up to date");
    Ok(())
}

pub(super) async fn load_demo(config: Config, options: DemoOptions, replace: bool) -> anyhow::Result<()> {
    let db = Database::open_for_batch(&config).await?;
    let workers = crate::jobs::Workers::from_config(&config);
    let result = async {
        if !replace && !demo::database_is_empty(&db.pool).await? {
            if !demo::holds_only_demo_data(&db.pool).await? {
                anyhow::bail!("the database already holds cost data; pass --replace to overwrite it with the demo");
            }
            match demo::refresh(&db.pool, options.until).await? {
                Some(window) => {
                    println!(
                        "demo brought up to date: {} to {} written again (Estimated days restated)",
                        window.from,
                        window.last_day()
                    );
                    evaluate_demo(&db.pool, &workers, options.until, false).await;
                }
                None => println!("the demo is already up to date through {}", options.until),
            }
            return Ok(());
        }
        let summary = demo::load(&db.pool, options).await?;
        println!(
            "demo loaded: {} teams, {} projects, {} users, {} cost rows, {} to {}",
            summary.teams, summary.projects, summary.users, summary.rows, summary.from, summary.until
        );
        evaluate_demo(&db.pool, &workers, options.until, true).await;
        Ok(())
    }
    .await;
    db.close().await;
    result
}

/// Budgets and enforcement evaluated on demo data just written, as after an ingestion, so
/// the first visit finds alerts, violations and flags; a fresh load first records last
/// month's alerts as sent. `until` is the demo's last day. A failure is logged and the
/// demo served anyway: the next ingestion or `budgets evaluate` evaluates again.
async fn evaluate_demo(pool: &sqlx::PgPool, workers: &crate::jobs::Workers, until: chrono::NaiveDate, fresh: bool) {
    if fresh && let Err(error) = demo::history::sent_alerts(pool, until, workers.public_url.as_deref()).await {
        tracing::error!(%error, "recording the demo's alert history failed");
    }
    match crate::jobs::after_ingestion(pool, workers, crate::period::next_day(until)).await {
        Ok(done) => tracing::info!("demo evaluated: {done}"),
        Err(error) => tracing::error!(%error, "evaluating the demo failed"),
    }
    // What its dry-run stops would touch, as discovery would list it.
    if let Err(error) = demo::stop_listing::record(pool).await {
        tracing::error!(%error, "listing the demo's proposed stops failed");
    }
}
