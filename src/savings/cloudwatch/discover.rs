//! Finding what to read: the agent's GPUs from `ListMetrics` and their instances' project
//! tags from `DescribeInstances`; the InService SageMaker endpoints with their variants'
//! instance types and counts (`DescribeEndpoint`, `DescribeEndpointConfig`) and project tags
//! (`ListTags`). Each GPU or variant adds its `GetMetricData` queries to `wanted`.

use std::collections::{BTreeMap, BTreeSet};

use aws_sdk_cloudwatch::types::{Dimension, Metric, MetricDataQuery, MetricStat};

use super::{
    AGENT_MEMORY_TOTAL, AGENT_MEMORY_USED, AGENT_NAMESPACE, AGENT_UTIL, CloudWatchError, CloudWatchRead,
    ENDPOINT_NAMESPACE, Endpoint, INVOCATIONS_NAMESPACE, failed,
};
use crate::catalogue::Catalogue;
use crate::config::CloudWatchSettings;
use crate::savings::gpu_series::{Gpu, Grid, Reading};

/// One wanted series: its query and where its points go.
pub(super) struct Wanted {
    pub query: MetricDataQuery,
    pub target: Target,
    /// Read at one minute over the last 15 days only: CloudWatch keeps one-minute points
    /// that long, and answers a query starting earlier at five minutes or coarser.
    pub by_minute: bool,
}

#[derive(Clone)]
pub(super) enum Target {
    /// A GPU's utilisation, memory used (MiB, or a share × 100 for endpoints) or memory total.
    Util(Gpu),
    MemoryUsed(Gpu),
    MemoryTotal(Gpu),
    /// A real-time endpoint's `Invocations` (Sum), at the grid's step and by the minute.
    Invocations(usize),
    InvocationsByMinute(usize),
    /// An asynchronous endpoint's `InvocationsProcessed` (Sum) and `ApproximateBacklogSize`
    /// (Maximum).
    Processed(usize),
    Backlog(usize),
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

/// The agent's GPUs: their dimension sets from `ListMetrics`, their instances' project tags.
pub(super) async fn agent_gpus(
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
            // One set per GPU: an aggregation by instance alone (no `index`) would count twice.
            if dims.iter().any(|(name, _)| name == "InstanceId") && dims.iter().any(|(name, _)| name == "index") {
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
            by_minute: false,
        });
        wanted.push(Wanted {
            query: query(id + 1, AGENT_NAMESPACE, AGENT_MEMORY_USED, &dims, "Average", period),
            target: Target::MemoryUsed(gpu.clone()),
            by_minute: false,
        });
        // The card's memory does not change: one point for the whole window.
        wanted.push(Wanted {
            query: query(id + 2, AGENT_NAMESPACE, AGENT_MEMORY_TOTAL, &dims, "Maximum", whole),
            target: Target::MemoryTotal(gpu),
            by_minute: false,
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
pub(super) async fn endpoints(
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
            let configured = config.as_ref().and_then(|c| {
                c.production_variants()
                    .iter()
                    .find(|v| v.variant_name() == Some(variant_name))
            });
            if let Some(why) = not_judged(variant, configured) {
                out.skipped
                    .push((format!("endpoint/{region}/{name}/{variant_name}"), why.to_string()));
                continue;
            }
            let instance_type = configured
                .and_then(|v| v.instance_type())
                .map(|t| t.as_str().to_string())
                .unwrap_or_default();
            let gpus_per_instance = gpus_of(&instance_type);
            let instances = variant.current_instance_count().unwrap_or(0).max(0) as u32;
            // A variant on a type without GPUs has no GPU to judge.
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
                gpus_per_instance: per_instance,
                observed_since: grid.start - grid.step,
                read_at: grid.end(),
                recent_invocations: 0.0,
                running_since: created,
                quiet_since: None,
                off_hours_busy: 0,
                off_hours_seen: 0,
                asynchronous: config.as_ref().is_some_and(|c| c.async_inference_config().is_some()),
                // arn:aws:sagemaker:<region>:<account>:endpoint/<name>
                account: arn.split(':').nth(4).unwrap_or_default().to_string(),
            };
            let gpu = Gpu {
                project: project.clone(),
                host: format!("endpoint {region}/{name}/{variant_name}"),
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
                by_minute: false,
            });
            wanted.push(Wanted {
                // The largest in each step: a peak, and pressure, are about the fullest card.
                query: query(
                    id + 1,
                    ENDPOINT_NAMESPACE,
                    "GPUMemoryUtilization",
                    &dims,
                    "Maximum",
                    grid.step,
                ),
                target: Target::MemoryUsed(gpu),
                by_minute: false,
            });
            if endpoint.asynchronous {
                // Published per endpoint, not per variant.
                let whole = [("EndpointName".to_string(), name.to_string())];
                for (n, metric, stat, target) in [
                    (2, "InvocationsProcessed", "Sum", Target::Processed(index)),
                    (3, "ApproximateBacklogSize", "Maximum", Target::Backlog(index)),
                ] {
                    wanted.push(Wanted {
                        query: query(id + n, INVOCATIONS_NAMESPACE, metric, &whole, stat, grid.step),
                        target,
                        by_minute: false,
                    });
                }
            } else {
                wanted.push(Wanted {
                    query: query(id + 2, INVOCATIONS_NAMESPACE, "Invocations", &dims, "Sum", grid.step),
                    target: Target::Invocations(index),
                    by_minute: false,
                });
                wanted.push(Wanted {
                    query: query(id + 3, INVOCATIONS_NAMESPACE, "Invocations", &dims, "Sum", 60),
                    target: Target::InvocationsByMinute(index),
                    by_minute: true,
                });
            }
            out.endpoints.push(endpoint);
        }
    }
    Ok(())
}

/// Why endpoints of a kind are not judged, as the Savings page says it.
pub(super) const SERVERLESS: &str =
    "serverless: billed per request, with no instance that could sit idle, so no idle or schedule rule applies";
pub(super) const INFERENCE_COMPONENTS: &str = "hosts inference components: SageMaker publishes their traffic per component (InferenceComponentName), which burnrate does not read yet, so it is not judged";

/// Why a variant is not judged, if it is not.
/// - Serverless variants bill per request and have no instance to be idle
///   (<https://docs.aws.amazon.com/sagemaker/latest/dg/serverless-endpoints.html>).
/// - A variant that names no model hosts inference components: its traffic is published per
///   component (`InferenceComponentName`), not per variant
///   (<https://docs.aws.amazon.com/sagemaker/latest/dg/realtime-endpoints-deploy-models.html>).
fn not_judged(
    summary: &aws_sdk_sagemaker::types::ProductionVariantSummary,
    configured: Option<&aws_sdk_sagemaker::types::ProductionVariant>,
) -> Option<&'static str> {
    if summary.current_serverless_config().is_some() || configured.is_some_and(|v| v.serverless_config().is_some()) {
        Some(SERVERLESS)
    } else if configured.is_some_and(|v| v.model_name().is_none()) {
        Some(INFERENCE_COMPONENTS)
    } else {
        None
    }
}

/// GPUs per instance of a SageMaker (`ml.`) or EC2 type, from the catalogue; `None` for a
/// type without NVIDIA GPUs the catalogue knows.
pub(super) fn gpus_of(instance_type: &str) -> Option<u32> {
    let listed = Catalogue::built_in().get(instance_type.trim_start_matches("ml."))?;
    let count = listed.accelerator_count.ceil();
    u32::try_from(count.mantissa() / 10i128.pow(count.scale()))
        .ok()
        .filter(|n| *n > 0)
}

#[cfg(test)]
mod tests {
    use aws_sdk_sagemaker::types::{ProductionVariant, ProductionVariantServerlessConfig, ProductionVariantSummary};

    use super::*;

    #[test]
    fn serverless_and_inference_component_variants_are_left_out_saying_why() {
        let summary = ProductionVariantSummary::builder().variant_name("AllTraffic").build();
        let with_model = ProductionVariant::builder()
            .variant_name("AllTraffic")
            .model_name("llm")
            .build();
        assert_eq!(not_judged(&summary, Some(&with_model)), None);
        // Inference components: the variant names no model.
        let components = ProductionVariant::builder().variant_name("AllTraffic").build();
        assert_eq!(not_judged(&summary, Some(&components)), Some(INFERENCE_COMPONENTS));
        let serverless = ProductionVariant::builder()
            .variant_name("AllTraffic")
            .model_name("llm")
            .serverless_config(
                ProductionVariantServerlessConfig::builder()
                    .memory_size_in_mb(4096)
                    .max_concurrency(5)
                    .build(),
            )
            .build();
        assert_eq!(not_judged(&summary, Some(&serverless)), Some(SERVERLESS));
    }
}
