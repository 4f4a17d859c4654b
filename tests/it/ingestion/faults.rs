//! Faults exercised for real on loopback, every loop bounded: a `burnrate ingest` killed
//! with SIGKILL inside its database write, and a PostgreSQL restart under light load.
//! (Hanging AWS endpoints, SMTP servers that stall or refuse some recipients, and senders
//! killed mid-send are exercised in `ingestion/cli.rs`, `budgets.rs` and
//! `enforcement/safety.rs`.)

use crate::common;

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::ce_fake::{CostExplorerFake, sample_items};
use crate::common::{database_url, today};
use burnrate::auth::Role;
use burnrate::db::private_cluster::PrivateCluster;
use rust_decimal::Decimal;
use sqlx::PgPool;

fn ingest(database: &str, endpoint: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_burnrate"));
    for (name, _) in std::env::vars().filter(|(n, _)| n.starts_with("AWS_") || n.starts_with("BURNRATE_")) {
        command.env_remove(name);
    }
    let from = today() - chrono::Days::new(10);
    command
        .args(["ingest", "--from", &from.to_string(), "--to", &today().to_string()])
        .env("DATABASE_URL", database)
        .env("AWS_ENDPOINT_URL", endpoint)
        .env("AWS_ACCESS_KEY_ID", "AKIDFAULTS")
        .env("AWS_SECRET_ACCESS_KEY", "faults-secret")
        .env("AWS_CONFIG_FILE", "/nonexistent/burnrate-test")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/burnrate-test")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        // The write waits on the test's lock; it must not give up before it is killed.
        .env("BURNRATE_DB_LOCK_TIMEOUT", "120s")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    command
}

/// Runs a command to its end off the test's runtime, where the fake answers.
async fn finish(mut command: Command) -> std::process::Output {
    tokio::task::spawn_blocking(move || command.output().expect("burnrate runs"))
        .await
        .expect("join")
}

/// Every stored figure, per table, so "whole" means every grain and the rollup.
async fn figures(pool: &PgPool) -> Vec<(String, i64, Decimal)> {
    let mut all = Vec::new();
    for table in [
        "costs_by_service",
        "costs_by_usage_type",
        "costs_by_user",
        "daily_project_costs",
    ] {
        let (rows, sum): (i64, Option<Decimal>) =
            sqlx::query_as(&format!("select count(*), sum(unblended) from {table}"))
                .fetch_one(pool)
                .await
                .expect("figures");
        all.push((table.to_string(), rows, sum.unwrap_or_default()));
    }
    all
}

#[sqlx::test]
async fn an_ingestion_killed_inside_its_database_write_leaves_the_previous_data_whole(pool: PgPool) {
    let url = database_url(&pool).await;
    let from = today() - chrono::Days::new(10);
    let fake = CostExplorerFake::start(sample_items(from, 10)).await;
    let first = finish(ingest(&url, &fake.endpoint())).await;
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let before = figures(&pool).await;
    assert!(before.iter().all(|(_, rows, _)| *rows > 0), "{before:?}");

    // AWS restates every figure; a second run would replace them all.
    fake.with(|s| {
        for item in &mut s.items {
            item.unblended += Decimal::ONE;
        }
    });
    // Hold the rollup table so the run's write transaction stops inside itself, after it
    // has replaced the facts: the kill then lands in the middle of the database write.
    let mut holder = pool.begin().await.expect("holder");
    sqlx::query("lock table daily_project_costs in exclusive mode")
        .execute(&mut *holder)
        .await
        .expect("lock");
    let mut child = ingest(&url, &fake.endpoint()).spawn().expect("second run");
    let mut writing = None;
    for _ in 0..600 {
        // The ingestion's backend: in a transaction that has written, waiting on our lock.
        writing = sqlx::query_scalar::<_, i32>(
            "select pid from pg_stat_activity
             where datname = current_database() and pid <> pg_backend_pid()
               and backend_xid is not null and wait_event_type = 'Lock'
               and query ilike 'delete from daily_project_costs%'",
        )
        .fetch_optional(&pool)
        .await
        .expect("pg_stat_activity");
        if writing.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let backend = writing.expect("the run reached its database write");
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    holder.rollback().await.expect("release");
    // Postgres rolls the dead client's transaction back once its backend notices.
    for _ in 0..200 {
        let alive: bool = sqlx::query_scalar("select exists (select 1 from pg_stat_activity where pid = $1)")
            .bind(backend)
            .fetch_one(&pool)
            .await
            .expect("activity");
        if !alive {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    assert_eq!(figures(&pool).await, before, "the previous data is whole");
    // The next run takes the lock the dead one held, records the dead run as failed, and
    // stores the restated figures.
    let next = finish(ingest(&url, &fake.endpoint())).await;
    assert!(next.status.success(), "{}", String::from_utf8_lossy(&next.stderr));
    let after = figures(&pool).await;
    assert_eq!(after[1].2, fake.total(from, today(), "USAGE_TYPE"));
    let statuses: Vec<String> = sqlx::query_scalar("select status from ingestion_runs order by id")
        .fetch_all(&pool)
        .await
        .expect("runs");
    assert_eq!(statuses, ["succeeded", "failed", "succeeded"]);
}

/// A cluster of its own, so the test can restart it.
struct Cluster {
    dir: tempfile::TempDir,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let pid = std::fs::read_to_string(self.dir.path().join("postgres/data/postmaster.pid"))
            .ok()
            .and_then(|t| t.lines().next().and_then(|l| l.trim().parse::<i32>().ok()));
        if let Some(pid) = pid {
            crate::common::send_signal(pid, libc::SIGQUIT);
        }
    }
}

#[tokio::test]
async fn a_postgres_restart_under_load_answers_503_meanwhile_and_recovers() {
    let cluster_dir = Cluster {
        dir: tempfile::tempdir().expect("temp dir"),
    };
    let cluster = PrivateCluster::start(cluster_dir.dir.path()).await.expect("cluster");
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(4)
        .acquire_timeout(Duration::from_secs(2))
        .connect_with(cluster.connect_options())
        .await
        .expect("pool");
    sqlx::migrate!().run(&pool).await.expect("migrate");
    let app = common::spawn_app(pool.clone()).await;
    let viewer = app.session_for("viewer@example.com", Role::Viewer).await;
    let get = |path: &'static str| {
        let app = &app;
        let viewer = viewer.clone();
        async move { app.get_as(path, &viewer).await.status }
    };
    assert_eq!(get("/api/enforcement_audit.csv").await, 200);

    // Light load: two clients in a loop while the database restarts under them.
    let load = async {
        let mut seen = Vec::new();
        for _ in 0..150 {
            let (a, b) = tokio::join!(get("/api/enforcement_audit.csv"), get("/readyz"));
            seen.push(a);
            seen.push(b);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        seen
    };
    let restart = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cluster.stop().await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        PrivateCluster::start(cluster_dir.dir.path()).await.expect("restart")
    };
    let (seen, restarted) = tokio::join!(load, restart);
    assert!(
        seen.iter().all(|s| *s == 200 || *s == 503),
        "only answers or a clear 503, never a 500 or a dropped connection: {seen:?}"
    );
    assert!(seen.contains(&503), "the outage was seen: {seen:?}");
    // Recovered: the pool reconnects on its own.
    let mut recovered = false;
    for _ in 0..100 {
        if get("/api/enforcement_audit.csv").await == 200 {
            recovered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(recovered, "requests succeed after the restart");
    assert_eq!(get("/readyz").await, 200);
    pool.close().await;
    restarted.stop().await;
}
