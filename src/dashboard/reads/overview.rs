//! The Overview's SQL, on the page rollups (`allocation::rollups`): team figures per day,
//! projects per month to date; never the facts.

use chrono::NaiveDate;
use rust_decimal::Decimal;
use sqlx::PgPool;

use crate::allocation::spans::{BindCover, Cover};
use crate::costs::Forecast;
use crate::costs::forecast;
use crate::costs::queries::{Compared, days_with_data, latest_day, open_days};
use crate::dashboard::model::{Line, OverviewData, ProjectChange, TeamSpend};
use crate::dashboard::reads::aws_accounts;
use crate::format::UNASSIGNED_TEAM;
use crate::period::{AwsAccountId, Basis, Credits, DateRange, Period};

/// The allocation per team and day `r` (in one account with `?account=`) with its team `t`
/// (none for Unassigned). Its figures have the daily totals' column names, and every day's rows
/// add up to theirs.
fn allocated(account: Option<&AwsAccountId>) -> String {
    format!(
        "{} left join teams t on t.id = r.team_id",
        aws_accounts::team_days(account, "r")
    )
}

/// Keeps one team's rows (unmapped spend is the Unassigned team) when parameter `n` is set.
fn team_clause(n: u8) -> String {
    format!("(${n}::text is null or coalesce(t.name, '{UNASSIGNED_TEAM}') = ${n})")
}

/// Narrows the Overview: to one team, and to one linked account.
#[derive(Debug, Clone, Copy, Default)]
pub struct Narrowed<'a> {
    pub team: Option<&'a str>,
    pub account: Option<&'a AwsAccountId>,
}

impl<'a> From<Option<&'a str>> for Narrowed<'a> {
    fn from(team: Option<&'a str>) -> Narrowed<'a> {
        Narrowed { team, account: None }
    }
}

/// The Overview for the whole organisation, or narrowed to a team or an account.
pub async fn overview<'a>(
    pool: &PgPool,
    period: Period,
    basis: impl Into<Basis>,
    today: NaiveDate,
    narrowed: impl Into<Narrowed<'a>>,
) -> Result<OverviewData, sqlx::Error> {
    let narrowed = narrowed.into();
    let Narrowed { team, account } = narrowed;
    let basis = basis.into();
    let range = period.range(today);
    let latest_day = latest_day(pool).await?;
    let Compared {
        current: with_data,
        previous: compared_with,
    } = days_with_data(range, latest_day);
    // The projects' statement is the longest; the others, together about as long, run
    // beside it on a second connection, so a first view waits for the longer of the two
    // and takes two of the pool's connections, not one per statement.
    let (
        changes,
        (teams, (daily, rate, rate_window), open_days, budgets, flagged, all_teams, record_types, all_accounts),
    ) = tokio::try_join!(
        project_changes(pool, [with_data, compared_with], basis, narrowed),
        async {
            Ok::<_, sqlx::Error>((
                team_spend(pool, range, basis, narrowed).await?,
                daily_and_run_rate(pool, range, with_data, basis, narrowed).await?,
                open_days(pool, range).await?,
                // The org's budgets, or the chosen team's or account's.
                crate::budgets::evaluate::uses(pool, today, |scope| match (scope, team, account) {
                    (crate::budgets::BudgetScope::Org, None, None) => true,
                    (crate::budgets::BudgetScope::Team(name), Some(team), None) => name == team,
                    (crate::budgets::BudgetScope::Account(id), None, Some(account)) => id == account,
                    _ => false,
                })
                .await?,
                crate::enforcement::flags::flagged_in(pool, team, None).await?,
                sqlx::query_scalar("select name from teams order by name")
                    .fetch_all(pool)
                    .await?,
                match team {
                    Some(_) => Vec::new(),
                    None => record_types(pool, with_data, basis, account).await?,
                },
                crate::costs::aws_accounts::known(pool).await?,
            ))
        }
    )?;
    let forecast = period
        .forecast_period(today)
        .and_then(|month| forecast::forecast(month, &daily, rate.as_ref()));
    let Changes {
        top: top_projects,
        movers,
    } = changes;
    // A budget's line only against spend counted as it counts it.
    let budget_line = budgets
        .iter()
        .filter(|b| b.metric == basis.metric && b.credits == basis.credits)
        .find(|b| b.period == crate::period::BudgetPeriod::Monthly)
        .filter(|_| period == Period::MonthToDate)
        .map(|b| b.amount);
    let burn_svg = burn_chart(
        &daily,
        range,
        period,
        forecast.as_ref(),
        &open_days.provisional,
        budget_line,
    );
    Ok(OverviewData {
        team: team.map(str::to_string),
        all_teams,
        account: account.map(ToString::to_string),
        all_accounts,
        budgets,
        flagged,
        forecast,
        top_projects,
        movers,
        burn_svg: crate::codec::Svg(burn_svg),
        period,
        metric: basis.metric,
        credits: basis.credits,
        range,
        total: teams.iter().map(|t| t.spend).sum(),
        gpu_total: teams.iter().map(|t| t.gpu_spend).sum(),
        run_rate: rate.map_or(Decimal::ZERO, |r| r.per_day),
        run_rate_range: rate_window,
        open_days,
        compared_with,
        teams,
        latest_day,
        record_types,
    })
}

/// Each team's spend in `range` (only `team`'s when set), largest first.
async fn team_spend(
    pool: &PgPool,
    range: DateRange,
    basis: Basis,
    narrowed: Narrowed<'_>,
) -> Result<Vec<TeamSpend>, sqlx::Error> {
    sqlx::query_as(&format!(
        "select coalesce(t.name, $3) as team,
                sum({spend}) as spend,
                sum(r.gpu_{metric}) as gpu_spend
         from {allocated}
         where r.day >= $1 and r.day < $2 and {team}
         group by 1
         order by spend desc, team",
        allocated = allocated(narrowed.account),
        spend = basis.spend_sql("r"),
        metric = basis.metric.key(),
        team = team_clause(4)
    ))
    .bind(range.from)
    .bind(range.to)
    .bind(UNASSIGNED_TEAM)
    .bind(narrowed.team)
    .fetch_all(pool)
    .await
}

/// The daily totals of `range` for the burn chart, and the run rate over the settled week
/// before `with_data`'s end with the window it was taken over.
async fn daily_and_run_rate(
    pool: &PgPool,
    range: DateRange,
    with_data: DateRange,
    basis: Basis,
    narrowed: Narrowed<'_>,
) -> Result<(Vec<(NaiveDate, Decimal)>, Option<forecast::RunRate>, Option<DateRange>), sqlx::Error> {
    let settled = forecast::settled_before(pool, range.to.max(with_data.to)).await?;
    let rate_window = settled.run_rate_window();
    let fetched = DateRange {
        from: rate_window.map_or(range.from, |w| w.from.min(range.from)),
        to: range.to.max(rate_window.map_or(range.to, |w| w.to)),
    };
    let all_daily = daily_totals(pool, fetched, basis, narrowed).await?;
    let rate = rate_window.map(|window| forecast::run_rate(window, &all_daily));
    let daily = all_daily
        .into_iter()
        .filter(|(d, _)| *d >= range.from && *d < range.to)
        .collect();
    Ok((daily, rate, rate_window))
}

/// Spend of days stored before burnrate read record types, which have none.
pub const NOT_BROKEN_DOWN: &str = "Not broken down (ingested before record types)";

/// The organisation's spend in `range` by record type, largest amount first (credits and
/// refunds are negative, so they come last), then the spend of days that have no record
/// types. Each record type is as Cost Explorer rounds it, so the lines may differ from the
/// total in the last digits, never by a cent a day (the ingestion's cross-check). Before
/// credits, the credit and refund lines are left out, as they are of the total.
async fn record_types(
    pool: &PgPool,
    range: DateRange,
    basis: Basis,
    account: Option<&AwsAccountId>,
) -> Result<Vec<Line>, sqlx::Error> {
    // The page rollup, or the record-type grain's rows in the account.
    let record_days = match account {
        None => "record_type_days".to_string(),
        Some(id) => format!(
            "(select day, record_type, unblended, amortized from costs_by_record_type where account_id = {})",
            id.sql_literal()
        ),
    };
    let rows: Vec<(String, Decimal)> = sqlx::query_as(&format!(
        "select record_type, sum({metric}) from {record_days} k
         where day >= $1 and day < $2 and ($4 or record_type not in ('Credit', 'Refund'))
         group by 1 having sum({metric}) <> 0
         union all
         select $3, sum(r.{metric}) from {team_days}
         where r.day >= $1 and r.day < $2
           and not exists (select 1 from {record_days} k where k.day = r.day)
         having sum(r.{metric}) <> 0
         order by 2 desc, 1",
        metric = basis.metric.key(),
        team_days = aws_accounts::team_days(account, "r"),
    ))
    .bind(range.from)
    .bind(range.to)
    .bind(NOT_BROKEN_DOWN)
    .bind(basis.credits == Credits::Net)
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(|(key, spend)| Line { key, spend }).collect())
}

async fn daily_totals(
    pool: &PgPool,
    range: DateRange,
    basis: Basis,
    narrowed: Narrowed<'_>,
) -> Result<Vec<(NaiveDate, Decimal)>, sqlx::Error> {
    sqlx::query_as(&format!(
        "select r.day, sum({spend})
         from {allocated} where r.day >= $1 and r.day < $2 and {team}
         group by r.day order by r.day",
        allocated = allocated(narrowed.account),
        spend = basis.spend_sql("r"),
        team = team_clause(3)
    ))
    .bind(range.from)
    .bind(range.to)
    .bind(narrowed.team)
    .fetch_all(pool)
    .await
}

/// The ten largest projects, and the ten that changed most.
struct Changes {
    top: Vec<ProjectChange>,
    movers: Vec<ProjectChange>,
}

/// Each project's spend in the period and in the equal number of days just before it.
async fn project_changes(
    pool: &PgPool,
    [range, compared_with]: [DateRange; 2],
    basis: Basis,
    narrowed: Narrowed<'_>,
) -> Result<Changes, sqlx::Error> {
    let Narrowed { team, account } = narrowed;
    // The organisation's projects with their owners; a team's, the projects its allocation
    // draws on (its own, and unowned ones its user tags, accounts or shared rules take from).
    let cover: Cover = aws_accounts::cover(&[range, compared_with], account);
    let (source, team_name, filter) = match team {
        None => (
            aws_accounts::owned_projects(account),
            "coalesce(t.name, $1)",
            "r.dimension = 'project' and $2::text is null".to_string(),
        ),
        Some(name) => (
            aws_accounts::project_spans(account, "r"),
            "$2",
            crate::allocation::reads::team_is("r", 2, name),
        ),
    };
    // A project with spend earlier in the month than either range has rows that cancel. (A
    // few thousand projects' rows are read: few enough to sort in memory, so the planner's
    // choice of sort or hash is left to it.)
    let mut all: Vec<ProjectChange> = sqlx::query_as(&format!(
        "select x.project, {team_name}::text as team, x.spend, x.previous
         from (select {key} as project, r.team_id,
                      coalesce(sum(({spend}) * b.sign) filter (where b.part = 0), 0) as spend,
                      coalesce(sum(({spend}) * b.sign) filter (where b.part = 1), 0) as previous
               from {source} {blocks}
               where {filter}
               group by 1, 2) x
         left join teams t on t.id = x.team_id
         where x.spend <> 0 or x.previous <> 0",
        key = if team.is_none() { "r.key" } else { "r.project" },
        spend = basis.spend_sql("r"),
        blocks = Cover::sql("r", 3),
    ))
    .bind(UNASSIGNED_TEAM)
    .bind(team)
    .bind_cover(&cover)
    .fetch_all(pool)
    .await?;
    all.sort_by(|a, b| b.spend.cmp(&a.spend).then_with(|| a.project.cmp(&b.project)));
    let top = all.iter().take(10).cloned().collect();
    all.sort_by(|a, b| {
        (b.spend - b.previous)
            .abs()
            .cmp(&(a.spend - a.previous).abs())
            .then_with(|| a.project.cmp(&b.project))
    });
    Ok(Changes {
        top,
        movers: all.into_iter().take(10).collect(),
    })
}

/// Cumulative spend through the last day with figures (provisional days marked), then the
/// forecast from the first projected day to the month's end.
fn burn_chart(
    daily: &[(NaiveDate, Decimal)],
    range: DateRange,
    period: Period,
    forecast: Option<&Forecast>,
    provisional: &[NaiveDate],
    budget: Option<Decimal>,
) -> String {
    let end = forecast
        .map(|f| crate::period::next_day(f.last_day))
        .unwrap_or(range.to);
    let days: Vec<NaiveDate> = range.from.iter_days().take_while(|d| *d < end).collect();
    let mut running = Decimal::ZERO;
    let actual: Vec<(NaiveDate, Decimal)> = daily
        .iter()
        .map(|(day, value)| {
            running += *value;
            (*day, running)
        })
        .collect();
    let mut points = Vec::new();
    if let Some(f) = forecast {
        // The projection starts from the cumulative settled spend on the eve of its first day.
        let base: Decimal = daily
            .iter()
            .filter(|(d, _)| *d < f.projected_from)
            .map(|(_, v)| *v)
            .sum();
        let left = Decimal::from(f.projected_days.max(1));
        let step = |total: Decimal| (total - base) / left;
        let (low, mid, high) = (step(f.low), step(f.expected), step(f.high));
        // It joins the actual line at the last settled day when that day is in the chart.
        if let Some(eve) = f.projected_from.pred_opt().filter(|eve| *eve >= range.from) {
            points.push((eve, base, base, base));
        }
        for day in f.projected_from.iter_days().take_while(|d| *d < end) {
            let n = Decimal::from((day - f.projected_from).num_days() + 1);
            points.push((day, base + low * n, base + mid * n, base + high * n));
        }
    }
    let description = match forecast {
        Some(f) => format!(
            "Cumulative spend so far and the forecast to {}: {} expected (range {} to {}).{}",
            f.last_day,
            crate::format::usd(f.expected),
            crate::format::usd(f.low),
            crate::format::usd(f.high),
            crate::costs::queries::provisional_note(provisional)
        ),
        None => format!(
            "Cumulative spend over the {}.{}",
            period.label().to_lowercase(),
            crate::costs::queries::provisional_note(provisional)
        ),
    };
    crate::charts::burn(
        "Burn rate: cumulative spend",
        &description,
        &crate::charts::Burn {
            days: &days,
            actual: &actual,
            provisional,
            forecast: &points,
            budget,
            thresholds: &[],
        },
    )
}

/// True for a team that exists, and for Unassigned.
pub async fn team_exists(pool: &PgPool, name: &str) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar("select $1 = $2 or exists (select 1 from teams where name = $1)")
        .bind(name)
        .bind(UNASSIGNED_TEAM)
        .fetch_one(pool)
        .await
}
