//! Allocation as both builds (de)serialize it: shared-cost rules, where each part of a
//! team's spend came from, and the preview of a rule change.

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

/// Which spend a shared-cost rule takes. Rules see only spend the precedence left over:
/// spend of projects no team owns, whose user tag maps to no team either.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Selector {
    /// Spend without a project tag.
    Untagged,
    /// Spend of these (unowned) projects, by exact tag value.
    Projects(Vec<String>),
    /// The part of unowned spend from these Cost Explorer services (e.g. `EC2 - Other` for
    /// NAT gateways, `AmazonCloudWatch`).
    Services(Vec<String>),
}

impl Selector {
    pub fn label(&self) -> String {
        match self {
            Selector::Untagged => "untagged spend".to_string(),
            Selector::Projects(names) => format!(
                "projects {}",
                names
                    .iter()
                    .map(|n| crate::format::tag_label(n))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Selector::Services(names) => format!("services {}", names.join(", ")),
        }
    }
}

/// How a rule divides what it takes among its teams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SplitKind {
    /// The same share each.
    Even,
    /// In proportion to each team's own (direct, user-tag and account) spend on the same day.
    Proportional,
    /// Fixed percentages that add up to 100.
    Fixed,
}

impl SplitKind {
    pub const ALL: [SplitKind; 3] = [SplitKind::Even, SplitKind::Proportional, SplitKind::Fixed];

    pub fn key(self) -> &'static str {
        match self {
            SplitKind::Even => "even",
            SplitKind::Proportional => "proportional",
            SplitKind::Fixed => "fixed",
        }
    }

    pub fn parse(text: &str) -> Option<SplitKind> {
        SplitKind::ALL.into_iter().find(|k| k.key() == text.trim())
    }
}

/// One team's place in a rule: its share for a fixed split.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleTeam {
    pub team: String,
    /// The percentage, for fixed splits only.
    pub percent: Option<Decimal>,
}

/// A shared-cost rule as written in YAML or the form, checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedRule {
    pub name: String,
    pub selector: Selector,
    pub split: SplitKind,
    /// Empty for even and proportional splits means every team.
    pub teams: Vec<RuleTeam>,
}

impl SharedRule {
    /// The form's values box: one project or service per line.
    pub fn values_text(&self) -> String {
        match &self.selector {
            Selector::Untagged => String::new(),
            Selector::Projects(values) | Selector::Services(values) => values.join("\n"),
        }
    }

    pub fn selector_key(&self) -> &'static str {
        match &self.selector {
            Selector::Untagged => "untagged",
            Selector::Projects(_) => "projects",
            Selector::Services(_) => "services",
        }
    }

    /// The form's teams box: `ml-research` or `ml-research 60` per line.
    pub fn teams_text(&self) -> String {
        self.teams
            .iter()
            .map(|t| match t.percent {
                Some(p) => format!("{} {}", t.team, p.normalize()),
                None => t.team.clone(),
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// "fixed: ml-research 60 %, platform 40 %", "proportional over every team".
    pub fn split_label(&self) -> String {
        if self.teams.is_empty() {
            return format!("{} over every team", self.split.key());
        }
        let teams: Vec<String> = self
            .teams
            .iter()
            .map(|t| match t.percent {
                Some(p) => format!("{} {}%", t.team, p.normalize()),
                None => t.team.clone(),
            })
            .collect();
        format!("{}: {}", self.split.key(), teams.join(", "))
    }
}

/// Where a part of a team's spend came from, in precedence order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Source {
    /// A project the team owns.
    Direct,
    /// Spend of an unowned or untagged project whose user tag maps to the team.
    UserTag,
    /// What is left of an unowned or untagged project's spend in an AWS account mapped to
    /// the team.
    Account,
    /// A shared-cost rule's share.
    Shared,
    /// Nothing claimed it.
    Unassigned,
}

impl Source {
    pub fn key(self) -> &'static str {
        match self {
            Source::Direct => "direct",
            Source::UserTag => "user",
            Source::Account => "account",
            Source::Shared => "shared",
            Source::Unassigned => "unassigned",
        }
    }

    pub fn parse(text: &str) -> Option<Source> {
        [
            Source::Direct,
            Source::UserTag,
            Source::Account,
            Source::Shared,
            Source::Unassigned,
        ]
        .into_iter()
        .find(|s| s.key() == text)
    }
}

/// What saving a set of rules would move, per team, before it is saved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preview {
    /// The rule as checked, to save exactly what was previewed; `original` the rule it
    /// replaces.
    pub rule: Option<SharedRule>,
    pub original: Option<String>,
    pub from: chrono::NaiveDate,
    pub to: chrono::NaiveDate,
    pub metric: crate::period::Metric,
    /// Per team (and Unassigned): now, and with the proposed rules.
    pub teams: Vec<PreviewRow>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreviewRow {
    pub team: String,
    pub now: Decimal,
    pub proposed: Decimal,
}

/// One part of a team's spend: where it came from and how much.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct PartLine {
    /// `direct`, `user`, `account`, `shared` or `unassigned` (`Source::key`).
    pub source: String,
    /// The project the spend was charged to ('' for untagged).
    pub project: String,
    /// The rule that shared it, for shared parts.
    pub rule: Option<String>,
    pub spend: Decimal,
}

/// The shared-cost rules page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RulesData {
    pub rules: Vec<SharedRule>,
    pub is_admin: bool,
    /// For the form's suggestions.
    pub teams: Vec<String>,
    pub services: Vec<String>,
    /// Projects no team owns, with their spend in the preview's month.
    pub unowned: Vec<(String, Decimal)>,
}
