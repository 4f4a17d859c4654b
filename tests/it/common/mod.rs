//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::net::SocketAddr;

use burnrate::audit_log::Actor;
use burnrate::auth::{Role, accounts};
use burnrate::config::Config;
use burnrate::demo::{self, DemoOptions, DemoSummary};
use burnrate::server::{AppState, serve_until};
use chrono::NaiveDate;
use sqlx::PgPool;

pub const PASSWORD: &str = "correct horse battery staple";

/// A running server on an ephemeral loopback port.
pub struct TestApp {
    pub addr: SocketAddr,
    pub pool: PgPool,
    client: reqwest::Client,
}

/// What came back: status, headers and body.
pub struct TestResponse {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: String,
}

impl TestResponse {
    pub fn header(&self, name: &str) -> String {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    }

    /// `burnrate_session=…` from Set-Cookie, ready to send back as a Cookie header.
    pub fn session_cookie(&self) -> Option<String> {
        self.headers
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find(|v| v.starts_with("burnrate_session=") && !v.starts_with("burnrate_session=;"))
            .and_then(|v| v.split(';').next())
            .map(str::to_string)
    }
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub async fn get(&self, path: &str) -> TestResponse {
        self.send(self.client.get(self.url(path)), None).await
    }

    pub async fn get_as(&self, path: &str, cookie: &str) -> TestResponse {
        self.send(self.client.get(self.url(path)), Some(cookie)).await
    }

    /// POSTs a form from this site's own pages, as a browser's server-function call does.
    pub async fn post_form(&self, path: &str, body: &str) -> TestResponse {
        self.post_with(path, body, &[("origin", &self.origin())]).await
    }

    pub async fn post_form_as(&self, path: &str, body: &str, cookie: &str) -> TestResponse {
        self.post_with(path, body, &[("origin", &self.origin()), ("cookie", cookie)])
            .await
    }

    /// The same server, reached from another loopback source address (127.0.0.2, …), as a
    /// second client machine would.
    pub fn reached_from(&self, source: &str) -> TestApp {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(std::time::Duration::from_secs(60))
            .local_address(source.parse::<std::net::IpAddr>().expect("source address"))
            .build()
            .expect("client");
        TestApp {
            addr: self.addr,
            pool: self.pool.clone(),
            client,
        }
    }

    /// POSTs a form with exactly these extra headers (for cross-site tests).
    pub async fn post_with(&self, path: &str, body: &str, headers: &[(&str, &str)]) -> TestResponse {
        let mut request = self
            .client
            .post(self.url(path))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body.to_string());
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        self.send(request, None).await
    }

    async fn send(&self, request: reqwest::RequestBuilder, cookie: Option<&str>) -> TestResponse {
        let request = match cookie {
            Some(cookie) => request.header("cookie", cookie),
            None => request,
        };
        let response = request.send().await.expect("request reaches the test server");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        TestResponse {
            status,
            headers,
            body: response.text().await.expect("response body"),
        }
    }

    /// A request to `/api/v1` as code sends it: JSON, an optional bearer token, no Origin.
    pub async fn api(&self, method: &str, path: &str, token: Option<&str>, body: Option<&str>) -> TestResponse {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut request = self.client.request(method, self.url(path));
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body.to_string());
        }
        self.send(request, None).await
    }

    /// A request with exactly this Authorization header.
    pub async fn api_authorized(&self, method: &str, path: &str, authorization: &str) -> TestResponse {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let request = self
            .client
            .request(method, self.url(path))
            .header("authorization", authorization);
        self.send(request, None).await
    }

    /// Signs in through /api/login and returns the session cookie.
    pub async fn sign_in(&self, email: &str, password: &str) -> String {
        let body = format!("email={}&password={}", encode(email), encode(password));
        let response = self.post_form("/api/login", &body).await;
        assert!(
            response.status < 400,
            "sign-in as {email} failed: {} {}",
            response.status,
            response.body
        );
        response.session_cookie().expect("sign-in sets a session cookie")
    }

    /// Creates an account with [`PASSWORD`] and signs it in.
    pub async fn session_for(&self, email: &str, role: Role) -> String {
        create_account(&self.pool, email, role).await;
        self.sign_in(email, PASSWORD).await
    }
}

pub fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

pub async fn create_account(pool: &PgPool, email: &str, role: Role) -> i64 {
    let new = accounts::NewAccount::validate(email, "", role, PASSWORD).expect("valid account");
    accounts::create(pool, &Actor::system("test"), new)
        .await
        .expect("account created")
}

/// Serves the full router against `pool` on 127.0.0.1:0.
pub async fn spawn_app(pool: PgPool) -> TestApp {
    spawn_app_with(pool, Config::from_lookup(|_| None).expect("default config")).await
}

pub async fn spawn_app_with(pool: PgPool, config: Config) -> TestApp {
    spawn_app_until(pool, config, std::future::pending()).await.0
}

/// Serves until `shutdown` resolves; the handle ends when `serve_until` returns.
pub async fn spawn_app_until(
    pool: PgPool,
    mut config: Config,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> (TestApp, tokio::task::JoinHandle<std::io::Result<()>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind an ephemeral port");
    let addr = listener.local_addr().expect("local address");
    config.addr = addr;
    // The same serving code as `burnrate serve`.
    let state = AppState::new(config, pool.clone());
    let served = tokio::spawn(serve_until(listener, state, shutdown));
    // A response that never completes fails its test within a minute, with the URL, instead
    // of stalling the whole run.
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(std::time::Duration::from_secs(60))
        .build()
        .expect("client");
    (TestApp { addr, pool, client }, served)
}

/// As `spawn_app`, but configured as `burnrate serve --addr 0.0.0.0:<port>` would be (open to
/// the network) while bound to loopback only. Returns the setup token `serve` printed, read
/// from the running server's state.
pub async fn spawn_app_exposed(pool: PgPool) -> (TestApp, Option<String>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind an ephemeral port");
    let addr = listener.local_addr().expect("local address");
    let mut config = Config::from_lookup(|_| None).expect("default config");
    config.addr = SocketAddr::from(([0, 0, 0, 0], addr.port()));
    let state = AppState::new(config, pool.clone());
    let token = state.setup_token.clone();
    tokio::spawn(serve_until(listener, state, std::future::pending()));
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(std::time::Duration::from_secs(60))
        .build()
        .expect("client");
    let app = TestApp { addr, pool, client };
    // Serving starts after the guard is armed: once the server answers, the token is set.
    assert_eq!(app.get("/healthz").await.status, 200);
    (app, token.current())
}

pub fn day(y: i32, m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, d).expect("valid test date")
}

/// The demo as `burnrate demo` loads it on `today`: through yesterday, the last three days
/// Estimated and partial.
pub async fn load_demo(pool: &PgPool, today: NaiveDate) -> DemoSummary {
    let until = today.pred_opt().expect("a day before today");
    demo::load(pool, DemoOptions { scale: 1, until })
        .await
        .expect("demo loads")
}

/// Retries quick enough for tests: throttling and transient errors are still retried.
pub const FAST_BACKOFF: burnrate::ingestion::cost_explorer::Backoff = burnrate::ingestion::cost_explorer::Backoff {
    first_delay: std::time::Duration::from_millis(5),
    max_delay: std::time::Duration::from_millis(20),
    max_attempts: 4,
};

/// Imports `text` as `burnrate config import` would (teams, budgets, policies, rules), as
/// the system; returns the changes it made.
pub async fn import_config(pool: &PgPool, text: &str) -> Vec<String> {
    let file = burnrate::as_code::parse(text).expect("a valid config file");
    burnrate::as_code::apply(pool, &Actor::system("test"), &file, false)
        .await
        .expect("imported")
}

pub fn today() -> NaiveDate {
    chrono::Utc::now().date_naive()
}

/// The fixed today of the budget and enforcement scenarios: 22 November 2026, so November
/// to date has 21 days of spend.
pub fn scenario_today() -> NaiveDate {
    day(2026, 11, 22)
}

/// Adds `project` (in `team`, if any; nothing for untagged '') and the same rollup figures
/// for every day from `from` to `last`, with no GPU or spot part, and allocates those days.
pub async fn add_project_costs(
    pool: &PgPool,
    project: &str,
    team: Option<&str>,
    (from, last): (NaiveDate, NaiveDate),
    unblended: &str,
    amortized: &str,
) {
    if !project.is_empty() {
        sqlx::query("insert into projects (name, team_id) select $1, (select id from teams where name = $2)")
            .bind(project)
            .bind(team)
            .execute(pool)
            .await
            .expect("project");
    }
    sqlx::query(
        "insert into daily_project_costs
             (day, project, unblended, amortized, gpu_unblended, gpu_amortized, spot_unblended, spot_amortized)
         select d::date, $1, $2::numeric, $3::numeric, 0, 0, 0, 0
         from generate_series($4::date, $5::date, interval '1 day') d",
    )
    .bind(project)
    .bind(unblended)
    .bind(amortized)
    .bind(from)
    .bind(last)
    .execute(pool)
    .await
    .expect("costs");
    // As every writer of the rollup does: the same days are allocated to teams again.
    let mut conn = pool.acquire().await.expect("connection");
    let range = burnrate::period::DateRange {
        from,
        to: last + chrono::Days::new(1),
    };
    burnrate::allocation::store::refresh(&mut conn, range)
        .await
        .expect("allocated");
}

/// Rewrites the allocation of every day, as every writer of the rollup does: for tests that
/// restate rollup figures with plain SQL.
pub async fn reallocate(pool: &PgPool) {
    let mut tx = pool.begin().await.expect("tx");
    burnrate::allocation::store::refresh_all(&mut tx)
        .await
        .expect("allocated");
    tx.commit().await.expect("commit");
}

/// Serves a fake's router on 127.0.0.1:0 for the rest of the test.
pub async fn serve_on_loopback(app: axum::Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await.expect("fake serves") });
    addr
}

/// A fake AWS service on loopback: its address, and its state shared with the handler that
/// answers `POST /` (every awsJson service burnrate calls posts there).
pub struct LoopbackFake<S> {
    pub addr: SocketAddr,
    pub state: std::sync::Arc<std::sync::Mutex<S>>,
}

impl<S> Clone for LoopbackFake<S> {
    fn clone(&self) -> Self {
        LoopbackFake {
            addr: self.addr,
            state: self.state.clone(),
        }
    }
}

impl<S: Send + 'static> LoopbackFake<S> {
    pub async fn serve<H, T>(state: S, handler: H) -> LoopbackFake<S>
    where
        H: axum::handler::Handler<T, std::sync::Arc<std::sync::Mutex<S>>>,
        T: 'static,
    {
        let state = std::sync::Arc::new(std::sync::Mutex::new(state));
        let app = axum::Router::new()
            .route("/", axum::routing::post(handler))
            .with_state(state.clone());
        let addr = recording::serve(std::any::type_name::<S>(), app).await;
        LoopbackFake { addr, state }
    }

    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn with<T>(&self, f: impl FnOnce(&mut S) -> T) -> T {
        f(&mut self.state.lock().expect("fake state"))
    }
}

pub mod bills;
pub mod budgets;
pub mod ce_commitments;
pub mod ce_fake;
pub mod cloudwatch_front;
pub mod moto;
pub mod prometheus;
pub mod recording;
pub mod smtp;

/// The burnrate binary on `database` with a clean AWS environment: no profile files, no
/// instance metadata, no AWS or BURNRATE variables from the developer's shell.
pub fn burnrate_command(database: &str) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_burnrate"));
    for (name, _) in std::env::vars().filter(|(name, _)| name.starts_with("AWS_") || name.starts_with("BURNRATE_")) {
        command.env_remove(name);
    }
    command
        .env("DATABASE_URL", database)
        .env("AWS_CONFIG_FILE", "/nonexistent/burnrate-test")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/burnrate-test")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("RUST_LOG", "warn");
    command
}

/// AWS SDK settings for an endpoint on loopback, signing with `access_key`.
pub async fn aws_config_at(endpoint: &str, access_key: &str) -> aws_config::SdkConfig {
    let credentials = aws_credential_types::Credentials::new(access_key, "test-secret", None, None, "tests");
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .region(aws_config::Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .credentials_provider(credentials)
        .http_client(burnrate::aws::https_client())
        .load()
        .await
}

/// A Cost Explorer client for an endpoint on loopback, signing with `access_key`.
pub async fn cost_explorer_at(endpoint: &str, access_key: &str) -> burnrate::ingestion::cost_explorer::CostExplorer {
    burnrate::ingestion::cost_explorer::CostExplorer::from_sdk_config(aws_config_at(endpoint, access_key).await)
}

/// A postgres:// URL for the database behind `pool` (for running the CLI against it).
pub async fn database_url(pool: &PgPool) -> String {
    let name: String = sqlx::query_scalar("select current_database()")
        .fetch_one(pool)
        .await
        .expect("database name");
    let base = std::env::var("DATABASE_URL").expect("DATABASE_URL is set for database tests");
    match base.rsplit_once('/') {
        Some((server, _)) => format!("{server}/{name}"),
        None => panic!("DATABASE_URL has no database part"),
    }
}
pub mod aws_proxy;
pub mod budget_actions_fake;
pub mod enforcement;
pub mod sagemaker_fake;
pub mod sagemaker_tagging;

/// Sends `signal` to process `pid`: SIGTERM to stop a server as an operator would, SIGQUIT to
/// kill one mid-run. std's `Child::kill` sends only SIGKILL.
#[allow(unsafe_code, reason = "kill(2) takes plain integers and touches no memory of ours")]
pub fn send_signal(pid: i32, signal: i32) {
    // SAFETY: kill has no memory preconditions; an unknown pid only returns an error.
    unsafe { libc::kill(pid, signal) };
}
