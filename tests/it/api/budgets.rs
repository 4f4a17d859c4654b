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

fn budget(name: &str, kind: &str, scope: &str, amount: &str) -> String {
    serde_json::json!({
        "name": name,
        "scope": {"kind": kind, "name": scope},
        "period": "monthly",
        "amount": amount,
        "thresholds": [{"percent": "80"}, {"percent": "100", "type": "forecasted", "recipients": ["cfo@example.com"]}],
    })
    .to_string()
}

#[sqlx::test]
async fn budgets_are_made_and_changed_by_whoever_may_with_every_field_checked(pool: PgPool) {
    import_config(&pool, ORG).await;
    let app = spawn_app(pool.clone()).await;
    let lead = token(&pool, "vision-lead@example.com", Role::Lead, None).await;
    let viewer = token(&pool, "viewer@example.com", Role::Viewer, None).await;
    let admin_for_ml = token(&pool, "finance@example.com", Role::Admin, Some("ml")).await;

    let made = app
        .api(
            "POST",
            "/api/v1/budgets",
            Some(&lead),
            Some(&budget("vision gpus", "team", "vision", "2500")),
        )
        .await;
    assert_eq!(made.status, 201, "{}", made.body);
    let made: serde_json::Value = serde_json::from_str(&made.body).expect("json");
    assert_eq!(made["amount"], "2500.00");
    assert_eq!(made["scope"], serde_json::json!({"kind": "team", "name": "vision"}));
    let id = made["id"].as_i64().expect("id");
    let thresholds: Vec<(String, String)> = sqlx::query_as(
        "select t.percent::text, t.kind from budget_thresholds t where t.budget_id = $1 order by t.percent",
    )
    .bind(id)
    .fetch_all(&pool)
    .await
    .expect("thresholds");
    assert_eq!(
        thresholds,
        [
            ("80.00".into(), "actual".into()),
            ("100.00".into(), "forecasted".into())
        ]
    );

    // Another team's, the org's, or any as a viewer: refused.
    for (token, body) in [
        (&lead, budget("ml gpus", "team", "ml", "100")),
        (&lead, budget("everything", "org", "", "100")),
        (&viewer, budget("vision more", "team", "vision", "100")),
        // An admin's token limited to ml acts as ml's lead.
        (&admin_for_ml, budget("vision by ml", "team", "vision", "100")),
    ] {
        let response = app.api("POST", "/api/v1/budgets", Some(token), Some(&body)).await;
        assert_eq!(response.status, 403, "{body}: {}", response.body);
    }
    let ml = app
        .api(
            "POST",
            "/api/v1/budgets",
            Some(&admin_for_ml),
            Some(&budget("ml gpus", "team", "ml", "900")),
        )
        .await;
    assert_eq!(ml.status, 201, "{}", ml.body);
    // Another team's budget cannot be taken over by moving it into the lead's own team.
    let ml_id = serde_json::from_str::<serde_json::Value>(&ml.body).expect("json")["id"].clone();
    let taken = app
        .api(
            "PUT",
            &format!("/api/v1/budgets/{ml_id}"),
            Some(&lead),
            Some(&budget("mine now", "team", "vision", "1")),
        )
        .await;
    assert_eq!(taken.status, 403, "{}", taken.body);

    // Every field's problem is named; nothing is saved.
    let bad =
        serde_json::json!({"name": "", "scope": {"kind": "cluster"}, "period": "weekly", "amount": "-5"}).to_string();
    let refused = app.api("POST", "/api/v1/budgets", Some(&lead), Some(&bad)).await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(refused.body.contains("\"field\":\"name\""), "{}", refused.body);
    for field in ["scope", "period", "amount"] {
        assert!(refused.body.contains(field), "{field}: {}", refused.body);
    }

    // Changed in place; a missing one is 404.
    let path = format!("/api/v1/budgets/{id}");
    let changed = app
        .api(
            "PUT",
            &path,
            Some(&lead),
            Some(&budget("vision gpus", "team", "vision", "3000.50")),
        )
        .await;
    assert_eq!(changed.status, 200, "{}", changed.body);
    assert!(changed.body.contains("\"amount\":\"3000.50\""), "{}", changed.body);
    let moved = app
        .api(
            "PUT",
            &path,
            Some(&lead),
            Some(&budget("vision gpus", "team", "ml", "1")),
        )
        .await;
    assert_eq!(moved.status, 403, "a lead cannot move a budget to another team");
    let missing = app
        .api(
            "PUT",
            "/api/v1/budgets/999999",
            Some(&lead),
            Some(&budget("x", "team", "vision", "1")),
        )
        .await;
    assert_eq!(missing.status, 404);
    // An id that names no budget is 404 whatever the body: the id is read first.
    let not_an_id = app
        .api("PUT", "/api/v1/budgets/abc", Some(&lead), Some("{not json"))
        .await;
    assert_eq!(not_an_id.status, 404, "{}", not_an_id.body);
    assert!(not_an_id.body.contains("no such budget"), "{}", not_an_id.body);
    let count: i64 = sqlx::query_scalar("select count(*) from budgets")
        .fetch_one(&pool)
        .await
        .expect("count");
    assert_eq!(count, 3, "ORG's, vision gpus and ml gpus");
}
