//! A Team or Project page's breakdowns. A team's come from the page rollups (its projects'
//! spend per day and month to date, `owned_spend_spans`), so any range reads a few rows per
//! user or project; a project's, and a team's in one linked account, from their own rows of
//! the facts, through their project-first indexes.
//!
//! Projects follow the credits switch (the daily totals know each project-day's credits and
//! refunds). Cost Explorer reports credits inside the user, service and usage-type groups, so
//! those breakdowns are always net (the page says so).

use std::collections::BTreeMap;

use chrono::NaiveDate;
use rust_decimal::Decimal;
use sqlx::PgPool;

use crate::allocation::reads::team_is;
use crate::allocation::spans::{BindCover, Cover};
use crate::dashboard::model::Line;
use crate::period::{AwsAccountId, Basis, DateRange};

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
    .bind_cover(&cover)
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
    .bind_cover(&days)
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

/// Whose facts a page reads: one project's, or the projects a team owns now (Unassigned:
/// the projects no team owns, untagged spend included), as the page rollups group them.
#[derive(Debug, Clone, Copy)]
pub enum Projects<'a> {
    One(&'a str),
    OwnedBy(&'a str),
}

impl<'a> Projects<'a> {
    fn name(self) -> &'a str {
        match self {
            Projects::One(name) | Projects::OwnedBy(name) => name,
        }
    }

    /// SQL keeping fact table `c`'s rows of these projects, the name bound as `$3`. A team's
    /// projects are listed first, so each is read through its project-first index.
    fn sql(self) -> &'static str {
        match self {
            Projects::One(_) => "c.project = $3",
            Projects::OwnedBy(team) if team == crate::format::UNASSIGNED_TEAM => {
                "not exists (select 1 from projects o where o.name = c.project and o.team_id is not null)
                 and $3::text is not null"
            }
            Projects::OwnedBy(_) => {
                "c.project = any(array(select o.name from projects o join teams ot on ot.id = o.team_id
                                       where ot.name = $3))"
            }
        }
    }
}

/// `sql` with a page's binds: $1/$2 the range, $3 the project or team.
fn bound<'q, O>(
    sql: &'q str,
    range: DateRange,
    projects: Projects<'q>,
) -> sqlx::query::QueryAs<'q, sqlx::Postgres, O, sqlx::postgres::PgArguments>
where
    O: for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow>,
{
    sqlx::query_as(sql)
        .bind(range.from)
        .bind(range.to)
        .bind(projects.name())
}

/// Where a page's facts are: the range, the projects, and the account when narrowed.
struct Facts<'a> {
    range: DateRange,
    projects: Projects<'a>,
    /// ` and c.account_id = '…'`, or nothing.
    account: String,
}

impl Facts<'_> {
    fn filter(&self) -> String {
        format!("{} and c.day >= $1 and c.day < $2{}", self.projects.sql(), self.account)
    }

    /// The spend in the range by `key` from fact table `from` (alias `c`): the largest
    /// [`LINES`], or with `every` all non-zero lines (the chart counts the projects).
    async fn lines(
        &self,
        pool: &PgPool,
        amount: &str,
        (from, key): (&str, &str),
        every: bool,
    ) -> Result<Vec<Line>, sqlx::Error> {
        let limit = if every {
            String::new()
        } else {
            format!(" order by 2 desc, 1 limit {LINES}")
        };
        let rows: Vec<(String, Decimal)> = bound(
            &format!(
                "select {key}, sum({amount}) from {from} where {filter}
                 group by 1 having sum({amount}) <> 0{limit}",
                filter = self.filter()
            ),
            self.range,
            self.projects,
        )
        .fetch_all(pool)
        .await?;
        Ok(rows.into_iter().map(|(key, spend)| Line { key, spend }).collect())
    }
}

/// The breakdowns of one project, from its rows of the facts.
pub async fn project(pool: &PgPool, name: &str, range: DateRange, basis: Basis) -> Result<Figures, sqlx::Error> {
    from_facts(pool, Projects::One(name), range, basis, None).await
}

/// The breakdowns of `projects` from their rows of the facts, in one linked account when
/// `account` is set (the page rollups are kept for the whole organisation only).
pub async fn from_facts(
    pool: &PgPool,
    projects: Projects<'_>,
    range: DateRange,
    basis: Basis,
    account: Option<&AwsAccountId>,
) -> Result<Figures, sqlx::Error> {
    let facts = Facts {
        range,
        projects,
        account: AwsAccountId::and_in(account, "c.account_id"),
    };
    let filter = facts.filter();
    let spend = basis.spend_sql("c");
    let net = format!("c.{}", basis.metric.key());
    let (gpu_hours, spot, instances): (Decimal, Decimal, Decimal) = bound(
        &format!(
            "select coalesce(sum(c.usage_quantity * u.gpu_count) filter (where u.gpu_model is not null), 0),
                    coalesce(sum({net}) filter (where u.purchase_option = 'spot'), 0),
                    coalesce(sum({net}) filter (where u.purchase_option in ('spot', 'on_demand')), 0)
             from costs_by_usage_type c join usage_types u on u.usage_type = c.usage_type
             where {filter}"
        ),
        range,
        projects,
    )
    .fetch_one(pool)
    .await?;
    let by_project = facts
        .lines(pool, &spend, ("daily_project_costs c", "c.project"), true)
        .await?;
    // Every project with spend in the range, as the chart draws them.
    let project_count = by_project.len();
    let by_project = largest(by_project);
    let shown: Vec<String> = by_project.iter().take(CHART_SERIES).map(|l| l.key.clone()).collect();
    let daily: Vec<(NaiveDate, String, String, Decimal)> = bound(
        &format!(
            "select c.day, 'project', c.project, sum({spend}) from daily_project_costs c
             where {filter} and c.project = any($4) group by 1, 3
             union all
             select c.day, 'total', '', sum({spend}) from daily_project_costs c
             where {filter} group by 1"
        ),
        range,
        projects,
    )
    .bind(&shown)
    .fetch_all(pool)
    .await?;
    let (daily, order) = chart_series(&shown, project_count, daily);
    Ok(Figures {
        by_project,
        by_user: largest(facts.lines(pool, &net, ("costs_by_user c", "c.user_name"), false).await?),
        by_service: largest(facts.lines(pool, &net, ("costs_by_service c", "c.service"), false).await?),
        by_family: largest(
            facts
                .lines(
                    pool,
                    &net,
                    (
                        "costs_by_usage_type c join usage_types u on u.usage_type = c.usage_type and u.gpu_model is not null",
                        "u.instance_family || ' (' || u.gpu_model || ')'",
                    ),
                    false,
                )
                .await?,
        ),
        by_workload: largest(
            facts
                .lines(
                    pool,
                    &net,
                    (
                        "costs_by_usage_type c left join usage_types u on u.usage_type = c.usage_type
                         left join projects p on p.name = c.project",
                        crate::usage_type::WORKLOAD_SQL,
                    ),
                    false,
                )
                .await?,
        ),
        gpu_hours,
        spot,
        instances,
        daily,
        order,
    })
}
