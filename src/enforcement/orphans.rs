//! `burnrate-enforce-*` budgets in AWS that no enforcement action needs any more: left by a
//! run that died between creating and recording them, by a database restored from backup,
//! or by cleanup that AWS refused. `burnrate budgets sync` lists them; `--prune` deletes them.

use sqlx::PgPool;

use super::aws_stop::{self, BUDGET_PREFIX};
use crate::budgets::aws_sync::{AwsBudgets, SyncError};

/// Names of enforcement budgets no action records (or is creating now), sorted.
pub async fn find(pool: &PgPool, aws: &AwsBudgets) -> Result<Vec<String>, SyncError> {
    let mut orphans = Vec::new();
    for budget in aws.list().await? {
        let name = budget.budget_name();
        let Some(id) = name.strip_prefix(BUDGET_PREFIX).and_then(|id| id.parse::<i64>().ok()) else {
            continue;
        };
        // A running claim may have created the budget without recording it yet.
        let live: bool = sqlx::query_scalar(
            "select exists (select 1 from enforcement_actions
                            where id = $1 and (aws_budget_name = $2 or status = 'running'))",
        )
        .bind(id)
        .bind(name)
        .fetch_one(pool)
        .await?;
        if !live {
            orphans.push(name.to_string());
        }
    }
    orphans.sort();
    Ok(orphans)
}

/// Deletes each orphan with its budget actions; returns the failures by name.
pub async fn prune(aws: &AwsBudgets, orphans: &[String]) -> Vec<(String, String)> {
    let mut failures = Vec::new();
    for name in orphans {
        if let Err(failure) = aws_stop::delete(aws, name, None).await {
            failures.push((name.clone(), failure.message));
        }
    }
    failures
}
