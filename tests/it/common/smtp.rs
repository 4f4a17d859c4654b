//! A real SMTP server on loopback: aiosmtpd (PyPI, installed by `scripts/setup.sh --tests`
//! into target/pyenv) storing every message in a maildir. It can be stopped and started on
//! the same port, to test delivery while the server is down.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub struct SmtpServer {
    pub port: u16,
    dir: tempfile::TempDir,
    child: Option<Child>,
    /// The aiosmtpd handler class: the stock Mailbox, or `picky.Picky` (tests/smtp_handlers).
    handler: &'static str,
    /// For `picky.Picky`: where it marks the first message to a "slow" recipient, which it
    /// then holds for two minutes.
    pub slow_marker: Option<std::path::PathBuf>,
}

/// One received message: envelope recipients, subject and the decoded body text.
#[derive(Debug, Clone)]
pub struct Received {
    pub rcpt_to: Vec<String>,
    pub mail_from: String,
    pub subject: String,
    pub message_id: String,
    pub body: String,
}

impl Drop for SmtpServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A port and a maildir for a server that is not running yet.
pub fn reserve() -> SmtpServer {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    SmtpServer {
        port,
        dir: tempfile::tempdir().expect("maildir"),
        child: None,
        handler: "aiosmtpd.handlers.Mailbox",
        slow_marker: None,
    }
}

/// A server that refuses every recipient whose address starts with "reject" (550) and
/// stores mail for the rest.
pub async fn start_picky() -> SmtpServer {
    let mut server = reserve();
    server.handler = "picky.Picky";
    server.start().await;
    server
}

/// A picky server that also holds the first message to a "slow" recipient (see
/// `slow_marker`).
pub async fn start_stalling() -> SmtpServer {
    let mut server = reserve();
    server.handler = "picky.Picky";
    server.slow_marker = Some(server.dir.path().join("slow-marker"));
    server.start().await;
    server
}

pub async fn start() -> SmtpServer {
    let mut server = reserve();
    server.start().await;
    server
}

impl SmtpServer {
    pub fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }

    pub async fn start(&mut self) {
        let binary = std::env::var("BURNRATE_AIOSMTPD")
            .unwrap_or_else(|_| format!("{}/target/pyenv/bin/aiosmtpd", env!("CARGO_MANIFEST_DIR")));
        assert!(
            std::path::Path::new(&binary).exists(),
            "{binary} is missing: run scripts/setup.sh --tests (or set BURNRATE_AIOSMTPD)"
        );
        let maildir = self.dir.path().join("mail");
        let mut command = Command::new(&binary);
        if let Some(marker) = &self.slow_marker {
            command.env("PICKY_SLOW_MARKER", marker);
        }
        let child = command
            .args(["-n", "-l", &format!("127.0.0.1:{}", self.port), "-c", self.handler])
            .arg(&maildir)
            .env(
                "PYTHONPATH",
                concat!(env!("CARGO_MANIFEST_DIR"), "/tests/smtp_handlers"),
            )
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("aiosmtpd starts");
        self.child = Some(child);
        for _ in 0..150 {
            if tokio::net::TcpStream::connect(("127.0.0.1", self.port)).await.is_ok() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("aiosmtpd did not listen on port {}", self.port);
    }

    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Every message received so far, oldest first.
    pub fn messages(&self) -> Vec<Received> {
        let mut files: Vec<std::path::PathBuf> = ["new", "cur"]
            .iter()
            .filter_map(|sub| std::fs::read_dir(self.dir.path().join("mail").join(sub)).ok())
            .flatten()
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .collect();
        files.sort_by_key(|path| std::fs::metadata(path).and_then(|m| m.modified()).ok());
        files
            .iter()
            .map(|path| parse(&std::fs::read_to_string(path).expect("message file")))
            .collect()
    }
}

fn parse(raw: &str) -> Received {
    let raw = raw.replace("\r\n", "\n");
    let (head, body) = raw.split_once("\n\n").unwrap_or((&raw, ""));
    // Unfold continuation lines so each header is one line.
    let head = head.replace("\n ", " ").replace("\n\t", " ");
    let header = |name: &str| {
        head.lines()
            .find_map(|line| {
                let (key, value) = line.split_once(':')?;
                key.eq_ignore_ascii_case(name).then(|| value.trim().to_string())
            })
            .unwrap_or_default()
    };
    Received {
        rcpt_to: header("X-RcptTo")
            .split(", ")
            .map(str::to_string)
            .filter(|s| !s.is_empty())
            .collect(),
        mail_from: header("X-MailFrom"),
        subject: header("Subject"),
        message_id: header("Message-ID"),
        body: decode_quoted_printable(body),
    }
}

/// Undoes quoted-printable soft breaks and escapes (lettre uses it for long lines).
fn decode_quoted_printable(text: &str) -> String {
    let joined = text.replace("=\n", "");
    let bytes = joined.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'=' && i + 2 < bytes.len())
            .then(|| std::str::from_utf8(&bytes[i + 1..i + 3]).ok())
            .flatten()
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        if let Some(byte) = escaped {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
