//! The checks of a policy's `stop:` fields: a stop on the project's own resources (kinds,
//! regions, account, controllers, instance store, relaunch guard), and the IAM names both
//! kinds of stop take. Split from `policy` so each file stays small.

use super::{DEFAULT_RESOURCE_KINDS, PolicyInput, RESOURCE_KINDS, StopConfig};
use crate::error::FieldError;

pub(super) fn list(text: &str) -> Vec<String> {
    text.split([',', '\n'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

pub(super) fn is_account_arn(arn: &str, kind: &str) -> bool {
    let parts: Vec<&str> = arn.splitn(6, ':').collect();
    parts.len() == 6
        && parts[0] == "arn"
        && parts[1].starts_with("aws")
        && parts[2] == "iam"
        && parts[4].len() == 12
        && parts[4].bytes().all(|b| b.is_ascii_digit())
        && parts[5]
            .strip_prefix(kind)
            .is_some_and(|rest| rest.starts_with('/') && rest.len() > 1)
}

/// The deny policy and the roles it is attached to: an AWS Budgets `APPLY_IAM_POLICY`
/// action's, or a resource stop's relaunch guard.
pub(super) fn deny_policy_fields(policy_arn: &str, roles: &[String], errors: &mut Vec<FieldError>) {
    if !is_account_arn(policy_arn, "policy") {
        errors.push(FieldError::new(
            "iam_policy_arn",
            "expected the deny policy's ARN, arn:aws:iam::123456789012:policy/NAME",
        ));
    }
    role_names(roles, errors);
}

/// IAM role names: 1 to 64 of letters, digits and +=,.@_-
/// (<https://docs.aws.amazon.com/IAM/latest/APIReference/API_Role.html>), 1 to 100 of them.
fn role_names(roles: &[String], errors: &mut Vec<FieldError>) {
    let bad = roles
        .iter()
        .find(|r| r.len() > 64 || !r.bytes().all(|b| b.is_ascii_alphanumeric() || b"+=,.@_-".contains(&b)));
    if let Some(role) = bad {
        errors.push(FieldError::new(
            "iam_roles",
            format!("{role:?} is not an IAM role name (letters, digits and +=,.@_-, at most 64)"),
        ));
    } else if !(1..=100).contains(&roles.len()) {
        errors.push(FieldError::new(
            "iam_roles",
            "name 1 to 100 IAM roles to attach the policy to",
        ));
    }
}

/// A stop on the project's resources: the kinds it reaches (the defaults when none are
/// listed), its regions, and optionally a deny policy for the roles that launch GPUs.
pub(super) fn resource_stop(input: &PolicyInput, errors: &mut Vec<FieldError>) -> StopConfig {
    let mut resources: Vec<String> = Vec::new();
    for kind in input.stop_resources.iter().map(|k| k.trim()).filter(|k| !k.is_empty()) {
        match RESOURCE_KINDS.iter().find(|k| **k == kind) {
            Some(k) if !resources.iter().any(|r| r == k) => resources.push(k.to_string()),
            Some(_) => {}
            None => errors.push(FieldError::new(
                "stop_resources",
                format!("{kind:?} is not one of {}", RESOURCE_KINDS.join(", ")),
            )),
        }
    }
    if resources.is_empty() {
        resources = DEFAULT_RESOURCE_KINDS.iter().map(|k| k.to_string()).collect();
    }
    resources.sort_by_key(|k| RESOURCE_KINDS.iter().position(|x| x == k));
    let regions = list(&input.stop_regions);
    if let Some(bad) = regions.iter().find(|r| !crate::config::savings::is_region(r)) {
        errors.push(FieldError::new(
            "stop_regions",
            format!("{bad:?} is not an AWS region name such as us-east-1"),
        ));
    }
    let managed_by_tags = list(&input.stop_managed_by_tags);
    // EC2 tag keys: 1 to 128 characters (<https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_Tag.html>).
    if let Some(bad) = managed_by_tags
        .iter()
        .find(|k| k.chars().count() > 128 || k.chars().any(char::is_control))
    {
        errors.push(FieldError::new(
            "stop_managed_by_tags",
            format!("{bad:?} is not an EC2 tag key (1 to 128 characters, no control characters)"),
        ));
    }
    let allow_instance_store = match input.stop_instance_store.trim() {
        "" | "skip" => false,
        "allow" => true,
        other => {
            errors.push(FieldError::new(
                "stop_instance_store",
                format!("{other:?} is neither skip nor allow"),
            ));
            false
        }
    };
    let account = match input.stop_account.trim() {
        "" => None,
        id => match crate::period::AwsAccountId::parse(id) {
            Ok(id) => Some(id.as_str().to_string()),
            Err(message) => {
                errors.push(FieldError::new("stop_account", message));
                None
            }
        },
    };
    // Optionally, relaunch prevented: burnrate attaches the deny policy to these roles
    // itself, and detaches it on reversal. An execution role and instance ids are an
    // AWS Budgets action's alone.
    let (iam_policy_arn, iam_roles) = (input.iam_policy_arn.trim().to_string(), list(&input.iam_roles));
    let budgets_only = [
        ("execution_role_arn", &input.execution_role_arn),
        ("instance_ids", &input.instance_ids),
    ];
    if let Some((field, _)) = budgets_only.iter().find(|(_, value)| !value.trim().is_empty()) {
        errors.push(FieldError::new(
            field,
            "a stop on the project's resources takes no execution role or instance ids: those are an AWS \
             Budgets action's (give its type)",
        ));
    }
    // Roles without a policy: burnrate's deny policy of the violating project alone.
    if !iam_policy_arn.is_empty() {
        deny_policy_fields(&iam_policy_arn, &iam_roles, errors);
    } else if !iam_roles.is_empty() {
        role_names(&iam_roles, errors);
    }
    StopConfig {
        stop_type: String::new(),
        execution_role_arn: String::new(),
        iam_policy_arn,
        iam_roles,
        instance_ids: Vec::new(),
        instance_region: String::new(),
        resources,
        regions,
        account,
        managed_by_tags,
        allow_instance_store,
    }
}
