//! Who may change which budget: admins any; leads the budgets of their own teams and
//! their projects; viewers none. Also the scopes a caller may choose in the form, and a
//! caller's save or delete, each checked and written in one transaction.

use sqlx::PgConnection;

use super::{BudgetScope, ScopeChoices, store};
use crate::auth::Caller;
use crate::error::AppError;

/// Whether a caller limited to team `only_team` (a one-team API token) may read this
/// budget's figures: its team's budgets and its projects'; never the organisation's or a
/// linked account's, which count other teams' spend. Unlimited callers read all.
pub async fn may_read_figures(
    conn: &mut PgConnection,
    scope: &BudgetScope,
    only_team: Option<i64>,
) -> Result<bool, sqlx::Error> {
    match only_team {
        None => Ok(true),
        Some(only) => Ok(store::owning_team(conn, scope).await? == Some(only)),
    }
}

pub async fn may_edit(conn: &mut PgConnection, caller: &Caller, scope: &BudgetScope) -> Result<bool, sqlx::Error> {
    if caller.is_admin() {
        return Ok(true);
    }
    Ok(match store::owning_team(conn, scope).await? {
        Some(team_id) => caller.can_edit_team(team_id),
        None => false,
    })
}

pub async fn require_edit(conn: &mut PgConnection, caller: &Caller, scope: &BudgetScope) -> Result<(), AppError> {
    if may_edit(conn, caller, scope).await? {
        Ok(())
    } else if caller.is_admin() || caller.role == crate::auth::Role::Lead {
        Err(AppError::Forbidden(format!(
            "leads may change budgets of their own teams and their projects only, not {}",
            scope.label()
        )))
    } else {
        Err(AppError::Forbidden("viewers cannot change budgets".into()))
    }
}

pub async fn choices(conn: &mut PgConnection, caller: &Caller) -> Result<ScopeChoices, sqlx::Error> {
    let admin = caller.is_admin();
    let team_ids: Vec<i64> = if caller.role == crate::auth::Role::Lead {
        caller.team_ids.clone()
    } else {
        Vec::new()
    };
    if !admin && team_ids.is_empty() {
        return Ok(ScopeChoices::default());
    }
    let teams = sqlx::query_scalar("select name from teams where $1 or id = any($2) order by name")
        .bind(admin)
        .bind(&team_ids)
        .fetch_all(&mut *conn)
        .await?;
    let projects =
        sqlx::query_scalar("select name from projects where $1 or team_id = any($2) order by name limit 5000")
            .bind(admin)
            .bind(&team_ids)
            .fetch_all(&mut *conn)
            .await?;
    Ok(ScopeChoices {
        org: admin,
        teams,
        projects,
    })
}

/// Saves `spec` as budget `id` (a new one when `None`) for `caller`, who must be allowed to
/// edit both the budget as stored and the scope it moves to. Returns its id.
pub async fn save(
    pool: &sqlx::PgPool,
    caller: &Caller,
    id: Option<i64>,
    spec: &super::BudgetSpec,
) -> Result<i64, AppError> {
    let mut tx = pool.begin().await?;
    if let Some(id) = id {
        let existing = store::get(&mut tx, id)
            .await?
            .ok_or_else(|| AppError::NotFound("no such budget".into()))?;
        require_edit(&mut tx, caller, &existing.spec.scope).await?;
    }
    require_edit(&mut tx, caller, &spec.scope).await?;
    let saved = store::save(&mut tx, &caller.into(), id, spec).await?;
    tx.commit().await?;
    Ok(saved)
}

/// Deletes budget `id` for `caller`, who must be allowed to edit it.
pub async fn delete(pool: &sqlx::PgPool, caller: &Caller, id: i64) -> Result<(), AppError> {
    let mut tx = pool.begin().await?;
    let existing = store::get(&mut tx, id)
        .await?
        .ok_or_else(|| AppError::NotFound("no such budget".into()))?;
    require_edit(&mut tx, caller, &existing.spec.scope).await?;
    store::delete(&mut tx, &caller.into(), id).await?;
    tx.commit().await?;
    Ok(())
}
