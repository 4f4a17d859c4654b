//! Checking a shared-cost rule as typed into the form or written in YAML. Every problem is
//! reported with its field; whether the teams exist, and whether a named project is unowned,
//! is checked against the database by `rule_store`.

use rust_decimal::Decimal;

use super::model::{RuleTeam, Selector, SharedRule, SplitKind};
use crate::error::FieldError;

/// Rules per organisation: each is applied to every unowned project-day.
pub const MAX_RULES: usize = 50;

/// A rule as submitted, every field still text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuleInput {
    pub name: String,
    /// `untagged`, `projects` or `services`.
    pub selector: String,
    pub values: Vec<String>,
    /// `even`, `proportional` or `fixed`.
    pub split: String,
    /// Each team and, for fixed splits, its percentage as typed.
    pub teams: Vec<(String, Option<String>)>,
}

/// The form's teams box: one per line, `ml-research` or `ml-research 60`.
pub fn team_lines(text: &str) -> Vec<(String, Option<String>)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|line| match line.rsplit_once(char::is_whitespace) {
            Some((team, percent)) if percent.trim_end_matches('%').parse::<Decimal>().is_ok() => {
                (team.trim().to_string(), Some(percent.to_string()))
            }
            _ => (line.to_string(), None),
        })
        .collect()
}

/// One value per line (project tag values keep their inner spaces).
pub fn value_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

pub fn validate(input: &RuleInput) -> Result<SharedRule, Vec<FieldError>> {
    let mut errors = Vec::new();
    let name = crate::error::checked_name(&input.name).unwrap_or_else(|error| {
        errors.push(error);
        String::new()
    });
    let mut values: Vec<String> = input.values.clone();
    values.sort();
    values.dedup();
    let selector = match input.selector.trim() {
        "untagged" if values.is_empty() => Some(Selector::Untagged),
        "untagged" => {
            errors.push(FieldError::new(
                "values",
                "an untagged-spend rule names no projects or services",
            ));
            None
        }
        kind @ ("projects" | "services") if values.is_empty() || values.iter().any(|v| v.is_empty()) => {
            errors.push(FieldError::new(
                "values",
                format!("list the {kind} this rule takes, one per line"),
            ));
            None
        }
        "projects" => Some(Selector::Projects(values)),
        "services" => Some(Selector::Services(values)),
        other => {
            errors.push(FieldError::new(
                "selector",
                format!("unknown selector {other:?}; expected untagged, projects or services"),
            ));
            None
        }
    };
    let split = SplitKind::parse(&input.split);
    if split.is_none() {
        errors.push(FieldError::new("split", "expected even, proportional or fixed"));
    }
    let teams = teams(input, split, &mut errors);
    match (selector, split) {
        (Some(selector), Some(split)) if errors.is_empty() => Ok(SharedRule {
            name,
            selector,
            split,
            teams,
        }),
        _ => Err(errors),
    }
}

fn teams(input: &RuleInput, split: Option<SplitKind>, errors: &mut Vec<FieldError>) -> Vec<RuleTeam> {
    let mut teams: Vec<RuleTeam> = Vec::new();
    for (team, percent) in &input.teams {
        let team = team.trim().to_string();
        if teams.iter().any(|t| t.team == team) {
            errors.push(FieldError::new("teams", format!("{team:?} is listed twice")));
            continue;
        }
        let percent = match (split, percent) {
            (Some(SplitKind::Fixed), Some(text)) => {
                let parsed = text
                    .trim()
                    .trim_end_matches('%')
                    .parse::<Decimal>()
                    .ok()
                    .filter(|p| *p > Decimal::ZERO && *p <= Decimal::ONE_HUNDRED && p.normalize().scale() <= 4);
                if parsed.is_none() {
                    errors.push(FieldError::new(
                        "teams",
                        format!("{text:?} for {team:?} is not a percentage above 0 and at most 100 (4 decimals)"),
                    ));
                }
                parsed.map(|p| p.normalize())
            }
            (Some(SplitKind::Fixed), None) => {
                errors.push(FieldError::new(
                    "teams",
                    format!("give {team:?} its percentage: {team} 40"),
                ));
                None
            }
            (Some(kind), Some(_)) => {
                errors.push(FieldError::new(
                    "teams",
                    format!("only a fixed split takes percentages; {} divides by itself", kind.key()),
                ));
                None
            }
            _ => None,
        };
        teams.push(RuleTeam { team, percent });
    }
    // Stored rules list their teams by name: so does a checked one, and an unchanged file
    // compares equal.
    teams.sort_by(|a, b| a.team.cmp(&b.team));
    if split == Some(SplitKind::Fixed) {
        let sum: Decimal = teams.iter().filter_map(|t| t.percent).sum();
        if teams.is_empty() {
            errors.push(FieldError::new(
                "teams",
                "a fixed split lists its teams with their percentages",
            ));
        } else if errors.iter().all(|e| e.field != "teams") && sum != Decimal::ONE_HUNDRED {
            errors.push(FieldError::new(
                "teams",
                format!("the percentages add up to {}, not 100", sum.normalize()),
            ));
        }
    }
    teams
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(selector: &str, values: &str, split: &str, teams: &str) -> RuleInput {
        RuleInput {
            name: "Shared".into(),
            selector: selector.into(),
            values: value_lines(values),
            split: split.into(),
            teams: team_lines(teams),
        }
    }

    fn fields(input: RuleInput) -> Vec<(String, String)> {
        validate(&input)
            .expect_err("invalid")
            .into_iter()
            .map(|e| (e.field, e.message))
            .collect()
    }

    #[test]
    fn the_three_kinds_of_rule_are_read() {
        let rule = validate(&input(
            "services",
            "EC2 - Other\nAmazonCloudWatch\n",
            "proportional",
            "",
        ))
        .expect("valid");
        assert_eq!(
            rule.selector,
            Selector::Services(vec!["AmazonCloudWatch".into(), "EC2 - Other".into()])
        );
        assert_eq!(rule.split_label(), "proportional over every team");
        let rule = validate(&input(
            "projects",
            "k8s shared",
            "fixed",
            "ml-research 60%\nweb team 40",
        ))
        .expect("valid");
        assert_eq!(rule.selector, Selector::Projects(vec!["k8s shared".into()]));
        assert_eq!(rule.split_label(), "fixed: ml-research 60%, web team 40%");
        let rule = validate(&input("untagged", "", "even", "a\nb")).expect("valid");
        assert_eq!(
            (rule.split_label(), rule.selector),
            ("even: a, b".to_string(), Selector::Untagged)
        );
    }

    #[test]
    fn fixed_percentages_must_add_up_to_exactly_100() {
        assert_eq!(
            fields(input("untagged", "", "fixed", "a 33.33\nb 33.33\nc 33.33")),
            [(
                "teams".to_string(),
                "the percentages add up to 99.99, not 100".to_string()
            )]
        );
        assert_eq!(
            fields(input("untagged", "", "fixed", "a 60\nb")),
            [("teams".to_string(), "give \"b\" its percentage: b 40".to_string())]
        );
        assert_eq!(
            fields(input("untagged", "", "even", "a 60\nb 40")).len(),
            2,
            "an even split takes no percentages"
        );
        assert!(validate(&input("untagged", "", "fixed", "a 33.3333\nb 33.3333\nc 33.3334")).is_ok());
    }

    #[test]
    fn every_bad_field_is_named() {
        let mut bad = input("galaxies", "", "random", "a\na");
        bad.name = " ".into();
        let named: Vec<String> = fields(bad).into_iter().map(|(f, _)| f).collect();
        assert_eq!(named, ["name", "selector", "split", "teams"]);
        assert_eq!(
            fields(input("projects", "", "even", "")),
            [(
                "values".to_string(),
                "list the projects this rule takes, one per line".to_string()
            )]
        );
        assert_eq!(fields(input("untagged", "x", "even", "")).len(), 1);
    }
}
