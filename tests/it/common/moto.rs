//! moto server (PyPI `moto[server]`, installed by `scripts/setup.sh --tests` into
//! target/pyenv) on a loopback port, behind the recording front (`recording::front`), stopped
//! when dropped.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub struct Moto {
    /// The recording front: every call burnrate makes goes here.
    pub endpoint: String,
    /// moto itself, for fixtures that seed it from a blocking subprocess: the front runs on
    /// the test's own runtime, which a blocking wait would starve.
    pub direct: String,
    child: Child,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub async fn start() -> Moto {
    let binary = std::env::var("BURNRATE_MOTO_SERVER")
        .unwrap_or_else(|_| format!("{}/target/pyenv/bin/moto_server", env!("CARGO_MANIFEST_DIR")));
    assert!(
        std::path::Path::new(&binary).exists(),
        "{binary} is missing: run scripts/setup.sh --tests (or set BURNRATE_MOTO_SERVER)"
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let child = Command::new(&binary)
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("moto_server starts");
    let mut moto = Moto {
        endpoint: format!("http://127.0.0.1:{port}"),
        direct: format!("http://127.0.0.1:{port}"),
        child,
    };
    let client = reqwest::Client::new();
    for _ in 0..150 {
        if client.get(format!("{}/moto-api/", moto.endpoint)).send().await.is_ok() {
            moto.endpoint = super::recording::front("moto", &moto.endpoint).await;
            return moto;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("moto_server did not answer on {}", moto.endpoint);
}

impl Moto {
    /// Queues GetCostAndUsage results; moto hands them out one per distinct request.
    pub async fn queue_cost_and_usage(&self, results: Vec<serde_json::Value>) {
        let response = reqwest::Client::new()
            .post(format!("{}/moto-api/static/ce/cost-and-usage-results", self.endpoint))
            .header("content-type", "application/json")
            .body(serde_json::json!({ "results": results }).to_string())
            .send()
            .await
            .expect("moto accepts results");
        assert_eq!(response.status().as_u16(), 201);
    }
}
