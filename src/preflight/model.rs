//! The pre-flight check's question and answer (seed 003's `check_budget_available()`), as
//! `POST /api/v1/preflight` and `burnrate check` exchange them.

use chrono::NaiveDate;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

/// What a launcher or a CI job is about to spend.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PreflightRequest {
    /// The project tag value the work will carry.
    #[serde(default)]
    pub project: Option<String>,
    /// The team, for work not yet tagged with a project (or to check the team's budgets too).
    #[serde(default)]
    pub team: Option<String>,
    /// The estimate in USD, as a decimal string ("1200.50") for exactness.
    #[serde(default)]
    #[schema(value_type = Option<String>, pattern = r"^[0-9]{1,13}(\.[0-9]{1,10})?$", example = "1200.50")]
    pub estimated_cost_usd: Option<Decimal>,
    /// Or GPUs: priced from the catalogue (and `pricing:`) at the on-demand rate.
    #[serde(default)]
    pub gpu: Option<GpuEstimate>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GpuEstimate {
    /// An instance type from the GPU catalogue, e.g. `p4d.24xlarge`.
    #[serde(rename = "type")]
    pub instance_type: String,
    #[schema(minimum = 1, maximum = 10000)]
    pub count: u32,
    /// Hours each GPU instance runs, as a decimal string ("72" or "1.5"); at most a year.
    #[schema(value_type = String, pattern = r"^[0-9]{1,4}(\.[0-9]{1,6})?$", example = "72")]
    pub hours: Decimal,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Allow,
    Warn,
    Block,
}

impl Verdict {
    /// `burnrate check`'s exit status: 0, 10 or 20.
    pub fn exit_code(self) -> u8 {
        match self {
            Verdict::Allow => 0,
            Verdict::Warn => 10,
            Verdict::Block => 20,
        }
    }

    pub fn key(self) -> &'static str {
        match self {
            Verdict::Allow => "allow",
            Verdict::Warn => "warn",
            Verdict::Block => "block",
        }
    }
}

/// One budget that covers the work, in its current period.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BudgetFigures {
    pub id: i64,
    pub name: String,
    /// `org`, `team`, `project` or `account`, and its name.
    pub scope: String,
    pub period_from: NaiveDate,
    /// Exclusive.
    pub period_to: NaiveDate,
    pub amount: Decimal,
    pub spend: Decimal,
    pub forecast: Decimal,
    /// The forecast with the estimate added.
    pub forecast_with_estimate: Decimal,
    /// What is left of the amount after the forecast and the estimate (negative when over).
    pub left_after: Decimal,
    pub verdict: Verdict,
}

/// The project's enforcement policy in its current period.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PolicyFigures {
    pub team: Option<String>,
    pub period_from: NaiveDate,
    pub period_to: NaiveDate,
    pub limit: Decimal,
    pub spend: Decimal,
    pub approved_cap: Option<Decimal>,
    pub approval_expires: Option<NaiveDate>,
    pub stop_in_force: bool,
    pub verdict: Verdict,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PreflightAnswer {
    pub verdict: Verdict,
    /// Why, one line each, the gravest first.
    pub reasons: Vec<String>,
    pub estimate_usd: Decimal,
    pub budgets: Vec<BudgetFigures>,
    pub policy: Option<PolicyFigures>,
}
