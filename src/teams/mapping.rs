//! Team mappings as values: one team's members, and the changes that turn one state of
//! every team into another, worded for the CLI, the UI and the audit log. `store` reads
//! and applies them.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

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

    pub(super) fn key(self) -> &'static str {
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
        removals.extend(only_in(team, mapping, wanted, |member, team, value| Change::Remove {
            member,
            team,
            value,
        }));
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
        additions.extend(only_in(team, wanted, had, |member, team, value| Change::Add {
            member,
            team,
            value,
        }));
    }
    removals.extend(additions);
    removals
}

/// `change` for each member `team` has in `this` but not in `other`.
fn only_in(
    team: &str,
    this: &TeamMapping,
    other: &TeamMapping,
    change: fn(Member, String, String) -> Change,
) -> Vec<Change> {
    Member::ALL
        .into_iter()
        .flat_map(|member| {
            member
                .of(this)
                .difference(member.of(other))
                .map(move |value| change(member, team.to_string(), value.clone()))
        })
        .collect()
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
    pub(super) fn action(&self) -> String {
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

/// What `changes` moved, for the allocation to rewrite only those days.
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
