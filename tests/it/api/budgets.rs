//! `GET /api/v1/budgets`: each budget's current period, spend, forecast and crossed
//! thresholds; a one-team token reads its team's budgets and its projects' only.

use chrono::Datelike;
use rust_decimal::Decimal;
use sqlx::PgPool;

use super::{ORG, token};
use crate::common::{add_project_costs, import_config, spawn_app, today};
use burnrate::auth::Role;

#[sqlx::test]
async fn budgets_come_with_their_period_figures_and_a_one_team_token_sees_its_own(pool: PgPool) {
    import_config(&pool, ORG).await;
    import_config(
        &pool,
        "budgets:\n  - name: vision monthly\n    scope: {team: vision}\n    period: monthly\n    amount: \"1000\"\n  - name: org annual\n    scope: {org: true}\n    period: annual\n    amount: \"1000000\"\n  - name: train monthly\n    scope: {project: train}\n    period: monthly\n    amount: \"500\"\n",
    )
    .await;
    // $100 a day on a vision project on every day of this month before today.
    let month_start = today().with_day(1).expect("first");
    let days = (today() - month_start).num_days();
    if days > 0 {
        add_project_costs(
            &pool,
            "tracker",
            Some("vision"),
            (month_start, today() - chrono::Days::new(1)),
            "100",
            "100",
        )
        .await;
    }
    let app = spawn_app(pool.clone()).await;
    let all = token(&pool, "viewer@example.com", Role::Viewer, None).await;
    let response = app.api("GET", "/api/v1/budgets", Some(&all), None).await;
    assert_eq!(response.status, 200, "{}", response.body);
    let budgets: Vec<serde_json::Value> = serde_json::from_str(&response.body).expect("json");
    let names: Vec<&str> = budgets.iter().map(|b| b["name"].as_str().expect("name")).collect();
    assert_eq!(names, ["org annual", "train monthly", "vision monthly"]);
    let vision = &budgets[2];
    assert_eq!(vision["scope"], serde_json::json!({"kind": "team", "name": "vision"}));
    assert_eq!(vision["period_from"], month_start.to_string());
    let spend: Decimal = vision["spend"].as_str().expect("spend").parse().expect("decimal");
    assert_eq!(spend, Decimal::from(100 * days), "every day before today at $100");
    let used: Decimal = vision["used"].as_str().expect("used").parse().expect("decimal");
    assert_eq!(used, spend / Decimal::from(1000));
    let forecast: Decimal = vision["forecast"].as_str().expect("forecast").parse().expect("decimal");
    assert!(forecast >= spend, "{forecast} ≥ {spend}");
    // Spend of 50 % or more has crossed the first threshold.
    let crossed = vision["crossed"].as_array().expect("crossed").len();
    assert_eq!(crossed > 0, spend >= Decimal::from(500), "{vision}");

    // Limited to vision: its team's budget only (not the org's, nor ml's project's).
    let limited = token(&pool, "lead@example.com", Role::Lead, Some("vision")).await;
    let response = app.api("GET", "/api/v1/budgets", Some(&limited), None).await;
    let budgets: Vec<serde_json::Value> = serde_json::from_str(&response.body).expect("json");
    let names: Vec<&str> = budgets.iter().map(|b| b["name"].as_str().expect("name")).collect();
    assert_eq!(names, ["vision monthly"]);
    assert_eq!(app.api("GET", "/api/v1/budgets", None, None).await.status, 401);
}
