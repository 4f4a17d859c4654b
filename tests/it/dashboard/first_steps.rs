//! The first five minutes, as the binary runs them: `burnrate demo` leaves every feature
//! with something to show (approvals, violations in each mode, a flag, budgets at every
//! status, alert history sent and queued); `burnrate serve` without AWS credentials says so
//! in one line; `budgets sync` finds the account through STS when AWS_ACCOUNT_ID is unset.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use chrono::{Datelike, Months, NaiveDate};
use rust_decimal::Decimal;
use sqlx::PgPool;

use crate::common::{self, database_url, today};
use burnrate::budgets::evaluate::status;
use burnrate::budgets::store;

/// The binary with a clean environment: no AWS or burnrate settings from the developer's
/// shell, no profile files, and no SMTP.
fn burnrate(database: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_burnrate"));
    for (name, _) in
        std::env::vars().filter(|(n, _)| n.starts_with("AWS_") || n.starts_with("BURNRATE_") || n == "SMTP_URL")
    {
        command.env_remove(name);
    }
    command
        .env("DATABASE_URL", database)
        .env("AWS_CONFIG_FILE", "/nonexistent/burnrate-test")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/burnrate-test")
        .env_remove("RUST_LOG");
    command
}

async fn run(mut command: Command) -> std::process::Output {
    tokio::task::spawn_blocking(move || command.output().expect("burnrate runs"))
        .await
        .expect("join")
}

/// The demo's last day: the 20th of last month, so every month-to-date status has twenty
/// days behind it whatever day the tests run.
fn demo_until() -> NaiveDate {
    let this_month = today().with_day(1).expect("first of the month");
    this_month
        .checked_sub_months(Months::new(1))
        .and_then(|m| m.with_day(20))
        .expect("the 20th")
}

#[sqlx::test]
async fn the_demo_shows_every_feature_with_something_in_it(pool: PgPool) {
    let until = demo_until();
    let mut command = burnrate(&database_url(&pool).await);
    command.args(["demo", "--until", &until.to_string()]);
    let output = run(command).await;
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let month = until.with_day(1).expect("month");

    // Approvals: three within their caps, one lapsed, one over its cap.
    let approvals: Vec<(String, Decimal, NaiveDate, Decimal)> = sqlx::query_as(
        "select a.project, a.cap, a.expires,
                (select coalesce(sum(unblended), 0) from daily_project_costs c
                 where c.project = a.project and c.day >= $1 and c.day <= $2)
         from approvals a where a.ended_at is null order by a.project",
    )
    .bind(month)
    .bind(until)
    .fetch_all(&pool)
    .await
    .expect("approvals");
    assert_eq!(approvals.len(), 5, "{approvals:?}");
    let lapsed: Vec<&str> = approvals.iter().filter(|a| a.2 < month).map(|a| a.0.as_str()).collect();
    assert_eq!(lapsed, ["detector-v3"]);
    let over_cap: Vec<&str> = approvals
        .iter()
        .filter(|a| a.2 >= month && a.3 > a.1)
        .map(|a| a.0.as_str())
        .collect();
    assert_eq!(over_cap, ["asr-large"]);

    // Violations in each mode, and their reasons.
    let actions: Vec<(String, String, String, String, String)> = sqlx::query_as(
        "select v.project, v.reason, a.action, a.mode, a.status
         from enforcement_actions a join violations v on v.id = a.violation_id order by 1, 3",
    )
    .fetch_all(&pool)
    .await
    .expect("actions");
    let has =
        |reason: &str, mode: &str, status: &str| actions.iter().any(|a| a.1 == reason && a.3 == mode && a.4 == status);
    assert!(has("unapproved", "dry-run", "proposed"), "{actions:#?}");
    assert!(has("over_cap", "dry-run", "proposed"), "asr-large: {actions:#?}");
    assert!(
        has("approval_expired", "manual", "awaiting_approval"),
        "detector-v3 in vision: {actions:#?}"
    );
    assert!(
        has("unapproved", "automatic", "executed"),
        "a recsys flag: {actions:#?}"
    );
    // A dry-run stop shows what it would touch, without AWS: skipped resources with why.
    let listed: Vec<(String, String, String)> = sqlx::query_as(
        "select r.kind, r.status, coalesce(r.note, '') from enforcement_resources r
         join enforcement_actions a on a.id = r.action_id
         where a.action = 'stop' and a.mode = 'dry-run' and a.status = 'proposed'",
    )
    .fetch_all(&pool)
    .await
    .expect("listed");
    let shows = |kind: &str, status: &str, note: &str| {
        listed
            .iter()
            .any(|r| r.0 == kind && r.1 == status && r.2.contains(note))
    };
    assert!(shows("ec2", "listed", ""), "{listed:#?}");
    assert!(shows("notebook", "listed", ""), "{listed:#?}");
    assert!(shows("ec2", "skipped", "8000 GB of instance-store"), "{listed:#?}");
    assert!(shows("ec2", "skipped", "Karpenter node pool"), "{listed:#?}");
    let approved = ["llm-pretrain", "llm-finetune", "chat-serving"];
    assert!(
        actions.iter().all(|a| !approved.contains(&a.0.as_str())),
        "{actions:#?}"
    );
    let mut conn = pool.acquire().await.expect("connection");
    let flagged = burnrate::enforcement::flags::flagged_projects(&mut conn)
        .await
        .expect("flags");
    assert!(!flagged.is_empty());
    let teams: Vec<String> = sqlx::query_scalar(
        "select distinct t.name from projects p join teams t on t.id = p.team_id where p.name = any($1)",
    )
    .bind(&flagged)
    .fetch_all(&pool)
    .await
    .expect("teams");
    assert_eq!(teams, ["recsys"], "only the automatic policy flags: {flagged:?}");

    // Budgets at every status, as the budget pages compute it on the day after `until`.
    let mut standing = std::collections::BTreeMap::new();
    for budget in store::list(&mut conn).await.expect("budgets") {
        let status = status(&mut conn, &budget, until + chrono::Days::new(1))
            .await
            .expect("status")
            .status;
        standing.insert(
            budget.spec.name.clone(),
            (status.spend, status.forecast, budget.spec.amount),
        );
    }
    assert_eq!(standing.len(), 6, "{standing:?}");
    let used = |name: &str| {
        let (spend, _, amount) = standing[name];
        spend / amount * Decimal::ONE_HUNDRED
    };
    assert!(used("speech monthly") < Decimal::from(50), "{standing:?}");
    assert!(
        (Decimal::from(80)..Decimal::from(100)).contains(&used("inference monthly")),
        "{standing:?}"
    );
    assert!(used("llm-platform monthly") >= Decimal::from(100), "{standing:?}");
    let (spend, forecast, amount) = standing["vision monthly"];
    assert!(
        spend < amount && forecast >= amount,
        "forecast over, actual under: {standing:?}"
    );

    // Alert history: last month's went out, this month's wait for SMTP.
    let alerts: Vec<(NaiveDate, String, Option<String>)> =
        sqlx::query_as("select period_start, status, last_reply from budget_alerts order by id")
            .fetch_all(&pool)
            .await
            .expect("alerts");
    let last_month = month.checked_sub_months(Months::new(1)).expect("last month");
    assert!(alerts.iter().any(|a| a.0 == last_month && a.1 == "sent"), "{alerts:#?}");
    assert!(
        alerts.iter().any(|a| a.0 == month
            && a.1 == "queued"
            && a.2.as_deref().is_some_and(|r| r.contains("SMTP_URL is not set"))),
        "{alerts:#?}"
    );
    let undelivered: i64 = sqlx::query_scalar(
        "select count(*) from alert_deliveries d join budget_alerts a on a.id = d.alert_id
         where a.status = 'sent' and d.status <> 'sent'",
    )
    .fetch_one(&pool)
    .await
    .expect("deliveries");
    assert_eq!(undelivered, 0, "a sent alert was sent to every recipient");

    // Evaluating again (today, as `enforce evaluate` does) proposes nothing new.
    let before: i64 = sqlx::query_scalar("select count(*) from enforcement_audit")
        .fetch_one(&pool)
        .await
        .expect("audit");
    let mut command = burnrate(&database_url(&pool).await);
    command.args(["enforce", "evaluate"]);
    assert!(run(command).await.status.success());
    let after: i64 = sqlx::query_scalar("select count(*) from enforcement_audit")
        .fetch_one(&pool)
        .await
        .expect("audit");
    assert_eq!(before, after, "evaluating again proposes nothing new");
}

#[sqlx::test]
async fn serve_without_aws_credentials_says_so_in_one_line(pool: PgPool) {
    // Outside AWS the instance-metadata address does not answer. A loopback listener that
    // accepts and never replies stands in for it, so the probe stays on this machine and
    // its connections can be counted.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("listener");
    let address = silent.local_addr().expect("address");
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = accepted.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in silent.incoming().take(16).flatten() {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            held.push(stream);
        }
    });
    let mut command = burnrate(&database_url(&pool).await);
    command
        .args(["serve", "--addr", "127.0.0.1:0"])
        .env("AWS_EC2_METADATA_SERVICE_ENDPOINT", format!("http://{address}"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("serve starts");
    let stderr = child.stderr.take().expect("stderr");
    let lines = tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut lines = Vec::new();
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            let done = line.contains("scheduled ingestion skipped");
            lines.push(line);
            if done || Instant::now() > deadline || lines.len() > 200 {
                break;
            }
        }
        lines
    })
    .await
    .expect("join");
    let _ = child.kill();
    let _ = child.wait();
    let log = lines.join("\n");
    let about_credentials: Vec<&String> = lines.iter().filter(|l| l.contains("credentials")).collect();
    assert_eq!(about_credentials.len(), 1, "{log}");
    let line = about_credentials[0];
    assert!(
        line.contains("WARN") && line.contains("scheduled ingestion skipped: AWS credentials"),
        "{log}"
    );
    assert!(
        line.contains("ce:GetCostAndUsage"),
        "it says what the role needs: {log}"
    );
    for noise in ["aws_config", "aws_smithy", "IMDS", "imds", "provider failed"] {
        assert!(!log.contains(noise), "{noise:?} reached the log:\n{log}");
    }
    // The SDK's default would try four times; burnrate tries at most twice.
    let tries = accepted.load(std::sync::atomic::Ordering::SeqCst);
    assert!((1..=2).contains(&tries), "{tries} connections to instance metadata");
}

#[sqlx::test]
async fn budgets_sync_finds_the_account_with_sts_when_aws_account_id_is_unset(pool: PgPool) {
    common::create_account(&pool, "admin@example.com", burnrate::auth::Role::Admin).await;
    let moto = common::moto::start().await;
    let url = database_url(&pool).await;
    let sync = |sts: &str| {
        let mut command = burnrate(&url);
        command
            .args(["budgets", "sync"])
            .env("AWS_ENDPOINT_URL_BUDGETS", &moto.endpoint)
            .env("AWS_ENDPOINT_URL_STS", sts)
            .env("AWS_ACCESS_KEY_ID", "AKIDSTSTEST")
            .env("AWS_SECRET_ACCESS_KEY", "test-secret")
            .env("AWS_EC2_METADATA_DISABLED", "true");
        command
    };
    let output = run(sync(&moto.endpoint)).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // moto's account for any credentials.
    assert!(
        stdout.contains("AWS Budgets: account 123456789012 (from STS GetCallerIdentity)"),
        "{stdout}"
    );

    // STS unreachable: the error says what failed and which setting avoids the call.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port");
    let output = run(sync(&format!("http://{closed}"))).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("STS GetCallerIdentity failed") && stderr.contains("set AWS_ACCOUNT_ID"),
        "{stderr}"
    );
}

#[sqlx::test]
async fn each_next_step_goes_once_it_is_done_and_only_admins_see_them(pool: PgPool) {
    common::load_demo(&pool, today()).await;
    let app = common::spawn_app(pool.clone()).await;
    let admin = app.session_for("admin@example.com", burnrate::auth::Role::Admin).await;
    let viewer = app
        .session_for("viewer@example.com", burnrate::auth::Role::Viewer)
        .await;
    let steps = |cookie: String| {
        let app = &app;
        async move {
            let response = app.post_form_as("/api/first_steps", "", &cookie).await;
            assert_eq!(response.status, 200, "{}", response.body);
            serde_json::from_str::<burnrate::dashboard::first_steps::FirstSteps>(&response.body).expect("steps")
        }
    };
    // The demo alone has done none of them (its evaluation is the CLI's: none ran here).
    let first = steps(admin.clone()).await;
    assert!(
        first.connect_aws && first.teams_as_code && first.set_budgets,
        "{first:?}"
    );
    assert!(!first.review_violations(), "nothing evaluated yet: {first:?}");
    assert_eq!(steps(viewer).await, Default::default(), "a viewer has no steps");

    // An ingestion from AWS, a person's team change, a person's budget, one action waiting.
    sqlx::query(
        "insert into ingestion_runs (trigger, status, window_from, window_to, finished_at)
         values ('schedule', 'succeeded', current_date - 3, current_date, now())",
    )
    .execute(&pool)
    .await
    .expect("run");
    let mut conn = pool.acquire().await.expect("connection");
    let person = burnrate::audit_log::Actor::system("admin@example.com");
    burnrate::audit_log::record(&mut conn, &person, "team.create", "new-team", serde_json::json!({}))
        .await
        .expect("team change");
    let done = steps(admin.clone()).await;
    assert!(!done.connect_aws && !done.teams_as_code && done.set_budgets, "{done:?}");
    burnrate::audit_log::record(&mut conn, &person, "budget.create", "mine", serde_json::json!({}))
        .await
        .expect("budget");
    let mut command = burnrate(&database_url(&pool).await);
    command.args(["enforce", "evaluate"]);
    assert!(run(command).await.status.success());
    let waiting = steps(admin.clone()).await;
    assert!(
        !waiting.connect_aws && !waiting.teams_as_code && !waiting.set_budgets && waiting.review_violations(),
        "{waiting:?}"
    );
    assert!(
        waiting.proposed > 0,
        "the default dry-run policy proposed actions: {waiting:?}"
    );
    sqlx::query("update enforcement_actions set status = 'cancelled'")
        .execute(&pool)
        .await
        .expect("decided");
    assert!(!steps(admin).await.any(), "every step done");
}

/// A demo started with no AWS settings is quiet: scheduled ingestion is off and one INFO line
/// says how to connect AWS; nothing is logged at WARN or above.
#[sqlx::test]
async fn serve_demo_without_aws_settings_starts_quietly(pool: PgPool) {
    let dir = tempfile::tempdir().expect("temp dir");
    let log_path = dir.path().join("serve.log");
    let log = std::fs::File::create(&log_path).expect("log file");
    let mut command = burnrate(&database_url(&pool).await);
    command
        .args(["serve", "--demo", "--addr", "127.0.0.1:0"])
        .env("HOME", dir.path())
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(log);
    let mut child = command.spawn().expect("serve starts");
    let read = || std::fs::read_to_string(&log_path).unwrap_or_default();
    let deadline = Instant::now() + Duration::from_secs(90);
    while !read().contains("burnrate is serving") && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Scheduled ingestion would have tried AWS at once; give it the time to.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let _ = child.kill();
    let _ = child.wait();
    let text = read();
    assert!(text.contains("burnrate is serving"), "{text}");
    let loud: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("WARN") || l.contains("ERROR"))
        .collect();
    assert!(loud.is_empty(), "{loud:#?}");
    let hints: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("demo without AWS settings: scheduled ingestion is off"))
        .collect();
    assert_eq!(hints.len(), 1, "{text}");
    assert!(
        hints[0].contains("INFO") && hints[0].contains("burnrate ingest"),
        "{text}"
    );
}
