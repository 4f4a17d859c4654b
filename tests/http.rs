//! The HTTP surface: health checks, the server-rendered Overview and its server function.

mod common;

use burnrate::costs::period::{Metric, Period};
use burnrate::costs::queries;
use common::{load_demo, spawn_app, today};
use rust_decimal::Decimal;
use sqlx::PgPool;

#[sqlx::test]
async fn healthz_answers_ok(pool: PgPool) {
    let app = spawn_app(pool).await;
    let response = reqwest::get(app.url("/healthz")).await.expect("request");
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().await.expect("body"), "ok");
}

#[sqlx::test]
async fn readyz_is_ready_when_migrations_are_applied(pool: PgPool) {
    let app = spawn_app(pool).await;
    let response = reqwest::get(app.url("/readyz")).await.expect("request");
    assert_eq!(response.status(), 200);
    assert!(response.text().await.expect("body").contains("\"ready\""));
}

#[sqlx::test]
async fn readyz_is_unavailable_when_a_migration_is_missing(pool: PgPool) {
    sqlx::query("delete from _sqlx_migrations")
        .execute(&pool)
        .await
        .expect("forget migrations");
    let app = spawn_app(pool).await;
    let response = reqwest::get(app.url("/readyz")).await.expect("request");
    assert_eq!(response.status(), 503);
    assert!(
        response
            .text()
            .await
            .expect("body")
            .contains("migrations pending")
    );
}

#[sqlx::test]
async fn readyz_is_unavailable_when_the_database_is_gone(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    pool.close().await;
    let response = reqwest::get(app.url("/readyz")).await.expect("request");
    assert_eq!(response.status(), 503);
    assert!(
        response
            .text()
            .await
            .expect("body")
            .contains("database unreachable")
    );
}

#[sqlx::test]
async fn overview_is_rendered_on_the_server_with_every_team_and_escaped_tags(pool: PgPool) {
    load_demo(&pool, today()).await;
    let app = spawn_app(pool.clone()).await;
    let html = reqwest::get(app.url("/?period=30d"))
        .await
        .expect("request")
        .text()
        .await
        .expect("body");

    let overview = queries::overview(&pool, Period::Last30Days, Metric::Unblended, today())
        .await
        .expect("query");
    for team in &overview.teams {
        assert!(
            html.contains(&format!("data-value=\"{}\"", team.spend)),
            "team {} missing",
            team.team
        );
    }
    assert!(html.contains("ml-research"));
    assert!(
        html.contains("/pkg/burnrate.js"),
        "hydration script is linked"
    );
    assert!(
        !html.contains("<img src=x"),
        "a tag value reached the page unescaped"
    );
}

#[sqlx::test]
async fn overview_without_data_says_how_to_load_some(pool: PgPool) {
    let app = spawn_app(pool).await;
    let html = reqwest::get(app.url("/"))
        .await
        .expect("request")
        .text()
        .await
        .expect("body");
    assert!(html.contains("No cost data yet"));
    assert!(html.contains("burnrate serve --demo"));
}

#[sqlx::test]
async fn unknown_pages_are_404(pool: PgPool) {
    let app = spawn_app(pool).await;
    let response = reqwest::get(app.url("/no/such/page"))
        .await
        .expect("request");
    assert_eq!(response.status(), 404);
}

#[sqlx::test]
async fn the_overview_server_function_rejects_an_unknown_period(pool: PgPool) {
    let app = spawn_app(pool).await;
    let response = reqwest::Client::new()
        .post(app.url("/api/overview"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("period=1%27%20or%201%3D1")
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), 400);
    assert!(
        response
            .text()
            .await
            .expect("body")
            .contains("expected one of mtd, prev, 30d, 90d")
    );
}

#[sqlx::test]
async fn the_overview_server_function_answers_with_the_period_figures(pool: PgPool) {
    load_demo(&pool, today()).await;
    let app = spawn_app(pool.clone()).await;
    let response = reqwest::Client::new()
        .post(app.url("/api/overview"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("period=prev&metric=amortized")
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), 200);
    let body = response.text().await.expect("body");
    let expected = queries::overview(&pool, Period::PreviousMonth, Metric::Amortized, today())
        .await
        .expect("query");
    assert!(body.contains(&expected.total.to_string()), "{body}");
    assert!(expected.total > Decimal::ZERO);
}
