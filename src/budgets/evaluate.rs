//! Where each budget stands, and the alerts its crossed thresholds queue.
//!
//! Actual spend is every stored day of the period (today has no figures yet; provisional
//! days count as they stand). The forecast is `costs::forecast`'s, the same as the Overview's.
//! A threshold is crossed when the compared figure is at or above its share of the amount.
//!
//! Spend for a period's last days arrives after it has ended, so evaluation keeps judging
//! the previous period too until all its days are settled (`costs::settlement`): a threshold crossed there is
//! still alerted, once, for that period (not for a budget created after it ended, and an
//! edit made since re-arms nothing there). A budget raised mid-period re-arms the thresholds
//! the new amount no longer crosses (their alerts stay in the history as `rearmed`); lowering
//! it never re-sends an alert already sent for the period.

use chrono::NaiveDate;
use rust_decimal::Decimal;
use sqlx::{PgConnection, PgPool};

use super::model::ProjectSpend;
use super::{Budget, BudgetScope, BudgetSpec, BudgetStatus, Threshold, ThresholdKind, email, store};
use crate::costs::forecast;
use crate::costs::settlement::period_is_closed;
use crate::period::{Basis, DateRange, days_before};

/// What one evaluation did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EvaluationReport {
    /// Each budget in its current period.
    pub statuses: Vec<BudgetStatus>,
    /// Budgets in their previous period, judged again because not all its days were settled.
    pub settling: Vec<BudgetStatus>,
    /// Alerts newly queued by this evaluation (already-queued ones are not counted again).
    pub queued: usize,
}

/// A budget's scope as SQL parameters: the team id and the project, either may be absent,
/// or the linked account.
#[derive(Debug, Clone, Copy, Default)]
pub struct ScopeFilter<'a> {
    pub team_id: Option<i64>,
    pub project: Option<&'a str>,
    pub account: Option<&'a crate::period::AwsAccountId>,
}

/// Where a scope's daily spend is read: a team's from its allocation (the Teams table's
/// figure: its projects, unowned spend its user tags carry and its shares of shared-cost
/// rules), the organisation's from every team's and Unassigned's, which add up to the
/// daily totals'; both from the allocation per team and day. A project's, and an account's, from
/// the daily totals (an account's: every project's in it). Either way `r` has day and the
/// metric columns with their credit and refund parts; $3 is the team id, $4 the project.
fn daily_source(scope: ScopeFilter<'_>) -> String {
    match (scope.team_id, scope.project, scope.account) {
        (_, _, Some(id)) => account_rows(id),
        (Some(_), _, None) => "(select * from team_daily_costs where team_id = $3 and $4::text is null) r".into(),
        (None, None, None) => "(select * from team_daily_costs where $3::bigint is null and $4::text is null) r".into(),
        (None, Some(_), None) => {
            "(select * from daily_project_costs where $3::bigint is null and project = $4) r".into()
        }
    }
}

/// `daily_source` with the project of each row.
fn project_source(scope: ScopeFilter<'_>) -> String {
    match (scope.team_id, scope.account) {
        (_, Some(id)) => account_rows(id),
        (Some(_), None) => {
            "(select * from allocated_project_spans where span = 'day' and team_id = $3 and $4::text is null) r".into()
        }
        (None, None) => {
            "(select * from daily_project_costs where $3::bigint is null and ($4::text is null or project = $4)) r"
                .into()
        }
    }
}

/// The daily totals in one account (its ID is 12 digits: see `AwsAccountId::sql_literal`).
fn account_rows(id: &crate::period::AwsAccountId) -> String {
    format!(
        "(select * from daily_project_costs where $3::bigint is null and $4::text is null and account_id = {}) r",
        id.sql_literal()
    )
}

/// Spend per day for a scope.
pub async fn daily_spend(
    conn: &mut PgConnection,
    scope: ScopeFilter<'_>,
    range: DateRange,
    basis: Basis,
) -> Result<Vec<(NaiveDate, Decimal)>, sqlx::Error> {
    sqlx::query_as(&format!(
        "select r.day, sum({spend})
         from {from} where r.day >= $1 and r.day < $2
         group by r.day order by r.day",
        spend = basis.spend_sql("r"),
        from = daily_source(scope)
    ))
    .bind(range.from)
    .bind(range.to)
    .bind(scope.team_id)
    .bind(scope.project)
    .fetch_all(conn)
    .await
}

/// A budget's standing, and the period's daily spend (for the burn chart).
pub struct Standing {
    pub status: BudgetStatus,
    pub daily: Vec<(NaiveDate, Decimal)>,
}

/// The scope's largest projects in `range`, for the alert email.
pub async fn top_projects(
    conn: &mut PgConnection,
    scope: ScopeFilter<'_>,
    range: DateRange,
    basis: Basis,
    limit: i64,
) -> Result<Vec<ProjectSpend>, sqlx::Error> {
    sqlx::query_as(&format!(
        "select r.project, sum({spend}) as spend
         from {from} where r.day >= $1 and r.day < $2
         group by r.project order by spend desc, r.project limit $5",
        spend = basis.spend_sql("r"),
        from = project_source(scope)
    ))
    .bind(range.from)
    .bind(range.to)
    .bind(scope.team_id)
    .bind(scope.project)
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
            ..ScopeFilter::default()
        },
        BudgetScope::Project(project) => ScopeFilter {
            project: Some(project),
            ..ScopeFilter::default()
        },
        BudgetScope::Account(id) => ScopeFilter {
            account: Some(id),
            ..ScopeFilter::default()
        },
    })
}

/// The budget's current period as of `today`, with spend, forecast and crossed thresholds,
/// plus the period's daily spend (for the burn chart).
pub async fn status(conn: &mut PgConnection, budget: &Budget, today: NaiveDate) -> Result<Standing, sqlx::Error> {
    status_in(conn, budget, budget.spec.period.containing(today), today).await
}

/// The budget's standing in `period` (its current one, or the one before while that is
/// still settling), as of `today`.
pub async fn status_in(
    conn: &mut PgConnection,
    budget: &Budget,
    period: DateRange,
    today: NaiveDate,
) -> Result<Standing, sqlx::Error> {
    let spec = &budget.spec;
    let with_figures = period.cut_at(today);
    let filter = scope_filter(conn, &spec.scope).await?;
    let window = forecast::settled_before(&mut *conn, with_figures.to)
        .await?
        .run_rate_window();
    let fetched = DateRange {
        from: window.map_or(period.from, |w| w.from.min(period.from)),
        to: window.map_or(with_figures.to, |w| w.to.max(with_figures.to)),
    };
    let daily = daily_spend(conn, filter, fetched, spec.basis()).await?;
    let rate = window.map(|w| forecast::run_rate(w, &daily));
    let in_period: Vec<(NaiveDate, Decimal)> = daily
        .into_iter()
        .filter(|(d, _)| *d >= period.from && *d < with_figures.to)
        .collect();
    let spend: Decimal = in_period.iter().map(|(_, v)| *v).sum();
    let forecast = forecast::forecast(period, &in_period, rate.as_ref()).map_or(spend, |f| f.expected);
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
    Ok(Standing {
        status: BudgetStatus {
            budget: budget.clone(),
            period,
            spend,
            forecast,
            crossed,
        },
        daily: in_period,
    })
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
            let status = status(&mut conn, &budget, today).await?.status;
            uses.push(super::BudgetUse::from(&status));
        }
    }
    Ok(uses)
}

/// Evaluates every budget as of `today` and queues one alert per newly crossed threshold,
/// in its current period and in the previous one while that is still settling. Safe to run
/// repeatedly and concurrently: the outbox's unique key admits each alert once.
pub async fn evaluate(
    pool: &PgPool,
    today: NaiveDate,
    public_url: Option<&str>,
) -> Result<EvaluationReport, sqlx::Error> {
    let mut conn = pool.acquire().await?;
    let budgets = store::list(&mut conn).await?;
    let mut report = EvaluationReport::default();
    // Whether each kind of period's previous one is still settling: the same for every
    // budget of that kind, so asked once.
    let mut settling: std::collections::BTreeMap<crate::period::BudgetPeriod, bool> = Default::default();
    for budget in budgets {
        let current = budget.spec.period.containing(today);
        let previous = budget.spec.period.containing(days_before(current.from, 1));
        let previous_settling = match settling.get(&budget.spec.period) {
            Some(known) => *known,
            None => {
                let unsettled = !period_is_closed(&mut conn, previous).await?;
                settling.insert(budget.spec.period, unsettled);
                unsettled
            }
        };
        if previous_settling && existed_before(&mut conn, budget.id, previous.to).await? {
            let status = status_in(&mut conn, &budget, previous, today).await?.status;
            // A closed period only gains alerts for figures that arrive late; an edit made
            // since it closed re-arms nothing there.
            report.queued += judge(&mut conn, &status, public_url, false).await?;
            report.settling.push(status);
        }
        let status = status_in(&mut conn, &budget, current, today).await?.status;
        report.queued += judge(&mut conn, &status, public_url, true).await?;
        report.statuses.push(status);
    }
    Ok(report)
}

/// Queues an alert for each crossed threshold not yet alerted, and (with `rearm`) re-arms
/// the thresholds a raised amount no longer crosses. Returns how many alerts it queued.
async fn judge(
    conn: &mut PgConnection,
    status: &BudgetStatus,
    public_url: Option<&str>,
    rearm_uncrossed: bool,
) -> Result<usize, sqlx::Error> {
    let mut queued = 0;
    for threshold in &status.budget.spec.thresholds {
        if status.crossed.contains(threshold) {
            if queue(conn, status, *threshold, public_url).await? {
                queued += 1;
            }
        } else if rearm_uncrossed {
            rearm(conn, status, *threshold).await?;
        }
    }
    Ok(queued)
}

/// True when the budget was created before `end`: a budget made after a period closed
/// sends nothing for that period.
async fn existed_before(conn: &mut PgConnection, budget_id: i64, end: NaiveDate) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar("select created_at < $2::timestamp at time zone 'UTC' from budgets where id = $1")
        .bind(budget_id)
        .bind(end)
        .fetch_one(conn)
        .await
}

/// An alert sent (or queued) when the budget's amount was lower than it is now is for a
/// crossing that no longer holds: it stays in the history as `rearmed`, and crossing the
/// raised amount queues a new one.
async fn rearm(conn: &mut PgConnection, status: &BudgetStatus, threshold: Threshold) -> Result<(), sqlx::Error> {
    // Deliveries not yet made are cancelled: the crossing they announce no longer holds.
    sqlx::query(
        "with rearmed as (
             update budget_alerts set status = 'rearmed', next_attempt_at = now()
             where budget_id = $1 and period_start = $2 and percent = $3 and kind = $4
               and status <> 'rearmed' and amount < $5
             returning id
         )
         update alert_deliveries set status = 'cancelled', lease_until = null
         where alert_id in (select id from rearmed) and status = 'queued'",
    )
    .bind(status.budget.id)
    .bind(status.period.from)
    .bind(threshold.percent)
    .bind(threshold.kind.key())
    .bind(status.budget.spec.amount)
    .execute(conn)
    .await?;
    Ok(())
}

/// Queues the alert unless it was already alerted for this period: a live alert, or a
/// re-armed one sent at an amount at least as high (lowering a budget never re-sends).
/// True when this call queued it.
async fn queue(
    conn: &mut PgConnection,
    status: &BudgetStatus,
    threshold: Threshold,
    public_url: Option<&str>,
) -> Result<bool, sqlx::Error> {
    let budget = &status.budget;
    let exists: bool = sqlx::query_scalar(
        "select exists (select 1 from budget_alerts
         where budget_id = $1 and period_start = $2 and percent = $3 and kind = $4
           and (status <> 'rearmed' or amount >= $5))",
    )
    .bind(budget.id)
    .bind(status.period.from)
    .bind(threshold.percent)
    .bind(threshold.kind.key())
    .bind(budget.spec.amount)
    .fetch_one(&mut *conn)
    .await?;
    if exists {
        return Ok(false);
    }
    let filter = scope_filter(conn, &budget.spec.scope).await?;
    let top = top_projects(conn, filter, status.period, budget.spec.basis(), 3).await?;
    let every = for_threshold(recipients(conn, budget).await?, &budget.spec, threshold);
    let recipients = crate::auth::accounts::without_disabled(conn, every).await?;
    let message = email::compose(status, threshold, &top, public_url);
    // The alert and its deliveries commit together. A concurrent evaluator may have queued
    // it since the check: the unique index decides. With no one to tell, the alert is failed
    // at once and says why.
    let mut tx = sqlx::Acquire::begin(&mut *conn).await?;
    let alert: Option<i64> = sqlx::query_scalar(
        "insert into budget_alerts
             (budget_id, period_start, percent, kind, spend, forecast, amount, recipients, subject, body_text, body_html,
              status, last_reply)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11,
                 case when cardinality($8::text[]) = 0 then 'failed' else 'queued' end,
                 case when cardinality($8::text[]) = 0
                      then 'no recipients: the scope has no team owners and the budget lists no extra addresses' end)
         on conflict (budget_id, period_start, percent, kind) where status <> 'rearmed' do nothing
         returning id",
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
    .fetch_optional(&mut *tx)
    .await?;
    let Some(alert_id) = alert else {
        return Ok(false);
    };
    sqlx::query(
        "insert into alert_deliveries (alert_id, recipient) select $1, unnest($2::text[]) on conflict do nothing",
    )
    .bind(alert_id)
    .bind(&recipients)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(true)
}

/// Who hears of `threshold`: everyone told of every threshold, plus the threshold's own
/// step on the escalation ladder.
pub fn for_threshold(mut every: Vec<String>, spec: &BudgetSpec, threshold: Threshold) -> Vec<String> {
    every.extend(spec.escalation_for(threshold).iter().cloned());
    every.sort();
    every.dedup();
    every
}

/// The scope's team owners (for the org: the admins; for an account: the admins and the
/// owners of the team it is mapped to) plus the budget's extra addresses: who hears of
/// every threshold. Disabled accounts hear of none.
pub async fn recipients(conn: &mut PgConnection, budget: &Budget) -> Result<Vec<String>, sqlx::Error> {
    let owners: Vec<String> = match &budget.spec.scope {
        BudgetScope::Org => {
            sqlx::query_scalar("select email from accounts where role = 'admin'")
                .fetch_all(&mut *conn)
                .await?
        }
        BudgetScope::Account(id) => {
            sqlx::query_scalar(
                "select email from accounts where role = 'admin'
                 union select o.email from team_owners o join team_accounts a on a.team_id = o.team_id
                 where a.account_id = $1",
            )
            .bind(id.as_str())
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
    crate::auth::accounts::without_disabled(conn, all).await
}
