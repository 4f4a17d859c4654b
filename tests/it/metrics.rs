//! `/metrics` for Prometheus: its own bearer token on the dashboard's address (API tokens and
//! no token refused), its own listener without one, figures worked by hand, tag values
//! escaped, accepted by `promtool check metrics`, and scraped by a real Prometheus.

use std::io::Write as _;
use std::time::Duration;

use chrono::Datelike;
use sqlx::PgPool;

use crate::common::{self, add_project_costs, import_config, spawn_app_with, today};
use burnrate::auth::Role;
use burnrate::config::Config;

const TOKEN: &str = "metrics-0123456789abcdef0123456789abcdef";
/// A project tag value with every character the text format must escape.
const EVIL: &str = "evil\"pro\\ject\nx";

/// vision (the ORG of the API tests: a $1,000 monthly budget, the org's $1,000 monthly policy)
/// spends $10 a day on `tracker` through yesterday this month, and `EVIL` $950 today; one
/// ingestion made 12 Cost Explorer requests.
async fn seed(pool: &PgPool) -> i64 {
    import_config(pool, crate::api::ORG).await;
    let month_start = today().with_day(1).expect("first");
    let days = (today() - month_start).num_days();
    if days > 0 {
        add_project_costs(
            pool,
            "tracker",
            Some("vision"),
            (month_start, today() - chrono::Days::new(1)),
            "10",
            "10",
        )
        .await;
    }
    add_project_costs(pool, EVIL, Some("vision"), (today(), today()), "950", "950").await;
    sqlx::query(
        "insert into ingestion_runs (trigger, status, requests, api_cost, started_at, finished_at)
         values ('schedule', 'succeeded', 12, 0.12, now() - interval '90 seconds', now())",
    )
    .execute(pool)
    .await
    .expect("run");
    days
}

fn config() -> Config {
    Config::from_lookup(|name| (name == "BURNRATE_METRICS_TOKEN").then(|| TOKEN.to_string())).expect("config")
}

fn promtool_accepts(text: &str) {
    let mut child = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool runs (scripts/setup.sh --tests installs the prometheus package)");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("written");
    let out = child.wait_with_output().expect("promtool ends");
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}\n{text}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[sqlx::test]
async fn metrics_answer_their_own_token_with_figures_promtool_accepts(pool: PgPool) {
    let days = seed(&pool).await;
    let app = spawn_app_with(pool.clone(), config()).await;
    assert_eq!(app.get("/healthz").await.status, 200);
    let api_token_for_route = crate::api::token(&pool, "lead@example.com", Role::Lead, None).await;
    let missing = app
        .api("PUT", "/api/v1/budgets/424242", Some(&api_token_for_route), Some("{}"))
        .await;
    assert_eq!(missing.status, 400, "{}", missing.body);

    let api_token = crate::api::token(&pool, "admin@example.com", Role::Admin, None).await;
    for authorization in [
        None,
        Some(format!("Bearer {api_token}")),
        Some("Bearer wrong-wrong-wrong".to_string()),
    ] {
        let response = match &authorization {
            None => app.get("/metrics").await,
            Some(value) => app.api_authorized("GET", "/metrics", value).await,
        };
        assert_eq!(response.status, 401, "{authorization:?}");
    }
    let session = app.session_for("viewer@example.com", Role::Viewer).await;
    assert_eq!(
        app.get_as("/metrics", &session).await.status,
        401,
        "a session opens nothing here"
    );

    let response = app.api_authorized("GET", "/metrics", &format!("Bearer {TOKEN}")).await;
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(
        response.header("content-type"),
        "text/plain; version=0.0.4; charset=utf-8"
    );
    let text = response.body;
    promtool_accepts(&text);

    // $10 a day before today; today's figures are not in a month's spend until the day ends.
    let spend = rust_decimal::Decimal::from(10 * days);
    assert!(
        text.contains(&format!(
            "burnrate_team_spend_month_to_date_usd{{team=\"vision\"}} {spend}\n"
        )),
        "{text}"
    );
    let used = (spend / rust_decimal::Decimal::from(1000)).normalize();
    assert!(
        text.contains(&format!(
            "burnrate_budget_used_ratio{{budget=\"vision monthly\",scope_kind=\"team\",scope=\"vision\"}} {used}\n"
        )),
        "{text}"
    );
    // $950 of the $1,000 policy limit this month, the tag value escaped.
    assert!(
        text.contains("burnrate_project_policy_used_ratio{project=\"evil\\\"pro\\\\ject\\nx\",team=\"vision\"} 0.95\n"),
        "{text}"
    );
    assert!(text.contains("burnrate_cost_explorer_requests_total 12\n"), "{text}");
    assert!(
        text.contains("burnrate_cost_explorer_requests_cost_usd_total 0.12\n"),
        "{text}"
    );
    assert!(text.contains("burnrate_ingestion_last_run_failed 0\n"), "{text}");
    assert!(
        text.contains("burnrate_outbox_deliveries{status=\"failed\"} 0\n"),
        "{text}"
    );
    assert!(
        text.contains("burnrate_http_request_duration_seconds_count{method=\"GET\",route=\"/healthz\",status=\"2xx\"}"),
        "the health check was timed under its route: {text}"
    );
    assert!(
        text.contains("route=\"/api/v1/budgets/{id}\",status=\"4xx\"") && !text.contains("/budgets/424242"),
        "routes are templates, never the paths asked for: {text}"
    );
}

#[sqlx::test]
async fn a_real_prometheus_scrapes_the_token_route_and_the_own_listener(pool: PgPool) {
    seed(&pool).await;
    let app = spawn_app_with(pool.clone(), config()).await;
    let own = common::serve_on_loopback(burnrate::metrics::own_listener(
        pool.clone(),
        Default::default(),
        Duration::from_secs(60),
    ))
    .await;
    let open = reqwest::get(format!("http://{own}/metrics"))
        .await
        .expect("own listener");
    assert_eq!(open.status(), 200, "no token on the listener of its own");

    for (target, token) in [(app.addr.to_string(), Some(TOKEN)), (own.to_string(), None)] {
        let prometheus = common::prometheus::scraping(&target, token).await;
        let client = reqwest::Client::new();
        let query = |q: &'static str| {
            let client = client.clone();
            let port = prometheus.port;
            async move {
                let text = client
                    .get(format!("http://127.0.0.1:{port}/api/v1/query"))
                    .query(&[("query", q)])
                    .timeout(Duration::from_secs(5))
                    .send()
                    .await
                    .expect("query")
                    .text()
                    .await
                    .expect("text");
                let body: serde_json::Value = serde_json::from_str(&text).expect("json");
                body["data"]["result"][0]["value"][1].as_str().map(str::to_string)
            }
        };
        // Scraped every second; give it up to 30 s.
        let mut seen = None;
        for _ in 0..60 {
            seen = query("burnrate_cost_explorer_requests_total").await;
            if seen.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        assert_eq!(seen.as_deref(), Some("12"), "scraped from {target}");
        assert_eq!(query("up{job=\"burnrate\"}").await.as_deref(), Some("1"));
    }
}

/// The figures from costs, budgets and policies are computed once per data version and day,
/// not per scrape (#54): a write that moves no data version (made here with the triggers off)
/// is not seen; after a budget's or a policy's change, which moves it, a scrape answers at
/// once with the figures it has, marked not current, and the new ones follow.
#[sqlx::test]
async fn figures_are_computed_once_per_data_version_and_follow_every_change(pool: PgPool) {
    seed(&pool).await;
    let cache = burnrate::page_data::PageDataCache::default();
    let scrape = || burnrate::metrics::scrape(&pool, &cache);
    let ratio = |text: &str, family: &str| -> String {
        text.lines()
            .find(|l| l.starts_with(family))
            .and_then(|l| l.rsplit(' ').next())
            .unwrap_or_else(|| panic!("{family} in {text}"))
            .to_string()
    };
    let budget = "burnrate_budget_used_ratio{budget=\"vision monthly\"";
    let policy = "burnrate_project_policy_used_ratio{project=\"evil";
    let first = scrape().await.expect("scrape");
    assert_eq!(ratio(&first, policy), "0.95");
    let budget_before = ratio(&first, budget);
    assert!(first.contains("burnrate_metrics_figures_current 1\n"), "{first}");

    // Without the version triggers: the cached figures stand, the live counts do not.
    // `set local`: the pooled connection keeps its triggers for the writes after this one.
    let mut conn = pool.begin().await.expect("transaction");
    sqlx::query("set local session_replication_role = replica")
        .execute(&mut *conn)
        .await
        .expect("triggers off");
    sqlx::query("update budgets set amount = amount * 2")
        .execute(&mut *conn)
        .await
        .expect("unversioned write");
    sqlx::query("update enforcement_policies set spend_limit = 500")
        .execute(&mut *conn)
        .await
        .expect("unversioned write");
    sqlx::query("update ingestion_runs set requests = 13")
        .execute(&mut *conn)
        .await
        .expect("a run");
    conn.commit().await.expect("committed");
    let cached = scrape().await.expect("scrape");
    assert_eq!(ratio(&cached, budget), budget_before, "served from the cache");
    assert_eq!(ratio(&cached, policy), "0.95", "served from the cache");
    assert!(
        cached.contains("burnrate_cost_explorer_requests_total 13\n"),
        "{cached}"
    );

    // A policy change moves the version (its trigger is new): a scrape answers at once with
    // the figures it has and computes the new ones in the background, so both writes are
    // seen within one computation.
    sqlx::query("update enforcement_policies set spend_limit = 1187.50")
        .execute(&pool)
        .await
        .expect("policy");
    let mut moved = scrape().await.expect("scrape");
    assert_eq!(
        ratio(&moved, policy),
        "0.95",
        "answered at once with the figures it had"
    );
    assert!(moved.contains("burnrate_metrics_figures_current 0\n"), "{moved}");
    for _ in 0..400 {
        if moved.contains("burnrate_metrics_figures_current 1\n") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        moved = scrape().await.expect("scrape");
    }
    assert_eq!(ratio(&moved, policy), "0.8");
    let halved =
        (budget_before.parse::<rust_decimal::Decimal>().expect("ratio") / rust_decimal::Decimal::TWO).normalize();
    assert_eq!(ratio(&moved, budget), halved.to_string());
}
