//! The error answers every `/api/v1` operation documents, by name, for the OpenAPI document,
//! and the sets of them that operations share ([`EveryCall`], [`WithBody`]).

use std::collections::BTreeMap;

use utoipa::openapi::{RefOr, Response};
use utoipa::{IntoResponses, ToResponse};

use super::Problem;

/// What every operation can answer, whatever it does: no live token, or over its rate limit.
pub struct EveryCall;

impl IntoResponses for EveryCall {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        refs([("401", Unauthorized::response()), ("429", TooMany::response())])
    }
}

/// What every operation that reads a JSON body can answer about it: not valid, too large, or
/// not JSON.
pub struct WithBody;

impl IntoResponses for WithBody {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        refs([
            ("400", Invalid::response()),
            ("413", Unreadable::response()),
            ("415", Unreadable::response()),
        ])
    }
}

/// References to the named responses (`components.responses`, where the document lists them).
fn refs<const N: usize>(named: [(&str, (&str, RefOr<Response>)); N]) -> BTreeMap<String, RefOr<Response>> {
    named
        .into_iter()
        .map(|(status, (name, _))| {
            (
                status.to_string(),
                RefOr::Ref(utoipa::openapi::Ref::from_response_name(name)),
            )
        })
        .collect()
}

/// No token, or one that is unknown, revoked or expired (with `WWW-Authenticate: Bearer`).
#[derive(ToResponse)]
#[response(description = "No live API token", content_type = "application/problem+json")]
pub struct Unauthorized(#[allow(dead_code)] Problem);

/// The token's role or team does not reach what was asked.
#[derive(ToResponse)]
#[response(description = "The token may not do this", content_type = "application/problem+json")]
pub struct Forbidden(#[allow(dead_code)] Problem);

/// Nothing by that id or key (any more).
#[derive(ToResponse)]
#[response(description = "Not found", content_type = "application/problem+json")]
pub struct NotFound(#[allow(dead_code)] Problem);

/// The state has moved on: the request was decided already, or one already waits.
#[derive(ToResponse)]
#[response(
    description = "Conflicts with the current state",
    content_type = "application/problem+json"
)]
pub struct Conflict(#[allow(dead_code)] Problem);

/// The request is not valid: `field` names the parameter or JSON path.
#[derive(ToResponse)]
#[response(description = "The request is not valid", content_type = "application/problem+json")]
pub struct Invalid(#[allow(dead_code)] Problem);

/// Over the token's rate limit: `Retry-After` says when to try again.
#[derive(ToResponse)]
#[response(
    description = "Too many requests with this token this minute",
    content_type = "application/problem+json",
    headers(("Retry-After" = u64, description = "Seconds until the next minute's allowance"))
)]
pub struct TooMany(#[allow(dead_code)] Problem);

/// The body is larger than the server takes, or not `application/json`.
#[derive(ToResponse)]
#[response(
    description = "The body is too large or not JSON",
    content_type = "application/problem+json"
)]
pub struct Unreadable(#[allow(dead_code)] Problem);
