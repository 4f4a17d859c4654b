//! Changing the shared-cost rules from the page: one rule added, replaced, moved or removed,
//! checked, saved and allocated again in one transaction, or previewed without saving.

use sqlx::PgPool;

use super::model::{Preview, SharedRule};
use super::rules::{MAX_RULES, RuleInput, validate};
use super::{reads, rule_store, store};
use crate::audit_log::Actor;
use crate::error::AppError;
use crate::period::{DateRange, Metric};

/// What an admin asks of the rules.
pub enum RuleEdit {
    /// Add `input`, or replace the rule named `original` with it (keeping its place).
    Save {
        original: Option<String>,
        input: RuleInput,
    },
    Delete {
        name: String,
    },
    /// One place earlier in the order.
    MoveUp {
        name: String,
    },
}

/// The rules after `edit`, checked against the database.
async fn edited(conn: &mut sqlx::PgConnection, edit: &RuleEdit) -> Result<Vec<SharedRule>, AppError> {
    let mut rules = rule_store::list(conn).await?;
    let position = |rules: &[SharedRule], name: &str| rules.iter().position(|r| r.name.eq_ignore_ascii_case(name));
    match edit {
        RuleEdit::Save { original, input } => {
            let rule = validate(input).map_err(AppError::InvalidFields)?;
            let problems = rule_store::check(conn, &rule).await?;
            if !problems.is_empty() {
                return Err(AppError::InvalidFields(problems));
            }
            let at = original.as_deref().and_then(|o| position(&rules, o));
            if original.is_some() && at.is_none() {
                return Err(AppError::NotFound("no such rule; reload the page".into()));
            }
            if let Some(other) = position(&rules, &rule.name).filter(|p| Some(*p) != at) {
                return Err(AppError::invalid(
                    "name",
                    format!("the rule {:?} already has this name", rules[other].name),
                ));
            }
            match at {
                Some(at) => rules[at] = rule,
                None if rules.len() >= MAX_RULES => {
                    return Err(AppError::invalid(
                        "name",
                        format!("at most {MAX_RULES} shared-cost rules"),
                    ));
                }
                None => rules.push(rule),
            }
        }
        RuleEdit::Delete { name } => {
            let at = position(&rules, name).ok_or_else(|| AppError::NotFound("no such rule".into()))?;
            rules.remove(at);
        }
        RuleEdit::MoveUp { name } => {
            let at = position(&rules, name).ok_or_else(|| AppError::NotFound("no such rule".into()))?;
            if at > 0 {
                rules.swap(at - 1, at);
            }
        }
    }
    Ok(rules)
}

/// Saves `edit` and rewrites the allocation, in one transaction; concurrent edits queue on
/// one lock so neither is lost.
pub async fn apply(pool: &PgPool, actor: &Actor, edit: RuleEdit) -> Result<Vec<String>, AppError> {
    let mut tx = pool.begin().await?;
    // The allocation's own lock: a rule edit reads the rules and rewrites the allocation.
    store::lock(&mut tx).await?;
    let rules = edited(&mut tx, &edit).await?;
    let changes = rule_store::replace_all(&mut tx, actor, &rules).await?;
    if !changes.is_empty() {
        // A rule moves shared spend on every day, and changes no project's owner.
        store::refresh_every_day(&mut tx, &super::rollups::Owners::NONE).await?;
    }
    tx.commit().await?;
    Ok(changes)
}

pub use crate::period::parse_month;

/// What `edit` would move in each team's spend over `month`, saving nothing.
pub async fn preview(pool: &PgPool, edit: RuleEdit, metric: Metric, month: DateRange) -> Result<Preview, AppError> {
    let mut conn = pool.acquire().await?;
    let rules = edited(&mut conn, &edit).await?;
    let mut preview = reads::preview(&mut conn, month, metric, &rules).await?;
    if let RuleEdit::Save { original, input } = edit {
        preview.rule = rules
            .into_iter()
            .find(|r| r.name.eq_ignore_ascii_case(input.name.trim()));
        preview.original = original;
    }
    Ok(preview)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;

    #[test]
    fn a_preview_month_is_a_whole_calendar_month() {
        let day = |y, m, d| NaiveDate::from_ymd_opt(y, m, d).expect("date");
        assert_eq!(
            parse_month("2026-12"),
            Ok(DateRange {
                from: day(2026, 12, 1),
                to: day(2027, 1, 1)
            })
        );
        assert!(parse_month("2026-13").is_err());
        assert!(parse_month("October").is_err());
    }
}
