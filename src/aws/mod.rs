//! The AWS SDK as burnrate uses it: one configuration for every service (the standard
//! credential chain, ring TLS, SDK retries off, bounded connect and request times), and the
//! Budgets client (`budgets`). Features build on these; nothing here knows burnrate's types.

pub mod budgets;

use aws_config::retry::RetryConfig;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_smithy_http_client::tls::{self, rustls_provider::CryptoMode};

/// The standard AWS chain with ring TLS and SDK retries off (each service sets its own);
/// region us-east-1 unless configured, the home of Cost Explorer and Budgets. Connecting and
/// each request are bounded by `BURNRATE_AWS_CONNECT_TIMEOUT` and `BURNRATE_AWS_TIMEOUT`.
pub async fn sdk_config_from_environment() -> SdkConfig {
    let timeouts = crate::config::Timeouts::from_env();
    let timeout_config = aws_config::timeout::TimeoutConfig::builder()
        .connect_timeout(timeouts.aws_connect)
        .operation_timeout(timeouts.aws_operation)
        .build();
    // The loader's own region chain (it shares our HTTP client for IMDS), then the default.
    let config = aws_config::defaults(BehaviorVersion::latest())
        .http_client(https_client())
        .retry_config(RetryConfig::disabled())
        .timeout_config(timeout_config)
        .load()
        .await;
    match config.region() {
        Some(_) => config,
        None => config.into_builder().region(Region::new("us-east-1")).build(),
    }
}

/// HTTPS with rustls on ring (already in the build for sqlx), trusting the system's roots.
pub fn https_client() -> aws_sdk_costexplorer::config::SharedHttpClient {
    aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(CryptoMode::Ring))
        .build_https()
}
