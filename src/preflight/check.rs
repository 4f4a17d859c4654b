//! The verdict on work about to start: each budget that covers it, and its project's
//! enforcement policy, as of today.
//!
//! - `block`: the estimate added to a covering budget's forecast passes 100 % of its amount;
//!   or the project is over its policy limit without a current approval, or past its approved
//!   cap; or a stop is in force on it.
//! - `warn`: the estimate takes a covering budget's forecast to a lower threshold (50 or 80 %
//!   by default); or the estimate would take the project past its policy limit unapproved.
//! - `allow` otherwise.

use chrono::NaiveDate;
use rust_decimal::Decimal;
use sqlx::{PgConnection, PgPool};

use super::model::{BudgetFigures, PolicyFigures, PreflightAnswer, PreflightRequest, Verdict};
use crate::budgets::{Budget, BudgetScope, evaluate, store};
use crate::enforcement::{Reason, approvals, judge, policy};
use crate::error::AppError;
use crate::format::usd;
use crate::period::BudgetPeriod;

/// What the work is about: a project and the team it belongs to (whose policy governs it, as
/// enforcement judges it: none, the org default, for a project no team owns), and the team
/// whose budgets the work is charged to (the project's, else the one named).
struct Subject {
    project: Option<String>,
    owning_team: Option<String>,
    team: Option<(i64, String)>,
    /// The project belongs to a team outside the caller's one-team token: judged as a
    /// project with no spend yet, so the answer says nothing a new project's would not.
    foreign: bool,
}

/// Checks the request, then judges it. `only_team`: the caller's token reads one team only.
pub async fn check(
    pool: &PgPool,
    request: &PreflightRequest,
    today: NaiveDate,
    only_team: Option<i64>,
) -> Result<PreflightAnswer, AppError> {
    let mut conn = pool.acquire().await?;
    let subject = subject(&mut conn, request, only_team).await?;
    let estimate = estimate(&mut conn, request).await?;
    let mut reasons: Vec<(Verdict, String)> = Vec::new();
    let mut budgets = Vec::new();
    for budget in store::list(&mut conn).await? {
        if !covers(&mut conn, &budget, &subject, today).await? {
            continue;
        }
        // A one-team token is judged against every budget that counts the work, but it
        // reads the figures of its own team's budgets only, as `/api/v1/budgets` shows them.
        let shown = crate::budgets::access::may_read_figures(&mut conn, &budget.spec.scope, only_team).await?;
        let status = evaluate::status(&mut conn, &budget, today).await?.status;
        let spec = &budget.spec;
        let with_estimate = status.forecast + estimate;
        let lower_crossed = spec
            .thresholds
            .iter()
            .filter(|t| t.percent < Decimal::ONE_HUNDRED && with_estimate >= t.trigger_amount(spec.amount))
            .map(|t| t.percent)
            .max();
        let verdict = if with_estimate > spec.amount && !shown {
            reasons.push((Verdict::Block, hidden_reason(spec, "would pass its amount")));
            Verdict::Block
        } else if lower_crossed.is_some() && !shown {
            reasons.push((Verdict::Warn, hidden_reason(spec, "would reach a threshold")));
            Verdict::Warn
        } else if with_estimate > spec.amount {
            reasons.push((
                Verdict::Block,
                format!(
                    "budget {:?} ({}): the forecast {} plus the estimate {} is {}, past its {}",
                    spec.name,
                    spec.scope.label(),
                    usd(status.forecast),
                    usd(estimate),
                    usd(with_estimate),
                    usd(spec.amount)
                ),
            ));
            Verdict::Block
        } else if let Some(percent) = lower_crossed {
            reasons.push((
                Verdict::Warn,
                format!(
                    "budget {:?} ({}): the forecast with the estimate, {}, reaches its {}% threshold of {}",
                    spec.name,
                    spec.scope.label(),
                    usd(with_estimate),
                    percent.normalize(),
                    usd(spec.amount)
                ),
            ));
            Verdict::Warn
        } else {
            Verdict::Allow
        };
        if !shown {
            continue;
        }
        budgets.push(BudgetFigures {
            id: budget.id,
            name: spec.name.clone(),
            scope: format!("{} {}", spec.scope.kind(), spec.scope.name())
                .trim()
                .to_string(),
            period_from: status.period.from,
            period_to: status.period.to,
            amount: spec.amount,
            spend: status.spend,
            forecast: status.forecast,
            forecast_with_estimate: with_estimate,
            left_after: spec.amount - with_estimate,
            verdict,
        });
    }
    let policy = match &subject.project {
        Some(project) => policy_figures(&mut conn, project, &subject, estimate, today, &mut reasons).await?,
        None => None,
    };
    reasons.sort_by_key(|r| std::cmp::Reverse(r.0));
    let verdict = reasons.first().map_or(Verdict::Allow, |r| r.0);
    Ok(PreflightAnswer {
        verdict,
        reasons: reasons.into_iter().map(|(_, why)| why).collect(),
        estimate_usd: estimate,
        budgets,
        policy,
    })
}

/// A reason without figures or names, for a budget a one-team token may not read.
fn hidden_reason(spec: &crate::budgets::BudgetSpec, what: &str) -> String {
    format!(
        "{} budget, whose figures this token may not read, {what} with the forecast and the estimate",
        match spec.scope {
            BudgetScope::Org => "an organisation",
            BudgetScope::Account(_) => "a linked account's",
            // A project budget whose project no team of the token's owns (yet).
            BudgetScope::Project(_) | BudgetScope::Team(_) => "another team's",
        }
    )
}

/// The project's owner and the named team, checked in that order: a token limited to one
/// team learns nothing of other teams' projects or names: a project of another team is
/// answered as one with no spend yet, and a team of another as forbidden.
async fn subject(
    conn: &mut PgConnection,
    request: &PreflightRequest,
    only_team: Option<i64>,
) -> Result<Subject, AppError> {
    let project = request.project.as_deref().map(str::trim).filter(|p| !p.is_empty());
    let team = request.team.as_deref().map(str::trim).filter(|t| !t.is_empty());
    if project.is_none() && team.is_none() {
        return Err(AppError::invalid("project", "name a project, a team, or both"));
    }
    if project.is_some_and(|p| p.chars().count() > 256) {
        return Err(AppError::invalid(
            "project",
            "a project tag value is at most 256 characters",
        ));
    }
    // `None`: a project with no spend yet; `Some(None)`: one no team owns.
    let known: Option<(Option<i64>, Option<String>)> = match project {
        Some(p) => {
            sqlx::query_as(
                "select t.id, t.name from projects p left join teams t on t.id = p.team_id where p.name = $1",
            )
            .bind(p)
            .fetch_optional(&mut *conn)
            .await?
        }
        None => None,
    };
    let owning: Option<(i64, String)> = known.clone().and_then(|(id, name)| id.zip(name));
    let foreign = only_team.is_some_and(|only| known.is_some() && owning.as_ref().map(|o| o.0) != Some(only));
    let owning = owning.filter(|_| !foreign);
    let named: Option<Option<(i64, String)>> = match team {
        Some(t) => Some(
            sqlx::query_as("select id, name from teams where name = $1")
                .bind(t)
                .fetch_optional(&mut *conn)
                .await?,
        ),
        None => None,
    };
    if let Some(only) = only_team {
        let foreign_team = named.as_ref().is_some_and(|n| n.as_ref().map(|t| t.0) != Some(only));
        let no_team = owning.is_none() && named.is_none();
        if foreign_team || no_team {
            return Err(AppError::Forbidden("this token is limited to another team".into()));
        }
    }
    let named = match (named, team) {
        (Some(None), Some(t)) => return Err(AppError::invalid("team", format!("no team is named {t:?}"))),
        (named, _) => named.flatten(),
    };
    if let (Some(owning), Some(named), Some(p)) = (&owning, &named, project)
        && owning.0 != named.0
    {
        return Err(AppError::invalid(
            "team",
            format!("project {p:?} belongs to team {:?}", owning.1),
        ));
    }
    Ok(Subject {
        project: project.map(str::to_string),
        owning_team: owning.as_ref().map(|o| o.1.clone()),
        team: owning.or(named),
        foreign,
    })
}

/// The estimate in USD: given, or GPUs × hours at the on-demand price.
async fn estimate(conn: &mut PgConnection, request: &PreflightRequest) -> Result<Decimal, AppError> {
    match (&request.estimated_cost_usd, &request.gpu) {
        (Some(_), Some(_)) => Err(AppError::invalid("gpu", "give estimated_cost_usd or gpu, not both")),
        (Some(cost), None) if *cost < Decimal::ZERO || *cost > Decimal::from(1_000_000_000_000_i64) => Err(
            AppError::invalid("estimated_cost_usd", "an estimate from 0 to 1,000,000,000,000 USD"),
        ),
        (Some(cost), None) => Ok(*cost),
        (None, None) => Ok(Decimal::ZERO),
        (None, Some(gpu)) => {
            if gpu.count == 0 || gpu.count > 10_000 {
                return Err(AppError::invalid("gpu.count", "from 1 to 10,000 instances"));
            }
            if gpu.hours <= Decimal::ZERO || gpu.hours > Decimal::from(8_784) {
                return Err(AppError::invalid(
                    "gpu.hours",
                    "more than 0 and at most 8,784 hours (a year)",
                ));
            }
            // `ml.g5.xlarge` is SageMaker's price for the type, `g5.xlarge` EC2's; both us-east-1's
            // (the catalogue's region) unless `pricing:` overrides it.
            let pricing = crate::savings::pricing::load(conn).await?;
            let named = gpu.instance_type.trim();
            let (instance_type, sagemaker) = match named.strip_prefix("ml.") {
                Some(t) => (t, true),
                None => (named, false),
            };
            let hourly = pricing.hourly(instance_type, "us-east-1", sagemaker).ok_or_else(|| {
                AppError::invalid(
                    "gpu.type",
                    format!("{:?} is not an instance type in the GPU catalogue", gpu.instance_type),
                )
            })?;
            Ok(hourly * Decimal::from(gpu.count) * gpu.hours)
        }
    }
}

/// Whether `budget` counts the subject's spend: the organisation's always; a team's for its
/// team; a project's for it; an account's when the project spent in that account this period.
async fn covers(
    conn: &mut PgConnection,
    budget: &Budget,
    subject: &Subject,
    today: NaiveDate,
) -> Result<bool, sqlx::Error> {
    Ok(match &budget.spec.scope {
        BudgetScope::Org => true,
        BudgetScope::Team(name) => subject.team.as_ref().is_some_and(|(_, team)| team == name),
        BudgetScope::Project(name) => subject.project.as_deref() == Some(name.as_str()) && !subject.foreign,
        BudgetScope::Account(id) => match &subject.project {
            None => false,
            Some(_) if subject.foreign => false,
            Some(project) => {
                let period = budget.spec.period.containing(today);
                sqlx::query_scalar(
                    "select exists (select 1 from daily_project_costs
                                    where project = $1 and account_id = $2 and day >= $3 and day < $4)",
                )
                .bind(project)
                .bind(id.as_str())
                .bind(period.from)
                .bind(period.to)
                .fetch_one(conn)
                .await?
            }
        },
    })
}

async fn policy_figures(
    conn: &mut PgConnection,
    project: &str,
    subject: &Subject,
    estimate: Decimal,
    today: NaiveDate,
    reasons: &mut Vec<(Verdict, String)>,
) -> Result<Option<PolicyFigures>, AppError> {
    // A stop in force blocks whatever the policy says now (one whose reversal failed, say).
    // Another team's project, for a one-team token, reads as one with nothing recorded.
    let stop_in_force: bool = !subject.foreign
        && sqlx::query_scalar(
            "select exists (select 1 from enforcement_actions a join violations v on v.id = a.violation_id
                        where v.project = $1 and a.action = 'stop' and a.status = 'executed')",
        )
        .bind(project)
        .fetch_one(&mut *conn)
        .await?;
    if stop_in_force {
        // A relaunch guard in force says which roles cannot launch the project's GPUs.
        let guarded: Vec<String> = sqlx::query_scalar(
            "select distinct r.resource_id from enforcement_resources r
             join enforcement_actions a on a.id = r.action_id join violations v on v.id = a.violation_id
             where v.project = $1 and a.action = 'stop' and a.status = 'executed'
               and r.kind = 'iam_role' and r.status in ('stopped', 'held')
             order by 1",
        )
        .bind(project)
        .fetch_all(&mut *conn)
        .await?;
        let guard = match guarded.as_slice() {
            [] => String::new(),
            roles => format!("; its relaunch guard holds on role(s) {}", roles.join(", ")),
        };
        reasons.push((
            Verdict::Block,
            format!("a stop is in force on project {project:?}{guard}"),
        ));
    }
    // The policy of the team that owns the project, as enforcement judges it.
    let Some(policy) = policy::for_team(conn, subject.owning_team.as_deref()).await? else {
        return Ok(None);
    };
    let Some(period) = BudgetPeriod::parse(&policy.period) else {
        return Ok(None);
    };
    let range = period.containing(today);
    let (spend, approval) = if subject.foreign {
        (Decimal::ZERO, None)
    } else {
        (
            judge::project_spend(conn, project, range, policy.metric).await?,
            approvals::current_for(conn, project).await?,
        )
    };
    let mut verdict = if stop_in_force { Verdict::Block } else { Verdict::Allow };
    if spend > policy.limit
        && let Some(reason) = Reason::judge(spend, approval.as_ref(), today)
    {
        reasons.push((
            Verdict::Block,
            format!(
                "project {project:?} has spent {} this {}, over its policy limit {}: {}",
                usd(spend),
                period.key(),
                usd(policy.limit),
                reason.key().replace('_', " ")
            ),
        ));
        verdict = Verdict::Block;
    } else if spend + estimate > policy.limit && Reason::judge(spend + estimate, approval.as_ref(), today).is_some() {
        reasons.push((
            Verdict::Warn,
            format!(
                "project {project:?} would pass its policy limit {} with the estimate: {} spent plus {}",
                usd(policy.limit),
                usd(spend),
                usd(estimate)
            ),
        ));
        verdict = verdict.max(Verdict::Warn);
    }
    Ok(Some(PolicyFigures {
        team: policy.team.clone(),
        period_from: range.from,
        period_to: range.to,
        limit: policy.limit,
        spend,
        approved_cap: approval.as_ref().map(|a| a.cap),
        approval_expires: approval.as_ref().map(|a| a.expires),
        stop_in_force,
        verdict,
    }))
}
