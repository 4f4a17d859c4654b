//! Where each budget stands, and the alerts its crossed thresholds queue.
//!
//! Actual spend is everything in the period so far, today's partial figures included.
//! Forecast: spend before today plus the run-rate (the mean of the 7 complete days before
//! today, a day without rows counting as zero) times the days left, today included. It is
//! never below actual spend. A threshold is crossed when the compared figure is at or above
//! its share of the amount.

use chrono::NaiveDate;
use rust_decimal::Decimal;
use sqlx::{PgConnection, PgPool};

use super::{Budget, BudgetScope, BudgetStatus, Threshold, ThresholdKind, email, store};
use crate::costs::period::{DateRange, Metric, days_before};
use crate::costs::queries::RUN_RATE_DAYS;

/// What one evaluation did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EvaluationReport {
    pub statuses: Vec<BudgetStatus>,
    /// Alerts newly queued by this evaluation (already-queued ones are not counted again).
    pub queued: usize,
}

/// A budget's scope as SQL parameters: the team id and the project, either may be absent.
#[derive(Debug, Clone, Copy, Default)]
pub struct ScopeFilter<'a> {
    pub team_id: Option<i64>,
    pub project: Option<&'a str>,
}

/// Spend per day for a scope, from `daily_project_costs`.
pub async fn daily_spend(
    conn: &mut PgConnection,
    scope: ScopeFilter<'_>,
    range: DateRange,
    metric: Metric,
) -> Result<Vec<(NaiveDate, Decimal)>, sqlx::Error> {
    sqlx::query_as(
        "select r.day, sum(case when $5 then r.amortized else r.unblended end)
         from daily_project_costs r left join projects p on p.name = r.project
         where r.day >= $1 and r.day < $2
           and ($3::bigint is null or p.team_id = $3)
           and ($4::text is null or r.project = $4)
         group by r.day order by r.day",
    )
    .bind(range.from)
    .bind(range.to)
    .bind(scope.team_id)
    .bind(scope.project)
    .bind(metric == Metric::Amortized)
    .fetch_all(conn)
    .await
}

/// The scope's largest projects in `range`, for the alert email.
pub async fn top_projects(
    conn: &mut PgConnection,
    scope: ScopeFilter<'_>,
    range: DateRange,
    metric: Metric,
    limit: i64,
) -> Result<Vec<(String, Decimal)>, sqlx::Error> {
    sqlx::query_as(
        "select r.project, sum(case when $5 then r.amortized else r.unblended end) as spend
         from daily_project_costs r left join projects p on p.name = r.project
         where r.day >= $1 and r.day < $2
           and ($3::bigint is null or p.team_id = $3)
           and ($4::text is null or r.project = $4)
         group by r.project order by spend desc, r.project limit $6",
    )
    .bind(range.from)
    .bind(range.to)
    .bind(scope.team_id)
    .bind(scope.project)
    .bind(metric == Metric::Amortized)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// The scope's filter. A team that no longer exists matches nothing (id -1).
pub async fn scope_filter<'a>(conn: &mut PgConnection, scope: &'a BudgetScope) -> Result<ScopeFilter<'a>, sqlx::Error> {
    Ok(match scope {
        BudgetScope::Org => ScopeFilter::default(),
        BudgetScope::Team(_) => ScopeFilter {
            team_id: Some(store::owning_team(conn, scope).await?.unwrap_or(-1)),
            project: None,
        },
        BudgetScope::Project(project) => ScopeFilter {
            team_id: None,
            project: Some(project),
        },
    })
}

/// The budget's current period as of `today`, with spend, forecast and crossed thresholds,
/// plus the period's daily spend (for the burn chart).
pub async fn status(
    conn: &mut PgConnection,
    budget: &Budget,
    today: NaiveDate,
) -> Result<(BudgetStatus, Vec<(NaiveDate, Decimal)>), sqlx::Error> {
    let spec = &budget.spec;
    let period = spec.period.containing(today);
    let window_start = days_before(today, RUN_RATE_DAYS as u64);
    let filter = scope_filter(conn, &spec.scope).await?;
    let fetched = DateRange {
        from: period.from.min(window_start),
        to: period.to,
    };
    let daily = daily_spend(conn, filter, fetched, spec.metric).await?;
    let sum = |from: NaiveDate, to: NaiveDate| -> Decimal {
        daily
            .iter()
            .filter(|(d, _)| *d >= from && *d < to)
            .map(|(_, v)| *v)
            .sum()
    };
    let spend = sum(period.from, period.to);
    let so_far = sum(period.from, today);
    let run_rate = sum(window_start, today) / Decimal::from(RUN_RATE_DAYS);
    let days_left = Decimal::from((period.to - today).num_days().max(0));
    let forecast = (so_far + run_rate * days_left).round_dp(2).max(spend);
    let crossed = spec
        .thresholds
        .iter()
        .filter(|t| {
            let compared = match t.kind {
                ThresholdKind::Actual => spend,
                ThresholdKind::Forecasted => forecast,
            };
            compared >= t.trigger_amount(spec.amount)
        })
        .copied()
        .collect();
    let in_period = daily.into_iter().filter(|(d, _)| *d >= period.from).collect();
    Ok((
        BudgetStatus {
            budget: budget.clone(),
            period,
            spend,
            forecast,
            crossed,
        },
        in_period,
    ))
}

/// Every budget's use in its current period, for the cost pages; `keep` picks the scopes.
pub async fn uses(
    pool: &PgPool,
    today: NaiveDate,
    keep: impl Fn(&BudgetScope) -> bool,
) -> Result<Vec<super::BudgetUse>, sqlx::Error> {
    let mut conn = pool.acquire().await?;
    let mut uses = Vec::new();
    for budget in store::list(&mut conn).await? {
        if keep(&budget.spec.scope) {
            let (status, _) = status(&mut conn, &budget, today).await?;
            uses.push(super::BudgetUse::from(&status));
        }
    }
    Ok(uses)
}

/// Evaluates every budget as of `today` and queues one alert per newly crossed threshold.
/// Safe to run repeatedly and concurrently: the outbox's unique key admits each alert once.
pub async fn evaluate(
    pool: &PgPool,
    today: NaiveDate,
    public_url: Option<&str>,
) -> Result<EvaluationReport, sqlx::Error> {
    let mut conn = pool.acquire().await?;
    let budgets = store::list(&mut conn).await?;
    let mut report = EvaluationReport::default();
    for budget in budgets {
        let (status, _) = status(&mut conn, &budget, today).await?;
        for threshold in &status.crossed {
            if queue(&mut conn, &status, *threshold, public_url).await? {
                report.queued += 1;
            }
        }
        report.statuses.push(status);
    }
    Ok(report)
}

/// Queues the alert unless it exists; true when this call queued it.
async fn queue(
    conn: &mut PgConnection,
    status: &BudgetStatus,
    threshold: Threshold,
    public_url: Option<&str>,
) -> Result<bool, sqlx::Error> {
    let budget = &status.budget;
    let exists: bool = sqlx::query_scalar(
        "select exists (select 1 from budget_alerts
         where budget_id = $1 and period_start = $2 and percent = $3 and kind = $4)",
    )
    .bind(budget.id)
    .bind(status.period.from)
    .bind(threshold.percent)
    .bind(threshold.kind.key())
    .fetch_one(&mut *conn)
    .await?;
    if exists {
        return Ok(false);
    }
    let filter = scope_filter(conn, &budget.spec.scope).await?;
    let top = top_projects(conn, filter, status.period, budget.spec.metric, 3).await?;
    let recipients = recipients(conn, budget).await?;
    let message = email::compose(status, threshold, &top, public_url);
    // A concurrent evaluator may have queued it since the check: the unique key decides.
    let inserted = sqlx::query(
        "insert into budget_alerts
             (budget_id, period_start, percent, kind, spend, forecast, amount, recipients, subject, body_text, body_html)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
         on conflict (budget_id, period_start, percent, kind) do nothing",
    )
    .bind(budget.id)
    .bind(status.period.from)
    .bind(threshold.percent)
    .bind(threshold.kind.key())
    .bind(status.spend)
    .bind(status.forecast)
    .bind(budget.spec.amount)
    .bind(&recipients)
    .bind(&message.subject)
    .bind(&message.text)
    .bind(&message.html)
    .execute(conn)
    .await?;
    Ok(inserted.rows_affected() == 1)
}

/// The scope's team owners (for the org: the admins) plus the budget's extra addresses.
pub async fn recipients(conn: &mut PgConnection, budget: &Budget) -> Result<Vec<String>, sqlx::Error> {
    let owners: Vec<String> = match &budget.spec.scope {
        BudgetScope::Org => {
            sqlx::query_scalar("select email from accounts where role = 'admin'")
                .fetch_all(&mut *conn)
                .await?
        }
        scope => match store::owning_team(conn, scope).await? {
            Some(team_id) => {
                sqlx::query_scalar("select email from team_owners where team_id = $1")
                    .bind(team_id)
                    .fetch_all(&mut *conn)
                    .await?
            }
            None => Vec::new(),
        },
    };
    let mut all: Vec<String> = owners
        .into_iter()
        .chain(budget.spec.recipients.iter().cloned())
        .collect();
    all.sort();
    all.dedup();
    Ok(all)
}
