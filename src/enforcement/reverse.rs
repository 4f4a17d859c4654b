//! Undoing an executed action: a flag is lifted in the decision's transaction; a stop is
//! claimed and reversed in AWS with no transaction open (`stop_run`).

use sqlx::PgPool;

use super::actions::ActionError;
use super::claims::Intent;
use super::claims::{self, ActionRow};
use super::executor::Executor;
use super::stop_run;

/// Undoes an executed flag or stop (REVERSE_BUDGET_ACTION); an email cannot be undone.
pub async fn reverse(pool: &PgPool, exec: &Executor, id: i64, actor: &str) -> Result<String, ActionError> {
    let mut tx = pool.begin().await?;
    claims::lock_decisions(&mut tx).await?;
    let row = claims::lock(&mut tx, id).await?.ok_or(ActionError::NotFound(id))?;
    if row.status != "executed" {
        return Err(ActionError::Refused(format!(
            "the action is {}; only an executed action can be reversed",
            row.status.replace('_', " ")
        )));
    }
    match row.action.as_str() {
        "notify" => Err(ActionError::Refused("a sent email cannot be taken back".into())),
        "flag" => {
            claims::set_status(&mut tx, &row, actor, ("reversed", "reversed"), "flag removed").await?;
            tx.commit().await?;
            Ok("reversed".into())
        }
        _ => {
            let claim = claims::claim(&mut tx, &row, exec.lease).await?;
            tx.commit().await?;
            let row = ActionRow {
                claimed_from: Some(row.status.clone()),
                ..row
            };
            let status = stop_run::run_claimed(
                pool,
                exec,
                &row,
                claim,
                actor,
                (Intent::Reverse, chrono::Utc::now().date_naive()),
            )
            .await?;
            let message: Option<String> =
                sqlx::query_scalar("select last_message from enforcement_actions where id = $1")
                    .bind(id)
                    .fetch_one(pool)
                    .await?;
            match message.filter(|m| m.starts_with("reversal failed")) {
                Some(failed) if status == "executed" => Err(ActionError::Refused(failed)),
                _ => Ok(status),
            }
        }
    }
}
