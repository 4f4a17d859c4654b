//! The `stop` action through AWS Budgets actions (aws-sdk-budgets).
//!
//! AWS runs a budget action only when its own evaluation (a few times a day) finds the
//! budget over the action's threshold. So burnrate prepares the stop as soon as a violation
//! is recorded outside dry-run: an AWS budget `burnrate-enforce-<action id>` with the policy's
//! limit and period, filtered to the project's tag, and a MANUAL budget action at 100 % of
//! actual spend. When an admin approves (or, in automatic mode, burnrate itself), burnrate
//! asks AWS for the action's state and approves it if AWS has it PENDING. REVERSE undoes an
//! executed action. AWS runs both asynchronously: EXECUTION_IN_PROGRESS (REVERSE_IN_PROGRESS)
//! until SUCCESS or FAILURE, which `status` reads.
//!
//! Every step is safe to repeat: a second CreateBudget finds the budget, an action already on
//! the budget is reused rather than created again, and deleting what is gone is done.

use aws_sdk_budgets::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_budgets::operation::RequestId;
use aws_sdk_budgets::types::{
    ActionSubType, ActionThreshold, ActionType, ApprovalModel, Budget, BudgetType, Definition, ExecutionType,
    IamActionDefinition, NotificationType, Spend, SsmActionDefinition, Subscriber, SubscriptionType, ThresholdType,
    TimeUnit,
};
use rust_decimal::Decimal;

use super::policy::StopConfig;
use crate::aws::budgets::AwsBudgets;
use crate::period::BudgetPeriod;

/// The prefix of the AWS budgets that carry stop actions; `budgets sync` leaves them alone.
pub const BUDGET_PREFIX: &str = "burnrate-enforce-";

/// A failed AWS call: AWS's code and message, and its request id when it answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AwsFailure {
    pub message: String,
    pub request_id: Option<String>,
    /// AWS did not answer (timeout, connection lost): it may or may not have acted.
    pub ambiguous: bool,
    /// Throttling, a 5xx, a timeout: asked again on the next pass, never recorded as final.
    pub transient: bool,
}

fn failure<E: ProvideErrorMetadata + std::error::Error + 'static>(call: &str, err: SdkError<E>) -> AwsFailure {
    AwsFailure {
        message: crate::aws::budgets::describe_error(call, &err),
        request_id: err.request_id().map(str::to_string),
        ambiguous: err.as_service_error().is_none(),
        transient: crate::aws::is_transient(&err),
    }
}

impl AwsFailure {
    /// A failure found before AWS answered (no request id).
    pub fn new(message: impl Into<String>) -> AwsFailure {
        AwsFailure {
            message: message.into(),
            request_id: None,
            ambiguous: false,
            transient: false,
        }
    }
}

/// What a stop needs to know about its violation.
pub struct StopTarget<'a> {
    pub action_id: i64,
    pub project: &'a str,
    pub tag_key: &'a str,
    pub limit: Decimal,
    pub period: BudgetPeriod,
    /// The cost the policy judges: the budget tracks the same.
    pub metric: crate::period::Metric,
    pub subscribers: &'a [String],
}

/// The enforcement budget and budget action a stop runs through.
pub struct Prepared {
    pub budget: String,
    pub action_id: String,
}

/// Creates the enforcement budget (unless a previous try did) and its budget action.
pub async fn prepare(aws: &AwsBudgets, target: &StopTarget<'_>, stop: &StopConfig) -> Result<Prepared, AwsFailure> {
    let build = |e: aws_sdk_budgets::error::BuildError| AwsFailure::new(format!("building the AWS request: {e}"));
    let name = format!("{BUDGET_PREFIX}{}", target.action_id);
    let filter = crate::aws::budgets::tag_filter(target.tag_key, &[target.project.to_string()]);
    let budget = Budget::builder()
        .budget_name(&name)
        .budget_type(BudgetType::Cost)
        .time_unit(match target.period {
            BudgetPeriod::Monthly => TimeUnit::Monthly,
            BudgetPeriod::Quarterly => TimeUnit::Quarterly,
            BudgetPeriod::Annual => TimeUnit::Annually,
        })
        .budget_limit(
            Spend::builder()
                .amount(format!("{:.2}", target.limit))
                .unit("USD")
                .build()
                .map_err(build)?,
        )
        .filter_expression(filter)
        // The policy's metric, as the documented `Metrics` field of a budget with a
        // `FilterExpression` takes it (API_budgets_Budget.html): not always unblended.
        .metrics(match target.metric {
            crate::period::Metric::Amortized => aws_sdk_budgets::types::Metric::AmortizedCost,
            crate::period::Metric::Unblended => aws_sdk_budgets::types::Metric::UnblendedCost,
        })
        .build()
        .map_err(build)?;
    let created = aws
        .client()
        .create_budget()
        .account_id(aws.account_id())
        .budget(budget)
        .send()
        .await;
    match created {
        Ok(_) => {}
        // A retry after a half-done first try finds its budget already there.
        Err(err) if err.as_service_error().and_then(|e| e.code()) == Some("DuplicateRecordException") => {}
        Err(err) => return Err(failure("CreateBudget", err)),
    }
    // The budget is this action's alone: an action on it is the one a previous try created.
    if let Some(existing) = existing_action(aws, &name).await? {
        return Ok(Prepared {
            budget: name,
            action_id: existing,
        });
    }
    let definition = match stop.stop_type.as_str() {
        "APPLY_IAM_POLICY" => Definition::builder()
            .iam_action_definition(
                IamActionDefinition::builder()
                    .policy_arn(&stop.iam_policy_arn)
                    .set_roles(Some(stop.iam_roles.clone()))
                    .build()
                    .map_err(build)?,
            )
            .build(),
        "RUN_SSM_DOCUMENTS" => Definition::builder()
            .ssm_action_definition(
                SsmActionDefinition::builder()
                    .action_sub_type(ActionSubType::StopEc2)
                    .region(&stop.instance_region)
                    .set_instance_ids(Some(stop.instance_ids.clone()))
                    .build()
                    .map_err(build)?,
            )
            .build(),
        other => return Err(AwsFailure::new(format!("unknown stop type {other:?}"))),
    };
    let subscribers = target
        .subscribers
        .iter()
        .take(11)
        .map(|address| {
            Subscriber::builder()
                .subscription_type(SubscriptionType::Email)
                .address(address)
                .build()
                .map_err(build)
        })
        .collect::<Result<Vec<_>, _>>()?;
    if subscribers.is_empty() {
        return Err(AwsFailure::new(
            "AWS requires a subscriber for a budget action: give the team an owner or add an admin account",
        ));
    }
    let action = aws
        .acting()
        .create_budget_action()
        .account_id(aws.account_id())
        .budget_name(&name)
        .notification_type(NotificationType::Actual)
        .action_type(match stop.stop_type.as_str() {
            "APPLY_IAM_POLICY" => ActionType::Iam,
            _ => ActionType::Ssm,
        })
        .action_threshold(
            ActionThreshold::builder()
                .action_threshold_value(100.0)
                .action_threshold_type(ThresholdType::Percentage)
                .build()
                .map_err(build)?,
        )
        .definition(definition)
        .execution_role_arn(&stop.execution_role_arn)
        // burnrate is the approval gate: AWS only runs it when burnrate approves.
        .approval_model(ApprovalModel::Manual)
        .set_subscribers(Some(subscribers))
        .send()
        .await
        .map_err(|e| failure("CreateBudgetAction", e))?;
    Ok(Prepared {
        budget: name,
        action_id: action.action_id().to_string(),
    })
}

fn is_not_found<E: ProvideErrorMetadata>(err: &SdkError<E>) -> bool {
    err.as_service_error().and_then(|e| e.code()) == Some("NotFoundException")
}

/// The action already on `budget`, if a previous try created one.
pub(super) async fn existing_action(aws: &AwsBudgets, budget: &str) -> Result<Option<String>, AwsFailure> {
    let out = aws
        .client()
        .describe_budget_actions_for_budget()
        .account_id(aws.account_id())
        .budget_name(budget)
        .send()
        .await
        .map_err(|e| failure("DescribeBudgetActionsForBudget", e))?;
    Ok(out.actions().first().map(|a| a.action_id().to_string()))
}

/// AWS's status of the action (`STANDBY`, `PENDING`, `EXECUTION_IN_PROGRESS`,
/// `EXECUTION_SUCCESS`, …); `None` when AWS has no such action.
pub async fn status(aws: &AwsBudgets, budget: &str, action_id: &str) -> Result<Option<String>, AwsFailure> {
    let out = aws
        .client()
        .describe_budget_action()
        .account_id(aws.account_id())
        .budget_name(budget)
        .action_id(action_id)
        .send()
        .await;
    match out {
        Ok(out) => Ok(out.action().map(|a| a.status().as_str().to_string())),
        Err(err) if is_not_found(&err) => Ok(None),
        Err(err) => Err(failure("DescribeBudgetAction", err)),
    }
}

/// Why AWS's last execution or reversal ended as it did: the newest history entry's message.
pub async fn last_event(aws: &AwsBudgets, budget: &str, action_id: &str) -> Result<Option<String>, AwsFailure> {
    let out = aws
        .client()
        .describe_budget_action_histories()
        .account_id(aws.account_id())
        .budget_name(budget)
        .action_id(action_id)
        .send()
        .await
        .map_err(|e| failure("DescribeBudgetActionHistories", e))?;
    let newest = out.action_histories().iter().max_by_key(|h| h.timestamp().as_nanos());
    Ok(newest
        .and_then(|h| h.action_history_details())
        .map(|d| d.message().to_string())
        .filter(|m| !m.is_empty()))
}

/// Deletes one budget action; one already gone counts as deleted.
async fn delete_action(aws: &AwsBudgets, budget: &str, action_id: &str) -> Result<(), AwsFailure> {
    let out = aws
        .acting()
        .delete_budget_action()
        .account_id(aws.account_id())
        .budget_name(budget)
        .action_id(action_id)
        .send()
        .await;
    match out {
        Ok(_) => Ok(()),
        Err(err) if is_not_found(&err) => Ok(()),
        Err(err) => Err(failure("DeleteBudgetAction", err)),
    }
}

/// Deletes the stop's budget action and its budget; what is already gone counts as deleted.
pub async fn delete(aws: &AwsBudgets, budget: &str, action_id: Option<&str>) -> Result<(), AwsFailure> {
    if let Some(action_id) = action_id {
        delete_action(aws, budget, action_id).await?;
    }
    // An action a half-done try created but never recorded goes with the budget.
    if let Some(other) = existing_action(aws, budget).await.ok().flatten() {
        delete_action(aws, budget, &other).await?;
    }
    let out = aws
        .acting()
        .delete_budget()
        .account_id(aws.account_id())
        .budget_name(budget)
        .send()
        .await;
    match out {
        Ok(_) => Ok(()),
        Err(err) if is_not_found(&err) => Ok(()),
        Err(err) => Err(failure("DeleteBudget", err)),
    }
}

/// ExecuteBudgetAction; returns the request id.
pub async fn execute(
    aws: &AwsBudgets,
    budget: &str,
    action_id: &str,
    execution: ExecutionType,
) -> Result<Option<String>, AwsFailure> {
    let out = aws
        .acting()
        .execute_budget_action()
        .account_id(aws.account_id())
        .budget_name(budget)
        .action_id(action_id)
        .execution_type(execution)
        .send()
        .await
        .map_err(|e| failure("ExecuteBudgetAction", e))?;
    Ok(out.request_id().map(str::to_string))
}
