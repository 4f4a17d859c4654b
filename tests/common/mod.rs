//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::net::SocketAddr;

use burnrate::config::Config;
use burnrate::demo::{self, DemoOptions, DemoSummary};
use burnrate::server::{AppState, router};
use chrono::NaiveDate;
use sqlx::PgPool;

/// A running server on an ephemeral loopback port.
pub struct TestApp {
    pub addr: SocketAddr,
    pub pool: PgPool,
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// GETs `path`; returns the status and body.
    pub async fn get(&self, path: &str) -> (u16, String) {
        read(reqwest::get(self.url(path)).await).await
    }

    /// POSTs a form-encoded `body` to `path`, as a browser's server-function call does.
    pub async fn post_form(&self, path: &str, body: &str) -> (u16, String) {
        let response = reqwest::Client::new()
            .post(self.url(path))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body.to_string())
            .send()
            .await;
        read(response).await
    }
}

async fn read(response: reqwest::Result<reqwest::Response>) -> (u16, String) {
    let response = response.expect("request reaches the test server");
    let status = response.status().as_u16();
    (status, response.text().await.expect("response body"))
}

/// Serves the full router against `pool` on 127.0.0.1:0.
pub async fn spawn_app(pool: PgPool) -> TestApp {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind an ephemeral port");
    let addr = listener.local_addr().expect("local address");
    let mut config = Config::from_lookup(|_| None).expect("default config");
    config.addr = addr;
    let app = router(AppState::new(config, pool.clone()));
    tokio::spawn(async move {
        axum::serve(listener, app).await.expect("test server");
    });
    TestApp { addr, pool }
}

pub fn day(y: i32, m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, d).expect("valid test date")
}

pub async fn load_demo(pool: &PgPool, until: NaiveDate) -> DemoSummary {
    demo::load(pool, DemoOptions { scale: 1, until })
        .await
        .expect("demo loads")
}

pub fn today() -> NaiveDate {
    chrono::Utc::now().date_naive()
}
