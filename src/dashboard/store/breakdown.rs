//! Read-side SQL for the Teams, Team and Project pages. Team figures come from the
//! allocation (`allocated_daily_costs`, rewritten in the transaction of every mapping or
//! rule change); a team's breakdowns by project, user, service and GPU family cover the
//! projects it owns, and its page lists the rest of its spend by allocation step.

use chrono::NaiveDate;
use rust_decimal::Decimal;
use sqlx::PgPool;

use crate::allocation;
use crate::charts::{self, Series};
use crate::costs::queries;
use crate::dashboard::model::{Line, Scope, ScopeView, TeamLine, TeamsView};
use crate::format::UNASSIGNED_TEAM;
use crate::period::{Basis, DateRange, Period};

/// Projects drawn as their own series on a Team chart; the rest are summed.
const CHART_SERIES: usize = 8;

pub async fn teams(
    pool: &PgPool,
    period: Period,
    basis: impl Into<Basis>,
    today: NaiveDate,
) -> Result<TeamsView, sqlx::Error> {
    let basis = basis.into();
    let range = period.range(today);
    let latest_day = queries::latest_day(pool).await?;
    let queries::Compared {
        current: with_data,
        previous: before,
    } = queries::days_with_data(range, latest_day);
    let (spend, metric) = (basis.spend_sql("a"), basis.metric.key());
    // The allocation: every dollar once, so the teams and Unassigned add up to the total.
    let rows: Vec<TeamLine> = sqlx::query_as(&format!(
        "select coalesce(t.name, $4) as team,
                coalesce(sum({spend}) filter (where a.day >= $1), 0) as spend,
                coalesce(sum({spend}) filter (where a.day < $1), 0) as previous,
                coalesce(sum(a.gpu_{metric}) filter (where a.day >= $1), 0) as gpu_spend,
                coalesce(sum({spend}) filter (where a.day >= $1 and a.source = 'direct'), 0) as direct,
                coalesce(sum({spend}) filter (where a.day >= $1 and a.source = 'user'), 0) as user_tag,
                coalesce(sum({spend}) filter (where a.day >= $1 and a.source = 'shared'), 0) as shared
         from allocated_daily_costs a
         left join teams t on t.id = a.team_id
         where a.day >= $3 and a.day < $2
         group by 1
         order by spend desc, team"
    ))
    .bind(with_data.from)
    .bind(with_data.to)
    .bind(before.from)
    .bind(UNASSIGNED_TEAM)
    .fetch_all(pool)
    .await?;
    let total: Decimal = rows.iter().map(|r| r.spend).sum();
    let daily: Vec<(NaiveDate, String, Decimal)> = sqlx::query_as(&format!(
        "select a.day, coalesce(t.name, $3), sum({spend})
         from allocated_daily_costs a
         left join teams t on t.id = a.team_id
         where a.day >= $1 and a.day < $2
         group by 1, 2 order by 1, 2"
    ))
    .bind(range.from)
    .bind(range.to)
    .bind(UNASSIGNED_TEAM)
    .fetch_all(pool)
    .await?;
    let order: Vec<String> = rows.iter().map(|r| r.team.clone()).collect();
    let estimated_days = queries::estimated_days(pool, range).await?;
    let chart_svg = chart(
        &format!("Daily spend by team, {}", range.label()),
        &format!(
            "Stacked daily spend per team; the table below the chart has the same numbers.{}",
            queries::estimated_note(&estimated_days)
        ),
        range,
        &order,
        &daily,
        &estimated_days,
    );
    let budgets =
        crate::budgets::evaluate::uses(pool, today, |b| matches!(b, crate::budgets::BudgetScope::Team(_))).await?;
    Ok(TeamsView {
        budgets,
        period,
        metric: basis.metric,
        credits: basis.credits,
        range,
        previous_range: before,
        estimated_days,
        total,
        teams: rows,
        daily,
        chart_svg: crate::codec::Svg(chart_svg),
        latest_day,
    })
}

/// Stacked daily bars in `order` (largest first), every day of `range` on the axis.
fn chart(
    title: &str,
    description: &str,
    range: DateRange,
    order: &[String],
    daily: &[(NaiveDate, String, Decimal)],
    estimated: &[NaiveDate],
) -> String {
    let days: Vec<NaiveDate> = range.from.iter_days().take_while(|d| *d < range.to).collect();
    let series: Vec<Series> = order
        .iter()
        .map(|name| Series {
            name: name.clone(),
            points: daily
                .iter()
                .filter(|(_, n, _)| n == name)
                .map(|(d, _, v)| (*d, *v))
                .collect(),
        })
        .collect();
    charts::stacked_daily(title, description, &days, &series, estimated)
}

/// `sql` with the binds every scope query takes: $1/$2 the range, $3 the scope's name,
/// $4 the Unassigned team's name.
fn scoped<'q, O>(
    sql: &'q str,
    range: DateRange,
    scope: &'q Scope,
) -> sqlx::query::QueryAs<'q, sqlx::Postgres, O, sqlx::postgres::PgArguments>
where
    O: for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow>,
{
    sqlx::query_as(sql)
        .bind(range.from)
        .bind(range.to)
        .bind(scope.name())
        .bind(UNASSIGNED_TEAM)
}

/// SQL that keeps fact rows (alias `c`) of `scope`; binds the name as `$3`.
fn scope_filter(scope: &Scope) -> &'static str {
    match scope {
        // Set membership (a hashed subplan) rather than a lookup per fact row: the team's
        // projects, or for Unassigned every project not mapped to a team (untagged included).
        Scope::Team(_) => {
            "(case when $3 = $4
                  then c.project not in (select name from projects where team_id is not null)
                  else c.project in (select p.name from projects p join teams t on t.id = p.team_id where t.name = $3)
             end)"
        }
        // $4 is unused here but bound for every scope alike.
        Scope::Project(_) => "c.project = $3 and $4::text is not null",
    }
}

/// The scope's spend in `range` by `key`, largest first (at most 100 lines). `amount` is
/// the SQL of a row's spend in `from` (alias `c`).
async fn lines(
    pool: &PgPool,
    scope: &Scope,
    range: DateRange,
    amount: &str,
    from: &str,
    key: &str,
) -> Result<Vec<Line>, sqlx::Error> {
    let rows: Vec<(String, Decimal)> = scoped(
        &format!(
            "select {key}, sum({amount}) from {from}
         where c.day >= $1 and c.day < $2 and {filter}
         group by 1 having sum({amount}) <> 0 order by 2 desc, 1 limit 100",
            filter = scope_filter(scope)
        ),
        range,
        scope,
    )
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(|(key, spend)| Line { key, spend }).collect())
}

pub async fn scope(
    pool: &PgPool,
    scope: Scope,
    period: Period,
    basis: impl Into<Basis>,
    today: NaiveDate,
) -> Result<ScopeView, sqlx::Error> {
    let basis = basis.into();
    let range = period.range(today);
    let queries::Compared {
        current: with_data,
        previous: before,
    } = queries::days_with_data(range, queries::latest_day(pool).await?);
    // Projects come from the rollup, which knows each project-day's credits and refunds, so
    // they follow the credits switch. Cost Explorer reports credits inside the user, service
    // and usage-type groups, so those breakdowns are always net (the page says so).
    let spend = basis.spend_sql("c");
    let net = format!("c.{}", basis.metric.key());
    let by_project = lines(pool, &scope, range, &spend, "daily_project_costs c", "c.project").await?;
    let by_user = lines(pool, &scope, range, &net, "costs_by_user c", "c.user_name").await?;
    let by_service = lines(pool, &scope, range, &net, "costs_by_service c", "c.service").await?;
    let by_family = lines(
        pool,
        &scope,
        range,
        &net,
        "costs_by_usage_type c join usage_types u on u.usage_type = c.usage_type and u.gpu_model is not null",
        "u.instance_family || ' (' || u.gpu_model || ')'",
    )
    .await?;
    let by_workload = lines(
        pool,
        &scope,
        range,
        &net,
        "costs_by_usage_type c left join usage_types u on u.usage_type = c.usage_type
         left join projects p on p.name = c.project",
        crate::costs::export::WORKLOAD_SQL,
    )
    .await?;
    let total_sql = format!(
        "select coalesce(sum({spend}), 0) from daily_project_costs c where c.day >= $1 and c.day < $2 and {filter}",
        filter = scope_filter(&scope)
    );
    // Totals are summed in SQL: the breakdown tables list the 100 largest rows only. A
    // team's is its allocation, the figure the Teams table and its budgets use.
    let (total, previous_total, parts) = match &scope {
        Scope::Team(name) => (
            allocation::reads::team_total(pool, name, with_data, basis).await?,
            allocation::reads::team_total(pool, name, before, basis).await?,
            allocation::reads::parts(pool, name, with_data, basis).await?,
        ),
        Scope::Project(_) => {
            let (total,): (Decimal,) = scoped(&total_sql, with_data, &scope).fetch_one(pool).await?;
            let (previous,): (Decimal,) = scoped(&total_sql, before, &scope).fetch_one(pool).await?;
            (total, previous, Vec::new())
        }
    };
    let (gpu_hours, spot, instances): (Decimal, Decimal, Decimal) = scoped(
        &format!(
            "select coalesce(sum(c.usage_quantity * u.gpu_count) filter (where u.gpu_model is not null), 0),
                coalesce(sum({net}) filter (where u.purchase_option = 'spot'), 0),
                coalesce(sum({net}) filter (where u.purchase_option in ('spot', 'on_demand')), 0)
         from costs_by_usage_type c join usage_types u on u.usage_type = c.usage_type
         where c.day >= $1 and c.day < $2 and {filter}",
            filter = scope_filter(&scope)
        ),
        range,
        &scope,
    )
    .fetch_one(pool)
    .await?;
    let daily: Vec<(NaiveDate, String, Decimal)> = scoped(
        &format!(
            "select c.day, c.project, sum({spend}) from daily_project_costs c
         where c.day >= $1 and c.day < $2 and {filter} group by 1, 2 order by 1, 2",
            filter = scope_filter(&scope)
        ),
        range,
        &scope,
    )
    .fetch_all(pool)
    .await?;
    // The largest projects keep their own colour; the rest share one, so the legend stays
    // readable and the SVG small for teams with hundreds of projects.
    let shown: Vec<String> = by_project.iter().take(CHART_SERIES).map(|l| l.key.clone()).collect();
    let project_count = daily
        .iter()
        .map(|(_, p, _)| p.as_str())
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let others = format!("{} other projects", project_count.saturating_sub(CHART_SERIES));
    let label = |project: &str| {
        if shown.iter().any(|s| s == project) {
            crate::format::tag_label(project).to_string()
        } else {
            others.clone()
        }
    };
    let mut merged: std::collections::BTreeMap<(NaiveDate, String), Decimal> = Default::default();
    for (day, project, value) in daily {
        *merged.entry((day, label(&project))).or_default() += value;
    }
    let daily_labelled: Vec<_> = merged.into_iter().map(|((d, p), v)| (d, p, v)).collect();
    let mut labelled_order: Vec<String> = shown.iter().map(|p| crate::format::tag_label(p).to_string()).collect();
    if project_count > CHART_SERIES {
        labelled_order.push(others.clone());
    }
    let estimated_days = queries::estimated_days(pool, range).await?;
    let chart_svg = chart(
        &format!("Daily spend of {}, by project", scope.name()),
        &format!(
            "Stacked daily spend per project; the tables below have the exact figures.{}",
            queries::estimated_note(&estimated_days)
        ),
        range,
        &labelled_order,
        &daily_labelled,
        &estimated_days,
    );
    let budgets = crate::budgets::evaluate::uses(pool, today, |b| match (b, &scope) {
        (crate::budgets::BudgetScope::Team(t), Scope::Team(name)) => t == name,
        (crate::budgets::BudgetScope::Project(p), Scope::Project(name)) => p == name,
        _ => false,
    })
    .await?;
    let (team, project) = match &scope {
        Scope::Team(name) => (Some(name.as_str()), None),
        Scope::Project(name) => (None, Some(name.as_str())),
    };
    let flagged = crate::enforcement::flags::flagged_in(pool, team, project).await?;
    Ok(ScopeView {
        flagged,
        budgets,
        scope,
        period,
        metric: basis.metric,
        credits: basis.credits,
        range,
        previous_range: before,
        estimated_days,
        total,
        previous_total,
        gpu_hours,
        spot_spend: spot,
        instance_spend: instances,
        by_project,
        by_user,
        by_service,
        by_family,
        by_workload,
        parts,
        chart_svg: crate::codec::Svg(chart_svg),
    })
}
