//! Finds the project's InService real-time endpoints in one region, and decides which a stop
//! may delete. Deleting is the only way to stop an endpoint's spend, and a reversal creates
//! it again from its recorded config with every tag it had. Whatever a re-created endpoint
//! would not get back, burnrate does not destroy: such an endpoint is left running, saying
//! why.
//!
//! - **Autoscaling.** Deleting an endpoint deregisters its Application Auto Scaling targets
//!   and their policies
//!   (<https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-auto-scaling-delete.html>):
//!   a re-created endpoint would not scale. Read with `DescribeScalableTargets`
//!   (<https://docs.aws.amazon.com/autoscaling/application/APIReference/API_DescribeScalableTargets.html>,
//!   namespace `sagemaker`, resource `endpoint/<name>/variant/<variant>`); an answer that
//!   cannot be read (no permission) leaves the endpoint running too.
//! - **Inference components.** An endpoint whose config's variants name no model hosts
//!   inference components, which a delete removes and its config does not hold
//!   (<https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariant.html>,
//!   `ModelName` "required unless the endpoint hosts inference components").
//! - **Deployment configuration.** `DescribeEndpoint`'s `LastDeploymentConfig` (blue/green or
//!   rolling, with its alarms) is not part of the endpoint config.
//! - **AWS's own tags.** `aws:` keys are reserved: a request cannot set them
//!   (<https://docs.aws.amazon.com/tag-editor/latest/userguide/tagging.html>), so an endpoint
//!   carrying one (a CloudFormation stack's) could not come back with it.
//! - **Instance count.** A re-created endpoint starts at its config's `InitialInstanceCount`;
//!   one whose variants now run another `CurrentInstanceCount` would not come back as it was.
//!
//! Its size is what it runs now (`CurrentInstanceCount`), as CloudWatch sizes it.

use aws_sdk_applicationautoscaling::types::{ScalableDimension, ServiceNamespace};

use super::inventory::{Inventory, Tagged, tagged};
use super::read::{Tags, one, sagemaker_error};
use super::{CallError, Clients, Found, Kind};

/// One variant of an endpoint: its config and what it runs now.
struct Variant {
    name: String,
    instance_type: String,
    model: Option<String>,
    initial: i32,
    current: Option<i32>,
}

/// InService real-time endpoints of the project, each with its config (recorded before a
/// deletion), every tag, and its variants' instances; skipped ones say why. A serverless
/// variant has no instance of its own and adds none.
pub async fn running(inv: &mut Inventory, tags: Tags<'_>) -> Result<Vec<Found>, CallError> {
    let mut out = Vec::new();
    for endpoint in inv.listed(Kind::Endpoint).await? {
        let name = endpoint.name.as_str();
        let Some(Tagged { user, all }) = tagged(inv, Kind::Endpoint, &endpoint.arn, tags).await? else {
            continue;
        };
        let sagemaker = &inv.readers.sagemaker;
        let Some(described) = one(sagemaker
            .describe_endpoint()
            .endpoint_name(name)
            .send()
            .await
            .map_err(sagemaker_error("DescribeEndpoint")))?
        else {
            continue;
        };
        let config_name = described.endpoint_config_name().unwrap_or_default().to_string();
        let Some(config) = one(sagemaker
            .describe_endpoint_config()
            .endpoint_config_name(&config_name)
            .send()
            .await
            .map_err(sagemaker_error("DescribeEndpointConfig")))?
        else {
            continue;
        };
        let variants: Vec<Variant> = config
            .production_variants()
            .iter()
            .filter_map(|v| {
                let name = v.variant_name().unwrap_or_default().to_string();
                let current = described
                    .production_variants()
                    .iter()
                    .find(|s| s.variant_name() == Some(name.as_str()))
                    .and_then(|s| s.current_instance_count());
                Some(Variant {
                    instance_type: v.instance_type()?.as_str().to_string(),
                    model: v.model_name().map(str::to_string),
                    initial: v.initial_instance_count().unwrap_or(1),
                    current,
                    name,
                })
            })
            .collect();
        // The type shown is an accelerated variant's, when any variant is one.
        let accelerated = |t: &str| crate::catalogue::looks_like_accelerator(t.strip_prefix("ml.").unwrap_or(t));
        let Some(instance_type) = variants
            .iter()
            .find(|v| accelerated(&v.instance_type))
            .or(variants.first())
            .map(|v| v.instance_type.clone())
        else {
            continue;
        };
        // Instances of that type only, as it runs them now: a CPU variant beside it adds
        // no GPU.
        let instances = variants
            .iter()
            .filter(|v| v.instance_type == instance_type)
            .map(|v| v.current.unwrap_or(v.initial))
            .sum();
        let skip = match not_restorable(&variants, described.last_deployment_config().is_some(), &all) {
            Some(why) => Some(why),
            None => autoscaled(&inv.readers, name, &variants).await?,
        };
        out.push(Found {
            account: String::new(),
            region: inv.region.clone(),
            kind: Kind::Endpoint,
            id: name.to_string(),
            instance_type,
            instances,
            launched_at: endpoint.created,
            user,
            skip,
            warning: None,
            tags: all,
            restore_from: Some(config_name),
        });
    }
    Ok(out)
}

/// Why a re-created endpoint would not be the one deleted, from its own description.
fn not_restorable(variants: &[Variant], deployment_config: bool, tags: &[(String, String)]) -> Option<String> {
    let left = |why: String| Some(format!("{why}: left running, since deleting it could not be undone"));
    // AWS refuses `aws:` keys in a request: a re-created endpoint could not carry them, and
    // one a CloudFormation stack manages would leave its stack.
    if let Some((key, value)) = tags.iter().find(|(k, _)| k.starts_with("aws:")) {
        return left(format!(
            "it carries a tag only AWS sets ({key}={value:?}; a CloudFormation stack's, say), which a re-created \
             endpoint cannot carry"
        ));
    }
    if variants.iter().any(|v| v.model.is_none()) {
        return left("it hosts inference components, which a delete removes and its config does not hold".into());
    }
    if deployment_config {
        return left(
            "it has a deployment configuration (blue/green or rolling, with alarms) that its config does not hold"
                .into(),
        );
    }
    if let Some(v) = variants.iter().find(|v| v.current.is_some_and(|c| c != v.initial)) {
        return left(format!(
            "variant {:?} runs {} instances where its config starts {}, so a re-created endpoint would not come back \
             as it is",
            v.name,
            v.current.unwrap_or_default(),
            v.initial
        ));
    }
    None
}

/// Why an endpoint with Application Auto Scaling is left running, or `None` when it has
/// none. A refusal to read it (no permission) leaves it running too; a passing fault fails
/// the listing, asked again later.
async fn autoscaled(readers: &Clients, endpoint: &str, variants: &[Variant]) -> Result<Option<String>, CallError> {
    let ids: Vec<String> = variants
        .iter()
        .map(|v| format!("endpoint/{endpoint}/variant/{}", v.name))
        .collect();
    let answer = readers
        .autoscaling
        .describe_scalable_targets()
        .service_namespace(ServiceNamespace::Sagemaker)
        .scalable_dimension(ScalableDimension::SageMakerVariantDesiredInstanceCount)
        .set_resource_ids(Some(ids))
        .send()
        .await
        .map_err(|e| CallError::from_sdk("Application Auto Scaling", "DescribeScalableTargets", &e));
    let targets = match answer {
        Ok(answer) => answer.scalable_targets().to_vec(),
        Err(err) if err.transient => return Err(err),
        Err(err) => {
            return Ok(Some(format!(
                "whether it autoscales could not be read ({}): left running, since a delete would deregister its \
                 scaling",
                err.message
            )));
        }
    };
    let Some(target) = targets.first() else {
        return Ok(None);
    };
    Ok(Some(format!(
        "it autoscales ({} from {} to {} instances): deleting it deregisters its Application Auto Scaling target and \
         policies, which a re-created endpoint would not have: left running (scale it to its minimum instead)",
        target.resource_id(),
        target.min_capacity(),
        target.max_capacity()
    )))
}
