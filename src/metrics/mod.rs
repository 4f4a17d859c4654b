//! `/metrics` for Prometheus: spend, forecasts and budgets per team, projects near their
//! policy limit (from PostgreSQL once per data version and UTC day), ingestion, the email
//! outbox, enforcement actions (at each scrape) and HTTP latency (kept in this process). It answers on its own listener
//! (`BURNRATE_METRICS_ADDR`, no token: the address is the boundary) and, with
//! `BURNRATE_METRICS_TOKEN` set, on the dashboard's address to that bearer token alone. API
//! tokens and sessions open nothing here.

pub mod gauges;
pub mod http;
pub mod text;

use std::sync::Arc;

use ::http::header::{AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE};
use ::http::{HeaderMap, StatusCode};
use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use sqlx::PgPool;

use crate::config::Config;
use crate::page_data::{PageDataCache, Wait};

/// The exposition format's media type (text format 0.0.4).
const CONTENT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// How long a scrape may wait while there are no figures yet (after a start): Prometheus's
/// default scrape timeout is 10 s.
const FIRST_WAIT: std::time::Duration = std::time::Duration::from_secs(8);

/// Why a scrape has no answer: a 503, so Prometheus's `up` says so.
#[derive(Debug, thiserror::Error)]
pub enum ScrapeError {
    #[error(transparent)]
    Database(#[from] sqlx::Error),
    /// No complete figures yet: the first computation is still running, or failed (logged).
    #[error("the spend, budget and policy figures are not computed yet, or their computation failed (see the log)")]
    NoFigures,
}

/// One scrape's text. The figures from costs and budgets are computed once per data version
/// and UTC day, in the background (they read every team's month: seconds at 10M facts); a
/// scrape answers at once with the newest complete figures, says whether they are of the
/// current data (`burnrate_metrics_figures_current`, 0 while a newer computation runs or
/// keeps failing) and when they were computed. While there are none yet, a scrape waits up
/// to 8 s for them, then fails. The ingestion, outbox and action counts are read each time.
pub async fn scrape(pool: &PgPool, cache: &PageDataCache) -> Result<String, ScrapeError> {
    let today = chrono::Utc::now().date_naive();
    let pool_for_figures = pool.clone();
    let compute = move || {
        let pool = pool_for_figures.clone();
        async move { Ok::<_, sqlx::Error>(Arc::new(gauges::figures(&pool, today).await?)) }
    };
    let figures = cache
        .latest(pool, "metrics", today.to_string(), Wait::First(FIRST_WAIT), compute)
        .await?
        .ok_or(ScrapeError::NoFigures)?;
    let mut out = text::Exposition::default();
    out.append(&figures.value);
    out.family(
        "burnrate_metrics_figures_current",
        "gauge",
        "1 when the spend, budget and policy figures are of the current data and UTC day; 0 while newer ones are computed (or their computation keeps failing: see the log).",
    );
    out.sample("burnrate_metrics_figures_current", &[], u8::from(figures.current));
    out.family(
        "burnrate_metrics_figures_computed_timestamp_seconds",
        "gauge",
        "When the spend, budget and policy figures were computed (Unix time).",
    );
    out.sample(
        "burnrate_metrics_figures_computed_timestamp_seconds",
        &[],
        figures.computed_at.timestamp(),
    );
    gauges::live(pool, &mut out).await?;
    http::write(&mut out);
    Ok(out.into_text())
}

async fn answer(pool: &PgPool, cache: &PageDataCache) -> Response {
    match scrape(pool, cache).await {
        Ok(body) => ([(CONTENT_TYPE, CONTENT)], body).into_response(),
        Err(error) => {
            tracing::error!(%error, "collecting metrics failed");
            // Prometheus records the failed scrape (`up` is 0); the log says why.
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "collecting metrics failed; see the server log",
            )
                .into_response()
        }
    }
}

/// `GET /metrics` on the dashboard's address: the metrics token, or 401; 404 when no token is
/// configured, as if the route did not exist.
pub async fn behind_token(
    State(pool): State<PgPool>,
    State(config): State<Arc<Config>>,
    State(cache): State<PageDataCache>,
    headers: HeaderMap,
) -> Response {
    let Some(expected) = config.metrics.token_sha256 else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let presented = headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim());
    let matches = presented.is_some_and(|token| {
        use sha2::Digest;
        let digest: [u8; 32] = sha2::Sha256::digest(token.as_bytes()).into();
        // Every byte compared, whatever the first difference: no timing tells how close a guess is.
        digest
            .iter()
            .zip(expected.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    });
    if !matches {
        return (
            StatusCode::UNAUTHORIZED,
            [(WWW_AUTHENTICATE, "Bearer realm=\"burnrate metrics\"")],
            "send BURNRATE_METRICS_TOKEN as `Authorization: Bearer …`",
        )
            .into_response();
    }
    answer(&pool, &cache).await
}

/// The router of `BURNRATE_METRICS_ADDR`: `/metrics` alone, without a token, each request
/// bounded by `request_timeout` (`BURNRATE_REQUEST_TIMEOUT`) as on the dashboard's address.
pub fn own_listener(pool: PgPool, cache: PageDataCache, request_timeout: std::time::Duration) -> Router {
    Router::new()
        .route(
            "/metrics",
            get(|State((pool, cache)): State<(PgPool, PageDataCache)>| async move { answer(&pool, &cache).await }),
        )
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            request_timeout,
        ))
        .with_state((pool, cache))
}
