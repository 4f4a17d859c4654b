//! Utilisation from a real Prometheus (the Debian package, started here on loopback),
//! loaded with DCGM exporter series through `promtool tsdb create-blocks-from openmetrics`.

use std::fmt::Write as _;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use rust_decimal::Decimal;
use sqlx::PgPool;

use super::{d, daily, declare, seed, team};
use burnrate::config::PrometheusSettings;
use burnrate::savings::Kind;

struct Prometheus {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Minutes of samples before `end`, one a minute, for one GPU.
fn series(out: &mut String, metric: &str, labels: &str, end: i64, values: &[(usize, &str)]) {
    let mut t = end - 60 * values.iter().map(|(n, _)| *n as i64).sum::<i64>();
    for (count, value) in values {
        for _ in 0..*count {
            t += 60;
            writeln!(out, "{metric}{{{labels}}} {value} {t}").expect("write");
        }
    }
}

async fn start(openmetrics: String) -> Prometheus {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("dcgm.om");
    std::fs::write(&input, openmetrics).expect("write series");
    let data = dir.path().join("data");
    let created = Command::new("promtool")
        .args(["tsdb", "create-blocks-from", "openmetrics"])
        .arg(&input)
        .arg(&data)
        .output()
        .expect("promtool runs (scripts/setup.sh --tests installs the prometheus package)");
    assert!(
        created.status.success(),
        "promtool: {}",
        String::from_utf8_lossy(&created.stderr)
    );
    let config = dir.path().join("prometheus.yml");
    std::fs::write(&config, "global:\n  scrape_interval: 1m\n").expect("config");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!("--storage.tsdb.path={}", data.display()))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("prometheus starts");
    let prometheus = Prometheus { child, port, _dir: dir };
    let client = reqwest::Client::new();
    for _ in 0..120 {
        let ready = client
            .get(format!("http://127.0.0.1:{port}/-/ready"))
            .timeout(Duration::from_secs(2))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success());
        if ready {
            return prometheus;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    panic!("prometheus did not become ready in 30 s");
}

#[sqlx::test]
async fn idle_and_underused_gpus_are_priced_from_the_projects_own_spend(pool: PgPool) {
    // 10 days of an 8-GPU p4d for 10 hours a day: $2,195.76 over 800 GPU-hours.
    seed(
        &pool,
        &daily("trainer", "USE1-BoxUsage:p4d.24xlarge", 0, 10, "219.576", "10"),
    )
    .await;
    declare(&pool, "trainer", "training", None).await;
    team(&pool, "ml", "lead@example.com", &["trainer"]).await;

    let end = chrono::Utc::now().timestamp() - 5;
    let mut om = String::new();
    for (metric, unit) in [
        ("DCGM_FI_DEV_GPU_UTIL", "1"),
        ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "0.01"),
        ("DCGM_FI_DEV_FB_USED", "MiB"),
        ("DCGM_FI_DEV_FB_FREE", "MiB"),
    ] {
        writeln!(om, "# TYPE {metric} gauge").expect("write");
        let util = |v: &str| {
            if unit == "0.01" {
                format!("{}", v.parse::<f64>().unwrap_or(0.0) / 100.0)
            } else {
                v.to_string()
            }
        };
        let (busy, five, zero) = match unit {
            "MiB" if metric.ends_with("USED") => ("30000".to_string(), "12000".to_string(), "500".to_string()),
            "MiB" => ("10960".to_string(), "28960".to_string(), "40460".to_string()),
            _ => (util("70"), util("5"), util("0")),
        };
        if metric != "DCGM_FI_PROF_GR_ENGINE_ACTIVE" {
            // The trainer's two GPUs: 5 % for three hours; the second idle for the last hour.
            series(
                &mut om,
                metric,
                "Hostname=\"h1\",gpu=\"0\",project=\"trainer\"",
                end,
                &[(180, &five)],
            );
            series(
                &mut om,
                metric,
                "Hostname=\"h1\",gpu=\"1\",project=\"trainer\"",
                end,
                &[(120, &five), (60, &zero)],
            );
            // Two hosts nobody labelled with a project: idle for three hours.
            series(&mut om, metric, "Hostname=\"h3\",gpu=\"0\"", end, &[(180, &zero)]);
            series(&mut om, metric, "Hostname=\"h4\",gpu=\"0\"", end, &[(180, &zero)]);
        }
        // A healthy serving GPU that also publishes engine activity.
        series(
            &mut om,
            metric,
            "Hostname=\"h2\",gpu=\"0\",project=\"chat\"",
            end,
            &[(180, &busy)],
        );
    }
    om.push_str("# EOF\n");
    let prometheus = start(om).await;
    let settings = PrometheusSettings {
        url: format!("http://127.0.0.1:{}", prometheus.port),
        project_label: "project".into(),
        timeout: Duration::from_secs(30),
    };
    let found = burnrate::savings::insights::compute(&pool, 30, Some(&settings), chrono::Utc::now())
        .await
        .expect("insights");
    assert_eq!(found.utilisation_note, None);
    let util = |name: &str| {
        found
            .utilisation
            .iter()
            .find(|u| u.project == name)
            .unwrap_or_else(|| panic!("{name}: {:?}", found.utilisation))
    };
    let trainer = util("trainer");
    assert_eq!((trainer.gpus, trainer.p95, trainer.idle_gpus_now), (2, d("5"), 1));
    assert!(trainer.band.starts_with("overprovisioned"));
    assert_eq!(trainer.peak_memory_used_mib, Some(d("12000")));
    let chat = util("chat");
    assert!(chat.engine_active, "engine activity is preferred where published");
    assert_eq!(chat.p50, d("70"));
    assert!(chat.band.starts_with("healthy"));
    assert_eq!(util("host:h3").idle_gpus_now, 1);

    let rows = |kind: Kind| found.recommendations.iter().filter(move |r| r.kind == kind);
    let underused = rows(Kind::Underused)
        .find(|r| r.project == "trainer")
        .expect("underused");
    // GPU spend over the window × (1 − p95/60) × 30/10
    assert_eq!(
        underused.monthly_saving.round_dp(2),
        (d("2195.76") * (Decimal::ONE - d("5") / d("60")) * d("3")).round_dp(2)
    );
    assert_eq!(underused.team, "ml");
    let idle = rows(Kind::IdleGpu).find(|r| r.project == "trainer").expect("idle");
    // One idle GPU-hour (give or take one five-minute sample) at $2.7447 per GPU-hour
    // (2195.76 / 800), scaled to 30 days.
    let rate = d("2195.76") / d("800");
    let (low, high) = (rate * d("55") / d("60") * d("3"), rate * d("65") / d("60") * d("3"));
    assert!(
        idle.monthly_saving >= low && idle.monthly_saving <= high,
        "{} not in {low}..{high}",
        idle.monthly_saving
    );
    let hosts: Vec<_> = rows(Kind::IdleGpu).filter(|r| r.project.is_empty()).collect();
    assert_eq!(hosts.len(), 2, "one row per unmapped host");
    assert!(hosts.iter().any(|h| h.detail.contains("unmapped host h3")));
    assert_ne!(
        hosts[0].key(),
        hosts[1].key(),
        "a decision on one host is not a decision on the other"
    );
    assert!(
        rows(Kind::Underused).all(|r| r.project != "chat"),
        "a healthy GPU is not underused"
    );

    // An unreachable Prometheus leaves the billing rules working and says why.
    drop(prometheus);
    let found = burnrate::savings::insights::compute(&pool, 30, Some(&settings), chrono::Utc::now())
        .await
        .expect("insights without utilisation");
    assert!(
        found
            .utilisation_note
            .is_some_and(|n| n.contains("could not be reached"))
    );
    assert!(found.recommendations.iter().any(|r| r.kind == Kind::Spot));
}
