//! The calls that change things, asked about without making them: EC2's `DryRun` on an
//! instance carrying the project tag key, and IAM's policy simulator for the rest, with the
//! context the README's policy conditions read (the resource's or request's project tag, the
//! deny policy's ARN).

use aws_config::SdkConfig;
use aws_sdk_iam::types::{ContextEntry, ContextKeyTypeEnum, PolicyEvaluationDecisionType};

use super::{Finding, How};

/// What the simulator is asked, a group at a time: the actions, and the context keys their
/// README statements' conditions read.
struct Group {
    actions: &'static [&'static str],
    context: fn(tag_key: &str, account: &str) -> Vec<(String, String)>,
}

fn deny_policy(account: &str) -> String {
    format!("arn:aws:iam::{account}:policy/burnrate/burnrate-deny-doctor")
}

const GROUPS: [Group; 5] = [
    Group {
        actions: &[
            "sagemaker:StopNotebookInstance",
            "sagemaker:StartNotebookInstance",
            "sagemaker:StopTrainingJob",
            "sagemaker:StopProcessingJob",
            "sagemaker:DeleteEndpoint",
        ],
        context: |tag, _| vec![(format!("aws:ResourceTag/{tag}"), "burnrate-doctor".into())],
    },
    Group {
        actions: &["sagemaker:CreateEndpoint", "sagemaker:AddTags"],
        context: |tag, _| vec![(format!("aws:RequestTag/{tag}"), "burnrate-doctor".into())],
    },
    Group {
        actions: &["iam:CreatePolicy", "iam:GetPolicy", "iam:GetPolicyVersion"],
        context: |_, _| Vec::new(),
    },
    Group {
        actions: &[
            "iam:AttachRolePolicy",
            "iam:DetachRolePolicy",
            "iam:ListAttachedRolePolicies",
        ],
        context: |_, account| vec![("iam:PolicyARN".into(), deny_policy(account))],
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
                    "refused on {instance}, which carries the project tag key: add it as the README's IAM policy shows"
                ),
            ),
            _ => Finding::fail(call, How::DryRun, format!("no dry-run answer on {instance}: {message}")),
        })
        .collect()
}

/// The principal the simulator asks about: a user or role as STS names it, and for an
/// assumed role's session the role itself, with its path from `iam:GetRole` when allowed.
async fn principal(iam: &aws_sdk_iam::Client, arn: &str, account: &str) -> String {
    let Some(role) = arn
        .strip_prefix(&format!("arn:aws:sts::{account}:assumed-role/"))
        .and_then(|rest| rest.split('/').next())
    else {
        return arn.to_string();
    };
    match iam.get_role().role_name(role).send().await {
        Ok(answer) => answer.role().map_or_else(
            || format!("arn:aws:iam::{account}:role/{role}"),
            |r| r.arn().to_string(),
        ),
        Err(_) => format!("arn:aws:iam::{account}:role/{role}"),
    }
}

async fn simulate(
    iam: &aws_sdk_iam::Client,
    principal: &str,
    group: &Group,
    tag_key: &str,
    account: &str,
) -> Vec<Finding> {
    let context: Vec<ContextEntry> = (group.context)(tag_key, account)
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
        .send()
        .await;
    let results = match answer {
        Ok(answer) => answer.evaluation_results().to_vec(),
        Err(err) => {
            return vec![Finding::fail(
                "iam:SimulatePrincipalPolicy",
                How::Read,
                format!(
                    "{}: {} not checked; allow iam:SimulatePrincipalPolicy on {principal} for doctor",
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
                        "{} for {principal}: add it as the README's IAM policy shows",
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
    let principal = principal(&iam, arn, account).await;
    let mut findings = Vec::new();
    match &instance {
        Some((regional, id)) => findings.extend(dry_runs(regional, id).await),
        None => {
            let ec2 = Group {
                actions: &["ec2:StopInstances", "ec2:StartInstances"],
                context: |tag, _| vec![(format!("aws:ResourceTag/{tag}"), "burnrate-doctor".into())],
            };
            findings.extend(simulate(&iam, &principal, &ec2, tag_key, account).await);
        }
    }
    for group in &GROUPS {
        findings.extend(simulate(&iam, &principal, group, tag_key, account).await);
    }
    findings
}
