//! The dashboard's server functions: check the caller and filters, then read the page's
//! data through the page-data cache (computed at most once per data version and key).

use leptos::prelude::*;

use super::model::{Overview, ScopeView, TeamsView};
use crate::error::AppError;

/// The Overview figures for `?period=` and `?metric=`, read from the daily rollup.
#[server(prefix = "/api", endpoint = "overview")]
pub async fn get_overview(
    period: Option<String>,
    metric: Option<String>,
    team: Option<String>,
) -> Result<Overview, AppError> {
    crate::error::with_status(
        async {
            let request = CostRequest::new(period, metric)?;
            let team = team.filter(|t| !t.is_empty());
            if let Some(name) = &team
                && !super::store::overview::team_exists(&request.pool, name).await?
            {
                return Err(AppError::invalid("team", format!("there is no team named {name:?}")));
            }
            let key = request.key("overview", team.as_deref().unwrap_or(""));
            let CostRequest {
                pool,
                period,
                metric,
                today,
                ..
            } = &request;
            let compute = super::store::overview::overview(pool, *period, *metric, *today, team.as_deref());
            Ok(request.page_data.get_or_compute(pool, key, compute).await?)
        }
        .await,
    )
}

#[server(prefix = "/api", endpoint = "teams")]
pub async fn get_teams(period: Option<String>, metric: Option<String>) -> Result<TeamsView, AppError> {
    crate::error::with_status(
        async {
            let request = CostRequest::new(period, metric)?;
            let key = request.key("teams", "");
            let CostRequest {
                pool,
                period,
                metric,
                today,
                ..
            } = &request;
            let compute = super::store::breakdown::teams(pool, *period, *metric, *today);
            Ok(request.page_data.get_or_compute(pool, key, compute).await?)
        }
        .await,
    )
}

#[server(prefix = "/api", endpoint = "scope")]
pub async fn get_scope(
    kind: String,
    name: String,
    period: Option<String>,
    metric: Option<String>,
) -> Result<ScopeView, AppError> {
    crate::error::with_status(
        async {
            let request = CostRequest::new(period, metric)?;
            let scope = match kind.as_str() {
                "team" => super::model::Scope::Team(name),
                "project" => super::model::Scope::Project(name),
                _ => return Err(AppError::invalid("kind", "expected team or project")),
            };
            // Debug output quotes the name, so no name can forge another key.
            let key = request.key("scope", &format!("{scope:?}"));
            let CostRequest {
                pool,
                period,
                metric,
                today,
                ..
            } = &request;
            let compute = super::store::breakdown::scope(pool, scope, *period, *metric, *today);
            Ok(request.page_data.get_or_compute(pool, key, compute).await?)
        }
        .await,
    )
}

/// What every dashboard server function starts with: valid filters, what it reads from,
/// and today's UTC date, after checking that a signed-in caller asks.
#[cfg(feature = "ssr")]
struct CostRequest {
    pool: sqlx::PgPool,
    page_data: crate::page_data::PageDataCache,
    period: crate::period::Period,
    metric: crate::period::Metric,
    today: chrono::NaiveDate,
}

#[cfg(feature = "ssr")]
impl CostRequest {
    fn new(period: Option<String>, metric: Option<String>) -> Result<CostRequest, AppError> {
        use crate::period::{Metric, Period};
        crate::auth::caller()?;
        Ok(CostRequest {
            period: Period::parse(period.as_deref()).map_err(|m| AppError::invalid("period", m))?,
            metric: Metric::parse(metric.as_deref()).map_err(|m| AppError::invalid("metric", m))?,
            pool: crate::ctx::pool()?,
            page_data: crate::ctx::page_data()?,
            today: chrono::Utc::now().date_naive(),
        })
    }

    /// The page-data key: the page, its filters and the day (pages cut periods at today).
    fn key(&self, page: &str, detail: &str) -> String {
        format!(
            "{page}|{}|{}|{}|{detail}",
            self.period.key(),
            self.metric.key(),
            self.today
        )
    }
}
