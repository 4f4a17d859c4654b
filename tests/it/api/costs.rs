//! `GET /api/v1/costs`: the export's rows as JSON, a page at a time. Paging by cursor neither
//! repeats nor skips a row; a one-team token reads its team's spend only; credits come off
//! (net) or stay out (gross); every bad parameter is named.

use rust_decimal::Decimal;
use sqlx::PgPool;

use super::{ORG, token};
use crate::common::{add_project_costs, day, import_config, reallocate, spawn_app};
use burnrate::auth::Role;

/// vision's `tracker` at $100 a day and ml's `trainer` at $50, October 1st to 5th; tracker's
/// October 1st carries a $20 credit (so it nets $80).
async fn seed(pool: &PgPool) {
    import_config(pool, ORG).await;
    let days = (day(2026, 10, 1), day(2026, 10, 5));
    add_project_costs(pool, "tracker", Some("vision"), days, "100", "100").await;
    add_project_costs(pool, "trainer", Some("ml"), days, "50", "50").await;
    sqlx::query(
        "update daily_project_costs set unblended = unblended - 20, amortized = amortized - 20,
             credit_unblended = -20, credit_amortized = -20
         where project = 'tracker' and day = '2026-10-01'",
    )
    .execute(pool)
    .await
    .expect("credit");
    reallocate(pool).await;
    // The same spend in the project × record type grain: usage, and tracker's credit.
    sqlx::query(
        "insert into costs_by_record_type (day, project, record_type, unblended, amortized, usage_quantity, estimated)
         select day, project, 'Usage', unblended - credit_unblended, amortized - credit_amortized, 1, false
         from daily_project_costs
         union all
         select day, project, 'Credit', credit_unblended, credit_amortized, 0, false
         from daily_project_costs where credit_unblended <> 0",
    )
    .execute(pool)
    .await
    .expect("record types");
    // And in the project × service grain, where a credit is a line of its own service.
    sqlx::query(
        "insert into costs_by_service (day, project, service, unblended, amortized, usage_quantity, estimated)
         select day, project, 'Amazon SageMaker', unblended - credit_unblended, amortized - credit_amortized, 1, false
         from daily_project_costs
         union all
         select day, project, 'Credits', credit_unblended, credit_amortized, 0, false
         from daily_project_costs where credit_unblended <> 0",
    )
    .execute(pool)
    .await
    .expect("services");
}

fn rows(body: &str) -> (Vec<serde_json::Value>, Option<String>) {
    let page: serde_json::Value = serde_json::from_str(body).expect("json");
    (
        page["rows"].as_array().expect("rows").clone(),
        page["next_cursor"].as_str().map(str::to_string),
    )
}

fn sum(rows: &[serde_json::Value]) -> Decimal {
    rows.iter()
        .map(|r| r["cost"].as_str().expect("cost").parse::<Decimal>().expect("decimal"))
        .sum()
}

#[sqlx::test]
async fn pages_follow_each_other_without_a_repeat_or_a_gap(pool: PgPool) {
    seed(&pool).await;
    let app = spawn_app(pool.clone()).await;
    let viewer = token(&pool, "viewer@example.com", Role::Viewer, None).await;
    let base = "/api/v1/costs?from=2026-10-01&to=2026-10-06&group_by=team,project";
    let mut all = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let path = match &cursor {
            None => format!("{base}&limit=3"),
            Some(c) => format!("{base}&limit=3&cursor={c}"),
        };
        let response = app.api("GET", &path, Some(&viewer), None).await;
        assert_eq!(response.status, 200, "{}", response.body);
        let (page, next) = rows(&response.body);
        assert!(page.len() <= 3);
        all.extend(page);
        pages += 1;
        match next {
            Some(next) if pages < 10 => cursor = Some(next),
            _ => break,
        }
    }
    // Two projects on five days: ten rows, in four pages of 3, 3, 3 and 1.
    assert_eq!((all.len(), pages), (10, 4));
    let keys: Vec<(String, String, String)> = all
        .iter()
        .map(|r| {
            let text = |v: &serde_json::Value| v.as_str().expect("text").to_string();
            (text(&r["date"]), text(&r["keys"]["team"]), text(&r["keys"]["project"]))
        })
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(keys, sorted, "sorted by date then keys, no row twice");
    assert_eq!(all[0]["keys"], serde_json::json!({"team": "ml", "project": "trainer"}));
    // 5 × 50 + 5 × 100 − the $20 credit.
    assert_eq!(sum(&all), Decimal::from(730));

    // Before credits: the $20 is back; monthly: one row per team and project.
    let gross = app
        .api(
            "GET",
            &format!("{base}&credits=gross&granularity=monthly"),
            Some(&viewer),
            None,
        )
        .await;
    let (gross, next) = rows(&gross.body);
    assert_eq!((gross.len(), next), (2, None));
    assert!(gross.iter().all(|r| r["date"] == "2026-10-01"));
    assert_eq!(sum(&gross), Decimal::from(750));

    // Projects alone, before credits: read from the record-type grain, which knows the credit.
    let projects = "/api/v1/costs?from=2026-10-01&to=2026-10-06&group_by=project";
    let (gross, _) = rows(
        &app.api("GET", &format!("{projects}&credits=gross"), Some(&viewer), None)
            .await
            .body,
    );
    assert_eq!(sum(&gross), Decimal::from(750), "{gross:?}");
    let (net, _) = rows(&app.api("GET", projects, Some(&viewer), None).await.body);
    assert_eq!(
        sum(&net),
        Decimal::from(730),
        "the costs_by_service grain, net as billed: {net:?}"
    );

    // A token limited to vision reads vision's spend only, by team or by its projects.
    let vision = token(&pool, "vision-lead@example.com", Role::Lead, Some("vision")).await;
    let (own, _) = rows(&app.api("GET", base, Some(&vision), None).await.body);
    assert_eq!(own.len(), 5);
    assert!(own.iter().all(|r| r["keys"]["team"] == "vision"));
    assert_eq!(sum(&own), Decimal::from(480));
    let (own, _) = rows(&app.api("GET", projects, Some(&vision), None).await.body);
    assert!(own.iter().all(|r| r["keys"]["project"] == "tracker"), "{own:?}");
    assert_eq!(sum(&own), Decimal::from(480), "through the project's team: {own:?}");
}

#[sqlx::test]
async fn each_bad_parameter_is_named(pool: PgPool) {
    seed(&pool).await;
    let app = spawn_app(pool.clone()).await;
    let viewer = token(&pool, "viewer@example.com", Role::Viewer, None).await;
    let base = "/api/v1/costs?from=2026-10-01&to=2026-10-06";
    for (query, field) in [
        ("&group_by=cluster", "group_by"),
        ("&group_by=user,service", "group_by"),
        ("&group_by=team&limit=0", "limit"),
        ("&group_by=team&limit=10001", "limit"),
        ("&group_by=team&cursor=bm90LWEtY3Vyc29y", "cursor"),
        ("&group_by=user&credits=gross", "credits"),
        ("&group_by=team&metric=blended", "metric"),
        ("&group_by=team&account=12", "account"),
    ] {
        let response = app.api("GET", &format!("{base}{query}"), Some(&viewer), None).await;
        assert_eq!(response.status, 400, "{query}: {}", response.body);
        assert_eq!(response.header("content-type"), "application/problem+json");
        let problem: serde_json::Value = serde_json::from_str(&response.body).expect("json");
        assert_eq!(problem["field"], field, "{query}: {}", response.body);
    }
    let missing = app
        .api("GET", "/api/v1/costs?to=2026-10-06&group_by=team", Some(&viewer), None)
        .await;
    assert_eq!(missing.status, 400);
    assert!(missing.body.contains("\"field\":\"from\""), "{}", missing.body);
    // A cursor from another grouping is refused, not misread.
    let (_, next) = rows(
        &app.api(
            "GET",
            &format!("{base}&group_by=team,project&limit=1"),
            Some(&viewer),
            None,
        )
        .await
        .body,
    );
    let other = app
        .api(
            "GET",
            &format!("{base}&group_by=team&cursor={}", next.expect("more")),
            Some(&viewer),
            None,
        )
        .await;
    assert_eq!(other.status, 400, "{}", other.body);
}
