//! The CloudWatch front for the real SDK: `tests/fixtures/cloudwatch_rpcv2.py` speaks Smithy
//! RPC v2 CBOR, which moto 5.2.5 lacks, holds the metrics fixtures put (moto cannot read a
//! minute-by-minute fleet back), and passes every other service to moto; the recording front
//! sits before it.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use super::moto::Moto;

pub fn python() -> String {
    format!("{}/target/pyenv/bin/python", env!("CARGO_MANIFEST_DIR"))
}

pub fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// The RPC v2 CBOR front on a loopback port, stopped when dropped.
pub struct Front {
    child: Child,
    /// Through the recording front: what the code under test talks to.
    pub endpoint: String,
    /// The front itself: where fixtures put their metrics (the front holds them).
    pub direct: String,
}

impl Drop for Front {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub async fn front(moto: &Moto, max_datapoints: usize, throttle_every: u32) -> Front {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let mut child = Command::new(python())
        .arg(fixture("cloudwatch_rpcv2.py"))
        .args(["--port", &port.to_string(), "--moto", &moto.direct])
        .args(["--max-datapoints", &max_datapoints.to_string()])
        .args(["--throttle-every", &throttle_every.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the CloudWatch front starts (scripts/setup.sh --tests installs target/pyenv)");
    let mut ready = String::new();
    let stdout = child.stdout.take().expect("stdout");
    BufReader::new(stdout).read_line(&mut ready).expect("ready line");
    assert_eq!(ready.trim(), "ready");
    let direct = format!("http://127.0.0.1:{port}");
    Front {
        child,
        endpoint: super::recording::front("cloudwatch_rpcv2", &direct).await,
        direct,
    }
}
