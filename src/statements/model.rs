//! Chargeback statements as both builds (de)serialize them.

use chrono::NaiveDate;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

/// A statement section, in the order each team's lines are listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Section {
    /// Spend of the team's projects (and of unowned projects its user tags carry), usage
    /// only; and adjustments for restated earlier months.
    Direct,
    /// Its share of each shared-cost rule, usage only.
    Shared,
    Credit,
    Refund,
    Tax,
    /// Everything above: the team's allocated spend plus any adjustment.
    Total,
}

impl Section {
    pub fn key(self) -> &'static str {
        match self {
            Section::Direct => "direct",
            Section::Shared => "shared",
            Section::Credit => "credit",
            Section::Refund => "refund",
            Section::Tax => "tax",
            Section::Total => "total",
        }
    }
}

/// One line: `month,team,section,item,unblended,amortized`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatementLine {
    pub team: String,
    /// The team's id (none for Unassigned), so an adjustment finds a renamed team. Lines
    /// frozen before statements kept it have none and are matched by name.
    #[serde(default)]
    pub team_id: Option<i64>,
    /// On an adjustment line, the earlier month (`2026-09`) it books a change of. Kept apart
    /// from `item`, which for other lines is a project's tag value and could read alike.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adjusts: Option<String>,
    pub section: Section,
    pub item: String,
    /// A direct line of spend that carried no project tag: its item reads `(untagged)`,
    /// which a project could also be called, so the two stay separate lines.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub untagged: bool,
    pub unblended: Decimal,
    pub amortized: Decimal,
}

/// A month's statement: its lines, and whether it is frozen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Statement {
    /// The month's first day.
    pub month: NaiveDate,
    pub lines: Vec<StatementLine>,
    /// When it was frozen; `None` while the month's figures may still change.
    pub frozen_at: Option<String>,
    /// Each team's monthly budgets: (team, budget name, amount, metric, credits).
    pub budgets: Vec<(String, String, Decimal, String, String)>,
    /// Set on an account's statement (`?account=`, `--account`): the month's allocation in
    /// that linked account, computed when asked, never frozen and without adjustments. The
    /// organisation's statement stays the one charged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
}

/// A month the Statements page lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MonthRow {
    /// `2026-10`.
    pub month: String,
    pub frozen_at: Option<String>,
    pub total: Decimal,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatementsData {
    /// Every month with spend, or with `?account=` every month with spend in that account
    /// (its totals that account's).
    pub months: Vec<MonthRow>,
    pub teams: Vec<String>,
    /// The account filter (`?account=`); `None` for every account.
    pub account: Option<String>,
    /// Every linked account Cost Explorer named (ID, name), for the account filter.
    pub accounts: Vec<(String, String)>,
}
