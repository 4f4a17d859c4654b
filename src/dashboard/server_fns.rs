//! The dashboard's server functions: check the caller and filters, then read the page's
//! data through the page-data cache (computed at most once per data version and key).

use leptos::prelude::*;

use super::model::{OverviewData, ScopeData, TeamsData};
use crate::error::AppError;

/// The Overview figures for `?period=`, `?metric=`, `?credits=`, `?team=` and `?account=`,
/// read from the daily totals and the allocation.
#[server(prefix = "/api", endpoint = "overview")]
pub async fn get_overview(
    period: Option<String>,
    metric: Option<String>,
    credits: Option<String>,
    team: Option<String>,
    account: Option<String>,
) -> Result<OverviewData, AppError> {
    let request = CostRequest::new(period, metric, credits, account)?;
    let team = team.filter(|t| !t.is_empty());
    if let Some(name) = &team
        && !super::reads::overview::team_exists(&request.pool, name).await?
    {
        return Err(AppError::invalid("team", format!("there is no team named {name:?}")));
    }
    let compute = super::reads::overview::overview(
        &request.pool,
        request.period,
        request.basis,
        request.today,
        super::reads::overview::Narrowed {
            team: team.as_deref(),
            account: request.account.as_ref(),
        },
    );
    request.cached("overview", team.as_deref().unwrap_or(""), compute).await
}

#[server(prefix = "/api", endpoint = "teams")]
pub async fn get_teams(
    period: Option<String>,
    metric: Option<String>,
    credits: Option<String>,
    account: Option<String>,
) -> Result<TeamsData, AppError> {
    let request = CostRequest::new(period, metric, credits, account)?;
    let compute = super::reads::breakdown::teams_in(
        &request.pool,
        request.period,
        request.basis,
        request.today,
        request.account.as_ref(),
    );
    request.cached("teams", "", compute).await
}

#[server(prefix = "/api", endpoint = "scope")]
pub async fn get_scope(
    kind: String,
    name: String,
    period: Option<String>,
    metric: Option<String>,
    credits: Option<String>,
    account: Option<String>,
) -> Result<ScopeData, AppError> {
    let request = CostRequest::new(period, metric, credits, account)?;
    let scope = match kind.as_str() {
        "team" => super::model::Scope::Team(name),
        "project" => super::model::Scope::Project(name),
        _ => return Err(AppError::invalid("kind", "expected team or project")),
    };
    // Debug output quotes the name, so no name can forge another key.
    let detail = format!("{scope:?}");
    let compute = super::reads::breakdown::scope_in(
        &request.pool,
        scope,
        request.period,
        request.basis,
        request.today,
        request.account.as_ref(),
    );
    request.cached("scope", &detail, compute).await
}

/// What every dashboard server function starts with: valid filters, what it reads from,
/// and today's UTC date, after checking that a signed-in caller asks.
#[cfg(feature = "ssr")]
struct CostRequest {
    pool: sqlx::PgPool,
    page_data: crate::page_data::PageDataCache,
    period: crate::period::Period,
    basis: crate::period::Basis,
    /// `?account=`: one linked account, or every one.
    account: Option<crate::period::AwsAccountId>,
    today: chrono::NaiveDate,
}

#[cfg(feature = "ssr")]
impl CostRequest {
    fn new(
        period: Option<String>,
        metric: Option<String>,
        credits: Option<String>,
        account: Option<String>,
    ) -> Result<CostRequest, AppError> {
        use crate::period::{AwsAccountId, Basis, Credits, Metric, Period};
        crate::auth::caller()?;
        Ok(CostRequest {
            period: Period::parse(period.as_deref()).map_err(|m| AppError::invalid("period", m))?,
            basis: Basis {
                metric: Metric::parse(metric.as_deref()).map_err(|m| AppError::invalid("metric", m))?,
                credits: Credits::parse(credits.as_deref()).map_err(|m| AppError::invalid("credits", m))?,
            },
            account: AwsAccountId::parse_filter(account.as_deref()).map_err(|m| AppError::invalid("account", m))?,
            pool: crate::ctx::pool()?,
            page_data: crate::ctx::page_data()?,
            today: chrono::Utc::now().date_naive(),
        })
    }

    /// `compute`'s page data through the cache, keyed by the page, its filters, the day
    /// (pages cut periods at today) and `detail` (the team or scope).
    async fn cached<T>(
        &self,
        page: &str,
        detail: &str,
        compute: impl Future<Output = Result<T, sqlx::Error>>,
    ) -> Result<T, AppError>
    where
        T: Clone + Send + Sync + 'static,
    {
        use crate::period::AwsAccountId;
        let (period, metric, credits) = (self.period.key(), self.basis.metric.key(), self.basis.credits.key());
        let account = self.account.as_ref().map_or("", AwsAccountId::as_str);
        let key = format!("{page}|{period}|{metric}|{credits}|{account}|{}|{detail}", self.today);
        Ok(self.page_data.get_or_compute(&self.pool, key, compute).await?)
    }
}
