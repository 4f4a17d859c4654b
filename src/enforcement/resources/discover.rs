//! Finds what a project runs in one region, out of the region's shared reads (`inventory`):
//! its EC2 instances (pending or running), SageMaker notebooks (InService), training and
//! processing jobs (InProgress); real-time endpoints in `endpoints`. A resource is the
//! project's only when its own project tag equals the project, byte for byte.
//!
//! Only reads: the SDK's standard retries (backoff on throttling and 5xx) are safe here.
//! Sources, for the states and fields read:
//! - <https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeInstances.html>
//!   (`tag-key` and `instance-state-name` filters, `RootDeviceType`, `InstanceLifecycle`);
//! - <https://docs.aws.amazon.com/autoscaling/ec2/userguide/ec2-auto-scaling-tagging.html>
//!   (members carry `aws:autoscaling:groupName`);
//! - <https://docs.aws.amazon.com/AWSEC2/latest/APIReference/Using_Filtering.html>
//!   (`*` and `?` in a filter value are wildcards; `\` escapes them): the tag key is
//!   escaped, no project value is ever sent as a filter, and each resource's own tag is
//!   compared, byte for byte;
//! - controller tags (`MANAGED_BY`): a controller that replaces what is stopped.
//! - <https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ListNotebookInstances.html>,
//!   `ListTrainingJobs`, `ListProcessingJobs`, `ListEndpoints` (`StatusEquals`),
//!   `DescribeTrainingJob` (`ResourceConfig`), `DescribeProcessingJob`
//!   (`ProcessingResources.ClusterConfig`), `DescribeEndpointConfig` (`ProductionVariants`).

use aws_sdk_ec2::types::DeviceType;

use super::inventory::{Inventory, Tagged, tagged};
pub use super::read::{Tags, literal_filter_value};
use super::read::{one, sagemaker_error, time};
use super::{CallError, Found, Kind};

/// Tag keys that mark an EC2 instance as run by a controller that replaces a stopped or
/// unhealthy member: stopping it only moves the spend to the replacement. Sources:
/// - Auto Scaling (EKS managed node groups included):
///   <https://docs.aws.amazon.com/autoscaling/ec2/userguide/ec2-auto-scaling-tagging.html>;
/// - EC2 Fleet and Spot Fleet:
///   <https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/work-with-ec2-fleets.html> and
///   <https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-fleet.html> (`aws:ec2:fleet-id`,
///   `aws:ec2spot:fleet-request-id`);
/// - EMR: <https://docs.aws.amazon.com/emr/latest/ManagementGuide/emr-plan-tags.html>
///   (`aws:elasticmapreduce:job-flow-id`, `aws:elasticmapreduce:instance-group-role`);
/// - Karpenter: <https://karpenter.sh/docs/concepts/nodeclasses/> (`karpenter.sh/nodepool`;
///   `karpenter.sh/provisioner-name` before v1beta1);
/// - AWS Batch managed compute environments: `aws:batch:compute-environment`.
pub const MANAGED_BY: [(&str, &str); 8] = [
    ("aws:autoscaling:groupName", "Auto Scaling group"),
    ("aws:ec2:fleet-id", "EC2 Fleet"),
    ("aws:ec2spot:fleet-request-id", "Spot Fleet request"),
    ("aws:elasticmapreduce:job-flow-id", "EMR cluster"),
    ("aws:elasticmapreduce:instance-group-role", "EMR instance group"),
    ("karpenter.sh/nodepool", "Karpenter node pool"),
    ("karpenter.sh/provisioner-name", "Karpenter provisioner"),
    ("aws:batch:compute-environment", "AWS Batch compute environment"),
];

/// Why an instance with these tags is left running because a controller would replace it,
/// or `None`. `tag` reads the instance's tag by key. Only AWS sets `aws:` keys; any other
/// (Karpenter's, a policy's) anyone who may tag the instance can set, so the reason says the
/// claim is unverified and should be checked.
pub fn managed_by(tag: impl Fn(&str) -> Option<String>, extra: &[String]) -> Option<String> {
    let named = MANAGED_BY.iter().map(|(k, what)| (k.to_string(), what.to_string()));
    let extra = extra
        .iter()
        .map(|k| (k.clone(), "a controller the policy names".to_string()));
    named.chain(extra).find_map(|(key, what)| {
        tag(&key).map(|value| {
            let claimed = if key.starts_with("aws:") {
                ""
            } else {
                "; anyone who may tag the instance can set this tag, so check that it really is"
            };
            format!(
                "run by {what} {value:?} (tag {key}), which would replace it if stopped, so the spend goes on: left \
                 running (scale it down instead){claimed}"
            )
        })
    })
}

/// Everything of `kinds` the project runs in the inventory's region, accelerated or not
/// (the caller keeps what a stop is for).
pub async fn running(inv: &mut Inventory, tags: Tags<'_>, kinds: &[Kind]) -> Result<Vec<Found>, CallError> {
    let mut found = Vec::new();
    if kinds.contains(&Kind::Ec2) {
        let mut ec2 = instances(inv, tags).await?;
        super::instance_store::judge(inv, &mut ec2, tags.allow_instance_store).await?;
        found.extend(ec2);
    }
    for kind in [Kind::Notebook, Kind::TrainingJob, Kind::ProcessingJob] {
        if kinds.contains(&kind) {
            found.extend(sagemaker_resources(inv, tags, kind).await?);
        }
    }
    if kinds.contains(&Kind::Endpoint) {
        found.extend(super::endpoints::running(inv, tags).await?);
    }
    Ok(found)
}

async fn instances(inv: &mut Inventory, tags: Tags<'_>) -> Result<Vec<Found>, CallError> {
    let region = inv.region.clone();
    let mut out = Vec::new();
    for instance in inv.instances().await? {
        let Some(id) = instance.instance_id() else { continue };
        let tag = |key: &str| {
            instance
                .tags()
                .iter()
                .find(|t| t.key() == Some(key))
                .and_then(|t| t.value())
                .map(str::to_string)
        };
        // The instance's own tag is the judge: exactly the project, or not ours.
        if tag(tags.project_key).as_deref() != Some(tags.project) {
            continue;
        }
        let skip = if instance.root_device_type() == Some(&DeviceType::InstanceStore) {
            Some("its root volume is instance store, which does not survive a stop: left running".to_string())
        } else {
            managed_by(tag, tags.managed_by)
        };
        out.push(Found {
            account: String::new(),
            region: region.clone(),
            kind: Kind::Ec2,
            id: id.to_string(),
            instance_type: instance
                .instance_type()
                .map(|t| t.as_str().to_string())
                .unwrap_or_default(),
            instances: 1,
            launched_at: time(instance.launch_time()),
            user: tag(tags.user_key).filter(|u| !u.is_empty()),
            skip,
            warning: None,
            tags: Vec::new(),
            restore_from: None,
        });
    }
    Ok(out)
}

/// The project's notebooks (InService) or jobs (InProgress) of `kind`: a job's type and
/// count from its description, made only for the project's own.
async fn sagemaker_resources(inv: &mut Inventory, tags: Tags<'_>, kind: Kind) -> Result<Vec<Found>, CallError> {
    let mut out = Vec::new();
    for listed in inv.listed(kind).await? {
        let Some(Tagged { user, .. }) = tagged(inv, kind, &listed.arn, tags).await? else {
            continue;
        };
        let name = listed.name.as_str();
        let sagemaker = &inv.readers.sagemaker;
        let sized = match kind {
            Kind::TrainingJob => one(sagemaker
                .describe_training_job()
                .training_job_name(name)
                .send()
                .await
                .map_err(sagemaker_error("DescribeTrainingJob")))?
            .map(|d| {
                let config = d.resource_config();
                (
                    config.and_then(|c| c.instance_type()).map(|t| t.as_str().to_string()),
                    config.and_then(|c| c.instance_count()),
                )
            }),
            Kind::ProcessingJob => one(sagemaker
                .describe_processing_job()
                .processing_job_name(name)
                .send()
                .await
                .map_err(sagemaker_error("DescribeProcessingJob")))?
            .map(|d| {
                let cluster = d.processing_resources().and_then(|r| r.cluster_config());
                (
                    cluster.and_then(|c| c.instance_type()).map(|t| t.as_str().to_string()),
                    cluster.and_then(|c| c.instance_count()),
                )
            }),
            _ => Some((listed.instance_type.clone(), Some(1))),
        };
        // Ended or deleted between the list and its description: not running.
        let Some((instance_type, count)) = sized else {
            continue;
        };
        out.push(Found {
            account: String::new(),
            region: inv.region.clone(),
            kind,
            id: listed.name.clone(),
            instance_type: instance_type.unwrap_or_default(),
            instances: count.unwrap_or(1),
            launched_at: listed.created,
            user,
            skip: None,
            warning: None,
            tags: Vec::new(),
            restore_from: None,
        });
    }
    Ok(out)
}
