//! Shared-cost rules: every signed-in role reads them (they decide every team's figures);
//! admins change them, and preview a change before saving it.

use leptos::prelude::*;

use super::model::{Preview, RulesData};
use crate::error::AppError;

#[server(prefix = "/api", endpoint = "allocation/rules")]
pub async fn get_allocation_rules() -> Result<RulesData, AppError> {
    let caller = crate::auth::caller()?;
    let pool = crate::ctx::pool()?;
    let mut conn = pool.acquire().await?;
    let today = chrono::Utc::now().date_naive();
    Ok(super::reads::rules_page(&mut conn, caller.is_admin(), today).await?)
}

/// The form's fields: `original` names the rule being replaced (empty for a new one);
/// values and teams are one per line (`ml-research 60` for a fixed split).
#[cfg(feature = "ssr")]
fn save_edit(
    original: Option<String>,
    name: String,
    selector: String,
    values: Option<String>,
    split: String,
    teams: Option<String>,
) -> super::edit::RuleEdit {
    use super::rules::{RuleInput, team_lines, value_lines};
    super::edit::RuleEdit::Save {
        original: original.filter(|o| !o.is_empty()),
        input: RuleInput {
            name,
            selector,
            values: value_lines(&values.unwrap_or_default()),
            split,
            teams: team_lines(&teams.unwrap_or_default()),
        },
    }
}

/// Adds a rule or replaces `original`, then allocates every day again.
#[server(prefix = "/api", endpoint = "allocation/rules/save")]
pub async fn save_allocation_rule(
    original: Option<String>,
    name: String,
    selector: String,
    values: Option<String>,
    split: String,
    teams: Option<String>,
) -> Result<Vec<String>, AppError> {
    let caller = crate::auth::require_admin()?;
    let edit = save_edit(original, name, selector, values, split, teams);
    let pool = crate::ctx::pool()?;
    super::edit::apply(&pool, &crate::audit_log::Actor::from(&caller), edit).await
}

/// Each team's spend in a month (`YYYY-MM`; last month when absent) now and with the rule
/// as typed, before anything is saved.
#[server(prefix = "/api", endpoint = "allocation/rules/preview")]
pub async fn preview_allocation_rule(
    original: Option<String>,
    name: String,
    selector: String,
    values: Option<String>,
    split: String,
    teams: Option<String>,
    month: Option<String>,
) -> Result<Preview, AppError> {
    crate::auth::require_admin()?;
    let month = match month.as_deref().map(str::trim).filter(|m| !m.is_empty()) {
        None => super::reads::preview_month(chrono::Utc::now().date_naive()),
        Some(text) => super::edit::parse_month(text).map_err(|m| AppError::invalid("month", m))?,
    };
    let edit = save_edit(original, name, selector, values, split, teams);
    let pool = crate::ctx::pool()?;
    super::edit::preview(&pool, edit, crate::period::Metric::Unblended, month).await
}

/// Removes a rule (`action` delete) or moves it one place earlier (`action` up).
#[server(prefix = "/api", endpoint = "allocation/rules/change")]
pub async fn change_allocation_rule(name: String, action: String) -> Result<Vec<String>, AppError> {
    let caller = crate::auth::require_admin()?;
    let edit = match action.as_str() {
        "delete" => super::edit::RuleEdit::Delete { name },
        "up" => super::edit::RuleEdit::MoveUp { name },
        _ => return Err(AppError::invalid("action", "expected delete or up")),
    };
    let pool = crate::ctx::pool()?;
    super::edit::apply(&pool, &crate::audit_log::Actor::from(&caller), edit).await
}
