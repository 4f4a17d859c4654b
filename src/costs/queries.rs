//! Read-side SQL for cost pages. Every query reads `daily_project_costs`, never the facts.

use chrono::NaiveDate;
use rust_decimal::Decimal;
use sqlx::PgPool;

use super::period::{DateRange, Metric, Period, days_before};
use super::{Overview, TeamSpend, UNASSIGNED_TEAM};

/// Days in the run-rate window.
pub const RUN_RATE_DAYS: i64 = 7;

pub async fn overview(
    pool: &PgPool,
    period: Period,
    metric: Metric,
    today: NaiveDate,
) -> Result<Overview, sqlx::Error> {
    let range = period.range(today);
    let amortized = metric == Metric::Amortized;

    let teams: Vec<TeamSpend> = sqlx::query_as::<_, (String, Decimal, Decimal)>(
        "select coalesce(t.name, $4) as team,
                sum(case when $3 then r.amortized else r.unblended end) as spend,
                sum(case when $3 then r.gpu_amortized else r.gpu_unblended end) as gpu_spend
         from daily_project_costs r
         left join projects p on p.name = r.project
         left join teams t on t.id = p.team_id
         where r.day >= $1 and r.day < $2
         group by 1
         order by spend desc, team",
    )
    .bind(range.from)
    .bind(range.to)
    .bind(amortized)
    .bind(UNASSIGNED_TEAM)
    .fetch_all(pool)
    .await?
    .into_iter()
    .map(|(team, spend, gpu_spend)| TeamSpend { team, spend, gpu_spend })
    .collect();

    // Today is still accruing, so the run-rate uses complete days only.
    let run_rate_end = range.to.min(today);
    let run_rate_range = DateRange {
        from: days_before(run_rate_end, RUN_RATE_DAYS as u64),
        to: run_rate_end,
    };
    let run_rate_total = total(pool, run_rate_range, amortized).await?;
    let latest_day = latest_day(pool).await?;

    Ok(Overview {
        period,
        metric,
        range,
        total: teams.iter().map(|t| t.spend).sum(),
        gpu_total: teams.iter().map(|t| t.gpu_spend).sum(),
        run_rate: run_rate_total / Decimal::from(RUN_RATE_DAYS),
        run_rate_range,
        teams,
        latest_day,
    })
}

async fn total(pool: &PgPool, range: DateRange, amortized: bool) -> Result<Decimal, sqlx::Error> {
    sqlx::query_scalar(
        "select coalesce(sum(case when $3 then amortized else unblended end), 0)
         from daily_project_costs where day >= $1 and day < $2",
    )
    .bind(range.from)
    .bind(range.to)
    .bind(amortized)
    .fetch_one(pool)
    .await
}

/// The newest day with any cost data; `None` before anything is loaded.
pub async fn latest_day(pool: &PgPool) -> Result<Option<NaiveDate>, sqlx::Error> {
    sqlx::query_scalar("select max(day) from daily_project_costs")
        .fetch_one(pool)
        .await
}
