//! The reads burnrate makes in each region it watches (resource stops and CloudWatch), each
//! once, each answer held to what burnrate reads of it.

use aws_config::SdkConfig;
use aws_sdk_cloudwatch::types::{Metric, MetricDataQuery, MetricStat};
use aws_sdk_ec2::types::{Filter, InstanceStateName};
use chrono::Utc;

use super::{Finding, judged};

/// A GPU instance type to describe: its GPUs are what burnrate reads of a type.
const PROBE_TYPE: &str = "p4d.24xlarge";

/// The region's reads, and an instance carrying the project tag key (running or stopped) to
/// name in a dry run, if there is one.
pub(super) async fn regional(sdk: &SdkConfig, tag_key: &str) -> (Vec<Finding>, Option<String>) {
    let region = sdk
        .region()
        .map_or_else(|| "default region".to_string(), ToString::to_string);
    let call = |action: &str| format!("{action} ({region})");
    let mut findings = Vec::new();
    let ec2 = aws_sdk_ec2::Client::new(sdk);
    let mut instance = None;

    // The project tag key as a tag-key filter, as discovery sends it: never a value.
    let described = ec2
        .describe_instances()
        .filters(Filter::builder().name("tag-key").values(tag_key).build())
        .max_results(5)
        .send()
        .await;
    findings.push(judged(&call("ec2:DescribeInstances"), described, |answer| {
        let instances: Vec<_> = answer.reservations().iter().flat_map(|r| r.instances()).collect();
        if let Some(missing) = instances
            .iter()
            .find(|i| i.instance_id().is_none() || i.instance_type().is_none())
        {
            return Err(format!(
                "an instance without its ID or type: {:?}",
                missing.instance_id()
            ));
        }
        instance = instances
            .iter()
            .find(|i| {
                matches!(
                    i.state().and_then(|s| s.name()),
                    Some(InstanceStateName::Running | InstanceStateName::Stopped)
                )
            })
            .and_then(|i| i.instance_id().map(str::to_string));
        Ok(format!(
            "{} instances carry the tag key {tag_key:?} on the first page",
            instances.len()
        ))
    }));

    // A filter, not a type list: a region that does not offer the type answers an empty
    // list, where naming it answers InvalidInstanceType.
    let types = ec2
        .describe_instance_types()
        .filters(Filter::builder().name("instance-type").values(PROBE_TYPE).build())
        .send()
        .await;
    findings.push(judged(&call("ec2:DescribeInstanceTypes"), types, |answer| {
        let Some(described) = answer.instance_types().first() else {
            return Ok(format!("{PROBE_TYPE} is not offered here; the call is allowed"));
        };
        let gpus: i32 = described
            .gpu_info()
            .map(|g| g.gpus().iter().filter_map(|g| g.count()).sum())
            .ok_or(format!("{PROBE_TYPE} described without its GPUs"))?;
        Ok(format!("{PROBE_TYPE}: {gpus} GPUs"))
    }));

    let sagemaker = aws_sdk_sagemaker::Client::new(sdk);
    let notebooks = sagemaker.list_notebook_instances().max_results(1).send().await;
    findings.push(judged(&call("sagemaker:ListNotebookInstances"), notebooks, |a| {
        Ok(format!("{} on the first page", a.notebook_instances().len()))
    }));
    let endpoints = sagemaker.list_endpoints().max_results(1).send().await;
    findings.push(judged(&call("sagemaker:ListEndpoints"), endpoints, |a| {
        Ok(format!("{} on the first page", a.endpoints().len()))
    }));
    let training = sagemaker
        .list_training_jobs()
        .status_equals(aws_sdk_sagemaker::types::TrainingJobStatus::InProgress)
        .max_results(1)
        .send()
        .await;
    findings.push(judged(&call("sagemaker:ListTrainingJobs"), training, |a| {
        Ok(format!(
            "{} in progress on the first page",
            a.training_job_summaries().len()
        ))
    }));
    let processing = sagemaker
        .list_processing_jobs()
        .status_equals(aws_sdk_sagemaker::types::ProcessingJobStatus::InProgress)
        .max_results(1)
        .send()
        .await;
    findings.push(judged(&call("sagemaker:ListProcessingJobs"), processing, |a| {
        Ok(format!(
            "{} in progress on the first page",
            a.processing_job_summaries().len()
        ))
    }));

    let tagged = aws_sdk_resourcegroupstagging::Client::new(sdk)
        .get_resources()
        .tag_filters(
            aws_sdk_resourcegroupstagging::types::TagFilter::builder()
                .key(tag_key)
                .build(),
        )
        .resource_type_filters("sagemaker:notebook-instance")
        .resource_type_filters("sagemaker:endpoint")
        .resources_per_page(10)
        .send()
        .await;
    findings.push(judged(&call("tag:GetResources"), tagged, |a| {
        if let Some(odd) = a
            .resource_tag_mapping_list()
            .iter()
            .find(|m| m.resource_arn().is_none())
        {
            return Err(format!("a resource without its ARN: {odd:?}"));
        }
        Ok(format!(
            "{} notebooks and endpoints carry the tag key on the first page",
            a.resource_tag_mapping_list().len()
        ))
    }));

    let scaling = aws_sdk_applicationautoscaling::Client::new(sdk)
        .describe_scalable_targets()
        .service_namespace(aws_sdk_applicationautoscaling::types::ServiceNamespace::Sagemaker)
        .max_results(1)
        .send()
        .await;
    findings.push(judged(
        &call("application-autoscaling:DescribeScalableTargets"),
        scaling,
        |a| {
            Ok(format!(
                "{} SageMaker targets on the first page",
                a.scalable_targets().len()
            ))
        },
    ));

    let cloudwatch = aws_sdk_cloudwatch::Client::new(sdk);
    let metrics = cloudwatch
        .list_metrics()
        .namespace("AWS/SageMaker")
        .metric_name("Invocations")
        .send()
        .await;
    findings.push(judged(&call("cloudwatch:ListMetrics"), metrics, |a| {
        Ok(format!(
            "{} endpoint Invocations metrics on the first page",
            a.metrics().len()
        ))
    }));
    let now = Utc::now().timestamp();
    let query = MetricDataQuery::builder()
        .id("doctor")
        .metric_stat(
            MetricStat::builder()
                .metric(
                    Metric::builder()
                        .namespace("AWS/SageMaker")
                        .metric_name("Invocations")
                        .build(),
                )
                .period(300)
                .stat("Sum")
                .build(),
        )
        .build();
    let data = cloudwatch
        .get_metric_data()
        .metric_data_queries(query)
        .start_time(aws_sdk_cloudwatch::primitives::DateTime::from_secs(now - 3600))
        .end_time(aws_sdk_cloudwatch::primitives::DateTime::from_secs(now))
        .send()
        .await;
    findings.push(judged(&call("cloudwatch:GetMetricData"), data, |a| {
        let result = a.metric_data_results().first().ok_or("no result for the one query")?;
        if result.timestamps().len() != result.values().len() {
            return Err("timestamps and values of different lengths".into());
        }
        Ok(format!("{} points in the last hour", result.values().len()))
    }));
    (findings, instance)
}
