//! Overview aggregations against the facts, to the cent.

mod common;

use burnrate::costs::period::{Metric, Period};
use burnrate::costs::queries;
use common::{day, load_demo};
use rust_decimal::Decimal;
use sqlx::PgPool;

const TODAY: (i32, u32, u32) = (2026, 2, 10);

/// Team totals straight from the project×user facts: the long way round.
async fn team_totals_from_facts(
    pool: &PgPool,
    from: chrono::NaiveDate,
    to: chrono::NaiveDate,
    column: &str,
) -> Vec<(String, Decimal)> {
    sqlx::query_as(&format!(
        "select coalesce(t.name, 'Unassigned'), sum(c.{column})
         from costs_by_user c left join projects p on p.name = c.project left join teams t on t.id = p.team_id
         where c.day >= $1 and c.day < $2 group by 1 order by 2 desc, 1"
    ))
    .bind(from)
    .bind(to)
    .fetch_all(pool)
    .await
    .expect("facts")
}

#[sqlx::test]
async fn team_spend_equals_the_facts_for_every_period_and_metric(pool: PgPool) {
    load_demo(&pool, day(TODAY.0, TODAY.1, TODAY.2)).await;
    let today = day(TODAY.0, TODAY.1, TODAY.2);
    for period in Period::ALL {
        for (metric, column) in [(Metric::Unblended, "unblended"), (Metric::Amortized, "amortized")] {
            let overview = queries::overview(&pool, period, metric, today, None)
                .await
                .expect("overview");
            let expected = team_totals_from_facts(&pool, overview.range.from, overview.range.to, column).await;
            let got: Vec<(String, Decimal)> = overview.teams.iter().map(|t| (t.team.clone(), t.spend)).collect();
            assert_eq!(got, expected, "{period:?} {metric:?}");
            assert_eq!(overview.total, expected.iter().map(|(_, s)| *s).sum::<Decimal>());
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
            "select coalesce(sum(r.unblended), 0) from daily_project_costs r
             left join projects p on p.name = r.project left join teams t on t.id = p.team_id
             where coalesce(t.name, 'Unassigned') = $1 and r.day >= $2 and r.day < $3",
        )
        .bind(team)
        .bind(one.run_rate_range.from)
        .bind(one.run_rate_range.to)
        .fetch_one(&pool)
        .await
        .expect("week");
        assert_eq!(one.run_rate, week / Decimal::from(7), "{team}");
    }
}

#[sqlx::test]
async fn unmapped_and_untagged_spend_is_shown_as_unassigned(pool: PgPool) {
    load_demo(&pool, day(TODAY.0, TODAY.1, TODAY.2)).await;
    let overview = queries::overview(
        &pool,
        Period::Last90Days,
        Metric::Unblended,
        day(TODAY.0, TODAY.1, TODAY.2),
        None,
    )
    .await
    .expect("overview");
    let unassigned = overview
        .teams
        .iter()
        .find(|t| t.team == "Unassigned")
        .expect("an Unassigned row");
    let expected: Decimal = sqlx::query_scalar(
        "select sum(unblended) from daily_project_costs r left join projects p on p.name = r.project
         where p.team_id is null and day >= $1 and day < $2",
    )
    .bind(overview.range.from)
    .bind(overview.range.to)
    .fetch_one(&pool)
    .await
    .expect("sum");
    assert_eq!(unassigned.spend, expected);
}

#[sqlx::test]
async fn run_rate_is_the_mean_of_the_last_seven_complete_days(pool: PgPool) {
    let today = day(TODAY.0, TODAY.1, TODAY.2);
    load_demo(&pool, today).await;
    let overview = queries::overview(&pool, Period::MonthToDate, Metric::Unblended, today, None)
        .await
        .expect("overview");
    assert_eq!(
        (overview.run_rate_range.from, overview.run_rate_range.to),
        (day(2026, 2, 3), today)
    );
    let week: Decimal = sqlx::query_scalar(
        "select sum(unblended) from costs_by_service where day >= '2026-02-03' and day < '2026-02-10'",
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
        (previous.run_rate_range.from, previous.run_rate_range.to),
        (day(2026, 1, 25), day(2026, 2, 1))
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
    assert_eq!(forecast.days_left, 19, "10 Feb to 28 Feb, today included");
    let before_today: Decimal =
        sqlx::query_scalar("select sum(unblended) from daily_project_costs where day >= '2026-02-01' and day < $1")
            .bind(today)
            .fetch_one(&pool)
            .await
            .expect("so far");
    assert_eq!(forecast.expected, before_today + overview.run_rate * Decimal::from(19));
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

#[sqlx::test]
async fn top_projects_and_movers_equal_the_facts(pool: PgPool) {
    let today = day(TODAY.0, TODAY.1, TODAY.2);
    load_demo(&pool, today).await;
    let overview = queries::overview(&pool, Period::Last30Days, Metric::Amortized, today, None)
        .await
        .expect("overview");
    assert_eq!(overview.top_projects.len(), 10);
    assert!(overview.top_projects.windows(2).all(|w| w[0].spend >= w[1].spend));
    let change = |p: &burnrate::costs::ProjectChange| (p.spend - p.previous).abs();
    assert!(overview.movers.windows(2).all(|w| change(&w[0]) >= change(&w[1])));
    let range = overview.range;
    let before = range.from - chrono::Days::new(range.days() as u64);
    for project in overview.top_projects.iter().chain(&overview.movers) {
        let (spend, previous): (Decimal, Decimal) = sqlx::query_as(
            "select coalesce(sum(amortized) filter (where day >= $2), 0), coalesce(sum(amortized) filter (where day < $2), 0)
             from costs_by_user where project = $1 and day >= $3 and day < $4",
        )
        .bind(&project.project)
        .bind(range.from)
        .bind(before)
        .bind(range.to)
        .fetch_one(&pool)
        .await
        .expect("facts");
        assert_eq!(
            (project.spend, project.previous),
            (spend, previous),
            "{}",
            project.project
        );
    }
}
