//! Overview aggregations against the facts, to the cent.

use crate::common;

use crate::common::{day, load_demo};
use burnrate::dashboard::reads::overview as queries;
use burnrate::period::{Metric, Period};
use rust_decimal::Decimal;
use sqlx::PgPool;

const TODAY: (i32, u32, u32) = (2026, 2, 10);

/// Each team's own projects straight from the project×user facts: the long way round.
async fn owned_from_facts(
    pool: &PgPool,
    from: chrono::NaiveDate,
    to: chrono::NaiveDate,
    column: &str,
) -> Vec<(String, Decimal)> {
    sqlx::query_as(&format!(
        "select t.name, sum(c.{column})
         from costs_by_user c join projects p on p.name = c.project join teams t on t.id = p.team_id
         where c.day >= $1 and c.day < $2 group by 1 order by 1"
    ))
    .bind(from)
    .bind(to)
    .fetch_all(pool)
    .await
    .expect("facts")
}

async fn bill(pool: &PgPool, from: chrono::NaiveDate, to: chrono::NaiveDate, column: &str) -> Decimal {
    sqlx::query_scalar(&format!(
        "select coalesce(sum({column}), 0) from costs_by_user where day >= $1 and day < $2"
    ))
    .bind(from)
    .bind(to)
    .fetch_one(pool)
    .await
    .expect("bill")
}

#[sqlx::test]
async fn team_spend_adds_up_to_the_bill_for_every_period_and_metric(pool: PgPool) {
    load_demo(&pool, day(TODAY.0, TODAY.1, TODAY.2)).await;
    let today = day(TODAY.0, TODAY.1, TODAY.2);
    for period in Period::ALL {
        for (metric, column) in [(Metric::Unblended, "unblended"), (Metric::Amortized, "amortized")] {
            let overview = queries::overview(&pool, period, metric, today, None)
                .await
                .expect("overview");
            // Every dollar of the bill is in one team or Unassigned, and no team has less
            // than its own projects (user tags and shared-cost rules only add).
            let total = bill(&pool, overview.range.from, overview.range.to, column).await;
            assert_eq!(overview.total, total, "{period:?} {metric:?}");
            assert_eq!(overview.teams.iter().map(|t| t.spend).sum::<Decimal>(), total);
            for (team, owned) in owned_from_facts(&pool, overview.range.from, overview.range.to, column).await {
                let shown = overview.teams.iter().find(|t| t.team == team).map(|t| t.spend);
                assert!(
                    shown >= Some(owned),
                    "{team} {period:?} {metric:?}: {shown:?} < {owned}"
                );
            }
            let mut spends: Vec<Decimal> = overview.teams.iter().map(|t| t.spend).collect();
            spends.sort_by(|a, b| b.cmp(a));
            assert_eq!(
                spends,
                overview.teams.iter().map(|t| t.spend).collect::<Vec<_>>(),
                "largest first"
            );
        }
    }
}

#[sqlx::test]
async fn a_team_filter_narrows_every_figure_to_that_team(pool: PgPool) {
    let today = day(TODAY.0, TODAY.1, TODAY.2);
    load_demo(&pool, today).await;
    let all = queries::overview(&pool, Period::Last30Days, Metric::Unblended, today, None)
        .await
        .expect("overview");
    for team in ["ml-research", "Unassigned"] {
        let one = queries::overview(&pool, Period::Last30Days, Metric::Unblended, today, Some(team))
            .await
            .expect("team overview");
        let expected = all.teams.iter().find(|t| t.team == team).expect("team row");
        assert_eq!(one.teams.len(), 1, "{team}");
        assert_eq!(
            (one.total, one.gpu_total),
            (expected.spend, expected.gpu_spend),
            "{team}"
        );
        assert!(one.top_projects.iter().all(|p| p.team == team), "{team}");
        assert!(one.run_rate < all.run_rate, "{team}");
        let week: Decimal = sqlx::query_scalar(
            "select coalesce(sum(a.unblended), 0) from allocated_daily_costs a left join teams t on t.id = a.team_id
             where coalesce(t.name, 'Unassigned') = $1 and a.day >= $2 and a.day < $3",
        )
        .bind(team)
        .bind(one.run_rate_range.expect("settled days").from)
        .bind(one.run_rate_range.expect("settled days").to)
        .fetch_one(&pool)
        .await
        .expect("week");
        assert_eq!(one.run_rate, week / Decimal::from(7), "{team}");
    }
}

#[sqlx::test]
async fn spend_of_unowned_projects_goes_to_user_tags_shared_rules_or_unassigned(pool: PgPool) {
    load_demo(&pool, day(TODAY.0, TODAY.1, TODAY.2)).await;
    let today = day(TODAY.0, TODAY.1, TODAY.2);
    let teams = burnrate::dashboard::reads::breakdown::teams(&pool, Period::Last90Days, Metric::Unblended, today)
        .await
        .expect("teams");
    let unassigned = teams
        .teams
        .iter()
        .find(|t| t.team == "Unassigned")
        .expect("an Unassigned row: the demo's untagged accelerator box");
    let unowned: Decimal = sqlx::query_scalar(
        "select sum(unblended) from daily_project_costs r left join projects p on p.name = r.project
         where p.team_id is null and day >= $1 and day < $2",
    )
    .bind(teams.range.from)
    .bind(teams.range.to)
    .fetch_one(&pool)
    .await
    .expect("sum");
    let claimed: Decimal = teams.teams.iter().map(|t| t.user_tag + t.shared).sum();
    assert!(claimed > Decimal::ZERO, "the demo's user tags and its rule claim some");
    assert!(unassigned.spend > Decimal::ZERO && unassigned.spend < unowned);
    assert_eq!(unassigned.spend + claimed, unowned, "every unowned dollar once");
}

#[sqlx::test]
async fn run_rate_is_the_mean_of_the_last_seven_settled_days(pool: PgPool) {
    let today = day(TODAY.0, TODAY.1, TODAY.2);
    load_demo(&pool, today).await;
    let overview = queries::overview(&pool, Period::MonthToDate, Metric::Unblended, today, None)
        .await
        .expect("overview");
    // Data through 9 Feb, all of February on the open bill; 7–9 Feb are inside the
    // restatement window (provisional), so the week ends on 6 Feb.
    assert_eq!(
        overview.open_days.provisional,
        [day(2026, 2, 7), day(2026, 2, 8), day(2026, 2, 9)]
    );
    assert_eq!(
        overview.open_days.bill_open,
        day(2026, 2, 1).iter_days().take(6).collect::<Vec<_>>()
    );
    assert_eq!(
        overview.run_rate_range,
        Some(burnrate::period::DateRange {
            from: day(2026, 1, 31),
            to: day(2026, 2, 7)
        })
    );
    let week: Decimal = sqlx::query_scalar(
        "select sum(unblended) from costs_by_service where day >= '2026-01-31' and day < '2026-02-07'",
    )
    .fetch_one(&pool)
    .await
    .expect("sum");
    assert_eq!(overview.run_rate, week / Decimal::from(7));

    // A past period's run-rate ends at the period's end.
    let previous = queries::overview(&pool, Period::PreviousMonth, Metric::Unblended, today, None)
        .await
        .expect("overview");
    assert_eq!(
        previous.run_rate_range,
        Some(burnrate::period::DateRange {
            from: day(2026, 1, 25),
            to: day(2026, 2, 1)
        })
    );
}

/// Flat spend of USD 100 a day on one project for 400 days before `today`, all settled.
async fn flat_history(pool: &PgPool, today: chrono::NaiveDate) {
    sqlx::query("insert into teams (name) values ('flat')")
        .execute(pool)
        .await
        .expect("team");
    common::add_project_costs(
        pool,
        "steady",
        Some("flat"),
        (today - chrono::Days::new(400), today - chrono::Days::new(1)),
        "100",
        "100",
    )
    .await;
}

#[sqlx::test]
async fn on_period_edges_flat_spend_shows_no_change_and_forecasts_the_whole_month(pool: PgPool) {
    // The 1st, the 2nd and the last day of a month, 1 January and 29 February.
    for (today, days_with_data, month_days) in [
        (day(2026, 3, 1), 0, 31),
        (day(2026, 3, 2), 1, 31),
        (day(2026, 3, 31), 30, 31),
        (day(2027, 1, 1), 0, 31),
        (day(2028, 2, 29), 28, 29),
    ] {
        sqlx::query("truncate daily_project_costs, projects, teams cascade")
            .execute(&pool)
            .await
            .expect("clean");
        flat_history(&pool, today).await;
        let overview = queries::overview(&pool, Period::MonthToDate, Metric::Unblended, today, None)
            .await
            .expect("overview");
        assert_eq!(overview.range.days(), days_with_data, "{today}");
        assert_eq!(overview.total, Decimal::from(100 * days_with_data), "{today}");
        assert_eq!(overview.compared_with.days(), days_with_data, "{today}");
        assert_eq!(overview.compared_with.to, overview.range.from, "{today}");
        let listed = usize::from(days_with_data > 0);
        assert_eq!(
            overview.movers.len(),
            listed,
            "{today}: the one project, once it has a day"
        );
        for mover in &overview.movers {
            assert_eq!(mover.previous, Decimal::from(100 * days_with_data), "{today}");
            assert_eq!(mover.spend, mover.previous, "{today}: flat spend has not changed");
        }
        assert_eq!(overview.run_rate, Decimal::from(100), "{today}");
        let forecast = overview.forecast.expect("month to date forecasts");
        assert_eq!(forecast.expected, Decimal::from(100 * month_days), "{today}");
        assert_eq!(forecast.projected_days, month_days - days_with_data, "{today}");

        let teams = burnrate::dashboard::reads::breakdown::teams(&pool, Period::MonthToDate, Metric::Unblended, today)
            .await
            .expect("teams");
        if days_with_data > 0 {
            assert_eq!(teams.teams.len(), 1, "{today}");
        }
        for team in &teams.teams {
            assert_eq!(team.spend, team.previous, "{today}: {}", team.team);
        }
    }
}

#[sqlx::test]
async fn a_lagging_ingestion_compares_only_the_days_that_have_data(pool: PgPool) {
    let today = day(2026, 3, 20);
    flat_history(&pool, today).await;
    // The last ingestion stored nothing after 14 March.
    sqlx::query("delete from daily_project_costs where day > '2026-03-14'")
        .execute(&pool)
        .await
        .expect("lag");
    let overview = queries::overview(&pool, Period::MonthToDate, Metric::Unblended, today, None)
        .await
        .expect("overview");
    assert_eq!(overview.range.days(), 19);
    assert_eq!(
        overview.compared_with.days(),
        14,
        "1–14 March against the 14 days before"
    );
    assert_eq!(overview.movers.len(), 1);
    assert_eq!(
        (overview.movers[0].spend, overview.movers[0].previous),
        (Decimal::from(1400), Decimal::from(1400))
    );
}

#[sqlx::test]
async fn an_empty_database_has_no_latest_day_and_zero_totals(pool: PgPool) {
    let overview = queries::overview(&pool, Period::MonthToDate, Metric::Unblended, day(2026, 2, 10), None)
        .await
        .expect("overview");
    assert_eq!(overview.latest_day, None);
    assert_eq!(overview.total, Decimal::ZERO);
    assert!(overview.teams.is_empty());
}

#[sqlx::test]
async fn amortized_spreads_reserved_fees_so_it_differs_from_unblended_on_the_first(pool: PgPool) {
    let today = day(TODAY.0, TODAY.1, TODAY.2);
    load_demo(&pool, today).await;
    let (unblended, amortized): (Decimal, Decimal) =
        sqlx::query_as("select sum(unblended), sum(amortized) from daily_project_costs where day = '2026-02-01'")
            .fetch_one(&pool)
            .await
            .expect("sums");
    assert!(
        unblended > amortized,
        "the month's reservation fee is billed on the 1st"
    );
}

#[sqlx::test]
async fn month_to_date_forecasts_the_month_end_with_a_range(pool: PgPool) {
    let today = day(TODAY.0, TODAY.1, TODAY.2);
    load_demo(&pool, today).await;
    let overview = queries::overview(&pool, Period::MonthToDate, Metric::Unblended, today, None)
        .await
        .expect("overview");
    let forecast = overview.forecast.expect("month to date has a forecast");
    assert_eq!(forecast.last_day, day(2026, 2, 28));
    // Settled through 6 Feb; 7–9 Feb are Estimated, so they are projected too.
    assert_eq!(forecast.projected_from, day(2026, 2, 7));
    assert_eq!(forecast.projected_days, 22, "7 Feb to 28 Feb");
    let settled: Decimal = sqlx::query_scalar(
        "select sum(unblended) from daily_project_costs where day >= '2026-02-01' and day < '2026-02-07'",
    )
    .fetch_one(&pool)
    .await
    .expect("so far");
    let week: Decimal = sqlx::query_scalar(
        "select sum(unblended) from costs_by_service where day >= '2026-01-31' and day < '2026-02-07'",
    )
    .fetch_one(&pool)
    .await
    .expect("week");
    assert_eq!(forecast.expected, settled + week * Decimal::from(22) / Decimal::from(7));
    assert!(forecast.low <= forecast.expected && forecast.expected <= forecast.high);
    assert!(
        overview
            .burn_svg
            .0
            .contains("<title>Burn rate: cumulative spend</title>")
    );
    assert!(overview.burn_svg.0.contains("Forecast"));

    let past = queries::overview(&pool, Period::PreviousMonth, Metric::Unblended, today, None)
        .await
        .expect("overview");
    assert_eq!(past.forecast, None, "a finished period has nothing to forecast");
}

/// The largest projects and the largest movers, for the organisation (from the facts) and
/// for a team and Unassigned (the projects their allocation draws on, from the allocation).
#[sqlx::test]
async fn top_projects_and_movers_equal_the_facts(pool: PgPool) {
    let today = day(TODAY.0, TODAY.1, TODAY.2);
    load_demo(&pool, today).await;
    for team in [None, Some("ml-research"), Some("Unassigned")] {
        let overview = queries::overview(&pool, Period::Last30Days, Metric::Amortized, today, team)
            .await
            .expect("overview");
        let range = overview.range;
        let before = range.from - chrono::Days::new(range.days() as u64);
        assert_eq!(
            (overview.compared_with.from, overview.compared_with.to),
            (before, range.from)
        );
        let mut expected: Vec<(String, Decimal, Decimal)> = sqlx::query_as(
            "select project, coalesce(sum(amortized) filter (where day >= $2), 0),
                    coalesce(sum(amortized) filter (where day < $2), 0)
             from (select project, day, amortized from costs_by_user where $4::text is null
                   union all
                   select a.project, a.day, a.amortized
                   from allocated_daily_costs a left join teams t on t.id = a.team_id
                   where coalesce(t.name, 'Unassigned') = $4) f
             where day >= $1 and day < $3
             group by 1
             having coalesce(sum(amortized) filter (where day >= $2), 0) <> 0
                 or coalesce(sum(amortized) filter (where day < $2), 0) <> 0",
        )
        .bind(before)
        .bind(range.from)
        .bind(range.to)
        .bind(team)
        .fetch_all(&pool)
        .await
        .expect("facts");
        assert!(!expected.is_empty(), "{team:?} has projects");
        assert!(
            team.is_some() || expected.len() > 10,
            "the organisation has more than are shown"
        );
        let shown_count = expected.len().min(10);
        let shown = |list: &[burnrate::dashboard::model::ProjectChange]| -> Vec<(String, Decimal, Decimal)> {
            list.iter().map(|p| (p.project.clone(), p.spend, p.previous)).collect()
        };
        expected.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        assert_eq!(
            shown(&overview.top_projects),
            expected[..shown_count].to_vec(),
            "{team:?} top"
        );
        expected.sort_by(|a, b| (b.1 - b.2).abs().cmp(&(a.1 - a.2).abs()).then_with(|| a.0.cmp(&b.0)));
        assert_eq!(
            shown(&overview.movers),
            expected[..shown_count].to_vec(),
            "{team:?} movers"
        );
    }
}

/// The Overview shows usage apart from the demo bill's credits, refunds, tax and reserved
/// fees, and they add up to the period's total.
#[sqlx::test]
async fn record_types_are_shown_apart_and_add_up_to_the_total(pool: PgPool) {
    let today = day(TODAY.0, TODAY.1, TODAY.2);
    load_demo(&pool, today).await;
    let overview = queries::overview(&pool, Period::Last90Days, Metric::Unblended, today, None)
        .await
        .expect("overview");
    let kinds: Vec<&str> = overview.record_types.iter().map(|l| l.key.as_str()).collect();
    for kind in ["Usage", "Credit", "Refund", "Tax", "RIFee"] {
        assert!(kinds.contains(&kind), "{kind} in {kinds:?}");
    }
    // Reserved hours cost nothing unblended (the fee paid for them); amortized, they carry it.
    assert!(!kinds.contains(&"DiscountedUsage"));
    let amortized = queries::overview(&pool, Period::Last90Days, Metric::Amortized, today, None)
        .await
        .expect("amortized overview");
    assert!(amortized.record_types.iter().any(|l| l.key == "DiscountedUsage"));
    assert_eq!(
        amortized.record_types.iter().map(|l| l.spend).sum::<Decimal>(),
        amortized.total
    );
    let credit = overview
        .record_types
        .iter()
        .find(|l| l.key == "Credit")
        .expect("credit");
    assert!(credit.spend < Decimal::ZERO);
    assert_eq!(
        overview.record_types.iter().map(|l| l.spend).sum::<Decimal>(),
        overview.total
    );
    let filtered = queries::overview(&pool, Period::Last90Days, Metric::Unblended, today, Some("ml-research"))
        .await
        .expect("team overview");
    assert!(
        filtered.record_types.is_empty(),
        "a team's figures are allocated, not billed by record type"
    );
    // Days stored before burnrate read record types have none: their spend is one line.
    let range = overview.range;
    let tenth = range.from + chrono::Days::new(10);
    sqlx::query("delete from costs_by_record_type where day < $1")
        .bind(tenth)
        .execute(&pool)
        .await
        .expect("an older store");
    // The page rollups of those days are written again, as every writer of the facts does.
    common::reallocate(&pool).await;
    let older = queries::overview(&pool, Period::Last90Days, Metric::Unblended, today, None)
        .await
        .expect("overview");
    let unread: Decimal =
        sqlx::query_scalar("select sum(unblended) from daily_project_costs where day >= $1 and day < $2")
            .bind(range.from)
            .bind(tenth)
            .fetch_one(&pool)
            .await
            .expect("the first ten days");
    let line = older
        .record_types
        .iter()
        .find(|l| l.key == queries::NOT_BROKEN_DOWN)
        .expect("a not-broken-down line");
    assert_eq!(line.spend, unread);
    assert_eq!(older.record_types.iter().map(|l| l.spend).sum::<Decimal>(), older.total);
}
