//! The `/api/v1` routes. Handlers stay thin: check the caller, call the feature, answer JSON.

use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRef, State};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use http::StatusCode;
use serde::Serialize;
use sqlx::PgPool;

use super::{ApiCaller, Problem};
use crate::preflight::{PreflightAnswer, PreflightRequest};

pub fn routes<S>() -> Router<S>
where
    S: Clone + Send + Sync + 'static,
    PgPool: FromRef<S>,
{
    Router::new()
        .route("/teams", get(teams))
        .route("/preflight", post(preflight))
        .fallback(|| async { Problem::new(StatusCode::NOT_FOUND, "no such API route") })
}

/// A body that is not the request's JSON: 400, naming the field where serde does.
fn bad_body(rejection: JsonRejection) -> Problem {
    let text = rejection.body_text();
    let field = text
        .split('`')
        .nth(1)
        .filter(|_| text.contains("field"))
        .unwrap_or("body")
        .to_string();
    Problem::invalid(&field, text)
}

#[derive(Serialize)]
struct Team {
    id: i64,
    name: String,
    owners: Vec<String>,
}

/// `GET /api/v1/teams`: every team with its owners (a token limited to one team: that one).
async fn teams(State(pool): State<PgPool>, Extension(api): Extension<ApiCaller>) -> Result<Json<Vec<Team>>, Problem> {
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

/// `POST /api/v1/preflight`: allow, warn or block, with the figures behind it.
async fn preflight(
    State(pool): State<PgPool>,
    Extension(api): Extension<ApiCaller>,
    body: Result<Json<PreflightRequest>, JsonRejection>,
) -> Result<Json<PreflightAnswer>, Problem> {
    let Json(request) = body.map_err(bad_body)?;
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
