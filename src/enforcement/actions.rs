//! Running enforcement actions: approve, retry, reverse, and the automatic mode.
//!
//! Each call locks the action's row for its whole duration (the email or AWS call
//! included), so two admins clicking at once, or an admin and the scheduler, run it once.
//! A row moves only from the state the call expects, and every step is appended to the
//! audit log in the same transaction as the state it produced: nothing half-done is shown
//! as done.

use std::sync::Arc;

use aws_sdk_budgets::types::ExecutionType;
use chrono::NaiveDate;
use rust_decimal::Decimal;
use sqlx::{Acquire, PgConnection, PgPool};

use super::audit::{self, Entry};
use super::aws_stop::{self, AwsFailure, StopTarget};
use super::policy;
use crate::budgets::BudgetPeriod;
use crate::budgets::aws_sync::AwsBudgets;
use crate::budgets::email::{escape, facts_message, one_line};
use crate::format::{tag_label, usd};
use crate::mail::{Email, Mailer};

/// What actions need from the outside world.
#[derive(Clone, Default)]
pub struct Executor {
    pub mailer: Option<Mailer>,
    /// `None`: resolved from the standard AWS chain when a stop needs it.
    pub aws: Option<Arc<AwsBudgets>>,
    pub tag_key: String,
    pub public_url: Option<String>,
}

impl Executor {
    /// SMTP and tag settings from the configuration; AWS from the standard chain.
    pub fn from_config(config: &crate::config::Config, alerts: &crate::budgets::outbox::AlertSender) -> Executor {
        Executor {
            mailer: alerts.mailer(),
            aws: None,
            tag_key: config.ingest.tag_project.clone(),
            public_url: config.public_url.as_ref().map(|u| u.origin.clone()),
        }
    }

    async fn aws(&self) -> Result<Arc<AwsBudgets>, AwsFailure> {
        match &self.aws {
            Some(aws) => Ok(aws.clone()),
            None => AwsBudgets::from_environment()
                .await
                .map(Arc::new)
                .map_err(|e| AwsFailure::new(e.to_string())),
        }
    }
}

/// Why a requested step was refused before anything ran.
#[derive(Debug, thiserror::Error)]
pub enum ActionError {
    #[error("no enforcement action {0}")]
    NotFound(i64),
    #[error("{0}")]
    Refused(String),
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

#[derive(sqlx::FromRow)]
struct ActionRow {
    id: i64,
    action: String,
    mode: String,
    status: String,
    aws_budget_name: Option<String>,
    aws_action_id: Option<String>,
    project: String,
    team: Option<String>,
    team_id: Option<i64>,
    period_start: NaiveDate,
    spend: Decimal,
    spend_limit: Decimal,
    reason: String,
}

async fn lock(conn: &mut PgConnection, id: i64) -> Result<ActionRow, ActionError> {
    sqlx::query_as(
        "select a.id, a.action, a.mode, a.status, a.aws_budget_name, a.aws_action_id, v.project, t.name as team,
                t.id as team_id, v.period_start, v.spend, v.spend_limit, v.reason
         from enforcement_actions a join violations v on v.id = a.violation_id
         left join projects p on p.name = v.project left join teams t on t.id = p.team_id
         where a.id = $1 for update of a",
    )
    .bind(id)
    .fetch_optional(conn)
    .await?
    .ok_or(ActionError::NotFound(id))
}

/// How one attempt ended.
enum Outcome {
    Done {
        message: String,
        request_id: Option<String>,
    },
    Failed(AwsFailure),
    /// Nothing went wrong, but AWS is not ready to run it yet.
    Waiting(String),
}

/// The team's owners and every admin: who hears of a violation and subscribes to its stop.
async fn recipients(conn: &mut PgConnection, team_id: Option<i64>) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar(
        "select email from team_owners where team_id = $1
         union select email from accounts where role = 'admin' order by 1",
    )
    .bind(team_id)
    .fetch_all(conn)
    .await
}

fn notice(row: &ActionRow, public_url: Option<&str>) -> (String, String, String) {
    let project = tag_label(&row.project);
    let subject = format!(
        "[burnrate] {} is over its spend limit ({})",
        one_line(project),
        row.reason.replace('_', " ")
    );
    let facts = [
        ("Project", project.to_string()),
        (
            "Team",
            row.team.clone().unwrap_or_else(|| crate::costs::UNASSIGNED_TEAM.into()),
        ),
        ("Period from", row.period_start.to_string()),
        ("Spend", usd(row.spend)),
        ("Policy limit", usd(row.spend_limit)),
        ("Reason", row.reason.replace('_', " ")),
    ];
    let link = public_url.map(|u| format!("{}/enforcement", u.trim_end_matches('/')));
    let (mut text, mut html) = facts_message(&subject, &facts);
    text.push_str("\nApprove the project (with a cap and an expiry) or bring its spend down.\n");
    if let Some(link) = link {
        text.push_str(&format!("Enforcement: {link}\n"));
        html.push_str(&format!("<p><a href=\"{0}\">{0}</a></p>", escape(&link)));
    }
    html.push_str("</body></html>");
    (subject, text, html)
}

/// Creates the AWS budget action for a stop that has none yet; stores its ids.
async fn ensure_prepared(
    conn: &mut PgConnection,
    executor: &Executor,
    row: &mut ActionRow,
) -> Result<Result<(Arc<AwsBudgets>, String, String, Option<String>), AwsFailure>, sqlx::Error> {
    let aws = match executor.aws().await {
        Ok(aws) => aws,
        Err(failure) => return Ok(Err(failure)),
    };
    if let (Some(budget), Some(action)) = (&row.aws_budget_name, &row.aws_action_id) {
        return Ok(Ok((aws, budget.clone(), action.clone(), None)));
    }
    let policy = policy::for_team(conn, row.team.as_deref()).await?;
    let Some((stop, period)) = policy.and_then(|p| Some((p.stop?, BudgetPeriod::parse(&p.period)?))) else {
        return Ok(Err(AwsFailure::new(
            "the policy has no stop configuration (type, execution role and targets)",
        )));
    };
    let subscribers = recipients(conn, row.team_id).await?;
    let target = StopTarget {
        action_id: row.id,
        project: &row.project,
        tag_key: &executor.tag_key,
        limit: row.spend_limit,
        period,
        subscribers: &subscribers,
    };
    match aws_stop::prepare(&aws, &target, &stop).await {
        Ok((budget, action, request_id)) => {
            sqlx::query("update enforcement_actions set aws_budget_name = $2, aws_action_id = $3 where id = $1")
                .bind(row.id)
                .bind(&budget)
                .bind(&action)
                .execute(&mut *conn)
                .await?;
            row.aws_budget_name = Some(budget.clone());
            row.aws_action_id = Some(action.clone());
            Ok(Ok((aws, budget, action, request_id)))
        }
        Err(failure) => Ok(Err(failure)),
    }
}

async fn perform(conn: &mut PgConnection, executor: &Executor, row: &mut ActionRow) -> Result<Outcome, sqlx::Error> {
    match row.action.as_str() {
        "flag" => Ok(Outcome::Done {
            message: "flagged on the project's and team's pages and on the Overview".into(),
            request_id: None,
        }),
        "notify" => {
            let to = recipients(conn, row.team_id).await?;
            let Some(mailer) = &executor.mailer else {
                return Ok(Outcome::Failed(AwsFailure::new(
                    "SMTP_URL is not set, so no email can be sent",
                )));
            };
            let (subject, text, html) = notice(row, executor.public_url.as_deref());
            let email = Email {
                message_id: format!("<burnrate-enforcement-{}@burnrate>", row.id),
                to: &to,
                subject: &subject,
                text: &text,
                html: &html,
            };
            Ok(match mailer.send(&email).await {
                Ok(reply) => Outcome::Done {
                    message: format!("emailed {}: {reply}", to.join(", ")),
                    request_id: None,
                },
                Err(failure) => Outcome::Failed(AwsFailure::new(format!("SMTP: {}", failure.message))),
            })
        }
        _ => {
            let (aws, budget, action, prepared) = match ensure_prepared(conn, executor, row).await? {
                Ok(ready) => ready,
                Err(failure) => return Ok(Outcome::Failed(failure)),
            };
            let status = match aws_stop::status(&aws, &budget, &action).await {
                Ok(status) => status,
                Err(failure) => return Ok(Outcome::Failed(failure)),
            };
            Ok(match status.as_str() {
                "PENDING" => {
                    match aws_stop::execute(&aws, &budget, &action, ExecutionType::ApproveBudgetAction).await {
                        Ok(request_id) => Outcome::Done {
                            message: format!("AWS budget action {action} on {budget} approved and run"),
                            request_id,
                        },
                        Err(failure) => Outcome::Failed(failure),
                    }
                }
                "EXECUTION_SUCCESS" | "EXECUTION_IN_PROGRESS" => Outcome::Done {
                    message: format!("AWS reports the budget action {action} as {status}"),
                    request_id: prepared,
                },
                "STANDBY" => Outcome::Waiting(format!(
                    "AWS budget action {action} on {budget} is ready, but AWS has not yet found the project over the \
                     limit (it evaluates budgets up to three times a day); try again after its next evaluation"
                )),
                other => Outcome::Failed(AwsFailure {
                    message: format!("AWS reports the budget action {action} as {other}"),
                    request_id: prepared,
                }),
            })
        }
    }
}

/// Writes the outcome: `executed` or `failed` with its audit entry; `Waiting` keeps the
/// status (automatic mode tries again next evaluation) unless `waiting_fails`.
async fn settle(
    conn: &mut PgConnection,
    row: &ActionRow,
    actor: &str,
    outcome: Outcome,
    waiting_fails: bool,
) -> Result<String, sqlx::Error> {
    let (status, event, message, request_id) = match outcome {
        Outcome::Done { message, request_id } => ("executed", "executed", message, request_id),
        Outcome::Failed(failure) => ("failed", "failed", failure.message, failure.request_id),
        Outcome::Waiting(message) if waiting_fails => ("failed", "failed", message, None),
        Outcome::Waiting(message) => {
            sqlx::query("update enforcement_actions set last_message = $2, updated_at = now() where id = $1")
                .bind(row.id)
                .bind(&message)
                .execute(&mut *conn)
                .await?;
            return Ok(row.status.clone());
        }
    };
    write(conn, row, actor, (status, event), &message, request_id).await?;
    Ok(status.to_string())
}

/// Sets the action's status and last message and appends `event` to the audit log.
async fn write(
    conn: &mut PgConnection,
    row: &ActionRow,
    actor: &str,
    (status, event): (&str, &str),
    message: &str,
    request_id: Option<String>,
) -> Result<(), sqlx::Error> {
    sqlx::query("update enforcement_actions set status = $2, last_message = $3, updated_at = now() where id = $1")
        .bind(row.id)
        .bind(status)
        .bind(message)
        .execute(&mut *conn)
        .await?;
    let entry = Entry::new(actor, event, row.id, &row.project, &row.action)
        .response(message)
        .request_id(request_id);
    audit::append(conn, &entry).await
}

/// Runs `id` if it is in one of `from`, logging `event` first; returns the new status.
async fn run(
    pool: &PgPool,
    executor: &Executor,
    id: i64,
    actor: &str,
    from: &[&str],
    event: &str,
) -> Result<String, ActionError> {
    let mut conn = pool.acquire().await?;
    let mut tx = conn.begin().await?;
    let mut row = lock(&mut tx, id).await?;
    if row.mode == "dry-run" {
        return Err(ActionError::Refused(
            "the policy is in dry-run mode: its actions are only recorded; switch the policy to manual to run them"
                .into(),
        ));
    }
    if !from.contains(&row.status.as_str()) {
        return Err(ActionError::Refused(format!(
            "the action is {}, so it cannot be {event}",
            row.status.replace('_', " ")
        )));
    }
    audit::append(&mut tx, &Entry::new(actor, event, row.id, &row.project, &row.action)).await?;
    let outcome = perform(&mut tx, executor, &mut row).await?;
    let status = settle(&mut tx, &row, actor, outcome, true).await?;
    tx.commit().await?;
    Ok(status)
}

/// An admin approves an action awaiting approval; it runs now.
pub async fn approve(pool: &PgPool, executor: &Executor, id: i64, actor: &str) -> Result<String, ActionError> {
    run(pool, executor, id, actor, &["awaiting_approval"], "approved").await
}

/// Runs a failed action again.
pub async fn retry(pool: &PgPool, executor: &Executor, id: i64, actor: &str) -> Result<String, ActionError> {
    run(pool, executor, id, actor, &["failed"], "retried").await
}

/// Undoes an executed flag or stop (ExecuteBudgetAction REVERSE); an email cannot be undone.
pub async fn reverse(pool: &PgPool, executor: &Executor, id: i64, actor: &str) -> Result<String, ActionError> {
    let mut conn = pool.acquire().await?;
    let mut tx = conn.begin().await?;
    let row = lock(&mut tx, id).await?;
    if row.status != "executed" {
        return Err(ActionError::Refused(format!(
            "the action is {}; only an executed action can be reversed",
            row.status.replace('_', " ")
        )));
    }
    let outcome = match row.action.as_str() {
        "notify" => return Err(ActionError::Refused("a sent email cannot be taken back".into())),
        "flag" => Ok((String::from("flag removed"), None)),
        _ => match (executor.aws().await, &row.aws_budget_name, &row.aws_action_id) {
            (Ok(aws), Some(budget), Some(action)) => {
                aws_stop::execute(&aws, budget, action, ExecutionType::ReverseBudgetAction)
                    .await
                    .map(|request_id| (format!("AWS budget action {action} on {budget} reversed"), request_id))
            }
            (Err(failure), _, _) => Err(failure),
            _ => Err(AwsFailure::new("no AWS budget action is recorded for this stop")),
        },
    };
    let (status, event, message, request_id) = match outcome {
        Ok((message, request_id)) => ("reversed", "reversed", message, request_id),
        // A failed reversal leaves the action executed: the stop is still in force.
        Err(failure) => (
            "executed",
            "failed",
            format!("reversal failed: {}", failure.message),
            failure.request_id,
        ),
    };
    write(&mut tx, &row, actor, (status, event), &message, request_id).await?;
    tx.commit().await?;
    if event == "failed" {
        return Err(ActionError::Refused(message));
    }
    Ok(status.to_string())
}

/// After each evaluation: prepare the AWS side of manual stops (so AWS evaluates them before
/// an admin approves), and run automatic actions. Returns how many actions changed status.
pub async fn after_evaluation(pool: &PgPool, executor: &Executor) -> Result<usize, sqlx::Error> {
    let ids: Vec<(i64, String)> = sqlx::query_as(
        "select id, mode from enforcement_actions
         where (mode = 'automatic' and status = 'proposed')
            or (mode = 'manual' and status = 'awaiting_approval' and action = 'stop' and aws_action_id is null)
         order by id limit 1000",
    )
    .fetch_all(pool)
    .await?;
    let mut changed = 0;
    for (id, mode) in ids {
        let mut conn = pool.acquire().await?;
        let mut tx = conn.begin().await?;
        let Ok(mut row) = lock(&mut tx, id).await else {
            continue;
        };
        if mode == "manual" {
            if let Err(failure) = ensure_prepared(&mut tx, executor, &mut row).await? {
                sqlx::query("update enforcement_actions set last_message = $2 where id = $1")
                    .bind(id)
                    .bind(format!("preparing the AWS budget action failed: {}", failure.message))
                    .execute(&mut *tx)
                    .await?;
            }
        } else if row.status == "proposed" {
            let outcome = perform(&mut tx, executor, &mut row).await?;
            if settle(&mut tx, &row, "system", outcome, false).await? != row.status {
                changed += 1;
            }
        }
        tx.commit().await?;
    }
    Ok(changed)
}

/// Projects with an executed, unreversed flag: the badge stays until an admin reverses it.
pub async fn flagged_projects(conn: &mut PgConnection) -> Result<Vec<String>, sqlx::Error> {
    flagged_in(conn, None, None).await
}

/// Flagged projects, narrowed to `team` (`Unassigned` for projects in no team) and/or to
/// one `project` when given.
pub async fn flagged_in(
    executor: impl sqlx::PgExecutor<'_>,
    team: Option<&str>,
    project: Option<&str>,
) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar(
        "select distinct v.project from enforcement_actions a join violations v on v.id = a.violation_id
         left join projects p on p.name = v.project left join teams t on t.id = p.team_id
         where a.action = 'flag' and a.status = 'executed'
           and ($1::text is null or coalesce(t.name, $2) = $1)
           and ($3::text is null or v.project = $3)
         order by 1",
    )
    .bind(team)
    .bind(crate::costs::UNASSIGNED_TEAM)
    .bind(project)
    .fetch_all(executor)
    .await
}
