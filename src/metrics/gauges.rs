//! The figures a scrape reads from PostgreSQL: spend and forecast per team, each budget's use,
//! projects near their policy limit, ingestion, the email outbox and enforcement actions.
//! Label values are team, budget and project names: as many series as the organisation has
//! teams and budgets, and at most [`MOST_PROJECTS`] projects.

use chrono::NaiveDate;
use rust_decimal::Decimal;
use sqlx::PgPool;

use super::text::{Exposition, decimal};
use crate::budgets::{Budget, BudgetScope, BudgetSpec, evaluate, store};
use crate::period::{BudgetPeriod, Credits, Metric};

/// Projects reported near their limit, the closest first.
pub const MOST_PROJECTS: usize = 100;
/// "Near": at or above this share of the policy limit.
const NEAR: Decimal = Decimal::from_parts(8, 0, 0, false, 1);

/// The families computed from costs, budgets and policies as of `today`: what a scrape
/// serves from the cache while the data version and the day stay the same (`super::scrape`).
pub async fn figures(pool: &PgPool, today: NaiveDate) -> Result<String, sqlx::Error> {
    let mut conn = pool.acquire().await?;
    let mut out = Exposition::default();
    teams(&mut conn, today, &mut out).await?;
    budgets(&mut conn, today, &mut out).await?;
    projects(&mut conn, today, &mut out).await?;
    Ok(out.into_text())
}

/// The families read at every scrape: ingestion runs, the outbox and enforcement actions move
/// without a data version (a few small indexed counts).
pub async fn live(pool: &PgPool, out: &mut Exposition) -> Result<(), sqlx::Error> {
    let mut conn = pool.acquire().await?;
    ingestion(&mut conn, out).await?;
    outbox_and_actions(&mut conn, out).await?;
    Ok(())
}

/// Month-to-date spend and the month's forecast per team, as a monthly team budget counts
/// them (allocated spend, unblended, net of credits), and GPU spend on the latest billed day.
async fn teams(conn: &mut sqlx::PgConnection, today: NaiveDate, out: &mut Exposition) -> Result<(), sqlx::Error> {
    let names: Vec<String> = sqlx::query_scalar("select name from teams order by name")
        .fetch_all(&mut *conn)
        .await?;
    let mut figures = Vec::with_capacity(names.len());
    for name in &names {
        // The same figures a monthly budget on the team would show.
        let month = Budget {
            id: 0,
            spec: BudgetSpec {
                key: None,
                name: name.clone(),
                scope: BudgetScope::Team(name.clone()),
                period: BudgetPeriod::Monthly,
                amount: Decimal::ONE,
                metric: Metric::Unblended,
                credits: Credits::Net,
                thresholds: Vec::new(),
                recipients: Vec::new(),
                escalation: Vec::new(),
            },
        };
        let status = evaluate::status(conn, &month, today).await?.status;
        figures.push((name, status.spend, status.forecast));
    }
    out.family(
        "burnrate_team_spend_month_to_date_usd",
        "gauge",
        "The team's allocated spend this calendar month (UTC), unblended, net of credits.",
    );
    for (team, spend, _) in &figures {
        out.sample(
            "burnrate_team_spend_month_to_date_usd",
            &[("team", team)],
            decimal(*spend),
        );
    }
    out.family(
        "burnrate_team_forecast_month_usd",
        "gauge",
        "The team's forecast spend for this calendar month, as a monthly team budget forecasts it.",
    );
    for (team, _, forecast) in &figures {
        out.sample(
            "burnrate_team_forecast_month_usd",
            &[("team", team)],
            decimal(*forecast),
        );
    }
    let latest: Option<NaiveDate> = sqlx::query_scalar("select max(day) from allocated_daily_costs")
        .fetch_one(&mut *conn)
        .await?;
    out.family(
        "burnrate_costs_latest_day_timestamp_seconds",
        "gauge",
        "Start (UTC) of the latest day with cost figures; Cost Explorer reports a day after it ends.",
    );
    if let Some(day) = latest {
        out.sample(
            "burnrate_costs_latest_day_timestamp_seconds",
            &[],
            day.and_hms_opt(0, 0, 0).map_or(0, |t| t.and_utc().timestamp()),
        );
    }
    let gpu: Vec<(String, Decimal)> = sqlx::query_as(
        "select t.name, coalesce(sum(c.gpu_unblended), 0) from teams t
         left join allocated_daily_costs c on c.team_id = t.id and c.day = $1
         group by t.name order by t.name",
    )
    .bind(latest)
    .fetch_all(&mut *conn)
    .await?;
    out.family(
        "burnrate_team_gpu_spend_latest_day_usd",
        "gauge",
        "The team's allocated GPU spend on the latest day with figures (usually yesterday), unblended.",
    );
    for (team, spend) in &gpu {
        out.sample(
            "burnrate_team_gpu_spend_latest_day_usd",
            &[("team", team)],
            decimal(*spend),
        );
    }
    Ok(())
}

/// Each budget's spend and forecast as shares of its amount in its current period.
async fn budgets(conn: &mut sqlx::PgConnection, today: NaiveDate, out: &mut Exposition) -> Result<(), sqlx::Error> {
    let mut rows = Vec::new();
    for budget in store::list(conn).await? {
        let status = evaluate::status(conn, &budget, today).await?.status;
        let share = |part: Decimal| {
            if budget.spec.amount > Decimal::ZERO {
                part / budget.spec.amount
            } else {
                Decimal::ZERO
            }
        };
        rows.push((
            budget.spec.name.clone(),
            budget.spec.scope.kind(),
            budget.spec.scope.name().to_string(),
            share(status.spend),
            share(status.forecast),
        ));
    }
    for (name, help, forecast) in [
        (
            "burnrate_budget_used_ratio",
            "Spend in the budget's current period as a share of its amount (1 is 100 %).",
            false,
        ),
        (
            "burnrate_budget_forecast_used_ratio",
            "The period's forecast as a share of the budget's amount (1 is 100 %).",
            true,
        ),
    ] {
        out.family(name, "gauge", help);
        for (budget, kind, scope, used, forecast_used) in &rows {
            let value = if forecast { *forecast_used } else { *used };
            out.sample(
                name,
                &[("budget", budget), ("scope_kind", kind), ("scope", scope)],
                decimal(value.round_dp(6)),
            );
        }
    }
    Ok(())
}

async fn projects(conn: &mut sqlx::PgConnection, today: NaiveDate, out: &mut Exposition) -> Result<(), sqlx::Error> {
    let near = crate::enforcement::near_limit::projects(conn, today, NEAR, MOST_PROJECTS).await?;
    out.family(
        "burnrate_project_policy_used_ratio",
        "gauge",
        "Spend in the current period of the project's policy as a share of its limit; only projects at 80 % or more, the closest 100.",
    );
    for row in &near {
        out.sample(
            "burnrate_project_policy_used_ratio",
            &[("project", &row.project), ("team", &row.team)],
            decimal(row.used().round_dp(6)),
        );
    }
    out.family(
        "burnrate_project_spend_usd",
        "gauge",
        "Spend in the current period of the project's policy, for the projects reported near their limit.",
    );
    for row in &near {
        out.sample(
            "burnrate_project_spend_usd",
            &[("project", &row.project), ("team", &row.team)],
            decimal(row.spend),
        );
    }
    Ok(())
}

async fn ingestion(conn: &mut sqlx::PgConnection, out: &mut Exposition) -> Result<(), sqlx::Error> {
    let last: Option<(f64, f64)> = sqlx::query_as(
        "select extract(epoch from finished_at)::float8, extract(epoch from finished_at - started_at)::float8
         from ingestion_runs where status = 'succeeded' and finished_at is not null
         order by finished_at desc limit 1",
    )
    .fetch_optional(&mut *conn)
    .await?;
    let (requests, cost): (i64, Decimal) =
        sqlx::query_as("select coalesce(sum(requests), 0)::bigint, coalesce(sum(api_cost), 0) from ingestion_runs")
            .fetch_one(&mut *conn)
            .await?;
    let failed: Option<bool> = sqlx::query_scalar(
        "select status = 'failed' from ingestion_runs where status <> 'running' order by started_at desc limit 1",
    )
    .fetch_optional(&mut *conn)
    .await?;
    out.family(
        "burnrate_ingestion_last_success_timestamp_seconds",
        "gauge",
        "When the last successful Cost Explorer ingestion finished.",
    );
    out.family(
        "burnrate_ingestion_last_success_duration_seconds",
        "gauge",
        "How long the last successful ingestion took.",
    );
    if let Some((at, took)) = last {
        out.sample("burnrate_ingestion_last_success_timestamp_seconds", &[], at);
        out.sample("burnrate_ingestion_last_success_duration_seconds", &[], took);
    }
    out.family(
        "burnrate_ingestion_last_run_failed",
        "gauge",
        "1 when the latest finished ingestion failed, 0 when it succeeded.",
    );
    if let Some(failed) = failed {
        out.sample("burnrate_ingestion_last_run_failed", &[], u8::from(failed));
    }
    out.family(
        "burnrate_cost_explorer_requests_total",
        "counter",
        "Cost Explorer API requests made by every ingestion so far.",
    );
    out.sample("burnrate_cost_explorer_requests_total", &[], requests);
    out.family(
        "burnrate_cost_explorer_requests_cost_usd_total",
        "counter",
        "What those requests cost at USD 0.01 each (AWS's Cost Explorer API price).",
    );
    out.sample("burnrate_cost_explorer_requests_cost_usd_total", &[], decimal(cost));
    Ok(())
}

async fn outbox_and_actions(conn: &mut sqlx::PgConnection, out: &mut Exposition) -> Result<(), sqlx::Error> {
    let deliveries: Vec<(String, i64)> = sqlx::query_as(
        "select s, count(d.id) from unnest(array['queued', 'sending', 'failed']) s
         left join alert_deliveries d on d.status = s group by s order by s",
    )
    .fetch_all(&mut *conn)
    .await?;
    out.family(
        "burnrate_outbox_deliveries",
        "gauge",
        "Email deliveries by state: queued (waiting or backing off), sending, failed (refused for good).",
    );
    for (status, count) in &deliveries {
        out.sample("burnrate_outbox_deliveries", &[("status", status)], count);
    }
    let actions: Vec<(String, String, i64)> =
        sqlx::query_as("select action, status, count(*) from enforcement_actions group by 1, 2 order by 1, 2")
            .fetch_all(&mut *conn)
            .await?;
    out.family(
        "burnrate_enforcement_actions",
        "gauge",
        "Enforcement actions recorded, by action (notify, flag, stop) and state.",
    );
    for (action, status, count) in &actions {
        out.sample(
            "burnrate_enforcement_actions",
            &[("action", action), ("status", status)],
            count,
        );
    }
    Ok(())
}
