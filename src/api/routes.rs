//! The `/api/v1` routes, wired to their handlers (one file per resource beside this one).

use axum::Router;
use axum::extract::FromRef;
use axum::routing::{get, post, put};
use http::StatusCode;
use sqlx::PgPool;

use super::Problem;

pub fn routes<S>() -> Router<S>
where
    S: Clone + Send + Sync + 'static,
    PgPool: FromRef<S>,
    std::sync::Arc<crate::config::Config>: FromRef<S>,
    crate::page_data::PageDataCache: FromRef<S>,
    std::sync::Arc<crate::enforcement::executor::Executor>: FromRef<S>,
{
    Router::new()
        .route("/teams", get(super::teams::list))
        .route("/costs", get(super::costs::list))
        .route("/budgets", get(super::budgets::list).post(super::budget_writes::create))
        .route("/budgets/{id}", put(super::budget_writes::update))
        .route("/approvals", get(super::approvals::list))
        .route(
            "/approvals/requests",
            get(super::approvals::requests_list).post(super::approvals::request),
        )
        .route("/approvals/requests/{id}/decision", post(super::approvals::decide))
        .route("/enforcement/violations", get(super::enforcement::violations))
        .route("/savings/recommendations", get(super::savings::recommendations))
        .route("/savings/decisions", post(super::savings::decide))
        .route("/preflight", post(super::preflight::check))
        .route("/openapi.json", get(super::openapi::document))
        .fallback(|| async { Problem::new(StatusCode::NOT_FOUND, "no such API route") })
}
