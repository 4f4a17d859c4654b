//! The `teams:` section: each team's owners, projects, tagged users and AWS accounts (whose
//! untagged spend is the team's). A project is its tag value, or a map declaring what it
//! runs:
//!
//! ```yaml
//! projects:
//!   - llm-finetune
//!   - {name: llm-serving, workload: serving, model: {params_b: 7, precision: bf16}}
//! ```
//!
//! `workload` is training, batch, serving, dev or unknown (the default); `precision` is
//! fp32, bf16, fp16, int8 or int4. A project listed as a plain string declares nothing, so
//! importing resets it to unknown: the file is the whole truth for the projects it lists.

use std::collections::{BTreeMap, HashMap};

use saphyr::{MarkedYaml, Scalar, YamlData};

use super::{Errors, list, quote, text};
use super::{account_id, number_text};
use crate::savings::model::{Model, Precision, ProjectFacts, Workload};
use crate::teams::mapping::{Mappings, TeamMapping};

/// What each listed project declares, by tag value.
pub type ProjectFactsMap = BTreeMap<String, ProjectFacts>;

const TEAM_KEYS: [&str; 5] = ["name", "owners", "projects", "users", "accounts"];
const PROJECT_KEYS: [&str; 3] = ["name", "workload", "model"];

pub(super) fn read_teams(node: &MarkedYaml, errors: &mut Errors) -> (Mappings, ProjectFactsMap) {
    let mut teams = Mappings::new();
    let mut facts = ProjectFactsMap::new();
    let entries = match &node.data {
        YamlData::Sequence(entries) => entries.as_slice(),
        YamlData::Value(Scalar::Null) => &[],
        _ => {
            errors.add(node, "`teams` must be a list of teams (`- name: …`)");
            return (teams, facts);
        }
    };
    // Lower-cased team name, project and user -> where they were first claimed, so a second
    // claim can name the first.
    let mut names: HashMap<String, usize> = HashMap::new();
    let mut claimed_projects: HashMap<String, String> = HashMap::new();
    let mut claimed_users: HashMap<String, String> = HashMap::new();
    let mut claimed_accounts: HashMap<String, String> = HashMap::new();
    for entry in entries {
        let Some((name, mapping, declared)) = read_team(entry, errors) else {
            continue;
        };
        if let Some(line) = names.insert(name.to_lowercase(), entry.span.start.line()) {
            errors.add(entry, format!("team {name:?} is listed twice (first on line {line})"));
            continue;
        }
        for (kind, values, claimed) in [
            ("project", &mapping.projects, &mut claimed_projects),
            ("user", &mapping.users, &mut claimed_users),
            ("account", &mapping.accounts, &mut claimed_accounts),
        ] {
            for value in values {
                if let Some(other) = claimed.insert(value.clone(), name.clone()) {
                    errors.add(
                        entry,
                        format!(
                            "{kind} {value:?} is in team {other:?} and team {name:?}; {} {kind} belongs to one team",
                            if kind.starts_with('a') { "an" } else { "a" }
                        ),
                    );
                }
            }
        }
        facts.extend(declared);
        teams.insert(name, mapping);
    }
    (teams, facts)
}

fn read_team(entry: &MarkedYaml, errors: &mut Errors) -> Option<(String, TeamMapping, ProjectFactsMap)> {
    let YamlData::Mapping(fields) = &entry.data else {
        errors.add(
            entry,
            "each team must be a mapping with `name:`, `owners:`, `projects:` and `users:`",
        );
        return None;
    };
    let mut name = None;
    let mut mapping = TeamMapping::default();
    let mut facts = ProjectFactsMap::new();
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
            "projects" => read_projects(value, &mut mapping, &mut facts, errors),
            "users" => {
                for (node, value) in list(value, "users", errors) {
                    if value.is_empty() || value.contains('\0') {
                        errors.add(node, "users entries must be non-empty text without NUL characters");
                    } else if !mapping.users.insert(value.clone()) {
                        errors.add(node, format!("{value:?} is listed twice in users"));
                    }
                }
            }
            "accounts" => read_accounts(value, &mut mapping, errors),
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
    Some((name?, mapping, facts))
}

/// `accounts: ["012345678901", 111122223333]`: 12-digit IDs, quoted or not. An unquoted ID
/// is a YAML number, which loses a leading zero: that one must be quoted.
fn read_accounts(node: &MarkedYaml, mapping: &mut TeamMapping, errors: &mut Errors) {
    let example = "`accounts` must be a list of AWS account IDs, e.g. [\"111122223333\"]";
    for item in sequence(node, example, errors) {
        match account_id(item) {
            Ok(id) => {
                if !mapping.accounts.insert(id.clone()) {
                    errors.add(item, format!("{id:?} is listed twice in accounts"));
                }
            }
            Err(message) => errors.add(item, message),
        }
    }
}

/// The items of a list field (none when empty), or `message` as the error when it is not a list.
fn sequence<'a, 'input>(node: &'a MarkedYaml<'input>, message: &str, errors: &mut Errors) -> &'a [MarkedYaml<'input>] {
    match &node.data {
        YamlData::Sequence(items) => items.as_slice(),
        YamlData::Value(Scalar::Null) => &[],
        _ => {
            errors.add(node, message);
            &[]
        }
    }
}

fn read_projects(node: &MarkedYaml, mapping: &mut TeamMapping, facts: &mut ProjectFactsMap, errors: &mut Errors) {
    let example = "`projects` must be a list, e.g. [a, {name: b, workload: serving}]";
    for item in sequence(node, example, errors) {
        let Some((name, declared)) = read_project(item, errors) else {
            continue;
        };
        if name.is_empty() || name.contains('\0') {
            errors.add(item, "projects entries must be non-empty text without NUL characters");
        } else if !mapping.projects.insert(name.clone()) {
            errors.add(item, format!("{name:?} is listed twice in projects"));
        } else {
            facts.insert(name, declared);
        }
    }
}

/// A project entry: its tag value as text, or `{name, workload, model}`.
fn read_project(item: &MarkedYaml, errors: &mut Errors) -> Option<(String, ProjectFacts)> {
    if let Some(name) = text(item) {
        return Some((name, ProjectFacts::default()));
    }
    let YamlData::Mapping(fields) = &item.data else {
        errors.add(
            item,
            "`projects` entries must be text (quote values that look like numbers) or {name: …, workload: …}",
        );
        return None;
    };
    let (mut name, mut facts) = (None, ProjectFacts::default());
    for (key, value) in fields {
        match text(key).as_deref() {
            Some("name") => match text(value) {
                Some(n) => name = Some(n),
                None => errors.add(
                    value,
                    "a project name must be text (quote values that look like numbers)",
                ),
            },
            Some("workload") => match text(value).as_deref().and_then(Workload::parse) {
                Some(w) => facts.workload = w,
                None => errors.add(value, "`workload` must be training, batch, serving, dev or unknown"),
            },
            Some("model") => facts.model = read_model(value, errors),
            other => errors.add(
                key,
                format!(
                    "unknown field {:?}; expected one of: {}",
                    other.unwrap_or(""),
                    PROJECT_KEYS.join(", ")
                ),
            ),
        }
    }
    if name.is_none() {
        errors.add(item, "this project has no `name:`");
    }
    Some((name?, facts))
}

fn read_model(node: &MarkedYaml, errors: &mut Errors) -> Option<Model> {
    let YamlData::Mapping(fields) = &node.data else {
        errors.add(node, "`model` must be {params_b: NUMBER, precision: bf16}");
        return None;
    };
    let (mut params_b, mut precision) = (None, None);
    for (key, value) in fields {
        match text(key).as_deref() {
            Some("params_b") => match number_text(value).and_then(|(t, _)| t.parse::<rust_decimal::Decimal>().ok()) {
                Some(p) if p > rust_decimal::Decimal::ZERO && p <= rust_decimal::Decimal::from(100_000) => {
                    params_b = Some(p)
                }
                _ => errors.add(
                    value,
                    "`params_b` must be the billions of parameters, above 0, e.g. 7 or 0.5",
                ),
            },
            Some("precision") => match text(value).as_deref().and_then(Precision::parse) {
                Some(p) => precision = Some(p),
                None => errors.add(value, "`precision` must be fp32, bf16, fp16, int8 or int4"),
            },
            other => errors.add(
                key,
                format!("unknown field {:?}; expected params_b, precision", other.unwrap_or("")),
            ),
        }
    }
    match (params_b, precision) {
        (Some(params_b), Some(precision)) => Some(Model { params_b, precision }),
        _ => {
            errors.add(node, "a model needs both `params_b` and `precision`");
            None
        }
    }
}

/// The teams as YAML; projects that declare something are written as maps.
pub(super) fn render(teams: &Mappings, facts: &HashMap<String, ProjectFacts>) -> String {
    let list =
        |values: &std::collections::BTreeSet<String>| values.iter().map(|v| quote(v)).collect::<Vec<_>>().join(", ");
    let project = |name: &String| match facts.get(name).copied().unwrap_or_default() {
        f if f == ProjectFacts::default() => quote(name),
        f => {
            let model = f
                .model
                .map(|m| {
                    format!(
                        ", model: {{params_b: {}, precision: {}}}",
                        m.params_b.normalize(),
                        m.precision.key()
                    )
                })
                .unwrap_or_default();
            format!("{{name: {}, workload: {}{model}}}", quote(name), f.workload.key())
        }
    };
    let mut out = String::from(
        "# burnrate teams, budgets, approvals, policies and pricing: `burnrate config import FILE` makes the database match this file.\n",
    );
    if teams.is_empty() {
        out.push_str("teams: []\n");
        return out;
    }
    out.push_str("teams:\n");
    for (name, team) in teams {
        out.push_str(&format!("  - name: {}\n", quote(name)));
        out.push_str(&format!("    owners: [{}]\n", list(&team.owners)));
        let projects: Vec<String> = team.projects.iter().map(project).collect();
        out.push_str(&format!("    projects: [{}]\n", projects.join(", ")));
        out.push_str(&format!("    users: [{}]\n", list(&team.users)));
        if !team.accounts.is_empty() {
            out.push_str(&format!("    accounts: [{}]\n", list(&team.accounts)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::as_code::parse;

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
        let errors = crate::as_code::error_lines(text);
        assert_eq!(
            errors,
            [
                "line 3: owner \"not-an-email\" is not an email address",
                "line 4: `projects` entries must be text (quote values that look like numbers) or {name: …, workload: …}",
                "line 5: \"Unassigned\" is reserved for unmapped spend; choose another team name",
                "line 6: project \"p1\" is in team \"a\" and team \"b\"; a project belongs to one team",
                "line 8: unknown field \"colour\"; expected one of: name, owners, projects, users, accounts",
                "line 9: team \"A\" is listed twice (first on line 2)",
                "line 10: unknown section \"sizes\"; expected one of: teams, budgets, approvals, policies, pricing, shared_costs",
            ]
        );
        let syntax = parse("teams:\n  - name: [unclosed\n").expect_err("bad yaml");
        assert!(syntax[0].message.starts_with("not valid YAML"), "{syntax:?}");
    }

    #[test]
    fn accounts_are_twelve_digit_ids_quoted_or_not_and_belong_to_one_team() {
        let file = "teams:\n  - name: a\n    accounts: [111122223333, \"012345678901\"]\n  - name: b\n    accounts: [012345678901, \"12345\", 111122223333]\n";
        let errors = parse(file).expect_err("bad accounts");
        let messages: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
        assert_eq!(
            messages,
            [
                "line 4: account \"111122223333\" is in team \"a\" and team \"b\"; an account belongs to one team",
                "line 5: \"12345678901\" is not an AWS account ID (12 digits, e.g. 111122223333); quote an ID that starts with 0 (\"012345678901\"), or YAML drops the zero",
                "line 5: \"12345\" is not an AWS account ID (12 digits, e.g. 111122223333)",
            ]
        );
        let good = parse("teams:\n  - name: a\n    accounts: [111122223333, \"012345678901\"]\n").expect("valid");
        let accounts: Vec<String> = good.teams.expect("teams")["a"].accounts.iter().cloned().collect();
        assert_eq!(accounts, ["012345678901", "111122223333"]);
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
                accounts: ["012345678901".to_string(), "111122223333".to_string()].into(),
            },
        )]);
        let parsed = parse(&render(&teams, &HashMap::new())).expect("export is importable");
        assert_eq!(parsed.teams, Some(teams));
        assert_eq!(
            parse(&render(&Mappings::new(), &HashMap::new())).expect("empty").teams,
            Some(Mappings::new())
        );
    }

    #[test]
    fn projects_may_declare_their_workload_and_model() {
        let text = "teams:\n  - name: llm\n    projects:\n      - plain\n      - {name: llm-serving, workload: serving, model: {params_b: 7, precision: bf16}}\n      - {name: bad, workload: gaming, model: {params_b: -1}}\n";
        let errors = crate::as_code::error_lines(text);
        assert_eq!(
            errors,
            [
                "line 6: `workload` must be training, batch, serving, dev or unknown",
                "line 6: `params_b` must be the billions of parameters, above 0, e.g. 7 or 0.5",
                "line 6: a model needs both `params_b` and `precision`",
            ]
        );
        let good = "teams:\n  - name: llm\n    projects:\n      - plain\n      - {name: llm-serving, workload: serving, model: {params_b: 7, precision: bf16}}\n";
        let file = parse(good).expect("valid");
        let facts = file.project_facts.expect("declared with teams");
        assert_eq!(facts["plain"], ProjectFacts::default());
        let serving = facts["llm-serving"];
        assert_eq!(serving.workload, Workload::Serving);
        assert_eq!(
            serving.model,
            Some(Model {
                params_b: 7.into(),
                precision: Precision::Bf16
            })
        );
        // Export writes the map back, and it reads the same.
        let teams = file.teams.expect("teams");
        let written = render(&teams, &facts.clone().into_iter().collect());
        assert!(
            written.contains("{name: \"llm-serving\", workload: serving, model: {params_b: 7, precision: bf16}}"),
            "{written}"
        );
        assert_eq!(parse(&written).expect("round trip").project_facts, Some(facts));
    }
}
