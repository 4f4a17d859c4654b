//! The demo read through `/api/v1` as code reads it: enforcement violations with their
//! actions, savings recommendations with their decisions, and a decision made through the
//! API; each one-team token kept to its team, each role to what it may change.

use std::collections::BTreeSet;

use sqlx::PgPool;

use super::token;
use crate::common::{load_demo, spawn_app, today};
use burnrate::auth::Role;

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).expect("json")
}

#[sqlx::test]
async fn violations_come_with_their_actions_and_a_one_team_token_sees_its_own(pool: PgPool) {
    load_demo(&pool, today()).await;
    // As `serve --demo` does after loading it.
    burnrate::enforcement::evaluate::evaluate(&pool, today())
        .await
        .expect("evaluated");
    let app = spawn_app(pool.clone()).await;
    let viewer = token(&pool, "viewer@example.com", Role::Viewer, None).await;
    let response = app
        .api("GET", "/api/v1/enforcement/violations", Some(&viewer), None)
        .await;
    assert_eq!(response.status, 200, "{}", response.body);
    let all = json(&response.body);
    let all = all.as_array().expect("list");
    let teams: BTreeSet<&str> = all.iter().map(|v| v["team"].as_str().expect("team")).collect();
    assert!(teams.len() >= 2, "the demo's violations span teams: {teams:?}");
    assert!(
        all.iter()
            .all(|v| v["actions"].as_array().is_some_and(|a| !a.is_empty())),
        "each violation lists its actions"
    );
    let stored: i64 = sqlx::query_scalar("select count(*) from violations")
        .fetch_one(&pool)
        .await
        .expect("count");
    assert_eq!(all.len() as i64, stored);

    let vision = token(&pool, "emeka@example.com", Role::Lead, Some("vision")).await;
    let own = json(
        &app.api("GET", "/api/v1/enforcement/violations", Some(&vision), None)
            .await
            .body,
    );
    let own = own.as_array().expect("list");
    assert!(!own.is_empty() && own.iter().all(|v| v["team"] == "vision"), "{own:?}");
}

#[sqlx::test]
async fn recommendations_are_listed_and_decided_by_whoever_may(pool: PgPool) {
    load_demo(&pool, today()).await;
    let app = spawn_app(pool.clone()).await;
    let viewer = token(&pool, "viewer@example.com", Role::Viewer, None).await;
    let response = app
        .api("GET", "/api/v1/savings/recommendations", Some(&viewer), None)
        .await;
    assert_eq!(response.status, 200, "{}", response.body);
    let all = json(&response.body);
    let all = all.as_array().expect("list");
    assert!(!all.is_empty(), "the demo has savings to find");
    assert!(all.iter().all(|o| o["decision"] == "open" && o["can_decide"] == false));
    for o in all {
        let monthly: rust_decimal::Decimal = o["recommendation"]["monthly_saving"]
            .as_str()
            .expect("saving")
            .parse()
            .expect("decimal");
        let compounded: rust_decimal::Decimal = o["recommendation"]["compounded_saving"]
            .as_str()
            .expect("saving")
            .parse()
            .expect("decimal");
        assert!(compounded <= monthly, "{o}");
    }
    // A team's own, by a lead of that team.
    let first = all
        .iter()
        .find(|o| o["recommendation"]["team"] == "ml-research")
        .expect("an ml-research row");
    let key = first["key"].as_str().expect("key");
    let decide =
        serde_json::json!({"key": key, "decision": "accepted", "reason": "moving the sweep to spot"}).to_string();
    let refused = app
        .api("POST", "/api/v1/savings/decisions", Some(&viewer), Some(&decide))
        .await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    let other_lead = token(&pool, "emeka@example.com", Role::Lead, Some("vision")).await;
    assert_eq!(
        app.api("POST", "/api/v1/savings/decisions", Some(&other_lead), Some(&decide))
            .await
            .status,
        403,
        "another team's lead"
    );
    let alice = token(&pool, "alice@example.com", Role::Lead, None).await;
    let done = app
        .api("POST", "/api/v1/savings/decisions", Some(&alice), Some(&decide))
        .await;
    assert_eq!(done.status, 204, "{}", done.body);
    let mine = json(
        &app.api(
            "GET",
            "/api/v1/savings/recommendations?team=ml-research",
            Some(&alice),
            None,
        )
        .await
        .body,
    );
    let mine = mine.as_array().expect("list");
    assert!(mine.iter().all(|o| o["recommendation"]["team"] == "ml-research"));
    let decided = mine.iter().find(|o| o["key"] == key).expect("still listed");
    assert_eq!(
        (decided["decision"].as_str(), decided["reason"].as_str()),
        (Some("accepted"), Some("moving the sweep to spot"))
    );

    // Bad input is named; a one-team token cannot read another team's.
    let bad = app
        .api("GET", "/api/v1/savings/recommendations?kind=magic", Some(&viewer), None)
        .await;
    assert_eq!((bad.status, json(&bad.body)["field"].clone()), (400, "kind".into()));
    let gone = serde_json::json!({"key": "no such key", "decision": "accepted", "reason": "x"}).to_string();
    assert_eq!(
        app.api("POST", "/api/v1/savings/decisions", Some(&alice), Some(&gone))
            .await
            .status,
        404
    );
    let wrong = serde_json::json!({"key": key, "decision": "maybe", "reason": "x"}).to_string();
    let wrong = app
        .api("POST", "/api/v1/savings/decisions", Some(&alice), Some(&wrong))
        .await;
    assert_eq!(
        (wrong.status, json(&wrong.body)["field"].clone()),
        (400, "decision".into()),
        "{}",
        wrong.body
    );
    let elsewhere = app
        .api(
            "GET",
            "/api/v1/savings/recommendations?team=ml-research",
            Some(&other_lead),
            None,
        )
        .await;
    assert_eq!(elsewhere.status, 403);
    let own = json(
        &app.api("GET", "/api/v1/savings/recommendations", Some(&other_lead), None)
            .await
            .body,
    );
    assert!(
        own.as_array()
            .expect("list")
            .iter()
            .all(|o| o["recommendation"]["team"] == "vision")
    );
}
