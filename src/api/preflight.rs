//! `POST /api/v1/preflight`: seed 003's `check_budget_available()` for launchers and CI.

use axum::extract::State;
use axum::{Extension, Json};
use sqlx::PgPool;

use super::problem::Body;
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
        super::responses::WithBody,
        super::responses::EveryCall,
        (status = 403, response = super::responses::Forbidden),
    )
)]
pub async fn check(
    State(pool): State<PgPool>,
    Extension(api): Extension<ApiCaller>,
    Body(request): Body<PreflightRequest>,
) -> Result<Json<PreflightAnswer>, Problem> {
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
