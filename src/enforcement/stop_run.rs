//! The AWS side of a claimed stop, run with no transaction open. Each function ends the
//! claim (or, for an unclaimed action in flight, moves it on) in a short transaction of its
//! own, and every step is safe to repeat.

use aws_sdk_budgets::types::ExecutionType;
use sqlx::PgPool;

use super::aws_stop::{self, AwsFailure, StopTarget};
use super::claims::{self, ActionRow, Intent, Settled, Step};
use super::executor::Executor;
use super::{notify, policy};
use crate::aws::budgets::AwsBudgets;
use crate::period::BudgetPeriod;

fn failed(failure: AwsFailure) -> Settled<'static> {
    Settled {
        request_id: failure.request_id,
        ..Settled::new("failed", "failed", failure.message)
    }
}

/// A failed call's step: a passing fault (throttling, a 5xx, a timeout) leaves the stop where
/// it was claimed from, for the next pass; AWS's own refusal fails it.
fn failing(failure: AwsFailure) -> Step {
    if failure.transient {
        Step::Release(format!(
            "AWS did not succeed this time ({}); tried again on the next pass",
            failure.message
        ))
    } else {
        Step::End(failed(failure))
    }
}

/// The stop's AWS budget and action: recorded ones, or ones created now (and recorded at
/// once, fenced by the claim). `Ok(None)`: the claim was lost meanwhile.
async fn prepared(
    pool: &PgPool,
    exec: &Executor,
    aws: &AwsBudgets,
    row: &ActionRow,
    claim: i64,
) -> Result<Result<Option<(String, String)>, AwsFailure>, sqlx::Error> {
    if let (Some(budget), Some(action)) = (&row.aws_budget_name, &row.aws_action_id) {
        return Ok(Ok(Some((budget.clone(), action.clone()))));
    }
    let mut conn = pool.acquire().await?;
    let policy = policy::for_team(&mut conn, row.team.as_deref()).await?;
    let Some((stop, period, metric)) = policy.and_then(|p| Some((p.stop?, BudgetPeriod::parse(&p.period)?, p.metric)))
    else {
        return Ok(Err(AwsFailure::new(
            "the policy has no stop configuration (type, execution role and targets)",
        )));
    };
    let subscribers = notify::recipients(&mut conn, row.team_id).await?;
    drop(conn);
    let target = StopTarget {
        action_id: row.id,
        project: &row.project,
        tag_key: &exec.tag_key,
        limit: row.spend_limit,
        period,
        metric,
        subscribers: &subscribers,
    };
    let aws_stop::Prepared {
        budget,
        action_id: action,
    } = match aws_stop::prepare(aws, &target, &stop).await {
        Ok(ready) => ready,
        Err(failure) => return Ok(Err(failure)),
    };
    let mut conn = pool.acquire().await?;
    if !claims::record_prepared(&mut conn, row.id, claim, &budget, &action).await? {
        return Ok(Ok(None));
    }
    Ok(Ok(Some((budget, action))))
}

/// Runs a claimed stop for `intent` and ends the claim; returns the status it ended in. A
/// stop on the project's resources runs in `resources::run`.
pub async fn run_claimed(
    pool: &PgPool,
    exec: &Executor,
    row: &ActionRow,
    claim: i64,
    actor: &str,
    (intent, today): (Intent, chrono::NaiveDate),
) -> Result<String, sqlx::Error> {
    let on_resources = row.stops_resources
        || (intent != Intent::Reverse && super::resources::listing::plan(pool, exec, row).await?.is_some());
    if on_resources {
        return super::resources::run::run_claimed(pool, exec, row, claim, actor, (intent, today)).await;
    }
    // Well inside the lease: a run that overstays is left for `resume`, which asks AWS.
    let bound = exec.lease.mul_f64(0.8);
    let outcome = match exec.aws().await {
        Ok(aws) => match tokio::time::timeout(bound, step(pool, exec, &aws, row, claim, (intent, today))).await {
            Ok(outcome) => outcome?,
            Err(_) => Step::Keep,
        },
        Err(failure) => failing(failure),
    };
    claims::end(&mut *pool.acquire().await?, row, claim, actor, intent, outcome).await
}

async fn step(
    pool: &PgPool,
    exec: &Executor,
    aws: &AwsBudgets,
    row: &ActionRow,
    claim: i64,
    (intent, today): (Intent, chrono::NaiveDate),
) -> Result<Step, sqlx::Error> {
    if intent == Intent::Reverse {
        return Ok(reverse(aws, row).await);
    }
    let (budget, action) = match prepared(pool, exec, aws, row, claim).await? {
        Ok(Some(ids)) => ids,
        Ok(None) => return Ok(Step::Lost),
        Err(failure) if intent == Intent::Prepare => {
            return Ok(Step::Release(format!(
                "preparing the AWS budget action failed: {}",
                failure.message
            )));
        }
        Err(failure) => return Ok(failing(failure)),
    };
    if intent == Intent::Prepare {
        return Ok(Step::Release(format!(
            "AWS budget action {action} on {budget} is ready; it runs only when approved here"
        )));
    }
    let status = match aws_stop::status(aws, &budget, &action).await {
        Ok(Some(status)) => status,
        Ok(None) => {
            // Gone from AWS: forget it, so a Retry prepares a new one.
            sqlx::query(
                "update enforcement_actions set aws_budget_name = null, aws_action_id = null where id = $1 and claim = $2",
            )
            .bind(row.id)
            .bind(claim)
            .execute(pool)
            .await?;
            return Ok(Step::End(failed(AwsFailure::new(format!(
                "AWS has no budget action {action} on {budget} (deleted outside burnrate?); Retry creates it again"
            )))));
        }
        Err(failure) => return Ok(failing(failure)),
    };
    let execution = match status.as_str() {
        "PENDING" => ExecutionType::ApproveBudgetAction,
        "EXECUTION_FAILURE" => ExecutionType::RetryBudgetAction,
        "EXECUTION_IN_PROGRESS" => {
            return Ok(Step::End(in_flight("executing", "started", &action, &status, None)));
        }
        "EXECUTION_SUCCESS" => {
            return Ok(Step::End(in_flight("executed", "executed", &action, &status, None)));
        }
        "STANDBY" => {
            let why = format!(
                "AWS budget action {action} on {budget} is ready, but AWS has not yet found the project over the \
                 limit (it evaluates budgets up to three times a day); try again after its next evaluation"
            );
            return Ok(match intent {
                Intent::Run { by_admin: true } => Step::End(Settled::new("failed", "failed", why)),
                _ => Step::Release(why),
            });
        }
        other => {
            return Ok(Step::End(failed(AwsFailure::new(format!(
                "AWS reports the budget action {action} as {other}"
            )))));
        }
    };
    // The last word before AWS acts: judged again under the decision lock, claim checked.
    if !super::judge::confirm(&mut *pool.acquire().await?, row.id, claim, exec.lease, today).await? {
        return Ok(Step::Lost);
    }
    Ok(
        match aws_stop::execute(aws, &budget, &action, execution.clone()).await {
            Ok(request_id) => Step::End(in_flight(
                "executing",
                "started",
                &action,
                &format!("{} accepted", execution.as_str()),
                request_id,
            )),
            Err(failure) if failure.ambiguous => {
                tracing::warn!(action = row.id, error = %failure.message, "AWS did not answer an execution; resumed from AWS's record");
                Step::Keep
            }
            Err(failure) => failing(failure),
        },
    )
}

fn in_flight(
    status: &'static str,
    event: &'static str,
    action: &str,
    what: &str,
    request_id: Option<String>,
) -> Settled<'static> {
    let message = match status {
        "executing" => {
            format!("AWS budget action {action}: {what}; AWS runs it now, and burnrate shows it done when AWS says so")
        }
        _ => format!("AWS reports the budget action {action} as {what}"),
    };
    Settled {
        request_id,
        aws_status: Some(what.to_string()),
        ..Settled::new(status, event, message)
    }
}

async fn reverse(aws: &AwsBudgets, row: &ActionRow) -> Step {
    let (Some(budget), Some(action)) = (&row.aws_budget_name, &row.aws_action_id) else {
        return Step::End(failed(AwsFailure::new(
            "no AWS budget action is recorded for this stop",
        )));
    };
    match aws_stop::status(aws, budget, action).await {
        Ok(Some(status)) if status.starts_with("REVERSE_") && status != "REVERSE_FAILURE" => {
            let to = if status == "REVERSE_SUCCESS" {
                "reversed"
            } else {
                "reversing"
            };
            return Step::End(in_flight(to, "reversal_started", action, &status, None));
        }
        Err(failure) => return failing(failure),
        _ => {}
    }
    Step::End(
        match aws_stop::execute(aws, budget, action, ExecutionType::ReverseBudgetAction).await {
            Ok(request_id) => Settled {
                request_id,
                aws_status: Some("REVERSE_BUDGET_ACTION accepted".into()),
                ..Settled::new(
                    "reversing",
                    "reversal_started",
                    format!("AWS budget action {action} on {budget}: reversal accepted; AWS undoes it now"),
                )
            },
            Err(failure) if failure.ambiguous => return Step::Keep,
            Err(failure) if failure.transient => return failing(failure),
            Err(failure) => failed(failure),
        },
    )
}

/// Where AWS says an unclaimed `executing` or `reversing` stop stands, recorded once AWS
/// has finished: SUCCESS or FAILURE with AWS's reason. Returns true when it moved on.
pub async fn track(pool: &PgPool, aws: &AwsBudgets, row: &ActionRow) -> Result<bool, sqlx::Error> {
    let (Some(budget), Some(action)) = (&row.aws_budget_name, &row.aws_action_id) else {
        return Ok(false);
    };
    let status = match aws_stop::status(aws, budget, action).await {
        Ok(status) => status,
        Err(failure) => {
            tracing::warn!(action = row.id, error = %failure.message, "polling an AWS budget action failed");
            return Ok(false);
        }
    };
    let next = match (row.status.as_str(), status.as_deref()) {
        ("executing", Some("EXECUTION_SUCCESS")) => {
            Settled::new("executed", "executed", format!("AWS ran budget action {action}"))
        }
        ("executing", Some("EXECUTION_FAILURE")) => Settled::new(
            "failed",
            "failed",
            format!(
                "AWS could not run budget action {action}: {}",
                failure_reason(aws, budget, action).await
            ),
        ),
        ("reversing", Some("REVERSE_SUCCESS")) => {
            Settled::new("reversed", "reversed", format!("AWS undid budget action {action}"))
        }
        ("reversing", Some("REVERSE_FAILURE")) => Settled::new(
            "executed",
            "failed",
            format!(
                "reversal failed: AWS could not undo budget action {action}: {}",
                failure_reason(aws, budget, action).await
            ),
        ),
        (_, None) => Settled::new(
            "failed",
            "failed",
            format!("AWS no longer has budget action {action} on {budget}"),
        ),
        ("executing", Some("EXECUTION_IN_PROGRESS")) | ("reversing", Some("REVERSE_IN_PROGRESS")) => return Ok(false),
        // AWS moved it somewhere no execution leads (reset or changed outside burnrate).
        ("executing", Some(other)) => Settled::new(
            "failed",
            "failed",
            format!("AWS reports budget action {action} as {other}, not running it"),
        ),
        ("reversing", Some(other)) => Settled::new(
            "executed",
            "failed",
            format!("reversal failed: AWS reports budget action {action} as {other}"),
        ),
        _ => return Ok(false),
    };
    let next = Settled {
        aws_status: status,
        ..next
    };
    let mut conn = pool.acquire().await?;
    claims::transition(&mut conn, row, &row.status, &next).await
}

/// AWS's reason for the last failure, from the action's history.
async fn failure_reason(aws: &AwsBudgets, budget: &str, action: &str) -> String {
    aws_stop::last_event(aws, budget, action)
        .await
        .ok()
        .flatten()
        .unwrap_or_else(|| "AWS gave no reason".into())
}

/// Ends a claim whose runner died: where AWS says the action stands decides. An action AWS
/// never ran returns to the status it was claimed from, to run again.
pub async fn resume(pool: &PgPool, exec: &Executor, row: &ActionRow, claim: i64) -> Result<(), sqlx::Error> {
    let aws_status = match (&row.aws_budget_name, &row.aws_action_id) {
        (Some(budget), Some(action)) => match exec.aws().await {
            Ok(aws) => aws_stop::status(&aws, budget, action).await.map_err(|f| f.message),
            Err(failure) => Err(failure.message),
        },
        _ => Ok(None),
    };
    let seen = match aws_status {
        Ok(seen) => seen,
        Err(why) => {
            // Unknown: keep the claim for the next pass rather than guess.
            tracing::warn!(action = row.id, error = %why, "resuming an interrupted stop: AWS did not answer");
            return Ok(());
        }
    };
    let reversing = row.claimed_from.as_deref() == Some("executed");
    let to = match seen.as_deref() {
        Some("EXECUTION_IN_PROGRESS") => Some("executing"),
        Some("EXECUTION_SUCCESS") if !reversing => Some("executed"),
        Some("EXECUTION_FAILURE") => Some("failed"),
        Some("REVERSE_IN_PROGRESS") => Some("reversing"),
        Some("REVERSE_SUCCESS") => Some("reversed"),
        _ => None,
    };
    let mut conn = pool.acquire().await?;
    let seen = seen.unwrap_or_else(|| "no action yet".into());
    let message = format!("the run was interrupted; AWS reports {seen}");
    match to {
        Some(status) => {
            let settled = Settled {
                aws_status: Some(seen.clone()),
                ..Settled::new(status, "interrupted", message)
            };
            claims::finish(&mut conn, row, claim, "system", &settled).await?;
        }
        None => {
            claims::release(&mut conn, row, claim, Some(("system", "interrupted")), &message).await?;
        }
    }
    Ok(())
}

/// Deletes the AWS budget and action of a stop that no longer needs them; records it. A
/// stop AWS reports as run (an execution whose answer was lost) is reversed first, so a
/// deletion never leaves its policy or stopped instances behind. The budget is found by its
/// fixed name when a run died before recording it.
pub async fn clean_up(pool: &PgPool, aws: &AwsBudgets, row: &ActionRow) -> Result<bool, sqlx::Error> {
    let budget = row
        .aws_budget_name
        .clone()
        .unwrap_or_else(|| format!("{}{}", aws_stop::BUDGET_PREFIX, row.id));
    if let Some(action) = &row.aws_action_id {
        match aws_stop::status(aws, &budget, action).await {
            Ok(Some(status)) if status == "EXECUTION_SUCCESS" => {
                if let Err(failure) = aws_stop::execute(aws, &budget, action, ExecutionType::ReverseBudgetAction).await
                {
                    tracing::warn!(action = row.id, error = %failure.message, "reversing before cleanup failed; retried next pass");
                }
                return Ok(false);
            }
            // Still running or reversing in AWS: delete once it has finished.
            Ok(Some(status)) if status.ends_with("_IN_PROGRESS") => return Ok(false),
            Err(failure) => {
                tracing::warn!(action = row.id, error = %failure.message, "checking a stop before cleanup failed; retried next pass");
                return Ok(false);
            }
            _ => {}
        }
    }
    if let Err(failure) = aws_stop::delete(aws, &budget, row.aws_action_id.as_deref()).await {
        tracing::warn!(action = row.id, error = %failure.message, "deleting an enforcement budget failed; retried next pass");
        return Ok(false);
    }
    let mut tx = pool.begin().await?;
    let done = sqlx::query(
        "update enforcement_actions set aws_budget_name = null, aws_action_id = null, aws_cleanup = false
         where id = $1 and aws_cleanup and status <> 'running'",
    )
    .bind(row.id)
    .execute(&mut *tx)
    .await?;
    // Audited when something was there to delete.
    if done.rows_affected() == 1 && row.aws_budget_name.is_some() {
        let entry = super::trail::Entry::new("system", "cleaned_up", row.id, &row.project, &row.action)
            .response(&format!("deleted AWS budget {budget} and its action"));
        super::trail::append(&mut tx, &entry).await?;
    }
    tx.commit().await?;
    Ok(done.rows_affected() == 1)
}
