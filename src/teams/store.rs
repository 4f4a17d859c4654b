//! Team mappings as a whole: read the current state, compare it with a desired one, and
//! apply the difference in the caller's transaction with one audit entry per change.
//! The YAML import and every admin edit in the UI go through here.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use sqlx::PgConnection;

use crate::audit_log::{Actor, record};

/// One team's owners (lower-case emails), projects and users (tag values, verbatim), and
/// AWS accounts (12-digit IDs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TeamMapping {
    pub owners: BTreeSet<String>,
    pub projects: BTreeSet<String>,
    pub users: BTreeSet<String>,
    pub accounts: BTreeSet<String>,
}

/// Every team by name.
pub type Mappings = BTreeMap<String, TeamMapping>;

/// One owner, project or user of a team.
#[derive(sqlx::FromRow)]
struct MemberRow {
    kind: String,
    team: String,
    value: String,
}

/// Reads every team with its owners, projects, users and accounts.
pub async fn load(conn: &mut PgConnection) -> Result<Mappings, sqlx::Error> {
    let mut teams: Mappings = sqlx::query_scalar::<_, String>("select name from teams")
        .fetch_all(&mut *conn)
        .await?
        .into_iter()
        .map(|name| (name, TeamMapping::default()))
        .collect();
    let members: Vec<MemberRow> = sqlx::query_as(
        "select 'owner' as kind, t.name as team, o.email as value from team_owners o join teams t on t.id = o.team_id
         union all select 'project', t.name, p.name from projects p join teams t on t.id = p.team_id
         union all select 'user', t.name, u.name from tagged_users u join teams t on t.id = u.team_id
         union all select 'account', t.name, a.account_id from team_accounts a join teams t on t.id = a.team_id",
    )
    .fetch_all(&mut *conn)
    .await?;
    for MemberRow { kind, team, value } in members {
        if let Some(mapping) = teams.get_mut(&team) {
            let set = match kind.as_str() {
                "owner" => &mut mapping.owners,
                "project" => &mut mapping.projects,
                "account" => &mut mapping.accounts,
                _ => &mut mapping.users,
            };
            set.insert(value);
        }
    }
    Ok(teams)
}

/// A team's four kinds of member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Member {
    Owner,
    Project,
    User,
    Account,
}

impl Member {
    const ALL: [Member; 4] = [Member::Owner, Member::Project, Member::User, Member::Account];

    fn key(self) -> &'static str {
        match self {
            Member::Owner => "owner",
            Member::Project => "project",
            Member::User => "user",
            Member::Account => "account",
        }
    }

    fn of(self, mapping: &TeamMapping) -> &BTreeSet<String> {
        match self {
            Member::Owner => &mapping.owners,
            Member::Project => &mapping.projects,
            Member::User => &mapping.users,
            Member::Account => &mapping.accounts,
        }
    }
}

/// One difference between two states, worded for the CLI, the UI and the audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    CreateTeam(String),
    DeleteTeam(String),
    Add {
        member: Member,
        team: String,
        value: String,
    },
    Remove {
        member: Member,
        team: String,
        value: String,
    },
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::CreateTeam(team) => write!(f, "create team {team:?}"),
            Change::DeleteTeam(team) => write!(
                f,
                "delete team {team:?} (its projects, users and accounts become Unassigned)"
            ),
            Change::Add {
                member: Member::Owner,
                team,
                value,
            } => write!(f, "add owner {value} to {team:?}"),
            Change::Remove {
                member: Member::Owner,
                team,
                value,
            } => write!(f, "remove owner {value} from {team:?}"),
            Change::Add { member, team, value } => write!(f, "map {} {value:?} to {team:?}", member.key()),
            Change::Remove { member, team, value } => write!(f, "unmap {} {value:?} from {team:?}", member.key()),
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
        for member in Member::ALL {
            for value in member.of(mapping).difference(member.of(wanted)) {
                removals.push(Change::Remove {
                    member,
                    team: team.clone(),
                    value: value.clone(),
                });
            }
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
        for member in Member::ALL {
            for value in member.of(wanted).difference(member.of(had)) {
                additions.push(Change::Add {
                    member,
                    team: team.clone(),
                    value: value.clone(),
                });
            }
        }
    }
    removals.extend(additions);
    removals
}

/// Applies `changes` (from `diff`) and audits each one, in the caller's transaction.
pub async fn apply(conn: &mut PgConnection, actor: &Actor, changes: &[Change]) -> Result<(), sqlx::Error> {
    for change in changes {
        // A team's policy override goes with it (on delete cascade): the audit entry keeps it.
        let removed_policy =
            match change {
                Change::DeleteTeam(team) => sqlx::query_scalar::<_, serde_json::Value>(
                    "select to_jsonb(p) - 'team_id' - 'id' from enforcement_policies p join teams t on t.id = p.team_id
                 where t.name = $1",
                )
                .bind(team)
                .fetch_optional(&mut *conn)
                .await?,
                _ => None,
            };
        let (sql, team, value): (&str, &str, Option<&str>) = match change {
            Change::CreateTeam(team) => ("insert into teams (name) values ($1)", team, None),
            Change::DeleteTeam(team) => ("delete from teams where name = $1", team, None),
            Change::Add { member, team, value } => (add_sql(*member), team, Some(value)),
            Change::Remove { member, team, value } => (remove_sql(*member), team, Some(value)),
        };
        sqlx::query(sql).bind(team).bind(value).execute(&mut *conn).await?;
        record(
            conn,
            actor,
            &change.action(),
            team,
            serde_json::json!({ "change": change.to_string(), "policy_override": removed_policy }),
        )
        .await?;
    }
    Ok(())
}

/// $1 is the team's name, $2 the member.
fn add_sql(member: Member) -> &'static str {
    match member {
        Member::Owner => "insert into team_owners (team_id, email) select id, $2 from teams where name = $1",
        Member::Project => {
            "insert into projects (name, team_id) select $2, id from teams where name = $1
             on conflict (name) do update set team_id = excluded.team_id, updated_at = now()"
        }
        Member::User => {
            "insert into tagged_users (name, team_id) select $2, id from teams where name = $1
             on conflict (name) do update set team_id = excluded.team_id, updated_at = now()"
        }
        Member::Account => {
            "insert into team_accounts (account_id, team_id) select $2, id from teams where name = $1
             on conflict (account_id) do update set team_id = excluded.team_id, updated_at = now()"
        }
    }
}

fn remove_sql(member: Member) -> &'static str {
    match member {
        Member::Owner => {
            "delete from team_owners where email = $2 and team_id = (select id from teams where name = $1)"
        }
        Member::Project => {
            "update projects set team_id = null, updated_at = now()
             where name = $2 and team_id = (select id from teams where name = $1)"
        }
        Member::User => {
            "update tagged_users set team_id = null, updated_at = now()
             where name = $2 and team_id = (select id from teams where name = $1)"
        }
        Member::Account => {
            "delete from team_accounts where account_id = $2 and team_id = (select id from teams where name = $1)"
        }
    }
}

impl Change {
    /// True when the change moves spend between teams (anything but an owner).
    pub fn moves_spend(&self) -> bool {
        !matches!(
            self,
            Change::Add {
                member: Member::Owner,
                ..
            } | Change::Remove {
                member: Member::Owner,
                ..
            }
        )
    }

    /// `team.create`, `team.project.map`, `team.owner.remove`, …
    fn action(&self) -> String {
        match self {
            Change::CreateTeam(_) => "team.create".into(),
            Change::DeleteTeam(_) => "team.delete".into(),
            Change::Add {
                member: Member::Owner, ..
            } => "team.owner.add".into(),
            Change::Remove {
                member: Member::Owner, ..
            } => "team.owner.remove".into(),
            Change::Add { member, .. } => format!("team.{}.map", member.key()),
            Change::Remove { member, .. } => format!("team.{}.unmap", member.key()),
        }
    }
}

/// Projects, users and AWS accounts no team owns, with their unblended spend over the last
/// 30 days, costliest first (at most 200). An account's spend is what its mapping would
/// move: the part no project or user mapping claims.
pub async fn unmapped(conn: &mut sqlx::PgConnection) -> Result<Vec<super::model::Unmapped>, sqlx::Error> {
    sqlx::query_as(
        "select 'project' as kind, p.name, '' as detail, coalesce(sum(c.unblended), 0) as spend_30d from projects p
           left join daily_project_costs c on c.project = p.name and c.day >= current_date - 30
           where p.team_id is null group by p.name
         union all
         select 'user', u.name, '', coalesce(sum(c.unblended), 0) from tagged_users u
           left join costs_by_user c on c.user_name = u.name and c.day >= current_date - 30
           where u.team_id is null group by u.name
         union all
         select 'account', c.account_id, coalesce(max(n.name), ''), sum(c.unblended) from allocated_daily_costs c
           left join aws_accounts n on n.account_id = c.account_id
           where c.account_id <> '' and c.source in ('shared', 'unassigned') and c.day >= current_date - 30
             and not exists (select 1 from team_accounts a where a.account_id = c.account_id)
           group by c.account_id
         order by 4 desc, 2 limit 200",
    )
    .fetch_all(conn)
    .await
}

/// What `changes` moved, for the allocation to rewrite only those days.
/// Applies `changes` (as [`apply`]) and says what they moved: a deleted team's days are read
/// before its allocated rows go with it.
pub async fn apply_moving(
    conn: &mut PgConnection,
    actor: &Actor,
    changes: &[Change],
) -> Result<crate::allocation::moves::Moved, sqlx::Error> {
    let deleted: Vec<&str> = changes
        .iter()
        .filter_map(|c| match c {
            Change::DeleteTeam(team) => Some(team.as_str()),
            _ => None,
        })
        .collect();
    let deleted = crate::allocation::moves::before_deleting(conn, &deleted).await?;
    apply(conn, actor, changes).await?;
    Ok(crate::allocation::moves::Moved {
        deleted,
        ..moved(changes)
    })
}

pub fn moved(changes: &[Change]) -> crate::allocation::moves::Moved {
    let mut moved = crate::allocation::moves::Moved::default();
    for change in changes {
        match change {
            Change::CreateTeam(_) => moved.team_created = true,
            // What a deletion moves is read before it (`apply_moving`).
            Change::DeleteTeam(_) => {}
            Change::Add { member, value, .. } | Change::Remove { member, value, .. } => match member {
                Member::Project => moved.projects.push(value.clone()),
                Member::User => moved.users.push(value.clone()),
                Member::Account => moved.accounts.push(value.clone()),
                Member::Owner => {}
            },
        }
    }
    moved
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_change_moves_is_its_projects_and_users_and_whether_a_team_came_or_went() {
        let add = |member, value: &str| Change::Add {
            member,
            team: "ml".into(),
            value: value.into(),
        };
        let changes = [
            add(Member::Project, "train"),
            add(Member::Owner, "a@example.com"),
            add(Member::Account, "111122223333"),
            Change::Remove {
                member: Member::User,
                team: "web".into(),
                value: "carol".into(),
            },
        ];
        let moved = moved(&changes);
        assert_eq!(moved.projects, ["train"]);
        assert_eq!(moved.users, ["carol"]);
        assert_eq!(moved.accounts, ["111122223333"]);
        assert!(moved.deleted.ids.is_empty() && !moved.team_created);
        assert!(moved_for(Change::CreateTeam("new".into())).team_created);
        assert_eq!(moved_for(Change::DeleteTeam("old".into())), Default::default());
        assert_eq!(moved_for(add(Member::Owner, "b@example.com")), Default::default());
    }

    fn moved_for(change: Change) -> crate::allocation::moves::Moved {
        moved(&[change])
    }

    fn team(owners: &[&str], projects: &[&str], users: &[&str]) -> TeamMapping {
        let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        TeamMapping {
            owners: set(owners),
            projects: set(projects),
            users: set(users),
            accounts: Default::default(),
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
                "delete team \"a\" (its projects, users and accounts become Unassigned)",
                "map project \"p2\" to \"b\"",
                "create team \"c\"",
                "add owner y@e.com to \"c\"",
                "map user \"u\" to \"c\"",
            ]
        );
        assert!(diff(&desired, &desired).is_empty());
    }
}
