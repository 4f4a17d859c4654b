//! Errors of `/api/v1` as `application/problem+json` (RFC 9457): `type` is `about:blank`, so
//! `title` is the status's phrase; `detail` says what went wrong, and `field` names the request
//! field a 400 is about.

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde::Serialize;

use crate::error::AppError;

#[derive(Debug, Clone, Serialize)]
pub struct Problem {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub title: String,
    pub status: u16,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    #[serde(skip)]
    pub retry_after_secs: Option<u64>,
}

impl Problem {
    pub fn new(status: StatusCode, detail: impl Into<String>) -> Problem {
        Problem {
            kind: "about:blank",
            title: status.canonical_reason().unwrap_or("Error").to_string(),
            status: status.as_u16(),
            detail: detail.into(),
            field: None,
            retry_after_secs: None,
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
