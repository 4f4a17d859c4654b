//! The token check in front of every `/api/v1` route: a live token under its rate limit, or
//! 401 (missing, unknown, revoked, expired) or 429 with `Retry-After`. The secret never reaches
//! a log.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use http::header::AUTHORIZATION;

use super::Problem;
use crate::auth::Caller;
use crate::auth::tokens::{self, Use};
use crate::config::Config;

/// Who calls the API: the account the token acts as, and the one team it is limited to.
#[derive(Debug, Clone)]
pub struct ApiCaller {
    pub caller: Caller,
    pub only_team: Option<i64>,
}

pub async fn require_token(
    State(pool): State<sqlx::PgPool>,
    State(config): State<Arc<Config>>,
    mut request: Request,
    next: Next,
) -> Response {
    let secret = request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        // The scheme is case-insensitive (RFC 9110 §11.1).
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, secret)| secret.trim())
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let Some(secret) = secret else {
        return Problem::new(
            StatusCode::UNAUTHORIZED,
            "send an API token as `Authorization: Bearer brt_…`; make one on your account page or with `burnrate token create`",
        )
        .into_response();
    };
    match tokens::authenticate(&pool, &secret, config.api_rate_limit).await {
        Ok(Use::Allowed { caller, team_id }) => {
            request.extensions_mut().insert(ApiCaller {
                caller,
                only_team: team_id,
            });
            next.run(request).await
        }
        Ok(Use::Limited { retry_after_secs }) => Problem {
            retry_after_secs: Some(retry_after_secs),
            ..Problem::new(
                StatusCode::TOO_MANY_REQUESTS,
                format!(
                    "this token made more than {} requests this minute (BURNRATE_API_RATE_LIMIT)",
                    config.api_rate_limit
                ),
            )
        }
        .into_response(),
        Ok(Use::Refused) => Problem::new(
            StatusCode::UNAUTHORIZED,
            "the token is unknown, revoked or expired, or its account is disabled",
        )
        .into_response(),
        Err(error) => Problem::from(error).into_response(),
    }
}
