//! Costs: the daily facts, their rollup, and the Overview page that reads it.

pub mod breakdown;
pub mod filters;
#[cfg(feature = "ssr")]
pub mod forecast;
pub mod overview;
pub mod period;

#[cfg(feature = "ssr")]
pub mod breakdown_queries;
#[cfg(feature = "ssr")]
pub mod cache;
#[cfg(feature = "ssr")]
pub mod download;
#[cfg(feature = "ssr")]
pub mod export;
#[cfg(feature = "ssr")]
pub mod queries;
#[cfg(feature = "ssr")]
pub mod rollups;
#[cfg(feature = "ssr")]
pub mod store;
#[cfg(feature = "ssr")]
pub mod usage_type;

use chrono::NaiveDate;
use leptos::prelude::*;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use crate::error::AppError;
use period::{DateRange, Metric, Period};

/// The team that spend of an unmapped or untagged project is shown under.
pub const UNASSIGNED_TEAM: &str = "Unassigned";

/// A team's spend in a period.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamSpend {
    pub team: String,
    pub spend: Decimal,
    pub gpu_spend: Decimal,
}

/// Where the period is heading: settled spend plus the run-rate for each later day, with a
/// range from the slowest to the fastest of the run-rate's days (see `costs::forecast`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Forecast {
    /// The period's last day.
    pub last_day: NaiveDate,
    /// The first day projected at the run-rate: the day after the last settled one.
    pub projected_from: NaiveDate,
    /// Days from `projected_from` to the period's end, Estimated days included.
    pub projected_days: i64,
    pub expected: Decimal,
    pub low: Decimal,
    pub high: Decimal,
}

/// A project's spend in the period and in the equal-length period before.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectChange {
    pub project: String,
    pub team: String,
    pub spend: Decimal,
    pub previous: Decimal,
}

/// Everything the Overview page shows for one period and metric.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Overview {
    pub period: Period,
    pub metric: Metric,
    pub range: DateRange,
    pub total: Decimal,
    pub gpu_total: Decimal,
    /// Mean daily spend over `run_rate_range`: the 7 days through the last settled (no
    /// longer Estimated) day before the period's end; zero when no day is settled.
    pub run_rate: Decimal,
    /// `None` while no stored day is settled.
    pub run_rate_range: Option<DateRange>,
    /// Days of `range` whose figures AWS still calls Estimated (provisional).
    pub estimated_days: Vec<NaiveDate>,
    /// What the movers compare with: as many days before `range` as `range` has days with
    /// data.
    pub compared_with: DateRange,
    pub teams: Vec<TeamSpend>,
    /// The newest day with any cost data; `None` when nothing has been loaded yet.
    pub latest_day: Option<NaiveDate>,
    /// Only for a period that has not ended (month to date).
    pub forecast: Option<Forecast>,
    /// The ten largest projects, and the ten that changed most against the period before.
    pub top_projects: Vec<ProjectChange>,
    pub movers: Vec<ProjectChange>,
    /// Cumulative spend against the forecast and, for month to date, the first monthly org budget.
    pub burn_svg: crate::codec::Svg,
    /// Organisation-wide budgets in their current periods (the team's, when filtered).
    pub budgets: Vec<crate::budgets::BudgetUse>,
    /// Projects flagged by enforcement (for the chosen team, if any).
    pub flagged: Vec<String>,
    /// The team filter (`?team=`); `None` for the whole organisation.
    pub team: Option<String>,
    /// Every team, for the team filter.
    pub all_teams: Vec<String>,
}

/// The Overview figures for `?period=` and `?metric=`, read from the daily rollup.
#[server(prefix = "/api", endpoint = "overview")]
pub async fn get_overview(
    period: Option<String>,
    metric: Option<String>,
    team: Option<String>,
) -> Result<Overview, AppError> {
    crate::error::with_status(
        async {
            let (state, period, metric, today) = cost_request(period, metric)?;
            let team = team.filter(|t| !t.is_empty());
            if let Some(name) = &team {
                let known: bool = sqlx::query_scalar("select $1 = $2 or exists (select 1 from teams where name = $1)")
                    .bind(name)
                    .bind(UNASSIGNED_TEAM)
                    .fetch_one(&state.pool)
                    .await?;
                if !known {
                    return Err(AppError::invalid("team", format!("there is no team named {name:?}")));
                }
            }
            let key = format!(
                "overview|{}|{}|{today}|{}",
                period.key(),
                metric.key(),
                team.as_deref().unwrap_or("")
            );
            let compute = queries::overview(&state.pool, period, metric, today, team.as_deref());
            Ok(state.views.get_or_compute(&state.pool, key, compute).await?)
        }
        .await,
    )
}

/// What every cost server function starts with: a signed-in caller, valid filters, the
/// server's state, and today's UTC date.
#[cfg(feature = "ssr")]
pub(crate) fn cost_request(
    period: Option<String>,
    metric: Option<String>,
) -> Result<(crate::server::AppState, Period, Metric, NaiveDate), AppError> {
    crate::auth::caller()?;
    let period = Period::parse(period.as_deref()).map_err(|m| AppError::invalid("period", m))?;
    let metric = Metric::parse(metric.as_deref()).map_err(|m| AppError::invalid("metric", m))?;
    let state = use_context::<crate::server::AppState>().ok_or(AppError::Internal)?;
    Ok((state, period, metric, chrono::Utc::now().date_naive()))
}
