//! `burnrate-enforce-*` budgets in AWS that no enforcement action needs any more: left by a
//! run that died between creating and recording them, by a database restored from backup,
//! or by cleanup that AWS refused. `burnrate budgets sync` lists them; `--prune` deletes them,
//! but never one whose action AWS ran and has not undone: that one is reversed first
//! (deleting it would leave its deny policy attached or its instances stopped), and deleted
//! by a later prune once AWS reports the reversal done.

use sqlx::PgPool;

use super::aws_stop::{self, BUDGET_PREFIX};
use crate::aws::budgets::{AwsBudgets, SyncError};

/// Names of enforcement budgets no action records (or is creating now), sorted.
pub async fn find(pool: &PgPool, aws: &AwsBudgets) -> Result<Vec<String>, SyncError> {
    let mut orphans = Vec::new();
    for budget in aws.list().await? {
        let name = budget.budget_name();
        let Some(id) = name.strip_prefix(BUDGET_PREFIX).and_then(|id| id.parse::<i64>().ok()) else {
            continue;
        };
        if !is_live(pool, id, name).await? {
            orphans.push(name.to_string());
        }
    }
    orphans.sort();
    Ok(orphans)
}

/// True when action `id` records the budget `name`, or is running and may be creating it.
async fn is_live(pool: &PgPool, id: i64, name: &str) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar(
        "select exists (select 1 from enforcement_actions
                        where id = $1 and (aws_budget_name = $2 or status = 'running'))",
    )
    .bind(id)
    .bind(name)
    .fetch_one(pool)
    .await
}

/// An orphan `prune` left in place, and why.
pub struct NotPruned {
    pub name: String,
    pub why: String,
}

/// Why the orphan must stay for now, asking AWS where its action stands: an execution in
/// force is reversed (REVERSE_BUDGET_ACTION) and the budget kept until AWS has undone it; one
/// AWS is still running or undoing is left to finish. `None`: safe to delete.
async fn in_force(aws: &AwsBudgets, name: &str) -> Option<String> {
    let action = match aws_stop::existing_action(aws, name).await {
        Ok(Some(action)) => action,
        Ok(None) => return None,
        Err(failure) => return Some(failure.message),
    };
    match aws_stop::status(aws, name, &action).await {
        Ok(Some(status)) if status == "EXECUTION_SUCCESS" => {
            let reverse = aws_sdk_budgets::types::ExecutionType::ReverseBudgetAction;
            Some(match aws_stop::execute(aws, name, &action, reverse).await {
                Ok(_) => "its action is in force in AWS: reversal requested; prune again once AWS has undone it".into(),
                Err(failure) => format!(
                    "its action is in force in AWS and reversing it failed: {}",
                    failure.message
                ),
            })
        }
        Ok(Some(status)) if status.ends_with("_IN_PROGRESS") => Some(format!(
            "AWS reports its action as {status}; prune again once AWS has finished"
        )),
        Ok(_) => None,
        Err(failure) => Some(failure.message),
    }
}

/// Deletes each orphan with its budget actions, checking just before each that no action
/// has started using it since it was listed; returns those left in place, and why.
pub async fn prune(pool: &PgPool, aws: &AwsBudgets, orphans: &[String]) -> Vec<NotPruned> {
    let mut failures = Vec::new();
    for name in orphans {
        let still_orphan = match name.strip_prefix(BUDGET_PREFIX).and_then(|id| id.parse::<i64>().ok()) {
            Some(id) => is_live(pool, id, name).await.map(|live| !live).unwrap_or(false),
            None => false,
        };
        if !still_orphan {
            failures.push(NotPruned {
                name: name.clone(),
                why: "an enforcement action uses it now; left alone".into(),
            });
            continue;
        }
        if let Some(why) = in_force(aws, name).await {
            failures.push(NotPruned {
                name: name.clone(),
                why,
            });
            continue;
        }
        if let Err(failure) = aws_stop::delete(aws, name, None).await {
            failures.push(NotPruned {
                name: name.clone(),
                why: failure.message,
            });
        }
    }
    failures
}
