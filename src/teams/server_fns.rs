//! The Teams admin page's server functions (admins only). Every save is the same
//! whole-state diff as `burnrate config import`, so both paths audit alike.

use leptos::prelude::*;

#[cfg(feature = "ssr")]
use super::model::TeamRow;
use super::model::TeamsAdminData;
use crate::error::AppError;

#[server(prefix = "/api", endpoint = "admin/teams")]
pub async fn list_team_mappings() -> Result<TeamsAdminData, AppError> {
    crate::auth::require_admin()?;
    let pool = &crate::ctx::pool()?;
    let mut conn = pool.acquire().await?;
    let teams = super::store::load(&mut conn)
        .await?
        .into_iter()
        .map(|(name, m)| TeamRow {
            name,
            owners: m.owners.into_iter().collect(),
            projects: m.projects.into_iter().collect(),
            users: m.users.into_iter().collect(),
            accounts: m.accounts.into_iter().collect(),
        })
        .collect();
    let unmapped = super::store::unmapped(&mut conn).await?;
    Ok(TeamsAdminData { teams, unmapped })
}

/// Creates a team (`original` empty) or replaces one's name, owners, projects, users and
/// AWS accounts. Lists are one entry per line. Projects, users or accounts listed here move
/// from any other team.
#[server(prefix = "/api", endpoint = "admin/save_team")]
pub async fn save_team(
    original: String,
    name: String,
    owners: String,
    projects: String,
    users: String,
    // Absent (a client from before accounts): the team keeps the accounts it has.
    accounts: Option<String>,
) -> Result<(), AppError> {
    let caller = crate::auth::require_admin()?;
    let edit = super::edit::TeamEdit::validate(&original, &name, &owners, &projects, &users, accounts.as_deref())?;
    let pool = crate::ctx::pool()?;
    super::edit::save(&pool, &(&caller).into(), edit).await?;
    // Disarmed enforcement actions lose their AWS side at once.
    crate::enforcement::executor::current()?.wake.notify_one();
    Ok(())
}

#[server(prefix = "/api", endpoint = "admin/delete_team")]
pub async fn delete_team(name: String) -> Result<(), AppError> {
    let caller = crate::auth::require_admin()?;
    let pool = crate::ctx::pool()?;
    super::edit::delete(&pool, &(&caller).into(), &name).await?;
    crate::enforcement::executor::current()?.wake.notify_one();
    Ok(())
}

/// Maps one unmapped project, user or AWS account to a team.
#[server(prefix = "/api", endpoint = "admin/assign")]
pub async fn assign(kind: String, name: String, team: String) -> Result<(), AppError> {
    let caller = crate::auth::require_admin()?;
    let pool = crate::ctx::pool()?;
    super::edit::assign(&pool, &(&caller).into(), &kind, &name, &team).await?;
    crate::enforcement::executor::current()?.wake.notify_one();
    Ok(())
}
