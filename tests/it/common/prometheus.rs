//! A real Prometheus (the Debian package) on a loopback port, loaded with DCGM exporter
//! series through `promtool tsdb create-blocks-from openmetrics`, stopped when dropped. The
//! series come from `tests/fixtures/dcgm_workloads.py`: one GPU per workload shape measured
//! on a real H100.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub struct Prometheus {
    child: Child,
    pub port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The workload shapes' series ending at `end`, with the shapes' projects renamed.
pub fn workloads(end: i64, projects: &[(&str, &str)]) -> String {
    let mut command = Command::new("python3");
    command
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/dcgm_workloads.py"))
        .arg("--end")
        .arg(end.to_string());
    for (shape, project) in projects {
        command.arg("--project").arg(format!("{shape}={project}"));
    }
    let out = command.output().expect("python3 runs the DCGM series generator");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8 series")
}

pub async fn start(openmetrics: String) -> Prometheus {
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
    run(dir, "global:\n  scrape_interval: 1m\n", &data).await
}

/// A Prometheus with no data of its own that scrapes `target` (host:port) every second at
/// `/metrics`, with `bearer` as its token when given: the way an operator's would.
pub async fn scraping(target: &str, bearer: Option<&str>) -> Prometheus {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let authorization = bearer.map_or(String::new(), |token| {
        format!("    authorization:\n      type: Bearer\n      credentials: {token}\n")
    });
    let config = format!(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: burnrate\n{authorization}    static_configs:\n      - targets: ['{target}']\n"
    );
    run(dir, &config, &data).await
}

async fn run(dir: tempfile::TempDir, config_text: &str, data: &std::path::Path) -> Prometheus {
    let config = dir.path().join("prometheus.yml");
    std::fs::write(&config, config_text).expect("config");
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
