//! `/api/v1/savings`: the recommendations as the Savings page ranks them, with their decisions,
//! and the decisions themselves. Admins decide any recommendation, leads their teams' ones;
//! a token limited to one team reads and decides that team's only.

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::{Extension, Json};
use http::StatusCode;
use serde::Deserialize;
use sqlx::PgPool;

use super::problem::Body;
use super::{ApiCaller, Problem};
use crate::config::Config;
use crate::error::AppError;
use crate::page_data::PageDataCache;
use crate::savings::model::{Decision, Kind, Opportunity};
use crate::savings::service;

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RecommendationsQuery {
    /// One team's recommendations (a one-team token: its own, whether named or not).
    pub team: Option<String>,
    /// One kind: spot, rightsize, always_on, commitment, idle_gpu, underused or idle_endpoint.
    pub kind: Option<String>,
}

/// Every open, accepted or dismissed recommendation, largest monthly saving first. Each row's
/// `compounded_saving` is what totals add: a project's sum never passes its spend.
#[utoipa::path(
    get,
    path = "/api/v1/savings/recommendations",
    operation_id = "listRecommendations",
    tag = "savings",
    params(RecommendationsQuery),
    responses(
        (status = 200, description = "The recommendations", body = Vec<Opportunity>),
        (status = 400, response = super::responses::Invalid),
        super::responses::EveryCall,
        (status = 403, response = super::responses::Forbidden),
    )
)]
pub async fn recommendations(
    State(pool): State<PgPool>,
    State(config): State<Arc<Config>>,
    State(cache): State<PageDataCache>,
    Extension(api): Extension<ApiCaller>,
    query: Result<Query<RecommendationsQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Vec<Opportunity>>, Problem> {
    let Query(query) = query.map_err(|rejection| Problem::invalid("query", rejection.body_text()))?;
    let kind = Kind::filter(query.kind.as_deref()).map_err(|m| Problem::invalid("kind", m))?;
    let team = match (api.only_team, query.team.filter(|t| !t.trim().is_empty())) {
        (None, team) => team,
        (Some(id), asked) => {
            let own: Option<String> = sqlx::query_scalar("select name from teams where id = $1")
                .bind(id)
                .fetch_optional(&pool)
                .await?;
            if asked.is_some() && asked != own {
                return Err(Problem::new(
                    StatusCode::FORBIDDEN,
                    "this token is limited to another team",
                ));
            }
            Some(own.unwrap_or_default())
        }
    };
    let insights = service::cached_insights(&pool, &cache, &config, chrono::Utc::now())
        .await
        .map_err(AppError::from)?;
    let filters = service::Filters {
        team: team.as_deref(),
        kind,
        account: None,
    };
    Ok(Json(
        service::opportunities(&pool, &insights, &api.caller, &filters).await?,
    ))
}

/// A decision on one recommendation.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SavingsDecisionBody {
    /// The recommendation's `key`, as `GET /api/v1/savings/recommendations` gives it.
    pub key: String,
    /// `accepted`, `dismissed`, or `open` to take a decision back.
    pub decision: Decision,
    /// Why, 1 to 2,000 characters; kept in the ledger and the audit log.
    #[schema(min_length = 1, max_length = 2000)]
    pub reason: String,
}

/// Accepts or dismisses a recommendation, or takes the decision back (admins; leads for
/// their teams' recommendations).
#[utoipa::path(
    post,
    path = "/api/v1/savings/decisions",
    operation_id = "decideRecommendation",
    tag = "savings",
    request_body = SavingsDecisionBody,
    responses(
        (status = 204, description = "Recorded"),
        super::responses::WithBody,
        super::responses::EveryCall,
        (status = 403, response = super::responses::Forbidden),
        (status = 404, response = super::responses::NotFound),
    )
)]
pub async fn decide(
    State(pool): State<PgPool>,
    State(config): State<Arc<Config>>,
    State(cache): State<PageDataCache>,
    Extension(api): Extension<ApiCaller>,
    Body(request): Body<SavingsDecisionBody>,
) -> Result<StatusCode, Problem> {
    let reason = request.reason.trim();
    if reason.is_empty() || reason.chars().count() > 2000 {
        return Err(Problem::invalid("reason", "say why, in at most 2,000 characters"));
    }
    let insights = service::cached_insights(&pool, &cache, &config, chrono::Utc::now())
        .await
        .map_err(AppError::from)?;
    let today = chrono::Utc::now().date_naive();
    service::decide(
        &pool,
        &insights,
        &api.caller,
        &request.key,
        (request.decision, reason),
        today,
    )
    .await?;
    Ok(StatusCode::NO_CONTENT)
}
