//! A SageMaker fake on loopback for training jobs, processing jobs and real-time endpoints,
//! whose stop, delete and create moto does not model as AWS does (moto 5 has no
//! StopTrainingJob, and its endpoints change state at once). It follows the SageMaker API
//! reference for the calls burnrate makes (awsJson1_1, target prefix `SageMaker.`, errors
//! as HTTP 400 with `__type`, `x-amzn-RequestId` on every answer):
//! - `ListTrainingJobs`, `ListProcessingJobs`, `ListEndpoints` with `StatusEquals`, paged by
//!   `NextToken` with `MaxResults` (default 10);
//!   <https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ListTrainingJobs.html>;
//! - `DescribeTrainingJob` (`ResourceConfig`), `DescribeProcessingJob`
//!   (`ProcessingResources.ClusterConfig`), `DescribeEndpoint`, `DescribeEndpointConfig`
//!   (`ProductionVariants`), `ListTags`;
//! - `StopTrainingJob` and `StopProcessingJob` move an `InProgress` job to `Stopping`; AWS
//!   then ends it `Stopped`, asynchronously (`settle` here)
//!   (<https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_StopTrainingJob.html>,
//!   `TrainingJobStatus` in `DescribeTrainingJob`). The reference lists only
//!   `ResourceNotFound` for an unknown job, which AWS answers in practice as
//!   `ValidationException` "Requested resource not found."; a job in any other state is
//!   refused here with `ValidationException`, as AWS answers in practice (burnrate
//!   re-describes either way);
//! - `DeleteEndpoint` moves it to `Deleting`, then it is gone
//!   (<https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_DeleteEndpoint.html>,
//!   `EndpointStatus` in `DescribeEndpoint`); describing a deleted endpoint answers
//!   `ValidationException` "Could not find endpoint", as AWS answers in practice. Its tags
//!   go with it (tags belong to the resource; a new endpoint of the same name has only the
//!   tags `CreateEndpoint` gives it);
//! - `CreateEndpoint` creates it `Creating`, then `InService`, with the tags it was given;
//!   a name in use, or a tag key starting `aws:` (reserved), is refused
//!   (<https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateEndpoint.html>);
//! - `DescribeEndpoint` lists each variant's `CurrentInstanceCount`
//!   (<https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariantSummary.html>):
//!   the config's count unless `current` says otherwise;
//! - the Resource Groups Tagging API's `GetResources` for its jobs and endpoints
//!   (`sagemaker_tagging`);
//! - Application Auto Scaling's `DescribeScalableTargets` (awsJson1_1, target prefix
//!   `AnyScaleFrontendService.`,
//!   <https://docs.aws.amazon.com/autoscaling/application/APIReference/API_DescribeScalableTargets.html>)
//!   for the `sagemaker` namespace: the targets in `scalable`, filtered by `ResourceIds`.
//!   Deleting an endpoint deregisters its targets
//!   (<https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-auto-scaling-delete.html>).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

const ACCOUNT: &str = "123456789012";
const CREATED: i64 = 1_793_000_000;

/// A training or processing job: its status, instance type and count, tags.
#[derive(Debug, Clone)]
pub struct FakeJob {
    pub status: String,
    pub instance_type: String,
    pub count: i64,
    pub tags: Vec<(String, String)>,
}

#[derive(Debug, Clone)]
pub struct FakeEndpoint {
    pub status: String,
    pub config: String,
    pub tags: Vec<(String, String)>,
}

#[derive(Debug, Default)]
pub struct SageMakerState {
    pub training: BTreeMap<String, FakeJob>,
    pub processing: BTreeMap<String, FakeJob>,
    pub endpoints: BTreeMap<String, FakeEndpoint>,
    /// Endpoint configs: their variants' (instance type, count).
    pub configs: BTreeMap<String, Vec<(String, i64)>>,
    /// Variants running another count than their config's, by `endpoint/variant-N`.
    pub current: BTreeMap<String, i64>,
    /// Application Auto Scaling targets, by resource id (`endpoint/E/variant/V`): (min, max).
    pub scalable: BTreeMap<String, (i64, i64)>,
    /// At most this many resources in a `GetResources` page (AWS may answer fewer than
    /// `ResourcesPerPage`); `None` for `ResourcesPerPage` itself.
    pub tagging_page: Option<usize>,
    /// What the tagging API still indexes for an endpoint, by name, where it lags SageMaker
    /// (the index is updated apart from the resource: a deleted endpoint's or a changed tag's
    /// old entry lingers a while).
    pub indexed: BTreeMap<String, Vec<(String, String)>>,
    /// Every call, by operation, with its request.
    pub calls: Vec<(String, Value)>,
    next_id: u64,
}

pub type SageMakerFake = super::LoopbackFake<SageMakerState>;

impl SageMakerFake {
    pub async fn start() -> SageMakerFake {
        super::LoopbackFake::serve(SageMakerState::default(), handle).await
    }

    /// AWS's own work finishing: stopping jobs end stopped, deleting endpoints go, creating
    /// ones come into service.
    pub fn settle(&self) {
        self.with(|s| {
            for job in s.training.values_mut().chain(s.processing.values_mut()) {
                if job.status == "Stopping" {
                    job.status = "Stopped".into();
                }
            }
            s.endpoints.retain(|_, e| e.status != "Deleting");
            for endpoint in s.endpoints.values_mut() {
                if endpoint.status == "Creating" {
                    endpoint.status = "InService".into();
                }
            }
        });
    }

    /// How many calls of `operation` were made.
    pub fn count(&self, operation: &str) -> usize {
        self.with(|s| s.calls.iter().filter(|(op, _)| op == operation).count())
    }
}

/// A job tagged `project`, running `count` instances of `instance_type`.
pub fn job(project: &str, instance_type: &str, count: i64) -> FakeJob {
    FakeJob {
        status: "InProgress".into(),
        instance_type: instance_type.into(),
        count,
        tags: vec![("project".into(), project.into())],
    }
}

pub(super) fn arn(kind: &str, name: &str) -> String {
    format!("arn:aws:sagemaker:us-east-1:{ACCOUNT}:{kind}/{name}")
}

pub(super) fn answer(request_id: &str, status: StatusCode, body: Value) -> Response {
    (
        status,
        [
            ("content-type", "application/x-amz-json-1.1"),
            ("x-amzn-requestid", request_id),
        ],
        body.to_string(),
    )
        .into_response()
}

pub(super) fn error(request_id: &str, kind: &str, message: &str) -> Response {
    answer(
        request_id,
        StatusCode::BAD_REQUEST,
        json!({"__type": kind, "Message": message}),
    )
}

/// The job a Describe or Stop call names.
fn job_name(request: &Value, training: bool) -> &str {
    let field = if training {
        "TrainingJobName"
    } else {
        "ProcessingJobName"
    };
    request[field].as_str().unwrap_or("")
}

/// A job AWS does not know. The API reference lists `ResourceNotFound`, but SageMaker
/// answers an unknown job's name with `ValidationException` "Requested resource not found."
/// in practice (as it answers "Could not find endpoint" for an endpoint); the fake answers
/// that, and burnrate reads both as gone.
fn no_such_job(request_id: &str, _name: &str) -> Response {
    error(request_id, "ValidationException", "Requested resource not found.")
}

/// One page of `items` after `NextToken`, at most `MaxResults` (default 10).
fn page(request: &Value, items: Vec<Value>, key: &str) -> Value {
    let start: usize = request["NextToken"].as_str().and_then(|t| t.parse().ok()).unwrap_or(0);
    let size = request["MaxResults"].as_u64().unwrap_or(10).clamp(1, 100) as usize;
    let end = (start + size).min(items.len());
    let mut out = json!({ key: items.get(start..end).unwrap_or_default() });
    if end < items.len() {
        out["NextToken"] = json!(end.to_string());
    }
    out
}

pub(super) fn tags_json(tags: &[(String, String)]) -> Value {
    Value::Array(tags.iter().map(|(k, v)| json!({"Key": k, "Value": v})).collect())
}

async fn handle(State(state): State<Arc<Mutex<SageMakerState>>>, headers: HeaderMap, body: String) -> Response {
    let mut state = state.lock().expect("state");
    respond(&mut state, &headers, &body)
}

fn respond(state: &mut SageMakerState, headers: &HeaderMap, body: &str) -> Response {
    state.next_id += 1;
    let request_id = format!("sm-{:08}-0000-4000-8000-000000000000", state.next_id);
    let target = headers.get("x-amz-target").and_then(|v| v.to_str().ok()).unwrap_or("");
    if let Some(operation) = target.strip_prefix("ResourceGroupsTaggingAPI_20170126.") {
        let request = serde_json::from_str::<Value>(body).unwrap_or_default();
        state.calls.push((operation.to_string(), request.clone()));
        return super::sagemaker_tagging::respond(state, &request_id, operation, &request);
    }
    if let Some(operation) = target.strip_prefix("AnyScaleFrontendService.") {
        let request = serde_json::from_str::<Value>(body).unwrap_or_default();
        state.calls.push((operation.to_string(), request.clone()));
        return autoscaling(state, &request_id, operation, &request);
    }
    let Some(operation) = target.strip_prefix("SageMaker.") else {
        return error(
            &request_id,
            "UnknownOperationException",
            &format!("unknown target {target}"),
        );
    };
    if !headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.starts_with("AWS4-HMAC-SHA256 Credential="))
    {
        return error(&request_id, "AccessDeniedException", "Request is not signed");
    }
    let Ok(request) = serde_json::from_str::<Value>(body) else {
        return error(&request_id, "ValidationException", "body is not JSON");
    };
    state.calls.push((operation.to_string(), request.clone()));
    let ok = |body: Value| answer(&request_id, StatusCode::OK, body);
    let wanted = request["StatusEquals"].as_str();
    match operation {
        "ListNotebookInstances" => ok(json!({"NotebookInstances": []})),
        "ListTrainingJobs" | "ListProcessingJobs" => {
            let training = operation == "ListTrainingJobs";
            let (jobs, kind, key, prefix) = if training {
                (&state.training, "training-job", "TrainingJobSummaries", "TrainingJob")
            } else {
                (
                    &state.processing,
                    "processing-job",
                    "ProcessingJobSummaries",
                    "ProcessingJob",
                )
            };
            let items = jobs
                .iter()
                .filter(|(_, j)| wanted.is_none_or(|w| w == j.status))
                .map(|(name, j)| {
                    json!({
                        format!("{prefix}Name"): name,
                        format!("{prefix}Arn"): arn(kind, name),
                        "CreationTime": CREATED,
                        format!("{prefix}Status"): j.status,
                    })
                })
                .collect();
            ok(page(&request, items, key))
        }
        "DescribeTrainingJob" | "DescribeProcessingJob" => {
            let training = operation == "DescribeTrainingJob";
            let name = job_name(&request, training);
            let jobs = if training { &state.training } else { &state.processing };
            let Some(j) = jobs.get(name) else {
                return no_such_job(&request_id, name);
            };
            let cluster = json!({"InstanceType": j.instance_type, "InstanceCount": j.count, "VolumeSizeInGB": 50});
            ok(if training {
                json!({
                    "TrainingJobName": name, "TrainingJobArn": arn("training-job", name),
                    "TrainingJobStatus": j.status, "SecondaryStatus": "Training",
                    "AlgorithmSpecification": {"TrainingInputMode": "File", "TrainingImage": "train:latest"},
                    "RoleArn": format!("arn:aws:iam::{ACCOUNT}:role/sagemaker"),
                    "ResourceConfig": cluster, "StoppingCondition": {"MaxRuntimeInSeconds": 86400},
                    // Where AWS will write the model (the model requires a URI here).
                    "ModelArtifacts": {"S3ModelArtifacts": format!("s3://burnrate-test/{name}/output/model.tar.gz")},
                    "CreationTime": CREATED,
                })
            } else {
                json!({
                    "ProcessingJobName": name, "ProcessingJobArn": arn("processing-job", name),
                    "ProcessingJobStatus": j.status, "AppSpecification": {"ImageUri": "process:latest"},
                    "RoleArn": format!("arn:aws:iam::{ACCOUNT}:role/sagemaker"),
                    "ProcessingResources": {"ClusterConfig": cluster}, "CreationTime": CREATED,
                })
            })
        }
        "StopTrainingJob" | "StopProcessingJob" => {
            let training = operation == "StopTrainingJob";
            let name = job_name(&request, training);
            let jobs = if training {
                &mut state.training
            } else {
                &mut state.processing
            };
            match jobs.get_mut(name) {
                None => no_such_job(&request_id, name),
                Some(j) if j.status != "InProgress" => error(
                    &request_id,
                    "ValidationException",
                    &format!("The request was rejected because the job is in status {}.", j.status),
                ),
                Some(j) => {
                    j.status = "Stopping".into();
                    ok(json!({}))
                }
            }
        }
        "ListEndpoints" => {
            let items = state
                .endpoints
                .iter()
                .filter(|(_, e)| wanted.is_none_or(|w| w == e.status))
                .map(|(name, e)| {
                    json!({
                        "EndpointName": name, "EndpointArn": arn("endpoint", name),
                        "CreationTime": CREATED, "LastModifiedTime": CREATED, "EndpointStatus": e.status,
                    })
                })
                .collect();
            ok(page(&request, items, "Endpoints"))
        }
        "DescribeEndpoint" => {
            let name = request["EndpointName"].as_str().unwrap_or("");
            match state.endpoints.get(name) {
                None => error(
                    &request_id,
                    "ValidationException",
                    &format!("Could not find endpoint \"{}\".", arn("endpoint", name)),
                ),
                Some(e) => {
                    let variants: Vec<Value> = state
                        .configs
                        .get(&e.config)
                        .into_iter()
                        .flatten()
                        .enumerate()
                        .map(|(i, (_, n))| {
                            let variant = format!("variant-{i}");
                            let current = state.current.get(&format!("{name}/{variant}")).copied().unwrap_or(*n);
                            json!({"VariantName": variant, "CurrentInstanceCount": current, "DesiredInstanceCount": current})
                        })
                        .collect();
                    ok(json!({
                        "EndpointName": name, "EndpointArn": arn("endpoint", name),
                        "EndpointConfigName": e.config, "EndpointStatus": e.status,
                        "CreationTime": CREATED, "LastModifiedTime": CREATED,
                        "ProductionVariants": variants,
                    }))
                }
            }
        }
        "DescribeEndpointConfig" => {
            let name = request["EndpointConfigName"].as_str().unwrap_or("");
            match state.configs.get(name) {
                None => error(
                    &request_id,
                    "ValidationException",
                    &format!(
                        "Could not find endpoint configuration \"{}\".",
                        arn("endpoint-config", name)
                    ),
                ),
                Some(variants) => ok(json!({
                    "EndpointConfigName": name, "EndpointConfigArn": arn("endpoint-config", name),
                    "CreationTime": CREATED,
                    "ProductionVariants": variants.iter().enumerate().map(|(i, (t, n))| json!({
                        "VariantName": format!("variant-{i}"), "ModelName": "model",
                        "InstanceType": t, "InitialInstanceCount": n,
                    })).collect::<Vec<_>>(),
                })),
            }
        }
        "DeleteEndpoint" => {
            let name = request["EndpointName"].as_str().unwrap_or("");
            match state.endpoints.get_mut(name) {
                None => error(
                    &request_id,
                    "ValidationException",
                    &format!("Could not find endpoint \"{}\".", arn("endpoint", name)),
                ),
                Some(e) => {
                    e.status = "Deleting".into();
                    ok(json!({}))
                }
            }
        }
        "CreateEndpoint" => {
            let name = request["EndpointName"].as_str().unwrap_or("").to_string();
            let config = request["EndpointConfigName"].as_str().unwrap_or("").to_string();
            if state.endpoints.contains_key(&name) {
                return error(
                    &request_id,
                    "ValidationException",
                    &format!(
                        "Cannot create already existing endpoint \"{}\".",
                        arn("endpoint", &name)
                    ),
                );
            }
            if !state.configs.contains_key(&config) {
                return error(
                    &request_id,
                    "ValidationException",
                    &format!("Could not find endpoint configuration \"{config}\"."),
                );
            }
            // `aws:` keys are AWS's own; a request cannot set them
            // (<https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_Tag.html>).
            let reserved = request["Tags"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|t| t["Key"].as_str().is_some_and(|k| k.starts_with("aws:")));
            if reserved {
                return error(
                    &request_id,
                    "ValidationException",
                    "Tag keys starting with 'aws:' are reserved",
                );
            }
            let tags = request["Tags"]
                .as_array()
                .map(|tags| {
                    tags.iter()
                        .map(|t| {
                            (
                                t["Key"].as_str().unwrap_or("").to_string(),
                                t["Value"].as_str().unwrap_or("").to_string(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            let endpoint_arn = arn("endpoint", &name);
            state.endpoints.insert(
                name,
                FakeEndpoint {
                    status: "Creating".into(),
                    config,
                    tags,
                },
            );
            ok(json!({"EndpointArn": endpoint_arn}))
        }
        "ListTags" => {
            let resource = request["ResourceArn"].as_str().unwrap_or("");
            let (kind, name) = resource
                .rsplit_once(':')
                .and_then(|(_, rest)| rest.split_once('/'))
                .unwrap_or(("", ""));
            let tags = match kind {
                "training-job" => state.training.get(name).map(|j| &j.tags),
                "processing-job" => state.processing.get(name).map(|j| &j.tags),
                "endpoint" => state.endpoints.get(name).map(|e| &e.tags),
                _ => None,
            };
            match tags {
                Some(tags) => ok(json!({"Tags": tags_json(tags)})),
                None => error(
                    &request_id,
                    "ValidationException",
                    &format!("Resource {resource} not found"),
                ),
            }
        }
        other => error(
            &request_id,
            "UnknownOperationException",
            &format!("{other} is not modelled"),
        ),
    }
}

/// Application Auto Scaling's `DescribeScalableTargets` for SageMaker variants; every other
/// operation is not modelled.
fn autoscaling(state: &SageMakerState, request_id: &str, operation: &str, request: &Value) -> Response {
    if operation != "DescribeScalableTargets" || request["ServiceNamespace"] != "sagemaker" {
        return error(
            request_id,
            "ValidationException",
            &format!("{operation} is not modelled"),
        );
    }
    let wanted: Vec<&str> = request["ResourceIds"]
        .as_array()
        .map(|ids| ids.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let targets: Vec<Value> = state
        .scalable
        .iter()
        .filter(|(id, _)| wanted.is_empty() || wanted.contains(&id.as_str()))
        .map(|(id, (min, max))| {
            json!({
                "ServiceNamespace": "sagemaker", "ResourceId": id,
                "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
                "MinCapacity": min, "MaxCapacity": max, "CreationTime": CREATED,
                "RoleARN": format!("arn:aws:iam::{ACCOUNT}:role/aws-service-role/sagemaker.application-autoscaling.amazonaws.com/AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint"),
            })
        })
        .collect();
    answer(request_id, StatusCode::OK, json!({"ScalableTargets": targets}))
}
