//! The calls that change things, asked about without making them: EC2's `DryRun` on an
//! instance carrying the project tag key, and IAM's policy simulator for the rest, with the
//! context the policy conditions of docs/ENFORCEMENT.md read (the resource's or request's
//! project tag, the deny policy's ARN).

use aws_config::SdkConfig;
use aws_sdk_iam::types::{ContextEntry, ContextKeyTypeEnum, PolicyEvaluationDecisionType};

use super::{Finding, How};

/// What the simulator is asked, a group at a time: the actions, and the context keys their
/// statements' conditions in docs/ENFORCEMENT.md read.
struct Group {
    actions: &'static [&'static str],
    context: fn(tag_key: &str, iam: &str) -> Vec<(String, String)>,
    /// The resources docs/ENFORCEMENT.md's statements name for these actions (IAM's ARN prefix
    /// given): asked about `*`, a statement scoped to a path would not match.
    resources: fn(iam: &str) -> Vec<String>,
}

/// A deny policy of burnrate's name, as `iam:CreatePolicy` would make it.
fn deny_policy(iam: &str) -> String {
    format!("{iam}policy/burnrate/burnrate-deny-doctor")
}

fn anywhere(_: &str) -> Vec<String> {
    Vec::new()
}

const GROUPS: [Group; 6] = [
    Group {
        actions: &[
            "sagemaker:StopNotebookInstance",
            "sagemaker:StartNotebookInstance",
            "sagemaker:StopTrainingJob",
            "sagemaker:StopProcessingJob",
            "sagemaker:DeleteEndpoint",
        ],
        context: |tag, _| vec![(format!("aws:ResourceTag/{tag}"), "burnrate-doctor".into())],
        resources: anywhere,
    },
    Group {
        actions: &["sagemaker:CreateEndpoint", "sagemaker:AddTags"],
        context: |tag, _| vec![(format!("aws:RequestTag/{tag}"), "burnrate-doctor".into())],
        resources: anywhere,
    },
    Group {
        // Reads that need a resource to make for real: asked of the simulator instead.
        actions: &[
            "sagemaker:ListTags",
            "sagemaker:DescribeNotebookInstance",
            "sagemaker:DescribeTrainingJob",
            "sagemaker:DescribeProcessingJob",
            "sagemaker:DescribeEndpoint",
            "sagemaker:DescribeEndpointConfig",
        ],
        context: |_, _| Vec::new(),
        resources: anywhere,
    },
    Group {
        actions: &["iam:CreatePolicy", "iam:GetPolicy", "iam:GetPolicyVersion"],
        context: |_, _| Vec::new(),
        resources: |iam| vec![deny_policy(iam)],
    },
    Group {
        actions: &[
            "iam:AttachRolePolicy",
            "iam:DetachRolePolicy",
            "iam:ListAttachedRolePolicies",
        ],
        context: |_, iam| vec![("iam:PolicyARN".into(), deny_policy(iam))],
        resources: |iam| vec![format!("{iam}role/burnrate-doctor")],
    },
    Group {
        actions: &[
            "budgets:ModifyBudget",
            "budgets:CreateBudgetAction",
            "budgets:DescribeBudgetAction",
            "budgets:DescribeBudgetActionsForBudget",
            "budgets:DescribeBudgetActionHistories",
            "budgets:ExecuteBudgetAction",
            "budgets:DeleteBudgetAction",
        ],
        context: |_, _| Vec::new(),
        resources: anywhere,
    },
];

/// The error code and message of a dry run's answer; no code when AWS carried the call out.
fn dry_run_answer<T, E>(
    result: Result<T, aws_sdk_ec2::error::SdkError<E, aws_sdk_ec2::config::http::HttpResponse>>,
) -> (Option<String>, String)
where
    E: aws_sdk_ec2::error::ProvideErrorMetadata + std::error::Error + 'static,
{
    match result {
        Ok(_) => (None, "AWS answered as if the call was made, despite DryRun".into()),
        Err(err) => (
            err.as_service_error().and_then(|e| e.code()).map(str::to_string),
            crate::aws::error_message(&err),
        ),
    }
}

/// EC2's stop and start asked with `DryRun` on `instance`: AWS answers `DryRunOperation`
/// when the call would have been allowed, `UnauthorizedOperation` when not
/// (<https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_StopInstances.html>, DryRun).
async fn dry_runs(sdk: &SdkConfig, instance: &str) -> Vec<Finding> {
    let ec2 = aws_sdk_ec2::Client::new(sdk);
    let stop = dry_run_answer(ec2.stop_instances().instance_ids(instance).dry_run(true).send().await);
    let start = dry_run_answer(ec2.start_instances().instance_ids(instance).dry_run(true).send().await);
    [("ec2:StopInstances", stop), ("ec2:StartInstances", start)]
        .into_iter()
        .map(|(call, (code, message))| match code.as_deref() {
            Some("DryRunOperation") => Finding::pass(call, How::DryRun, format!("allowed on {instance}")),
            Some("UnauthorizedOperation") => Finding::fail(
                call,
                How::DryRun,
                format!(
                    "refused on {instance}, which carries the project tag key: \
                     add it as docs/ENFORCEMENT.md's IAM policy shows"
                ),
            ),
            _ => Finding::fail(call, How::DryRun, format!("no dry-run answer on {instance}: {message}")),
        })
        .collect()
}

/// The principal the simulator asks about: a user or role as STS names it, and for an
/// assumed role's session the role itself, with its path from `iam:GetRole` when allowed.
async fn principal(iam: &aws_sdk_iam::Client, arn: &str, account: &str, prefix: &str) -> String {
    let Some(role) = arn
        .split_once(&format!(":sts::{account}:assumed-role/"))
        .and_then(|(_, rest)| rest.split('/').next())
    else {
        return arn.to_string();
    };
    // Without iam:GetRole the role's path is unknown; a role under a path then answers
    // NoSuchEntity, which the finding shows as IAM gives it.
    match iam.get_role().role_name(role).send().await {
        Ok(answer) => answer
            .role()
            .map_or_else(|| format!("{prefix}role/{role}"), |r| r.arn().to_string()),
        Err(_) => format!("{prefix}role/{role}"),
    }
}

/// `arn:<partition>:iam::<account>:` from the identity's own ARN (aws, aws-cn, aws-us-gov).
fn iam_prefix(arn: &str, account: &str) -> String {
    let partition = arn.split(':').nth(1).filter(|p| !p.is_empty()).unwrap_or("aws");
    format!("arn:{partition}:iam::{account}:")
}

async fn simulate(
    iam: &aws_sdk_iam::Client,
    principal: &str,
    group: &Group,
    tag_key: &str,
    prefix: &str,
) -> Vec<Finding> {
    let resources = (group.resources)(prefix);
    let context: Vec<ContextEntry> = (group.context)(tag_key, prefix)
        .into_iter()
        .map(|(key, value)| {
            ContextEntry::builder()
                .context_key_name(key)
                .context_key_values(value)
                .context_key_type(ContextKeyTypeEnum::String)
                .build()
        })
        .collect();
    let answer = iam
        .simulate_principal_policy()
        .policy_source_arn(principal)
        .set_action_names(Some(group.actions.iter().map(ToString::to_string).collect()))
        .set_context_entries((!context.is_empty()).then_some(context))
        .set_resource_arns((!resources.is_empty()).then_some(resources))
        .send()
        .await;
    let results = match answer {
        Ok(answer) => answer.evaluation_results().to_vec(),
        Err(err) => {
            return vec![Finding::fail(
                "iam:SimulatePrincipalPolicy",
                How::Read,
                format!(
                    "{}: {} not checked (doctor needs iam:SimulatePrincipalPolicy on {principal}, and \
                     iam:GetRole on an assumed role to find its path)",
                    crate::aws::error_message(&err),
                    group.actions.join(", ")
                ),
            )];
        }
    };
    group
        .actions
        .iter()
        .map(
            |action| match results.iter().find(|r| r.eval_action_name() == *action) {
                Some(r) if *r.eval_decision() == PolicyEvaluationDecisionType::Allowed => {
                    Finding::pass(*action, How::Simulated, format!("allowed for {principal}"))
                }
                Some(r) => Finding::fail(
                    *action,
                    How::Simulated,
                    format!(
                        "{} for {principal}: add it as docs/ENFORCEMENT.md's IAM policy shows",
                        r.eval_decision().as_str()
                    ),
                ),
                None => Finding::fail(*action, How::Simulated, "the simulator did not answer for it"),
            },
        )
        .collect()
}

/// Every call that changes something, asked about; EC2's by dry run when `instance` names a
/// tagged instance (with the SDK configuration of its region), else by the simulator.
pub(super) async fn check(
    sdk: &SdkConfig,
    arn: &str,
    account: &str,
    tag_key: &str,
    instance: Option<(SdkConfig, String)>,
) -> Vec<Finding> {
    let iam = aws_sdk_iam::Client::new(sdk);
    let prefix = iam_prefix(arn, account);
    let principal = principal(&iam, arn, account, &prefix).await;
    let mut findings = Vec::new();
    match &instance {
        Some((regional, id)) => findings.extend(dry_runs(regional, id).await),
        None => {
            let ec2 = Group {
                actions: &["ec2:StopInstances", "ec2:StartInstances"],
                context: |tag, _| vec![(format!("aws:ResourceTag/{tag}"), "burnrate-doctor".into())],
                resources: anywhere,
            };
            findings.extend(simulate(&iam, &principal, &ec2, tag_key, &prefix).await);
        }
    }
    for group in &GROUPS {
        findings.extend(simulate(&iam, &principal, group, tag_key, &prefix).await);
    }
    findings
}
