//! `GET /api/v1/approvals`: spend against the cap and the days left, worked by hand; a
//! one-team token sees its team's projects' approvals only.

use rust_decimal::Decimal;
use sqlx::PgPool;

use super::{ORG, token};
use crate::common::{import_config, spawn_app, today};
use burnrate::auth::Role;

#[sqlx::test]
async fn approvals_show_spend_against_the_cap_and_the_days_left(pool: PgPool) {
    import_config(&pool, ORG).await;
    let expires = today() + chrono::Days::new(9);
    import_config(
        &pool,
        &format!(
            "approvals:\n  - project: train\n    approver: cfo@example.com\n    reason: \"Q4 run\"\n    cap: \"2000.00\"\n    expires: {expires}\n  - project: detector\n    approver: cfo@example.com\n    reason: demo\n    cap: \"100.00\"\n    expires: {expires}\n"
        ),
    )
    .await;
    // $1,500 of train's spend today, in its ($1,500, monthly) policy's current period.
    sqlx::query(
        "insert into daily_project_costs (day, project, unblended, amortized, gpu_unblended, gpu_amortized, spot_unblended, spot_amortized)
         values ($1, 'train', 1500, 1500, 0, 0, 0, 0)",
    )
    .bind(today())
    .execute(&pool)
    .await
    .expect("spend");
    let app = spawn_app(pool.clone()).await;
    let viewer = token(&pool, "viewer@example.com", Role::Viewer, None).await;
    let response = app.api("GET", "/api/v1/approvals", Some(&viewer), None).await;
    assert_eq!(response.status, 200, "{}", response.body);
    let list: Vec<serde_json::Value> = serde_json::from_str(&response.body).expect("json");
    assert_eq!(list.len(), 2);
    let train = list.iter().find(|a| a["project"] == "train").expect("train");
    assert_eq!(train["team"], "ml");
    assert_eq!(train["spend"], "1500");
    // 1,500 of 2,000: 0.75. Today and the nine days after it: 10 days left.
    let used: Decimal = train["used"].as_str().expect("used").parse().expect("decimal");
    assert_eq!(used, Decimal::new(75, 2));
    assert_eq!(train["days_left"], 10);
    // Limited to vision: detector's approval only.
    let limited = token(&pool, "lead@example.com", Role::Lead, Some("vision")).await;
    let response = app.api("GET", "/api/v1/approvals", Some(&limited), None).await;
    let list: Vec<serde_json::Value> = serde_json::from_str(&response.body).expect("json");
    let projects: Vec<&str> = list.iter().map(|a| a["project"].as_str().expect("project")).collect();
    assert_eq!(projects, ["detector"]);
}
