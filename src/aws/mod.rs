//! The AWS SDK as burnrate uses it: one configuration for every service (the standard
//! credential chain, ring TLS, SDK retries off, bounded connect and request times), and the
//! Budgets client (`budgets`). Features build on these; nothing here knows burnrate's types.

pub mod budgets;
mod credentials;

pub use credentials::{describe_credentials_problem, settings_present};

use std::time::Duration;

use aws_config::default_provider::credentials::DefaultCredentialsChain;
use aws_config::environment::region::EnvironmentVariableRegionProvider;
use aws_config::meta::region::RegionProviderChain;
use aws_config::profile::ProfileFileRegionProvider;
use aws_config::provider_config::ProviderConfig;
use aws_config::retry::RetryConfig;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_smithy_http_client::tls::{self, rustls_provider::CryptoMode};

/// How long the one probe of the instance-metadata service may take to connect, and to
/// answer. Inside AWS it answers in milliseconds; outside, nothing answers at all.
const IMDS_CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
const IMDS_READ_TIMEOUT: Duration = Duration::from_secs(1);
/// Two tries, not the SDK's four: one lost packet on EC2 should not skip a scheduled
/// ingestion, and outside AWS two seconds is the most a start spends on it.
const IMDS_ATTEMPTS: u32 = 2;

/// The standard AWS credential chain (environment, profile and SSO, web identity, ECS, then
/// the instance's role) with ring TLS and SDK retries off (each service sets its own).
/// Connecting and each request are bounded by `BURNRATE_AWS_CONNECT_TIMEOUT` and
/// `BURNRATE_AWS_TIMEOUT`.
///
/// Two departures from the SDK's defaults keep a start outside AWS quick and quiet:
/// - the region comes from `AWS_REGION`/`AWS_DEFAULT_REGION` or the profile, else
///   us-east-1, the home of Cost Explorer and Budgets; it is never asked of the instance
///   metadata service;
/// - the instance's role is asked for at most twice, each with a 1 s timeout, instead of
///   four times. `AWS_EC2_METADATA_DISABLED=true` skips that probe entirely.
///
/// Callers that ask the chain for credentials directly bound the wait with
/// [`credentials_within`].
pub async fn sdk_config_from_environment() -> SdkConfig {
    let timeouts = crate::config::Timeouts::from_env();
    let timeout_config = aws_config::timeout::TimeoutConfig::builder()
        .connect_timeout(timeouts.aws_connect)
        .operation_timeout(timeouts.aws_operation)
        .build();
    let region = RegionProviderChain::first_try(EnvironmentVariableRegionProvider::new())
        .or_else(ProfileFileRegionProvider::new())
        .region()
        .await
        .unwrap_or_else(|| Region::new("us-east-1"));
    // The chain's own clients (SSO, STS for web identity and assumed roles) get the same
    // bounds and no retries, as the loader would give them.
    let provider_config = ProviderConfig::default()
        .with_http_client(https_client())
        .with_region(Some(region.clone()))
        .with_timeout_config(timeout_config.clone())
        .with_retry_config(RetryConfig::disabled());
    let imds = aws_config::imds::Client::builder()
        .configure(&provider_config)
        .max_attempts(IMDS_ATTEMPTS)
        .connect_timeout(IMDS_CONNECT_TIMEOUT)
        .read_timeout(IMDS_READ_TIMEOUT)
        .build();
    let credentials = DefaultCredentialsChain::builder()
        .configure(provider_config)
        .region(region.clone())
        .imds_client(imds)
        .build()
        .await;
    aws_config::defaults(BehaviorVersion::latest())
        .http_client(https_client())
        .region(region)
        .credentials_provider(credentials)
        .retry_config(RetryConfig::disabled())
        .timeout_config(timeout_config)
        .load()
        .await
}

/// HTTPS with rustls on ring (already in the build for sqlx), trusting the system's roots.
/// AWS's code and message for a refusal (`ThrottlingException: Rate exceeded`); the
/// transport's error chain otherwise. Never a debug dump of the SDK's structs.
pub fn error_message<E, R>(err: &aws_sdk_sts::error::SdkError<E, R>) -> String
where
    E: aws_sdk_sts::error::ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    match err.as_service_error() {
        Some(service) => format!(
            "{}: {}",
            service.code().unwrap_or("error"),
            service.message().unwrap_or("no message")
        ),
        None => aws_sdk_sts::error::DisplayErrorContext(err).to_string(),
    }
}

/// Error codes AWS uses for "slow down" and "try again": throttling
/// (<https://docs.aws.amazon.com/AWSEC2/latest/APIReference/throttling.html>,
/// <https://docs.aws.amazon.com/sagemaker/latest/APIReference/CommonErrors.html>) and its own
/// passing faults, and the Resource Groups Tagging API's own spellings of both and of a
/// listing to start again
/// (<https://docs.aws.amazon.com/resourcegroupstagging/latest/APIReference/API_GetResources.html>,
/// Errors). A call refused with one of these is asked again later, never recorded as a final
/// failure.
const TRANSIENT_CODES: [&str; 13] = [
    "Throttling",
    "ThrottlingException",
    "RequestLimitExceeded",
    "RequestThrottled",
    "TooManyRequestsException",
    "ServiceUnavailable",
    "Unavailable",
    "InternalError",
    "InternalFailure",
    "InsufficientInstanceCapacity",
    "ThrottledException",
    "InternalServiceException",
    "PaginationTokenExpiredException",
];

/// True when asking again later may succeed: throttling, a 5xx, a timeout, a lost
/// connection or credentials that could not be refreshed. False for AWS's own refusals
/// (permissions, a wrong state, an unknown resource) and for a request burnrate built wrong.
pub fn is_transient<E>(err: &aws_sdk_sts::error::SdkError<E, aws_sdk_sts::config::http::HttpResponse>) -> bool
where
    E: aws_sdk_sts::error::ProvideErrorMetadata + std::error::Error + 'static,
{
    use aws_sdk_sts::error::SdkError;
    match err {
        SdkError::ConstructionFailure(_) => false,
        SdkError::ServiceError(service) => {
            service.err().code().is_some_and(|code| TRANSIENT_CODES.contains(&code))
                || service.raw().status().is_server_error()
        }
        _ => true,
    }
}

pub fn https_client() -> aws_sdk_costexplorer::config::SharedHttpClient {
    aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(CryptoMode::Ring))
        .build_https()
}

/// The credentials of `config`'s chain, bounded by `BURNRATE_AWS_TIMEOUT`: asked directly
/// (not through a client's identity cache), a stalled SSO or STS endpoint would otherwise
/// hold the caller forever.
pub async fn credentials_within(
    config: &SdkConfig,
) -> Result<aws_credential_types::Credentials, aws_credential_types::provider::error::CredentialsError> {
    use aws_credential_types::provider::ProvideCredentials;
    use aws_credential_types::provider::error::CredentialsError;
    let Some(provider) = config.credentials_provider() else {
        return Err(CredentialsError::not_loaded_no_source());
    };
    let limit = crate::config::Timeouts::from_env().aws_operation;
    match tokio::time::timeout(limit, provider.provide_credentials()).await {
        Ok(result) => result,
        Err(_) => Err(CredentialsError::provider_timed_out(limit)),
    }
}
