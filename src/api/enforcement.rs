//! `GET /api/v1/enforcement/violations`: each recorded violation with its actions, their
//! states and, for a stop, every resource it found or acted on, as the Enforcement page shows
//! them. A token limited to one team reads that team's projects' violations only.

use axum::extract::State;
use axum::{Extension, Json};
use sqlx::PgPool;

use super::{ApiCaller, Problem};
use crate::enforcement::model::ViolationRow;

/// The violations of the last 400 days (at most 1,000), newest period first.
#[utoipa::path(
    get,
    path = "/api/v1/enforcement/violations",
    operation_id = "listViolations",
    tag = "enforcement",
    responses(
        (status = 200, description = "Violations with their actions and resources", body = Vec<ViolationRow>),
        super::responses::EveryCall,
    )
)]
pub async fn violations(
    State(pool): State<PgPool>,
    Extension(api): Extension<ApiCaller>,
) -> Result<Json<Vec<ViolationRow>>, Problem> {
    Ok(Json(
        crate::enforcement::store::recorded(&pool, &api.caller, api.only_team).await?,
    ))
}
