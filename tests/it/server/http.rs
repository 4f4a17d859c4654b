//! The HTTP surface: health checks, the server-rendered Overview and its server function.

use crate::common;

use crate::common::{load_demo, spawn_app, today};
use burnrate::auth::Role;
use burnrate::dashboard::reads::overview as queries;
use burnrate::period::{Metric, Period};
use chrono::Datelike;
use rust_decimal::Decimal;
use sqlx::PgPool;

#[sqlx::test]
async fn healthz_answers_ok(pool: PgPool) {
    let app = spawn_app(pool).await;
    let response = app.get("/healthz").await;
    assert_eq!((response.status, response.body.as_str()), (200, "ok"));
}

#[sqlx::test]
async fn readyz_is_ready_when_migrations_are_applied(pool: PgPool) {
    let app = spawn_app(pool).await;
    let response = app.get("/readyz").await;
    let (status, body) = (response.status, response.body);
    assert_eq!(status, 200);
    assert!(body.contains("\"ready\""), "{body}");
}

#[sqlx::test]
async fn readyz_is_unavailable_when_a_migration_is_missing(pool: PgPool) {
    sqlx::query("delete from _sqlx_migrations")
        .execute(&pool)
        .await
        .expect("forget migrations");
    let app = spawn_app(pool).await;
    let response = app.get("/readyz").await;
    let (status, body) = (response.status, response.body);
    assert_eq!(status, 503);
    assert!(body.contains("migrations pending"), "{body}");
}

#[sqlx::test]
async fn readyz_is_unavailable_when_the_database_is_gone(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    pool.close().await;
    let response = app.get("/readyz").await;
    let (status, body) = (response.status, response.body);
    assert_eq!(status, 503);
    assert!(body.contains("database unreachable"), "{body}");
}

#[sqlx::test]
async fn overview_is_rendered_on_the_server_with_every_team_and_escaped_tags(pool: PgPool) {
    load_demo(&pool, today()).await;
    let app = spawn_app(pool.clone()).await;
    let viewer = app.session_for("viewer@example.com", Role::Viewer).await;
    let response = app.get_as("/?period=30d", &viewer).await;
    let (status, html) = (response.status, response.body);
    assert_eq!(status, 200);

    let overview = queries::overview(&pool, Period::Last30Days, Metric::Unblended, today(), None)
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
    assert!(html.contains("/pkg/burnrate.js"), "hydration script is linked");
    assert!(!html.contains("<img src=x"), "a tag value reached the page unescaped");
}

#[sqlx::test]
async fn overview_without_data_says_how_to_load_some(pool: PgPool) {
    let app = spawn_app(pool).await;
    let viewer = app.session_for("viewer@example.com", Role::Viewer).await;
    let html = app.get_as("/", &viewer).await.body;
    assert!(html.contains("No cost data yet"));
    assert!(html.contains("burnrate serve --demo"));
}

#[sqlx::test]
async fn unknown_pages_are_404(pool: PgPool) {
    let app = spawn_app(pool).await;
    let viewer = app.session_for("viewer@example.com", Role::Viewer).await;
    assert_eq!(app.get_as("/no/such/page", &viewer).await.status, 404);
}

#[sqlx::test]
async fn the_overview_server_function_rejects_an_unknown_period(pool: PgPool) {
    let app = spawn_app(pool).await;
    let viewer = app.session_for("viewer@example.com", Role::Viewer).await;
    let response = app
        .post_form_as("/api/overview", "period=1%27%20or%201%3D1", &viewer)
        .await;
    let (status, body) = (response.status, response.body);
    assert_eq!(status, 400);
    assert!(body.contains("expected one of mtd, prev, 30d, 90d"), "{body}");
    let response = app.post_form_as("/api/overview", "team=no-such-team", &viewer).await;
    assert_eq!(response.status, 400);
    assert!(response.body.contains("there is no team named"), "{}", response.body);
}

#[sqlx::test]
async fn the_overview_server_function_answers_with_the_period_figures(pool: PgPool) {
    load_demo(&pool, today()).await;
    let app = spawn_app(pool.clone()).await;
    let viewer = app.session_for("viewer@example.com", Role::Viewer).await;
    let response = app
        .post_form_as("/api/overview", "period=prev&metric=amortized", &viewer)
        .await;
    let (status, body) = (response.status, response.body);
    assert_eq!(status, 200);
    let expected = queries::overview(&pool, Period::PreviousMonth, Metric::Amortized, today(), None)
        .await
        .expect("query");
    assert!(body.contains(&expected.total.to_string()), "{body}");
    assert!(expected.total > Decimal::ZERO);
}

#[sqlx::test]
async fn the_ingestion_page_lists_runs_to_signed_in_users_only(pool: PgPool) {
    let app = spawn_app(pool.clone()).await;
    assert_eq!(app.post_form("/api/ingestion_runs", "").await.status, 401);
    let viewer = app.session_for("viewer@example.com", Role::Viewer).await;
    let empty = app.get_as("/ingestion", &viewer).await;
    assert!(empty.body.contains("No cost data yet"));

    load_demo(&pool, common::day(2026, 2, 10)).await;
    sqlx::query(
        "insert into ingestion_runs (trigger, status, requests, api_cost, error, finished_at)
         values ('cli', 'failed', 3, 0.03, '<b>ValidationException</b>: bad group', now())",
    )
    .execute(&pool)
    .await
    .expect("failed run");
    sqlx::query(
        "insert into ingestion_runs (trigger, status, requests, api_cost, grain_difference, finished_at)
         values ('schedule', 'succeeded', 3, 0.03, 0.0000000003, now())",
    )
    .execute(&pool)
    .await
    .expect("a run whose group-bys differed by rounding");
    let page = app.get_as("/ingestion", &viewer).await.body;
    assert_eq!(page.matches("data-testid=\"run-row\"").count(), 3);
    assert!(page.contains("Grain difference"), "the column is there");
    assert!(
        page.contains("$0.0000000003"),
        "the largest rounding difference is shown exactly"
    );
    assert!(
        page.contains("2025-01-01 – 2026-02-09"),
        "the demo run's window: through yesterday"
    );
    assert!(
        page.contains("&lt;b&gt;ValidationException&lt;/b&gt;: bad group"),
        "errors are shown as text"
    );
    assert!(page.contains("$0.03"));
    assert!(
        !page.contains("data-testid=\"ce-bill\""),
        "no projection before a run fetched a window"
    );

    // Three runs that fetched (a backfill's 500 requests and two of 10) and a successful
    // 14-request commitments read, on the default 6-hour schedule: 4 runs a day × 10 requests and one
    // read a day (every 4th run, 24 h ≥ 20 h) × 14 requests, each USD 0.01, every day of
    // this month.
    sqlx::query(
        "insert into ingestion_runs (trigger, status, window_from, window_to, requests, api_cost, finished_at)
         values ('cli', 'succeeded', '2026-01-01', '2026-02-01', 500, 5, now()),
                ('schedule', 'succeeded', '2026-02-01', '2026-02-09', 10, 0.1, now()),
                ('schedule', 'succeeded', '2026-02-01', '2026-02-09', 10, 0.1, now())",
    )
    .execute(&pool)
    .await
    .expect("runs that fetched");
    sqlx::query(
        "insert into commitment_reads (id, period_from, period_to, read_at, problem, requests)
         values (true, '2026-01-01', '2026-01-31', now(), null, 14)
         on conflict (id) do update set problem = null, requests = 14",
    )
    .execute(&pool)
    .await
    .expect("a commitments read");
    let today = chrono::Utc::now().date_naive();
    let first = today.with_day(1).expect("first");
    let days = (first + chrono::Months::new(1) - first).num_days();
    let expected = Decimal::from(days) * (Decimal::new(40, 2) + Decimal::new(14, 2));
    let page = app.get_as("/ingestion", &viewer).await.body;
    assert!(page.contains("data-testid=\"ce-bill\""), "{page}");
    assert!(
        page.contains(&burnrate::format::usd(expected)),
        "USD {expected} for {days} days: {page}"
    );
    assert!(page.contains("10 requests a run"), "the backfill is not the pace");
}

#[sqlx::test]
async fn pages_are_compressed_with_what_the_browser_accepts(pool: PgPool) {
    let app = spawn_app(pool).await;
    let client = reqwest::Client::new();
    for encoding in ["br", "gzip"] {
        let response = client
            .get(app.url("/login"))
            .header("accept-encoding", encoding)
            .send()
            .await
            .expect("login page");
        assert_eq!(response.status(), 200);
        let header = response.headers().get("content-encoding").and_then(|v| v.to_str().ok());
        assert_eq!(header, Some(encoding));
    }
}

/// Opens a connection and sends, as a signed-in viewer, a POST that announces a body it
/// never sends: a client that stalls mid-request.
async fn stalled_request(app: &common::TestApp, email: &str) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt;
    let cookie = app.session_for(email, Role::Viewer).await;
    let mut stream = tokio::net::TcpStream::connect(app.addr).await.expect("connect");
    let head = format!(
        "POST /api/overview HTTP/1.1\r\nHost: {}\r\nOrigin: {}\r\nCookie: {cookie}\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\nperiod=",
        app.addr,
        app.origin()
    );
    stream.write_all(head.as_bytes()).await.expect("write");
    stream
}

fn config_with(env: &'static [(&'static str, &'static str)]) -> burnrate::config::Config {
    burnrate::config::Config::from_lookup(|name| env.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string()))
        .expect("config")
}

#[sqlx::test]
async fn a_request_that_stalls_gets_408_at_the_request_timeout(pool: PgPool) {
    use tokio::io::AsyncReadExt;
    let app = common::spawn_app_with(pool, config_with(&[("BURNRATE_REQUEST_TIMEOUT", "1s")])).await;
    let mut stream = stalled_request(&app, "slow@example.com").await;
    let mut answer = vec![0u8; 64];
    // Bounded: a server without the timeout would leave this test waiting, so give up after
    // a minute rather than hang the suite.
    let read = tokio::time::timeout(std::time::Duration::from_secs(60), stream.read(&mut answer))
        .await
        .expect("the server answers")
        .expect("read");
    let head = String::from_utf8_lossy(&answer[..read]);
    assert!(head.starts_with("HTTP/1.1 408"), "{head}");
}

#[sqlx::test]
async fn shutdown_cuts_requests_still_open_after_its_deadline(pool: PgPool) {
    let config = config_with(&[("BURNRATE_SHUTDOWN_TIMEOUT", "1s"), ("BURNRATE_REQUEST_TIMEOUT", "10m")]);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let (app, served) = common::spawn_app_until(pool, config, async move {
        let _ = stopped.await;
    })
    .await;
    let _stalled = stalled_request(&app, "stuck@example.com").await;
    // The server has the request once it answers another one on a new connection.
    assert_eq!(app.get("/healthz").await.status, 200);
    stop.send(()).expect("signal");
    // A stalled client would keep a plain graceful shutdown waiting for ten minutes; the
    // deadline ends it. Bounded so a regression fails instead of hanging the suite.
    let result = tokio::time::timeout(std::time::Duration::from_secs(60), served)
        .await
        .expect("serve_until returned at its deadline, not when the stalled request ended")
        .expect("join");
    assert!(result.is_ok());
}
