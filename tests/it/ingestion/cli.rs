//! `burnrate ingest` as a process: the standard AWS endpoint variables, exit statuses, the
//! lock across processes, a kill mid-run, missing credentials, and moto server.

use crate::common;

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::common::ce_fake::{CostExplorerFake, sample_items};
use crate::common::{database_url, today};
use rust_decimal::Decimal;
use sqlx::PgPool;

fn with_credentials(mut command: Command) -> Command {
    command
        .env("AWS_ACCESS_KEY_ID", "AKIDCLITEST")
        .env("AWS_SECRET_ACCESS_KEY", "cli-test-secret");
    command
}

async fn run(command: Command) -> Output {
    let mut command = command;
    tokio::task::spawn_blocking(move || command.output().expect("burnrate runs"))
        .await
        .expect("join")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

async fn fake_with_recent_spend() -> CostExplorerFake {
    let start = today() - chrono::Days::new(10);
    CostExplorerFake::start(sample_items(start, 10)).await
}

#[sqlx::test]
async fn ingest_uses_the_service_endpoint_variable_and_exits_zero(pool: PgPool) {
    let url = database_url(&pool).await;
    let fake = fake_with_recent_spend().await;
    let from = today() - chrono::Days::new(10);
    let mut command = with_credentials(common::burnrate_command(&url));
    command
        .args(["ingest", "--from", &from.to_string(), "--to", &today().to_string()])
        .env("AWS_ENDPOINT_URL_COST_EXPLORER", fake.endpoint())
        .env("AWS_ENDPOINT_URL", "http://127.0.0.1:9"); // the service variable wins
    let output = run(command).await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(stdout.contains("10 days (0 estimated)"), "{stdout}");
    // The accounts, the two account views, then the eight queries in the one account (it has
    // credits, refunds, tax and GPU usage, so each of their grains is asked).
    assert!(stdout.contains("11 Cost Explorer requests (USD 0.11)"), "{stdout}");
    let stored: Decimal = sqlx::query_scalar("select sum(unblended) from costs_by_service")
        .fetch_one(&pool)
        .await
        .expect("sum");
    assert_eq!(stored, fake.total(from, today(), "SERVICE"));

    let mut bad = with_credentials(common::burnrate_command(&url));
    bad.args(["ingest", "--from", "2026-11-10", "--to", "2026-11-01"]);
    let output = run(bad).await;
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    let mut half = with_credentials(common::burnrate_command(&url));
    half.args(["ingest", "--from", "2026-11-10"]);
    assert_eq!(run(half).await.status.code(), Some(2));
}

#[sqlx::test]
async fn an_aws_error_exits_one_with_the_message(pool: PgPool) {
    let url = database_url(&pool).await;
    let fake = fake_with_recent_spend().await;
    fake.with(|s| s.fail_next = Some(("DataUnavailableException".into(), "Data is not available yet".into())));
    let mut command = with_credentials(common::burnrate_command(&url));
    command.arg("ingest").env("AWS_ENDPOINT_URL", fake.endpoint());
    let output = run(command).await;
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("ingestion failed: DataUnavailableException: Data is not available yet"),
        "{}",
        text(&output.stderr)
    );
}

#[sqlx::test]
async fn without_credentials_ingest_fails_and_serve_still_starts_and_says_why(pool: PgPool) {
    let url = database_url(&pool).await;
    let mut command = common::burnrate_command(&url);
    command.arg("ingest");
    let output = run(command).await;
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("AWS credentials not found"), "{stderr}");
    assert!(stderr.contains("AWS_PROFILE"), "says how to provide them: {stderr}");
    assert!(!stderr.contains("cli-test-secret"));

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let mut serve = common::burnrate_command(&url);
    serve
        .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let child = serve.spawn().expect("serve starts");
    let client = reqwest::Client::new();
    let mut healthy = false;
    for _ in 0..100 {
        if client
            .get(format!("http://127.0.0.1:{port}/healthz"))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            healthy = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The schedule's first attempt logs the problem shortly after start.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    crate::common::send_signal(child.id() as i32, libc::SIGTERM);
    let output = tokio::task::spawn_blocking(move || child.wait_with_output().expect("serve exits"))
        .await
        .expect("join");
    assert!(healthy, "serve answers without AWS credentials");
    let log = text(&output.stderr);
    assert!(
        log.contains("scheduled ingestion skipped: AWS credentials not found"),
        "{log}"
    );
}

#[sqlx::test]
async fn a_second_ingest_exits_three_and_a_killed_run_leaves_the_old_data(pool: PgPool) {
    let url = database_url(&pool).await;
    let fake = fake_with_recent_spend().await;
    let from = (today() - chrono::Days::new(10)).to_string();
    let window = ["ingest", "--from", from.as_str(), "--to", &today().to_string()].map(str::to_string);
    let mut first = with_credentials(common::burnrate_command(&url));
    first.args(&window).env("AWS_ENDPOINT_URL", fake.endpoint());
    assert!(run(first).await.status.success());
    let before: Decimal = sqlx::query_scalar("select sum(unblended) from costs_by_user")
        .fetch_one(&pool)
        .await
        .expect("sum");

    // A slow Cost Explorer keeps the next run inside its lock.
    fake.with(|s| {
        s.delay = Duration::from_secs(3);
        for item in &mut s.items {
            item.unblended += Decimal::ONE;
        }
    });
    let mut slow = with_credentials(common::burnrate_command(&url));
    slow.args(&window)
        .env("AWS_ENDPOINT_URL", fake.endpoint())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = slow.spawn().expect("spawn");
    let mut started = false;
    for _ in 0..50 {
        // The first run asked for the accounts and the two account views, then made one
        // request per grain; the slow run's first is the next.
        if fake.request_count() > burnrate::costs::store::Grain::ALL.len() + 3 {
            started = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(started, "the slow run reached Cost Explorer");

    let mut second = with_credentials(common::burnrate_command(&url));
    second.args(&window).env("AWS_ENDPOINT_URL", fake.endpoint());
    let output = run(second).await;
    assert_eq!(output.status.code(), Some(3));
    assert!(text(&output.stderr).contains("ingestion already running"));

    child.kill().expect("kill -9 mid-run");
    let _ = child.wait();
    let after: Decimal = sqlx::query_scalar("select sum(unblended) from costs_by_user")
        .fetch_one(&pool)
        .await
        .expect("sum");
    assert_eq!(after, before, "the killed run changed nothing");

    // The next run takes the freed lock and records the dead one as interrupted.
    fake.with(|s| s.delay = Duration::ZERO);
    let mut next = with_credentials(common::burnrate_command(&url));
    next.args(&window).env("AWS_ENDPOINT_URL", fake.endpoint());
    assert!(run(next).await.status.success());
    let statuses: Vec<(String, Option<String>)> =
        sqlx::query_as("select status, error from ingestion_runs order by id")
            .fetch_all(&pool)
            .await
            .expect("runs");
    assert_eq!(statuses.len(), 3);
    assert_eq!(statuses[1].0, "failed");
    assert!(statuses[1].1.as_deref().unwrap_or("").starts_with("interrupted"));
    assert_eq!(statuses[2].0, "succeeded");
}

/// moto 5.2.5 has no GetDimensionValues (moto/ce/responses.py lists none): a loopback front
/// answers it with one account, as a standalone account's Cost Explorer does, and passes
/// every other request to moto as it came.
async fn moto_with_accounts(moto: &str) -> String {
    let upstream = moto.to_string();
    let client = reqwest::Client::new();
    let app = axum::Router::new().route(
        "/",
        axum::routing::post(move |headers: axum::http::HeaderMap, body: String| {
            let (upstream, client) = (upstream.clone(), client.clone());
            async move {
                let json = [("content-type", "application/x-amz-json-1.1")];
                if headers
                    .get("x-amz-target")
                    .is_some_and(|t| t == "AWSInsightsIndexService.GetDimensionValues")
                {
                    let answer = serde_json::json!({
                        "DimensionValues": [{"Value": "123456789012", "Attributes": {"description": "moto"}}],
                        "ReturnSize": 1,
                        "TotalSize": 1
                    });
                    return (axum::http::StatusCode::OK, json, answer.to_string());
                }
                let mut request = client.post(&upstream).body(body);
                for (name, value) in &headers {
                    if name != "host" && name != "content-length" {
                        request = request.header(name.as_str(), value.as_bytes());
                    }
                }
                match request.send().await {
                    Ok(response) => {
                        let status = axum::http::StatusCode::from_u16(response.status().as_u16())
                            .unwrap_or(axum::http::StatusCode::BAD_GATEWAY);
                        (status, json, response.text().await.unwrap_or_default())
                    }
                    Err(error) => (axum::http::StatusCode::BAD_GATEWAY, json, error.to_string()),
                }
            }
        }),
    );
    format!("http://{}", common::recording::serve("moto_with_accounts", app).await)
}

/// moto server answers the real SDK with queued Cost Explorer results; they are stored exactly,
/// each in the account Cost Explorer named.
#[sqlx::test]
async fn moto_server_results_are_stored_exactly(pool: PgPool) {
    let moto = common::moto::start().await;
    let day = today() - chrono::Days::new(2);
    let next = today() - chrono::Days::new(1);
    let metrics = |amount: &str| {
        serde_json::json!({
            "UnblendedCost": {"Amount": amount, "Unit": "USD"},
            "AmortizedCost": {"Amount": amount, "Unit": "USD"},
            "UsageQuantity": {"Amount": "24", "Unit": "Hrs"}
        })
    };
    // One result per query, in the order ingestion asks: the account views (the account, and
    // the account by record type), then the grains user, usage type, service and record type.
    // The account view has no credits, refunds or tax, so their grains are not asked; the
    // usage-type grain names a GPU usage type, so GPU spend by user is asked last.
    let result = |tagged: &str, untagged: &str| {
        serde_json::json!({
            "ResultsByTime": [{
                "TimePeriod": {"Start": day.to_string(), "End": next.to_string()},
                "Total": {},
                "Estimated": true,
                "Groups": [
                    {"Keys": ["project$llm-finetune", tagged], "Metrics": metrics("1234.5678901234")},
                    {"Keys": ["project$", untagged], "Metrics": metrics("0.0000001")}
                ]
            }],
            "DimensionValueAttributes": []
        })
    };
    let account_view = |keys: serde_json::Value| {
        serde_json::json!({
            "ResultsByTime": [{
                "TimePeriod": {"Start": day.to_string(), "End": next.to_string()},
                "Total": {},
                "Estimated": true,
                "Groups": [{"Keys": keys, "Metrics": metrics("1234.5678902234")}]
            }],
            "DimensionValueAttributes": []
        })
    };
    moto.queue_cost_and_usage(vec![
        account_view(serde_json::json!(["123456789012"])),
        account_view(serde_json::json!(["123456789012", "Usage"])),
        result("user$alice", "user$"),
        result("USE1-BoxUsage:p4d.24xlarge", "USE1-DataTransfer-Out-Bytes"),
        result("Amazon Elastic Compute Cloud - Compute", "AWS Data Transfer"),
        result("Usage", "Usage"),
        serde_json::json!({
            "ResultsByTime": [{
                "TimePeriod": {"Start": day.to_string(), "End": next.to_string()},
                "Total": {},
                "Estimated": true,
                "Groups": [{"Keys": ["project$llm-finetune", "user$alice"], "Metrics": metrics("1234.5678901234")}]
            }],
            "DimensionValueAttributes": []
        }),
    ])
    .await;
    let ce = common::cost_explorer_at(&moto_with_accounts(&moto.endpoint).await, "AKIDMOTO").await;
    let options = burnrate::ingestion::run::RunOptions {
        settings: burnrate::config::IngestSettings::default(),
        window: Some(burnrate::period::DateRange { from: day, to: next }),
        today: today(),
        backoff: burnrate::ingestion::cost_explorer::Backoff::default(),
    };
    let outcome = burnrate::ingestion::run::run(&pool, &ce, burnrate::ingestion::run::Trigger::Cli, &options)
        .await
        .expect("ingests from moto");
    let burnrate::ingestion::run::Outcome::Finished(report) = outcome else {
        panic!("not locked")
    };
    assert_eq!((report.requests, report.rows_written, report.estimated_days), (8, 9, 1));
    let gpu: Vec<(String, String, Decimal)> =
        sqlx::query_as("select project, user_name, unblended from costs_by_user_gpu")
            .fetch_all(&pool)
            .await
            .expect("gpu by user");
    let amount: Decimal = "1234.5678901234".parse().expect("decimal");
    assert_eq!(gpu, [("llm-finetune".to_string(), "alice".to_string(), amount)]);
    let accounts: Vec<String> = sqlx::query_scalar("select distinct account_id from costs_by_usage_type")
        .fetch_all(&pool)
        .await
        .expect("accounts");
    assert_eq!(accounts, ["123456789012"]);
    let users: Vec<(String, String, Decimal, bool)> =
        sqlx::query_as("select project, user_name, unblended, estimated from costs_by_user order by project")
            .fetch_all(&pool)
            .await
            .expect("rows");
    assert_eq!(
        users,
        [
            ("".into(), "".into(), "0.0000001".parse().expect("d"), true),
            (
                "llm-finetune".into(),
                "alice".into(),
                "1234.5678901234".parse().expect("d"),
                true
            ),
        ]
    );
    let gpu: Option<String> =
        sqlx::query_scalar("select gpu_model from usage_types where usage_type = 'USE1-BoxUsage:p4d.24xlarge'")
            .fetch_one(&pool)
            .await
            .expect("usage type parsed");
    assert_eq!(gpu.as_deref(), Some("A100"));
}

#[sqlx::test]
async fn ingest_from_cron_evaluates_budgets_and_sends_their_alerts(pool: PgPool) {
    let url = database_url(&pool).await;
    let fake = fake_with_recent_spend().await;
    for statement in [
        "insert into teams (name) values ('ml')",
        "insert into team_owners (team_id, email) select id, 'lead@example.com' from teams",
        "insert into projects (name, team_id) select 'llm-finetune', id from teams",
    ] {
        sqlx::query(statement).execute(&pool).await.expect("seed");
    }
    // A small team budget: the ten days of sample spend cross its threshold.
    let spec = burnrate::budgets::spec::validate(&burnrate::budgets::spec::BudgetInput {
        period: "annual".into(),
        ..common::budgets::input("ml annual", ("team", "ml"), "10", "100", "")
    })
    .expect("valid");
    common::budgets::save(&pool, &spec).await;
    let smtp = common::smtp::start().await;

    let from = today() - chrono::Days::new(10);
    let mut command = with_credentials(common::burnrate_command(&url));
    command
        .args(["ingest", "--from", &from.to_string(), "--to", &today().to_string()])
        .env("AWS_ENDPOINT_URL_COST_EXPLORER", fake.endpoint())
        .env("SMTP_URL", smtp.url())
        .env("SMTP_FROM", "burnrate@example.com");
    let output = run(command).await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("evaluated 1 budgets: 1 alerts queued; emails 1 sent, 0 still queued"),
        "{stdout}"
    );
    let messages = smtp.messages();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].rcpt_to, ["lead@example.com"]);
    assert!(
        messages[0].subject.contains("ml annual: actual spend reached 100%"),
        "{}",
        messages[0].subject
    );
    // Enforcement judged the same fresh data: the default policy's USD 1,000 limit is not
    // reached by this sample, so nothing is recorded, but the step ran.
    assert!(stdout.contains("enforcement: 0 violation actions"), "{stdout}");
}

#[sqlx::test]
async fn an_aws_endpoint_that_hangs_fails_the_run_at_the_timeout_and_frees_the_lock(pool: PgPool) {
    let url = database_url(&pool).await;
    let fake = fake_with_recent_spend().await;
    // The endpoint takes ten minutes to answer; the run waits one second for it.
    fake.with(|s| s.delay = Duration::from_secs(600));
    let from = today() - chrono::Days::new(3);
    let mut command = with_credentials(common::burnrate_command(&url));
    command
        .args(["ingest", "--from", &from.to_string(), "--to", &today().to_string()])
        .env("AWS_ENDPOINT_URL_COST_EXPLORER", fake.endpoint())
        .env("BURNRATE_AWS_TIMEOUT", "1s");
    let output = run(command).await;
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("Cost Explorer did not answer within 1s (BURNRATE_AWS_TIMEOUT); nothing was stored"),
        "{stderr}"
    );
    assert_eq!(
        fake.with(|s| s.arrivals),
        1,
        "a request that used up its timeout is not sent again"
    );
    let (status, error): (String, Option<String>) =
        sqlx::query_as("select status, error from ingestion_runs order by id desc limit 1")
            .fetch_one(&pool)
            .await
            .expect("run");
    assert_eq!(status, "failed");
    assert!(error.unwrap_or_default().contains("did not answer within 1s"));
    // The lock went with the run: another run (here, this test) can take it at once.
    let mut conn = pool.acquire().await.expect("connection");
    let free: bool = sqlx::query_scalar("select pg_try_advisory_lock($1)")
        .bind(burnrate::ingestion::run::LOCK_KEY)
        .fetch_one(&mut *conn)
        .await
        .expect("try lock");
    assert!(free, "the ingestion lock is released");
}
