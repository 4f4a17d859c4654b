//! `POST /api/v1/preflight` at each edge, with amounts worked by hand. No spend is stored in
//! the budget's view (today's row counts for the policy, which reads every day of its period,
//! but a budget reads only days before today), so a budget's forecast is 0 and the estimate
//! alone moves it.

use sqlx::PgPool;

use super::{ORG, token};
use crate::common::{import_config, spawn_app, today};
use burnrate::auth::Role;

async fn verdict(app: &crate::common::TestApp, token: &str, body: &str) -> (String, serde_json::Value) {
    let response = app.api("POST", "/api/v1/preflight", Some(token), Some(body)).await;
    assert_eq!(response.status, 200, "{}", response.body);
    let json: serde_json::Value = serde_json::from_str(&response.body).expect("json");
    (json["verdict"].as_str().expect("verdict").to_string(), json)
}

async fn spend_today(pool: &PgPool, project: &str, amount: &str) {
    sqlx::query(
        "insert into daily_project_costs (day, project, unblended, amortized, gpu_unblended, gpu_amortized, spot_unblended, spot_amortized)
         values ($1, $2, $3::numeric, $3::numeric, 0, 0, 0, 0)
         on conflict (day, project, account_id) do update set unblended = excluded.unblended, amortized = excluded.amortized",
    )
    .bind(today())
    .bind(project)
    .bind(amount)
    .execute(pool)
    .await
    .expect("spend");
}

#[sqlx::test]
async fn a_budget_warns_at_its_lower_thresholds_and_blocks_past_its_amount(pool: PgPool) {
    import_config(&pool, ORG).await;
    let app = spawn_app(pool.clone()).await;
    let viewer = token(&pool, "viewer@example.com", Role::Viewer, None).await;
    let ask = |cost: &str| format!(r#"{{"project": "detector", "estimated_cost_usd": "{cost}"}}"#);
    // $1,000 budget: 499.99 is under 50 %; 500 reaches 50 %; 800 reaches 80 %; 1,000 is the
    // whole amount, not past it; 1,000.01 is past it.
    for (cost, expected) in [
        ("499.99", "allow"),
        ("500", "warn"),
        ("800", "warn"),
        ("1000", "warn"),
        ("1000.01", "block"),
    ] {
        let (got, json) = verdict(&app, &viewer, &ask(cost)).await;
        assert_eq!(got, expected, "{cost}: {json}");
    }
    let (_, json) = verdict(&app, &viewer, &ask("1000.01")).await;
    let budget = &json["budgets"][0];
    assert_eq!(budget["name"], "vision monthly");
    assert_eq!(budget["left_after"], "-0.01");
    assert!(
        json["reasons"][0]
            .as_str()
            .expect("reason")
            .contains("past its $1,000.00"),
        "{json}"
    );
    // The org's default policy ($1,000) warns too once the estimate passes it.
    assert!(
        json["reasons"][1]
            .as_str()
            .expect("reason")
            .contains("would pass its policy limit"),
        "{json}"
    );

    // GPUs priced from the catalogue: 2 × g5.xlarge × 100 h × $1.006 = $201.20.
    let (got, json) = verdict(
        &app,
        &viewer,
        r#"{"project": "detector", "gpu": {"type": "g5.xlarge", "count": 2, "hours": "100"}}"#,
    )
    .await;
    assert_eq!(
        (got.as_str(), json["estimate_usd"].as_str()),
        ("allow", Some("201.200"))
    );
    // SageMaker's price for an ml. type: 1 × ml.g5.xlarge × 10 h × $1.408 = $14.08.
    let (_, json) = verdict(
        &app,
        &viewer,
        r#"{"project": "detector", "gpu": {"type": "ml.g5.xlarge", "count": 1, "hours": "10"}}"#,
    )
    .await;
    assert_eq!(json["estimate_usd"].as_str(), Some("14.080"));
}

#[sqlx::test]
async fn a_policy_blocks_unapproved_overspend_and_past_the_cap_and_a_stop_in_force(pool: PgPool) {
    import_config(&pool, ORG).await;
    let app = spawn_app(pool.clone()).await;
    let admin = token(&pool, "admin@example.com", Role::Admin, None).await;
    let ask = |cost: &str| format!(r#"{{"project": "train", "estimated_cost_usd": "{cost}"}}"#);
    // $1,200 spent against a $1,500 limit: 300 more reaches it, 300.01 passes it.
    spend_today(&pool, "train", "1200").await;
    assert_eq!(verdict(&app, &admin, &ask("300")).await.0, "allow");
    let (got, json) = verdict(&app, &admin, &ask("300.01")).await;
    assert_eq!(got, "warn", "{json}");
    assert_eq!(json["policy"]["spend"], "1200");
    // $1,600 spent, unapproved: blocked whatever the estimate.
    spend_today(&pool, "train", "1600").await;
    let (got, json) = verdict(&app, &admin, &ask("0")).await;
    assert_eq!(got, "block", "{json}");
    assert!(
        json["reasons"][0].as_str().expect("reason").contains("unapproved"),
        "{json}"
    );
    // Approved up to $2,000: allowed to it, warned past it.
    let expires = today() + chrono::Days::new(30);
    import_config(
        &pool,
        &format!("approvals:\n  - project: train\n    approver: cfo@example.com\n    reason: run\n    cap: \"2000.00\"\n    expires: {expires}\n"),
    )
    .await;
    assert_eq!(verdict(&app, &admin, &ask("400")).await.0, "allow");
    assert_eq!(verdict(&app, &admin, &ask("400.01")).await.0, "warn");
    // Approved up to $1,550 only: past the cap now.
    import_config(
        &pool,
        &format!("approvals:\n  - project: train\n    approver: cfo@example.com\n    reason: run\n    cap: \"1550.00\"\n    expires: {expires}\n"),
    )
    .await;
    let (got, json) = verdict(&app, &admin, &ask("0")).await;
    assert_eq!(got, "block");
    assert!(
        json["reasons"][0].as_str().expect("reason").contains("over cap"),
        "{json}"
    );

    // A stop in force blocks even a project under its limit.
    spend_today(&pool, "detector", "10").await;
    let violation: i64 = sqlx::query_scalar(
        "insert into violations (project, period_start, reason, spend, spend_limit)
         values ('detector', $1, 'unapproved', 1, 1) returning id",
    )
    .bind(today())
    .fetch_one(&pool)
    .await
    .expect("violation");
    sqlx::query("insert into enforcement_actions (violation_id, action, mode, status) values ($1, 'stop', 'automatic', 'executed')")
        .bind(violation)
        .execute(&pool)
        .await
        .expect("stop");
    let (got, json) = verdict(&app, &admin, r#"{"project": "detector"}"#).await;
    assert_eq!(got, "block", "{json}");
    assert_eq!(json["policy"]["stop_in_force"], true);
}

#[sqlx::test]
async fn bad_questions_get_a_problem_naming_the_field(pool: PgPool) {
    import_config(&pool, ORG).await;
    let app = spawn_app(pool.clone()).await;
    let admin = token(&pool, "admin@example.com", Role::Admin, None).await;
    for (body, field) in [
        (r#"{}"#, "project"),
        (
            r#"{"project": "detector", "estimated_cost_usd": "5", "gpu": {"type": "g5.xlarge", "count": 1, "hours": "1"}}"#,
            "gpu",
        ),
        (
            r#"{"project": "detector", "gpu": {"type": "z9.huge", "count": 1, "hours": "1"}}"#,
            "gpu.type",
        ),
        (
            r#"{"project": "detector", "gpu": {"type": "g5.xlarge", "count": 0, "hours": "1"}}"#,
            "gpu.count",
        ),
        (
            r#"{"project": "detector", "estimated_cost_usd": "-1"}"#,
            "estimated_cost_usd",
        ),
        (r#"{"project": "train", "team": "vision"}"#, "team"),
        (r#"{"project": "detector", "team": "nobody"}"#, "team"),
        (r#"{"project": "detector", "budget": 5}"#, "budget"),
        (
            r#"{"project": "detector", "estimated_cost_usd": "abc"}"#,
            "estimated_cost_usd",
        ),
        (
            r#"{"project": "detector", "estimated_cost_usd": "1000000000000.01"}"#,
            "estimated_cost_usd",
        ),
        (
            r#"{"project": "detector", "gpu": {"type": "g5.xlarge", "count": 1}}"#,
            "gpu.hours",
        ),
        (
            r#"{"project": "detector", "gpu": {"type": "g5.xlarge", "count": -1, "hours": "1"}}"#,
            "gpu.count",
        ),
        (r#"{"project": "#, "body"),
    ] {
        let response = app.api("POST", "/api/v1/preflight", Some(&admin), Some(body)).await;
        assert_eq!(response.status, 400, "{body}: {}", response.body);
        assert_eq!(response.header("content-type"), "application/problem+json");
        let problem: serde_json::Value = serde_json::from_str(&response.body).expect("json");
        assert_eq!(problem["field"], field, "{body}: {problem}");
        assert_eq!(problem["status"], 400);
    }
}

#[sqlx::test]
async fn a_one_team_token_is_judged_against_the_org_budget_but_reads_none_of_its_figures(pool: PgPool) {
    import_config(&pool, ORG).await;
    crate::common::budgets::save(
        &pool,
        &crate::common::budgets::spec("company cap", ("org", ""), "600", "50\n80", "cfo@example.com"),
    )
    .await;
    let app = spawn_app(pool.clone()).await;
    let vision = token(&pool, "lead@example.com", Role::Lead, Some("vision")).await;
    let everyone = token(&pool, "viewer@example.com", Role::Viewer, None).await;
    let ask = r#"{"project": "detector", "estimated_cost_usd": "700"}"#;

    // An unlimited token sees the org budget it would pass, with its figures.
    let (got, json) = verdict(&app, &everyone, ask).await;
    assert_eq!(got, "block", "{json}");
    assert!(json.to_string().contains("company cap"), "{json}");

    // The one-team token gets the same verdict, its own team's budget with figures, and a
    // reason for the org budget that names neither it nor any amount.
    let (got, json) = verdict(&app, &vision, ask).await;
    assert_eq!(got, "block", "{json}");
    let names: Vec<&str> = json["budgets"]
        .as_array()
        .expect("budgets")
        .iter()
        .map(|b| b["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["vision monthly"], "{json}");
    let hidden: Vec<&str> = json["reasons"]
        .as_array()
        .expect("reasons")
        .iter()
        .filter_map(|r| r.as_str())
        .filter(|r| r.contains("organisation"))
        .collect();
    assert_eq!(hidden.len(), 1, "{json}");
    assert!(!hidden[0].contains('$') && !hidden[0].contains("600"), "{}", hidden[0]);
    assert!(!json.to_string().contains("company cap"), "{json}");
}
