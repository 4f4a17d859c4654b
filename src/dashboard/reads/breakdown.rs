//! Read-side SQL for the Teams, Team and Project pages. Team figures come from the
//! allocation (`allocated_daily_costs`, rewritten in the transaction of every mapping or
//! rule change); a team's breakdowns by project, user, service and GPU family cover the
//! projects it owns, and its page lists the rest of its spend by allocation step.

use chrono::NaiveDate;
use rust_decimal::Decimal;
use sqlx::PgPool;

use super::aws_accounts;
use super::scope_figures::{self, Projects};
use crate::allocation;
use crate::charts::{self, Series};
use crate::costs::queries;
use crate::dashboard::model::{Scope, ScopeData, TeamLine, TeamsData};
use crate::format::UNASSIGNED_TEAM;
use crate::period::{AwsAccountId, Basis, DateRange, Period};

/// The Teams page for every account.
pub async fn teams(
    pool: &PgPool,
    period: Period,
    basis: impl Into<Basis>,
    today: NaiveDate,
) -> Result<TeamsData, sqlx::Error> {
    teams_in(pool, period, basis, today, None).await
}

/// The Teams page, in one linked account when `account` is set.
pub async fn teams_in(
    pool: &PgPool,
    period: Period,
    basis: impl Into<Basis>,
    today: NaiveDate,
    account: Option<&AwsAccountId>,
) -> Result<TeamsData, sqlx::Error> {
    let team_days = aws_accounts::team_days(account, "r");
    let basis = basis.into();
    let range = period.range(today);
    let latest_day = queries::latest_day(pool).await?;
    let queries::Compared {
        current: with_data,
        previous: before,
    } = queries::days_with_data(range, latest_day);
    let (spend, metric) = (basis.spend_sql("r"), basis.metric.key());
    // The allocation: every dollar once, so the teams and Unassigned add up to the total.
    let rows: Vec<TeamLine> = sqlx::query_as(&format!(
        "select coalesce(t.name, $4) as team,
                coalesce(sum({spend}) filter (where r.day >= $1), 0) as spend,
                coalesce(sum({spend}) filter (where r.day < $1), 0) as previous,
                coalesce(sum(r.gpu_{metric}) filter (where r.day >= $1), 0) as gpu_spend,
                coalesce(sum({spend}) filter (where r.day >= $1 and r.source = 'direct'), 0) as direct,
                coalesce(sum({spend}) filter (where r.day >= $1 and r.source = 'user'), 0) as user_tag,
                coalesce(sum({spend}) filter (where r.day >= $1 and r.source = 'account'), 0) as account,
                coalesce(sum({spend}) filter (where r.day >= $1 and r.source = 'shared'), 0) as shared
         from {team_days}
         left join teams t on t.id = r.team_id
         where r.day >= $3 and r.day < $2
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
        "select r.day, coalesce(t.name, $3), sum({spend})
         from {team_days}
         left join teams t on t.id = r.team_id
         where r.day >= $1 and r.day < $2
         group by 1, 2 order by 1, 2"
    ))
    .bind(range.from)
    .bind(range.to)
    .bind(UNASSIGNED_TEAM)
    .fetch_all(pool)
    .await?;
    let order: Vec<String> = rows.iter().map(|r| r.team.clone()).collect();
    let open_days = queries::open_days(pool, range).await?;
    let chart_svg = chart(
        &format!("Daily spend by team, {}", range.label()),
        "Stacked daily spend per team; the table below the chart has the same numbers.",
        range,
        &order,
        &daily,
        &open_days.provisional,
    );
    let budgets =
        crate::budgets::evaluate::uses(pool, today, |b| matches!(b, crate::budgets::BudgetScope::Team(_))).await?;
    Ok(TeamsData {
        budgets,
        period,
        metric: basis.metric,
        credits: basis.credits,
        range,
        previous_range: before,
        open_days,
        total,
        teams: rows,
        account: account.map(ToString::to_string),
        all_accounts: crate::costs::aws_accounts::known(pool).await?,
        daily,
        chart_svg: crate::codec::Svg(chart_svg),
        latest_day,
    })
}

/// Stacked daily bars in `order` (largest first), every day of `range` on the axis; the
/// description ends with the note on provisional days.
fn chart(
    title: &str,
    description: &str,
    range: DateRange,
    order: &[String],
    daily: &[(NaiveDate, String, Decimal)],
    provisional: &[NaiveDate],
) -> String {
    let description = format!("{description}{}", queries::provisional_note(provisional));
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
    charts::stacked_daily(title, &description, &days, &series, provisional)
}

/// A Team or Project page for every account.
pub async fn scope(
    pool: &PgPool,
    scope: Scope,
    period: Period,
    basis: impl Into<Basis>,
    today: NaiveDate,
) -> Result<ScopeData, sqlx::Error> {
    scope_in(pool, scope, period, basis, today, None).await
}

/// A Team or Project page, in one linked account when `account` is set: then a team's
/// totals and steps are its allocation in that account, and the breakdowns come from the
/// facts of that account (the page rollups are the organisation's).
pub async fn scope_in(
    pool: &PgPool,
    scope: Scope,
    period: Period,
    basis: impl Into<Basis>,
    today: NaiveDate,
    account: Option<&AwsAccountId>,
) -> Result<ScopeData, sqlx::Error> {
    let basis = basis.into();
    let range = period.range(today);
    let queries::Compared {
        current: with_data,
        previous: before,
    } = queries::days_with_data(range, queries::latest_day(pool).await?);
    let (team, project) = match &scope {
        Scope::Team(name) => (Some(name.as_str()), None),
        Scope::Project(name) => (None, Some(name.as_str())),
    };
    // The figures beside everything else, on two connections (see `overview`).
    let (figures, (total, previous_total, parts, open_days, budgets, flagged, by_account)) = tokio::try_join!(
        async {
            match (&scope, account) {
                (Scope::Team(name), None) => scope_figures::team(pool, name, range, basis).await,
                (Scope::Team(name), Some(_)) => {
                    scope_figures::from_facts(pool, Projects::OwnedBy(name), range, basis, account).await
                }
                (Scope::Project(name), _) => {
                    scope_figures::from_facts(pool, Projects::One(name), range, basis, account).await
                }
            }
        },
        async {
            // A team's totals are its allocation, the figure the Teams table and its budgets
            // use; a project's, its daily totals.
            let (total, previous_total, parts) = match &scope {
                Scope::Team(name) => {
                    let days = aws_accounts::team_days(account, "a");
                    let (spans, cover) = (
                        aws_accounts::project_spans(account, "a"),
                        aws_accounts::cover(&[with_data], account),
                    );
                    (
                        allocation::reads::team_total_in(pool, name, with_data, basis, &days).await?,
                        allocation::reads::team_total_in(pool, name, before, basis, &days).await?,
                        allocation::reads::parts_in(pool, name, basis, &spans, &cover).await?,
                    )
                }
                Scope::Project(name) => (
                    project_total(pool, name, with_data, basis, account).await?,
                    project_total(pool, name, before, basis, account).await?,
                    Vec::new(),
                ),
            };
            let open_days = queries::open_days(pool, range).await?;
            let budgets = crate::budgets::evaluate::uses(pool, today, |b| match (b, &scope) {
                (crate::budgets::BudgetScope::Team(t), Scope::Team(name)) => t == name,
                (crate::budgets::BudgetScope::Project(p), Scope::Project(name)) => p == name,
                _ => false,
            })
            .await?;
            let flagged = crate::enforcement::flags::flagged_in(pool, team, project).await?;
            let by_account = aws_accounts::by_account(pool, &scope, with_data, basis).await?;
            Ok::<_, sqlx::Error>((total, previous_total, parts, open_days, budgets, flagged, by_account))
        },
    )?;
    let chart_svg = chart(
        &format!("Daily spend of {}, by project", scope.name()),
        "Stacked daily spend per project; the tables below have the exact figures.",
        range,
        &figures.order,
        &figures.daily,
        &open_days.provisional,
    );
    Ok(ScopeData {
        flagged,
        budgets,
        scope,
        period,
        metric: basis.metric,
        credits: basis.credits,
        range,
        previous_range: before,
        open_days,
        total,
        previous_total,
        gpu_hours: figures.gpu_hours,
        spot_spend: figures.spot,
        instance_spend: figures.instances,
        by_project: figures.by_project,
        by_user: figures.by_user,
        by_service: figures.by_service,
        by_family: figures.by_family,
        by_workload: figures.by_workload,
        parts,
        by_account,
        account: account.map(ToString::to_string),
        all_accounts: crate::costs::aws_accounts::known(pool).await?,
        chart_svg: crate::codec::Svg(chart_svg),
    })
}

/// A project's spend in `range` (in one account when `account` is set), from its daily totals.
async fn project_total(
    pool: &PgPool,
    name: &str,
    range: DateRange,
    basis: Basis,
    account: Option<&AwsAccountId>,
) -> Result<Decimal, sqlx::Error> {
    sqlx::query_scalar(&format!(
        "select coalesce(sum({spend}), 0) from daily_project_costs c
         where c.project = $3 and c.day >= $1 and c.day < $2{account}",
        spend = basis.spend_sql("c"),
        account = AwsAccountId::and_in(account, "c.account_id")
    ))
    .bind(range.from)
    .bind(range.to)
    .bind(name)
    .fetch_one(pool)
    .await
}
