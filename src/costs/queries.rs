//! Read-side SQL for cost pages. Every query reads `daily_project_costs`, never the facts.

use chrono::NaiveDate;
use rust_decimal::Decimal;
use sqlx::PgPool;

use super::period::{DateRange, Metric, Period, days_before};
use super::{Forecast, Overview, ProjectChange, TeamSpend, UNASSIGNED_TEAM};

/// Days in the run-rate window.
pub const RUN_RATE_DAYS: i64 = 7;

/// Joins the rollup `r` to its project's team `t`.
const TEAM_JOIN: &str = "left join projects p on p.name = r.project left join teams t on t.id = p.team_id";

/// Keeps one team's rows (unmapped spend is the Unassigned team) when parameter `n` is set.
fn team_clause(n: u8) -> String {
    format!("(${n}::text is null or coalesce(t.name, '{UNASSIGNED_TEAM}') = ${n})")
}

/// The Overview for the whole organisation, or for one team when `team` is set.
pub async fn overview(
    pool: &PgPool,
    period: Period,
    metric: Metric,
    today: NaiveDate,
    team: Option<&str>,
) -> Result<Overview, sqlx::Error> {
    let range = period.range(today);
    let amortized = metric == Metric::Amortized;

    let teams: Vec<TeamSpend> = sqlx::query_as::<_, (String, Decimal, Decimal)>(&format!(
        "select coalesce(t.name, $4) as team,
                sum(case when $3 then r.amortized else r.unblended end) as spend,
                sum(case when $3 then r.gpu_amortized else r.gpu_unblended end) as gpu_spend
         from daily_project_costs r {TEAM_JOIN}
         where r.day >= $1 and r.day < $2 and {}
         group by 1
         order by spend desc, team",
        team_clause(5)
    ))
    .bind(range.from)
    .bind(range.to)
    .bind(amortized)
    .bind(UNASSIGNED_TEAM)
    .bind(team)
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
    let run_rate_total = total(pool, run_rate_range, amortized, team).await?;
    let latest_day = latest_day(pool).await?;
    let daily = daily_totals(pool, range, amortized, team).await?;
    let run_rate = run_rate_total / Decimal::from(RUN_RATE_DAYS);
    let forecast = match period {
        Period::MonthToDate => {
            let window = daily_totals(pool, run_rate_range, amortized, team).await?;
            Some(forecast(&daily, &window, range, run_rate, today))
        }
        _ => None,
    };
    let (top_projects, movers) = project_changes(pool, range, amortized, team).await?;
    // The org's budgets, or the chosen team's.
    let budgets = crate::budgets::evaluate::uses(pool, today, |scope| match (scope, team) {
        (crate::budgets::BudgetScope::Org, None) => true,
        (crate::budgets::BudgetScope::Team(name), Some(team)) => name == team,
        _ => false,
    })
    .await?;
    let flagged = crate::enforcement::actions::flagged_in(pool, team, None).await?;
    let all_teams = sqlx::query_scalar("select name from teams order by name")
        .fetch_all(pool)
        .await?;
    let budget_line = budgets
        .iter()
        .find(|b| b.period == crate::budgets::BudgetPeriod::Monthly)
        .filter(|_| period == Period::MonthToDate)
        .map(|b| b.amount);
    let burn_svg = burn_chart(&daily, range, period, forecast.as_ref(), today, budget_line);

    Ok(Overview {
        team: team.map(str::to_string),
        all_teams,
        budgets,
        flagged,
        forecast,
        top_projects,
        movers,
        burn_svg: crate::codec::Svg(burn_svg),
        period,
        metric,
        range,
        total: teams.iter().map(|t| t.spend).sum(),
        gpu_total: teams.iter().map(|t| t.gpu_spend).sum(),
        run_rate,
        run_rate_range,
        teams,
        latest_day,
    })
}

async fn total(pool: &PgPool, range: DateRange, amortized: bool, team: Option<&str>) -> Result<Decimal, sqlx::Error> {
    sqlx::query_scalar(&format!(
        "select coalesce(sum(case when $3 then r.amortized else r.unblended end), 0)
         from daily_project_costs r {TEAM_JOIN} where r.day >= $1 and r.day < $2 and {}",
        team_clause(4)
    ))
    .bind(range.from)
    .bind(range.to)
    .bind(amortized)
    .bind(team)
    .fetch_one(pool)
    .await
}

/// The newest day with any cost data; `None` before anything is loaded.
pub async fn latest_day(pool: &PgPool) -> Result<Option<NaiveDate>, sqlx::Error> {
    sqlx::query_scalar("select max(day) from daily_project_costs")
        .fetch_one(pool)
        .await
}

async fn daily_totals(
    pool: &PgPool,
    range: DateRange,
    amortized: bool,
    team: Option<&str>,
) -> Result<Vec<(NaiveDate, Decimal)>, sqlx::Error> {
    sqlx::query_as(&format!(
        "select r.day, sum(case when $3 then r.amortized else r.unblended end)
         from daily_project_costs r {TEAM_JOIN} where r.day >= $1 and r.day < $2 and {}
         group by r.day order by r.day",
        team_clause(4)
    ))
    .bind(range.from)
    .bind(range.to)
    .bind(amortized)
    .bind(team)
    .fetch_all(pool)
    .await
}

/// Expected: spend so far plus the run-rate for each day from today to the month's end.
/// Range: the same with the cheapest and the dearest day of the run-rate window, so a
/// spiky week widens it.
fn forecast(
    daily: &[(NaiveDate, Decimal)],
    run_rate_window: &[(NaiveDate, Decimal)],
    range: DateRange,
    run_rate: Decimal,
    today: NaiveDate,
) -> Forecast {
    let month_end = range
        .from
        .checked_add_months(chrono::Months::new(1))
        .unwrap_or(range.to);
    let so_far: Decimal = daily.iter().filter(|(d, _)| *d < today).map(|(_, v)| *v).sum();
    let days_left = (month_end - today).num_days().max(0);
    // A day of the window without rows had no spend: it counts as zero.
    let zero_day = (run_rate_window.len() < RUN_RATE_DAYS as usize).then_some(Decimal::ZERO);
    let values = run_rate_window.iter().map(|(_, v)| *v).chain(zero_day);
    let lowest = values.clone().min().unwrap_or(run_rate);
    let highest = values.max().unwrap_or(run_rate);
    let days = Decimal::from(days_left);
    Forecast {
        last_day: month_end.pred_opt().unwrap_or(month_end),
        days_left,
        expected: so_far + run_rate * days,
        low: so_far + lowest * days,
        high: so_far + highest * days,
    }
}

async fn project_changes(
    pool: &PgPool,
    range: DateRange,
    amortized: bool,
    team: Option<&str>,
) -> Result<(Vec<ProjectChange>, Vec<ProjectChange>), sqlx::Error> {
    let before = days_before(range.from, range.days() as u64);
    let rows: Vec<(String, String, Decimal, Decimal)> = sqlx::query_as(&format!(
        "select r.project, coalesce(t.name, $5),
                coalesce(sum(case when $4 then r.amortized else r.unblended end) filter (where r.day >= $1), 0),
                coalesce(sum(case when $4 then r.amortized else r.unblended end) filter (where r.day < $1), 0)
         from daily_project_costs r {TEAM_JOIN}
         where r.day >= $3 and r.day < $2 and {}
         group by 1, 2",
        team_clause(6)
    ))
    .bind(range.from)
    .bind(range.to)
    .bind(before)
    .bind(amortized)
    .bind(UNASSIGNED_TEAM)
    .bind(team)
    .fetch_all(pool)
    .await?;
    let mut all: Vec<ProjectChange> = rows
        .into_iter()
        .map(|(project, team, spend, previous)| ProjectChange {
            project,
            team,
            spend,
            previous,
        })
        .collect();
    all.sort_by(|a, b| b.spend.cmp(&a.spend).then_with(|| a.project.cmp(&b.project)));
    let top = all.iter().take(10).cloned().collect();
    all.sort_by(|a, b| {
        (b.spend - b.previous)
            .abs()
            .cmp(&(a.spend - a.previous).abs())
            .then_with(|| a.project.cmp(&b.project))
    });
    Ok((top, all.into_iter().take(10).collect()))
}

/// With a forecast, the actual line stops before today (still accruing) and the forecast
/// carries on from there.
fn burn_chart(
    daily: &[(NaiveDate, Decimal)],
    range: DateRange,
    period: Period,
    forecast: Option<&Forecast>,
    today: NaiveDate,
    budget: Option<Decimal>,
) -> String {
    let end = forecast
        .map(|f| super::period::next_day(f.last_day))
        .unwrap_or(range.to);
    let days: Vec<NaiveDate> = range.from.iter_days().take_while(|d| *d < end).collect();
    let mut running = Decimal::ZERO;
    let actual: Vec<(NaiveDate, Decimal)> = daily
        .iter()
        .filter(|(day, _)| forecast.is_none() || *day < today)
        .map(|(day, value)| {
            running += *value;
            (*day, running)
        })
        .collect();
    let mut points = Vec::new();
    if let (Some(f), Some((last, so_far))) = (forecast, actual.last()) {
        let left = Decimal::from(f.days_left.max(1));
        let step = |total: Decimal| (total - *so_far) / left;
        let (low, mid, high) = (step(f.low), step(f.expected), step(f.high));
        for (n, day) in last.iter_days().take_while(|d| *d < end).enumerate() {
            let n = Decimal::from(n as i64);
            points.push((day, *so_far + low * n, *so_far + mid * n, *so_far + high * n));
        }
    }
    let description = match forecast {
        Some(f) => format!(
            "Cumulative spend so far and the forecast to {}: {} expected (range {} to {}).",
            f.last_day,
            crate::format::usd(f.expected),
            crate::format::usd(f.low),
            crate::format::usd(f.high)
        ),
        None => format!("Cumulative spend over the {}.", period.label().to_lowercase()),
    };
    crate::charts::burn(
        "Burn rate: cumulative spend",
        &description,
        &crate::charts::Burn {
            days: &days,
            actual: &actual,
            forecast: &points,
            budget,
            thresholds: &[],
        },
    )
}
