//! An admin's change to approvals, policies or one action: each checked, written and
//! committed in its own transaction, which disarms what the change stops from holding and
//! wakes the enforcement loop (`judge::commit_and_disarm`). What the server functions call.

use sqlx::PgPool;

use super::executor::Executor;
use super::judge::Touched;
use super::model::Approval;
use super::policy::{Policy, SaveError};
use crate::auth::Caller;
use crate::error::AppError;

async fn commit(
    tx: sqlx::Transaction<'_, sqlx::Postgres>,
    caller: &Caller,
    executor: &Executor,
    touched: Touched,
) -> Result<(), AppError> {
    Ok(super::judge::commit_and_disarm(tx, &caller.email, &executor.wake, &touched).await?)
}

/// Adds an approval, or replaces the project's current one with a new version.
pub async fn save_approval(
    pool: &PgPool,
    executor: &Executor,
    caller: &Caller,
    approval: &Approval,
) -> Result<(), AppError> {
    let mut tx = pool.begin().await?;
    super::approvals::set(&mut tx, &caller.into(), approval).await?;
    commit(tx, caller, executor, Touched::Project(approval.project.clone())).await
}

pub async fn revoke_approval(
    pool: &PgPool,
    executor: &Executor,
    caller: &Caller,
    project: &str,
) -> Result<(), AppError> {
    let mut tx = pool.begin().await?;
    if !super::approvals::revoke(&mut tx, &caller.into(), project).await? {
        return Err(AppError::NotFound(format!(
            "no current approval for project {project:?}"
        )));
    }
    commit(tx, caller, executor, Touched::Project(project.to_string())).await
}

/// Saves the organisation default or a team's override.
pub async fn save_policy(pool: &PgPool, executor: &Executor, caller: &Caller, policy: &Policy) -> Result<(), AppError> {
    let mut tx = pool.begin().await?;
    super::policy::save(&mut tx, &caller.into(), policy)
        .await
        .map_err(|e| match e {
            SaveError::Invalid(field) => AppError::InvalidFields(vec![field]),
            SaveError::Database(e) => e.into(),
        })?;
    let touched = policy.team.clone().map_or(Touched::All, Touched::Team);
    commit(tx, caller, executor, touched).await
}

/// Removes a team's override; the organisation default governs the team again.
pub async fn remove_policy(pool: &PgPool, executor: &Executor, caller: &Caller, team: &str) -> Result<(), AppError> {
    let mut tx = pool.begin().await?;
    if !super::policy::remove_override(&mut tx, &caller.into(), team).await? {
        return Err(AppError::NotFound(format!("no policy override for team {team:?}")));
    }
    commit(tx, caller, executor, Touched::Team(team.to_string())).await
}

/// `approve`, `retry` or `reverse` one action; returns what happened, in words.
pub async fn act(pool: &PgPool, executor: &Executor, caller: &Caller, id: i64, step: &str) -> Result<String, AppError> {
    use super::actions;
    let today = chrono::Utc::now().date_naive();
    let result = match step {
        "approve" => actions::approve(pool, executor, id, &caller.email, today).await,
        "retry" => actions::retry(pool, executor, id, &caller.email, today).await,
        "reverse" => super::reverse::reverse(pool, executor, id, &caller.email).await,
        _ => return Err(AppError::invalid("step", "expected approve, retry or reverse")),
    };
    result.map_err(refused)
}

fn refused(e: super::actions::ActionError) -> AppError {
    use super::actions::ActionError;
    match e {
        ActionError::NotFound(id) => AppError::NotFound(format!("enforcement action {id}")),
        ActionError::Refused(message) => AppError::invalid("action", message),
        ActionError::Forbidden(message) => AppError::Forbidden(message),
        ActionError::Database(e) => e.into(),
    }
}

/// Snoozes a stop, for an admin or a lead of the project's team; returns its status after.
pub async fn snooze(
    pool: &PgPool,
    executor: &Executor,
    caller: &Caller,
    id: i64,
    snooze: &super::snooze::Snooze,
) -> Result<String, AppError> {
    let row = super::claims::read(&mut *pool.acquire().await?, id)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("enforcement action {id}")))?;
    let allowed = caller.is_admin() || row.team_id.is_some_and(|team| caller.can_edit_team(team));
    if !allowed {
        return Err(AppError::Forbidden(
            "only an admin or a lead of the project's team may snooze its stop".into(),
        ));
    }
    super::snooze::snooze(pool, executor, id, (&caller.email, caller.is_admin()), snooze)
        .await
        .map_err(refused)
}
