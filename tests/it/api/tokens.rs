//! Who may call `/api/v1`: tokens only, each as its account with a role no higher than the
//! account's, one team's only when limited, refused at once when revoked or expired or its
//! account disabled, and rate-limited. A token never opens a page or a server function.

use sqlx::PgPool;

use super::{ORG, token};
use crate::common::{import_config, spawn_app, spawn_app_with};
use burnrate::auth::Role;
use burnrate::config::Config;

const CHECK: &str = r#"{"project": "detector"}"#;

#[sqlx::test]
async fn each_role_calls_the_api_and_a_one_team_token_sees_its_team_only(pool: PgPool) {
    import_config(&pool, ORG).await;
    let app = spawn_app(pool.clone()).await;
    // Every role may ask for a verdict and list teams: the API reads what the role reads.
    for (email, role) in [
        ("admin@example.com", Role::Admin),
        ("lead@example.com", Role::Lead),
        ("viewer@example.com", Role::Viewer),
    ] {
        let secret = token(&pool, email, role, None).await;
        assert!(secret.starts_with("brt_") && secret.len() > 40, "{secret}");
        let teams = app.api("GET", "/api/v1/teams", Some(&secret), None).await;
        assert_eq!(teams.status, 200, "{email}: {}", teams.body);
        let names: Vec<String> = serde_json::from_str::<Vec<serde_json::Value>>(&teams.body)
            .expect("json")
            .iter()
            .map(|t| t["name"].as_str().expect("name").to_string())
            .collect();
        assert_eq!(names, ["ml", "vision"]);
        // No Origin header, as code sends it: the API never needed one.
        let check = app.api("POST", "/api/v1/preflight", Some(&secret), Some(CHECK)).await;
        assert_eq!(check.status, 200, "{email}: {}", check.body);
    }
    // Limited to vision: its own team only, and never ml's project.
    let vision = token(&pool, "lead@example.com", Role::Lead, Some("vision")).await;
    let teams = app.api("GET", "/api/v1/teams", Some(&vision), None).await;
    assert!(
        teams.body.contains("\"vision\"") && !teams.body.contains("\"ml\""),
        "{}",
        teams.body
    );
    assert_eq!(
        app.api("POST", "/api/v1/preflight", Some(&vision), Some(CHECK))
            .await
            .status,
        200
    );
    let other = app
        .api(
            "POST",
            "/api/v1/preflight",
            Some(&vision),
            Some(r#"{"project": "train"}"#),
        )
        .await;
    assert_eq!(other.status, 403, "{}", other.body);
    assert_eq!(other.header("content-type"), "application/problem+json");
    // A team that does not exist: 403, before anything is said about it.
    let refused = app
        .api(
            "POST",
            "/api/v1/preflight",
            Some(&vision),
            Some(r#"{"team": "no such team"}"#),
        )
        .await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    // A new project, not yet mapped, charged to its own team: allowed to ask.
    let ask = |project: &str| format!(r#"{{"project": "{project}", "team": "vision", "estimated_cost_usd": "700"}}"#);
    let new = app
        .api("POST", "/api/v1/preflight", Some(&vision), Some(&ask("brand-new")))
        .await;
    assert_eq!(new.status, 200, "{}", new.body);
    // Another team's project, and a project no team owns, answer exactly as a project that
    // does not exist (#51): no 403 that tells them apart, no spend, approval or stop of theirs.
    sqlx::query("insert into projects (name) values ('orphan')")
        .execute(&pool)
        .await
        .expect("unmapped project");
    sqlx::query(
        "insert into daily_project_costs (day, project, unblended, amortized, gpu_unblended, gpu_amortized, spot_unblended, spot_amortized)
         values ($1, 'train', 5000, 5000, 0, 0, 0, 0), ($1, 'orphan', 5000, 5000, 0, 0, 0, 0)
         on conflict (day, project, account_id) do update set unblended = 5000, amortized = 5000",
    )
    .bind(crate::common::today())
    .execute(&pool)
    .await
    .expect("their spend");
    for project in ["train", "orphan"] {
        let answer = app
            .api("POST", "/api/v1/preflight", Some(&vision), Some(&ask(project)))
            .await;
        assert_eq!(answer.status, new.status, "{project}: {}", answer.body);
        assert_eq!(answer.body.replace(project, "brand-new"), new.body, "{project}");
    }
}

#[sqlx::test]
async fn missing_unknown_revoked_expired_and_disabled_tokens_are_refused_at_once(pool: PgPool) {
    import_config(&pool, ORG).await;
    let app = spawn_app(pool.clone()).await;
    let secret = token(&pool, "lead@example.com", Role::Lead, None).await;
    let call = |t: Option<String>| {
        let app = &app;
        async move { app.api("GET", "/api/v1/teams", t.as_deref(), None).await }
    };
    let missing = call(None).await;
    assert_eq!(missing.status, 401);
    assert_eq!(missing.header("www-authenticate"), "Bearer realm=\"burnrate\"");
    assert_eq!(call(Some("brt_not-a-token".into())).await.status, 401);
    assert_eq!(call(Some(secret.clone())).await.status, 200);
    // The last use is recorded, the secret is not: only its hash, and the audit names it.
    let (used, stored): (bool, Vec<u8>) =
        sqlx::query_as("select last_used_at is not null, secret_hash from api_tokens where name = 'test all'")
            .fetch_one(&pool)
            .await
            .expect("token row");
    assert!(used);
    use sha2::Digest;
    assert_eq!(
        stored,
        sha2::Sha256::digest(secret.as_bytes()).to_vec(),
        "its SHA-256, nothing more"
    );
    let audit: String = sqlx::query_scalar("select details::text from audit_log where action = 'token.create'")
        .fetch_one(&pool)
        .await
        .expect("audited");
    assert!(!audit.contains(&secret[4..]), "{audit}");

    // Expired: refused.
    sqlx::query("update api_tokens set expires_at = now() - interval '1 second'")
        .execute(&pool)
        .await
        .expect("expired");
    assert_eq!(call(Some(secret.clone())).await.status, 401);
    sqlx::query("update api_tokens set expires_at = now() + interval '1 day'")
        .execute(&pool)
        .await
        .expect("renewed");
    assert_eq!(call(Some(secret.clone())).await.status, 200);
    // The account disabled: refused; enabled again: accepted.
    let actor = burnrate::audit_log::Actor::system("test");
    use burnrate::auth::lifecycle::{Change, apply};
    apply(&pool, &actor, "lead@example.com", Change::Disable)
        .await
        .expect("disabled");
    assert_eq!(call(Some(secret.clone())).await.status, 401);
    apply(&pool, &actor, "lead@example.com", Change::Enable)
        .await
        .expect("enabled");
    assert_eq!(call(Some(secret.clone())).await.status, 200);
    // Revoked: refused on the very next request.
    let revoked = burnrate::auth::tokens::revoke(
        &pool,
        burnrate::auth::tokens::Creator::Operator,
        "lead@example.com",
        "test all",
    )
    .await
    .expect("revoke");
    assert!(revoked);
    assert_eq!(call(Some(secret)).await.status, 401);
}

#[sqlx::test]
async fn a_token_opens_no_page_or_server_function_and_a_session_opens_no_api(pool: PgPool) {
    import_config(&pool, ORG).await;
    let app = spawn_app(pool.clone()).await;
    let secret = token(&pool, "admin@example.com", Role::Admin, None).await;
    let page = app.api("GET", "/budgets", Some(&secret), None).await;
    assert!(
        page.status == 303 || page.status == 307,
        "a page sends to sign-in: {}",
        page.status
    );
    let bearer = format!("Bearer {secret}");
    let server_fn = app
        .post_with(
            "/api/first_steps",
            "",
            &[("origin", &app.origin()), ("authorization", &bearer)],
        )
        .await;
    assert_eq!(server_fn.status, 401, "{}", server_fn.body);
    let session = app.session_for("viewer@example.com", Role::Viewer).await;
    assert_eq!(app.get_as("/api/v1/teams", &session).await.status, 401);
    // `/api/v1/` itself is no API route: it stays behind the session guard.
    assert_eq!(app.api("GET", "/api/v1/", None, None).await.status, 401);
    // The scheme is case-insensitive.
    let upper = app
        .api_authorized("GET", "/api/v1/teams", &format!("BEARER {secret}"))
        .await;
    assert_eq!(upper.status, 200, "{}", upper.body);
    // An unknown API route is a problem too.
    let unknown = app.api("GET", "/api/v1/nothing", Some(&secret), None).await;
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.header("content-type"), "application/problem+json");
}

#[sqlx::test]
async fn each_token_has_its_own_rate_limit_with_retry_after(pool: PgPool) {
    import_config(&pool, ORG).await;
    let config = Config::from_lookup(|k| (k == "BURNRATE_API_RATE_LIMIT").then(|| "3".to_string())).expect("config");
    let app = spawn_app_with(pool.clone(), config).await;
    let first = token(&pool, "admin@example.com", Role::Admin, None).await;
    let second = token(&pool, "viewer@example.com", Role::Viewer, None).await;
    for _ in 0..3 {
        assert_eq!(app.api("GET", "/api/v1/teams", Some(&first), None).await.status, 200);
    }
    let limited = app.api("GET", "/api/v1/teams", Some(&first), None).await;
    assert_eq!(limited.status, 429, "{}", limited.body);
    let retry: u64 = limited.header("retry-after").parse().expect("Retry-After in seconds");
    assert!((1..=60).contains(&retry), "{retry}");
    assert_eq!(limited.header("content-type"), "application/problem+json");
    // Another token is not held back by the first one's use.
    assert_eq!(app.api("GET", "/api/v1/teams", Some(&second), None).await.status, 200);
}

#[sqlx::test]
async fn a_token_is_no_higher_than_its_account_and_a_service_token_needs_an_admin(pool: PgPool) {
    use burnrate::auth::tokens::{Creator, NewToken, create};
    import_config(&pool, ORG).await;
    let lead_id = crate::common::create_account(&pool, "lead@example.com", Role::Lead).await;
    let new = |role: Option<Role>, service: bool, days: u32| NewToken {
        owner_email: "lead@example.com".into(),
        name: format!("t {role:?} {service} {days}"),
        role,
        team: None,
        expires_days: days,
        service,
    };
    let too_high = create(&pool, Creator::Operator, new(Some(Role::Admin), false, 30)).await;
    assert!(too_high.expect_err("refused").to_string().contains("at most lead"));
    let too_long = create(&pool, Creator::Operator, new(None, false, 366)).await;
    assert!(too_long.expect_err("refused").to_string().contains("1 to 365 days"));
    // At the API: a lead's own viewer token works as a viewer.
    let (secret, summary) = create(&pool, Creator::Operator, new(Some(Role::Viewer), false, 365))
        .await
        .expect("created");
    assert_eq!(summary.role, Role::Viewer);
    assert!(summary.hint.starts_with("brt_") && secret.starts_with(&summary.hint));
    // A signed-in lead may not make a service token, nor one for someone else.
    let lead = burnrate::auth::Caller {
        account_id: lead_id,
        email: "lead@example.com".into(),
        display_name: String::new(),
        role: Role::Lead,
        team_ids: Vec::new(),
    };
    let refused = create(&pool, Creator::Caller(&lead), new(None, true, 30)).await;
    assert!(refused.expect_err("refused").to_string().contains("only admins"));
    // A live name is taken; once that token expires, the name is free again.
    let taken = create(&pool, Creator::Operator, new(Some(Role::Viewer), false, 365)).await;
    assert!(
        taken
            .expect_err("refused")
            .to_string()
            .contains("already has a live token")
    );
    sqlx::query("update api_tokens set expires_at = now() - interval '1 second'")
        .execute(&pool)
        .await
        .expect("expired");
    create(&pool, Creator::Operator, new(Some(Role::Viewer), false, 365))
        .await
        .expect("the name is free once its token expired");
}
