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

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, LazyLock};

use aws_config::SdkConfig;
use aws_sdk_cloudwatch::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_cloudwatch::types::{Dimension, Metric, MetricDataQuery, MetricStat, ScanBy};
use rust_decimal::Decimal;

use crate::catalogue::Catalogue;
use crate::config::CloudWatchSettings;
use crate::savings::gpu_series::{Gpu, GpuSeries, Grid, Reading};

/// Data points one `GetMetricData` call returns before it pages.
pub const POINTS_PER_CALL: usize = 100_800;
/// Queries one `GetMetricData` call takes.
pub const QUERIES_PER_CALL: usize = 500;
/// Tries per read call: CloudWatch throttles past 50 GetMetricData calls a second.
const READ_ATTEMPTS: u32 = 4;
/// An endpoint without an invocation for this long is idle: its whole cost is the saving.
pub const IDLE_ENDPOINT_DAYS: i64 = 14;

const AGENT_NAMESPACE: &str = "CWAgent";
const AGENT_UTIL: &str = "nvidia_smi_utilization_gpu";
const AGENT_MEMORY_USED: &str = "nvidia_smi_memory_used";
const AGENT_MEMORY_TOTAL: &str = "nvidia_smi_memory_total";
const ENDPOINT_NAMESPACE: &str = "/aws/sagemaker/Endpoints";
const INVOCATIONS_NAMESPACE: &str = "AWS/SageMaker";

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
    /// Invocations over the last [`IDLE_ENDPOINT_DAYS`] days.
    pub recent_invocations: f64,
    /// Since when it has run (unix seconds): its creation, or its first GPU data point in the
    /// window when that is earlier than what SageMaker reports.
    pub running_since: Option<i64>,
    /// The start of the stretch without invocations that runs to now, if any.
    pub quiet_since: Option<i64>,
}

impl Endpoint {
    /// What alerts and snoozes name it by.
    pub fn resource(&self) -> String {
        format!("endpoint/{}/{}/{}", self.region, self.name, self.variant)
    }

    /// No invocation in the last 14 days, having run all of them.
    pub fn idle_for_two_weeks(&self, now: i64) -> bool {
        self.recent_invocations == 0.0
            && self
                .running_since
                .is_some_and(|since| since <= now - IDLE_ENDPOINT_DAYS * 86_400)
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
}

#[derive(Debug, thiserror::Error)]
#[error("CloudWatch could not be read in {region}: {message}")]
pub struct CloudWatchError {
    pub region: String,
    pub message: String,
}

/// AWS's code and message for a refusal; the transport's error chain otherwise.
fn failed<E, R>(region: &str, err: SdkError<E, R>) -> CloudWatchError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    let message = match err.as_service_error() {
        Some(service) => format!(
            "{}: {}",
            service.code().unwrap_or("error"),
            service.message().unwrap_or("no message")
        ),
        None => DisplayErrorContext(&err).to_string(),
    };
    CloudWatchError {
        region: region.to_string(),
        message,
    }
}

/// One wanted series: its query and where its points go.
struct Wanted {
    query: MetricDataQuery,
    target: Target,
}

#[derive(Clone)]
enum Target {
    /// A GPU's utilisation, memory used (MiB, or a share × 100 for endpoints) or memory total.
    Util(Gpu),
    MemoryUsed(Gpu),
    MemoryTotal(Gpu),
    Invocations(usize),
}

fn query(
    id: usize,
    namespace: &str,
    metric: &str,
    dimensions: &[(String, String)],
    stat: &str,
    period: i64,
) -> MetricDataQuery {
    let metric = Metric::builder()
        .namespace(namespace)
        .metric_name(metric)
        .set_dimensions(Some(
            dimensions
                .iter()
                .map(|(name, value)| Dimension::builder().name(name).value(value).build())
                .collect(),
        ))
        .build();
    MetricDataQuery::builder()
        .id(format!("q{id}"))
        .metric_stat(
            MetricStat::builder()
                .metric(metric)
                .period(period as i32)
                .stat(stat)
                .build(),
        )
        .return_data(true)
        .build()
}

/// The last read, reused for an hour: CloudWatch bills per metric requested, and a read of
/// hundreds of GPUs takes many calls. One read runs at a time.
pub async fn read_hourly(settings: &CloudWatchSettings, grid: Grid) -> Result<Arc<CloudWatchRead>, CloudWatchError> {
    type Last = Option<(CloudWatchSettings, i64, Arc<CloudWatchRead>)>;
    static LAST: LazyLock<tokio::sync::Mutex<Last>> = LazyLock::new(|| tokio::sync::Mutex::new(None));
    let hour = grid.end().div_euclid(3600);
    let mut last = LAST.lock().await;
    if let Some((read_for, read_hour, read)) = last.as_ref()
        && read_for == settings
        && *read_hour == hour
    {
        return Ok(read.clone());
    }
    let sdk = crate::aws::sdk_config_from_environment().await;
    let fresh = Arc::new(read(&sdk, settings, grid).await?);
    *last = Some((settings.clone(), hour, fresh.clone()));
    Ok(fresh)
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
        read_region(sdk, settings, region, grid, &mut out).await?;
    }
    // Once, over every region's points: it converts units in place.
    finish(&mut out, grid);
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
    agent_gpus(&cloudwatch, &ec2, settings, region, grid, &mut wanted, out).await?;
    endpoints(&sagemaker, settings, region, grid, &mut wanted, out).await?;
    fetch(&cloudwatch, region, grid, wanted, out).await
}

/// The agent's GPUs: their dimension sets from `ListMetrics`, their instances' project tags.
async fn agent_gpus(
    cloudwatch: &aws_sdk_cloudwatch::Client,
    ec2: &aws_sdk_ec2::Client,
    settings: &CloudWatchSettings,
    region: &str,
    grid: Grid,
    wanted: &mut Vec<Wanted>,
    out: &mut CloudWatchRead,
) -> Result<(), CloudWatchError> {
    let mut sets: BTreeSet<Vec<(String, String)>> = BTreeSet::new();
    let mut pages = cloudwatch
        .list_metrics()
        .namespace(AGENT_NAMESPACE)
        .metric_name(AGENT_UTIL)
        .into_paginator()
        .send();
    while let Some(page) = pages.next().await {
        for metric in page.map_err(|e| failed(region, e))?.metrics() {
            let mut dims: Vec<(String, String)> = metric
                .dimensions()
                .iter()
                .filter_map(|d| Some((d.name()?.to_string(), d.value()?.to_string())))
                .collect();
            dims.sort();
            if dims.iter().any(|(name, _)| name == "InstanceId") {
                sets.insert(dims);
            }
        }
    }
    let ids: BTreeSet<String> = sets
        .iter()
        .flat_map(|d| d.iter().filter(|(n, _)| n == "InstanceId").map(|(_, v)| v.clone()))
        .collect();
    let projects = instance_projects(ec2, region, &settings.project_tag, &ids).await?;
    let period = grid.step;
    for dims in sets {
        let value = |name: &str| dims.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
        let instance = value("InstanceId").unwrap_or_default();
        let gpu = Gpu {
            project: projects.get(&instance).cloned(),
            host: instance.clone(),
            gpu: value("index").unwrap_or_default(),
        };
        let reading = Reading {
            resource: Some(format!("{region}/{instance}/gpu{}", gpu.gpu)),
            ..Reading::default()
        };
        out.series.gpus.insert(gpu.clone(), reading);
        let id = wanted.len();
        let whole = grid.end() - grid.start + grid.step;
        wanted.push(Wanted {
            query: query(id, AGENT_NAMESPACE, AGENT_UTIL, &dims, "Average", period),
            target: Target::Util(gpu.clone()),
        });
        wanted.push(Wanted {
            query: query(id + 1, AGENT_NAMESPACE, AGENT_MEMORY_USED, &dims, "Average", period),
            target: Target::MemoryUsed(gpu.clone()),
        });
        // The card's memory does not change: one point for the whole window.
        wanted.push(Wanted {
            query: query(id + 2, AGENT_NAMESPACE, AGENT_MEMORY_TOTAL, &dims, "Maximum", whole),
            target: Target::MemoryTotal(gpu),
        });
    }
    Ok(())
}

/// Each instance's project tag, through `DescribeInstances` (200 IDs per filter).
async fn instance_projects(
    ec2: &aws_sdk_ec2::Client,
    region: &str,
    tag: &str,
    ids: &BTreeSet<String>,
) -> Result<BTreeMap<String, String>, CloudWatchError> {
    let mut out = BTreeMap::new();
    let ids: Vec<String> = ids.iter().cloned().collect();
    for chunk in ids.chunks(200) {
        let filter = aws_sdk_ec2::types::Filter::builder()
            .name("instance-id")
            .set_values(Some(chunk.to_vec()))
            .build();
        let mut pages = ec2.describe_instances().filters(filter).into_paginator().send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| failed(region, e))?;
            for instance in page.reservations().iter().flat_map(|r| r.instances()) {
                let project = instance
                    .tags()
                    .iter()
                    .find(|t| t.key() == Some(tag))
                    .and_then(|t| t.value())
                    .filter(|v| !v.is_empty());
                if let (Some(id), Some(project)) = (instance.instance_id(), project) {
                    out.insert(id.to_string(), project.to_string());
                }
            }
        }
    }
    Ok(out)
}

/// The InService endpoints' variants: instance type and count, project tag, creation.
async fn endpoints(
    sagemaker: &aws_sdk_sagemaker::Client,
    settings: &CloudWatchSettings,
    region: &str,
    grid: Grid,
    wanted: &mut Vec<Wanted>,
    out: &mut CloudWatchRead,
) -> Result<(), CloudWatchError> {
    let mut pages = sagemaker
        .list_endpoints()
        .status_equals(aws_sdk_sagemaker::types::EndpointStatus::InService)
        .into_paginator()
        .send();
    let mut summaries = Vec::new();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| failed(region, e))?;
        summaries.extend(page.endpoints().iter().cloned());
    }
    for summary in summaries {
        let (Some(name), Some(arn)) = (summary.endpoint_name(), summary.endpoint_arn()) else {
            continue;
        };
        let described = sagemaker
            .describe_endpoint()
            .endpoint_name(name)
            .send()
            .await
            .map_err(|e| failed(region, e))?;
        let config = match described.endpoint_config_name() {
            Some(config) => Some(
                sagemaker
                    .describe_endpoint_config()
                    .endpoint_config_name(config)
                    .send()
                    .await
                    .map_err(|e| failed(region, e))?,
            ),
            None => None,
        };
        let tags = sagemaker
            .list_tags()
            .resource_arn(arn)
            .send()
            .await
            .map_err(|e| failed(region, e))?;
        let project = tags
            .tags()
            .iter()
            .find(|t| t.key() == Some(settings.project_tag.as_str()))
            .and_then(|t| t.value())
            .filter(|v| !v.is_empty())
            .map(str::to_string);
        let created = described.creation_time().map(|t| t.secs());
        for variant in described.production_variants() {
            let Some(variant_name) = variant.variant_name() else {
                continue;
            };
            let instance_type = config
                .as_ref()
                .and_then(|c| {
                    c.production_variants()
                        .iter()
                        .find(|v| v.variant_name() == Some(variant_name))
                })
                .and_then(|v| v.instance_type())
                .map(|t| t.as_str().to_string())
                .unwrap_or_default();
            let gpus_per_instance = gpus_of(&instance_type);
            let instances = variant.current_instance_count().unwrap_or(0).max(0) as u32;
            // A variant on a type without GPUs (or serverless) has no GPU to judge.
            let Some(per_instance) = gpus_per_instance.filter(|_| instances > 0) else {
                continue;
            };
            let index = out.endpoints.len();
            let endpoint = Endpoint {
                region: region.to_string(),
                name: name.to_string(),
                variant: variant_name.to_string(),
                project: project.clone(),
                instance_type,
                instances,
                recent_invocations: 0.0,
                running_since: created,
                quiet_since: None,
            };
            let gpu = Gpu {
                project: project.clone(),
                host: format!("endpoint {name}/{variant_name}"),
                gpu: "all".to_string(),
            };
            out.series.gpus.insert(
                gpu.clone(),
                Reading {
                    gpus: instances * per_instance,
                    resource: Some(endpoint.resource()),
                    ..Reading::default()
                },
            );
            let dims = [
                ("EndpointName".to_string(), name.to_string()),
                ("VariantName".to_string(), variant_name.to_string()),
            ];
            let id = wanted.len();
            wanted.push(Wanted {
                query: query(id, ENDPOINT_NAMESPACE, "GPUUtilization", &dims, "Average", grid.step),
                target: Target::Util(gpu.clone()),
            });
            wanted.push(Wanted {
                query: query(
                    id + 1,
                    ENDPOINT_NAMESPACE,
                    "GPUMemoryUtilization",
                    &dims,
                    "Average",
                    grid.step,
                ),
                target: Target::MemoryUsed(gpu),
            });
            wanted.push(Wanted {
                query: query(id + 2, INVOCATIONS_NAMESPACE, "Invocations", &dims, "Sum", grid.step),
                target: Target::Invocations(index),
            });
            out.endpoints.push(endpoint);
        }
    }
    Ok(())
}

/// GPUs per instance of a SageMaker (`ml.`) or EC2 type, from the catalogue; `None` for a
/// type without NVIDIA GPUs the catalogue knows.
fn gpus_of(instance_type: &str) -> Option<u32> {
    let listed = Catalogue::built_in().get(instance_type.trim_start_matches("ml."))?;
    let count = listed.accelerator_count.ceil();
    u32::try_from(count.mantissa() / 10i128.pow(count.scale()))
        .ok()
        .filter(|n| *n > 0)
}

/// Runs the queries in batches whose points fit one call, following every page.
async fn fetch(
    cloudwatch: &aws_sdk_cloudwatch::Client,
    region: &str,
    grid: Grid,
    wanted: Vec<Wanted>,
    out: &mut CloudWatchRead,
) -> Result<(), CloudWatchError> {
    let per_query = grid.steps + 1;
    let batch = (POINTS_PER_CALL / per_query).clamp(1, QUERIES_PER_CALL);
    let start = aws_sdk_cloudwatch::primitives::DateTime::from_secs(grid.start - grid.step);
    let end = aws_sdk_cloudwatch::primitives::DateTime::from_secs(grid.end() + 1);
    for chunk in wanted.chunks(batch) {
        let targets: BTreeMap<String, Target> = chunk
            .iter()
            .filter_map(|w| Some((w.query.id()?.to_string(), w.target.clone())))
            .collect();
        let mut pages = cloudwatch
            .get_metric_data()
            .set_metric_data_queries(Some(chunk.iter().map(|w| w.query.clone()).collect()))
            .start_time(start)
            .end_time(end)
            .scan_by(ScanBy::TimestampAscending)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| failed(region, e))?;
            out.get_metric_data_calls += 1;
            out.metrics_requested += chunk.len() as u64;
            for result in page.metric_data_results() {
                let Some(target) = result.id().and_then(|id| targets.get(id)) else {
                    continue;
                };
                let points = result
                    .timestamps()
                    .iter()
                    .map(|t| t.secs())
                    .zip(result.values().iter().copied());
                place(out, grid, target, points);
            }
        }
    }
    Ok(())
}

/// Puts a page's points on the grid. CloudWatch labels a period by its start; the grid's
/// step by its end.
fn place(out: &mut CloudWatchRead, grid: Grid, target: &Target, points: impl Iterator<Item = (i64, f64)>) {
    let blank = || vec![f32::NAN; grid.steps];
    match target {
        Target::Invocations(index) => {
            let Some(endpoint) = out.endpoints.get_mut(*index) else {
                return;
            };
            let recent = grid.end() - IDLE_ENDPOINT_DAYS * 86_400;
            let resource = endpoint.resource();
            let series = out
                .series
                .gpus
                .values_mut()
                .find(|r| r.resource.as_deref() == Some(resource.as_str()));
            let Some(reading) = series else { return };
            if reading.kernel.len() != grid.steps {
                reading.kernel = blank();
            }
            for (time, value) in points {
                if time + grid.step > recent {
                    endpoint.recent_invocations += value;
                }
                if let Some(i) = grid.index(time + grid.step) {
                    reading.kernel[i] = value as f32;
                }
            }
        }
        Target::Util(gpu) | Target::MemoryUsed(gpu) | Target::MemoryTotal(gpu) => {
            let Some(reading) = out.series.gpus.get_mut(gpu) else {
                return;
            };
            if let Target::MemoryTotal(_) = target {
                // A page may hold none of this query's points: keep what earlier pages gave.
                let total = points
                    .map(|(_, v)| v)
                    .chain(reading.means.memory_total_mib)
                    .reduce(f64::max);
                reading.means.memory_total_mib = total;
                return;
            }
            let series = if matches!(target, Target::Util(_)) {
                &mut reading.activity
            } else {
                &mut reading.memory
            };
            if series.len() != grid.steps {
                *series = blank();
            }
            for (time, value) in points {
                if let Some(i) = grid.index(time + grid.step) {
                    series[i] = value as f32;
                }
            }
        }
    }
}

/// Turns raw CloudWatch units into the grid's: percent per GPU, memory as a share of the
/// card, "any kernel ran" from utilisation (agent) or from invocations (endpoints).
fn finish(out: &mut CloudWatchRead, grid: Grid) {
    for endpoint in &mut out.endpoints {
        let resource = endpoint.resource();
        let Some(reading) = out
            .series
            .gpus
            .values_mut()
            .find(|r| r.resource.as_deref() == Some(resource.as_str()))
        else {
            continue;
        };
        let per_instance = (reading.gpus / endpoint.instances.max(1)).max(1) as f32;
        // 0–100 × the instance's GPUs: per GPU in percent, memory as a share.
        reading.activity.iter_mut().for_each(|v| *v /= per_instance);
        reading.memory.iter_mut().for_each(|v| *v /= per_instance * 100.0);
        let first_data = reading
            .activity
            .iter()
            .position(|v| !v.is_nan())
            .map(|i| grid.time(i) - grid.step);
        endpoint.running_since = match (endpoint.running_since, first_data) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        // A step after the endpoint came up without an invocation is quiet: SageMaker lists it
        // InService, and CloudWatch has no point for a period without requests.
        let since = endpoint.running_since.unwrap_or(i64::MAX);
        let quiet: Vec<bool> = (0..grid.steps)
            .map(|i| grid.time(i) > since && reading.kernel.get(i).is_none_or(|v| v.is_nan() || *v == 0.0))
            .collect();
        endpoint.quiet_since = match quiet.iter().rposition(|q| !q) {
            _ if !quiet.last().copied().unwrap_or(false) => None,
            Some(i) => Some(grid.time(i)),
            None => Some(since),
        };
        // Idle for the utilisation rules means no request served.
        reading.kernel = quiet
            .iter()
            .zip(&reading.activity)
            .map(|(q, a)| {
                if a.is_nan() {
                    f32::NAN
                } else if *q {
                    0.0
                } else {
                    100.0
                }
            })
            .collect();
    }
    for reading in out.series.gpus.values_mut() {
        if reading.activity.len() != grid.steps {
            reading.activity = vec![f32::NAN; grid.steps];
        }
        let observed: Vec<f64> = reading
            .activity
            .iter()
            .filter(|v| !v.is_nan())
            .map(|v| f64::from(*v))
            .collect();
        reading.means.gpu_util = (!observed.is_empty()).then(|| observed.iter().sum::<f64>() / observed.len() as f64);
        if let Some(total) = reading.means.memory_total_mib.filter(|t| *t > 0.0) {
            // Agent memory is MiB: peak, and each step as a share of the card.
            reading.means.peak_memory_used_mib = reading
                .memory
                .iter()
                .filter(|v| !v.is_nan())
                .map(|v| f64::from(*v))
                .reduce(f64::max);
            reading.memory.iter_mut().for_each(|v| *v /= total as f32);
        }
    }
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
        assert_eq!(gpus_of("ml.g5.12xlarge"), Some(4));
        assert_eq!(gpus_of("ml.g5.xlarge"), Some(1));
        assert_eq!(gpus_of("ml.m5.xlarge"), None);
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
            recent_invocations: 0.0,
            running_since: Some(now - 15 * 86_400),
            quiet_since: None,
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
            ..endpoint
        };
        assert!(!used.idle_for_two_weeks(now));
    }
}
