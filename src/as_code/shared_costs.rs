//! The `shared_costs:` section: shared-cost rules, applied in the order listed to spend no
//! team owns and no user tag claims (see `allocation`). The section is the whole list: a
//! rule left out is deleted.
//!
//! ```yaml
//! shared_costs:
//!   - name: Network and monitoring
//!     services: ["EC2 - Other", AmazonCloudWatch]   # their share of unowned spend
//!     split: proportional                          # to each team's own spend that day
//!   - name: Untagged
//!     untagged: true
//!     split: even
//!     teams: [ml-research, platform]               # every team when left out
//!   - name: Shared cluster
//!     projects: [k8s-shared]
//!     split: fixed
//!     teams: {ml-research: 60, platform: 40}       # percentages adding up to 100
//! ```

use saphyr::{MarkedYaml, Scalar, YamlData};

use super::number_text;
use super::{Errors, list, quote, text};
use crate::allocation::rules::{MAX_RULES, RuleInput, validate};
use crate::allocation::{Selector, SharedRule, SplitKind};

/// A checked rule and the line it starts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRule {
    pub line: usize,
    pub rule: SharedRule,
}

const RULE_KEYS: [&str; 6] = ["name", "untagged", "projects", "services", "split", "teams"];

pub(super) fn read(node: &MarkedYaml, errors: &mut Errors) -> Vec<FileRule> {
    let entries = match &node.data {
        YamlData::Sequence(entries) => entries.as_slice(),
        YamlData::Value(Scalar::Null) => &[],
        _ => {
            errors.add(node, "`shared_costs` must be a list of rules (`- name: …`)");
            return Vec::new();
        }
    };
    if entries.len() > MAX_RULES {
        errors.add(node, format!("at most {MAX_RULES} shared-cost rules"));
    }
    let mut rules: Vec<FileRule> = Vec::new();
    for entry in entries {
        let Some(rule) = read_rule(entry, errors) else {
            continue;
        };
        if rules.iter().any(|r| r.rule.name.eq_ignore_ascii_case(&rule.name)) {
            errors.add(entry, format!("the rule {:?} is listed twice", rule.name));
            continue;
        }
        rules.push(FileRule {
            line: entry.span.start.line(),
            rule,
        });
    }
    rules
}

fn read_rule(entry: &MarkedYaml, errors: &mut Errors) -> Option<SharedRule> {
    let YamlData::Mapping(fields) = &entry.data else {
        errors.add(entry, "each rule is a mapping with `name:`, what it takes and `split:`");
        return None;
    };
    let before = errors.0.len();
    let mut input = RuleInput::default();
    let mut selectors = 0;
    for (key, value) in fields {
        let key_text = text(key).unwrap_or_default();
        match key_text.as_str() {
            "name" => input.name = text(value).unwrap_or_default(),
            "split" => input.split = text(value).unwrap_or_default(),
            "untagged" => {
                selectors += 1;
                input.selector = "untagged".into();
                if !matches!(value.data, YamlData::Value(Scalar::Boolean(true))) {
                    errors.add(value, "write `untagged: true`");
                }
            }
            kind @ ("projects" | "services") => {
                selectors += 1;
                input.selector = kind.to_string();
                input.values = list(value, kind, errors).into_iter().map(|(_, v)| v).collect();
            }
            "teams" => input.teams = read_teams(value, errors),
            _ => errors.add(
                key,
                format!("unknown field {key_text:?}; expected one of: {}", RULE_KEYS.join(", ")),
            ),
        }
    }
    if selectors != 1 {
        errors.add(
            entry,
            "a rule takes exactly one of `untagged: true`, `projects: […]` or `services: […]`",
        );
    }
    if errors.0.len() > before {
        return None;
    }
    match validate(&input) {
        Ok(rule) => Some(rule),
        Err(field_errors) => {
            for error in field_errors {
                errors.add(entry, format!("{}: {}", error.field, error.message));
            }
            None
        }
    }
}

/// `[a, b]` for even and proportional splits, `{a: 60, b: 40}` for fixed ones.
fn read_teams(node: &MarkedYaml, errors: &mut Errors) -> Vec<(String, Option<String>)> {
    match &node.data {
        YamlData::Mapping(pairs) => pairs
            .iter()
            .filter_map(|(team, percent)| {
                let Some(team) = text(team) else {
                    errors.add(team, "team names must be text");
                    return None;
                };
                match number_text(percent) {
                    Some((percent, _)) => Some((team, Some(percent))),
                    None => {
                        errors.add(percent, "a percentage must be a number such as 40 or \"33.3333\"");
                        None
                    }
                }
            })
            .collect(),
        _ => list(node, "teams", errors)
            .into_iter()
            .map(|(_, t)| (t, None))
            .collect(),
    }
}

pub(super) fn render(rules: &[SharedRule]) -> String {
    if rules.is_empty() {
        return "shared_costs: []\n".to_string();
    }
    let quoted = |values: &[String]| values.iter().map(|v| quote(v)).collect::<Vec<_>>().join(", ");
    let mut out = String::from("shared_costs:\n");
    for rule in rules {
        out.push_str(&format!("  - name: {}\n", quote(&rule.name)));
        match &rule.selector {
            Selector::Untagged => out.push_str("    untagged: true\n"),
            Selector::Projects(values) => out.push_str(&format!("    projects: [{}]\n", quoted(values))),
            Selector::Services(values) => out.push_str(&format!("    services: [{}]\n", quoted(values))),
        }
        out.push_str(&format!("    split: {}\n", rule.split.key()));
        if rule.split == SplitKind::Fixed {
            let shares: Vec<String> = rule
                .teams
                .iter()
                .map(|t| format!("{}: \"{}\"", quote(&t.team), t.percent.unwrap_or_default().normalize()))
                .collect();
            out.push_str(&format!("    teams: {{{}}}\n", shares.join(", ")));
        } else if !rule.teams.is_empty() {
            let names: Vec<String> = rule.teams.iter().map(|t| t.team.clone()).collect();
            out.push_str(&format!("    teams: [{}]\n", quoted(&names)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{error_lines, parse};
    use super::*;

    const DOCUMENTED: &str = "shared_costs:
  - name: Network and monitoring
    services: [\"EC2 - Other\", AmazonCloudWatch]
    split: proportional
  - name: Untagged
    untagged: true
    split: even
    teams: [ml-research, platform]
  - name: Shared cluster
    projects: [k8s-shared]
    split: fixed
    teams: {ml-research: 60, platform: \"40\"}
";

    #[test]
    fn the_documented_section_parses_and_round_trips() {
        let file_rules = parse(DOCUMENTED).expect("valid").shared_costs.expect("section");
        assert_eq!(file_rules.iter().map(|r| r.line).collect::<Vec<_>>(), [2, 5, 9]);
        let rules: Vec<SharedRule> = file_rules.into_iter().map(|r| r.rule).collect();
        assert_eq!(
            rules
                .iter()
                .map(|r| format!("{}: {}", r.name, crate::allocation::rule_store::describe(r)))
                .collect::<Vec<_>>(),
            [
                "Network and monitoring: services AmazonCloudWatch, EC2 - Other → proportional over every team",
                "Untagged: untagged spend → even: ml-research, platform",
                "Shared cluster: projects k8s-shared → fixed: ml-research 60%, platform 40%",
            ]
        );
        let again = parse(&render(&rules))
            .expect("export is importable")
            .shared_costs
            .expect("section");
        assert_eq!(again.into_iter().map(|r| r.rule).collect::<Vec<_>>(), rules);
    }

    #[test]
    fn every_bad_rule_is_named_with_its_line() {
        let errors = error_lines(
            "shared_costs:
  - name: a
    untagged: true
    projects: [x]
    split: even
  - name: b
    services: [NAT]
    split: fixed
    teams: {x: 60, y: 30}
  - name: c
    untagged: yes please
    split: sometimes
    colour: red
  - name: B
    services: [NAT]
    split: even
  - name: b
    services: [NAT]
    split: even
",
        );
        assert_eq!(
            errors,
            [
                "line 2: a rule takes exactly one of `untagged: true`, `projects: […]` or `services: […]`",
                "line 6: teams: the percentages add up to 90, not 100",
                "line 11: write `untagged: true`",
                "line 13: unknown field \"colour\"; expected one of: name, untagged, projects, services, split, teams",
                "line 17: the rule \"b\" is listed twice",
            ]
        );
    }
}
