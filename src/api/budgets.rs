//! `GET /api/v1/budgets`: every budget in its current period with its spend, forecast and the
//! thresholds crossed, as BI tools and Grafana read them. Amounts are decimal strings.

use axum::Extension;
use axum::Json;
use axum::extract::State;
use chrono::NaiveDate;
use rust_decimal::Decimal;
use serde::Serialize;
use sqlx::PgPool;

use super::{ApiCaller, Problem};
use crate::budgets::{evaluate, store};

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Scope {
    /// `org`, `team`, `project` or `account`.
    pub kind: &'static str,
    /// The team or project name, or the account ID; empty for the org.
    pub name: String,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Crossed {
    /// `actual` or `forecasted`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub percent: Decimal,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct BudgetNow {
    pub id: i64,
    pub name: String,
    pub scope: Scope,
    /// `monthly`, `quarterly` or `annual`; the current period, `period_to` exclusive.
    pub period: &'static str,
    pub period_from: NaiveDate,
    pub period_to: NaiveDate,
    /// `unblended` or `amortized`.
    pub metric: &'static str,
    pub amount: Decimal,
    pub spend: Decimal,
    pub forecast: Decimal,
    /// Spend and forecast as shares of the amount (0.5 is 50 %).
    pub used: Decimal,
    pub forecast_used: Decimal,
    pub crossed: Vec<Crossed>,
}

fn share(part: Decimal, whole: Decimal) -> Decimal {
    if whole > Decimal::ZERO {
        part / whole
    } else {
        Decimal::ZERO
    }
}

/// Every budget in its current period: spend, forecast and the thresholds crossed.
#[utoipa::path(
    get,
    path = "/api/v1/budgets",
    operation_id = "listBudgets",
    tag = "budgets",
    responses(
        (status = 200, description = "The budgets the token may read", body = Vec<BudgetNow>),
        super::responses::EveryCall,
    )
)]
pub async fn list(
    State(pool): State<PgPool>,
    Extension(api): Extension<ApiCaller>,
) -> Result<Json<Vec<BudgetNow>>, Problem> {
    let today = chrono::Utc::now().date_naive();
    let mut conn = pool.acquire().await?;
    let mut out = Vec::new();
    for budget in store::list(&mut conn).await? {
        if crate::budgets::access::may_read_figures(&mut conn, &budget.spec.scope, api.only_team).await? {
            out.push(now(&mut conn, &budget, today).await?);
        }
    }
    Ok(Json(out))
}

/// One budget in its current period, as the API answers it.
pub(super) async fn now(
    conn: &mut sqlx::PgConnection,
    budget: &crate::budgets::Budget,
    today: NaiveDate,
) -> Result<BudgetNow, sqlx::Error> {
    let status = evaluate::status(conn, budget, today).await?.status;
    let spec = &budget.spec;
    Ok(BudgetNow {
        id: budget.id,
        name: spec.name.clone(),
        scope: Scope {
            kind: spec.scope.kind(),
            name: spec.scope.name().to_string(),
        },
        period: spec.period.key(),
        period_from: status.period.from,
        period_to: status.period.to,
        metric: spec.metric.key(),
        amount: spec.amount,
        spend: status.spend,
        forecast: status.forecast,
        used: share(status.spend, spec.amount),
        forecast_used: share(status.forecast, spec.amount),
        crossed: status
            .crossed
            .iter()
            .map(|t| Crossed {
                kind: t.kind.key(),
                percent: t.percent,
            })
            .collect(),
    })
}
