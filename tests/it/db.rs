//! Zero-configuration start: the private PostgreSQL cluster and the `burnrate` binary.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use burnrate::db::private_cluster::PrivateCluster;
use sqlx::Connection;

/// Stops any postmaster left in `dir` when a test fails halfway.
struct KillOnDrop<'a>(&'a Path);

impl Drop for KillOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(pid) = postmaster_pid(self.0) {
            // SAFETY: sending SIGQUIT (immediate shutdown) to a process id we read from its pid file.
            crate::common::send_signal(pid, libc::SIGQUIT);
        }
    }
}

fn postmaster_pid(data_dir: &Path) -> Option<i32> {
    let text = std::fs::read_to_string(data_dir.join("postgres/data/postmaster.pid")).ok()?;
    text.lines().next()?.trim().parse().ok()
}

async fn answers(cluster: &PrivateCluster) -> bool {
    match sqlx::PgConnection::connect_with(&cluster.connect_options()).await {
        Ok(mut conn) => sqlx::query_scalar::<_, i32>("select 1")
            .fetch_one(&mut conn)
            .await
            .is_ok(),
        Err(_) => false,
    }
}

#[tokio::test]
async fn the_private_cluster_starts_answers_and_stops() {
    let dir = tempfile::tempdir().expect("temp dir");
    let _guard = KillOnDrop(dir.path());
    let cluster = PrivateCluster::start(dir.path()).await.expect("cluster starts");
    assert!(answers(&cluster).await, "the burnrate database answers over the socket");
    let pgdata = cluster.pgdata();
    assert!(pgdata.join("postmaster.pid").exists());
    cluster.stop().await;
    assert!(!pgdata.join("postmaster.pid").exists(), "the cluster is stopped");
}

#[tokio::test]
async fn a_running_cluster_is_reused_and_left_to_the_process_that_started_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let _guard = KillOnDrop(dir.path());
    let first = PrivateCluster::start(dir.path()).await.expect("first start");
    let second = PrivateCluster::start(dir.path()).await.expect("second start reuses");
    second.stop().await;
    assert!(
        answers(&first).await,
        "stopping the reusing handle leaves the cluster up"
    );
    let pgdata = first.pgdata();
    first.stop().await;
    assert!(!pgdata.join("postmaster.pid").exists());
}

#[tokio::test]
async fn a_restart_keeps_the_data() {
    let dir = tempfile::tempdir().expect("temp dir");
    let _guard = KillOnDrop(dir.path());
    let cluster = PrivateCluster::start(dir.path()).await.expect("start");
    let mut conn = sqlx::PgConnection::connect_with(&cluster.connect_options())
        .await
        .expect("connect");
    sqlx::query("create table kept (v int)")
        .execute(&mut conn)
        .await
        .expect("create");
    conn.close().await.expect("close");
    cluster.stop().await;

    let cluster = PrivateCluster::start(dir.path()).await.expect("restart");
    let mut conn = sqlx::PgConnection::connect_with(&cluster.connect_options())
        .await
        .expect("connect");
    let n: i64 = sqlx::query_scalar("select count(*) from kept")
        .fetch_one(&mut conn)
        .await
        .expect("table survived");
    assert_eq!(n, 0);
    conn.close().await.expect("close");
    cluster.stop().await;
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

fn burnrate() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_burnrate"));
    command
        .env_remove("DATABASE_URL")
        .env_remove("BURNRATE_ADDR")
        .env_remove("LOG_FORMAT");
    command
}

#[tokio::test]
async fn serve_without_database_url_runs_its_own_cluster_and_stops_it_on_sigterm() {
    let dir = tempfile::tempdir().expect("temp dir");
    let _guard = KillOnDrop(dir.path());
    let port = free_port();
    let mut child = burnrate()
        .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
        .env("BURNRATE_DATA_DIR", dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn burnrate serve");

    let deadline = Instant::now() + Duration::from_secs(90);
    let mut ready = false;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().expect("poll child") {
            panic!("burnrate serve exited early: {status}");
        }
        if let Ok(response) = reqwest::get(format!("http://127.0.0.1:{port}/readyz")).await
            && response.status() == 200
        {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(ready, "burnrate serve became ready");
    assert!(postmaster_pid(dir.path()).is_some(), "the private cluster runs");

    // SAFETY: signalling the child we spawned.
    crate::common::send_signal(child.id() as i32, libc::SIGTERM);
    let status = child.wait().expect("wait for exit");
    assert!(status.success(), "clean exit: {status}");
    assert!(
        postmaster_pid(dir.path()).is_none(),
        "the cluster was stopped on shutdown"
    );
}

#[test]
fn a_bad_variable_exits_with_status_2_before_starting_anything() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let output = burnrate()
        .args(["serve"])
        .env("BURNRATE_DATA_DIR", &data)
        .env("BURNRATE_ADDR", "everywhere")
        .output()
        .expect("run burnrate");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("BURNRATE_ADDR=\"everywhere\" is not valid: expected an IP address and port"),
        "{stderr}"
    );
    assert!(!data.exists(), "nothing was started");

    let output = burnrate()
        .args(["serve", "--addr", "nope"])
        .env("BURNRATE_DATA_DIR", &data)
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--addr=\"nope\""));
}

#[test]
fn help_describes_the_flags_and_environment_variables() {
    let output = burnrate().args(["serve", "--help"]).output().expect("run");
    let text = String::from_utf8_lossy(&output.stdout);
    for needle in ["--demo", "--addr", "DATABASE_URL", "BURNRATE_DATA_DIR", "LOG_FORMAT"] {
        assert!(text.contains(needle), "serve --help lacks {needle}");
    }
    let output = burnrate().args(["demo", "--help"]).output().expect("run");
    assert!(String::from_utf8_lossy(&output.stdout).contains("--scale"));
}

/// `migrate` and `demo` against a server named by DATABASE_URL, creating its database.
#[sqlx::test]
async fn migrate_creates_the_database_and_demo_refuses_to_overwrite_data(pool: sqlx::PgPool) {
    let Ok(base) = std::env::var("DATABASE_URL") else {
        return;
    };
    let name = format!("burnrate_cli_{}", std::process::id());
    let url = match base.rsplit_once('/') {
        Some((server, _)) => format!("{server}/{name}"),
        None => panic!("DATABASE_URL has no database part"),
    };
    sqlx::query(&format!("drop database if exists {name}"))
        .execute(&pool)
        .await
        .expect("drop");

    let run = |args: &[&str]| {
        burnrate()
            .args(args)
            .env("DATABASE_URL", &url)
            .output()
            .expect("run burnrate")
    };
    let migrated = burnrate()
        .args(["migrate"])
        .env("DATABASE_URL", &url)
        .env("LOG_FORMAT", "json")
        .output()
        .expect("run");
    assert!(
        migrated.status.success(),
        "{}",
        String::from_utf8_lossy(&migrated.stderr)
    );
    let logs = String::from_utf8_lossy(&migrated.stderr);
    let lines: Vec<serde_json::Value> = logs
        .lines()
        .map(|l| serde_json::from_str(l).expect("LOG_FORMAT=json writes one JSON object per line"))
        .collect();
    assert!(
        lines
            .iter()
            .any(|l| l["fields"]["message"] == "migrations are up to date"),
        "{logs}"
    );
    assert!(!logs.contains(&url), "the database URL is never logged");

    let demo = run(&["demo", "--until", "2026-02-10"]);
    assert!(demo.status.success(), "{}", String::from_utf8_lossy(&demo.stderr));
    assert!(String::from_utf8_lossy(&demo.stdout).contains("demo loaded: 10 teams, 30 projects, 100 users"));

    let mut admin = burnrate()
        .args(["admin", "create", "--email", "Boss@Example.com", "--name", "Boss"])
        .env("DATABASE_URL", &url)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn admin create");
    use std::io::Write;
    admin
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"a strong admin password\n")
        .expect("write password");
    let created = admin.wait_with_output().expect("admin create finishes");
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    assert!(String::from_utf8_lossy(&created.stdout).contains("created admin account boss@example.com"));

    let mut weak = burnrate()
        .args(["admin", "create", "--email", "weak@example.com"])
        .env("DATABASE_URL", &url)
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn admin create");
    weak.stdin
        .take()
        .expect("stdin")
        .write_all(b"short\n")
        .expect("write password");
    let refused = weak.wait_with_output().expect("finishes");
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("at least 12 characters"));

    let exported = run(&[
        "export",
        "--from",
        "2026-02-01",
        "--to",
        "2026-02-03",
        "--group-by",
        "team,project,user",
    ]);
    assert!(
        exported.status.success(),
        "{}",
        String::from_utf8_lossy(&exported.stderr)
    );
    let csv = String::from_utf8_lossy(&exported.stdout);
    assert_eq!(csv.lines().next(), Some("date,team,project,user,cost"));
    assert!(
        csv.lines()
            .skip(1)
            .all(|l| l.starts_with("2026-02-01,") || l.starts_with("2026-02-02,"))
    );
    let combined = run(&[
        "export",
        "--from",
        "2026-02-01",
        "--to",
        "2026-02-03",
        "--group-by",
        "user,service",
    ]);
    assert_eq!(combined.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&combined.stderr).contains("cannot be combined"));

    // Run again later on demo data, it restates the Estimated days (February's open bill)
    // and adds the new ones.
    let later = run(&["demo", "--until", "2026-02-12"]);
    assert!(later.status.success(), "{}", String::from_utf8_lossy(&later.stderr));
    assert!(
        String::from_utf8_lossy(&later.stdout)
            .contains("demo brought up to date: 2026-02-01 to 2026-02-12 written again"),
        "{}",
        String::from_utf8_lossy(&later.stdout)
    );
    let today_or_later = run(&["demo", "--until", "2999-01-01"]);
    assert_eq!(today_or_later.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&today_or_later.stderr).contains("ends before today"));

    // Once real costs have been ingested, the demo refuses to touch them.
    let db = sqlx::PgPool::connect(&url).await.expect("connect");
    sqlx::query("insert into ingestion_runs (trigger, status, finished_at) values ('cli', 'succeeded', now())")
        .execute(&db)
        .await
        .expect("an ingestion");
    db.close().await;
    let again = run(&["demo"]);
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("--replace"));

    sqlx::query(&format!("drop database {name} with (force)"))
        .execute(&pool)
        .await
        .expect("drop");
}

/// A pool as `burnrate serve` opens it, with the given environment.
async fn served_pool(pool: &sqlx::PgPool, env: &[(&str, &str)]) -> burnrate::db::Database {
    let url = common::database_url(pool).await;
    let config = burnrate::config::Config::from_lookup(|name| {
        if name == "DATABASE_URL" {
            return Some(url.clone());
        }
        env.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
    })
    .expect("config");
    burnrate::db::Database::open(&config).await.expect("open")
}

#[sqlx::test]
async fn request_connections_bound_each_statement_and_lock_wait(pool: sqlx::PgPool) {
    let db = served_pool(
        &pool,
        &[
            ("BURNRATE_DB_STATEMENT_TIMEOUT", "1s"),
            ("BURNRATE_DB_LOCK_TIMEOUT", "500ms"),
        ],
    )
    .await;
    let slow = sqlx::query("select pg_sleep(5)")
        .execute(&db.pool)
        .await
        .expect_err("bounded");
    assert!(slow.to_string().contains("statement timeout"), "{slow}");

    // A row locked elsewhere: the request path gives up instead of queueing behind it.
    sqlx::query("insert into teams (name) values ('locked')")
        .execute(&pool)
        .await
        .expect("team");
    let mut holder = pool.begin().await.expect("transaction");
    sqlx::query("select * from teams where name = 'locked' for update")
        .execute(&mut *holder)
        .await
        .expect("lock");
    let waiting = sqlx::query("update teams set name = 'renamed' where name = 'locked'")
        .execute(&db.pool)
        .await
        .expect_err("lock wait bounded");
    assert!(waiting.to_string().contains("lock timeout"), "{waiting}");
    holder.rollback().await.expect("rollback");

    // Bulk commands lift the statement bound, but still bound lock waits.
    let url = common::database_url(&pool).await;
    let config = burnrate::config::Config::from_lookup(|name| {
        (name == "DATABASE_URL")
            .then(|| url.clone())
            .or_else(|| (name == "BURNRATE_DB_STATEMENT_TIMEOUT").then(|| "1s".to_string()))
    })
    .expect("config");
    let batch = burnrate::db::Database::open_for_batch(&config).await.expect("open");
    sqlx::query("select pg_sleep(1.5)")
        .execute(&batch.pool)
        .await
        .expect("no statement bound for batch work");
    batch.close().await;
    db.close().await;
}
