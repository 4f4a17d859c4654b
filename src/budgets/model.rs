//! What the Budgets pages show, as both builds (de)serialize it.

use serde::{Deserialize, Serialize};

use super::{AlertRecord, BudgetStatus, ScopeChoices};

/// A budget on the list, and whether the caller may change it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetLine {
    pub status: BudgetStatus,
    pub can_edit: bool,
}

/// The list page, with what the caller may create.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetList {
    pub budgets: Vec<BudgetLine>,
    pub choices: ScopeChoices,
    /// Admins may push budgets to AWS.
    pub can_sync: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetDetail {
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
