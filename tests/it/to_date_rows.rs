//! The page rollups' month-to-date rows: each one equals the sum of its key's day rows from
//! the first of its month through its day, there is one on every day from the key's first
//! day row to the month's end and none elsewhere, and a key whose spend in a month stops
//! and resumes is carried over the gap and left out of ranges where it has none.

use burnrate::dashboard::store::scope_figures;
use burnrate::period::{Basis, DateRange, Metric};
use sqlx::PgPool;

use crate::common::{self, day};

/// The rollups with to-date rows, their key columns with NULLs made comparable (so the
/// oracle's joins can hash), and the figures checked.
const ROLLUPS: [(&str, &str, &str); 2] = [
    (
        "allocated_project_spans",
        "coalesce(team_id, -1) as team, source, coalesce(rule_id, -1) as rule, project",
        "team, source, rule, project",
    ),
    (
        "owned_spend_spans",
        "dimension, coalesce(team_id, -1) as team, key",
        "dimension, team, key",
    ),
];

/// Every to-date row against the day rows it sums, written independently: for each key and
/// month, the days from its first day row to the month's end, each with the sum of the
/// key's day rows of that month up to it. A missing row, an extra row (a key that lost its
/// day rows, say) and a wrong sum all count.
pub async fn assert_to_date_rows_are_running_sums(pool: &PgPool) {
    for (table, select_keys, keys) in ROLLUPS {
        let join_keys = keys
            .split(", ")
            .map(|k| format!("a.{k} = b.{k}"))
            .collect::<Vec<_>>()
            .join(" and ");
        let (rows, wrong): (i64, i64) = sqlx::query_as(&format!(
            "with d as (select {select_keys}, day, date_trunc('month', day::timestamp)::date as month,
                               unblended, amortized
                        from {table} where span = 'day'),
                  t as (select {select_keys}, day, unblended, amortized from {table} where span = 'to_date'),
                  firsts as (select {keys}, month, min(day) as first from d group by {keys}, month),
                  grid as (select {keys}, month, g.day::date as day from firsts,
                           generate_series(first::timestamp, (month + interval '1 month - 1 day')::timestamp,
                                           interval '1 day') as g(day)),
                  expected as (select a.{keys_a}, a.day, sum(b.unblended) as unblended, sum(b.amortized) as amortized
                               from grid a join d b on {join_keys} and a.month = b.month and b.day <= a.day
                               group by a.{keys_a}, a.day)
             select count(*), count(*) filter (where a.day is null or b.day is null
                                                or a.unblended <> b.unblended or a.amortized <> b.amortized)
             from expected a full join t b on {join_keys} and a.day = b.day",
            keys_a = keys.replace(", ", ", a."),
        ))
        .fetch_one(pool)
        .await
        .expect("to-date rows against their day rows");
        assert!(rows > 0, "{table} has to-date rows");
        assert_eq!(
            wrong, 0,
            "{table}: {wrong} of {rows} to-date rows missing, extra or not the running sum"
        );
    }
}

#[sqlx::test]
async fn a_key_whose_spend_stops_mid_month_is_carried_over_the_gap_and_left_out_where_it_has_none(pool: PgPool) {
    common::load_demo(&pool, day(2026, 11, 20)).await;
    // An owned project stops spending from the 10th to the 20th of a full month.
    let (project, team): (String, String) = sqlx::query_as(
        "select p.name, t.name from projects p join teams t on t.id = p.team_id
         where exists (select 1 from daily_project_costs r where r.project = p.name and r.day = '2026-09-25')
         order by p.name limit 1",
    )
    .fetch_one(&pool)
    .await
    .expect("an owned project with spend in September");
    let gap = DateRange {
        from: day(2026, 9, 10),
        to: day(2026, 9, 21),
    };
    crate::page_rollups::change_facts(
        &pool,
        "delete from {table} where project = $3 and day >= $1 and day < $2",
        gap,
        Some(&project),
    )
    .await;

    assert_to_date_rows_are_running_sums(&pool).await;
    // Inside the gap it has no spend: its rows cancel, and the page leaves it out and
    // counts it with no chart series.
    let inside = DateRange {
        from: day(2026, 9, 12),
        to: day(2026, 9, 19),
    };
    let figures = scope_figures::team(&pool, &team, inside, Basis::from(Metric::Unblended))
        .await
        .expect("team figures");
    assert!(
        figures.by_project.iter().all(|l| l.key != project),
        "{project} listed for {inside:?}: {:?}",
        figures.by_project
    );
    let with_spend: i64 = sqlx::query_scalar(
        "select count(*) from (select r.project from daily_project_costs r join projects p on p.name = r.project
                               join teams t on t.id = p.team_id
                               where t.name = $1 and r.day >= $2 and r.day < $3
                               group by 1 having sum(r.unblended) <> 0) x",
    )
    .bind(&team)
    .bind(inside.from)
    .bind(inside.to)
    .fetch_one(&pool)
    .await
    .expect("projects with spend");
    let shown = figures.by_project.len().min(scope_figures::CHART_SERIES) as i64;
    let others = figures.order.iter().find(|s| s.ends_with(" other projects"));
    match others {
        Some(label) => assert_eq!(*label, format!("{} other projects", with_spend - shown)),
        None => assert_eq!(with_spend, shown, "{:?}", figures.order),
    }
    // Around the gap, every team's figures still equal the facts.
    for range in [
        DateRange {
            from: day(2026, 9, 5),
            to: day(2026, 9, 25),
        },
        DateRange {
            from: day(2026, 9, 21),
            to: day(2026, 10, 3),
        },
        inside,
    ] {
        crate::page_rollups::assert_team_figures_match(&pool, range, &format!("{project} without spend in {gap:?}"))
            .await;
    }
}
