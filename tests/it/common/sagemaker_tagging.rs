//! The Resource Groups Tagging API's `GetResources` for the SageMaker fake's resources, as
//! the API reference documents it
//! (<https://docs.aws.amazon.com/resourcegroupstagging/latest/APIReference/API_GetResources.html>,
//! awsJson1_1, target prefix `ResourceGroupsTaggingAPI_20170126.`):
//! - `TagFilters`: a resource matches when it carries every filter's key, with one of the
//!   filter's `Values` when it lists any (an exact match: the reference names no wildcard);
//!   a filter with no values matches any value
//!   (<https://docs.aws.amazon.com/resourcegroupstagging/latest/APIReference/API_TagFilter.html>);
//! - `ResourceTypeFilters`: `service[:resourceType]`, matched against the ARN;
//! - every job the fake knows, finished ones included (a job's tags stay with it), and every
//!   endpoint not yet deleted, as the index has it (`indexed`: an entry lagging the endpoint,
//!   as the index is updated apart from the resources it lists);
//! - `ResourcesPerPage` from 1 to 100, otherwise `InvalidParameterException`; a page may hold
//!   fewer (`tagging_page`), and the last page answers `PaginationToken` as an empty string;
//!   a token it never gave is refused (`InvalidParameterException`);
//! - not modelled: `TagsPerPage`, the filter count limits, and notebooks (moto answers those).

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};

use super::sagemaker_fake::{SageMakerState, answer, arn, error, tags_json};

pub(super) fn respond(state: &SageMakerState, request_id: &str, operation: &str, request: &Value) -> Response {
    if operation != "GetResources" {
        return error(
            request_id,
            "UnknownOperationException",
            &format!("unknown operation {operation}"),
        );
    }
    let per_page = request["ResourcesPerPage"].as_u64().unwrap_or(100);
    if !(1..=100).contains(&per_page) {
        return error(
            request_id,
            "InvalidParameterException",
            "ResourcesPerPage must be between 1 and 100",
        );
    }
    let filters: Vec<(String, Vec<String>)> = request["TagFilters"]
        .as_array()
        .map(|all| {
            all.iter()
                .map(|f| {
                    let key = f["Key"].as_str().unwrap_or("").to_string();
                    let values = f["Values"]
                        .as_array()
                        .map(|v| v.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
                        .unwrap_or_default();
                    (key, values)
                })
                .collect()
        })
        .unwrap_or_default();
    let types: Vec<String> = request["ResourceTypeFilters"]
        .as_array()
        .map(|t| t.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    let resources = state
        .training
        .iter()
        .map(|(name, job)| ("training-job", name, &job.tags))
        .chain(
            state
                .processing
                .iter()
                .map(|(name, job)| ("processing-job", name, &job.tags)),
        )
        .chain(
            state
                .endpoints
                .iter()
                .filter(|(name, _)| !state.indexed.contains_key(*name))
                .map(|(name, e)| ("endpoint", name, &e.tags)),
        )
        .chain(state.indexed.iter().map(|(name, tags)| ("endpoint", name, tags)));
    let matching: Vec<Value> = resources
        .filter(|(kind, _, _)| {
            types.is_empty()
                || types
                    .iter()
                    .any(|t| t == "sagemaker" || *t == format!("sagemaker:{kind}"))
        })
        .filter(|(_, _, tags)| {
            filters.iter().all(|(key, values)| {
                tags.iter()
                    .any(|(k, v)| k == key && (values.is_empty() || values.contains(v)))
            })
        })
        .map(|(kind, name, tags)| json!({"ResourceARN": arn(kind, name), "Tags": tags_json(tags)}))
        .collect();
    let start: usize = match request["PaginationToken"].as_str().filter(|t| !t.is_empty()) {
        None => 0,
        Some(token) => match token.parse() {
            Ok(start) => start,
            Err(_) => {
                return error(
                    request_id,
                    "InvalidParameterException",
                    "The PaginationToken is not valid",
                );
            }
        },
    };
    let size = state.tagging_page.unwrap_or(per_page as usize).min(per_page as usize);
    let end = (start + size).min(matching.len());
    let token = if end < matching.len() {
        end.to_string()
    } else {
        String::new()
    };
    answer(
        request_id,
        StatusCode::OK,
        json!({
            "ResourceTagMappingList": matching.get(start..end).unwrap_or_default(),
            "PaginationToken": token,
        }),
    )
}
