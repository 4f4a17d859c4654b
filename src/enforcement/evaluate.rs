//! Evaluation: which projects break their policy this period, recorded once each.
//!
//! Decisions on the edges:
//! - A project is over the limit only when its period spend, in the policy's metric
//!   (unblended unless it says amortized), is strictly above it; exactly at the limit is
//!   allowed. The same holds for an approval's cap.
//! - Untagged spend has no project to approve or act on, so it is never a violation; it
//!   stays visible as "(untagged)" on the cost pages.
//! - A project in no team is judged by the org default policy and listed under
//!   "Unassigned".
//! - An approval counts through its expiry date (UTC); from the next day the project is
//!   judged on the whole period's spend without it (`approval_expired`).
//! - The period is the policy's calendar period (UTC) holding today. Spend for a period's
//!   last days arrives after it ends, so the previous period is judged again until all its
//!   days are settled (`costs::settlement`); a violation found there is recorded, notified and flagged once,
//!   but never stopped: a stop now would act on a period that is over.

use std::collections::HashMap;

use chrono::NaiveDate;
use rust_decimal::Decimal;
use sqlx::{Acquire, PgPool};

use super::policy::{self, Policy};
use super::{Reason, approvals};
use crate::costs::settlement::period_is_closed;
use crate::format::csv::csv_field;
use crate::format::{UNASSIGNED_TEAM, usd};
use crate::period::BudgetPeriod;

/// The header `burnrate enforce evaluate` prints.
pub const CSV_HEADER: &str = "project,team,period_start,spend,limit,reason,action,mode,status";

/// One action recorded for a violation, as the CLI's lines show it.
#[derive(sqlx::FromRow)]
struct RecordedAction {
    action: String,
    mode: String,
    status: String,
}

/// One action of one violation, as printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViolationLine {
    pub project: String,
    pub team: String,
    pub period_start: NaiveDate,
    pub spend: Decimal,
    pub limit: Decimal,
    pub reason: Reason,
    pub action: String,
    pub mode: String,
    pub status: String,
}

impl ViolationLine {
    pub fn csv(&self) -> String {
        [
            csv_field(&self.project),
            csv_field(&self.team),
            self.period_start.to_string(),
            self.spend.to_string(),
            self.limit.to_string(),
            self.reason.key().to_string(),
            self.action.clone(),
            self.mode.clone(),
            self.status.clone(),
        ]
        .join(",")
    }
}

/// Evaluates every project as of `today`, records new violations and their actions (each
/// once, however often this runs), and returns this period's violations.
pub async fn evaluate(pool: &PgPool, today: NaiveDate) -> Result<Vec<ViolationLine>, sqlx::Error> {
    let mut conn = pool.acquire().await?;
    let mut tx = conn.begin().await?;
    // One decision at a time (see `claims`): evaluation, approvals and runs never interleave.
    super::claims::lock_decisions(&mut tx).await?;
    let policies: HashMap<Option<String>, Policy> = policy::all(&mut tx)
        .await?
        .into_iter()
        .map(|policy| (policy.team.clone(), policy))
        .collect();
    let approvals: HashMap<String, super::Approval> = approvals::current(&mut tx)
        .await?
        .into_iter()
        .map(|a| (a.project.clone(), a))
        .collect();
    let mut judged = Vec::new();
    for period in BudgetPeriod::ALL {
        let current = period.containing(today);
        let previous = period.containing(crate::period::days_before(current.from, 1));
        if !period_is_closed(&mut tx, previous).await? {
            judged.push((period, previous, previous.last_day()));
        }
        judged.push((period, current, today));
    }
    let mut lines = Vec::new();
    for (period, range, as_of) in judged {
        let settling = as_of < today;
        for spent in super::judge::project_spends(&mut tx, range).await? {
            let Some(policy) = policies.get(&spent.team).or_else(|| policies.get(&None)) else {
                continue;
            };
            let spend = spent.in_metric(policy.metric);
            let super::judge::ProjectSpend { project, team, .. } = spent;
            if policy.period != period.key() || spend <= policy.limit {
                continue;
            }
            let Some(reason) = Reason::judge(spend, approvals.get(&project), as_of) else {
                continue;
            };
            let violation: i64 = sqlx::query_scalar(
                "insert into violations (project, period_start, reason, spend, spend_limit) values ($1, $2, $3, $4, $5)
                 on conflict (project, period_start, reason)
                 do update set spend = excluded.spend, spend_limit = excluded.spend_limit, last_seen_at = now()
                 returning id",
            )
            .bind(&project)
            .bind(range.from)
            .bind(reason.key())
            .bind(spend)
            .bind(policy.limit)
            .fetch_one(&mut *tx)
            .await?;
            for action in policy.actions.iter().filter(|a| !(settling && *a == "stop")) {
                // Manual actions wait for an admin; dry-run ones are only ever proposed;
                // automatic ones are proposed here and run by `reconcile::pass`.
                let status = if policy.mode == "manual" {
                    "awaiting_approval"
                } else {
                    "proposed"
                };
                // New actions are recorded; a policy switched to another mode takes over the
                // actions that have not run yet (dry-run proposals become approvable once an
                // admin chooses manual); an action cancelled because the violation stopped
                // holding (an approval since revoked) is proposed again. Either way the row
                // comes back and is audited.
                let proposed: Option<i64> = sqlx::query_scalar(
                    "insert into enforcement_actions (violation_id, action, mode, status, stops_resources)
                     values ($1, $2, $3, $4, $5)
                     on conflict (violation_id, action) do update
                        set mode = excluded.mode, status = excluded.status, updated_at = now(),
                            stops_resources = enforcement_actions.stops_resources or excluded.stops_resources,
                            -- Out of a mode with an AWS side: that side goes (manual prepares anew).
                            aws_cleanup = enforcement_actions.aws_cleanup
                                or (enforcement_actions.action = 'stop' and enforcement_actions.mode <> excluded.mode
                                    and enforcement_actions.aws_budget_name is not null)
                        where (enforcement_actions.mode <> excluded.mode
                               and enforcement_actions.status in ('proposed', 'awaiting_approval'))
                           or enforcement_actions.status = 'cancelled'
                     returning id",
                )
                .bind(violation)
                .bind(action)
                .bind(&policy.mode)
                .bind(status)
                // A stop on the project's resources has no AWS budget to prepare or clean up.
                .bind(*action == "stop" && policy.stop.as_ref().is_some_and(|s| s.on_resources()))
                .fetch_optional(&mut *tx)
                .await?;
                if let Some(action_id) = proposed {
                    let note = format!(
                        "{} spend {} is over the {} limit {} ({}); mode {}",
                        period.noun(),
                        usd(spend),
                        period.key(),
                        usd(policy.limit),
                        reason.key(),
                        policy.mode
                    );
                    super::trail::append(
                        &mut tx,
                        &super::trail::Entry::new("system", "proposed", action_id, &project, action).response(&note),
                    )
                    .await?;
                }
            }
            let recorded: Vec<RecordedAction> = sqlx::query_as(
                "select action, mode, status from enforcement_actions where violation_id = $1 order by id",
            )
            .bind(violation)
            .fetch_all(&mut *tx)
            .await?;
            for RecordedAction { action, mode, status } in recorded {
                lines.push(ViolationLine {
                    project: project.clone(),
                    team: team.clone().unwrap_or_else(|| UNASSIGNED_TEAM.to_string()),
                    period_start: range.from,
                    spend,
                    limit: policy.limit,
                    reason,
                    action,
                    mode,
                    status,
                });
            }
        }
    }
    tx.commit().await?;
    Ok(lines)
}

/// Evaluates, then runs an enforcement pass (`reconcile::pass`: what the policies' modes
/// allow, and what AWS has finished), and returns the violations with their statuses after.
pub async fn evaluate_and_act(
    pool: &PgPool,
    today: NaiveDate,
    executor: &super::executor::Executor,
) -> Result<Vec<ViolationLine>, sqlx::Error> {
    let lines = evaluate(pool, today).await?;
    let mut changed = super::reconcile::pass(pool, executor, today).await?.changed;
    // Notify emails just queued go out now (with no transaction open), as budget alerts do.
    let queued: bool = sqlx::query_scalar(
        "select exists (select 1 from alert_deliveries where enforcement_action_id is not null and status = 'queued')",
    )
    .fetch_one(pool)
    .await?;
    if queued {
        changed += executor.alerts.deliver_due(pool).await?.sent;
    }
    if changed == 0 {
        return Ok(lines);
    }
    // Statuses changed: read them back (evaluation is idempotent).
    evaluate(pool, today).await
}
