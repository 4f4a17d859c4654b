//! Server functions for `/approvals` and `/enforcement`. Everyone signed in reads; only
//! admins (finance) change approvals and policies and approve, retry or reverse actions.
// `save_policy` takes one argument per form field, as ActionForm posts them; the macro
// also generates a client stub with those arguments, which a function attribute cannot reach.
#![allow(clippy::too_many_arguments)]

use leptos::prelude::*;

use super::model::{ApprovalsView, EnforcementView};
use crate::error::AppError;

#[server(prefix = "/api", endpoint = "approvals")]
pub async fn list_approvals() -> Result<ApprovalsView, AppError> {
    crate::error::with_status(
        async {
            let caller = crate::auth::caller()?;
            let pool = &crate::ctx::pool()?;
            let mut conn = pool.acquire().await?;
            let current = super::approvals::current(&mut conn).await?;
            let history = super::approvals::history(&mut conn).await?;
            Ok(ApprovalsView {
                current,
                history,
                today: chrono::Utc::now().date_naive(),
                is_admin: caller.is_admin(),
            })
        }
        .await,
    )
}

/// Commits an approval or policy change, disarming what it stops from holding and waking
/// the enforcement loop (`judge::commit_and_disarm`).
#[cfg(feature = "ssr")]
async fn commit_and_disarm(tx: sqlx::Transaction<'_, sqlx::Postgres>, actor: &str) -> Result<(), AppError> {
    let executor = crate::ctx::get::<std::sync::Arc<super::executor::Executor>>()?;
    Ok(super::judge::commit_and_disarm(tx, actor, &executor.wake).await?)
}

/// Adds an approval, or replaces the project's current one with a new version (admins).
#[server(prefix = "/api", endpoint = "save_approval")]
pub async fn save_approval(
    project: String,
    approver: String,
    reason: String,
    cap: String,
    expires: String,
) -> Result<(), AppError> {
    use sqlx::Acquire;
    crate::error::with_status(
        async {
            let caller = crate::auth::require_admin()?;
            let input = super::approvals::ApprovalInput {
                project,
                approver,
                reason,
                cap,
                expires,
            };
            let approval = super::approvals::validate(&input).map_err(AppError::InvalidFields)?;
            let pool = &crate::ctx::pool()?;
            let mut conn = pool.acquire().await?;
            let mut tx = conn.begin().await?;
            super::approvals::set(&mut tx, &(&caller).into(), &approval).await?;
            commit_and_disarm(tx, &caller.email).await
        }
        .await,
    )
}

#[server(prefix = "/api", endpoint = "revoke_approval")]
pub async fn revoke_approval(project: String) -> Result<(), AppError> {
    use sqlx::Acquire;
    crate::error::with_status(
        async {
            let caller = crate::auth::require_admin()?;
            let pool = &crate::ctx::pool()?;
            let mut conn = pool.acquire().await?;
            let mut tx = conn.begin().await?;
            if !super::approvals::revoke(&mut tx, &(&caller).into(), &project).await? {
                return Err(AppError::NotFound(format!(
                    "no current approval for project {project:?}"
                )));
            }
            commit_and_disarm(tx, &caller.email).await
        }
        .await,
    )
}

#[server(prefix = "/api", endpoint = "enforcement")]
pub async fn get_enforcement() -> Result<EnforcementView, AppError> {
    crate::error::with_status(
        async {
            let caller = crate::auth::caller()?;
            let pool = &crate::ctx::pool()?;
            let violations = super::store::recorded(pool).await?;
            let mut conn = pool.acquire().await?;
            Ok(EnforcementView {
                violations,
                policies: super::policy::all(&mut conn).await?,
                audit: super::audit::recent(&mut conn, 200).await?,
                teams: super::store::team_names(&mut conn).await?,
                is_admin: caller.is_admin(),
            })
        }
        .await,
    )
}

/// `approve`, `retry` or `reverse` one action (admins).
#[server(prefix = "/api", endpoint = "enforcement_action")]
pub async fn act_on_action(id: i64, step: String) -> Result<String, AppError> {
    crate::error::with_status(
        async {
            use super::actions::{self, ActionError};
            let caller = crate::auth::require_admin()?;
            let (pool, executor) = (
                &crate::ctx::pool()?,
                &crate::ctx::get::<std::sync::Arc<super::executor::Executor>>()?,
            );
            let today = chrono::Utc::now().date_naive();
            let result = match step.as_str() {
                "approve" => actions::approve(pool, executor, id, &caller.email, today).await,
                "retry" => actions::retry(pool, executor, id, &caller.email, today).await,
                "reverse" => super::reverse::reverse(pool, executor, id, &caller.email).await,
                _ => return Err(AppError::invalid("step", "expected approve, retry or reverse")),
            };
            result.map_err(|e| match e {
                ActionError::NotFound(id) => AppError::NotFound(format!("enforcement action {id}")),
                ActionError::Refused(message) => AppError::invalid("action", message),
                ActionError::Database(e) => e.into(),
            })
        }
        .await,
    )
}

/// Saves the org default (empty team) or a team's override (admins). The actions come as
/// one checkbox each.
#[server(prefix = "/api", endpoint = "save_policy")]
pub async fn save_policy(
    team: String,
    limit: String,
    period: String,
    metric: Option<String>,
    mode: String,
    notify: Option<String>,
    flag: Option<String>,
    stop: Option<String>,
    stop_type: Option<String>,
    execution_role_arn: Option<String>,
    iam_policy_arn: Option<String>,
    iam_roles: Option<String>,
    instance_ids: Option<String>,
    instance_region: Option<String>,
) -> Result<(), AppError> {
    use sqlx::Acquire;
    crate::error::with_status(
        async {
            let caller = crate::auth::require_admin()?;
            let actions = [("notify", notify), ("flag", flag), ("stop", stop)]
                .into_iter()
                .filter(|(_, on)| on.is_some())
                .map(|(name, _)| name.to_string())
                .collect();
            let input = super::policy::PolicyInput {
                team,
                limit,
                period,
                metric: metric.unwrap_or_default(),
                actions,
                mode,
                stop_type: stop_type.unwrap_or_default(),
                execution_role_arn: execution_role_arn.unwrap_or_default(),
                iam_policy_arn: iam_policy_arn.unwrap_or_default(),
                iam_roles: iam_roles.unwrap_or_default(),
                instance_ids: instance_ids.unwrap_or_default(),
                instance_region: instance_region.unwrap_or_default(),
            };
            let policy = super::policy::validate(&input).map_err(AppError::InvalidFields)?;
            let pool = &crate::ctx::pool()?;
            let mut conn = pool.acquire().await?;
            let mut tx = conn.begin().await?;
            super::policy::save(&mut tx, &(&caller).into(), &policy)
                .await
                .map_err(|e| match e {
                    super::policy::SaveError::Invalid(field) => AppError::InvalidFields(vec![field]),
                    super::policy::SaveError::Database(e) => e.into(),
                })?;
            commit_and_disarm(tx, &caller.email).await
        }
        .await,
    )
}

/// Removes a team's override; the org default governs the team again (admins).
#[server(prefix = "/api", endpoint = "remove_policy")]
pub async fn remove_policy(team: String) -> Result<(), AppError> {
    use sqlx::Acquire;
    crate::error::with_status(
        async {
            let caller = crate::auth::require_admin()?;
            let pool = &crate::ctx::pool()?;
            let mut conn = pool.acquire().await?;
            let mut tx = conn.begin().await?;
            if !super::policy::remove_override(&mut tx, &(&caller).into(), &team).await? {
                return Err(AppError::NotFound(format!("no policy override for team {team:?}")));
            }
            commit_and_disarm(tx, &caller.email).await
        }
        .await,
    )
}
