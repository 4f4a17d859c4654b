//! The AWS calls that stop, restart and re-describe one resource.
//!
//! The calls that change things go through clients with the SDK's retries off (burnrate's
//! shared configuration): a stop or delete whose answer was lost is not sent again blindly;
//! the run records `requested` before the call, and the next pass re-describes the resource
//! and acts only on what AWS reports. States are AWS's, as documented:
//! - EC2 (<https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-instance-lifecycle.html>):
//!   `pending`, `running`, `stopping`, `stopped`, `shutting-down`, `terminated`; `StopInstances`
//!   answers `stopping` and AWS moves on asynchronously. A one-time Spot Instance cannot be
//!   stopped (`UnsupportedOperation`).
//! - SageMaker notebooks (`DescribeNotebookInstance`): `Pending`, `InService`, `Stopping`,
//!   `Stopped`, `Failed`, `Deleting`, `Updating`.
//! - Training and processing jobs: `InProgress`, `Stopping`, `Stopped`, `Completed`, `Failed`;
//!   a stopped job cannot be restarted.
//! - Endpoints (`DescribeEndpoint`): `Creating`, `InService`, `Deleting`, `Failed`, …; once
//!   deleted, `DescribeEndpoint` answers `ValidationException` ("Could not find endpoint").
//! - IAM roles (<https://docs.aws.amazon.com/IAM/latest/APIReference/API_AttachRolePolicy.html>,
//!   `DetachRolePolicy`, `ListAttachedRolePolicies`): the deny policy is attached (the role
//!   "stopped") or not ("running"); attaching an attached policy changes nothing; an unknown
//!   role or policy answers `NoSuchEntity`. IAM is eventually consistent, so an attach is
//!   `stopping` and a detach `starting` until the next `ListAttachedRolePolicies` confirms it.

use super::{CallError, Clients, Kind};

/// What AWS reports a resource as, in the words the runner needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    Running,
    /// Stopping, shutting down, or (an endpoint) being deleted.
    Stopping,
    /// Stopped, or (an endpoint) deleted.
    Stopped,
    /// Pending, starting, or (an endpoint) being created.
    Starting,
    /// Finished or terminated on its own, or no longer known to AWS.
    Gone,
    /// Any other state, as AWS names it.
    Other(String),
}

fn ec2_state(name: &str) -> Seen {
    match name {
        "pending" => Seen::Starting,
        "running" => Seen::Running,
        "stopping" | "shutting-down" => Seen::Stopping,
        "stopped" => Seen::Stopped,
        "terminated" => Seen::Gone,
        other => Seen::Other(other.to_string()),
    }
}

fn job_state(name: &str) -> Seen {
    match name {
        "InProgress" => Seen::Running,
        "Stopping" => Seen::Stopping,
        "Stopped" => Seen::Stopped,
        // It ended by itself before or while the stop was asked.
        "Completed" | "Failed" => Seen::Gone,
        other => Seen::Other(other.to_string()),
    }
}

/// AWS's "no such resource", in each service's words: SageMaker answers an unknown job
/// `ValidationException` "Requested resource not found." in practice, where its reference
/// lists `ResourceNotFound`; both mean gone.
fn not_found(err: &CallError) -> bool {
    matches!(
        err.code.as_deref(),
        Some("InvalidInstanceID.NotFound" | "NoSuchEntity" | "ResourceNotFound")
    ) || (err.code.as_deref() == Some("ValidationException")
        && ["Could not find", "RecordNotFound", "Requested resource not found"]
            .iter()
            .any(|words| err.message.contains(words)))
}

fn iam_error<E>(
    call: &'static str,
) -> impl Fn(aws_sdk_iam::error::SdkError<E, aws_sdk_iam::config::http::HttpResponse>) -> CallError
where
    E: aws_sdk_iam::error::ProvideErrorMetadata + std::error::Error + 'static,
{
    move |e| CallError::from_sdk("IAM", call, &e)
}

/// The deny policy a role's row attaches, as recorded.
fn deny_policy(restore_from: Option<&str>) -> Result<&str, CallError> {
    restore_from.filter(|p| !p.is_empty()).ok_or_else(|| CallError {
        message: "no deny policy is recorded for this role".into(),
        code: None,
        transient: false,
    })
}

/// Whether `policy` is attached to `role`: the role is held ("stopped") while it is.
async fn role_state(iam: &aws_sdk_iam::Client, role: &str, policy: &str) -> Result<Seen, CallError> {
    let mut pages = iam
        .list_attached_role_policies()
        .role_name(role)
        .into_paginator()
        .send();
    while let Some(page) = pages.next().await {
        let page = page.map_err(iam_error("ListAttachedRolePolicies"))?;
        if page.attached_policies().iter().any(|p| p.policy_arn() == Some(policy)) {
            return Ok(Seen::Stopped);
        }
    }
    Ok(Seen::Running)
}

/// Where `id` stands now. `restore_from` is a role's deny policy (unused for other kinds).
pub async fn describe(writers: &Clients, kind: Kind, id: &str, restore_from: Option<&str>) -> Result<Seen, CallError> {
    let seen = match kind {
        Kind::Role => role_state(&writers.iam, id, deny_policy(restore_from)?).await,
        Kind::Ec2 => writers
            .ec2
            .describe_instances()
            .instance_ids(id)
            .send()
            .await
            .map_err(|e| CallError::from_sdk("EC2", "DescribeInstances", &e))
            .map(|out| {
                out.reservations()
                    .iter()
                    .flat_map(|r| r.instances())
                    .find_map(|i| i.state().and_then(|s| s.name()).map(|n| ec2_state(n.as_str())))
                    .unwrap_or(Seen::Gone)
            }),
        Kind::Notebook => writers
            .sagemaker
            .describe_notebook_instance()
            .notebook_instance_name(id)
            .send()
            .await
            .map_err(|e| CallError::from_sdk("SageMaker", "DescribeNotebookInstance", &e))
            .map(|out| match out.notebook_instance_status().map(|s| s.as_str()) {
                Some("Pending") => Seen::Starting,
                Some("InService") => Seen::Running,
                Some("Stopping") => Seen::Stopping,
                Some("Stopped") => Seen::Stopped,
                Some("Deleting") | None => Seen::Gone,
                Some(other) => Seen::Other(other.to_string()),
            }),
        Kind::TrainingJob => writers
            .sagemaker
            .describe_training_job()
            .training_job_name(id)
            .send()
            .await
            .map_err(|e| CallError::from_sdk("SageMaker", "DescribeTrainingJob", &e))
            .map(|out| out.training_job_status().map_or(Seen::Gone, |s| job_state(s.as_str()))),
        Kind::ProcessingJob => writers
            .sagemaker
            .describe_processing_job()
            .processing_job_name(id)
            .send()
            .await
            .map_err(|e| CallError::from_sdk("SageMaker", "DescribeProcessingJob", &e))
            .map(|out| {
                out.processing_job_status()
                    .map_or(Seen::Gone, |s| job_state(s.as_str()))
            }),
        Kind::Endpoint => writers
            .sagemaker
            .describe_endpoint()
            .endpoint_name(id)
            .send()
            .await
            .map_err(|e| CallError::from_sdk("SageMaker", "DescribeEndpoint", &e))
            .map(|out| match out.endpoint_status().map(|s| s.as_str()) {
                Some("InService") | Some("Updating") | Some("SystemUpdating") => Seen::Running,
                Some("Deleting") => Seen::Stopping,
                Some("Creating") => Seen::Starting,
                Some(other) => Seen::Other(other.to_string()),
                None => Seen::Gone,
            }),
    };
    match seen {
        // A deleted endpoint is what its stop asked for.
        Err(err) if not_found(&err) && kind == Kind::Endpoint => Ok(Seen::Stopped),
        Err(err) if not_found(&err) => Ok(Seen::Gone),
        other => other,
    }
}

/// Asks AWS to stop `id` (delete, for an endpoint; attach the deny policy, for a role): what
/// AWS answered it is now.
pub async fn stop(writers: &Clients, kind: Kind, id: &str, restore_from: Option<&str>) -> Result<Seen, CallError> {
    match kind {
        Kind::Role => writers
            .iam
            .attach_role_policy()
            .role_name(id)
            .policy_arn(deny_policy(restore_from)?)
            .send()
            .await
            // Confirmed by the next ListAttachedRolePolicies: IAM is eventually consistent.
            .map(|_| Seen::Stopping)
            .map_err(iam_error("AttachRolePolicy")),
        Kind::Ec2 => writers
            .ec2
            .stop_instances()
            .instance_ids(id)
            .send()
            .await
            .map_err(|e| CallError::from_sdk("EC2", "StopInstances", &e))
            .map(|out| {
                out.stopping_instances()
                    .iter()
                    .find_map(|c| c.current_state().and_then(|s| s.name()).map(|n| ec2_state(n.as_str())))
                    .unwrap_or(Seen::Stopping)
            }),
        Kind::Notebook => writers
            .sagemaker
            .stop_notebook_instance()
            .notebook_instance_name(id)
            .send()
            .await
            .map(|_| Seen::Stopping)
            .map_err(|e| CallError::from_sdk("SageMaker", "StopNotebookInstance", &e)),
        Kind::TrainingJob => writers
            .sagemaker
            .stop_training_job()
            .training_job_name(id)
            .send()
            .await
            .map(|_| Seen::Stopping)
            .map_err(|e| CallError::from_sdk("SageMaker", "StopTrainingJob", &e)),
        Kind::ProcessingJob => writers
            .sagemaker
            .stop_processing_job()
            .processing_job_name(id)
            .send()
            .await
            .map(|_| Seen::Stopping)
            .map_err(|e| CallError::from_sdk("SageMaker", "StopProcessingJob", &e)),
        Kind::Endpoint => writers
            .sagemaker
            .delete_endpoint()
            .endpoint_name(id)
            .send()
            .await
            .map(|_| Seen::Stopping)
            .map_err(|e| CallError::from_sdk("SageMaker", "DeleteEndpoint", &e)),
    }
}

/// Asks AWS to bring `id` back: start an instance or notebook, create an endpoint again
/// from its recorded config, carrying the project tag `(key, value)` (AWS keeps an
/// endpoint's tags only while it exists), detach a role's deny policy. Jobs cannot be
/// restarted.
pub async fn start(
    writers: &Clients,
    kind: Kind,
    id: &str,
    restore_from: Option<&str>,
    tags: &[(String, String)],
) -> Result<Seen, CallError> {
    match kind {
        Kind::Role => writers
            .iam
            .detach_role_policy()
            .role_name(id)
            .policy_arn(deny_policy(restore_from)?)
            .send()
            .await
            .map(|_| Seen::Starting)
            .or_else(|e| match iam_error("DetachRolePolicy")(e) {
                // Not attached (an answer lost after it was detached) or the role is gone:
                // nothing of the stop is left on it.
                err if err.code.as_deref() == Some("NoSuchEntity") => Ok(Seen::Running),
                err => Err(err),
            }),
        Kind::Ec2 => writers
            .ec2
            .start_instances()
            .instance_ids(id)
            .send()
            .await
            .map_err(|e| CallError::from_sdk("EC2", "StartInstances", &e))
            .map(|out| {
                out.starting_instances()
                    .iter()
                    .find_map(|c| c.current_state().and_then(|s| s.name()).map(|n| ec2_state(n.as_str())))
                    .unwrap_or(Seen::Starting)
            }),
        Kind::Notebook => writers
            .sagemaker
            .start_notebook_instance()
            .notebook_instance_name(id)
            .send()
            .await
            .map(|_| Seen::Starting)
            .map_err(|e| CallError::from_sdk("SageMaker", "StartNotebookInstance", &e)),
        Kind::Endpoint => writers
            .sagemaker
            .create_endpoint()
            .endpoint_name(id)
            .endpoint_config_name(restore_from.unwrap_or_default())
            .set_tags(Some(
                tags.iter()
                    .map(|(key, value)| aws_sdk_sagemaker::types::Tag::builder().key(key).value(value).build())
                    .collect(),
            ))
            .send()
            .await
            .map(|_| Seen::Starting)
            .map_err(|e| CallError::from_sdk("SageMaker", "CreateEndpoint", &e)),
        Kind::TrainingJob | Kind::ProcessingJob => Err(CallError {
            message: "AWS cannot restart a stopped job; start a new one from its last checkpoint".into(),
            code: None,
            transient: false,
        }),
    }
}
