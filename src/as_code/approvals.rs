//! The `approvals:` section: approved high-cost projects. Matched by `key:` (or by project when
//! an entry has none): a listed one is added or, when it differs, replaced by a new version;
//! an unlisted current one is revoked. A key keeps one history when the project's tag value
//! is renamed. History is never lost (see `enforcement::approvals`).
//!
//! ```yaml
//! approvals:
//!   - key: q4-foundation              # optional; the project when left out
//!     project: llm-finetune
//!     approver: cfo@example.com
//!     reason: "Q4 foundation model run"
//!     cap: "50000.00"
//!     expires: 2027-01-31
//! ```

use std::collections::HashMap;

use saphyr::{MarkedYaml, Scalar, YamlData};
use sqlx::PgConnection;

use super::number_text;
use super::{Errors, quote, text};
use crate::audit_log::Actor;
use crate::enforcement::Approval;
use crate::enforcement::approvals::{self, ApprovalInput, validate};

const APPROVAL_KEYS: [&str; 6] = ["key", "project", "approver", "reason", "cap", "expires"];
const REQUIRED: [&str; 5] = ["project", "approver", "reason", "cap", "expires"];

pub(super) fn read(node: &MarkedYaml, errors: &mut Errors) -> Vec<Approval> {
    let entries = match &node.data {
        YamlData::Sequence(entries) => entries.as_slice(),
        YamlData::Value(Scalar::Null) => &[],
        _ => {
            errors.add(node, "`approvals` must be a list (`- project: …`)");
            return Vec::new();
        }
    };
    let mut approvals = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut seen_keys: HashMap<String, usize> = HashMap::new();
    for entry in entries {
        let YamlData::Mapping(fields) = &entry.data else {
            errors.add(
                entry,
                "each approval is a mapping with project, approver, reason, cap and expires",
            );
            continue;
        };
        let mut input = ApprovalInput::default();
        let mut stable_key: Option<String> = None;
        let mut nodes: HashMap<&str, &MarkedYaml> = HashMap::new();
        let before = errors.0.len();
        for (key, value) in fields {
            let key_text = text(key).unwrap_or_default();
            let Some(field) = APPROVAL_KEYS.iter().find(|k| **k == key_text) else {
                errors.add(
                    key,
                    format!(
                        "unknown field {key_text:?}; expected one of: {}",
                        APPROVAL_KEYS.join(", ")
                    ),
                );
                continue;
            };
            nodes.insert(field, value);
            if *field == "key" {
                match text(value).filter(|k| !k.trim().is_empty() && k.chars().count() <= 200) {
                    Some(key) => stable_key = Some(key),
                    None => errors.add(value, "key: must be text of 1 to 200 characters"),
                }
                continue;
            }
            let target = match *field {
                "project" => &mut input.project,
                "approver" => &mut input.approver,
                "reason" => &mut input.reason,
                "cap" => &mut input.cap,
                _ => &mut input.expires,
            };
            match (*field, number_text(value), text(value)) {
                ("cap", Some((_, true)), _) => errors.add(value, "write the cap as quoted text, e.g. \"50000.00\""),
                ("cap", Some((cap, false)), _) => *target = cap,
                (_, _, Some(value)) => *target = value,
                _ => errors.add(
                    value,
                    format!("`{field}` must be text (quote it if it looks like a number)"),
                ),
            }
        }
        for required in REQUIRED {
            if !nodes.contains_key(required) {
                errors.add(entry, format!("this approval has no `{required}:`"));
            }
        }
        if errors.0.len() > before {
            continue;
        }
        match validate(&input) {
            Ok(approval) => {
                let approval = Approval {
                    key: stable_key,
                    ..approval
                };
                let line = entry.span.start.line();
                let identity = approval.key.as_deref().unwrap_or(&approval.project).to_string();
                if let Some(first) = seen.insert(approval.project.clone(), line) {
                    errors.add(
                        entry,
                        format!(
                            "project {:?} is approved twice (first on line {first})",
                            approval.project
                        ),
                    );
                } else if let Some(first) = seen_keys.insert(identity.clone(), line) {
                    errors.add(
                        entry,
                        format!("the approval key {identity:?} is used twice (first on line {first})"),
                    );
                } else {
                    approvals.push(approval);
                }
            }
            Err(field_errors) => {
                for error in field_errors {
                    let node = nodes.get(error.field.as_str()).copied().unwrap_or(entry);
                    errors.add(node, format!("{}: {}", error.field, error.message));
                }
            }
        }
    }
    approvals
}

/// Makes current approvals match `desired` inside the import's transaction.
pub(super) async fn apply(
    tx: &mut PgConnection,
    actor: &Actor,
    desired: &[Approval],
) -> Result<Vec<String>, sqlx::Error> {
    let mut changes = Vec::new();
    let currents = approvals::current(tx).await?;
    let kept: Vec<&str> = desired
        .iter()
        .filter_map(|d| approvals::find(&currents, d).map(|c| c.project.as_str()))
        .collect();
    for current in &currents {
        if !kept.contains(&current.project.as_str())
            && !desired.iter().any(|d| d.project == current.project)
            && approvals::revoke(tx, actor, &current.project).await?
        {
            changes.push(format!("revoke approval of project {:?}", current.project));
        }
    }
    for approval in desired {
        if approvals::set(tx, actor, approval).await? {
            changes.push(format!(
                "approve project {:?} up to {} until {}",
                approval.project, approval.cap, approval.expires
            ));
        }
    }
    Ok(changes)
}

pub(super) fn render(approvals: &[Approval]) -> String {
    if approvals.is_empty() {
        return "approvals: []\n".to_string();
    }
    let mut out = String::from("approvals:\n");
    for a in approvals {
        out.push_str(&format!("  - key: {}\n", quote(a.key.as_deref().unwrap_or(&a.project))));
        out.push_str(&format!("    project: {}\n", quote(&a.project)));
        out.push_str(&format!("    approver: {}\n", quote(&a.approver)));
        out.push_str(&format!("    reason: {}\n", quote(&a.reason)));
        out.push_str(&format!("    cap: \"{:.2}\"\n", a.cap));
        out.push_str(&format!("    expires: {}\n", a.expires));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::*;

    #[test]
    fn the_documented_section_parses_round_trips_and_names_bad_lines() {
        let text = "approvals:
  - project: llm-finetune
    approver: cfo@example.com
    reason: \"Q4 foundation model run\"
    cap: \"50000.00\"
    expires: 2027-01-31
";
        let approvals = parse(text).expect("valid").approvals.expect("section");
        assert_eq!(approvals.len(), 1);
        assert_eq!(approvals[0].expires.to_string(), "2027-01-31");
        let again = parse(&render(&approvals))
            .expect("round trip")
            .approvals
            .expect("section");
        // The export writes the key (the project, when none was given).
        assert_eq!(again[0].key.as_deref(), Some("llm-finetune"));
        assert_eq!(
            again,
            approvals
                .iter()
                .map(|a| Approval {
                    key: Some(a.project.clone()),
                    ..a.clone()
                })
                .collect::<Vec<_>>()
        );

        let bad = "approvals:
  - project: a
    approver: nobody
    reason: r
    cap: 12.5
    expires: 2027-01-31
  - project: b
    approver: cfo@example.com
    reason: r
    cap: \"10\"
    expires: soon
  - project: c
";
        let errors: Vec<String> = parse(bad).expect_err("invalid").iter().map(|e| e.to_string()).collect();
        assert_eq!(
            errors,
            [
                "line 5: write the cap as quoted text, e.g. \"50000.00\"",
                "line 11: expires: expected a date YYYY-MM-DD (the last day the approval counts)",
                "line 12: this approval has no `approver:`",
                "line 12: this approval has no `reason:`",
                "line 12: this approval has no `cap:`",
                "line 12: this approval has no `expires:`",
            ]
        );
    }
}
