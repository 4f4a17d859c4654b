//! The page rollups (migrations `20261127010000_page_rollups.sql` and
//! `20261128010000_to_date_spans.sql`): what the dashboard reads instead of the facts and the
//! allocation's user grain. `store::refresh` writes them for the days it allocates, in its
//! transaction, then the month-to-date rows those days change, so they always agree with
//! the allocation and the facts.

use sqlx::PgConnection;

use super::spans::{months_of, touched};
use crate::period::DateRange;

/// The allocation's figures, in the column order every allocated table uses.
pub const FIGURES: [&str; 10] = [
    "unblended",
    "amortized",
    "gpu_unblended",
    "gpu_amortized",
    "credit_unblended",
    "credit_amortized",
    "refund_unblended",
    "refund_amortized",
    "tax_unblended",
    "tax_amortized",
];

/// The figures of `owned_spend_spans`.
const OWNED_FIGURES: [&str; 7] = [
    "unblended",
    "amortized",
    "credit_unblended",
    "credit_amortized",
    "refund_unblended",
    "refund_amortized",
    "gpu_hours",
];

/// Every `owned_spend_spans` dimension: the first column of its only index, so statements
/// over a range of days name them all to use it.
const EVERY_DIMENSION: &str = "dimension = any('{total,project,user,service,family,workload,declared,purchase}')";

/// Whose rows of `owned_spend_spans` a rewrite redoes. They follow the facts and who owns
/// each project, never the allocation's rules or user tags: a rule change redoes none of
/// them, and a project's move its old and new owners' only (at 10M facts, most of what a
/// rewrite of every day cost).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owners {
    /// Every owner's: the facts, the catalogue or the teams themselves changed.
    All,
    /// These teams' (`None`: the projects no team owns); none at all when empty.
    Only(Vec<Option<i64>>),
}

impl Owners {
    /// No owner's rows: a change that moves no project between owners.
    pub const NONE: Owners = Owners::Only(Vec::new());

    fn is_none(&self) -> bool {
        matches!(self, Owners::Only(teams) if teams.is_empty())
    }

    /// The condition on `column` (an owner's team id) that keeps these owners' rows, on
    /// parameters `$n` to `$n+2` as [`Owners::bind`] binds them.
    fn sql(column: &str, n: u8) -> String {
        format!(
            "(${n} or {column} = any(${}) or ({column} is null and ${}))",
            n + 1,
            n + 2
        )
    }

    fn bind<'q>(&self, query: Statement<'q>) -> Statement<'q> {
        let (every, teams, unowned) = match self {
            Owners::All => (true, Vec::new(), true),
            Owners::Only(teams) => (
                false,
                teams.iter().flatten().copied().collect::<Vec<i64>>(),
                teams.contains(&None),
            ),
        };
        query.bind(every).bind(teams).bind(unowned)
    }
}

fn sums(columns: &[&str]) -> String {
    columns
        .iter()
        .map(|c| format!("sum({c})"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Rewrites the day rows of `range` from the allocation (already rewritten) and the facts,
/// the owned-spend rows of `owners` only.
pub async fn write_days(conn: &mut PgConnection, range: DateRange, owners: &Owners) -> Result<(), sqlx::Error> {
    let figures = FIGURES.join(", ");
    let allocated = [
        "delete from team_daily_costs where day >= $1 and day < $2".to_string(),
        format!(
            "insert into team_daily_costs (day, team_id, source, {figures})
             select day, team_id, source, {sums} from allocated_daily_costs
             where day >= $1 and day < $2 group by day, team_id, source",
            sums = sums(&FIGURES)
        ),
        "delete from team_account_daily_costs where day >= $1 and day < $2".to_string(),
        format!(
            "insert into team_account_daily_costs (day, team_id, source, account_id, {figures})
             select day, team_id, source, account_id, {sums} from allocated_daily_costs
             where day >= $1 and day < $2 group by day, team_id, source, account_id",
            sums = sums(&FIGURES)
        ),
        "delete from allocated_project_spans where span = 'day' and day >= $1 and day < $2".to_string(),
        format!(
            "insert into allocated_project_spans (span, day, team_id, source, rule_id, project, {figures})
             select 'day', day, team_id, source, rule_id, project, {sums} from allocated_daily_costs
             where day >= $1 and day < $2 group by day, team_id, source, rule_id, project",
            sums = sums(&FIGURES)
        ),
        "delete from record_type_days where day >= $1 and day < $2".to_string(),
        "insert into record_type_days (day, record_type, unblended, amortized)
         select day, record_type, sum(unblended), sum(amortized) from costs_by_record_type
         where day >= $1 and day < $2 group by day, record_type"
            .to_string(),
    ];
    for sql in allocated {
        sqlx::query(&sql)
            .bind(range.from)
            .bind(range.to)
            .execute(&mut *conn)
            .await?;
    }
    if owners.is_none() {
        return Ok(());
    }
    for sql in owned_day_rows() {
        owners
            .bind(sqlx::query(&sql).bind(range.from).bind(range.to))
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

/// The statements that rewrite the `owned_spend_spans` day rows of `$1` to `$2` of the
/// owners bound as `$3` to `$5`.
fn owned_day_rows() -> [String; 5] {
    let owner = |column| Owners::sql(column, 3);
    [
        format!(
            "delete from owned_spend_spans where {EVERY_DIMENSION} and span = 'day' and day >= $1 and day < $2
                                            and {}",
            owner("team_id")
        ),
        // A project-day is one rollup row per account; its owner is the project's team now.
        format!(
            "insert into owned_spend_spans (dimension, span, day, team_id, key, unblended, amortized,
                                            credit_unblended, credit_amortized, refund_unblended, refund_amortized)
             select 'project', 'day', r.day, p.team_id, r.project, sum(r.unblended), sum(r.amortized),
                    sum(r.credit_unblended), sum(r.credit_amortized), sum(r.refund_unblended), sum(r.refund_amortized)
             from daily_project_costs r left join projects p on p.name = r.project
             where r.day >= $1 and r.day < $2 and {owner} group by r.day, p.team_id, r.project
             union all
             select 'total', 'day', r.day, p.team_id, '', sum(r.unblended), sum(r.amortized),
                    sum(r.credit_unblended), sum(r.credit_amortized), sum(r.refund_unblended), sum(r.refund_amortized)
             from daily_project_costs r left join projects p on p.name = r.project
             where r.day >= $1 and r.day < $2 and {owner} group by r.day, p.team_id",
            owner = owner("p.team_id")
        ),
        owned_by_key("user", "costs_by_user", "c.user_name"),
        owned_by_key("service", "costs_by_service", "c.service"),
        // One scan of the usage-type grain for the four breakdowns it gives.
        format!(
            "insert into owned_spend_spans (dimension, span, day, team_id, key, unblended, amortized, gpu_hours)
             with f as materialized (
                 select c.day, p.team_id, c.project, c.unblended, c.amortized, c.usage_quantity,
                        u.instance_family, u.gpu_model, u.gpu_count, u.purchase_option, u.workload
                 from costs_by_usage_type c
                 left join usage_types u on u.usage_type = c.usage_type
                 left join projects p on p.name = c.project
                 where c.day >= $1 and c.day < $2 and {})
             select 'family', 'day', day, team_id, instance_family || ' (' || gpu_model || ')',
                    sum(unblended), sum(amortized), sum(usage_quantity * gpu_count)
             from f where gpu_model is not null group by day, team_id, 5
             union all
             select 'workload', 'day', day, team_id, workload, sum(unblended), sum(amortized), 0
             from f where workload is not null group by day, team_id, workload
             union all
             select 'declared', 'day', day, team_id, project, sum(unblended), sum(amortized), 0
             from f where workload is null group by day, team_id, project
             union all
             select 'purchase', 'day', day, team_id, purchase_option, sum(unblended), sum(amortized), 0
             from f where purchase_option in ('spot', 'on_demand') group by day, team_id, purchase_option",
            owner("p.team_id")
        ),
    ]
}

/// The insert of one net breakdown of the owned projects' spend from a fact table `c`.
fn owned_by_key(dimension: &str, facts: &str, key: &str) -> String {
    format!(
        "insert into owned_spend_spans (dimension, span, day, team_id, key, unblended, amortized)
         select '{dimension}', 'day', c.day, p.team_id, {key}, sum(c.unblended), sum(c.amortized)
         from {facts} c left join projects p on p.name = c.project
         where c.day >= $1 and c.day < $2 and {owner} group by c.day, p.team_id, {key}",
        owner = Owners::sql("p.team_id", 3)
    )
}

/// Rewrites the `to_date` rows that any day of `days` changes, from the day rows: the
/// allocation's, and the owned-spend rows of `owners`.
pub async fn write_to_date(conn: &mut PgConnection, days: &[DateRange], owners: &Owners) -> Result<(), sqlx::Error> {
    let ranges = merged(days.iter().filter(|r| r.days() > 0).map(|r| touched(*r)).collect());
    let rollups = [
        Rollup {
            table: "allocated_project_spans",
            keys: "team_id, source, rule_id, project",
            figures: &FIGURES,
            rows: "true".to_string(),
            owners: None,
        },
        Rollup {
            table: "owned_spend_spans",
            keys: "dimension, team_id, key",
            figures: &OWNED_FIGURES,
            rows: format!("{EVERY_DIMENSION} and {}", Owners::sql("team_id", 3)),
            owners: Some(owners),
        },
    ];
    // A month per statement: a month's to-date rows depend on its own days only, and a
    // rewrite of the whole history stays a series of month-sized statements.
    for month in ranges.iter().flat_map(|r| months_of(*r)) {
        for rollup in rollups.iter().filter(|r| !r.owners.is_some_and(Owners::is_none)) {
            rebuild_to_date(conn, rollup, month).await?;
        }
    }
    Ok(())
}

/// A rollup with `to_date` rows: its table, key columns, figures, and the condition on its
/// rows that lets its index serve a range of days, with the owners it keeps (bound as `$3`
/// to `$5`) for the owned-spend rollup.
struct Rollup<'a> {
    table: &'a str,
    keys: &'a str,
    figures: &'a [&'a str],
    rows: String,
    owners: Option<&'a Owners>,
}

type Statement<'q> = sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>;

impl Rollup<'_> {
    /// `query` with the owners its rows condition names, if any.
    fn bind_owners<'q>(&self, query: Statement<'q>) -> Statement<'q> {
        match self.owners {
            Some(owners) => owners.bind(query),
            None => query,
        }
    }
}

/// Rewrites the `to_date` rows of `range`, which lies in one month and ends at its end: each
/// key's running sum over its day rows from the first of the month, carried over the days
/// it has no row to its next row or the month's end, so every day after its first day row
/// has one. They are
/// written in day order: a page reads one day's rows of every key, and rows written key by
/// key would each be on a page of their own (at 10M facts, 2,470 pages for the Overview's
/// projects instead of 136, and 28 ms instead of 5).
async fn rebuild_to_date(conn: &mut PgConnection, rollup: &Rollup<'_>, range: DateRange) -> Result<(), sqlx::Error> {
    let Rollup {
        table,
        keys,
        figures,
        ref rows,
        ..
    } = *rollup;
    rollup
        .bind_owners(
            sqlx::query(&format!(
                "delete from {table} where {rows} and span = 'to_date' and day >= $1 and day < $2"
            ))
            .bind(range.from)
            .bind(range.to),
        )
        .execute(&mut *conn)
        .await?;
    let running: Vec<String> = figures.iter().map(|f| format!("sum({f}) over w as {f}")).collect();
    rollup
        .bind_owners(
            sqlx::query(&format!(
                "insert into {table} (span, day, {keys}, {columns})
         select 'to_date', g.day::date, {keys}, {columns}
         from (select {keys}, day, {running},
                      coalesce(lead(day) over w, $2) as until
               from {table} where {rows} and span = 'day' and day >= date_trunc('month', $1::date)::date and day < $2
               window w as (partition by {keys} order by day)) c
         cross join lateral generate_series(greatest(c.day, $1)::timestamp, (c.until - 1)::timestamp,
                                            interval '1 day') as g(day)
         order by g.day, {keys}",
                columns = figures.join(", "),
                running = running.join(", "),
            ))
            .bind(range.from)
            .bind(range.to),
        )
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Sorted ranges with the overlapping and adjacent ones joined.
fn merged(mut ranges: Vec<DateRange>) -> Vec<DateRange> {
    ranges.sort_by_key(|r| r.from);
    let mut out: Vec<DateRange> = Vec::new();
    for range in ranges {
        match out.last_mut() {
            Some(last) if range.from <= last.to => last.to = last.to.max(range.to),
            _ => out.push(range),
        }
    }
    out
}

/// Empties every page rollup: when no spend is stored at all.
pub async fn clear(conn: &mut PgConnection) -> Result<(), sqlx::Error> {
    sqlx::query(
        "truncate team_daily_costs, team_account_daily_costs, allocated_project_spans, owned_spend_spans,
                  record_type_days",
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Writes the page rollups of days the allocation has and they lack: after the upgrade that
/// added them, or days an older binary allocated after the one that added the rollup by
/// account. The caller holds the allocation lock. True when it wrote any.
pub async fn fill_missing(conn: &mut PgConnection) -> Result<bool, sqlx::Error> {
    let mut missing = super::days::days_lacking(conn, "allocated_daily_costs", "team_daily_costs").await?;
    missing.extend(super::days::days_lacking(conn, "allocated_daily_costs", "team_account_daily_costs").await?);
    missing.sort_unstable();
    missing.dedup();
    let runs = super::days::runs(&missing);
    for range in &runs {
        write_days(conn, *range, &Owners::All).await?;
    }
    write_to_date(conn, &runs, &Owners::All).await?;
    Ok(!runs.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;

    #[test]
    fn overlapping_and_adjacent_ranges_merge_and_the_rest_stay_apart() {
        let day = |d| NaiveDate::from_ymd_opt(2026, 10, d).expect("date");
        let r = |from, to| DateRange {
            from: day(from),
            to: day(to),
        };
        assert_eq!(
            merged(vec![r(20, 27), r(1, 8), r(5, 12), r(12, 15)]),
            [r(1, 15), r(20, 27)]
        );
        assert_eq!(merged(Vec::new()), []);
    }
}
