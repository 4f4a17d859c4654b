//! Team mappings as a whole: read the current state, compare it with a desired one, and
//! apply the difference in the caller's transaction with one audit entry per change.
//! The YAML import and every admin edit in the UI go through here.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use sqlx::PgConnection;

use crate::audit::record::{Actor, record};

/// One team's owners (lower-case emails), projects and users (tag values, verbatim).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TeamMapping {
    pub owners: BTreeSet<String>,
    pub projects: BTreeSet<String>,
    pub users: BTreeSet<String>,
}

/// Every team by name.
pub type Mappings = BTreeMap<String, TeamMapping>;

/// Reads every team with its owners, projects and users.
pub async fn load(conn: &mut PgConnection) -> Result<Mappings, sqlx::Error> {
    let mut teams: Mappings = sqlx::query_scalar::<_, String>("select name from teams")
        .fetch_all(&mut *conn)
        .await?
        .into_iter()
        .map(|name| (name, TeamMapping::default()))
        .collect();
    let members: Vec<(String, String, String)> = sqlx::query_as(
        "select 'owner', t.name, o.email from team_owners o join teams t on t.id = o.team_id
         union all select 'project', t.name, p.name from projects p join teams t on t.id = p.team_id
         union all select 'user', t.name, u.name from tagged_users u join teams t on t.id = u.team_id",
    )
    .fetch_all(&mut *conn)
    .await?;
    for (kind, team, value) in members {
        if let Some(mapping) = teams.get_mut(&team) {
            let set = match kind.as_str() {
                "owner" => &mut mapping.owners,
                "project" => &mut mapping.projects,
                _ => &mut mapping.users,
            };
            set.insert(value);
        }
    }
    Ok(teams)
}

/// One difference between two states, worded for the CLI, the UI and the audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    CreateTeam(String),
    DeleteTeam(String),
    AddOwner { team: String, email: String },
    RemoveOwner { team: String, email: String },
    MapProject { team: String, project: String },
    UnmapProject { team: String, project: String },
    MapUser { team: String, user: String },
    UnmapUser { team: String, user: String },
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::CreateTeam(team) => write!(f, "create team {team:?}"),
            Change::DeleteTeam(team) => write!(f, "delete team {team:?} (its projects and users become Unassigned)"),
            Change::AddOwner { team, email } => write!(f, "add owner {email} to {team:?}"),
            Change::RemoveOwner { team, email } => write!(f, "remove owner {email} from {team:?}"),
            Change::MapProject { team, project } => write!(f, "map project {project:?} to {team:?}"),
            Change::UnmapProject { team, project } => write!(f, "unmap project {project:?} from {team:?}"),
            Change::MapUser { team, user } => write!(f, "map user {user:?} to {team:?}"),
            Change::UnmapUser { team, user } => write!(f, "unmap user {user:?} from {team:?}"),
        }
    }
}

/// What turns `current` into `desired`, removals before additions (a project moving between
/// teams is unmapped, then mapped).
pub fn diff(current: &Mappings, desired: &Mappings) -> Vec<Change> {
    let empty = TeamMapping::default();
    let mut removals = Vec::new();
    let mut additions = Vec::new();
    for (team, mapping) in current {
        let wanted = desired.get(team).unwrap_or(&empty);
        for email in mapping.owners.difference(&wanted.owners) {
            removals.push(Change::RemoveOwner {
                team: team.clone(),
                email: email.clone(),
            });
        }
        for project in mapping.projects.difference(&wanted.projects) {
            removals.push(Change::UnmapProject {
                team: team.clone(),
                project: project.clone(),
            });
        }
        for user in mapping.users.difference(&wanted.users) {
            removals.push(Change::UnmapUser {
                team: team.clone(),
                user: user.clone(),
            });
        }
        if !desired.contains_key(team) {
            removals.push(Change::DeleteTeam(team.clone()));
        }
    }
    for (team, wanted) in desired {
        let had = current.get(team);
        if had.is_none() {
            additions.push(Change::CreateTeam(team.clone()));
        }
        let had = had.unwrap_or(&empty);
        for email in wanted.owners.difference(&had.owners) {
            additions.push(Change::AddOwner {
                team: team.clone(),
                email: email.clone(),
            });
        }
        for project in wanted.projects.difference(&had.projects) {
            additions.push(Change::MapProject {
                team: team.clone(),
                project: project.clone(),
            });
        }
        for user in wanted.users.difference(&had.users) {
            additions.push(Change::MapUser {
                team: team.clone(),
                user: user.clone(),
            });
        }
    }
    removals.extend(additions);
    removals
}

/// Applies `changes` (from `diff`) and audits each one, in the caller's transaction.
pub async fn apply(conn: &mut PgConnection, actor: &Actor, changes: &[Change]) -> Result<(), sqlx::Error> {
    for change in changes {
        let (sql, team, value): (&str, &str, Option<&str>) = match change {
            Change::CreateTeam(team) => ("insert into teams (name) values ($1)", team, None),
            Change::DeleteTeam(team) => ("delete from teams where name = $1", team, None),
            Change::AddOwner { team, email } => (
                "insert into team_owners (team_id, email) select id, $2 from teams where name = $1",
                team,
                Some(email),
            ),
            Change::RemoveOwner { team, email } => (
                "delete from team_owners where email = $2 and team_id = (select id from teams where name = $1)",
                team,
                Some(email),
            ),
            Change::MapProject { team, project } => (
                "insert into projects (name, team_id) select $2, id from teams where name = $1
                 on conflict (name) do update set team_id = excluded.team_id, updated_at = now()",
                team,
                Some(project),
            ),
            Change::UnmapProject { team, project } => (
                "update projects set team_id = null, updated_at = now()
                 where name = $2 and team_id = (select id from teams where name = $1)",
                team,
                Some(project),
            ),
            Change::MapUser { team, user } => (
                "insert into tagged_users (name, team_id) select $2, id from teams where name = $1
                 on conflict (name) do update set team_id = excluded.team_id, updated_at = now()",
                team,
                Some(user),
            ),
            Change::UnmapUser { team, user } => (
                "update tagged_users set team_id = null, updated_at = now()
                 where name = $2 and team_id = (select id from teams where name = $1)",
                team,
                Some(user),
            ),
        };
        sqlx::query(sql).bind(team).bind(value).execute(&mut *conn).await?;
        record(
            conn,
            actor,
            change.action(),
            team,
            serde_json::json!({ "change": change.to_string() }),
        )
        .await?;
    }
    Ok(())
}

impl Change {
    fn action(&self) -> &'static str {
        match self {
            Change::CreateTeam(_) => "team.create",
            Change::DeleteTeam(_) => "team.delete",
            Change::AddOwner { .. } => "team.owner.add",
            Change::RemoveOwner { .. } => "team.owner.remove",
            Change::MapProject { .. } => "team.project.map",
            Change::UnmapProject { .. } => "team.project.unmap",
            Change::MapUser { .. } => "team.user.map",
            Change::UnmapUser { .. } => "team.user.unmap",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn team(owners: &[&str], projects: &[&str], users: &[&str]) -> TeamMapping {
        let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        TeamMapping {
            owners: set(owners),
            projects: set(projects),
            users: set(users),
        }
    }

    #[test]
    fn a_project_moving_between_teams_is_unmapped_before_it_is_mapped() {
        let current = Mappings::from([
            ("a".into(), team(&["x@e.com"], &["p1", "p2"], &["u"])),
            ("b".into(), team(&[], &[], &[])),
        ]);
        let desired = Mappings::from([
            ("b".into(), team(&[], &["p2"], &[])),
            ("c".into(), team(&["y@e.com"], &[], &["u"])),
        ]);
        let changes: Vec<String> = diff(&current, &desired).iter().map(|c| c.to_string()).collect();
        assert_eq!(
            changes,
            [
                "remove owner x@e.com from \"a\"",
                "unmap project \"p1\" from \"a\"",
                "unmap project \"p2\" from \"a\"",
                "unmap user \"u\" from \"a\"",
                "delete team \"a\" (its projects and users become Unassigned)",
                "map project \"p2\" to \"b\"",
                "create team \"c\"",
                "add owner y@e.com to \"c\"",
                "map user \"u\" to \"c\"",
            ]
        );
        assert!(diff(&desired, &desired).is_empty());
    }
}
