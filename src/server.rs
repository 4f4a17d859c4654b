//! The HTTP server: shared state, routes, health checks and graceful shutdown.

use std::sync::Arc;

use axum::extract::{FromRef, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use leptos::prelude::*;
use leptos_axum::{LeptosRoutes, generate_route_list};
use sqlx::PgPool;
use tower_http::compression::CompressionLayer;
use tower_http::timeout::TimeoutLayer;

use crate::app::{App, shell};
use crate::config::Config;

/// Everything a request handler or server function needs.
#[derive(Clone, FromRef)]
pub struct AppState {
    /// Behind an `Arc`: the state is cloned for every middleware of every request, and the
    /// options' strings made that a few percent of a page view's CPU.
    #[from_ref(skip)]
    pub leptos_options: Arc<LeptosOptions>,
    pub pool: PgPool,
    pub config: Arc<Config>,
    pub ingest_status: crate::ingestion::schedule::SharedStatus,
    /// Computed page data per data version (see `page_data`).
    pub page_data: crate::page_data::PageDataCache,
    /// Rendered dashboard pages per caller, URL, day and data version (see `page_cache`).
    pub pages: crate::page_cache::PageCache,
    /// Behind an `Arc`, as the next one: they hold SMTP settings and strings, and the state
    /// and each server function's context are cloned per request.
    pub alerts: Arc<crate::outbox::AlertSender>,
    /// Runs enforcement actions (SMTP from `alerts`, AWS from the standard chain).
    pub enforcement: Arc<crate::enforcement::executor::Executor>,
    /// The first-run setup token, when setup needs one (`auth::setup_token`).
    pub setup_token: crate::auth::setup_token::SetupToken,
}

impl AppState {
    pub fn new(config: Config, pool: PgPool) -> AppState {
        let leptos_options = LeptosOptions::builder()
            .output_name("burnrate")
            .site_root(config.site_root.to_string_lossy().to_string())
            .site_pkg_dir("pkg")
            .site_addr(config.addr)
            .build();
        let workers = crate::jobs::Workers::from_config(&config);
        AppState {
            leptos_options: Arc::new(leptos_options),
            page_data: Default::default(),
            pages: Default::default(),
            enforcement: Arc::new(workers.executor),
            setup_token: Default::default(),
            alerts: Arc::new(workers.alerts),
            ingest_status: Arc::new(std::sync::RwLock::new(crate::ingestion::schedule::initial_status(
                &config.ingest,
            ))),
            pool,
            config: Arc::new(config),
        }
    }

    /// What the schedule's evaluations use: the same sender and runner as the server's.
    pub fn workers(&self) -> crate::jobs::Workers {
        crate::jobs::Workers {
            alerts: crate::outbox::AlertSender::clone(&self.alerts),
            executor: crate::enforcement::executor::Executor::clone(&self.enforcement),
            public_url: self.config.public_url.as_ref().map(|u| u.origin.clone()),
        }
    }

    /// Each piece on its own, so a server function asks for what it uses (`ctx`).
    fn provide_to_server_functions(&self) {
        provide_context(self.pool.clone());
        provide_context(self.config.clone());
        provide_context(self.page_data.clone());
        provide_context(self.alerts.clone());
        provide_context(self.enforcement.clone());
        provide_context(self.ingest_status.clone());
        provide_context(self.setup_token.clone());
    }
}

/// leptos_axum's handlers take the options from the state (the fallback once per request).
impl FromRef<AppState> for LeptosOptions {
    fn from_ref(state: &AppState) -> LeptosOptions {
        LeptosOptions::clone(&state.leptos_options)
    }
}

/// The app's routes, listed once per process. Listing runs the app with resource loading
/// suppressed by a process-wide flag, and a resource first polled meanwhile by a render on
/// another thread waits forever (leptos#4773). The test suites build a router per test
/// while other tests' servers render; listing once, with later callers waiting for it,
/// means no server is rendering while the flag is set.
fn route_list() -> Vec<leptos_axum::AxumRouteListing> {
    static ROUTES: std::sync::OnceLock<Vec<leptos_axum::AxumRouteListing>> = std::sync::OnceLock::new();
    ROUTES.get_or_init(|| generate_route_list(App)).clone()
}

/// All routes: health checks, pages, server functions (`/api/…`) and static files.
pub fn router(state: AppState) -> Router {
    let routes = route_list();
    let context_state = state.clone();
    let provide_state = move || context_state.provide_to_server_functions();
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/api/export.csv", get(crate::costs::download::export_csv))
        .route(
            crate::ui::links::SAVINGS_CSV,
            get(crate::savings::download::savings_csv),
        )
        .route(
            crate::ui::links::SAVINGS_REPORT_CSV,
            get(crate::savings::download::savings_report),
        )
        .route(
            crate::ui::links::SAVINGS_REPORT_HTML,
            get(crate::savings::download::savings_report),
        )
        .route("/api/statement", get(crate::statements::download::statement))
        // Prometheus, with its own bearer token (404 without BURNRATE_METRICS_TOKEN).
        .route("/metrics", get(crate::metrics::behind_token))
        // The API for code: API tokens only (its own guard), problem+json errors.
        .nest(
            "/api/v1",
            crate::api::routes().layer(axum::middleware::from_fn_with_state(
                state.clone(),
                crate::api::require_token,
            )),
        )
        .route(
            crate::ui::links::ACTION_TRAIL_CSV,
            get(crate::enforcement::download::audit_csv),
        )
        .leptos_routes_with_context(&state, routes, provide_state.clone(), {
            let options = state.leptos_options.clone();
            move || shell(LeptosOptions::clone(&options))
        })
        .fallback(leptos_axum::file_and_error_handler_with_context::<AppState, _>(
            provide_state,
            shell,
        ))
        // Inside the guard: only signed-in callers reach the cache, and the key names them.
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::page_cache::serve_cached,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::auth::middleware::guard,
        ))
        // Every request timed by its matched route (`metrics::http`).
        .layer(axum::middleware::from_fn(crate::metrics::http::record))
        // The file handler serves the wasm bundle uncompressed; compress everything here. Level
        // 2: brotli's default is 11, which costs tens of milliseconds per page of HTML (and
        // seconds for the wasm) on every response. At 2 brotli is still smaller than gzip's
        // default and faster than gzip's fastest level; with pages served from the page cache,
        // compression is most of what a page view costs (docs/PERFORMANCE.md).
        .layer(CompressionLayer::new().quality(tower_http::CompressionLevel::Precise(2)))
        // A request that has not produced its response within BURNRATE_REQUEST_TIMEOUT gets
        // 408 and frees its connection and database work.
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            state.config.timeouts.request,
        ))
        .with_state(state)
}

/// Liveness: the process is up and answering.
async fn healthz() -> &'static str {
    "ok"
}

/// Readiness: the database answers and every migration is applied.
async fn readyz(State(pool): State<PgPool>) -> impl IntoResponse {
    match crate::db::migrations_applied(&pool).await {
        Ok(true) => (StatusCode::OK, Json(serde_json::json!({"status": "ready"}))),
        Ok(false) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(serde_json::json!({"status": "not ready", "reason": "migrations pending"})),
        ),
        Err(err) => {
            tracing::warn!(error = %err, "readiness check failed");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(serde_json::json!({"status": "not ready", "reason": "database unreachable"})),
            )
        }
    }
}

/// Serves `state` on `listener` until SIGINT or SIGTERM (see [`serve_until`]).
pub async fn serve(listener: tokio::net::TcpListener, state: AppState) -> std::io::Result<()> {
    serve_until(listener, state, shutdown_signal()).await
}

/// Serves `state` on `listener`, with each client's address, until `shutdown` resolves;
/// then finishes in-flight requests for at most BURNRATE_SHUTDOWN_TIMEOUT and cuts the rest,
/// so a stuck client cannot keep the process (and the private cluster) alive. `burnrate
/// serve` and the HTTP tests both run this.
pub async fn serve_until(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    // The configured address decides: `--addr 0.0.0.0:3000` is reachable from the network.
    match state.setup_token.arm(&state.pool, state.config.addr).await {
        Ok(Some(token)) => println!("{}", crate::auth::setup_token::banner(state.config.addr, &token)),
        Ok(None) => {}
        Err(error) => {
            // Fail closed: with the database unknown, setup still needs the token.
            tracing::warn!(%error, "could not tell whether setup is needed; setup requires a token");
            let token = state.setup_token.arm_anyway();
            println!("{}", crate::auth::setup_token::banner(state.config.addr, &token));
        }
    }
    let drain = state.config.timeouts.shutdown;
    let (signalled, drain_started) = tokio::sync::oneshot::channel::<()>();
    let server = axum::serve(
        listener,
        router(state).into_make_service_with_connect_info::<std::net::SocketAddr>(),
    )
    .with_graceful_shutdown(async move {
        shutdown.await;
        let _ = signalled.send(());
    });
    let deadline = async move {
        match drain_started.await {
            Ok(()) => tokio::time::sleep(drain).await,
            // The server ended on its own: nothing to wait for.
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        served = std::future::IntoFuture::into_future(server) => served,
        () = deadline => {
            tracing::warn!(deadline = ?drain, "requests still open after the shutdown deadline are cut");
            Ok(())
        }
    }
}

async fn shutdown_signal() {
    let interrupt = async {
        if let Err(err) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %err, "cannot listen for SIGINT");
            std::future::pending::<()>().await;
        }
    };
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(err) => {
                tracing::error!(error = %err, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::select! {
        () = interrupt => {},
        () = terminate => {},
    }
    tracing::info!("shutting down: finishing in-flight requests");
}
