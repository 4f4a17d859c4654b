//! The `policies:` section: the enforcement policy of the org (an entry without `team`) and
//! team overrides. Within the section, team overrides left out are removed and a left-out
//! org default returns to the built-in one (USD 1,000 a month, notify and flag, dry-run).
//! Entries are matched by `key:` when they have one (`team:<name>`, or `org`, when not):
//! an override whose key now names another team moves there.
//!
//! ```yaml
//! policies:
//!   - limit: "1000.00"
//!     period: monthly
//!     metric: unblended               # or amortized; unblended when left out
//!     actions: [notify, flag]
//!     mode: dry-run
//!   - team: ml-research
//!     limit: "20000.00"
//!     period: monthly
//!     actions: [notify, flag, stop]
//!     mode: manual
//!     stop:                            # the project's own GPUs, found by its tag
//!       resources: [ec2, notebooks]    # also training_jobs, processing_jobs, endpoints
//!       regions: [us-east-1, us-west-2] # BURNRATE_AWS_REGIONS when left out
//!       account: "210987654321"       # another account, through BURNRATE_AWS_ASSUME_ROLE
//!       managed_by_tags: [example.com/scheduler] # more controllers' tag keys: left running
//!       instance_store: allow          # also stop instances whose NVMe data a stop erases
//!       roles: [ml-training]           # optional: relaunch prevented on these roles, by a deny
//!                                      # policy of the violating project alone (or name one
//!                                      # with policy_arn, which blocks every project there)
//!   - team: research
//!     limit: "5000.00"
//!     period: monthly
//!     actions: [stop]
//!     mode: manual
//!     stop:                            # or through an AWS Budgets action, as before:
//!       type: RUN_SSM_DOCUMENTS        # or APPLY_IAM_POLICY with policy_arn and roles
//!       execution_role_arn: "arn:aws:iam::123456789012:role/budgets-actions"
//!       instance_ids: [i-0abc12345def67890]
//!       region: us-east-1
//! ```

use std::collections::HashMap;

use rust_decimal::Decimal;
use saphyr::{MarkedYaml, YamlData};
use sqlx::PgConnection;

use super::number_text;
use super::{ApplyError, Errors, FileError, list, quote, text};
use crate::audit_log::Actor;
use crate::enforcement::policy::{self, Policy, PolicyInput, SaveError};

const POLICY_KEYS: [&str; 8] = ["key", "team", "limit", "period", "metric", "actions", "mode", "stop"];
const STOP_KEYS: [&str; 11] = [
    "type",
    "execution_role_arn",
    "policy_arn",
    "roles",
    "instance_ids",
    "region",
    "resources",
    "regions",
    "account",
    "managed_by_tags",
    "instance_store",
];

/// A checked policy with the line it starts on, for errors found when applying.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePolicy {
    pub line: usize,
    pub policy: Policy,
}

pub(super) fn read(node: &MarkedYaml, errors: &mut Errors) -> Vec<FilePolicy> {
    let entries = match &node.data {
        YamlData::Sequence(entries) => entries.as_slice(),
        _ if matches!(node.data, YamlData::Value(saphyr::Scalar::Null)) => &[],
        _ => {
            errors.add(node, "`policies` must be a list (`- limit: …`)");
            return Vec::new();
        }
    };
    let mut policies = Vec::new();
    let mut seen: HashMap<Option<String>, usize> = HashMap::new();
    for entry in entries {
        let Some(policy) = read_policy(entry, errors) else {
            continue;
        };
        let line = entry.span.start.line();
        match seen.insert(policy.team.clone(), line) {
            Some(first) => errors.add(
                entry,
                format!(
                    "{} has a second policy (first on line {first})",
                    policy
                        .team
                        .as_deref()
                        .map_or("the org".to_string(), |t| format!("team {t:?}"))
                ),
            ),
            None => policies.push(FilePolicy { line, policy }),
        }
    }
    policies
}

fn read_policy(entry: &MarkedYaml, errors: &mut Errors) -> Option<Policy> {
    let YamlData::Mapping(fields) = &entry.data else {
        errors.add(entry, "each policy is a mapping with limit, period, actions and mode");
        return None;
    };
    let before = errors.0.len();
    let mut input = PolicyInput::default();
    let mut nodes: HashMap<String, &MarkedYaml> = HashMap::new();
    let mut stable_key: Option<String> = None;
    for (key, value) in fields {
        let key_text = text(key).unwrap_or_default();
        if !POLICY_KEYS.contains(&key_text.as_str()) {
            errors.add(
                key,
                format!(
                    "unknown field {key_text:?}; expected one of: {}",
                    POLICY_KEYS.join(", ")
                ),
            );
            continue;
        }
        nodes.insert(key_text.clone(), value);
        match key_text.as_str() {
            "limit" => match number_text(value) {
                Some((_, true)) => errors.add(value, "write the limit as quoted text, e.g. \"1000.00\""),
                Some((limit, false)) => input.limit = limit,
                None => errors.add(value, "`limit` must be an amount in quotes, e.g. \"1000.00\""),
            },
            "actions" => input.actions = list(value, "actions", errors).into_iter().map(|(_, a)| a).collect(),
            "stop" => read_stop(value, &mut input, &mut nodes, errors),
            field => {
                let Some(value_text) = text(value) else {
                    errors.add(value, format!("`{field}` must be text"));
                    continue;
                };
                match field {
                    "key" if value_text.trim().is_empty() || value_text.chars().count() > 200 => {
                        errors.add(value, "key: must be 1 to 200 characters")
                    }
                    "key" => stable_key = Some(value_text),
                    "team" => input.team = value_text,
                    "period" => input.period = value_text,
                    "metric" => input.metric = value_text,
                    _ => input.mode = value_text,
                }
            }
        }
    }
    for required in ["limit", "period", "actions", "mode"] {
        if !nodes.contains_key(required) {
            errors.add(entry, format!("this policy has no `{required}:`"));
        }
    }
    if errors.0.len() > before {
        return None;
    }
    match policy::validate(&input) {
        Ok(policy) => Some(Policy {
            key: stable_key,
            ..policy
        }),
        Err(field_errors) => {
            for error in field_errors {
                let node = nodes.get(&error.field).copied().unwrap_or(entry);
                errors.add(node, format!("{}: {}", error.field, error.message));
            }
            None
        }
    }
}

fn read_stop<'a, 'input>(
    node: &'a MarkedYaml<'input>,
    input: &mut PolicyInput,
    nodes: &mut HashMap<String, &'a MarkedYaml<'input>>,
    errors: &mut Errors,
) {
    let YamlData::Mapping(fields) = &node.data else {
        errors.add(
            node,
            "`stop` must be a mapping: resources (and regions), or an AWS Budgets action's type, \
             execution_role_arn and its targets",
        );
        return;
    };
    for (key, value) in fields {
        let key_text = text(key).unwrap_or_default();
        let Some(field) = STOP_KEYS.iter().find(|k| **k == key_text) else {
            errors.add(
                key,
                format!(
                    "unknown field {key_text:?} in `stop`; expected one of: {}",
                    STOP_KEYS.join(", ")
                ),
            );
            continue;
        };
        if *field == "account" {
            nodes.insert("stop_account".to_string(), value);
            match text(value) {
                Some(v) => input.stop_account = v,
                None => errors.add(value, "`account` must be text: the 12-digit account ID, quoted"),
            }
            continue;
        }
        if matches!(*field, "resources" | "regions" | "managed_by_tags") {
            let values = list(value, field, errors).into_iter().map(|(_, v)| v);
            if *field == "resources" {
                nodes.insert("stop_resources".to_string(), value);
                input.stop_resources = values.collect();
            } else if *field == "managed_by_tags" {
                nodes.insert("stop_managed_by_tags".to_string(), value);
                input.stop_managed_by_tags = values.collect::<Vec<_>>().join("\n");
            } else {
                nodes.insert("stop_regions".to_string(), value);
                input.stop_regions = values.collect::<Vec<_>>().join("\n");
            }
            continue;
        }
        // Field names as `policy::validate` reports them, so its errors land on these lines.
        let (target, name) = match *field {
            "type" => (&mut input.stop_type, "stop_type"),
            "execution_role_arn" => (&mut input.execution_role_arn, "execution_role_arn"),
            "policy_arn" => (&mut input.iam_policy_arn, "iam_policy_arn"),
            "roles" => (&mut input.iam_roles, "iam_roles"),
            "instance_ids" => (&mut input.instance_ids, "instance_ids"),
            "instance_store" => (&mut input.stop_instance_store, "stop_instance_store"),
            _ => (&mut input.instance_region, "instance_region"),
        };
        nodes.insert(name.to_string(), value);
        if matches!(*field, "roles" | "instance_ids") {
            *target = list(value, field, errors)
                .into_iter()
                .map(|(_, v)| v)
                .collect::<Vec<_>>()
                .join("\n");
        } else {
            match text(value) {
                Some(v) => *target = v,
                None => errors.add(value, format!("`{field}` must be text")),
            }
        }
    }
}

/// The org default when a file's `policies:` leaves it out.
fn built_in_default() -> Policy {
    Policy {
        key: None,
        team: None,
        limit: Decimal::from(1000),
        period: "monthly".into(),
        metric: crate::period::Metric::Unblended,
        actions: vec!["notify".into(), "flag".into()],
        mode: "dry-run".into(),
        stop: None,
    }
}

/// Makes policies match `desired` inside the import's transaction; unchanged ones are not
/// written (and not audited).
pub(super) async fn apply(
    tx: &mut PgConnection,
    actor: &Actor,
    desired: &[FilePolicy],
) -> Result<Vec<String>, ApplyError> {
    let current = policy::all(tx).await?;
    // The existing policy an entry stands for: by key, else by team.
    let find = |wanted: &Policy| -> Option<&Policy> {
        match &wanted.key {
            Some(key) => current
                .iter()
                .find(|p| p.key.as_deref().is_some_and(|k| k.eq_ignore_ascii_case(key))),
            None => current.iter().find(|p| p.team == wanted.team),
        }
    };
    let mut changes = Vec::new();
    for existing in current.iter().filter(|p| p.team.is_some()) {
        let team = existing.team.as_deref().unwrap_or_default();
        // Kept only where an entry stands for it and still names its team; an override whose
        // key moved to another team is removed here and written there below.
        let kept = desired
            .iter()
            .any(|d| d.policy.team.as_deref() == Some(team) && find(&d.policy).is_none_or(|p| p == existing));
        if !kept && policy::remove_override(tx, actor, team).await? {
            changes.push(format!("remove the policy override of team {team:?}"));
        }
    }
    let org_default = FilePolicy {
        line: 1,
        policy: built_in_default(),
    };
    let org = desired.iter().find(|d| d.policy.team.is_none()).unwrap_or(&org_default);
    let wanted = desired
        .iter()
        .filter(|d| d.policy.team.is_some())
        .chain(std::iter::once(org));
    for entry in wanted {
        let unchanged = find(&entry.policy).is_some_and(|existing| {
            existing.team == entry.policy.team
                && *existing
                    == Policy {
                        key: existing.key.clone(),
                        ..entry.policy.clone()
                    }
        });
        if unchanged {
            continue;
        }
        policy::save(tx, actor, &entry.policy).await.map_err(|e| match e {
            SaveError::Invalid(field) => ApplyError::Invalid(vec![FileError {
                line: entry.line,
                message: format!("{}: {}", field.field, field.message),
            }]),
            SaveError::Database(e) => ApplyError::Database(e),
        })?;
        changes.push(format!(
            "set the policy of {}: {} {} per {}, {} ({})",
            entry
                .policy
                .team
                .as_deref()
                .map_or("the org".to_string(), |t| format!("team {t:?}")),
            entry.policy.actions.join("+"),
            entry.policy.limit,
            entry.policy.period,
            entry.policy.mode,
            if entry.policy.stop.is_some() {
                "with stop settings"
            } else {
                "no stop"
            }
        ));
    }
    Ok(changes)
}

pub(super) fn render(policies: &[Policy]) -> String {
    let mut out = String::from("policies:\n");
    for p in policies {
        let key = p.key.clone().unwrap_or_else(|| policy::default_key(p.team.as_deref()));
        out.push_str(&format!("  - key: {}\n", quote(&key)));
        if let Some(team) = &p.team {
            out.push_str(&format!("    team: {}\n", quote(team)));
        }
        out.push_str(&format!("    limit: \"{:.2}\"\n", p.limit));
        out.push_str(&format!("    period: {}\n", p.period));
        out.push_str(&format!("    metric: {}\n", p.metric.key()));
        out.push_str(&format!("    actions: [{}]\n", p.actions.join(", ")));
        out.push_str(&format!("    mode: {}\n", p.mode));
        if let Some(stop) = &p.stop {
            let list = |items: &[String]| items.iter().map(|i| quote(i)).collect::<Vec<_>>().join(", ");
            out.push_str("    stop:\n");
            if stop.on_resources() {
                out.push_str(&format!("      resources: [{}]\n", stop.resources.join(", ")));
                if !stop.regions.is_empty() {
                    out.push_str(&format!("      regions: [{}]\n", list(&stop.regions)));
                }
                if let Some(account) = &stop.account {
                    out.push_str(&format!("      account: \"{account}\"\n"));
                }
                if !stop.managed_by_tags.is_empty() {
                    out.push_str(&format!("      managed_by_tags: [{}]\n", list(&stop.managed_by_tags)));
                }
                if stop.allow_instance_store {
                    out.push_str("      instance_store: allow\n");
                }
                if !stop.iam_roles.is_empty() {
                    if !stop.iam_policy_arn.is_empty() {
                        out.push_str(&format!("      policy_arn: {}\n", quote(&stop.iam_policy_arn)));
                    }
                    out.push_str(&format!("      roles: [{}]\n", list(&stop.iam_roles)));
                }
                continue;
            }
            out.push_str(&format!("      type: {}\n", stop.stop_type));
            out.push_str(&format!(
                "      execution_role_arn: {}\n",
                quote(&stop.execution_role_arn)
            ));
            if stop.stop_type == "APPLY_IAM_POLICY" {
                out.push_str(&format!("      policy_arn: {}\n", quote(&stop.iam_policy_arn)));
                out.push_str(&format!("      roles: [{}]\n", list(&stop.iam_roles)));
            } else {
                out.push_str(&format!("      instance_ids: [{}]\n", list(&stop.instance_ids)));
                out.push_str(&format!("      region: {}\n", quote(&stop.instance_region)));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::*;

    #[test]
    fn the_documented_section_parses_round_trips_and_names_bad_lines() {
        let text = "policies:
  - limit: \"1000.00\"
    period: monthly
    actions: [notify, flag]
    mode: dry-run
  - team: ml-research
    limit: \"20000.00\"
    period: monthly
    actions: [notify, flag, stop]
    mode: manual
    stop:
      type: RUN_SSM_DOCUMENTS
      execution_role_arn: \"arn:aws:iam::123456789012:role/budgets-actions\"
      instance_ids: [i-0abc12345def67890]
      region: us-east-1
";
        let policies = parse(text).expect("valid").policies.expect("section");
        assert_eq!(policies.len(), 2);
        let stop = policies[1].policy.stop.clone().expect("stop");
        assert_eq!(stop.instance_ids, ["i-0abc12345def67890"]);
        let rendered = render(&policies.iter().map(|p| p.policy.clone()).collect::<Vec<_>>());
        let again = parse(&rendered).expect("round trip").policies.expect("section");
        // The export writes each policy's key: `team:<name>`, or `org`.
        assert_eq!(
            again.iter().map(|p| p.policy.key.as_deref()).collect::<Vec<_>>(),
            [Some("org"), Some("team:ml-research")]
        );
        let strip = |ps: Vec<FilePolicy>| {
            ps.into_iter()
                .map(|p| Policy { key: None, ..p.policy })
                .collect::<Vec<_>>()
        };
        assert_eq!(strip(again), strip(policies));

        let bad = "policies:
  - limit: 1000.5
    period: monthly
    actions: [notify]
    mode: dry-run
  - team: a
    limit: \"10\"
    period: weekly
    actions: [notify, stop]
    mode: manual
    stop:
      type: RUN_SSM_DOCUMENTS
      execution_role_arn: nope
      instance_ids: [host-1]
      region: us-east-1
  - team: a
    limit: \"10\"
";
        let errors: Vec<String> = parse(bad).expect_err("invalid").iter().map(|e| e.to_string()).collect();
        assert_eq!(
            errors,
            [
                "line 2: write the limit as quoted text, e.g. \"1000.00\"",
                "line 8: period: choose monthly, quarterly or annual",
                "line 13: execution_role_arn: expected an IAM role ARN, arn:aws:iam::123456789012:role/NAME, that AWS Budgets may assume",
                "line 14: instance_ids: \"host-1\" is not an EC2 instance id (i-0123abcd…)",
                "line 16: this policy has no `period:`",
                "line 16: this policy has no `actions:`",
                "line 16: this policy has no `mode:`",
            ]
        );
    }

    #[test]
    fn a_stop_on_the_projects_resources_parses_round_trips_and_names_bad_lines() {
        let text = "policies:
  - limit: \"1000.00\"
    period: monthly
    actions: [stop]
    mode: manual
    stop:
      resources: [training_jobs, ec2]
      regions: [us-west-2, eu-central-1]
  - team: research
    limit: \"10\"
    period: monthly
    actions: [flag, stop]
    mode: dry-run
    stop: {}
  - team: platform
    limit: \"10\"
    period: monthly
    actions: [stop]
    mode: automatic
    stop:
      resources: [ec2]
      policy_arn: \"arn:aws:iam::123456789012:policy/deny-gpu-launch\"
      roles: [ml-training, batch-runner]
";
        let policies = parse(text).expect("valid").policies.expect("section");
        let org = policies[0].policy.stop.clone().expect("stop");
        // Kinds in their documented order; no AWS Budgets action.
        assert_eq!(org.resources, ["ec2", "training_jobs"]);
        assert_eq!(org.regions, ["us-west-2", "eu-central-1"]);
        assert!(org.on_resources() && org.stop_type.is_empty());
        // A bare `stop:` stops what a reversal restores, in BURNRATE_AWS_REGIONS.
        let team = policies[1].policy.stop.clone().expect("stop");
        assert_eq!(team.resources, ["ec2", "notebooks"]);
        assert!(team.regions.is_empty());
        // Relaunch prevented: the deny policy and its roles ride along, with no Budgets type.
        let guarded = policies[2].policy.stop.clone().expect("stop");
        assert_eq!(guarded.iam_roles, ["ml-training", "batch-runner"]);
        assert_eq!(
            guarded.iam_policy_arn,
            "arn:aws:iam::123456789012:policy/deny-gpu-launch"
        );
        assert!(guarded.on_resources() && guarded.stop_type.is_empty());
        let rendered = render(&policies.iter().map(|p| p.policy.clone()).collect::<Vec<_>>());
        let again = parse(&rendered).expect("round trip").policies.expect("section");
        assert_eq!(
            again.iter().map(|p| p.policy.stop.clone()).collect::<Vec<_>>(),
            policies.iter().map(|p| p.policy.stop.clone()).collect::<Vec<_>>()
        );

        let bad = "policies:
  - limit: \"1000.00\"
    period: monthly
    actions: [stop]
    mode: manual
    stop:
      resources: [ec2, gpus]
      regions: [us-east-1, mars-1]
  - team: a
    limit: \"10\"
    period: monthly
    actions: [stop]
    mode: manual
    stop:
      type: RUN_SSM_DOCUMENTS
      execution_role_arn: \"arn:aws:iam::123456789012:role/budgets-actions\"
      instance_ids: [i-0abc12345def67890]
      region: us-east-1
      resources: [ec2]
  - team: b
    limit: \"10\"
    period: monthly
    actions: [stop]
    mode: manual
    stop:
      resources: [ec2]
      roles: [\"arn:aws:iam::123456789012:role/ml\"]
      execution_role_arn: \"arn:aws:iam::123456789012:role/budgets-actions\"
";
        let errors: Vec<String> = parse(bad).expect_err("invalid").iter().map(|e| e.to_string()).collect();
        assert_eq!(
            errors,
            [
                "line 7: stop_resources: \"gpus\" is not one of ec2, notebooks, training_jobs, processing_jobs, endpoints",
                "line 8: stop_regions: \"mars-1\" is not an AWS region name such as us-east-1",
                "line 15: stop_type: a stop acts either on the project's resources (resources:, regions:) or through an AWS \
                 Budgets action (type:), not both",
                // Roles without policy_arn are valid: the project's own deny policy (#51).
                "line 27: iam_roles: \"arn:aws:iam::123456789012:role/ml\" is not an IAM role name (letters, digits \
                 and +=,.@_-, at most 64)",
                "line 28: execution_role_arn: a stop on the project's resources takes no execution role or instance \
                 ids: those are an AWS Budgets action's (give its type)",
            ]
        );
    }
}
