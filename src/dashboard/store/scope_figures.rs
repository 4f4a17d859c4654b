//! A Team or Project page's breakdowns. A team's come from the page rollups (its projects'
//! spend per day and month to date, `owned_spend_spans`), so any range reads a few rows per
//! user or project; a project's from its own rows of the facts, through their project-first indexes.
//!
//! Projects follow the credits switch (the rollup knows each project-day's credits and
//! refunds). Cost Explorer reports credits inside the user, service and usage-type groups, so
//! those breakdowns are always net (the page says so).

use std::collections::BTreeMap;

use chrono::NaiveDate;
use rust_decimal::Decimal;
use sqlx::PgPool;

use crate::allocation::reads::team_is;
use crate::dashboard::model::Line;
use crate::period::{Basis, DateRange};
use crate::spans::Cover;

/// Lines per breakdown table; totals are summed apart, so nothing is lost from them.
const LINES: usize = 100;
/// Projects drawn as their own series on a scope's chart; the rest are summed.
pub const CHART_SERIES: usize = 8;

/// What a Team or Project page shows besides its totals.
#[derive(Debug, Default)]
pub struct Figures {
    pub by_project: Vec<Line>,
    pub by_user: Vec<Line>,
    pub by_service: Vec<Line>,
    pub by_family: Vec<Line>,
    pub by_workload: Vec<Line>,
    pub gpu_hours: Decimal,
    pub spot: Decimal,
    pub instances: Decimal,
    /// Daily spend of the largest projects by name, and of the rest as one "N other
    /// projects" series; `order` lists the series, largest first.
    pub daily: Vec<(NaiveDate, String, Decimal)>,
    pub order: Vec<String>,
}

#[derive(sqlx::FromRow)]
struct Row {
    dimension: String,
    key: String,
    spend: Decimal,
    net: Decimal,
    gpu_hours: Decimal,
}

/// The breakdowns of the projects team `name` owns (Unassigned: the projects no team owns).
pub async fn team(pool: &PgPool, name: &str, range: DateRange, basis: Basis) -> Result<Figures, sqlx::Error> {
    let cover = Cover::of(&[range]);
    // A project without a declared workload is read with the one it declares now.
    let rows: Vec<Row> = sqlx::query_as(&format!(
        "select case s.dimension when 'declared' then 'workload' else s.dimension end as dimension,
                case s.dimension when 'declared' then coalesce(nullif(p.workload, 'unknown'), 'unknown')
                     else s.key end as key,
                sum(({spend}) * b.sign) as spend, sum(s.{metric} * b.sign) as net,
                sum(s.gpu_hours * b.sign) as gpu_hours
         from owned_spend_spans s {blocks}
         left join projects p on s.dimension = 'declared' and p.name = s.key
         where s.dimension = any('{{project,user,service,family,workload,declared,purchase}}') and {team}
         group by 1, 2
         having sum(({spend}) * b.sign) <> 0 or sum(s.{metric} * b.sign) <> 0
             or sum(s.gpu_hours * b.sign) <> 0",
        spend = basis.spend_sql("s"),
        metric = basis.metric.key(),
        blocks = Cover::sql("s", 2),
        team = team_is("s", 1, name),
    ))
    .bind(name)
    .bind(&cover.spans)
    .bind(&cover.days)
    .bind(&cover.parts)
    .bind(&cover.signs)
    .fetch_all(pool)
    .await?;
    let mut figures = Figures::default();
    let mut projects = Vec::new();
    for row in rows {
        match row.dimension.as_str() {
            "project" => projects.push(line(row.key, row.spend)),
            "user" => figures.by_user.push(line(row.key, row.net)),
            "service" => figures.by_service.push(line(row.key, row.net)),
            "family" => {
                figures.gpu_hours += row.gpu_hours;
                figures.by_family.push(line(row.key, row.net));
            }
            "workload" => figures.by_workload.push(line(row.key, row.net)),
            "purchase" => {
                figures.instances += row.net;
                if row.key == "spot" {
                    figures.spot += row.net;
                }
            }
            _ => {}
        }
    }
    // Every project with spend in the range, as the chart draws them.
    let project_count = projects.iter().filter(|l| !l.spend.is_zero()).count();
    figures.by_project = largest(projects);
    figures.by_user = largest(std::mem::take(&mut figures.by_user));
    figures.by_service = largest(std::mem::take(&mut figures.by_service));
    figures.by_family = largest(std::mem::take(&mut figures.by_family));
    figures.by_workload = largest(std::mem::take(&mut figures.by_workload));
    let shown: Vec<String> = figures
        .by_project
        .iter()
        .take(CHART_SERIES)
        .map(|l| l.key.clone())
        .collect();
    // Two selects, so each names its dimension and the index seeks each row (an OR of
    // the two would read every project's rows of each day).
    let day_rows = |dimension: &str, keys: &str| {
        format!(
            "select s.day, s.dimension, s.key, sum(({spend}) * b.sign)
             from owned_spend_spans s {blocks}
             where s.dimension = '{dimension}' and {keys} and {team}
             group by 1, 2, 3",
            spend = basis.spend_sql("s"),
            blocks = Cover::sql("s", 2),
            team = team_is("s", 1, name),
        )
    };
    let days = Cover::each_day(range);
    let daily: Vec<(NaiveDate, String, String, Decimal)> = sqlx::query_as(&format!(
        "{} union all {}",
        day_rows("total", "$6::text[] is not null"),
        day_rows("project", "s.key = any($6)")
    ))
    .bind(name)
    .bind(&days.spans)
    .bind(&days.days)
    .bind(&days.parts)
    .bind(&days.signs)
    .bind(&shown)
    .fetch_all(pool)
    .await?;
    let series = chart_series(&shown, project_count, daily);
    figures.daily = series.0;
    figures.order = series.1;
    Ok(figures)
}

/// The chart's series: each shown project by its label, and the day's total less theirs as
/// "N other projects" when the scope has more.
fn chart_series(
    shown: &[String],
    project_count: usize,
    rows: Vec<(NaiveDate, String, String, Decimal)>,
) -> (Vec<(NaiveDate, String, Decimal)>, Vec<String>) {
    let others = format!("{} other projects", project_count.saturating_sub(shown.len()));
    let mut merged: BTreeMap<(NaiveDate, String), Decimal> = BTreeMap::new();
    for (day, dimension, key, spend) in rows {
        if dimension == "total" {
            if project_count > shown.len() {
                *merged.entry((day, others.clone())).or_default() += spend;
            }
        } else {
            let label = crate::format::tag_label(&key).to_string();
            *merged.entry((day, label)).or_default() += spend;
            if project_count > shown.len() {
                *merged.entry((day, others.clone())).or_default() -= spend;
            }
        }
    }
    let mut order: Vec<String> = shown.iter().map(|p| crate::format::tag_label(p).to_string()).collect();
    if project_count > shown.len() {
        order.push(others);
    }
    (merged.into_iter().map(|((d, p), v)| (d, p, v)).collect(), order)
}

fn line(key: String, spend: Decimal) -> Line {
    Line { key, spend }
}

/// The non-zero lines, largest first (then by name), at most [`LINES`].
fn largest(mut lines: Vec<Line>) -> Vec<Line> {
    lines.retain(|l| !l.spend.is_zero());
    lines.sort_by(|a, b| b.spend.cmp(&a.spend).then_with(|| a.key.cmp(&b.key)));
    lines.truncate(LINES);
    lines
}

/// `sql` with a project page's binds: $1/$2 the range, $3 the project.
fn for_project<'q, O>(
    sql: &'q str,
    range: DateRange,
    project: &'q str,
) -> sqlx::query::QueryAs<'q, sqlx::Postgres, O, sqlx::postgres::PgArguments>
where
    O: for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow>,
{
    sqlx::query_as(sql).bind(range.from).bind(range.to).bind(project)
}

/// The project's spend in `range` by `key` from fact table `from` (alias `c`).
async fn project_lines(
    pool: &PgPool,
    project: &str,
    range: DateRange,
    amount: &str,
    from: &str,
    key: &str,
) -> Result<Vec<Line>, sqlx::Error> {
    let rows: Vec<(String, Decimal)> = for_project(
        &format!(
            "select {key}, sum({amount}) from {from}
             where c.project = $3 and c.day >= $1 and c.day < $2
             group by 1 having sum({amount}) <> 0 order by 2 desc, 1 limit {LINES}"
        ),
        range,
        project,
    )
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(|(key, spend)| Line { key, spend }).collect())
}

/// The breakdowns of one project, from its rows of the facts.
pub async fn project(pool: &PgPool, name: &str, range: DateRange, basis: Basis) -> Result<Figures, sqlx::Error> {
    let spend = basis.spend_sql("c");
    let net = format!("c.{}", basis.metric.key());
    let (gpu_hours, spot, instances): (Decimal, Decimal, Decimal) = for_project(
        &format!(
            "select coalesce(sum(c.usage_quantity * u.gpu_count) filter (where u.gpu_model is not null), 0),
                    coalesce(sum({net}) filter (where u.purchase_option = 'spot'), 0),
                    coalesce(sum({net}) filter (where u.purchase_option in ('spot', 'on_demand')), 0)
             from costs_by_usage_type c join usage_types u on u.usage_type = c.usage_type
             where c.project = $3 and c.day >= $1 and c.day < $2"
        ),
        range,
        name,
    )
    .fetch_one(pool)
    .await?;
    let daily: Vec<(NaiveDate, String, Decimal)> = for_project(
        &format!(
            "select c.day, c.project, sum({spend}) from daily_project_costs c
             where c.project = $3 and c.day >= $1 and c.day < $2 group by 1, 2 order by 1"
        ),
        range,
        name,
    )
    .fetch_all(pool)
    .await?;
    let label = crate::format::tag_label(name).to_string();
    Ok(Figures {
        by_project: project_lines(pool, name, range, &spend, "daily_project_costs c", "c.project").await?,
        by_user: project_lines(pool, name, range, &net, "costs_by_user c", "c.user_name").await?,
        by_service: project_lines(pool, name, range, &net, "costs_by_service c", "c.service").await?,
        by_family: project_lines(
            pool,
            name,
            range,
            &net,
            "costs_by_usage_type c join usage_types u on u.usage_type = c.usage_type and u.gpu_model is not null",
            "u.instance_family || ' (' || u.gpu_model || ')'",
        )
        .await?,
        by_workload: project_lines(
            pool,
            name,
            range,
            &net,
            "costs_by_usage_type c left join usage_types u on u.usage_type = c.usage_type
             left join projects p on p.name = c.project",
            crate::costs::export::WORKLOAD_SQL,
        )
        .await?,
        gpu_hours,
        spot,
        instances,
        order: if daily.is_empty() {
            Vec::new()
        } else {
            vec![label.clone()]
        },
        daily: daily.into_iter().map(|(d, _, v)| (d, label.clone(), v)).collect(),
    })
}
