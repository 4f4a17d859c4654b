//! What the dashboard pages show: their data, as both builds (de)serialize it.

use chrono::NaiveDate;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use crate::budgets::BudgetUse;
use crate::codec::Svg;
use crate::costs::Forecast;
use crate::period::{Credits, DateRange, Metric, OpenDays, Period};

/// A team's spend in a period.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct TeamSpend {
    pub team: String,
    pub spend: Decimal,
    pub gpu_spend: Decimal,
}

/// A project's spend in the period and in the equal-length period before.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct ProjectChange {
    pub project: String,
    pub team: String,
    pub spend: Decimal,
    pub previous: Decimal,
}

/// Everything the Overview page shows for one period and metric.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OverviewData {
    pub period: Period,
    pub metric: Metric,
    /// Net of credits and refunds, or before them.
    pub credits: Credits,
    pub range: DateRange,
    pub total: Decimal,
    pub gpu_total: Decimal,
    /// Mean daily spend over `run_rate_range`: the 7 days through the last settled day
    /// (`costs::settlement`) before the period's end; zero when no day is settled.
    pub run_rate: Decimal,
    /// `None` while no stored day is settled.
    pub run_rate_range: Option<DateRange>,
    /// Days of `range` that are provisional or on an open bill.
    pub open_days: OpenDays,
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
    pub burn_svg: Svg,
    /// Organisation-wide budgets in their current periods (the team's, when filtered).
    pub budgets: Vec<BudgetUse>,
    /// Projects flagged by enforcement (for the chosen team, if any).
    pub flagged: Vec<String>,
    /// The team filter (`?team=`); `None` for the whole organisation.
    pub team: Option<String>,
    /// Every team, for the team filter.
    pub all_teams: Vec<String>,
    /// The account filter (`?account=`); `None` for every account.
    pub account: Option<String>,
    /// Every linked account Cost Explorer named (ID, name), for the account filter.
    pub all_accounts: Vec<(String, String)>,
    /// The organisation's spend by Cost Explorer record type (Usage, Credit, Refund, Tax,
    /// fees), included in every total above; empty with a team filter.
    pub record_types: Vec<Line>,
}

/// A team's spend in the period and in the equal-length period before it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct TeamLine {
    pub team: String,
    pub spend: Decimal,
    pub previous: Decimal,
    pub gpu_spend: Decimal,
    /// `spend` by allocation step: the team's own projects, unowned spend its user tags and
    /// its AWS accounts carry, and its shares of shared-cost rules (see `allocation`).
    pub direct: Decimal,
    pub user_tag: Decimal,
    pub account: Decimal,
    pub shared: Decimal,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamsData {
    pub period: Period,
    pub metric: Metric,
    /// Net of credits and refunds, or before them.
    pub credits: Credits,
    pub range: DateRange,
    pub previous_range: DateRange,
    /// Days of `range` that are provisional or on an open bill.
    pub open_days: OpenDays,
    pub total: Decimal,
    pub teams: Vec<TeamLine>,
    /// The account filter (`?account=`); `None` for every account.
    pub account: Option<String>,
    /// Every linked account Cost Explorer named (ID, name), for the account filter.
    pub all_accounts: Vec<(String, String)>,
    /// (day, team, spend): the chart's numbers.
    pub daily: Vec<(NaiveDate, String, Decimal)>,
    pub chart_svg: Svg,
    pub latest_day: Option<NaiveDate>,
    /// Team budgets in their current periods.
    pub budgets: Vec<BudgetUse>,
}

/// Whose costs a page shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Scope {
    Team(String),
    Project(String),
}

impl Scope {
    pub fn name(&self) -> &str {
        match self {
            Scope::Team(name) | Scope::Project(name) => name,
        }
    }
}

/// One row of a breakdown table: a key (project, user, service, family) and its spend.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Line {
    pub key: String,
    pub spend: Decimal,
}

/// A linked account on a Team or Project page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AwsAccountLine {
    /// The 12-digit ID; '' for spend stored before accounts were recorded.
    pub id: String,
    /// Its name in AWS Organizations, as Cost Explorer gives it.
    pub name: String,
    /// Mapped to the team: its untagged spend is the team's.
    pub mapped: bool,
    pub spend: Decimal,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScopeData {
    pub scope: Scope,
    pub period: Period,
    pub metric: Metric,
    /// Net of credits and refunds, or before them.
    pub credits: Credits,
    pub range: DateRange,
    /// What `previous_total` covers: as many days before `range` as it has days with data.
    pub previous_range: DateRange,
    /// Days of `range` that are provisional or on an open bill.
    pub open_days: OpenDays,
    pub total: Decimal,
    pub previous_total: Decimal,
    /// Instance hours × GPUs per instance.
    pub gpu_hours: Decimal,
    pub spot_spend: Decimal,
    /// Spot plus on-demand instance spend, the base of the spot share.
    pub instance_spend: Decimal,
    pub by_project: Vec<Line>,
    pub by_user: Vec<Line>,
    pub by_service: Vec<Line>,
    pub by_family: Vec<Line>,
    /// training, batch, serving, dev, unknown (see `usage_type::WORKLOAD_SQL`).
    pub by_workload: Vec<Line>,
    /// A team's spend by allocation step, project and rule (empty for a project).
    pub parts: Vec<crate::allocation::PartLine>,
    /// Where the spend is by AWS account; a team's mapped accounts are listed even without.
    pub by_account: Vec<AwsAccountLine>,
    /// The account filter (`?account=`); `None` for every account.
    pub account: Option<String>,
    /// Every linked account Cost Explorer named (ID, name), for the account filter.
    pub all_accounts: Vec<(String, String)>,
    pub chart_svg: Svg,
    /// Budgets on this team or project, in their current periods.
    pub budgets: Vec<BudgetUse>,
    /// This project, or this team's projects, when enforcement flagged them.
    pub flagged: Vec<String>,
}
