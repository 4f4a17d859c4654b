//! Teams, Team and Project aggregations against the facts, to the cent, and their pages.

use crate::common;

use crate::common::{day, load_demo};
use burnrate::auth::Role;
use burnrate::dashboard::model::Scope;
use burnrate::dashboard::reads::breakdown;
use burnrate::demo::org::HOSTILE_PROJECT;
use burnrate::period::{Metric, Period};
use burnrate::ui::links::scope_href;
use rust_decimal::Decimal;
use sqlx::PgPool;

async fn facts(
    pool: &PgPool,
    sql: &str,
    from: chrono::NaiveDate,
    to: chrono::NaiveDate,
    name: &str,
) -> Vec<(String, Decimal)> {
    sqlx::query_as(sql)
        .bind(from)
        .bind(to)
        .bind(name)
        .fetch_all(pool)
        .await
        .expect("facts")
}

#[sqlx::test]
async fn teams_view_equals_the_facts_for_the_period_and_the_one_before(pool: PgPool) {
    let today = day(2026, 2, 10);
    load_demo(&pool, today).await;
    for (metric, column) in [(Metric::Unblended, "unblended"), (Metric::Amortized, "amortized")] {
        let view = breakdown::teams(&pool, Period::Last30Days, metric, today)
            .await
            .expect("teams");
        // A team's own projects, straight from the project × user facts: the long way round.
        let owned_sql = format!(
            "select t.name, sum(c.{column}) from costs_by_user c
             join projects p on p.name = c.project join teams t on t.id = p.team_id
             where c.day >= $1 and c.day < $2 and $3 <> '-' group by 1 order by 1"
        );
        let mut expected = facts(&pool, &owned_sql, view.range.from, view.range.to, "").await;
        let mut got: Vec<(String, Decimal)> = view
            .teams
            .iter()
            .filter(|t| !t.direct.is_zero())
            .map(|t| (t.team.clone(), t.direct))
            .collect();
        got.sort();
        expected.sort();
        assert_eq!(got, expected, "each team's own projects, {metric:?}");
        // Every dollar of the bill is in exactly one team or Unassigned, now and before.
        let bill_sql = format!(
            "select 'all', coalesce(sum(c.{column}), 0) from costs_by_user c where c.day >= $1 and c.day < $2 and $3 <> '-'"
        );
        let bill = facts(&pool, &bill_sql, view.range.from, view.range.to, "").await[0].1;
        assert_eq!(view.total, bill, "{metric:?}");
        for line in view.teams.iter().filter(|t| t.team != "Unassigned") {
            assert_eq!(line.spend, line.direct + line.user_tag + line.shared, "{}", line.team);
        }
        let before = facts(&pool, &bill_sql, view.previous_range.from, view.previous_range.to, "").await[0].1;
        assert_eq!(view.teams.iter().map(|t| t.previous).sum::<Decimal>(), before);
        assert_eq!(view.previous_range.to, view.range.from);
        assert_eq!(view.previous_range.days(), view.range.days());
        let daily_total: Decimal = view.daily.iter().map(|(_, _, v)| *v).sum();
        assert_eq!(daily_total, view.total, "the chart's numbers add up to the table's");
        for line in &view.teams {
            assert!(view.chart_svg.0.contains(&line.team), "the legend names {}", line.team);
        }
    }
}

#[sqlx::test]
async fn a_team_and_a_project_split_the_same_total_every_way(pool: PgPool) {
    let today = day(2026, 2, 10);
    load_demo(&pool, today).await;
    let team: String =
        sqlx::query_scalar("select t.name from projects p join teams t on t.id = p.team_id where p.name = $1")
            .bind(HOSTILE_PROJECT)
            .fetch_one(&pool)
            .await
            .expect("the hostile project has a team");
    for scope in [
        Scope::Team(team.clone()),
        Scope::Team("Unassigned".into()),
        Scope::Project(HOSTILE_PROJECT.into()),
    ] {
        let view = breakdown::scope(&pool, scope.clone(), Period::Last90Days, Metric::Unblended, today)
            .await
            .expect("scope");
        assert!(view.total > Decimal::ZERO, "{scope:?}");
        let sum = |lines: &[burnrate::dashboard::model::Line]| lines.iter().map(|l| l.spend).sum::<Decimal>();
        // A team's breakdowns cover the projects it owns (for Unassigned: those no team
        // owns); its total is its allocation, every part of which its page lists.
        let owned = match &scope {
            Scope::Team(_) => {
                assert_eq!(
                    view.parts.iter().map(|p| p.spend).sum::<Decimal>(),
                    view.total,
                    "{scope:?}"
                );
                sum(&view.by_project)
            }
            Scope::Project(_) => view.total,
        };
        assert_eq!(sum(&view.by_user), owned, "users reconcile for {scope:?}");
        assert_eq!(sum(&view.by_service), owned, "services reconcile for {scope:?}");
        assert_eq!(sum(&view.by_workload), owned, "workloads reconcile for {scope:?}");
        assert!(sum(&view.by_family) <= owned);
        assert!(view.spot_spend <= view.instance_spend);
        let filter = match &scope {
            Scope::Team(_) => {
                "coalesce((select t.name from projects p join teams t on t.id = p.team_id where p.name = c.project), 'Unassigned') = $3"
            }
            Scope::Project(_) => "c.project = $3",
        };
        let expected: Decimal = sqlx::query_scalar(&format!(
            "select coalesce(sum(unblended), 0) from costs_by_usage_type c where day >= $1 and day < $2 and {filter}"
        ))
        .bind(view.range.from)
        .bind(view.range.to)
        .bind(scope.name())
        .fetch_one(&pool)
        .await
        .expect("total");
        assert_eq!(owned, expected, "{scope:?}");
        if let Scope::Team(name) = &scope
            && name != "Unassigned"
        {
            let direct: Decimal = view
                .parts
                .iter()
                .filter(|p| p.source == "direct")
                .map(|p| p.spend)
                .sum();
            assert_eq!(direct, expected, "the team's own projects are its direct part");
        }
        let gpu_hours: Decimal = sqlx::query_scalar(&format!(
            "select coalesce(sum(c.usage_quantity * u.gpu_count), 0) from costs_by_usage_type c
             join usage_types u on u.usage_type = c.usage_type where day >= $1 and day < $2 and {filter}"
        ))
        .bind(view.range.from)
        .bind(view.range.to)
        .bind(scope.name())
        .fetch_one(&pool)
        .await
        .expect("gpu hours");
        assert_eq!(view.gpu_hours, gpu_hours);
    }
}

#[sqlx::test]
async fn the_pages_render_for_signed_in_users_and_escape_tag_values(pool: PgPool) {
    load_demo(&pool, common::today()).await;
    let app = common::spawn_app(pool.clone()).await;
    assert_eq!(app.post_form("/api/teams", "").await.status, 401);
    assert_eq!(app.get("/teams").await.status, 303);
    let viewer = app.session_for("viewer@example.com", Role::Viewer).await;
    let teams = app.get_as("/teams?period=30d", &viewer).await;
    assert_eq!(teams.status, 200);
    assert!(teams.body.contains("data-testid=\"teams-chart\""));
    assert!(teams.body.contains("<title>Daily spend by team"));
    let project = app
        .get_as(
            &format!("{}?period=90d", scope_href("projects", HOSTILE_PROJECT)),
            &viewer,
        )
        .await;
    assert_eq!(project.status, 200);
    assert!(!project.body.contains("<img src=x"), "the hostile name is never markup");
    assert!(project.body.contains("&lt;img src=x onerror=alert(1)&gt;"));
    let unassigned = app.get_as("/teams/Unassigned?period=90d", &viewer).await;
    assert_eq!(unassigned.status, 200);
    assert!(
        unassigned.body.contains("(untagged)"),
        "untagged spend is listed under Unassigned"
    );
}

#[sqlx::test]
async fn a_month_and_a_custom_range_are_accepted_and_bad_ones_named(pool: PgPool) {
    load_demo(&pool, day(2026, 2, 10)).await;
    let app = common::spawn_app(pool.clone()).await;
    let viewer = app.session_for("viewer@example.com", Role::Viewer).await;
    let month = app
        .post_form_as("/api/teams", "period=2026-01&metric=unblended", &viewer)
        .await;
    assert_eq!(month.status, 200, "{}", month.body);
    assert!(
        month.body.contains("\"from\":\"2026-01-01\",\"to\":\"2026-02-01\""),
        "{}",
        &month.body[..200.min(month.body.len())]
    );
    let range = app
        .post_form_as("/api/teams", "period=2026-01-05..2026-01-12", &viewer)
        .await;
    assert_eq!(range.status, 200);
    let bad = app
        .post_form_as("/api/teams", "period=2026-01-12..2026-01-05", &viewer)
        .await;
    assert_eq!(bad.status, 400);
    assert!(bad.body.contains("end must be after its start"), "{}", bad.body);
    let page = app.get_as("/teams?month=2026-01", &viewer).await;
    assert!(
        page.body.contains("2026-01-01 – 2026-01-31"),
        "the month picker's URL renders that month"
    );
}

#[sqlx::test]
async fn cached_page_data_follows_every_write(pool: PgPool) {
    load_demo(&pool, common::today()).await;
    let app = common::spawn_app(pool.clone()).await;
    let viewer = app.session_for("viewer@example.com", Role::Viewer).await;
    let unassigned_spend = |body: &str| -> String {
        let value: serde_json::Value = serde_json::from_str(body).expect("json");
        value["teams"]
            .as_array()
            .expect("teams")
            .iter()
            .find(|t| t["team"] == "Unassigned")
            .map(|t| t["spend"].to_string())
            .unwrap_or_default()
    };
    let first = app.post_form_as("/api/teams", "period=90d", &viewer).await;
    let again = app.post_form_as("/api/teams", "period=90d", &viewer).await;
    assert_eq!(unassigned_spend(&first.body), unassigned_spend(&again.body));
    // Unmapping a busy project moves its spend to Unassigned at once.
    // As every mapping writer does, the allocation is rewritten in the same transaction.
    let mut tx = pool.begin().await.expect("tx");
    sqlx::query("update projects set team_id = null where name = (select project from daily_project_costs group by 1 order by sum(unblended) desc limit 1)")
        .execute(&mut *tx)
        .await
        .expect("unmap");
    burnrate::allocation::store::refresh_all(&mut tx)
        .await
        .expect("allocated");
    tx.commit().await.expect("commit");
    let after = app.post_form_as("/api/teams", "period=90d", &viewer).await;
    assert_ne!(
        unassigned_spend(&after.body),
        unassigned_spend(&first.body),
        "no stale cache after a mapping change"
    );
}

#[sqlx::test]
async fn a_team_with_hundreds_of_projects_totals_all_of_them(pool: PgPool) {
    use burnrate::costs::store::{CostBatch, CostRow};
    use burnrate::period::DateRange;
    let today = day(2026, 2, 10);
    let row = |project: String, dimension: &str| CostRow {
        account: "111122223333".to_string(),
        day: day(2026, 2, 9),
        project,
        dimension: dimension.into(),
        unblended: Decimal::new(1001, 2),
        amortized: Decimal::new(1001, 2),
        usage_quantity: Decimal::ONE,
        estimated: false,
    };
    let projects: Vec<String> = (0..150).map(|n| format!("p{n:03}")).collect();
    let batch = CostBatch {
        by_user: projects.iter().map(|p| row(p.clone(), "alice")).collect(),
        by_usage_type: projects
            .iter()
            .map(|p| row(p.clone(), "USE1-BoxUsage:g5.xlarge"))
            .collect(),
        by_service: projects
            .iter()
            .map(|p| row(p.clone(), "Amazon Elastic Compute Cloud - Compute"))
            .collect(),
        ..CostBatch::default()
    };
    let mut tx = pool.begin().await.expect("tx");
    burnrate::allocation::facts::replace_window(
        &mut tx,
        DateRange {
            from: day(2026, 2, 9),
            to: today,
        },
        &batch,
    )
    .await
    .expect("write");
    sqlx::query("insert into teams (name) values ('big')")
        .execute(&mut *tx)
        .await
        .expect("team");
    sqlx::query("update projects set team_id = (select id from teams where name = 'big')")
        .execute(&mut *tx)
        .await
        .expect("map");
    burnrate::allocation::store::refresh_all(&mut tx)
        .await
        .expect("allocated");
    tx.commit().await.expect("commit");
    let view = breakdown::scope(
        &pool,
        Scope::Team("big".into()),
        Period::Last30Days,
        Metric::Unblended,
        today,
    )
    .await
    .expect("scope");
    assert_eq!(
        view.total,
        Decimal::new(1001 * 150, 2),
        "all 150 projects, not the 100 listed"
    );
    assert_eq!(view.by_project.len(), 100);
    assert!(view.chart_svg.0.contains("142 other projects"));
}
