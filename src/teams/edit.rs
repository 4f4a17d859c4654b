//! Admin edits from the Teams page, each applied as a whole-state diff in one transaction.

use sqlx::{Acquire, PgPool};

use super::mapping::{self, Mappings, TeamMapping};
use super::store;
use crate::audit_log::Actor;
use crate::error::AppError;
use crate::period::AwsAccountId;

/// A team name's rule, shared with the YAML file: 1-100 characters, and not "Unassigned",
/// which is where unmapped spend is shown.
pub fn check_team_name(name: &str) -> Result<String, &'static str> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 100 {
        Err("a team name must be 1 to 100 characters")
    } else if name.eq_ignore_ascii_case("unassigned") {
        Err("\"Unassigned\" is reserved for unmapped spend; choose another team name")
    } else {
        Ok(name.to_string())
    }
}

/// A checked form submission.
#[derive(Debug, Clone)]
pub struct TeamEdit {
    pub original: Option<String>,
    pub name: String,
    pub mapping: TeamMapping,
    /// No accounts were given: the team keeps its own.
    pub keep_accounts: bool,
}

impl TeamEdit {
    pub fn validate(
        original: &str,
        name: &str,
        owners: &str,
        projects: &str,
        users: &str,
        accounts: Option<&str>,
    ) -> Result<TeamEdit, AppError> {
        let name = check_team_name(name).map_err(|m| AppError::invalid("name", m))?;
        let mut mapping = TeamMapping::default();
        for owner in entries(owners) {
            let email = crate::mail::address::validate_email(owner)
                .map_err(|_| AppError::invalid("owners", format!("{owner:?} is not an email address")))?;
            mapping.owners.insert(email);
        }
        for (field, text, set) in [
            ("projects", projects, &mut mapping.projects),
            ("users", users, &mut mapping.users),
        ] {
            for value in entries(text) {
                if value.contains('\0') {
                    return Err(AppError::invalid(field, "entries cannot contain NUL characters"));
                }
                set.insert(value.to_string());
            }
        }
        for account in entries(accounts.unwrap_or_default()) {
            let id = AwsAccountId::parse(account).map_err(|m| AppError::invalid("accounts", m))?;
            mapping.accounts.insert(id.into());
        }
        Ok(TeamEdit {
            original: Some(original.trim().to_string()).filter(|o| !o.is_empty()),
            name,
            mapping,
            keep_accounts: accounts.is_none(),
        })
    }
}

/// Non-empty lines; tag values keep inner spaces but lose the line's edges.
fn entries(text: &str) -> impl Iterator<Item = &str> {
    text.lines().map(str::trim).filter(|l| !l.is_empty())
}

/// Applies `change` to the current mappings and returns how many changes it made.
async fn update(
    pool: &PgPool,
    actor: &Actor,
    rename: Option<(&str, &str)>,
    change: impl FnOnce(&mut Mappings) -> Result<(), AppError>,
) -> Result<usize, AppError> {
    let mut conn = pool.acquire().await?;
    let mut tx = conn.begin().await?;
    if let Some((from, to)) = rename.filter(|(from, to)| from != to) {
        // Renaming keeps the team's id, so budgets and history stay attached.
        let renamed = sqlx::query("update teams set name = $2, updated_at = now() where name = $1")
            .bind(from)
            .bind(to)
            .execute(&mut *tx)
            .await
            .map_err(|_| AppError::invalid("name", "another team already has this name"))?;
        if renamed.rows_affected() == 0 {
            return Err(AppError::NotFound("no such team".into()));
        }
        crate::audit_log::record(&mut tx, actor, "team.rename", to, serde_json::json!({ "from": from })).await?;
    }
    let current = store::load(&mut tx).await?;
    let mut desired = current.clone();
    change(&mut desired)?;
    let changes = mapping::diff(&current, &desired);
    let moved = store::apply_moving(&mut tx, actor, &changes).await?;
    // Who owns a project or a user tag decides who pays on the days it has spend.
    if changes.iter().any(mapping::Change::moves_spend) {
        crate::allocation::moves::refresh_moved(&mut tx, &moved).await?;
    }
    tx.commit().await?;
    drop(conn);
    // A project moved to another team (or left Unassigned by its team's deletion) falls
    // under another policy: its actions that no longer hold are disarmed once the move has
    // committed, not across its allocation rewrite (their AWS side goes on the next pass).
    // A verdict reads only the project's team, so no other action is judged.
    let touched = crate::enforcement::judge::Touched::Projects(moved.projects);
    crate::enforcement::judge::disarm_after_change(pool, &actor.label, &touched).await;
    Ok(changes.len())
}

pub async fn save(pool: &PgPool, actor: &Actor, edit: TeamEdit) -> Result<usize, AppError> {
    let rename = edit.original.as_deref().map(|original| (original, edit.name.as_str()));
    let creating = edit.original.is_none();
    update(pool, actor, rename, |teams| {
        if creating && teams.keys().any(|t| t.eq_ignore_ascii_case(&edit.name)) {
            return Err(AppError::invalid("name", "another team already has this name"));
        }
        if !creating && !teams.contains_key(&edit.name) {
            return Err(AppError::NotFound("no such team".into()));
        }
        let mut wanted = edit.mapping.clone();
        if edit.keep_accounts {
            // A rename has happened by now: the team is under its new name.
            wanted.accounts = teams.get(&edit.name).map(|t| t.accounts.clone()).unwrap_or_default();
        }
        // Listed projects, users and accounts move here from wherever they were.
        for (other, mapping) in teams.iter_mut() {
            if *other != edit.name {
                mapping.projects.retain(|p| !edit.mapping.projects.contains(p));
                mapping.users.retain(|u| !edit.mapping.users.contains(u));
                mapping.accounts.retain(|a| !edit.mapping.accounts.contains(a));
            }
        }
        teams.insert(edit.name.clone(), wanted);
        Ok(())
    })
    .await
}

pub async fn delete(pool: &PgPool, actor: &Actor, name: &str) -> Result<usize, AppError> {
    let mut conn = pool.acquire().await?;
    let budgets = crate::budgets::store::names_for_team(&mut conn, name).await?;
    drop(conn);
    if !budgets.is_empty() {
        return Err(AppError::invalid(
            "name",
            format!(
                "team {name:?} still has budgets ({}); delete or rescope them first",
                budgets.join(", ")
            ),
        ));
    }
    update(pool, actor, None, |teams| {
        teams
            .remove(name)
            .map(|_| ())
            .ok_or(AppError::NotFound("no such team".into()))
    })
    .await
}

pub async fn assign(pool: &PgPool, actor: &Actor, kind: &str, name: &str, team: &str) -> Result<usize, AppError> {
    let name = match kind {
        "account" => AwsAccountId::parse(name)
            .map_err(|m| AppError::invalid("name", m))?
            .into(),
        _ => name.to_string(),
    };
    update(pool, actor, None, |teams| {
        let target = teams
            .get_mut(team)
            .ok_or_else(|| AppError::invalid("team", "no such team"))?;
        match kind {
            "project" => target.projects.insert(name),
            "user" => target.users.insert(name),
            "account" => target.accounts.insert(name),
            _ => return Err(AppError::invalid("kind", "expected project, user or account")),
        };
        Ok(())
    })
    .await
}
