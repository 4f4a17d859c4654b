//! GPU utilisation from CloudWatch, for fleets without Prometheus (`BURNRATE_CLOUDWATCH=on`),
//! in every region of `BURNRATE_AWS_REGIONS`:
//! - SageMaker real-time endpoints (InService): `GPUUtilization` and `GPUMemoryUtilization`
//!   (namespace `/aws/sagemaker/Endpoints`, 0–100 × the instance's GPUs) and `Invocations`
//!   (`AWS/SageMaker`, Sum), per endpoint and variant; the project is the endpoint's tag.
//!   <https://docs.aws.amazon.com/sagemaker/latest/dg/monitoring-cloudwatch.html>
//! - EC2 instances running the CloudWatch agent's NVIDIA collector:
//!   `nvidia_smi_utilization_gpu`, `nvidia_smi_memory_used` and `nvidia_smi_memory_total`
//!   (namespace `CWAgent`), with the dimension sets `ListMetrics` reports; the project is the
//!   instance's tag (`DescribeInstances`).
//!   <https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch-Agent-NVIDIA-GPU.html>
//! - `GetMetricData` takes at most 500 queries and returns at most 100,800 data points a call
//!   before paging with `NextToken`; batches are sized so one call's points fit, and every
//!   page is read.
//!   <https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_GetMetricData.html>
//!
//! Every series lands on the same five-minute grid as DCGM's, so the same rules judge it.

mod discover;
mod fetch;
mod traffic;

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use aws_config::SdkConfig;
use aws_sdk_cloudwatch::error::{ProvideErrorMetadata, SdkError};
use rust_decimal::Decimal;

use crate::config::CloudWatchSettings;
use crate::savings::gpu_series::{GpuSeries, Grid};

/// Data points one `GetMetricData` call returns before it pages.
pub const POINTS_PER_CALL: usize = 100_800;
/// Queries one `GetMetricData` call takes.
pub const QUERIES_PER_CALL: usize = 500;
/// Tries per read call: CloudWatch throttles past 50 GetMetricData calls a second.
const READ_ATTEMPTS: u32 = 4;
/// An endpoint without an invocation for this long is idle: its whole cost is the saving.
pub const IDLE_ENDPOINT_DAYS: i64 = 14;

pub(super) const AGENT_NAMESPACE: &str = "CWAgent";
pub(super) const AGENT_UTIL: &str = "nvidia_smi_utilization_gpu";
pub(super) const AGENT_MEMORY_USED: &str = "nvidia_smi_memory_used";
pub(super) const AGENT_MEMORY_TOTAL: &str = "nvidia_smi_memory_total";
pub(super) const ENDPOINT_NAMESPACE: &str = "/aws/sagemaker/Endpoints";
pub(super) const INVOCATIONS_NAMESPACE: &str = "AWS/SageMaker";

/// One SageMaker endpoint variant as CloudWatch and SageMaker describe it.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    pub region: String,
    pub name: String,
    pub variant: String,
    /// The project tag's value, if the endpoint carries it.
    pub project: Option<String>,
    /// SageMaker's name, `ml.g5.xlarge`.
    pub instance_type: String,
    pub instances: u32,
    pub gpus_per_instance: u32,
    /// Where the read's steps begin (unix seconds): invocations are known from here on.
    pub observed_since: i64,
    /// The read's newest step (unix seconds).
    pub read_at: i64,
    /// Requests over the last [`IDLE_ENDPOINT_DAYS`] days (`Invocations`, or
    /// `InvocationsProcessed` for an asynchronous endpoint), as CloudWatch's points add up.
    pub recent_invocations: f64,
    /// Since when it has run (unix seconds): its creation, or its first GPU data point in the
    /// window when that is earlier than what SageMaker reports.
    pub running_since: Option<i64>,
    /// The start of the stretch CloudWatch shows without requests that runs to now, if any.
    pub quiet_since: Option<i64>,
    /// Five-minute steps with traffic in the hours a business-hours schedule switches off
    /// ([`in_business_hours`]), since it ran, and how many of those hours CloudWatch showed.
    pub off_hours_busy: i64,
    pub off_hours_seen: i64,
    /// An asynchronous-inference endpoint (`AsyncInferenceConfig` in its config): AWS does
    /// not publish `Invocations` for it but `InvocationsProcessed` and
    /// `ApproximateBacklogSize` (<https://docs.aws.amazon.com/sagemaker/latest/dg/async-inference-monitor.html>),
    /// which judge it instead (`traffic`).
    pub asynchronous: bool,
    /// The account that owns it (from its ARN): its traffic says nothing of other accounts'
    /// spend.
    pub account: String,
}

/// Off-hours an endpoint's traffic must have been seen in, without one invocation, before a
/// business-hours schedule is advised for it: one whole week's (168 − 60 hours).
pub const OFF_HOURS_SEEN_AT_LEAST: i64 = 108;

/// Whether a moment (unix seconds) falls in the hours the business-hours schedule keeps
/// running: weekdays 08:00 to 20:00 UTC (12 h × 5 days, `rules::always_on`).
pub fn in_business_hours(unix_seconds: i64) -> bool {
    use chrono::{Datelike, Timelike, Weekday};
    chrono::DateTime::from_timestamp(unix_seconds, 0)
        .is_some_and(|t| !matches!(t.weekday(), Weekday::Sat | Weekday::Sun) && (8..20).contains(&t.hour()))
}

impl Endpoint {
    /// What alerts and snoozes name it by.
    pub fn resource(&self) -> String {
        format!("endpoint/{}/{}/{}", self.region, self.name, self.variant)
    }

    /// Whether its traffic shows the hours a schedule would switch it off are idle: a week of
    /// off-hours seen without one invocation.
    pub fn idle_off_hours(&self) -> bool {
        self.off_hours_seen >= OFF_HOURS_SEEN_AT_LEAST && self.off_hours_busy == 0
    }

    /// CloudWatch shows no request for the last 14 days, the endpoint ran all of them, and
    /// the read reached back that far (a shorter window knows nothing of the days before it).
    pub fn idle_for_two_weeks(&self, now: i64) -> bool {
        let two_weeks_ago = now - IDLE_ENDPOINT_DAYS * 86_400;
        self.recent_invocations == 0.0
            && self.quiet_since.is_some_and(|since| since <= two_weeks_ago)
            && self.observed_since <= two_weeks_ago
            && self.running_since.is_some_and(|since| since <= two_weeks_ago)
    }
}

/// What one read of CloudWatch found, and what it cost.
#[derive(Debug, Default)]
pub struct CloudWatchRead {
    pub series: GpuSeries,
    pub endpoints: Vec<Endpoint>,
    /// `GetMetricData` calls and the metrics they requested (each page counts its queries
    /// again): CloudWatch bills per metric requested.
    pub get_metric_data_calls: u64,
    pub metrics_requested: u64,
    /// Regions that could not be read this time; the others' data stands.
    pub failed_regions: Vec<CloudWatchError>,
    /// Endpoint variants not judged, and why (serverless, inference components, traffic
    /// CloudWatch does not show).
    pub skipped: Vec<(String, String)>,
    /// Each real-time endpoint's `Invocations` by the minute over the last 15 days (the
    /// first minute's start, then one value a minute, `NaN` where CloudWatch has no point),
    /// and each asynchronous one's `ApproximateBacklogSize` on the grid; by endpoint index.
    pub(super) minutes: BTreeMap<usize, (i64, Vec<f32>)>,
    pub(super) backlog: BTreeMap<usize, Vec<f32>>,
}

#[derive(Debug, Clone, thiserror::Error)]
#[error("CloudWatch could not be read in {region}: {message}")]
pub struct CloudWatchError {
    pub region: String,
    pub message: String,
}

/// AWS's code and message for a refusal; the transport's error chain otherwise.
pub(super) fn failed<E, R>(region: &str, err: SdkError<E, R>) -> CloudWatchError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    let message = crate::aws::error_message(&err);
    CloudWatchError {
        region: region.to_string(),
        message,
    }
}

/// How long a failed read is remembered before the next try: a failing region must not be
/// asked again (and billed) on every page view.
const RETRY_AFTER_FAILURE_SECONDS: u64 = 600;

/// The last read, or failure.
struct Last {
    settings: CloudWatchSettings,
    hour: i64,
    steps: usize,
    at: std::time::Instant,
    read: Result<Arc<CloudWatchRead>, CloudWatchError>,
}

/// The last read, reused for the hour (and a failure for ten minutes): CloudWatch bills per
/// metric requested, and a read of hundreds of GPUs takes many calls. One read runs at a
/// time, in its own task, bounded by the settings' timeout: a page whose request times out
/// does not cancel it, and the next page finds it done.
pub async fn read_hourly(settings: &CloudWatchSettings, grid: Grid) -> Result<Arc<CloudWatchRead>, CloudWatchError> {
    static LAST: LazyLock<Arc<tokio::sync::Mutex<Option<Last>>>> = LazyLock::new(Default::default);
    let settings = settings.clone();
    let cache = LAST.clone();
    let task = tokio::spawn(async move {
        let hour = grid.end().div_euclid(3600);
        let mut last = cache.lock().await;
        if let Some(found) = last.as_ref()
            && found.settings == settings
            && found.hour == hour
            && found.steps == grid.steps
            && (found.read.is_ok() || found.at.elapsed().as_secs() < RETRY_AFTER_FAILURE_SECONDS)
        {
            return found.read.clone();
        }
        let sdk = crate::aws::sdk_config_from_environment().await;
        let read = match tokio::time::timeout(settings.timeout, read(&sdk, &settings, grid)).await {
            Ok(read) => read.map(Arc::new),
            Err(_) => Err(CloudWatchError {
                region: settings.regions.join(","),
                message: format!("no complete read within {} s", settings.timeout.as_secs()),
            }),
        };
        *last = Some(Last {
            settings,
            hour,
            steps: grid.steps,
            at: std::time::Instant::now(),
            read: read.clone(),
        });
        read
    });
    task.await.unwrap_or_else(|e| {
        Err(CloudWatchError {
            region: String::new(),
            message: format!("the read stopped: {e}"),
        })
    })
}

/// Reads every configured region (the SDK's own region when none is).
pub async fn read(
    sdk: &SdkConfig,
    settings: &CloudWatchSettings,
    grid: Grid,
) -> Result<CloudWatchRead, CloudWatchError> {
    let mut out = CloudWatchRead {
        series: GpuSeries::new(grid),
        ..CloudWatchRead::default()
    };
    let regions = if settings.regions.is_empty() {
        vec![
            sdk.region()
                .map(|r| r.to_string())
                .unwrap_or_else(|| "us-east-1".to_string()),
        ]
    } else {
        settings.regions.clone()
    };
    for region in &regions {
        // One failing region leaves the others' data standing.
        if let Err(err) = read_region(sdk, settings, region, grid, &mut out).await {
            out.failed_regions.push(err);
        }
    }
    if out.failed_regions.len() == regions.len()
        && let Some(first) = out.failed_regions.first()
    {
        return Err(first.clone());
    }
    // Once, over every region's points: it converts units in place.
    fetch::finish(&mut out, grid);
    for reading in out.series.gpus.values_mut() {
        reading.read_at = Some(grid.end());
    }
    Ok(out)
}

async fn read_region(
    sdk: &SdkConfig,
    settings: &CloudWatchSettings,
    region: &str,
    grid: Grid,
    out: &mut CloudWatchRead,
) -> Result<(), CloudWatchError> {
    let region_config = aws_config::Region::new(region.to_string());
    // Every call here only reads, so the SDK's standard retries (with backoff on throttling
    // and 5xx) are safe; burnrate's shared configuration turns them off for the calls that
    // change things.
    let retry = aws_config::retry::RetryConfig::standard().with_max_attempts(READ_ATTEMPTS);
    let cloudwatch = aws_sdk_cloudwatch::Client::from_conf(
        aws_sdk_cloudwatch::config::Builder::from(sdk)
            .region(region_config.clone())
            .retry_config(retry.clone())
            .build(),
    );
    let ec2 = aws_sdk_ec2::Client::from_conf(
        aws_sdk_ec2::config::Builder::from(sdk)
            .region(region_config.clone())
            .retry_config(retry.clone())
            .build(),
    );
    let sagemaker = aws_sdk_sagemaker::Client::from_conf(
        aws_sdk_sagemaker::config::Builder::from(sdk)
            .region(region_config)
            .retry_config(retry)
            .build(),
    );
    let mut wanted = Vec::new();
    discover::agent_gpus(&cloudwatch, &ec2, settings, region, grid, &mut wanted, out).await?;
    discover::endpoints(&sagemaker, settings, region, grid, &mut wanted, out).await?;
    fetch::fetch(&cloudwatch, region, grid, wanted, out).await
}

/// What an endpoint variant costs per hour on demand, from the catalogue and `pricing:`.
pub fn hourly_cost(endpoint: &Endpoint, pricing: &crate::savings::pricing::Pricing) -> Option<Decimal> {
    let per_instance = pricing.hourly(endpoint.instance_type.trim_start_matches("ml."), &endpoint.region, true)?;
    Some(per_instance * Decimal::from(endpoint.instances))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpus_per_instance_come_from_the_catalogue() {
        assert_eq!(discover::gpus_of("ml.g5.12xlarge"), Some(4));
        assert_eq!(discover::gpus_of("ml.g5.xlarge"), Some(1));
        assert_eq!(discover::gpus_of("ml.m5.xlarge"), None);
    }

    #[test]
    fn an_endpoint_is_idle_after_two_weeks_without_invocations() {
        let now = 1_700_000_000;
        let endpoint = Endpoint {
            region: "us-east-1".into(),
            name: "chat".into(),
            variant: "AllTraffic".into(),
            project: Some("chat".into()),
            instance_type: "ml.g5.xlarge".into(),
            instances: 1,
            gpus_per_instance: 1,
            observed_since: now - 30 * 86_400,
            read_at: now,
            recent_invocations: 0.0,
            running_since: Some(now - 15 * 86_400),
            // CloudWatch showed no request since it came up.
            quiet_since: Some(now - 15 * 86_400),
            off_hours_busy: 0,
            account: "123456789012".into(),
            off_hours_seen: 0,
            asynchronous: false,
        };
        assert!(endpoint.idle_for_two_weeks(now));
        let young = Endpoint {
            running_since: Some(now - 3 * 86_400),
            ..endpoint.clone()
        };
        assert!(
            !young.idle_for_two_weeks(now),
            "three days without traffic is not two weeks"
        );
        let used = Endpoint {
            recent_invocations: 1.0,
            ..endpoint.clone()
        };
        assert!(!used.idle_for_two_weeks(now));
        // Traffic CloudWatch never showed is no evidence of idleness.
        let unknown = Endpoint {
            quiet_since: None,
            off_hours_seen: 0,
            ..endpoint.clone()
        };
        assert!(!unknown.idle_for_two_weeks(now));
        assert!(!unknown.idle_off_hours());
        // A week of off-hours shown, one of its steps with a request: no schedule.
        let off_hours = Endpoint {
            off_hours_seen: 120,
            ..endpoint
        };
        assert!(off_hours.idle_off_hours());
        assert!(
            !Endpoint {
                off_hours_busy: 1,
                ..off_hours
            }
            .idle_off_hours()
        );
    }
}
