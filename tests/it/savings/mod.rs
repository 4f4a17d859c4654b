//! GPU savings: every formula at its edges on real databases with exact amounts, the
//! `burnrate insights` CSV contract, the Savings page and its decisions over HTTP, the
//! weekly digest through real SMTP, and utilisation from a real Prometheus.

mod asynchronous;
mod background;
mod cloudwatch;
mod commitments;
mod csv_contract;
mod digest;
mod formulas;
mod http;
mod idle_alerts;
mod inferred;
mod ledger;
mod plan_types;
mod prometheus;
mod report;
mod seeds;
mod traffic;

use chrono::NaiveDate;
use rust_decimal::Decimal;
use sqlx::PgPool;

use burnrate::allocation::facts::replace_window;
use burnrate::costs::store::{CostBatch, CostRow};
use burnrate::period::DateRange;

/// One usage line: project, usage type, day, unblended spend, instance-hours.
#[derive(Clone)]
pub struct Line<'a>(pub &'a str, pub &'a str, pub NaiveDate, pub Decimal, pub Decimal);

pub use crate::common::bills::d;

pub fn day(n: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 10, 1).expect("date") + chrono::Days::new(u64::from(n))
}

/// Writes the lines as settled facts at every grain (one window from the first to the last
/// day), as ingestion would.
pub async fn seed(pool: &PgPool, lines: &[Line<'_>]) {
    seed_in(pool, "111122223333", lines).await;
}

/// [`seed`], the spend in `account`.
pub async fn seed_in(pool: &PgPool, account: &str, lines: &[Line<'_>]) {
    let lines: Vec<(&str, Line)> = lines.iter().map(|l| (account, l.clone())).collect();
    seed_accounts(pool, &lines).await;
}

/// [`seed`], each line's spend in its own account.
pub async fn seed_accounts(pool: &PgPool, lines: &[(&str, Line<'_>)]) {
    let from = lines.iter().map(|(_, l)| l.2).min().expect("lines");
    let to = lines.iter().map(|(_, l)| l.2).max().expect("lines") + chrono::Days::new(1);
    let mut batch = CostBatch::default();
    for (account, Line(project, usage_type, day, cost, hours)) in lines {
        let row = |dimension: &str| CostRow {
            account: account.to_string(),
            day: *day,
            project: project.to_string(),
            dimension: dimension.to_string(),
            unblended: *cost,
            amortized: *cost,
            usage_quantity: *hours,
            estimated: false,
        };
        batch.by_usage_type.push(row(usage_type));
        batch.by_user.push(row(&format!("{usage_type}-user")));
        batch.by_service.push(row(&format!("{usage_type}-service")));
    }
    let mut tx = pool.begin().await.expect("tx");
    replace_window(&mut tx, DateRange { from, to }, &batch)
        .await
        .expect("facts");
    tx.commit().await.expect("commit");
}

/// Every day of `days` starting at `first`, `cost` and `hours` each.
pub fn daily<'a>(
    project: &'a str,
    usage_type: &'a str,
    first: u32,
    days: u32,
    cost: &str,
    hours: &str,
) -> Vec<Line<'a>> {
    (first..first + days)
        .map(|n| Line(project, usage_type, day(n), d(cost), d(hours)))
        .collect()
}

pub async fn declare(pool: &PgPool, project: &str, workload: &str, model: Option<(&str, &str)>) {
    sqlx::query(
        "insert into projects (name, workload, model_params_b, model_precision) values ($1, $2, $3::numeric, $4)
         on conflict (name) do update set workload = excluded.workload, model_params_b = excluded.model_params_b,
             model_precision = excluded.model_precision",
    )
    .bind(project)
    .bind(workload)
    .bind(model.map(|m| m.0))
    .bind(model.map(|m| m.1))
    .execute(pool)
    .await
    .expect("declared");
}

pub async fn team(pool: &PgPool, name: &str, owner: &str, projects: &[&str]) {
    let id: i64 = sqlx::query_scalar("insert into teams (name) values ($1) returning id")
        .bind(name)
        .fetch_one(pool)
        .await
        .expect("team");
    sqlx::query("insert into team_owners (team_id, email) values ($1, $2)")
        .bind(id)
        .bind(owner)
        .execute(pool)
        .await
        .expect("owner");
    sqlx::query("update projects set team_id = $1 where name = any($2)")
        .bind(id)
        .bind(projects)
        .execute(pool)
        .await
        .expect("mapped");
}

pub async fn insights(pool: &PgPool, days: u32) -> burnrate::savings::insights::Insights {
    burnrate::savings::insights::compute(pool, days, Default::default(), chrono::Utc::now())
        .await
        .expect("insights")
}

/// A project's (or unmapped host's) utilisation summary, or a panic listing what there is.
pub fn utilisation_of(
    found: &burnrate::savings::insights::Insights,
    name: &str,
) -> burnrate::savings::model::Utilisation {
    found
        .utilisation
        .iter()
        .find(|u| u.project == name)
        .unwrap_or_else(|| panic!("{name}: {:?}", found.utilisation))
        .clone()
}
