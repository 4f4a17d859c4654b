//! `POST /api/v1/budgets` and `PUT /api/v1/budgets/{id}`: a budget made or changed from code,
//! checked as the form checks it (every field's problem named) and by the same rule: admins
//! any budget, leads those of their teams and their projects, viewers none. A one-team token
//! reaches that team's budgets only.

use axum::extract::{Path, State};
use axum::{Extension, Json};
use http::StatusCode;
use serde::Deserialize;
use sqlx::PgPool;

use super::budgets::BudgetNow;
use super::problem::Body;
use super::{ApiCaller, Problem};
use crate::budgets::spec::{BudgetInput, ThresholdInput, validate};
use crate::error::AppError;

/// What a budget covers.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScopeBody {
    /// `org`, `team`, `project` or `account`.
    #[schema(pattern = "^(org|team|project|account)$")]
    pub kind: String,
    /// The team or project name, or the 12-digit account ID; absent for the org.
    #[serde(default)]
    pub name: String,
}

/// A threshold: a percentage of the amount, of actual spend or of the forecast.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ThresholdBody {
    /// Of the amount, as a decimal string ("80", "150").
    #[schema(example = "80", pattern = r"^[0-9]{1,4}(\.[0-9]{1,2})?$")]
    pub percent: String,
    /// `actual` (default) or `forecasted`.
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    /// Told of this threshold only, besides the budget's recipients.
    #[serde(default)]
    pub recipients: Vec<String>,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BudgetBody {
    pub name: String,
    pub scope: ScopeBody,
    /// `monthly`, `quarterly` or `annual`.
    #[schema(pattern = "^(monthly|quarterly|annual)$")]
    pub period: String,
    /// USD, as a decimal string.
    #[schema(example = "25000", pattern = r"^[0-9]{1,13}(\.[0-9]{1,2})?$")]
    pub amount: String,
    /// `unblended` (default) or `amortized`.
    #[serde(default)]
    #[schema(pattern = "^(unblended|amortized)$")]
    pub metric: Option<String>,
    /// `net` (default) or `gross`.
    #[serde(default)]
    #[schema(pattern = "^(net|gross)$")]
    pub credits: Option<String>,
    /// At most 10; 50, 80 and 100 % of actual spend when absent.
    #[serde(default)]
    pub thresholds: Option<Vec<ThresholdBody>>,
    /// Told of every threshold, besides the scope's team owners; at most 50.
    #[serde(default)]
    pub recipients: Vec<String>,
}

impl BudgetBody {
    fn input(self) -> BudgetInput {
        let thresholds = match self.thresholds {
            None => ["50", "80", "100"]
                .into_iter()
                .map(|percent| ThresholdInput {
                    percent: percent.into(),
                    ..ThresholdInput::default()
                })
                .collect(),
            Some(thresholds) => thresholds
                .into_iter()
                .map(|t| ThresholdInput {
                    percent: t.percent,
                    kind: t.kind.unwrap_or_default(),
                    recipients: t.recipients,
                })
                .collect(),
        };
        BudgetInput {
            name: self.name,
            scope_kind: self.scope.kind,
            scope_name: self.scope.name,
            period: self.period,
            amount: self.amount,
            metric: self.metric.unwrap_or_default(),
            credits: self.credits.unwrap_or_default(),
            thresholds,
            recipients: self.recipients,
        }
    }
}

/// Makes a budget.
#[utoipa::path(
    post,
    path = "/api/v1/budgets",
    operation_id = "createBudget",
    tag = "budgets",
    request_body = BudgetBody,
    responses(
        (status = 201, description = "Made; the body is the budget in its current period", body = BudgetNow),
        super::responses::WithBody,
        super::responses::EveryCall,
        (status = 403, response = super::responses::Forbidden),
    )
)]
pub async fn create(
    State(pool): State<PgPool>,
    Extension(api): Extension<ApiCaller>,
    Body(body): Body<BudgetBody>,
) -> Result<(StatusCode, Json<BudgetNow>), Problem> {
    let saved = save(&pool, &api, None, body).await?;
    Ok((StatusCode::CREATED, Json(saved)))
}

/// Changes a budget: every field as on creation (the whole budget, not a patch).
#[utoipa::path(
    put,
    path = "/api/v1/budgets/{id}",
    operation_id = "updateBudget",
    tag = "budgets",
    params(("id" = i64, Path, description = "The budget's id")),
    request_body = BudgetBody,
    responses(
        (status = 200, description = "Changed; the body is the budget in its current period", body = BudgetNow),
        super::responses::WithBody,
        super::responses::EveryCall,
        (status = 403, response = super::responses::Forbidden),
        (status = 404, response = super::responses::NotFound),
    )
)]
pub async fn update(
    State(pool): State<PgPool>,
    Extension(api): Extension<ApiCaller>,
    id: Result<Path<i64>, axum::extract::rejection::PathRejection>,
    body: Result<Body<BudgetBody>, Problem>,
) -> Result<Json<BudgetNow>, Problem> {
    // An id that is no budget's answers 404 whatever the body holds.
    let Path(id) = id.map_err(|_| Problem::new(StatusCode::NOT_FOUND, "no such budget"))?;
    let Body(body) = body?;
    Ok(Json(save(&pool, &api, Some(id), body).await?))
}

async fn save(pool: &PgPool, api: &ApiCaller, id: Option<i64>, body: BudgetBody) -> Result<BudgetNow, AppError> {
    let spec = validate(&body.input()).map_err(AppError::InvalidFields)?;
    let id = crate::budgets::access::save(pool, &api.caller, id, &spec).await?;
    let mut conn = pool.acquire().await?;
    let budget = crate::budgets::store::get(&mut conn, id)
        .await?
        .ok_or_else(|| AppError::NotFound("no such budget".into()))?;
    Ok(super::budgets::now(&mut conn, &budget, chrono::Utc::now().date_naive()).await?)
}
