//! Budgets as both builds (de)serialize them: scope, period, thresholds, the budget, its
//! status and use, alert records, and what the Budgets pages show.

use chrono::NaiveDate;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use crate::period::{AwsAccountId, BudgetPeriod, Credits, DateRange, Metric};

/// What a budget's spend covers.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum BudgetScope {
    Org,
    Team(String),
    Project(String),
    /// One linked AWS account: all of its spend.
    Account(AwsAccountId),
}

impl BudgetScope {
    pub fn kind(&self) -> &'static str {
        match self {
            BudgetScope::Org => "org",
            BudgetScope::Team(_) => "team",
            BudgetScope::Project(_) => "project",
            BudgetScope::Account(_) => "account",
        }
    }

    /// The team or project name, or the account ID; empty for the org.
    pub fn name(&self) -> &str {
        match self {
            BudgetScope::Org => "",
            BudgetScope::Team(name) | BudgetScope::Project(name) => name,
            BudgetScope::Account(id) => id.as_str(),
        }
    }

    pub fn label(&self) -> String {
        match self {
            BudgetScope::Org => "Whole organisation".to_string(),
            BudgetScope::Team(name) => format!("Team {name}"),
            BudgetScope::Project(name) => format!("Project {}", crate::format::tag_label(name)),
            BudgetScope::Account(id) => format!("AWS account {id}"),
        }
    }
}

/// Whether a threshold compares actual spend or the forecast with the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ThresholdKind {
    Actual,
    Forecasted,
}

impl ThresholdKind {
    pub fn key(self) -> &'static str {
        match self {
            ThresholdKind::Actual => "actual",
            ThresholdKind::Forecasted => "forecasted",
        }
    }

    pub fn parse(text: &str) -> Option<ThresholdKind> {
        match text.trim().to_ascii_lowercase().as_str() {
            "actual" => Some(ThresholdKind::Actual),
            "forecasted" | "forecast" => Some(ThresholdKind::Forecasted),
            _ => None,
        }
    }
}

/// A percentage of the budget that alerts when reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Threshold {
    pub kind: ThresholdKind,
    pub percent: Decimal,
}

impl Threshold {
    /// The default set: 50, 80 and 100 % of actual spend.
    pub fn defaults() -> Vec<Threshold> {
        [50, 80, 100]
            .into_iter()
            .map(|p| Threshold {
                kind: ThresholdKind::Actual,
                percent: Decimal::from(p),
            })
            .collect()
    }

    /// `80%`, or `100% forecasted`: the form's and the CLI's one-line form.
    pub fn label(&self) -> String {
        match self.kind {
            ThresholdKind::Actual => format!("{}%", self.percent.normalize()),
            ThresholdKind::Forecasted => format!("{}% forecasted", self.percent.normalize()),
        }
    }

    /// [`Threshold::label`] as pages show it, the percentage with thousands separators:
    /// `1,000%`, `82.5% forecasted`. The form, the config file and the CLI keep `label`,
    /// which reads back.
    pub fn shown(&self) -> String {
        let percent = crate::format::quantity(self.percent, 2);
        match self.kind {
            ThresholdKind::Actual => format!("{percent}%"),
            ThresholdKind::Forecasted => format!("{percent}% forecasted"),
        }
    }

    /// The amount at which this threshold is reached.
    pub fn trigger_amount(&self, amount: Decimal) -> Decimal {
        amount * self.percent / Decimal::ONE_HUNDRED
    }
}

/// Everything that defines a budget, checked (see `spec::validate`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetSpec {
    /// The stable identity of a budget kept as code (`key:` in the YAML): a rename keeps the
    /// budget, its alert history and its AWS budget. `None` on a new budget means its name;
    /// on an update, the key it has.
    #[serde(default)]
    pub key: Option<String>,
    pub name: String,
    pub scope: BudgetScope,
    pub period: BudgetPeriod,
    pub amount: Decimal,
    pub metric: Metric,
    /// Whether spend counts credits and refunds (net, the default, as AWS Budgets does) or
    /// leaves them out (gross).
    #[serde(default)]
    pub credits: Credits,
    /// Sorted: actual before forecasted, then by percent.
    pub thresholds: Vec<Threshold>,
    /// Extra addresses, lower-cased and sorted; the scope's owners are always alerted too.
    pub recipients: Vec<String>,
    /// The escalation ladder: addresses told of one threshold only (80 % → the director,
    /// 100 % → finance), on top of the owners and `recipients`. Only thresholds that carry
    /// addresses appear, in the order of `thresholds`.
    #[serde(default)]
    pub escalation: Vec<Escalation>,
}

/// Who else hears of one threshold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Escalation {
    pub threshold: Threshold,
    /// Lower-cased and sorted.
    pub recipients: Vec<String>,
}

impl BudgetSpec {
    /// What the budget's spend counts: its metric, net of credits or before them.
    pub fn basis(&self) -> crate::period::Basis {
        crate::period::Basis {
            metric: self.metric,
            credits: self.credits,
        }
    }

    /// How the budget's spend is counted, for pages and emails: "unblended, net of credits
    /// and refunds".
    pub fn counts(&self) -> String {
        format!("{}, {}", self.metric.key(), self.credits.describe())
    }

    /// The addresses `threshold` alone adds.
    pub fn escalation_for(&self, threshold: Threshold) -> &[String] {
        self.escalation
            .iter()
            .find(|e| e.threshold == threshold)
            .map_or(&[], |e| e.recipients.as_slice())
    }

    /// One threshold as the form's box shows it: `80% director@example.com`.
    pub fn threshold_line(&self, threshold: Threshold) -> String {
        std::iter::once(threshold.label())
            .chain(self.escalation_for(threshold).iter().cloned())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    pub id: i64,
    pub spec: BudgetSpec,
}

/// Where a budget stands in its current period.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetStatus {
    pub budget: Budget,
    pub period: DateRange,
    pub spend: Decimal,
    /// Spend so far plus the run-rate for the days left (see `evaluate`).
    pub forecast: Decimal,
    /// Thresholds reached by actual spend or by the forecast, as appropriate.
    pub crossed: Vec<Threshold>,
}

impl BudgetStatus {
    /// Spend as a percentage of the budget, one decimal.
    pub fn percent_used(&self) -> String {
        crate::format::percent(self.spend, self.budget.spec.amount)
    }

    /// The colour class for the highest threshold crossed: ok, warn (below 100 %), over.
    pub fn level(&self) -> &'static str {
        let highest = self.crossed.iter().map(|t| t.percent).max();
        match highest {
            None => "ok",
            Some(p) if p < Decimal::ONE_HUNDRED => "warn",
            Some(_) => "over",
        }
    }
}

/// A budget's use in its current period, as cost pages show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetUse {
    pub id: i64,
    pub name: String,
    pub scope: BudgetScope,
    pub period: BudgetPeriod,
    pub amount: Decimal,
    /// What its spend counts, so a chart draws its line only against figures counted alike.
    pub metric: Metric,
    pub credits: Credits,
    pub spend: Decimal,
    pub forecast: Decimal,
    /// `60.8%`
    pub used: String,
    /// ok, warn or over (see [`BudgetStatus::level`]).
    pub level: String,
}

impl From<&BudgetStatus> for BudgetUse {
    fn from(status: &BudgetStatus) -> BudgetUse {
        let spec = &status.budget.spec;
        BudgetUse {
            id: status.budget.id,
            name: spec.name.clone(),
            scope: spec.scope.clone(),
            period: spec.period,
            amount: spec.amount,
            metric: spec.metric,
            credits: spec.credits,
            spend: status.spend,
            forecast: status.forecast,
            used: status.percent_used(),
            level: status.level().to_string(),
        }
    }
}

/// One queued or sent alert, for the budget page's history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlertRecord {
    pub period_start: NaiveDate,
    pub threshold: Threshold,
    pub spend: Decimal,
    pub status: String,
    pub attempts: i32,
    pub recipients: Vec<String>,
    /// Each recipient's delivery: `address: status (reply)`.
    pub deliveries: Vec<String>,
    pub last_reply: Option<String>,
    pub created_at: String,
    pub sent_at: Option<String>,
}

/// Scopes the caller may budget: every team for admins, their own teams for leads.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScopeChoices {
    pub org: bool,
    pub teams: Vec<String>,
    pub projects: Vec<String>,
}

impl ScopeChoices {
    pub fn any(&self) -> bool {
        self.org || !self.teams.is_empty() || !self.projects.is_empty()
    }
}

/// A budget on the list, and whether the caller may change it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetLine {
    pub status: BudgetStatus,
    pub can_edit: bool,
}

/// The list page, with what the caller may create.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetsData {
    pub budgets: Vec<BudgetLine>,
    pub choices: ScopeChoices,
    /// Admins may push budgets to AWS.
    pub can_sync: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetData {
    pub line: BudgetLine,
    pub choices: ScopeChoices,
    pub burn_svg: crate::codec::Svg,
    pub alerts: Vec<(i64, AlertRecord)>,
    /// Recipients beyond AWS's 10 email subscribers per notification get only burnrate's email.
    pub recipients: Vec<String>,
    pub is_admin: bool,
}

/// A budget in the AWS account, as the AWS panel lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AwsBudgetRow {
    pub name: String,
    pub limit: String,
    pub time_unit: String,
    /// Created by burnrate (`burnrate-<id>`); the rest are listed, never changed.
    pub managed: bool,
}

/// A project's spend in a period, as an alert email lists the largest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct ProjectSpend {
    pub project: String,
    pub spend: Decimal,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_trigger_at_their_share_of_the_amount() {
        let t = Threshold {
            kind: ThresholdKind::Forecasted,
            percent: Decimal::new(825, 1),
        };
        assert_eq!(t.trigger_amount(Decimal::new(2000000, 2)), Decimal::new(16500, 0));
        assert_eq!(t.label(), "82.5% forecasted");
        assert_eq!(t.shown(), "82.5% forecasted");
        let most = Threshold {
            kind: ThresholdKind::Actual,
            percent: Decimal::new(1000, 0),
        };
        assert_eq!(most.label(), "1000%");
        assert_eq!(most.shown(), "1,000%");
    }
}
