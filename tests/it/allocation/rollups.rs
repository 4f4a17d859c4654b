//! The page rollups answer every range exactly as the facts and the allocation do: for each
//! team (and Unassigned), the Team page's breakdowns and totals read from month-to-date rows
//! equal the same figures summed from the facts and the allocation's rows, and keep
//! doing so after a mapping change, a restated day and a declared workload.
//!
//! Their month-to-date rows: each one equals the sum of its key's day rows from
//! the first of its month through its day, there is one on every day from the key's first
//! day row to the month's end and none elsewhere, and a key whose spend in a month stops
//! and resumes is carried over the gap and left out of ranges where it has none.

use std::collections::BTreeMap;

use burnrate::dashboard::model::Line;
use burnrate::dashboard::reads::{aws_accounts, scope_figures};
use burnrate::format::UNASSIGNED_TEAM;
use burnrate::period::{AwsAccountId, Basis, Credits, DateRange, Metric};
use chrono::{Days, NaiveDate};
use rust_decimal::Decimal;
use sqlx::PgPool;

use crate::common::{self, day};

/// The facts of the projects `$3` owns (Unassigned: those no team owns), alias `c`.
const OWNED: &str = "left join projects p on p.name = c.project left join teams t on t.id = p.team_id
                     where c.day >= $1 and c.day < $2 and coalesce(t.name, $4) = $3";

/// `sql` with the binds every oracle query of a team takes: $1/$2 the range, $3 the team,
/// $4 the Unassigned team's name.
fn of_team<'q, O>(
    sql: &'q str,
    range: DateRange,
    team: &'q str,
) -> sqlx::query::QueryAs<'q, sqlx::Postgres, O, sqlx::postgres::PgArguments>
where
    O: for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow>,
{
    sqlx::query_as(sql)
        .bind(range.from)
        .bind(range.to)
        .bind(team)
        .bind(UNASSIGNED_TEAM)
}

/// The 100 largest non-zero lines of `key`, summed from `facts` (alias `c`, with `u` when
/// `usage` joins usage types).
async fn oracle_lines(pool: &PgPool, range: DateRange, team: &str, facts: &str, key: &str, amount: &str) -> Vec<Line> {
    let sql = format!(
        "select {key}, sum({amount}) from {facts} {OWNED}
         group by 1 having sum({amount}) <> 0 order by 2 desc, 1 limit 100"
    );
    let rows: Vec<(String, Decimal)> = of_team(&sql, range, team).fetch_all(pool).await.expect("oracle lines");
    rows.into_iter().map(|(key, spend)| Line { key, spend }).collect()
}

async fn oracle_sum(pool: &PgPool, range: DateRange, team: &str, sql: &str) -> Decimal {
    let sql = format!(
        "select coalesce(sum({sql}), 0) from costs_by_usage_type c join usage_types u on u.usage_type = c.usage_type {OWNED}"
    );
    let (sum,): (Decimal,) = of_team(&sql, range, team).fetch_one(pool).await.expect("oracle sum");
    sum
}

/// Every team's breakdowns and allocated figures for `range`, against the facts and the
/// allocation's own rows.
async fn assert_team_figures_match(pool: &PgPool, range: DateRange, when: &str) {
    let mut teams: Vec<String> = sqlx::query_scalar("select name from teams order by name")
        .fetch_all(pool)
        .await
        .expect("teams");
    teams.push(UNASSIGNED_TEAM.to_string());
    let gross = Basis {
        metric: Metric::Amortized,
        credits: Credits::Gross,
    };
    for team in &teams {
        let context = format!("{team}, {range:?}, {when}");
        let net = scope_figures::team(pool, team, range, Basis::from(Metric::Unblended))
            .await
            .expect("team figures");
        let usage = "costs_by_usage_type c left join usage_types u on u.usage_type = c.usage_type";
        assert_eq!(
            net.by_user,
            oracle_lines(pool, range, team, "costs_by_user c", "c.user_name", "c.unblended").await,
            "users: {context}"
        );
        assert_eq!(
            net.by_service,
            oracle_lines(pool, range, team, "costs_by_service c", "c.service", "c.unblended").await,
            "services: {context}"
        );
        assert_eq!(
            net.by_family,
            oracle_lines(
                pool,
                range,
                team,
                "costs_by_usage_type c join usage_types u on u.usage_type = c.usage_type and u.gpu_model is not null",
                "u.instance_family || ' (' || u.gpu_model || ')'",
                "c.unblended"
            )
            .await,
            "families: {context}"
        );
        assert_eq!(
            net.by_workload,
            oracle_lines(
                pool,
                range,
                team,
                &format!("{usage} left join projects q on q.name = c.project"),
                "coalesce(u.workload, nullif(q.workload, 'unknown'), 'unknown')",
                "c.unblended"
            )
            .await,
            "workloads: {context}"
        );
        assert_eq!(
            net.gpu_hours,
            oracle_sum(pool, range, team, "c.usage_quantity * u.gpu_count").await,
            "GPU-hours: {context}"
        );
        assert_eq!(
            net.spot,
            oracle_sum(pool, range, team, "c.unblended * (u.purchase_option = 'spot')::int").await,
            "spot: {context}"
        );
        assert_eq!(
            net.instances,
            oracle_sum(
                pool,
                range,
                team,
                "c.unblended * (u.purchase_option in ('spot', 'on_demand'))::int"
            )
            .await,
            "instances: {context}"
        );
        // Projects follow the credits switch: before credits, credits and refunds are added back.
        let projects = scope_figures::team(pool, team, range, gross).await.expect("gross");
        assert_eq!(
            projects.by_project,
            oracle_lines(
                pool,
                range,
                team,
                "daily_project_costs c",
                "c.project",
                "c.amortized - c.credit_amortized - c.refund_amortized"
            )
            .await,
            "projects before credits: {context}"
        );
        let (allocated,): (Decimal,) = of_team(
            "select coalesce(sum(a.amortized - a.credit_amortized - a.refund_amortized), 0)
             from allocated_daily_costs a left join teams t on t.id = a.team_id
             where a.day >= $1 and a.day < $2 and coalesce(t.name, $4) = $3",
            range,
            team,
        )
        .fetch_one(pool)
        .await
        .expect("allocated");
        assert_eq!(
            burnrate::allocation::reads::team_total(pool, team, range, gross)
                .await
                .expect("total"),
            allocated,
            "allocated total: {context}"
        );
        let parts: Vec<(String, String, Option<String>, Decimal)> = of_team(
            "select a.source, a.project, r.name, sum(a.amortized - a.credit_amortized - a.refund_amortized)
             from allocated_daily_costs a left join teams t on t.id = a.team_id
             left join allocation_rules r on r.id = a.rule_id
             where a.day >= $1 and a.day < $2 and coalesce(t.name, $4) = $3
             group by 1, 2, 3 having sum(a.amortized - a.credit_amortized - a.refund_amortized) <> 0",
            range,
            team,
        )
        .fetch_all(pool)
        .await
        .expect("parts");
        let mut read: Vec<(String, String, Option<String>, Decimal)> =
            burnrate::allocation::reads::parts(pool, team, range, gross)
                .await
                .expect("parts")
                .into_iter()
                .map(|p| (p.source, p.project, p.rule, p.spend))
                .collect();
        let mut expected = parts;
        read.sort();
        expected.sort();
        assert_eq!(read, expected, "parts: {context}");
        assert_team_accounts_match(pool, team, range, gross, &context).await;
        // The chart's series add up to the team's projects' daily spend.
        let daily_total: Decimal = net.daily.iter().map(|(_, _, v)| *v).sum();
        let projects_total: Decimal = oracle_lines(pool, range, team, "daily_project_costs c", "''", "c.unblended")
            .await
            .iter()
            .map(|l| l.spend)
            .sum();
        assert_eq!(daily_total, projects_total, "chart: {context}");
    }
}

/// A team's spend in each AWS account, as its accounts table lists it and as its total reads
/// with `?account=`, against the allocation's own rows of that account.
async fn assert_team_accounts_match(pool: &PgPool, team: &str, range: DateRange, basis: Basis, context: &str) {
    let expected: BTreeMap<String, Decimal> = of_team(
        "select a.account_id, sum(a.amortized - a.credit_amortized - a.refund_amortized)
         from allocated_daily_costs a left join teams t on t.id = a.team_id
         where a.day >= $1 and a.day < $2 and coalesce(t.name, $4) = $3
         group by 1 having sum(a.amortized - a.credit_amortized - a.refund_amortized) <> 0",
        range,
        team,
    )
    .fetch_all(pool)
    .await
    .expect("accounts")
    .into_iter()
    .collect();
    if team != UNASSIGNED_TEAM {
        let scope = burnrate::dashboard::model::Scope::Team(team.to_string());
        let read: BTreeMap<String, Decimal> = aws_accounts::by_account(pool, &scope, range, basis)
            .await
            .expect("by account")
            .into_iter()
            .filter(|line| !line.spend.is_zero())
            .map(|line| (line.id, line.spend))
            .collect();
        assert_eq!(read, expected, "accounts table: {context}");
    }
    for (account, spend) in &expected {
        let Ok(id) = AwsAccountId::parse(account) else {
            continue;
        };
        let days = aws_accounts::team_days(Some(&id), "a");
        let total = burnrate::allocation::reads::team_total_in(pool, team, range, basis, &days)
            .await
            .expect("account total");
        assert_eq!(total, *spend, "?account={account}: {context}");
    }
}

/// The Overview's projects (the organisation's, with their owners and the period before)
/// for `range`, against the rollup's rows.
async fn assert_overview_projects_match(pool: &PgPool, range: DateRange, when: &str) {
    let overview = burnrate::dashboard::reads::overview::overview(
        pool,
        burnrate::period::Period::Custom(range),
        Metric::Unblended,
        range.to,
        None,
    )
    .await
    .expect("overview");
    let current = overview
        .range
        .cut_at(overview.latest_day.map_or(range.from, |d| d + Days::new(1)));
    let before = current.days_before(current.days());
    let expected: Vec<(String, String, Decimal, Decimal)> = sqlx::query_as(
        "select r.project, coalesce(t.name, $4),
                coalesce(sum(r.unblended) filter (where r.day >= $1), 0),
                coalesce(sum(r.unblended) filter (where r.day < $1), 0)
         from daily_project_costs r left join projects p on p.name = r.project left join teams t on t.id = p.team_id
         where r.day >= $3 and r.day < $2 group by 1, 2
         order by 3 desc, 1 limit 10",
    )
    .bind(current.from)
    .bind(current.to)
    .bind(before.from)
    .bind(UNASSIGNED_TEAM)
    .fetch_all(pool)
    .await
    .expect("projects");
    let read: Vec<(String, String, Decimal, Decimal)> = overview
        .top_projects
        .into_iter()
        .map(|p| (p.project, p.team, p.spend, p.previous))
        .collect();
    assert_eq!(read, expected, "Overview projects: {range:?}, {when}");
}

/// The whole history; ranges across months, from a month's first day and inside a month;
/// a day alone; and ranges reaching past the data at either end.
fn ranges(first: NaiveDate, end: NaiveDate) -> Vec<DateRange> {
    let mid = first + Days::new(40);
    let month = burnrate::allocation::spans::month_start(mid);
    vec![
        DateRange {
            from: month,
            to: month + chrono::Months::new(2),
        },
        DateRange {
            from: mid + Days::new(2),
            to: mid + Days::new(9),
        },
        DateRange { from: first, to: end },
        DateRange {
            from: mid,
            to: mid + Days::new(45),
        },
        DateRange {
            from: end - Days::new(23),
            to: end,
        },
        DateRange {
            from: mid + Days::new(3),
            to: mid + Days::new(4),
        },
        // Reaching before the first day with data, and past the last.
        DateRange {
            from: first - Days::new(20),
            to: first + Days::new(5),
        },
        DateRange {
            from: end - Days::new(3),
            to: end + Days::new(10),
        },
    ]
}

async fn span_of_days(pool: &PgPool) -> (NaiveDate, NaiveDate) {
    let (first, last): (NaiveDate, NaiveDate) = sqlx::query_as("select min(day), max(day) from daily_project_costs")
        .fetch_one(pool)
        .await
        .expect("span");
    (first, last + Days::new(1))
}

#[sqlx::test]
async fn a_team_page_read_from_month_to_date_rows_equals_its_facts_for_any_range_after_any_change(pool: PgPool) {
    common::load_demo(&pool, day(2026, 11, 20)).await;
    let (first, end) = span_of_days(&pool).await;
    assert_to_date_rows_are_running_sums(&pool).await;
    for range in ranges(first, end) {
        assert_team_figures_match(&pool, range, "after the demo's load").await;
        assert_overview_projects_match(&pool, range, "after the demo's load").await;
    }

    // A project moves to another team: its days' rows move with it.
    let (project, team): (String, String) = sqlx::query_as(
        "select p.name, (select name from teams where id <> p.team_id order by name limit 1)
         from projects p where p.team_id is not null order by p.name limit 1",
    )
    .fetch_one(&pool)
    .await
    .expect("a project");
    burnrate::teams::edit::assign(
        &pool,
        &burnrate::audit_log::Actor::system("test"),
        "project",
        &project,
        &team,
    )
    .await
    .expect("moved");
    for range in ranges(first, end) {
        assert_team_figures_match(&pool, range, &format!("after moving {project} to {team}")).await;
    }
    assert_to_date_rows_are_running_sums(&pool).await;

    // AWS restates the first day of a month, which every later day's month-to-date row
    // carries, and then a day in the middle of another month, whose rewrite starts there.
    let first_of_month: NaiveDate =
        sqlx::query_scalar("select min(day) from daily_project_costs where day > $1 and extract(day from day) = 1")
            .bind(first)
            .fetch_one(&pool)
            .await
            .expect("a month's first day");
    for restated in [first_of_month, first_of_month + Days::new(47)] {
        restate(&pool, restated).await;
        for range in ranges(first, end) {
            assert_team_figures_match(&pool, range, &format!("after restating {restated}")).await;
            assert_overview_projects_match(&pool, range, &format!("after restating {restated}")).await;
        }
    }
    assert_to_date_rows_are_running_sums(&pool).await;

    // A project declares a workload: read with the page, nothing rewritten.
    let undeclared: String = sqlx::query_scalar(
        "select c.project from costs_by_usage_type c join projects p on p.name = c.project
         left join usage_types u on u.usage_type = c.usage_type
         where u.workload is null group by 1 order by sum(c.unblended) desc limit 1",
    )
    .fetch_one(&pool)
    .await
    .expect("a project whose usage types say no workload");
    sqlx::query("update projects set workload = 'dev' where name = $1")
        .bind(&undeclared)
        .execute(&pool)
        .await
        .expect("declared");
    for range in ranges(first, end) {
        assert_team_figures_match(&pool, range, &format!("after {undeclared} declared dev")).await;
    }
}

/// AWS triples `restated`'s figures; the rollups of that day are written again.
async fn restate(pool: &PgPool, restated: NaiveDate) {
    let day = DateRange {
        from: restated,
        to: restated + Days::new(1),
    };
    change_facts(
        pool,
        "update {table} set unblended = unblended * 3, amortized = amortized * 3
         where day >= $1 and day < $2 and $3::text is null",
        day,
        None,
    )
    .await;
}

/// Runs `statement` on every fact table (`{table}`; `$1`/`$2` the range, `$3` the project
/// when given), then writes the range's rollups again, as an ingestion of it would.
async fn change_facts(pool: &PgPool, statement: &str, range: DateRange, project: Option<&str>) {
    for table in [
        "costs_by_user",
        "costs_by_service",
        "costs_by_usage_type",
        "costs_by_record_type",
    ] {
        sqlx::query(&statement.replace("{table}", table))
            .bind(range.from)
            .bind(range.to)
            .bind(project)
            .execute(pool)
            .await
            .expect("facts changed");
    }
    let mut tx = pool.begin().await.expect("tx");
    burnrate::allocation::facts::written(&mut tx, range)
        .await
        .expect("rollups");
    tx.commit().await.expect("commit");
}

#[sqlx::test]
async fn reloading_the_demo_over_a_longer_history_leaves_no_page_rollup_of_a_day_it_no_longer_has(pool: PgPool) {
    common::load_demo(&pool, day(2026, 11, 20)).await;
    // A month later the demo's fourteen months start a month later too.
    common::load_demo(&pool, day(2026, 12, 20)).await;
    for table in [
        "team_daily_costs",
        "team_account_daily_costs",
        "allocated_project_spans",
        "owned_spend_spans",
        "record_type_days",
    ] {
        let stale: i64 = sqlx::query_scalar(&format!(
            "select count(*) from {table} s where s.day < (select min(day) from daily_project_costs)"
        ))
        .fetch_one(&pool)
        .await
        .expect("stale rows");
        assert_eq!(stale, 0, "{table} keeps rows of days before the reloaded history");
    }
    let (first, end) = span_of_days(&pool).await;
    assert_team_figures_match(&pool, DateRange { from: first, to: end }, "after a reload").await;
}

#[sqlx::test]
async fn a_start_after_the_upgrade_fills_the_allocation_and_page_rollups_the_stored_days_lack(pool: PgPool) {
    common::load_demo(&pool, day(2026, 11, 20)).await;
    let (first, end) = span_of_days(&pool).await;
    let rows = |table: &'static str| {
        let pool = pool.clone();
        async move {
            sqlx::query_scalar::<_, i64>(&format!("select count(*) from {table}"))
                .fetch_one(&pool)
                .await
                .expect("count")
        }
    };
    let before = (rows("team_daily_costs").await, rows("owned_spend_spans").await);
    // A store from before the page rollups, with some days not allocated either.
    sqlx::query(
        "truncate team_daily_costs, team_account_daily_costs, allocated_project_spans, owned_spend_spans,
                  record_type_days",
    )
    .execute(&pool)
    .await
    .expect("no page rollups");
    sqlx::query("delete from allocated_daily_costs where day >= $1 and day < $2")
        .bind(first + Days::new(30))
        .bind(first + Days::new(45))
        .execute(&pool)
        .await
        .expect("a gap in the allocation");
    assert!(
        burnrate::allocation::store::fill_gaps_in_transaction(&pool)
            .await
            .expect("filled")
    );
    assert_eq!(
        (rows("team_daily_costs").await, rows("owned_spend_spans").await),
        before
    );
    for range in ranges(first, end) {
        assert_team_figures_match(&pool, range, "after the start-up fill").await;
    }
    assert!(
        !burnrate::allocation::store::fill_gaps_in_transaction(&pool)
            .await
            .expect("nothing left"),
        "a second start finds nothing to fill"
    );
    // Days an older binary allocated after the rollup by account came, without it.
    let by_account = rows("team_account_daily_costs").await;
    sqlx::query("delete from team_account_daily_costs where day >= $1")
        .bind(first + Days::new(60))
        .execute(&pool)
        .await
        .expect("days without the rollup by account");
    assert!(
        burnrate::allocation::store::fill_gaps_in_transaction(&pool)
            .await
            .expect("filled again")
    );
    assert_eq!(rows("team_account_daily_costs").await, by_account);
    let whole = DateRange { from: first, to: end };
    assert_team_figures_match(&pool, whole, "after the rollup by account was filled").await;
}

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
async fn assert_to_date_rows_are_running_sums(pool: &PgPool) {
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
    change_facts(
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
        assert_team_figures_match(&pool, range, &format!("{project} without spend in {gap:?}")).await;
    }
}
