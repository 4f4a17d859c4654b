//! `POST /api/v1/preflight`: seed 003's `check_budget_available()` for launchers and CI.

use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use axum::{Extension, Json};
use sqlx::PgPool;

use super::{ApiCaller, Problem};
use crate::preflight::{PreflightAnswer, PreflightRequest};

/// Allow, warn or block the work described, with the figures behind the verdict.
#[utoipa::path(
    post,
    path = "/api/v1/preflight",
    operation_id = "preflight",
    tag = "preflight",
    request_body = PreflightRequest,
    responses(
        (status = 200, description = "The verdict", body = PreflightAnswer),
        (status = 400, response = super::responses::Invalid),
        (status = 413, response = super::responses::Unreadable),
        (status = 415, response = super::responses::Unreadable),
        (status = 401, response = super::responses::Unauthorized),
        (status = 403, response = super::responses::Forbidden),
        (status = 429, response = super::responses::TooMany),
    )
)]
pub async fn check(
    State(pool): State<PgPool>,
    Extension(api): Extension<ApiCaller>,
    body: Result<Json<PreflightRequest>, JsonRejection>,
) -> Result<Json<PreflightAnswer>, Problem> {
    let Json(request) = body.map_err(super::problem::bad_body)?;
    let today = chrono::Utc::now().date_naive();
    let answer = crate::preflight::check::check(&pool, &request, today, api.only_team).await?;
    tracing::info!(
        caller = %api.caller.email,
        project = request.project.as_deref().unwrap_or(""),
        verdict = answer.verdict.key(),
        "pre-flight check"
    );
    Ok(Json(answer))
}
