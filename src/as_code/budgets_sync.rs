//! The `budgets:` section written: the database made to match the file inside the
//! import's transaction, and the section rendered for `config export`.

use sqlx::PgConnection;

use super::budgets::FileBudget;
use super::{ApplyError, FileError, quote};
use crate::audit_log::Actor;
use crate::budgets::{Budget, BudgetScope, BudgetSpec, ThresholdKind, store};
use crate::error::AppError;

/// Makes the budgets match `desired` inside the import's transaction.
pub(super) async fn apply(
    tx: &mut PgConnection,
    actor: &Actor,
    desired: &[FileBudget],
) -> Result<Vec<String>, ApplyError> {
    let mut problems = Vec::new();
    for budget in desired {
        if let Err(error) = store::resolve_scope(tx, &budget.spec.scope).await? {
            problems.push(FileError {
                line: budget.line,
                message: format!("budget {:?}: {}", budget.spec.name, error.message),
            });
        }
    }
    if !problems.is_empty() {
        return Err(ApplyError::Invalid(problems));
    }
    let current = store::list(tx).await?;
    // By key; an entry without one also finds a budget by name (one renamed in the UI keeps
    // its first name as key).
    let find = |wanted: &BudgetSpec| {
        let identity = wanted.key.as_deref().unwrap_or(&wanted.name);
        current
            .iter()
            .find(|b| b.spec.key.as_deref().is_some_and(|k| k.eq_ignore_ascii_case(identity)))
            .or_else(|| {
                wanted
                    .key
                    .is_none()
                    .then(|| current.iter().find(|b| b.spec.name.eq_ignore_ascii_case(&wanted.name)))
                    .flatten()
            })
    };
    let matched: Vec<Option<i64>> = desired.iter().map(|d| find(&d.spec).map(|b| b.id)).collect();
    // Two entries standing for one budget (a key and an old name, say) would overwrite each
    // other: refuse the file instead.
    for (n, (entry, id)) in desired.iter().zip(&matched).enumerate() {
        if let Some(first) = id.and_then(|id| desired.iter().zip(&matched).take(n).find(|(_, m)| **m == Some(id))) {
            return Err(ApplyError::Invalid(vec![FileError {
                line: entry.line,
                message: format!(
                    "budget {:?} and budget {:?} (line {}) both stand for the same stored budget; give each its key",
                    entry.spec.name, first.0.spec.name, first.0.line
                ),
            }]));
        }
    }
    let mut changes = Vec::new();
    for budget in &current {
        if !matched.contains(&Some(budget.id)) {
            store::delete(tx, actor, budget.id).await.map_err(|e| invalid(1, e))?;
            changes.push(format!("delete budget {:?}", budget.spec.name));
        }
    }
    for budget in desired {
        let existing = find(&budget.spec);
        let unchanged = existing.is_some_and(|e| {
            e.spec
                == BudgetSpec {
                    key: e.spec.key.clone(),
                    ..budget.spec.clone()
                }
        });
        if unchanged {
            continue;
        }
        store::save(tx, actor, existing.map(|e| e.id), &budget.spec)
            .await
            .map_err(|e| invalid(budget.line, e))?;
        let verb = if existing.is_some() { "update" } else { "create" };
        changes.push(format!("{verb} budget {:?}", budget.spec.name));
    }
    Ok(changes)
}

fn invalid(line: usize, error: AppError) -> ApplyError {
    ApplyError::Invalid(vec![FileError {
        line,
        message: error.to_string(),
    }])
}

/// The message for a commit refused because a deleted team still has budgets.
pub(super) fn team_still_budgeted(error: &sqlx::Error) -> Option<String> {
    let db = error.as_database_error()?;
    (db.code().as_deref() == Some("23503") && db.constraint() == Some("budgets_team_id_fkey")).then(|| {
        "a team removed by this file still has budgets; remove or rescope those budgets in the same file".to_string()
    })
}

pub(super) fn render(budgets: &[Budget]) -> String {
    if budgets.is_empty() {
        return "budgets: []\n".to_string();
    }
    let mut out = String::from("budgets:\n");
    for budget in budgets {
        let spec = &budget.spec;
        let scope = match &spec.scope {
            BudgetScope::Org => "{org: true}".to_string(),
            BudgetScope::Team(team) => format!("{{team: {}}}", quote(team)),
            BudgetScope::Project(project) => format!("{{project: {}}}", quote(project)),
            BudgetScope::Account(id) => format!("{{account: {}}}", quote(id.as_str())),
        };
        let thresholds: Vec<String> = spec
            .thresholds
            .iter()
            .map(|t| {
                let kind = match t.kind {
                    ThresholdKind::Actual => String::new(),
                    ThresholdKind::Forecasted => ", type: forecasted".to_string(),
                };
                let ladder = spec.escalation_for(*t);
                let recipients = if ladder.is_empty() {
                    String::new()
                } else {
                    let quoted: Vec<String> = ladder.iter().map(|r| quote(r)).collect();
                    format!(", recipients: [{}]", quoted.join(", "))
                };
                format!("{{percent: {}{kind}{recipients}}}", t.percent)
            })
            .collect();
        let recipients: Vec<String> = spec.recipients.iter().map(|r| quote(r)).collect();
        let key = spec.key.as_deref().unwrap_or(&spec.name);
        out.push_str(&format!("  - key: {}\n", quote(key)));
        out.push_str(&format!("    name: {}\n", quote(&spec.name)));
        out.push_str(&format!("    scope: {scope}\n"));
        out.push_str(&format!("    period: {}\n", spec.period.key()));
        out.push_str(&format!("    amount: \"{:.2}\"\n", spec.amount));
        out.push_str(&format!("    metric: {}\n", spec.metric.key()));
        out.push_str(&format!("    credits: {}\n", spec.credits.key()));
        out.push_str(&format!("    thresholds: [{}]\n", thresholds.join(", ")));
        out.push_str(&format!("    recipients: [{}]\n", recipients.join(", ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::*;
    use crate::budgets::Threshold;
    use rust_decimal::Decimal;

    #[test]
    fn the_documented_section_parses_and_round_trips() {
        let text = "budgets:
  - name: ml-research monthly
    scope: {team: ml-research}        # or {project: NAME} or {org: true}
    period: monthly                   # quarterly, annual
    amount: \"25000.00\"
    metric: unblended                 # amortized
    thresholds: [{percent: 50}, {percent: 80, recipients: [director@example.com]},
                 {percent: 100}, {percent: 100, type: forecasted, recipients: [cfo@example.com]}]
    recipients: [finance@example.com] # in addition to the team owners
  - name: org
    scope: {org: true}
    period: annual
    amount: 1000000
    credits: gross
";
        let file = parse(text).expect("valid");
        let budgets = file.budgets.expect("section");
        assert_eq!(file.teams, None);
        assert_eq!(budgets[0].line, 2);
        assert_eq!(budgets[0].spec.amount, Decimal::new(2500000, 2));
        assert_eq!(budgets[0].spec.thresholds.len(), 4);
        assert_eq!(budgets[0].spec.escalation.len(), 2);
        assert_eq!(budgets[1].spec.thresholds, Threshold::defaults());
        assert_eq!(budgets[0].spec.credits, crate::period::Credits::Net);
        assert_eq!(budgets[1].spec.credits, crate::period::Credits::Gross);
        let as_budgets: Vec<Budget> = budgets
            .iter()
            .enumerate()
            .map(|(n, b)| Budget {
                id: n as i64,
                spec: b.spec.clone(),
            })
            .collect();
        let again = parse(&render(&as_budgets))
            .expect("export is importable")
            .budgets
            .expect("section");
        // The export writes each budget's key: its name, when it was given none.
        assert_eq!(
            again.iter().map(|b| b.spec.key.as_deref()).collect::<Vec<_>>(),
            [Some("ml-research monthly"), Some("org")]
        );
        assert_eq!(
            again
                .iter()
                .map(|b| BudgetSpec {
                    key: None,
                    ..b.spec.clone()
                })
                .collect::<Vec<_>>(),
            budgets.iter().map(|b| b.spec.clone()).collect::<Vec<_>>()
        );
    }
}
