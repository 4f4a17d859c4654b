//! `GET /api/v1/teams`: every team with its owners.

use axum::extract::State;
use axum::{Extension, Json};
use serde::Serialize;
use sqlx::PgPool;

use super::{ApiCaller, Problem};

#[derive(Serialize, utoipa::ToSchema)]
pub struct Team {
    id: i64,
    name: String,
    owners: Vec<String>,
}

/// Every team with its owners (a token limited to one team: that one).
#[utoipa::path(
    get,
    path = "/api/v1/teams",
    operation_id = "listTeams",
    tag = "teams",
    responses(
        (status = 200, description = "The teams", body = Vec<Team>),
        super::responses::EveryCall,
    )
)]
pub async fn list(
    State(pool): State<PgPool>,
    Extension(api): Extension<ApiCaller>,
) -> Result<Json<Vec<Team>>, Problem> {
    let rows: Vec<(i64, String, Vec<String>)> = sqlx::query_as(
        "select t.id, t.name, array(select o.email from team_owners o where o.team_id = t.id order by 1)
         from teams t where $1::bigint is null or t.id = $1 order by t.name",
    )
    .bind(api.only_team)
    .fetch_all(&pool)
    .await?;
    Ok(Json(
        rows.into_iter()
            .map(|(id, name, owners)| Team { id, name, owners })
            .collect(),
    ))
}
