//! Teams as code: `burnrate config import FILE` and `burnrate config export`.
//!
//! teams:
//!   - name: ml-research
//!     owners: [alice@example.com]
//!     projects: [llm-finetune, rlhf-eval]
//!     users: [alice, bob]
//!
//! The file is the whole truth for teams: import checks it entirely first (every problem is
//! reported with its line), then makes the database match in one transaction. A file with no
//! `teams:` section leaves teams alone.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use saphyr::{LoadableYamlNode, MarkedYaml, Scalar, YamlData};
use sqlx::{Acquire, PgPool};

use super::store::{self, Change, Mappings, TeamMapping};
use crate::audit::record::Actor;

/// The sections this version reads. Later versions add `budgets:` and `approvals:`.
const SECTIONS: [&str; 1] = ["teams"];
const TEAM_KEYS: [&str; 4] = ["name", "owners", "projects", "users"];

/// One problem in the file, at a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// A checked file. `teams` is `None` when the file has no `teams:` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigFile {
    pub teams: Option<Mappings>,
}

/// Parses and checks the whole file, returning every problem found, in line order.
pub fn parse(text: &str) -> Result<ConfigFile, Vec<FileError>> {
    let documents = MarkedYaml::load_from_str(text).map_err(|e| {
        vec![FileError {
            line: e.marker().line(),
            message: format!("not valid YAML: {}", e.info()),
        }]
    })?;
    let mut errors = Errors::default();
    let teams = match documents.as_slice() {
        [] => None,
        [root] => read_root(root, &mut errors),
        [_, second, ..] => {
            errors.add(second, "the file must hold one YAML document");
            None
        }
    };
    if errors.0.is_empty() {
        Ok(ConfigFile { teams })
    } else {
        errors.0.sort_by_key(|e| e.line);
        Err(errors.0)
    }
}

#[derive(Default)]
struct Errors(Vec<FileError>);

impl Errors {
    fn add(&mut self, node: &MarkedYaml, message: impl Into<String>) {
        self.0.push(FileError {
            line: node.span.start.line(),
            message: message.into(),
        });
    }
}

fn read_root(root: &MarkedYaml, errors: &mut Errors) -> Option<Mappings> {
    let YamlData::Mapping(sections) = &root.data else {
        if !matches!(root.data, YamlData::Value(Scalar::Null)) {
            errors.add(root, "expected sections such as `teams:` at the top level");
        }
        return None;
    };
    let mut teams = None;
    for (key, value) in sections {
        match text(key).as_deref() {
            Some("teams") => teams = Some(read_teams(value, errors)),
            Some(other) => errors.add(
                key,
                format!("unknown section {other:?}; expected one of: {}", SECTIONS.join(", ")),
            ),
            None => errors.add(key, "section names must be text"),
        }
    }
    teams
}

fn read_teams(node: &MarkedYaml, errors: &mut Errors) -> Mappings {
    let mut teams = Mappings::new();
    let entries = match &node.data {
        YamlData::Sequence(entries) => entries.as_slice(),
        YamlData::Value(Scalar::Null) => &[],
        _ => {
            errors.add(node, "`teams` must be a list of teams (`- name: …`)");
            return teams;
        }
    };
    // Lower-cased team name, project and user -> where they were first claimed, so a second
    // claim can name the first.
    let mut names: HashMap<String, usize> = HashMap::new();
    let mut claimed_projects: HashMap<String, String> = HashMap::new();
    let mut claimed_users: HashMap<String, String> = HashMap::new();
    for entry in entries {
        let Some((name, mapping)) = read_team(entry, errors) else {
            continue;
        };
        if let Some(line) = names.insert(name.to_lowercase(), entry.span.start.line()) {
            errors.add(entry, format!("team {name:?} is listed twice (first on line {line})"));
            continue;
        }
        for (kind, values, claimed) in [
            ("project", &mapping.projects, &mut claimed_projects),
            ("user", &mapping.users, &mut claimed_users),
        ] {
            for value in values {
                if let Some(other) = claimed.insert(value.clone(), name.clone()) {
                    errors.add(
                        entry,
                        format!(
                            "{kind} {value:?} is in team {other:?} and team {name:?}; a {kind} belongs to one team"
                        ),
                    );
                }
            }
        }
        teams.insert(name, mapping);
    }
    teams
}

fn read_team(entry: &MarkedYaml, errors: &mut Errors) -> Option<(String, TeamMapping)> {
    let YamlData::Mapping(fields) = &entry.data else {
        errors.add(
            entry,
            "each team must be a mapping with `name:`, `owners:`, `projects:` and `users:`",
        );
        return None;
    };
    let mut name = None;
    let mut mapping = TeamMapping::default();
    for (key, value) in fields {
        let key_text = text(key).unwrap_or_default();
        match key_text.as_str() {
            "name" => match text(value).map(|n| super::edit::check_team_name(&n)) {
                Some(Ok(n)) => name = Some(n),
                Some(Err(message)) => errors.add(value, message),
                None => {
                    errors.add(value, "a team name must be text (quote it if it looks like a number)");
                }
            },
            "owners" => {
                for (node, owner) in list(value, "owners", errors) {
                    match crate::auth::accounts::validate_email(&owner) {
                        Ok(email) => {
                            mapping.owners.insert(email);
                        }
                        Err(_) => {
                            errors.add(node, format!("owner {owner:?} is not an email address"));
                        }
                    }
                }
            }
            "projects" | "users" => {
                let set = if key_text == "projects" {
                    &mut mapping.projects
                } else {
                    &mut mapping.users
                };
                for (node, value) in list(value, &key_text, errors) {
                    if value.is_empty() || value.contains('\0') {
                        errors.add(
                            node,
                            format!("{key_text} entries must be non-empty text without NUL characters"),
                        );
                    } else if !set.insert(value.clone()) {
                        errors.add(node, format!("{value:?} is listed twice in {key_text}"));
                    }
                }
            }
            other => {
                errors.add(
                    key,
                    format!("unknown field {other:?}; expected one of: {}", TEAM_KEYS.join(", ")),
                );
            }
        }
    }
    if name.is_none() && !fields.iter().any(|(k, _)| text(k).as_deref() == Some("name")) {
        errors.add(entry, "this team has no `name:`");
    }
    // Returned even with errors elsewhere, so conflicts with later teams are reported too.
    Some((name?, mapping))
}

/// The text items of a list field, each with its node for error lines.
fn list<'a, 'input>(
    node: &'a MarkedYaml<'input>,
    field: &str,
    errors: &mut Errors,
) -> Vec<(&'a MarkedYaml<'input>, String)> {
    let items = match &node.data {
        YamlData::Sequence(items) => items.as_slice(),
        YamlData::Value(Scalar::Null) => &[],
        _ => {
            errors.add(node, format!("`{field}` must be a list, e.g. [a, b]"));
            return Vec::new();
        }
    };
    let mut values = Vec::new();
    for item in items {
        match text(item) {
            Some(value) => values.push((item, value)),
            None => errors.add(
                item,
                format!("`{field}` entries must be text (quote values that look like numbers)"),
            ),
        }
    }
    values
}

/// A scalar's text. Numbers, booleans and nulls are refused rather than converted, since a
/// tag value `007` or `true` would not survive the round trip.
fn text(node: &MarkedYaml) -> Option<String> {
    match &node.data {
        YamlData::Value(Scalar::String(s)) => Some(s.to_string()),
        _ => None,
    }
}

/// Makes the database match `file` in one transaction (or, with `dry_run`, only reports what
/// would change). Returns the changes in the order applied.
pub async fn apply(pool: &PgPool, actor: &Actor, file: &ConfigFile, dry_run: bool) -> Result<Vec<Change>, sqlx::Error> {
    let Some(desired) = &file.teams else {
        return Ok(Vec::new());
    };
    let mut conn = pool.acquire().await?;
    let mut tx = conn.begin().await?;
    let current = store::load(&mut tx).await?;
    let changes = store::diff(&current, desired);
    if dry_run {
        tx.rollback().await?;
    } else {
        store::apply(&mut tx, actor, &changes).await?;
        tx.commit().await?;
    }
    Ok(changes)
}

/// The current teams as a file `import` accepts unchanged. Every value is a double-quoted
/// YAML string (JSON's escapes), so any tag value survives.
pub async fn export(pool: &PgPool) -> Result<String, sqlx::Error> {
    let mut conn = pool.acquire().await?;
    let teams = store::load(&mut conn).await?;
    Ok(render(&teams))
}

fn render(teams: &BTreeMap<String, TeamMapping>) -> String {
    let quote = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into());
    let list =
        |values: &std::collections::BTreeSet<String>| values.iter().map(|v| quote(v)).collect::<Vec<_>>().join(", ");
    let mut out = String::from("# burnrate teams: `burnrate config import FILE` makes the database match this file.\n");
    if teams.is_empty() {
        out.push_str("teams: []\n");
        return out;
    }
    out.push_str("teams:\n");
    for (name, team) in teams {
        out.push_str(&format!("  - name: {}\n", quote(name)));
        out.push_str(&format!("    owners: [{}]\n", list(&team.owners)));
        out.push_str(&format!("    projects: [{}]\n", list(&team.projects)));
        out.push_str(&format!("    users: [{}]\n", list(&team.users)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_example_parses() {
        let file = parse(
            "teams:\n  - name: ml-research\n    owners: [Alice@Example.com]\n    projects: [llm-finetune, rlhf-eval]\n    users: [alice, bob]\n",
        )
        .expect("valid");
        let teams = file.teams.expect("teams section");
        let team = &teams["ml-research"];
        assert!(team.owners.contains("alice@example.com"));
        assert_eq!(team.projects.len(), 2);
        assert_eq!(team.users.len(), 2);
        assert_eq!(parse("# nothing\n").expect("empty").teams, None);
    }

    #[test]
    fn every_bad_entry_is_named_with_its_line() {
        let text = "\
teams:
  - name: a
    owners: [not-an-email]
    projects: [p1, 2024]
  - name: Unassigned
  - name: b
    projects: [p1]
    colour: red
  - name: A
budgets: []
";
        let errors: Vec<String> = parse(text)
            .expect_err("invalid")
            .iter()
            .map(|e| e.to_string())
            .collect();
        assert_eq!(
            errors,
            [
                "line 3: owner \"not-an-email\" is not an email address",
                "line 4: `projects` entries must be text (quote values that look like numbers)",
                "line 5: \"Unassigned\" is reserved for unmapped spend; choose another team name",
                "line 6: project \"p1\" is in team \"a\" and team \"b\"; a project belongs to one team",
                "line 8: unknown field \"colour\"; expected one of: name, owners, projects, users",
                "line 9: team \"A\" is listed twice (first on line 2)",
                "line 10: unknown section \"budgets\"; expected one of: teams",
            ]
        );
        let syntax = parse("teams:\n  - name: [unclosed\n").expect_err("bad yaml");
        assert!(syntax[0].message.starts_with("not valid YAML"), "{syntax:?}");
    }

    #[test]
    fn export_round_trips_hostile_tag_values() {
        let hostile = "<img src=x onerror=alert(1)> \"quoted\" #not-a-comment: yes\\ ü";
        let teams = Mappings::from([(
            "team: with colon".to_string(),
            TeamMapping {
                owners: ["o@example.com".to_string()].into(),
                projects: [hostile.to_string(), "007".to_string(), "true".to_string()].into(),
                users: ["- dash".to_string()].into(),
            },
        )]);
        let parsed = parse(&render(&teams)).expect("export is importable");
        assert_eq!(parsed.teams, Some(teams));
        assert_eq!(
            parse(&render(&Mappings::new())).expect("empty").teams,
            Some(Mappings::new())
        );
    }
}
