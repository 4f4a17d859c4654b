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
        .route("/budgets", get(super::budgets::list))
        .route("/approvals", get(super::approvals::list))
        .route("/preflight", post(preflight))
        .fallback(|| async { Problem::new(StatusCode::NOT_FOUND, "no such API route") })
}

/// A body that is not the request's JSON: 400 naming the field (413 and 415 stay what they
/// are). axum's text is `…target type: <path>: <serde message>`; a missing or unknown field is
/// named in backticks in the message, under the path of the object that lacks or has it.
fn bad_body(rejection: JsonRejection) -> Problem {
    let status = rejection.status();
    let text = rejection.body_text();
    if status != StatusCode::BAD_REQUEST && status != StatusCode::UNPROCESSABLE_ENTITY {
        return Problem::new(status, text);
    }
    Problem::invalid(&field_of(&text), text)
}

fn field_of(text: &str) -> String {
    let Some((path, message)) = text
        .split_once("target type: ")
        .and_then(|(_, rest)| rest.split_once(": "))
    else {
        return "body".into();
    };
    let path = path.trim().trim_start_matches('.');
    // A missing field is reported at the object that lacks it; any other error at the field.
    let missing = message
        .starts_with("missing field")
        .then(|| message.split('`').nth(1))
        .flatten();
    match (path.is_empty(), missing) {
        (true, Some(name)) => name.to_string(),
        (false, Some(name)) => format!("{path}.{name}"),
        (false, None) => path.to_string(),
        (true, None) => "body".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::field_of;

    #[test]
    fn the_field_is_the_path_and_the_field_serde_names() {
        let t = |s: &str| {
            field_of(&format!(
                "Failed to deserialize the JSON body into the target type: {s}"
            ))
        };
        assert_eq!(t("gpu: missing field `hours` at line 1 column 40"), "gpu.hours");
        assert_eq!(t("budget: unknown field `budget`, expected one of `project`"), "budget");
        assert_eq!(t(".: missing field `project` at line 1 column 2"), "project");
        assert_eq!(
            t("estimated_cost_usd: Invalid decimal: unknown character at line 1 column 9"),
            "estimated_cost_usd"
        );
        assert_eq!(
            t("gpu.count: invalid value: integer `-1`, expected u32 at line 1 column 5"),
            "gpu.count"
        );
        assert_eq!(
            field_of("Failed to parse the request body as JSON: EOF while parsing"),
            "body"
        );
    }
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
