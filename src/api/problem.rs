//! Errors of `/api/v1` as `application/problem+json` (RFC 9457): `type` is `about:blank`, so
//! `title` is the status's phrase; `detail` says what went wrong, and `field` names the request
//! field a 400 is about.

use axum::extract::rejection::JsonRejection;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde::Serialize;

use crate::error::AppError;

/// An error, as RFC 9457 shapes it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Problem {
    /// Always `about:blank`: the status says what kind of error it is.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The HTTP status's phrase.
    pub title: String,
    pub status: u16,
    /// What went wrong, for a person.
    pub detail: String,
    /// On a 400: the request field (query parameter or JSON path) it is about.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    #[serde(skip)]
    pub retry_after_secs: Option<u64>,
}

/// Seconds a 503's `Retry-After` asks a client to wait: the database's usual restart or a
/// lock's `lock_timeout`, whichever ended the request, is over by then.
pub const RETRY_UNAVAILABLE_SECS: u64 = 5;

impl Problem {
    pub fn new(status: StatusCode, detail: impl Into<String>) -> Problem {
        Problem {
            kind: "about:blank",
            title: status.canonical_reason().unwrap_or("Error").to_string(),
            status: status.as_u16(),
            detail: detail.into(),
            field: None,
            // Every 503 (the database unavailable, a lock held past its timeout) is passing:
            // say when to try again, as RFC 9110 §10.2.3 lets a 503 do.
            retry_after_secs: (status == StatusCode::SERVICE_UNAVAILABLE).then_some(RETRY_UNAVAILABLE_SECS),
        }
    }

    pub fn invalid(field: &str, detail: impl Into<String>) -> Problem {
        Problem {
            field: Some(field.to_string()),
            ..Problem::new(StatusCode::BAD_REQUEST, detail)
        }
    }
}

impl From<AppError> for Problem {
    fn from(error: AppError) -> Problem {
        let status = error.status();
        match error {
            AppError::InvalidInput { field, message } => Problem::invalid(&field, message),
            AppError::InvalidFields(fields) => {
                let field = fields.first().map(|f| f.field.clone()).unwrap_or_default();
                Problem::invalid(&field, AppError::InvalidFields(fields).to_string())
            }
            other => Problem::new(status, other.to_string()),
        }
    }
}

impl From<sqlx::Error> for Problem {
    fn from(error: sqlx::Error) -> Problem {
        Problem::from(AppError::from(error))
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = (status, serde_json::to_string(&self).unwrap_or_default()).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if let Some(secs) = self.retry_after_secs {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"burnrate\""),
            );
        }
        response
    }
}

/// A JSON request body, `T`, or the [`Problem`] that says why it is not one ([`bad_body`]):
/// every `/api/v1` operation that reads a body takes it through this.
pub struct Body<T>(pub T);

impl<T, S> axum::extract::FromRequest<S> for Body<T>
where
    axum::Json<T>: axum::extract::FromRequest<S, Rejection = JsonRejection>,
    S: Send + Sync,
{
    type Rejection = Problem;

    async fn from_request(request: axum::extract::Request, state: &S) -> Result<Self, Problem> {
        let axum::Json(body) = axum::Json::<T>::from_request(request, state).await.map_err(bad_body)?;
        Ok(Body(body))
    }
}

/// A body that is not the request's JSON: 400 naming the field (413 and 415 stay what they
/// are). axum's text is `…target type: <path>: <serde message>`; a missing or unknown field is
/// named in backticks in the message, under the path of the object that lacks or has it.
pub fn bad_body(rejection: JsonRejection) -> Problem {
    let status = rejection.status();
    let text = rejection.body_text();
    if status != StatusCode::BAD_REQUEST && status != StatusCode::UNPROCESSABLE_ENTITY {
        return Problem::new(status, text);
    }
    Problem::invalid(&field_of(&text), text)
}

fn field_of(text: &str) -> String {
    let Some((path, message)) = text
        .split_once("target type: ")
        .and_then(|(_, rest)| rest.split_once(": "))
    else {
        return "body".into();
    };
    let path = path.trim().trim_start_matches('.');
    // A missing field is reported at the object that lacks it; any other error at the field.
    let missing = message
        .starts_with("missing field")
        .then(|| message.split('`').nth(1))
        .flatten();
    match (path.is_empty(), missing) {
        (true, Some(name)) => name.to_string(),
        (false, Some(name)) => format!("{path}.{name}"),
        (false, None) => path.to_string(),
        (true, None) => "body".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_503_says_when_to_try_again_and_nothing_else_does() {
        for error in [AppError::Unavailable, AppError::Busy("a lock was held".into())] {
            let response = Problem::from(error).into_response();
            assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
            assert_eq!(response.headers()[header::RETRY_AFTER], "5");
        }
        let response = Problem::from(AppError::Conflict("decided".into())).into_response();
        assert!(!response.headers().contains_key(header::RETRY_AFTER));
    }

    #[test]
    fn the_field_is_the_path_and_the_field_serde_names() {
        let t = |s: &str| {
            field_of(&format!(
                "Failed to deserialize the JSON body into the target type: {s}"
            ))
        };
        assert_eq!(t("gpu: missing field `hours` at line 1 column 40"), "gpu.hours");
        assert_eq!(t("budget: unknown field `budget`, expected one of `project`"), "budget");
        assert_eq!(t(".: missing field `project` at line 1 column 2"), "project");
        assert_eq!(
            t("estimated_cost_usd: Invalid decimal: unknown character at line 1 column 9"),
            "estimated_cost_usd"
        );
        assert_eq!(
            t("gpu.count: invalid value: integer `-1`, expected u32 at line 1 column 5"),
            "gpu.count"
        );
        assert_eq!(
            field_of("Failed to parse the request body as JSON: EOF while parsing"),
            "body"
        );
    }
}
