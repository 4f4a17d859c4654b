//! Teams and budgets as code: `burnrate config import FILE` and `burnrate config export`.
//!
//! ```yaml
//! teams:
//!   - name: ml-research
//!     owners: [alice@example.com]
//!     projects: [llm-finetune, rlhf-eval]
//!     users: [alice, bob]
//! budgets:            # see budgets.rs
//!   - name: ml-research monthly
//!     scope: {team: ml-research}
//! ```
//!
//! Each section present is the whole truth for what it describes: import checks the entire
//! file first (every problem is reported with its line), then makes the database match in
//! one transaction. A section left out leaves its part of the database alone.

pub mod approvals;
pub mod budgets;
mod budgets_sync;
pub mod policies;

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use saphyr::{LoadableYamlNode, MarkedYaml, Scalar, YamlData};
use sqlx::{Acquire, PgPool};

use crate::audit_log::Actor;
use crate::teams::store::{self, Mappings, TeamMapping};

/// The sections this version reads.
const SECTIONS: [&str; 4] = ["teams", "budgets", "approvals", "policies"];
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

/// A checked file. A section is `None` when the file leaves it out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigFile {
    pub teams: Option<Mappings>,
    pub budgets: Option<Vec<budgets::FileBudget>>,
    pub approvals: Option<Vec<crate::enforcement::Approval>>,
    pub policies: Option<Vec<policies::FilePolicy>>,
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
    let mut file = ConfigFile {
        teams: None,
        budgets: None,
        approvals: None,
        policies: None,
    };
    match documents.as_slice() {
        [] => {}
        [root] => read_root(root, &mut file, &mut errors),
        [_, second, ..] => errors.add(second, "the file must hold one YAML document"),
    }
    if errors.0.is_empty() {
        Ok(file)
    } else {
        errors.0.sort_by_key(|e| e.line);
        Err(errors.0)
    }
}

#[derive(Default)]
pub(crate) struct Errors(Vec<FileError>);

impl Errors {
    pub(crate) fn add(&mut self, node: &MarkedYaml, message: impl Into<String>) {
        self.0.push(FileError {
            line: node.span.start.line(),
            message: message.into(),
        });
    }
}

fn read_root(root: &MarkedYaml, file: &mut ConfigFile, errors: &mut Errors) {
    let YamlData::Mapping(sections) = &root.data else {
        if !matches!(root.data, YamlData::Value(Scalar::Null)) {
            errors.add(root, "expected sections such as `teams:` at the top level");
        }
        return;
    };
    for (key, value) in sections {
        match text(key).as_deref() {
            Some("teams") => file.teams = Some(read_teams(value, errors)),
            Some("budgets") => file.budgets = Some(budgets::read(value, errors)),
            Some("approvals") => file.approvals = Some(approvals::read(value, errors)),
            Some("policies") => file.policies = Some(policies::read(value, errors)),
            Some(other) => errors.add(
                key,
                format!("unknown section {other:?}; expected one of: {}", SECTIONS.join(", ")),
            ),
            None => errors.add(key, "section names must be text"),
        }
    }
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
            "name" => match text(value).map(|n| crate::teams::edit::check_team_name(&n)) {
                Some(Ok(n)) => name = Some(n),
                Some(Err(message)) => errors.add(value, message),
                None => {
                    errors.add(value, "a team name must be text (quote it if it looks like a number)");
                }
            },
            "owners" => {
                for (node, owner) in list(value, "owners", errors) {
                    match crate::mail::address::validate_email(&owner) {
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
pub(crate) fn list<'a, 'input>(
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
pub(crate) fn text(node: &MarkedYaml) -> Option<String> {
    match &node.data {
        YamlData::Value(Scalar::String(s)) => Some(s.to_string()),
        _ => None,
    }
}

/// Why an import changed nothing.
#[derive(Debug)]
pub enum ApplyError {
    /// The file is valid on its own but names something the database lacks.
    Invalid(Vec<FileError>),
    Database(sqlx::Error),
}

impl From<sqlx::Error> for ApplyError {
    fn from(err: sqlx::Error) -> Self {
        ApplyError::Database(err)
    }
}

impl fmt::Display for ApplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApplyError::Invalid(errors) => {
                let lines: Vec<String> = errors.iter().map(FileError::to_string).collect();
                write!(f, "{}", lines.join("\n"))
            }
            ApplyError::Database(err) => write!(f, "database error: {err}"),
        }
    }
}

/// No `source`: the message already carries the database error, and the CLI prints the
/// whole chain.
impl std::error::Error for ApplyError {}

/// Makes the database match `file` in one transaction (or, with `dry_run`, only reports what
/// would change). Returns the changes in the order applied. Teams go first, so budgets may
/// name teams the same file creates.
pub async fn apply(pool: &PgPool, actor: &Actor, file: &ConfigFile, dry_run: bool) -> Result<Vec<String>, ApplyError> {
    let mut conn = pool.acquire().await?;
    let mut tx = conn.begin().await?;
    let mut changes = Vec::new();
    if let Some(desired) = &file.teams {
        let current = store::load(&mut tx).await?;
        let team_changes = store::diff(&current, desired);
        store::apply(&mut tx, actor, &team_changes).await?;
        changes.extend(team_changes.iter().map(ToString::to_string));
    }
    if let Some(desired) = &file.budgets {
        changes.extend(budgets_sync::apply(&mut tx, actor, desired).await?);
    }
    if let Some(desired) = &file.approvals {
        changes.extend(approvals::apply(&mut tx, actor, desired).await?);
    }
    if let Some(desired) = &file.policies {
        changes.extend(policies::apply(&mut tx, actor, desired).await?);
    }
    // Deferred checks run now, in a dry run too: a deleted team still named by a budget is refused.
    sqlx::query("set constraints all immediate")
        .execute(&mut *tx)
        .await
        .map_err(|err| match budgets_sync::team_still_budgeted(&err) {
            Some(message) => ApplyError::Invalid(vec![FileError { line: 1, message }]),
            None => ApplyError::Database(err),
        })?;
    if dry_run {
        tx.rollback().await?;
    } else {
        // Approvals and policies change what enforcement may do: actions that no longer hold
        // are disarmed in the same transaction (their AWS side goes on the next pass).
        if file.approvals.is_some() || file.policies.is_some() || file.teams.is_some() {
            crate::enforcement::judge::disarm_stale(&mut tx, &actor.label, chrono::Utc::now().date_naive()).await?;
        }
        tx.commit().await?;
    }
    Ok(changes)
}

/// The current teams, budgets, approvals and policies as a file `import` accepts unchanged. Every value is a
/// double-quoted YAML string (JSON's escapes), so any tag value survives.
pub async fn export(pool: &PgPool) -> Result<String, sqlx::Error> {
    let mut conn = pool.acquire().await?;
    let teams = store::load(&mut conn).await?;
    let budgets = crate::budgets::store::list(&mut conn).await?;
    let approvals = crate::enforcement::approvals::current(&mut conn).await?;
    let policies = crate::enforcement::policy::all(&mut conn).await?;
    Ok(format!(
        "{}{}{}{}",
        render(&teams),
        budgets_sync::render(&budgets),
        approvals::render(&approvals),
        policies::render(&policies)
    ))
}

/// A YAML double-quoted string.
pub(crate) fn quote(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}

fn render(teams: &BTreeMap<String, TeamMapping>) -> String {
    let list =
        |values: &std::collections::BTreeSet<String>| values.iter().map(|v| quote(v)).collect::<Vec<_>>().join(", ");
    let mut out = String::from(
        "# burnrate teams, budgets, approvals and policies: `burnrate config import FILE` makes the database match this file.\n",
    );
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
sizes: []
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
                "line 10: unknown section \"sizes\"; expected one of: teams, budgets, approvals, policies",
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
