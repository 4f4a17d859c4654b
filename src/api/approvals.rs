//! `/api/v1/approvals`: each current approval with its project's spend against the cap in the
//! governing policy's current period and the days left; and approval requests, which leads
//! make for their teams' projects and admins approve or deny.

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::{Extension, Json};
use chrono::NaiveDate;
use http::StatusCode;
use serde::Deserialize;
use sqlx::PgPool;

use super::problem::Body;
use super::{ApiCaller, Problem};
use crate::enforcement::executor::Executor;
use crate::enforcement::model::{ApprovalRequest, ApprovalStanding};
use crate::enforcement::requests::{self, Decision, RequestInput};

/// Every current approval, with its project's spend against the cap and the days left.
#[utoipa::path(
    get,
    path = "/api/v1/approvals",
    operation_id = "listApprovals",
    tag = "approvals",
    responses(
        (status = 200, description = "The approvals the token may read", body = Vec<ApprovalStanding>),
        super::responses::EveryCall,
    )
)]
pub async fn list(
    State(pool): State<PgPool>,
    Extension(api): Extension<ApiCaller>,
) -> Result<Json<Vec<ApprovalStanding>>, Problem> {
    let today = chrono::Utc::now().date_naive();
    let mut conn = pool.acquire().await?;
    Ok(Json(
        crate::enforcement::standing::all(&mut conn, today, api.only_team).await?,
    ))
}

/// Waiting requests first, then decided ones, newest first (the last 500).
#[utoipa::path(
    get,
    path = "/api/v1/approvals/requests",
    operation_id = "listApprovalRequests",
    tag = "approvals",
    responses(
        (status = 200, description = "The requests the token may read", body = Vec<ApprovalRequest>),
        super::responses::EveryCall,
    )
)]
pub async fn requests_list(
    State(pool): State<PgPool>,
    Extension(api): Extension<ApiCaller>,
) -> Result<Json<Vec<ApprovalRequest>>, Problem> {
    let mut conn = pool.acquire().await?;
    Ok(Json(requests::list(&mut conn, api.only_team).await?))
}

/// A request for a project's approval.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalRequestBody {
    /// The project (its tag value); a lead's must belong to one of the lead's teams.
    pub project: String,
    /// USD per policy period, as a decimal string.
    #[schema(example = "50000", pattern = r"^[0-9]{1,13}(\.[0-9]{1,2})?$")]
    pub cap: String,
    /// The last day (UTC) the approval would count, today to a year ahead.
    #[schema(value_type = String, format = Date)]
    pub until: String,
    /// Why, 1 to 1,000 characters.
    pub reason: String,
}

/// Asks for a project's approval (admins, and leads for their teams' projects). At most one
/// request per project waits at a time.
#[utoipa::path(
    post,
    path = "/api/v1/approvals/requests",
    operation_id = "requestApproval",
    tag = "approvals",
    request_body = ApprovalRequestBody,
    responses(
        (status = 201, description = "Requested", body = ApprovalRequest),
        super::responses::WithBody,
        super::responses::EveryCall,
        (status = 403, response = super::responses::Forbidden),
        (status = 409, response = super::responses::Conflict),
    )
)]
pub async fn request(
    State(pool): State<PgPool>,
    Extension(api): Extension<ApiCaller>,
    Body(body): Body<ApprovalRequestBody>,
) -> Result<(StatusCode, Json<ApprovalRequest>), Problem> {
    let input = RequestInput {
        project: body.project,
        cap: body.cap,
        until: body.until,
        reason: body.reason,
    };
    let today = chrono::Utc::now().date_naive();
    let made = requests::create(&pool, &api.caller, &input, today).await?;
    Ok((StatusCode::CREATED, Json(made)))
}

/// An admin's answer to a request.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalDecisionBody {
    /// `approve` or `deny`.
    #[schema(pattern = "^(approve|deny)$")]
    pub decision: String,
    /// Approve with another cap (USD per period, a decimal string) than the request's.
    #[serde(default)]
    #[schema(pattern = r"^[0-9]{1,13}(\.[0-9]{1,2})?$")]
    pub cap: Option<String>,
    /// Approve until another last day than the request's.
    #[serde(default)]
    pub until: Option<NaiveDate>,
    /// Why: required to deny, 1 to 1,000 characters.
    #[serde(default)]
    pub note: Option<String>,
    /// Approve even though an approval granted after the request has a larger cap or a
    /// later last day, which this one replaces (otherwise 409).
    #[serde(default)]
    pub replace_newer: Option<bool>,
}

/// Approves a waiting request (the caller's account becomes the approver; the approval is in
/// force at once) or denies it with a reason. Admins only.
#[utoipa::path(
    post,
    path = "/api/v1/approvals/requests/{id}/decision",
    operation_id = "decideApprovalRequest",
    tag = "approvals",
    params(("id" = i64, Path, description = "The request's id")),
    request_body = ApprovalDecisionBody,
    responses(
        (status = 200, description = "Decided", body = ApprovalRequest),
        super::responses::WithBody,
        super::responses::EveryCall,
        (status = 403, response = super::responses::Forbidden),
        (status = 404, response = super::responses::NotFound),
        (status = 409, response = super::responses::Conflict),
    )
)]
pub async fn decide(
    State(pool): State<PgPool>,
    State(executor): State<std::sync::Arc<Executor>>,
    Extension(api): Extension<ApiCaller>,
    id: Result<Path<i64>, PathRejection>,
    body: Result<Body<ApprovalDecisionBody>, Problem>,
) -> Result<Json<ApprovalRequest>, Problem> {
    // An id that is no request's answers 404 whatever the body holds.
    let Path(id) = id.map_err(|_| Problem::new(StatusCode::NOT_FOUND, "no such request"))?;
    let Body(body) = body?;
    // Parsed from text, never through a float.
    let cap = match body.cap.as_deref() {
        None => None,
        Some(text) => Some(crate::format::amount::parse_amount(text).map_err(|m| Problem::invalid("cap", m))?),
    };
    let decision = Decision::parse(&body.decision, cap, body.until, body.note.as_deref())?
        .replacing_newer(body.replace_newer.unwrap_or(false));
    let today = chrono::Utc::now().date_naive();
    Ok(Json(
        requests::decide(&pool, &executor, &api.caller, id, &decision, today).await?,
    ))
}
