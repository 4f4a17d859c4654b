//! What pages read of the allocation: a team's parts by source, and the preview of a rule
//! change.

use std::collections::BTreeMap;

use rust_decimal::Decimal;
use sqlx::PgConnection;

use super::model::{PartLine, Preview, PreviewRow, SharedRule};
use super::spans::{BindCover, Cover};
use crate::format::UNASSIGNED_TEAM;
use crate::period::{Basis, DateRange, Metric};
use chrono::{Datelike, NaiveDate};

/// SQL keeping the rows of `alias` of the team named by parameter `$n`, whose `team_id` is
/// NULL for Unassigned: an equality or an IS NULL, so an index on `team_id` serves either.
pub fn team_is(alias: &str, n: u8, team: &str) -> String {
    if team == UNASSIGNED_TEAM {
        format!("({alias}.team_id is null and ${n}::text is not null)")
    } else {
        format!("{alias}.team_id = (select id from teams where name = ${n})")
    }
}

/// A team's (or Unassigned's) spend in `range` by source, project and rule, largest first
/// (at most 200 lines; the totals elsewhere are summed in SQL).
pub async fn parts(
    conn: impl sqlx::PgExecutor<'_>,
    team: &str,
    range: DateRange,
    basis: Basis,
) -> Result<Vec<PartLine>, sqlx::Error> {
    parts_in(conn, team, basis, "allocated_project_spans a", &Cover::of(&[range])).await
}

/// [`parts`] read from `spans` (aliased `a`, with the columns of `allocated_project_spans`),
/// summed over `cover`'s blocks: how a page narrowed to one account reads them.
pub async fn parts_in(
    conn: impl sqlx::PgExecutor<'_>,
    team: &str,
    basis: Basis,
    spans: &str,
    cover: &Cover,
) -> Result<Vec<PartLine>, sqlx::Error> {
    sqlx::query_as(&format!(
        "select a.source, a.project, r.name as rule, sum(({col}) * b.sign) as spend
         from {spans} {blocks}
         left join allocation_rules r on r.id = a.rule_id
         where {team}
         group by 1, 2, 3 having sum(({col}) * b.sign) <> 0
         order by case a.source when 'direct' then 0 when 'user' then 1 when 'account' then 2 when 'shared' then 3
                                else 4 end,
                  spend desc, 2 limit 200",
        col = basis.spend_sql("a"),
        blocks = Cover::sql("a", 2),
        team = team_is("a", 1, team)
    ))
    .bind(team)
    .bind_cover(cover)
    .fetch_all(conn)
    .await
}

/// A team's (or Unassigned's) allocated spend in `range`.
pub async fn team_total(
    conn: impl sqlx::PgExecutor<'_>,
    team: &str,
    range: DateRange,
    basis: Basis,
) -> Result<Decimal, sqlx::Error> {
    team_total_in(conn, team, range, basis, "team_daily_costs a").await
}

/// [`team_total`] read from `days` (aliased `a`, with `day`, `team_id` and the figures).
pub async fn team_total_in(
    conn: impl sqlx::PgExecutor<'_>,
    team: &str,
    range: DateRange,
    basis: Basis,
    days: &str,
) -> Result<Decimal, sqlx::Error> {
    sqlx::query_scalar(&format!(
        "select coalesce(sum({col}), 0) from {days}
         where a.day >= $1 and a.day < $2 and {team}",
        col = basis.spend_sql("a"),
        team = team_is("a", 3, team)
    ))
    .bind(range.from)
    .bind(range.to)
    .bind(team)
    .fetch_one(conn)
    .await
}

/// Each team's spend in `range` under the stored allocation, and under `proposed` rules in
/// place of the stored ones, computed without writing anything.
pub async fn preview(
    conn: &mut PgConnection,
    range: DateRange,
    metric: Metric,
    proposed: &[SharedRule],
) -> Result<Preview, sqlx::Error> {
    let now: Vec<(String, Decimal)> = sqlx::query_as(&format!(
        "select coalesce(t.name, $3), sum({col}) from team_daily_costs a left join teams t on t.id = a.team_id
         where a.day >= $1 and a.day < $2 group by 1",
        col = Basis::from(metric).spend_sql("a")
    ))
    .bind(range.from)
    .bind(range.to)
    .bind(UNASSIGNED_TEAM)
    .fetch_all(&mut *conn)
    .await?;
    let names: BTreeMap<i64, String> = sqlx::query_as::<_, (i64, String)>("select id, name from teams")
        .fetch_all(&mut *conn)
        .await?
        .into_iter()
        .collect();
    let rules = super::rule_store::resolve(conn, proposed).await?;
    let days = super::store::compute(conn, range, &rules).await?;
    let mut table: BTreeMap<String, PreviewRow> = BTreeMap::new();
    for (team, spend) in now {
        row_for(&mut table, team).now += spend;
    }
    for (_, _, rows) in &days {
        for row in rows {
            let team = row
                .team
                .and_then(|id| names.get(&id).cloned())
                .unwrap_or_else(|| UNASSIGNED_TEAM.to_string());
            row_for(&mut table, team).proposed += match metric {
                Metric::Amortized => row.amounts.amortized,
                Metric::Unblended => row.amounts.unblended,
            };
        }
    }
    let mut teams: Vec<PreviewRow> = table.into_values().collect();
    teams.sort_by(|a, b| b.proposed.cmp(&a.proposed).then_with(|| a.team.cmp(&b.team)));
    Ok(Preview {
        rule: None,
        original: None,
        from: range.from,
        to: range.last_day(),
        metric,
        teams,
    })
}

fn row_for(table: &mut BTreeMap<String, PreviewRow>, team: String) -> &mut PreviewRow {
    table.entry(team.clone()).or_insert_with(|| PreviewRow {
        team,
        now: Decimal::ZERO,
        proposed: Decimal::ZERO,
    })
}

/// The month a preview covers: the last whole calendar month before `today`.
pub fn preview_month(today: NaiveDate) -> DateRange {
    let this_month = today.with_day(1).unwrap_or(today);
    let from = this_month
        .checked_sub_months(chrono::Months::new(1))
        .unwrap_or(this_month);
    DateRange { from, to: this_month }
}

/// The Shared-cost rules page: the rules, the teams and services a rule can name, and the
/// projects no team owns with their spend in the preview month.
pub async fn rules_page(
    conn: &mut PgConnection,
    is_admin: bool,
    today: chrono::NaiveDate,
) -> Result<super::model::RulesData, sqlx::Error> {
    let month = preview_month(today);
    let rules = super::rule_store::list(conn).await?;
    let teams = sqlx::query_scalar("select name from teams order by name")
        .fetch_all(&mut *conn)
        .await?;
    let services = sqlx::query_scalar("select distinct service from costs_by_service where day >= $1 order by 1")
        .bind(month.from)
        .fetch_all(&mut *conn)
        .await?;
    let unowned = sqlx::query_as(
        "select r.project, sum(r.unblended) from daily_project_costs r left join projects p on p.name = r.project
         where p.team_id is null and r.day >= $1 and r.day < $2
         group by 1 order by 2 desc, 1 limit 50",
    )
    .bind(month.from)
    .bind(month.to)
    .fetch_all(&mut *conn)
    .await?;
    Ok(super::model::RulesData {
        rules,
        is_admin,
        teams,
        services,
        unowned,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_preview_covers_the_last_whole_month() {
        let day = |y, m, d| NaiveDate::from_ymd_opt(y, m, d).expect("date");
        assert_eq!(
            preview_month(day(2026, 11, 23)),
            DateRange {
                from: day(2026, 10, 1),
                to: day(2026, 11, 1)
            }
        );
        assert_eq!(preview_month(day(2026, 1, 1)).from, day(2025, 12, 1));
    }
}
