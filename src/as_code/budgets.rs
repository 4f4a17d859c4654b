//! The `budgets:` section. Budgets are matched by `key:` (case-insensitively), or by name
//! when an entry has no key: a listed budget is created or updated, an unlisted one deleted.
//! A key keeps a budget's identity, alert history and AWS budget across a rename; without
//! one the name is the key. The export writes every budget's key.
//!
//! ```yaml
//! budgets:
//!   - key: ml-research-monthly            # optional; the name when left out
//!     name: ml-research monthly
//!     scope: {team: ml-research}        # or {project: NAME} or {org: true}
//!     period: monthly                   # quarterly, annual
//!     amount: "25000.00"
//!     metric: unblended                 # amortized; the default is unblended
//!     credits: net                      # gross leaves credits and refunds out; net is the default
//!     thresholds:                       # a threshold's recipients hear of it alone
//!       [{percent: 50}, {percent: 80, recipients: [director@example.com]},
//!        {percent: 100, recipients: [finance@example.com]}, {percent: 100, type: forecasted}]
//!     recipients: [finance@example.com] # every threshold, besides the team owners
//! ```

use std::collections::HashMap;

use saphyr::{MarkedYaml, Scalar, YamlData};

use super::{Errors, list, number_text, text};
use crate::budgets::spec::{BudgetInput, ThresholdInput, validate};
use crate::budgets::{BudgetSpec, Threshold};

const BUDGET_KEYS: [&str; 9] = [
    "key",
    "name",
    "scope",
    "period",
    "amount",
    "metric",
    "credits",
    "thresholds",
    "recipients",
];

/// A checked budget and the line it starts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileBudget {
    pub line: usize,
    pub spec: BudgetSpec,
}

pub(super) fn read(node: &MarkedYaml, errors: &mut Errors) -> Vec<FileBudget> {
    let entries = match &node.data {
        YamlData::Sequence(entries) => entries.as_slice(),
        YamlData::Value(Scalar::Null) => &[],
        _ => {
            errors.add(node, "`budgets` must be a list of budgets (`- name: …`)");
            return Vec::new();
        }
    };
    let mut budgets = Vec::new();
    let mut names: HashMap<String, usize> = HashMap::new();
    let mut keys: HashMap<String, usize> = HashMap::new();
    for entry in entries {
        let Some(spec) = read_budget(entry, errors) else {
            continue;
        };
        let line = entry.span.start.line();
        if let Some(first) = names.insert(spec.name.to_lowercase(), line) {
            errors.add(
                entry,
                format!("budget {:?} is listed twice (first on line {first})", spec.name),
            );
            continue;
        }
        let identity = spec.key.as_deref().unwrap_or(&spec.name).to_lowercase();
        if let Some(first) = keys.insert(identity.clone(), line) {
            errors.add(
                entry,
                format!("the budget key {identity:?} is used twice (first on line {first})"),
            );
            continue;
        }
        budgets.push(FileBudget { line, spec });
    }
    budgets
}

fn read_budget(entry: &MarkedYaml, errors: &mut Errors) -> Option<BudgetSpec> {
    let YamlData::Mapping(fields) = &entry.data else {
        errors.add(
            entry,
            "each budget must be a mapping with `name:`, `scope:`, `period:` and `amount:`",
        );
        return None;
    };
    let mut input = BudgetInput {
        metric: "unblended".into(),
        thresholds: Threshold::defaults()
            .iter()
            .map(|t| ThresholdInput {
                percent: t.percent.to_string(),
                ..ThresholdInput::default()
            })
            .collect(),
        ..BudgetInput::default()
    };
    // Field name -> the node to blame when validation rejects that field.
    let mut nodes: HashMap<&str, &MarkedYaml> = HashMap::new();
    let mut stable_key: Option<String> = None;
    let before = errors.0.len();
    for (key, value) in fields {
        let key_text = text(key).unwrap_or_default();
        let Some(field) = BUDGET_KEYS.iter().find(|k| **k == key_text) else {
            errors.add(
                key,
                format!(
                    "unknown field {key_text:?}; expected one of: {}",
                    BUDGET_KEYS.join(", ")
                ),
            );
            continue;
        };
        nodes.insert(field, value);
        match *field {
            "key" => stable_key = Some(required_text(value, "key", errors)),
            "name" => input.name = required_text(value, "name", errors),
            "period" => input.period = required_text(value, "period", errors),
            "metric" => input.metric = required_text(value, "metric", errors),
            "credits" => input.credits = required_text(value, "credits", errors),
            "amount" => match number_text(value) {
                Some((amount, false)) => input.amount = amount,
                Some((_, true)) => errors.add(
                    value,
                    "write the amount as quoted text, e.g. \"25000.00\", so no cent is lost",
                ),
                None => errors.add(value, "the amount must be text such as \"25000.00\""),
            },
            "scope" => read_scope(value, &mut input, errors),
            "thresholds" => input.thresholds = read_thresholds(value, errors),
            _ => input.recipients = list(value, "recipients", errors).into_iter().map(|(_, v)| v).collect(),
        }
    }
    for required in ["name", "scope", "period", "amount"] {
        if !nodes.contains_key(required) {
            errors.add(entry, format!("this budget has no `{required}:`"));
        }
    }
    if errors.0.len() > before {
        return None;
    }
    if let (Some(text), Some(node)) = (&stable_key, nodes.get("key"))
        && (text.trim().is_empty() || text.chars().count() > 200)
    {
        errors.add(node, "key: must be 1 to 200 characters");
        return None;
    }
    match validate(&input) {
        Ok(spec) => Some(BudgetSpec {
            key: stable_key,
            ..spec
        }),
        Err(field_errors) => {
            for error in field_errors {
                let node = nodes.get(error.field.as_str()).copied().unwrap_or(entry);
                errors.add(node, format!("{}: {}", error.field, error.message));
            }
            None
        }
    }
}

fn required_text(node: &MarkedYaml, field: &str, errors: &mut Errors) -> String {
    text(node).unwrap_or_else(|| {
        errors.add(node, format!("`{field}` must be text"));
        String::new()
    })
}

fn read_scope(node: &MarkedYaml, input: &mut BudgetInput, errors: &mut Errors) {
    let expected = "`scope` must be {team: NAME}, {project: NAME}, {account: \"ID\"} or {org: true}";
    let YamlData::Mapping(pairs) = &node.data else {
        errors.add(node, expected);
        return;
    };
    let mut pairs = pairs.iter();
    match (pairs.next(), pairs.next()) {
        (Some((key, value)), None) => match (text(key).as_deref(), &value.data) {
            (Some("org"), YamlData::Value(Scalar::Boolean(true))) => input.scope_kind = "org".into(),
            (Some("account"), _) => match super::account_id(value) {
                Ok(id) => {
                    input.scope_kind = "account".into();
                    input.scope_name = id;
                }
                Err(message) => errors.add(value, message),
            },
            (Some(kind @ ("team" | "project")), _) => match text(value) {
                Some(name) => {
                    input.scope_kind = kind.to_string();
                    input.scope_name = name;
                }
                None => errors.add(
                    value,
                    format!("the {kind} name must be text (quote it if it looks like a number)"),
                ),
            },
            _ => errors.add(node, expected),
        },
        _ => errors.add(node, expected),
    }
}

fn read_thresholds(node: &MarkedYaml, errors: &mut Errors) -> Vec<ThresholdInput> {
    let YamlData::Sequence(items) = &node.data else {
        errors.add(
            node,
            "`thresholds` must be a list such as [{percent: 80}, {percent: 100, type: forecasted}]",
        );
        return Vec::new();
    };
    let mut thresholds = Vec::new();
    for item in items {
        let YamlData::Mapping(pairs) = &item.data else {
            errors.add(
                item,
                "each threshold is {percent: N}, optionally with `type: forecasted` and `recipients: [ADDRESS]`",
            );
            continue;
        };
        let mut threshold = ThresholdInput::default();
        for (key, value) in pairs {
            match text(key).as_deref() {
                Some("percent") => match number_text(value) {
                    Some((percent, _)) => threshold.percent = percent,
                    None => errors.add(value, "`percent` must be a number from 1 to 1000"),
                },
                Some("type") => threshold.kind = text(value).unwrap_or_default(),
                Some("recipients") => {
                    threshold.recipients = list(value, "recipients", errors).into_iter().map(|(_, v)| v).collect();
                }
                _ => errors.add(
                    key,
                    "a threshold has `percent:` and optionally `type:` (actual or forecasted) and `recipients:`",
                ),
            }
        }
        thresholds.push(threshold);
    }
    thresholds
}

#[cfg(test)]
mod tests {
    use super::super::parse;

    #[test]
    fn a_key_is_read_and_keys_must_be_unique() {
        let file = parse(
            "budgets:
  - key: gpu-monthly
    name: GPU (renamed)
    scope: {org: true}
    period: monthly
    amount: \"10\"
",
        )
        .expect("valid");
        let budgets = file.budgets.expect("section");
        assert_eq!(budgets[0].spec.key.as_deref(), Some("gpu-monthly"));
        let errors = errors_in(
            "budgets:
  - key: k
    name: one
    scope: {org: true}
    period: monthly
    amount: \"10\"
  - key: K
    name: two
    scope: {org: true}
    period: monthly
    amount: \"10\"
",
        );
        assert_eq!(errors, ["line 7: the budget key \"k\" is used twice (first on line 2)"]);
    }

    #[test]
    fn the_escalation_ladder_is_read_from_the_thresholds() {
        let file = parse(
            "budgets:
  - name: GPU
    scope: {org: true}
    period: monthly
    amount: \"10\"
    thresholds: [{percent: 50}, {percent: 80, recipients: [Director@example.com]},
                 {percent: 100, recipients: [finance@example.com]}]
",
        )
        .expect("valid");
        let spec = &file.budgets.expect("section")[0].spec;
        let ladder: Vec<(String, Vec<String>)> = spec
            .thresholds
            .iter()
            .map(|t| (t.label(), spec.escalation_for(*t).to_vec()))
            .collect();
        assert_eq!(
            ladder,
            [
                ("50%".to_string(), vec![]),
                ("80%".to_string(), vec!["director@example.com".to_string()]),
                ("100%".to_string(), vec!["finance@example.com".to_string()]),
            ]
        );
        let errors = errors_in(&org_budget_with(
            "thresholds: [{percent: 80, recipients: [director]}, {percent: 90, to: [x@example.com]}]",
        ));
        assert_eq!(
            errors,
            ["line 6: a threshold has `percent:` and optionally `type:` (actual or forecasted) and `recipients:`",]
        );
        let errors = errors_in(&org_budget_with("thresholds: [{percent: 80, recipients: [director]}]"));
        assert_eq!(errors, ["line 6: thresholds: \"director\" is not an email address"]);
    }

    /// A monthly organisation budget named GPU whose sixth line is `line`.
    fn org_budget_with(line: &str) -> String {
        format!(
            "budgets:\n  - name: GPU\n    scope: {{org: true}}\n    period: monthly\n    amount: \"10\"\n    {line}\n"
        )
    }

    fn errors_in(text: &str) -> Vec<String> {
        parse(text)
            .expect_err("invalid")
            .iter()
            .map(|e| e.to_string())
            .collect()
    }

    #[test]
    fn every_bad_budget_is_named_with_its_line() {
        let text = "budgets:
  - name: a
    scope: {team: x}
    period: weekly
    amount: 25000.5
  - name: b
    scope: {galaxy: far}
    period: monthly
    amount: \"0\"
    thresholds: [{percent: 80}, {percent: 80}, {percent: 2000, type: maybe}]
    recipients: [nobody]
  - name: A
    scope: {org: true}
    period: monthly
    amount: \"5\"
    colour: red
  - scope: {org: true}
";
        let errors = errors_in(text);
        assert_eq!(
            errors,
            [
                "line 5: write the amount as quoted text, e.g. \"25000.00\", so no cent is lost",
                "line 7: `scope` must be {team: NAME}, {project: NAME}, {account: \"ID\"} or {org: true}",
                "line 16: unknown field \"colour\"; expected one of: key, name, scope, period, amount, metric, credits, thresholds, recipients",
                "line 17: this budget has no `name:`",
                "line 17: this budget has no `period:`",
                "line 17: this budget has no `amount:`",
            ]
        );
        let text = "budgets:
  - name: b
    scope: {org: true}
    period: weekly
    amount: \"0\"
    thresholds: [{percent: 80}, {percent: 80}, {percent: 2000, type: maybe}]
    recipients: [nobody]
";
        let errors = errors_in(text);
        assert_eq!(
            errors,
            [
                "line 4: period: expected monthly, quarterly or annual",
                "line 5: amount: the amount must be greater than 0",
                "line 6: thresholds: 80% is listed twice",
                "line 6: thresholds: unknown threshold type \"maybe\"; expected actual or forecasted",
                "line 7: recipients: \"nobody\" is not an email address",
            ]
        );
    }
}
