//! Sign-in, sessions, roles, cross-site refusal, rate limits and security headers over HTTP.

use crate::common;

use crate::common::{PASSWORD, TestApp, create_account, encode, spawn_app, spawn_app_with};
use burnrate::auth::Role;
use burnrate::config::Config;
use sqlx::PgPool;

fn login_body(email: &str, password: &str) -> String {
    format!("email={}&password={}", encode(email), encode(password))
}

async fn count(pool: &PgPool, sql: &str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(pool).await.expect("count")
}

#[sqlx::test]
async fn pages_redirect_to_sign_in_and_apis_refuse_without_a_session(pool: PgPool) {
    let app = spawn_app(pool).await;
    let page = app.get("/?period=prev").await;
    assert_eq!(page.status, 303);
    assert_eq!(page.header("location"), "/login?next=/%3Fperiod%3Dprev");
    for path in [
        "/api/overview",
        "/api/admin/accounts",
        "/api/admin/audit",
        "/api/change_password",
    ] {
        let response = app.post_form(path, "").await;
        assert_eq!(response.status, 401, "{path}");
    }
    assert_eq!(app.get("/admin/users").await.status, 303);
    assert_eq!(app.get("/login").await.status, 200);
    assert_eq!(app.get("/healthz").await.status, 200);
}

#[sqlx::test]
async fn sign_in_sets_a_strict_cookie_and_rotates_the_session(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    create_account(&pool, "lena@example.com", Role::Viewer).await;
    let response = app
        .post_form("/api/login", &login_body("Lena@Example.com ", PASSWORD))
        .await;
    assert!(response.status < 400, "{}", response.body);
    let set_cookie = response.header("set-cookie");
    for attribute in ["HttpOnly", "SameSite=Lax", "Path=/", "Max-Age=604800"] {
        assert!(set_cookie.contains(attribute), "{set_cookie}");
    }
    assert!(!set_cookie.contains("Secure"), "plain http needs no Secure flag");
    let first = response.session_cookie().expect("cookie");
    assert_eq!(app.get_as("/", &first).await.status, 200);

    // Signing in again from the same browser ends the old session.
    let again = app
        .post_with(
            "/api/login",
            &login_body("lena@example.com", PASSWORD),
            &[("origin", &app.origin()), ("cookie", &first)],
        )
        .await;
    let second = again.session_cookie().expect("a new cookie");
    assert_ne!(first, second);
    assert_eq!(
        app.get_as("/", &first).await.status,
        303,
        "the old session id no longer works"
    );
    assert_eq!(app.get_as("/", &second).await.status, 200);
    assert_eq!(count(&pool, "select count(*) from sessions").await, 1);
}

#[sqlx::test]
async fn the_cookie_is_secure_when_the_public_url_is_https(pool: PgPool) {
    let config = Config::from_lookup(|k| (k == "BURNRATE_PUBLIC_URL").then(|| "https://costs.example.com".into()))
        .expect("config");
    let app = spawn_app_with(pool.clone(), config).await;
    create_account(&pool, "sec@example.com", Role::Viewer).await;
    let response = app
        .post_with(
            "/api/login",
            &login_body("sec@example.com", PASSWORD),
            &[("origin", "https://costs.example.com")],
        )
        .await;
    assert!(
        response.header("set-cookie").contains("; Secure"),
        "{}",
        response.header("set-cookie")
    );
    let own_host = app
        .post_form("/api/login", &login_body("sec@example.com", PASSWORD))
        .await;
    assert_eq!(
        own_host.status, 403,
        "only the public origin counts once it is configured"
    );
    // Served over https: browsers are told to refuse plain http.
    assert_eq!(
        app.get("/login").await.header("strict-transport-security"),
        "max-age=31536000; includeSubDomains"
    );
    let plain = spawn_app(pool.clone()).await;
    assert_eq!(plain.get("/login").await.header("strict-transport-security"), "");
}

#[sqlx::test]
async fn a_wrong_email_and_a_wrong_password_get_the_same_answer(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    create_account(&pool, "known@example.com", Role::Viewer).await;
    let wrong_password = app
        .post_form("/api/login", &login_body("known@example.com", "not the password"))
        .await;
    let unknown_email = app
        .post_form("/api/login", &login_body("nobody@example.com", PASSWORD))
        .await;
    assert_eq!(wrong_password.status, 401);
    assert_eq!(
        (wrong_password.status, &wrong_password.body),
        (unknown_email.status, &unknown_email.body)
    );
    assert_eq!(
        wrong_password.body, "\"SignInFailed\"",
        "shown as: email or password is incorrect"
    );
    assert!(wrong_password.session_cookie().is_none());
}

#[sqlx::test]
async fn repeated_failures_lock_the_account_but_not_others(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    create_account(&pool, "target@example.com", Role::Viewer).await;
    create_account(&pool, "bystander@example.com", Role::Viewer).await;
    for _ in 0..5 {
        assert_eq!(
            app.post_form("/api/login", &login_body("target@example.com", "guess guess guess"))
                .await
                .status,
            401
        );
    }
    let locked = app
        .post_form("/api/login", &login_body("target@example.com", PASSWORD))
        .await;
    assert_eq!(locked.status, 429, "even the right password waits out the window");
    assert!(locked.body.contains("too many failed sign-ins"));
    app.sign_in("bystander@example.com", PASSWORD).await;
}

#[sqlx::test]
async fn repeated_failures_from_one_address_are_limited_across_emails(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    create_account(&pool, "real@example.com", Role::Viewer).await;
    for i in 0..20 {
        let response = app
            .post_form(
                "/api/login",
                &login_body(&format!("spray{i}@example.com"), "password spraying"),
            )
            .await;
        assert_eq!(response.status, 401);
    }
    assert_eq!(
        app.post_form("/api/login", &login_body("real@example.com", PASSWORD))
            .await
            .status,
        429
    );
}

#[sqlx::test]
async fn logout_ends_the_session_on_the_server(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    let cookie = app.session_for("out@example.com", Role::Viewer).await;
    let response = app.post_form_as("/api/logout", "", &cookie).await;
    assert!(response.status < 400);
    assert!(response.header("set-cookie").contains("Max-Age=0"));
    assert_eq!(count(&pool, "select count(*) from sessions").await, 0);
    assert_eq!(
        app.post_form_as("/api/overview", "", &cookie).await.status,
        401,
        "a copied cookie is dead too"
    );
}

#[sqlx::test]
async fn idle_and_absolute_expiry_end_sessions(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    let idle = app.session_for("idle@example.com", Role::Viewer).await;
    let old = app.session_for("old@example.com", Role::Viewer).await;
    assert_eq!(app.get_as("/", &idle).await.status, 200);
    sqlx::query(
        "update sessions set last_seen_at = now() - interval '13 hours'
         where account_id = (select id from accounts where email = 'idle@example.com')",
    )
    .execute(&pool)
    .await
    .expect("age the session");
    sqlx::query(
        "update sessions set expires_at = now() - interval '1 second'
         where account_id = (select id from accounts where email = 'old@example.com')",
    )
    .execute(&pool)
    .await
    .expect("expire the session");
    assert_eq!(app.get_as("/", &idle).await.status, 303, "idle past 12h");
    assert_eq!(app.get_as("/", &old).await.status, 303, "past its absolute expiry");
}

#[sqlx::test]
async fn cross_site_requests_are_refused_before_anything_changes(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    let admin = app.session_for("admin@example.com", Role::Admin).await;
    let body = "email=planted%40evil.example&display_name=x&role=admin&password=planted+password+123";
    for headers in [
        vec![("origin", "http://evil.example"), ("cookie", admin.as_str())],
        vec![("referer", "http://evil.example/page"), ("cookie", admin.as_str())],
        vec![("origin", "null"), ("cookie", admin.as_str())],
        vec![("cookie", admin.as_str())],
    ] {
        let response = app.post_with("/api/admin/create_account", body, &headers).await;
        assert_eq!(response.status, 403, "{headers:?}");
        assert_eq!(response.body, "cross-site request refused");
    }
    assert_eq!(
        count(
            &pool,
            "select count(*) from accounts where email = 'planted@evil.example'"
        )
        .await,
        0
    );
    let cross_site_login = app
        .post_with(
            "/api/login",
            &login_body("admin@example.com", PASSWORD),
            &[("origin", "http://evil.example")],
        )
        .await;
    assert_eq!(cross_site_login.status, 403, "login CSRF is refused too");
}

/// Every admin-only server function, with a body that would succeed for an admin.
fn admin_functions(viewer_id: i64) -> Vec<(&'static str, String)> {
    vec![
        ("/api/admin/accounts", String::new()),
        ("/api/admin/audit", String::new()),
        (
            "/api/admin/create_account",
            "email=new%40example.com&display_name=New&role=viewer&password=a+long+enough+pw".into(),
        ),
        ("/api/admin/set_role", format!("account_id={viewer_id}&role=lead")),
        (
            "/api/admin/reset_password",
            format!("account_id={viewer_id}&password=another+long+password"),
        ),
        (
            "/api/project/workload/save",
            "project=llm-serving&workload=serving&params_b=7&precision=bf16".into(),
        ),
        (
            "/api/allocation/rules/preview",
            "name=Untagged&selector=untagged&split=even&teams=ml-research".into(),
        ),
        (
            "/api/allocation/rules/save",
            "name=Untagged&selector=untagged&split=even&teams=ml-research".into(),
        ),
        // After the save above: moves the rule it made (already first).
        ("/api/allocation/rules/change", "name=Untagged&action=up".into()),
        // After create_account above: disables the account it made.
        (
            "/api/admin/account_lifecycle",
            "email=new%40example.com&step=disable".into(),
        ),
    ]
}

#[sqlx::test]
async fn every_admin_function_refuses_viewers_and_leads_and_serves_admins(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    sqlx::query("insert into teams (name) values ('ml-research')")
        .execute(&pool)
        .await
        .expect("team");
    sqlx::query("insert into team_owners (team_id, email) select id, 'lead@example.com' from teams")
        .execute(&pool)
        .await
        .expect("owner");
    let viewer = app.session_for("viewer@example.com", Role::Viewer).await;
    let lead = app.session_for("lead@example.com", Role::Lead).await;
    let admin = app.session_for("admin@example.com", Role::Admin).await;
    let viewer_id: i64 = sqlx::query_scalar("select id from accounts where email = 'viewer@example.com'")
        .fetch_one(&pool)
        .await
        .expect("id");

    for (path, body) in admin_functions(viewer_id) {
        assert_eq!(app.post_form(path, &body).await.status, 401, "anonymous {path}");
        for (who, cookie) in [("viewer", &viewer), ("lead of ml-research", &lead)] {
            let response = app.post_form_as(path, &body, cookie).await;
            assert_eq!(response.status, 403, "{who} {path}: {}", response.body);
        }
    }
    assert_eq!(
        count(&pool, "select count(*) from accounts where email = 'new@example.com'").await,
        0
    );
    assert_eq!(
        count(&pool, "select count(*) from accounts where role = 'lead'").await,
        1
    );

    for (path, body) in admin_functions(viewer_id) {
        let response = app.post_form_as(path, &body, &admin).await;
        assert_eq!(response.status, 200, "admin {path}: {}", response.body);
    }
    assert_eq!(
        count(&pool, "select count(*) from accounts where email = 'new@example.com'").await,
        1
    );
}

#[sqlx::test]
async fn a_lead_is_told_which_teams_it_owns(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    sqlx::query("insert into teams (name) values ('vision'), ('speech')")
        .execute(&pool)
        .await
        .expect("teams");
    sqlx::query(
        "insert into team_owners (team_id, email) select id, 'Emeka@Example.com' from teams where name = 'vision'",
    )
    .execute(&pool)
    .await
    .expect("owner");
    let lead = app.session_for("emeka@example.com", Role::Lead).await;
    let me = app.post_form_as("/api/me", "", &lead).await;
    let vision: i64 = sqlx::query_scalar("select id from teams where name = 'vision'")
        .fetch_one(&pool)
        .await
        .expect("id");
    assert!(me.body.contains(&format!("\"team_ids\":[{vision}]")), "{}", me.body);
}

#[sqlx::test]
async fn setup_works_only_while_no_admin_exists(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    assert!(app.post_form("/api/setup_needed", "").await.body.contains("true"));
    let body = "email=first%40example.com&display_name=First&password=first+admin+password&password_confirm=first+admin+password";
    let first = app.post_form("/api/setup", body).await;
    assert!(first.status < 400, "{}", first.body);
    let cookie = first.session_cookie().expect("setup signs the admin in");
    assert_eq!(app.post_form_as("/api/admin/accounts", "", &cookie).await.status, 200);

    let second = app
        .post_form("/api/setup", &body.replace("first%40", "second%40"))
        .await;
    assert_eq!(second.status, 403);
    assert!(second.body.contains("setup is complete"));
    assert_eq!(count(&pool, "select count(*) from accounts").await, 1);
    assert!(app.post_form("/api/setup_needed", "").await.body.contains("false"));
}

#[sqlx::test]
async fn account_changes_are_audited_and_the_log_is_append_only(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    let admin = app.session_for("admin@example.com", Role::Admin).await;
    let created = app
        .post_form_as(
            "/api/admin/create_account",
            "email=amy%40example.com&display_name=Amy&role=viewer&password=amy+long+password",
            &admin,
        )
        .await;
    assert_eq!(created.status, 200, "{}", created.body);
    let amy: i64 = sqlx::query_scalar("select id from accounts where email = 'amy@example.com'")
        .fetch_one(&pool)
        .await
        .expect("id");
    app.post_form_as("/api/admin/set_role", &format!("account_id={amy}&role=lead"), &admin)
        .await;
    app.post_form_as(
        "/api/admin/reset_password",
        &format!("account_id={amy}&password=brand+new+password"),
        &admin,
    )
    .await;

    let log: Vec<(String, String, String)> =
        sqlx::query_as("select actor, action, subject from audit_log where actor = 'admin@example.com' order by id")
            .fetch_all(&pool)
            .await
            .expect("log");
    let expected = [("account.create"), ("account.set_role"), ("account.reset_password")];
    assert_eq!(log.iter().map(|(_, a, _)| a.as_str()).collect::<Vec<_>>(), expected);
    assert!(log.iter().all(|(_, _, subject)| subject == "amy@example.com"));

    let listed = app.post_form_as("/api/admin/audit", "", &admin).await;
    assert!(listed.body.contains("account.reset_password"));
    assert!(
        sqlx::query("delete from audit_log").execute(&pool).await.is_err(),
        "entries cannot be deleted"
    );
    assert!(
        sqlx::query("update audit_log set actor = 'x'")
            .execute(&pool)
            .await
            .is_err(),
        "entries cannot be edited"
    );
}

#[sqlx::test]
async fn the_last_admin_cannot_be_demoted_and_passwords_follow_the_policy(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    let admin = app.session_for("admin@example.com", Role::Admin).await;
    let id: i64 = sqlx::query_scalar("select id from accounts")
        .fetch_one(&pool)
        .await
        .expect("id");
    let demote = app
        .post_form_as("/api/admin/set_role", &format!("account_id={id}&role=viewer"), &admin)
        .await;
    assert_eq!(demote.status, 400);
    assert!(demote.body.contains("last admin"));
    let short = app
        .post_form_as(
            "/api/admin/create_account",
            "email=s%40example.com&display_name=&role=viewer&password=short",
            &admin,
        )
        .await;
    assert_eq!(short.status, 400);
    assert!(short.body.contains("at least 12 characters"));
    let bad_email = app
        .post_form_as(
            "/api/admin/create_account",
            "email=not-an-email&display_name=&role=viewer&password=long+enough+password",
            &admin,
        )
        .await;
    assert_eq!(bad_email.status, 400);
    let duplicate = app
        .post_form_as(
            "/api/admin/create_account",
            "email=ADMIN%40example.com&display_name=&role=viewer&password=long+enough+password",
            &admin,
        )
        .await;
    assert_eq!(duplicate.status, 400);
    assert!(duplicate.body.contains("already exists"));
}

#[sqlx::test]
async fn changing_your_password_needs_the_current_one_and_ends_other_sessions(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    let here = app.session_for("me@example.com", Role::Viewer).await;
    let elsewhere = app.sign_in("me@example.com", PASSWORD).await;
    let wrong = app
        .post_form_as(
            "/api/change_password",
            "current=wrong&password=my+new+password&password_confirm=my+new+password",
            &here,
        )
        .await;
    assert_eq!(wrong.status, 400);
    let body = format!(
        "current={}&password=my+new+password&password_confirm=my+new+password",
        encode(PASSWORD)
    );
    assert_eq!(app.post_form_as("/api/change_password", &body, &here).await.status, 200);
    assert_eq!(app.get_as("/", &here).await.status, 200, "this session stays");
    assert_eq!(app.get_as("/", &elsewhere).await.status, 303, "the other session ended");
    app.sign_in("me@example.com", "my new password").await;
}

#[sqlx::test]
async fn pages_and_apis_carry_security_headers_and_a_nonce_only_script_policy(pool: PgPool) {
    let app = spawn_app(pool).await;
    let page = app.get("/login").await;
    let csp = page.header("content-security-policy");
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    let nonce = csp
        .split("'nonce-")
        .nth(1)
        .and_then(|rest| rest.split('\'').next())
        .expect("a script nonce");
    assert!(
        page.body
            .contains(&format!("<script type=\"module\" nonce=\"{nonce}\">")),
        "the hydration script carries the nonce"
    );
    let inline_scripts = page.body.matches("<script").count();
    assert_eq!(
        inline_scripts,
        page.body
            .matches(&format!("nonce=\"{nonce}\""))
            .count()
            .min(inline_scripts)
    );
    assert_eq!(page.header("x-content-type-options"), "nosniff");
    assert_eq!(page.header("referrer-policy"), "same-origin");
    assert_eq!(page.header("x-frame-options"), "DENY");
    let second = app.get("/login").await;
    assert_ne!(
        second.header("content-security-policy"),
        csp,
        "a fresh nonce per response"
    );

    let api = app.post_form("/api/setup_needed", "").await;
    assert!(api.header("content-security-policy").starts_with("default-src 'none'"));
    assert_eq!(api.header("x-content-type-options"), "nosniff");
}

#[sqlx::test]
async fn markup_in_names_and_tags_is_escaped(pool: PgPool) {
    let app: TestApp = spawn_app(pool.clone()).await;
    let admin = app.session_for("admin@example.com", Role::Admin).await;
    let body = "email=x%40example.com&display_name=%3Cscript%3Ealert(1)%3C%2Fscript%3E&role=viewer&password=long+enough+password";
    assert_eq!(
        app.post_form_as("/api/admin/create_account", body, &admin).await.status,
        200
    );
    sqlx::query("insert into teams (name) values ('<img src=x onerror=alert(1)>')")
        .execute(&pool)
        .await
        .expect("team");
    sqlx::query("insert into projects (name, team_id) select '\"><svg onload=alert(1)>', id from teams")
        .execute(&pool)
        .await
        .expect("hostile project");
    sqlx::query("insert into daily_project_costs values (current_date, '\"><svg onload=alert(1)>', 5, 5, 0, 0, 0, 0)")
        .execute(&pool)
        .await
        .expect("hostile costs");
    let users = app.get_as("/admin/users", &admin).await.body;
    assert!(!users.contains("<script>alert(1)</script>"), "display name unescaped");
    assert!(users.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    let overview = app.get_as("/", &admin).await.body;
    assert!(!overview.contains("<img src=x onerror"), "team name unescaped");
    assert!(overview.contains("&lt;img src=x onerror=alert(1)&gt;"));
}

#[sqlx::test]
async fn injection_attempts_in_every_parameter_are_refused_as_invalid(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    let admin = app.session_for("admin@example.com", Role::Admin).await;
    let attacks = [
        "' or '1'='1",
        "1; drop table accounts; --",
        "mtd' union select password_hash from accounts --",
    ];
    for attack in attacks {
        let e = encode(attack);
        for body in [format!("period={e}"), format!("metric={e}")] {
            let response = app.post_form_as("/api/overview", &body, &admin).await;
            assert_eq!(response.status, 400, "{body}");
        }
        let page = app.get_as(&format!("/?period={e}"), &admin).await;
        assert!(page.body.contains("unknown period"), "the page names the bad value");
        assert_eq!(
            app.post_form("/api/login", &login_body(attack, attack)).await.status,
            401
        );
        let limit = app
            .post_form_as("/api/admin/audit", &format!("limit={e}"), &admin)
            .await;
        assert_ne!(limit.status, 200, "limit={attack}");
        let role = app
            .post_form_as("/api/admin/set_role", &format!("account_id=1&role={e}"), &admin)
            .await;
        assert_eq!(role.status, 400);
        let id = app
            .post_form_as("/api/admin/set_role", &format!("account_id={e}&role=viewer"), &admin)
            .await;
        assert_ne!(id.status, 200);
    }
    assert_eq!(
        count(&pool, "select count(*) from accounts").await,
        1,
        "nothing was dropped or added"
    );
    assert_eq!(
        count(&pool, "select count(*) from accounts where role = 'admin'").await,
        1
    );
}

#[sqlx::test]
async fn demo_accounts_are_created_once_one_per_role(pool: PgPool) {
    let created = burnrate::demo::accounts::create_if_none(&pool)
        .await
        .expect("create")
        .expect("first time creates");
    assert_eq!(
        created.iter().map(|(role, _, _)| *role).collect::<Vec<_>>(),
        vec![Role::Admin, Role::Lead, Role::Viewer]
    );
    let banner = burnrate::demo::accounts::credentials_banner(&created);
    for (_, email, password) in &created {
        assert!(banner.contains(email) && banner.contains(password.as_str()));
        assert!(password.len() >= 12);
    }
    assert!(
        burnrate::demo::accounts::create_if_none(&pool)
            .await
            .expect("second")
            .is_none(),
        "printed only once"
    );
    let app = spawn_app(pool).await;
    let (_, email, password) = &created[1];
    app.sign_in(email, password).await;
}

#[sqlx::test]
async fn hostile_next_values_never_leave_the_site_nor_crash_sign_in(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    create_account(&pool, "nina@example.com", Role::Viewer).await;
    // Sent as the browser's form would send them, after the login page decoded `next`.
    for hostile in [
        "/\t/evil.example",
        "/\n",
        "/%0A",
        "/\r\nSet-Cookie: a=b",
        "//evil.example",
        "/\\evil.example",
        "/%2F/evil.example",
        "https://evil.example",
        "javascript:alert(1)",
        "/\u{3000}/evil.example",
    ] {
        let body = format!("{}&next={}", login_body("nina@example.com", PASSWORD), encode(hostile));
        let response = app.post_form("/api/login", &body).await;
        assert!(
            response.status < 400,
            "{hostile:?}: {} {}",
            response.status,
            response.body
        );
        let location = response.header("location");
        assert_eq!(location, "/", "{hostile:?} redirected to {location:?}");
    }
    let fine = format!(
        "{}&next={}",
        login_body("nina@example.com", PASSWORD),
        encode("/teams?period=prev")
    );
    assert_eq!(
        app.post_form("/api/login", &fine).await.header("location"),
        "/teams?period=prev"
    );
}

#[sqlx::test]
async fn the_account_audit_log_refuses_truncate_update_and_delete(pool: PgPool) {
    create_account(&pool, "auditor@example.com", Role::Admin).await;
    let entries: i64 = sqlx::query_scalar("select count(*) from audit_log")
        .fetch_one(&pool)
        .await
        .expect("count");
    assert!(entries > 0, "creating an account is audited");
    for statement in [
        "truncate audit_log",
        "delete from audit_log",
        "update audit_log set actor = 'someone else'",
    ] {
        let refused = sqlx::query(statement).execute(&pool).await.expect_err(statement);
        assert!(refused.to_string().contains("append-only"), "{statement}: {refused}");
    }
    let after: i64 = sqlx::query_scalar("select count(*) from audit_log")
        .fetch_one(&pool)
        .await
        .expect("count");
    assert_eq!(after, entries);
}

async fn attempt_ips(pool: &PgPool) -> Vec<String> {
    sqlx::query_scalar("select ip from sign_in_attempts order by id")
        .fetch_all(pool)
        .await
        .expect("attempts")
}

#[sqlx::test]
async fn failures_from_one_address_never_refuse_a_correct_password_from_another(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    create_account(&pool, "target@example.com", Role::Viewer).await;
    create_account(&pool, "colleague@example.com", Role::Viewer).await;
    let attacker = app.reached_from("127.0.0.2");
    let owner = app.reached_from("127.0.0.3");
    for _ in 0..5 {
        let guess = attacker
            .post_form("/api/login", &login_body("target@example.com", "guess guess guess"))
            .await;
        assert_eq!(guess.status, 401);
    }
    let locked = attacker
        .post_form("/api/login", &login_body("target@example.com", PASSWORD))
        .await;
    assert_eq!(locked.status, 429, "the guessing address waits out the window");
    owner.sign_in("target@example.com", PASSWORD).await;

    // Spraying every account from one address stops that address only.
    for i in 0..20 {
        let spray = attacker
            .post_form(
                "/api/login",
                &login_body(&format!("spray{i}@example.com"), "password spraying"),
            )
            .await;
        assert!(spray.status == 401 || spray.status == 429, "{}", spray.status);
    }
    assert_eq!(
        attacker
            .post_form("/api/login", &login_body("colleague@example.com", PASSWORD))
            .await
            .status,
        429
    );
    owner.sign_in("colleague@example.com", PASSWORD).await;
    let ips = attempt_ips(&pool).await;
    assert!(
        ips.contains(&"127.0.0.2".to_string()) && ips.contains(&"127.0.0.3".to_string()),
        "{ips:?}"
    );
}

#[sqlx::test]
async fn concurrent_guesses_cannot_all_pass_the_check(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    create_account(&pool, "race@example.com", Role::Viewer).await;
    let body = login_body("race@example.com", "guess guess guess");
    let guesses = (0..30).map(|_| app.post_form("/api/login", &body));
    let statuses: Vec<u16> = futures_util::future::join_all(guesses)
        .await
        .into_iter()
        .map(|r| r.status)
        .collect();
    let checked = statuses.iter().filter(|s| **s == 401).count();
    let refused = statuses.iter().filter(|s| **s == 429).count();
    assert_eq!((checked, refused), (5, 25), "{statuses:?}");
}

#[sqlx::test]
async fn forwarded_addresses_count_only_from_trusted_proxies(pool: PgPool) {
    create_account(&pool, "proxied@example.com", Role::Viewer).await;
    let direct = spawn_app(pool.clone()).await;
    let spoofed = direct
        .post_with(
            "/api/login",
            &login_body("proxied@example.com", "wrong wrong wrong"),
            &[("origin", &direct.origin()), ("x-forwarded-for", "198.51.100.1")],
        )
        .await;
    assert_eq!(spoofed.status, 401);
    assert_eq!(
        attempt_ips(&pool).await,
        ["127.0.0.1"],
        "no proxy is trusted by default"
    );

    let config =
        Config::from_lookup(|k| (k == "BURNRATE_TRUSTED_PROXIES").then(|| "127.0.0.1/32".into())).expect("config");
    let behind_proxy = spawn_app_with(pool.clone(), config).await;
    let relayed = behind_proxy
        .post_with(
            "/api/login",
            &login_body("proxied@example.com", "wrong wrong wrong"),
            // The client wrote the first hop; the trusted proxy appended the second.
            &[
                ("origin", &behind_proxy.origin()),
                ("x-forwarded-for", "198.51.100.1, 203.0.113.5"),
            ],
        )
        .await;
    assert_eq!(relayed.status, 401);
    assert_eq!(attempt_ips(&pool).await, ["127.0.0.1", "203.0.113.5"]);
    let bad = Config::from_lookup(|k| (k == "BURNRATE_TRUSTED_PROXIES").then(|| "10.0.0.0/33".into()));
    assert!(bad.is_err_and(|e| e.to_string().contains("BURNRATE_TRUSTED_PROXIES")));
}

#[sqlx::test]
async fn disabling_or_deleting_an_account_ends_its_sessions_and_the_last_admin_stays(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    let admin = app.session_for("boss@example.com", Role::Admin).await;
    let viewer = app.session_for("leaver@example.com", Role::Viewer).await;
    let change = |email: &str, step: &str| format!("email={}&step={step}", encode(email));
    assert_eq!(
        app.get_as("/api/export.csv?from=2026-01-01&to=2026-01-02&group_by=team", &viewer)
            .await
            .status,
        200
    );

    let disabled = app
        .post_form_as(
            "/api/admin/account_lifecycle",
            &change("leaver@example.com", "disable"),
            &admin,
        )
        .await;
    assert_eq!(disabled.status, 200, "{}", disabled.body);
    // The open session ends at once, and sign-in is refused as for an unknown email.
    assert_eq!(
        app.get_as("/api/export.csv?from=2026-01-01&to=2026-01-02&group_by=team", &viewer)
            .await
            .status,
        401
    );
    let again = app
        .post_form("/api/login", &login_body("leaver@example.com", PASSWORD))
        .await;
    assert_eq!((again.status, again.body.as_str()), (401, "\"SignInFailed\""));
    let enabled = app
        .post_form_as(
            "/api/admin/account_lifecycle",
            &change("leaver@example.com", "enable"),
            &admin,
        )
        .await;
    assert_eq!(enabled.status, 200);
    let back = app.sign_in("leaver@example.com", PASSWORD).await;

    let deleted = app
        .post_form_as(
            "/api/admin/account_lifecycle",
            &change("leaver@example.com", "delete"),
            &admin,
        )
        .await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    assert_eq!(
        app.get_as("/api/export.csv?from=2026-01-01&to=2026-01-02&group_by=team", &back)
            .await
            .status,
        401
    );
    assert_eq!(count(&pool, "select count(*) from sessions s join accounts a on a.id = s.account_id where a.email = 'leaver@example.com'").await, 0);
    let trail: Vec<String> =
        sqlx::query_scalar("select action from audit_log where subject = 'leaver@example.com' order by id")
            .fetch_all(&pool)
            .await
            .expect("audit");
    assert_eq!(
        trail,
        ["account.create", "account.disable", "account.enable", "account.delete"]
    );

    // The last active admin can be neither disabled, deleted nor demoted, not even by itself.
    for step in ["disable", "delete"] {
        let refused = app
            .post_form_as(
                "/api/admin/account_lifecycle",
                &change("boss@example.com", step),
                &admin,
            )
            .await;
        assert_eq!(refused.status, 400, "{step}: {}", refused.body);
        assert!(refused.body.contains("last active admin"), "{}", refused.body);
    }
    // A disabled second admin does not count as another admin.
    let other = create_account(&pool, "deputy@example.com", Role::Admin).await;
    assert_eq!(
        app.post_form_as(
            "/api/admin/account_lifecycle",
            &change("deputy@example.com", "disable"),
            &admin
        )
        .await
        .status,
        200
    );
    let boss: i64 = sqlx::query_scalar("select id from accounts where email = 'boss@example.com'")
        .fetch_one(&pool)
        .await
        .expect("id");
    let demote = app
        .post_form_as("/api/admin/set_role", &format!("account_id={boss}&role=viewer"), &admin)
        .await;
    assert_eq!(demote.status, 400, "{}", demote.body);
    assert!(other > 0);
    assert_eq!(
        app.post_form_as(
            "/api/admin/account_lifecycle",
            &change("nobody@example.com", "disable"),
            &admin
        )
        .await
        .status,
        404
    );
}

#[sqlx::test]
async fn the_cli_disables_enables_and_deletes_accounts(pool: PgPool) {
    create_account(&pool, "only-admin@example.com", Role::Admin).await;
    create_account(&pool, "temp@example.com", Role::Viewer).await;
    let url = common::database_url(&pool).await;
    let admin = |args: &[&str]| {
        let output = crate::common::burnrate_command(&url)
            .arg("admin")
            .args(args)
            .env("RUST_LOG", "warn")
            .output()
            .expect("burnrate runs");
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).to_string(),
            String::from_utf8_lossy(&output.stderr).to_string(),
        )
    };
    assert_eq!(
        admin(&["disable", "--email", "Temp@Example.com"]).1,
        "disabled account temp@example.com\n"
    );
    assert_eq!(
        count(&pool, "select count(*) from accounts where disabled_at is not null").await,
        1
    );
    assert_eq!(admin(&["enable", "--email", "temp@example.com"]).0, Some(0));
    assert_eq!(
        admin(&["delete", "--email", "temp@example.com"]).1,
        "deleted account temp@example.com\n"
    );
    let (code, _, stderr) = admin(&["delete", "--email", "only-admin@example.com"]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("last active admin"), "{stderr}");
    let (code, _, stderr) = admin(&["disable", "--email", "ghost@example.com"]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("no account with the email"), "{stderr}");
}

#[sqlx::test]
async fn signing_in_purges_expired_sessions(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    let id = create_account(&pool, "old@example.com", Role::Viewer).await;
    sqlx::query(
        "insert into sessions (token_hash, account_id, created_at, last_seen_at, expires_at) values
             ('\\x01', $1, now() - interval '9 days', now() - interval '8 days', now() - interval '2 days'),
             ('\\x02', $1, now() - interval '2 days', now() - interval '1 day', now() + interval '5 days')",
    )
    .bind(id)
    .execute(&pool)
    .await
    .expect("old sessions");
    app.sign_in("old@example.com", PASSWORD).await;
    // Both are past an expiry (absolute, or 12 h idle); only the new session is left.
    assert_eq!(count(&pool, "select count(*) from sessions").await, 1);
}

#[sqlx::test]
async fn setup_beyond_loopback_needs_the_printed_one_time_token(pool: PgPool) {
    let (app, token) = common::spawn_app_exposed(pool.clone()).await;
    let token = token.expect("no admin and open to the network: serve printed a token");
    assert!(
        app.post_form("/api/setup_token_required", "")
            .await
            .body
            .contains("true")
    );
    let body = "email=first%40example.com&display_name=First&password=first+admin+password&password_confirm=first+admin+password";
    for wrong in ["", "&token=", "&token=guess", &format!("&token={}x", token)] {
        let refused = app.post_form("/api/setup", &format!("{body}{wrong}")).await;
        assert_eq!(refused.status, 403, "{wrong:?}: {}", refused.body);
        assert!(refused.body.contains("one-time token"), "{}", refused.body);
    }
    assert_eq!(count(&pool, "select count(*) from accounts").await, 0);
    let page = app.get(&format!("/setup?token={token}")).await;
    assert!(page.body.contains("name=\"token\""), "the page asks for the token");
    let done = app.post_form("/api/setup", &format!("{body}&token={token}")).await;
    assert!(done.status < 400, "{}", done.body);
    // Spent: setup is closed, and the token no longer asked for.
    assert!(
        app.post_form("/api/setup_token_required", "")
            .await
            .body
            .contains("false")
    );
    let replay = app
        .post_form(
            "/api/setup",
            &format!("{}&token={token}", body.replace("first%40", "second%40")),
        )
        .await;
    assert_eq!(replay.status, 403);
    assert_eq!(count(&pool, "select count(*) from accounts").await, 1);

    // A loopback-only server needs no token (the existing setup test), and an exposed one
    // with an admin already prints none.
    let (_, none) = common::spawn_app_exposed(pool.clone()).await;
    assert_eq!(none, None);
}
