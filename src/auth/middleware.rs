//! The request guard in front of every route: cross-site request refusal, session lookup,
//! sign-in required outside a few public paths, and security headers on every response.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use http::header::{
    CONTENT_SECURITY_POLICY, HOST, ORIGIN, REFERER, REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use http::{HeaderMap, HeaderValue, Method, StatusCode};

use super::sessions;
use crate::config::Config;
use crate::csp::STRICT_CSP;

/// Paths anyone may reach: health checks, sign-in and setup, and static assets.
fn is_public(path: &str) -> bool {
    matches!(
        path,
        "/healthz"
            | "/readyz"
            | "/login"
            | "/setup"
            | "/favicon.ico"
            | "/api/login"
            | "/api/setup"
            | "/api/setup_needed"
            | "/api/setup_token_required"
            | "/api/me"
    ) || path.starts_with("/pkg/")
}

/// A path the `/api/v1` router answers (`/api/v1/` itself is not one: it falls through to the
/// app's fallback, so it stays behind the session guard).
pub fn is_api_v1(path: &str) -> bool {
    path == "/api/v1" || path.strip_prefix("/api/v1/").is_some_and(|rest| !rest.is_empty())
}

pub async fn guard(
    State(pool): State<sqlx::PgPool>,
    State(config): State<Arc<Config>>,
    mut request: Request,
    next: Next,
) -> Response {
    let mut response = match check(&pool, &config, &mut request).await {
        Some(refusal) => refusal,
        None => next.run(request).await,
    };
    add_security_headers(response.headers_mut());
    if config
        .public_url
        .as_ref()
        .is_some_and(|u| u.origin.starts_with("https://"))
    {
        // Served over https (BURNRATE_PUBLIC_URL): browsers refuse plain http for a year.
        response.headers_mut().insert(
            http::header::STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static("max-age=31536000; includeSubDomains"),
        );
    }
    response
}

/// `Some(response)` refuses the request; `None` lets it through with its caller attached.
async fn check(pool: &sqlx::PgPool, config: &Config, request: &mut Request) -> Option<Response> {
    // `/api/v1` answers to API tokens alone (`api::require_token`): no cookie is read there,
    // so a cross-site request carries nothing a browser would add, and a session opens nothing.
    // `/metrics` likewise answers to its own token alone (`metrics::behind_token`).
    if is_api_v1(request.uri().path()) || request.uri().path() == "/metrics" {
        return None;
    }
    let unsafe_method = !matches!(*request.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    if unsafe_method && !same_origin(request.headers(), config) {
        tracing::warn!(path = %request.uri().path(), "refused a cross-site request");
        return Some((StatusCode::FORBIDDEN, "cross-site request refused").into_response());
    }
    match sessions::authenticate(pool, config, request.headers()).await {
        Ok(Some(sessions::Authenticated { caller, version })) => {
            request.extensions_mut().insert(caller);
            request.extensions_mut().insert(version);
            return None;
        }
        Ok(None) => {}
        // A signed-in caller is not sent to sign in again because the database is restarting.
        Err(err) if crate::error::is_unavailable(&err) => {
            tracing::warn!(error = %err, "session lookup: database unavailable");
            return Some(crate::error::unavailable_response());
        }
        Err(err) => tracing::error!(error = %err, "session lookup failed"),
    }
    let path = request.uri().path();
    if is_public(path) {
        None
    } else if path.starts_with("/api/") || unsafe_method {
        Some((StatusCode::UNAUTHORIZED, "sign in to continue").into_response())
    } else {
        let wanted = request.uri().path_and_query().map(|p| p.as_str()).unwrap_or("/");
        Some(Redirect::to(&format!("/login?next={}", percent_encode(wanted))).into_response())
    }
}

/// True when the request's Origin (or, lacking one, its Referer) is this site. Browsers
/// send Origin on every cross-site POST, so a forged form or fetch from elsewhere fails.
fn same_origin(headers: &HeaderMap, config: &Config) -> bool {
    let source = headers
        .get(ORIGIN)
        .or_else(|| headers.get(REFERER))
        .and_then(|v| v.to_str().ok())
        .and_then(origin_of);
    let Some(source) = source else { return false };
    match &config.public_url {
        Some(public) => source == public.origin,
        None => {
            let host = headers.get(HOST).and_then(|v| v.to_str().ok()).unwrap_or("");
            !host.is_empty() && (source == format!("http://{host}") || source == format!("https://{host}"))
        }
    }
}

/// `scheme://authority` of a URL; `None` for `null` and anything unparseable.
fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    (!authority.is_empty() && matches!(scheme, "http" | "https")).then(|| format!("{scheme}://{authority}"))
}

fn add_security_headers(headers: &mut HeaderMap) {
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    headers.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    if !headers.contains_key(CONTENT_SECURITY_POLICY) {
        headers.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(STRICT_CSP));
    }
}

/// Percent-encodes everything but unreserved characters and `/`, for a `next=` parameter.
fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(http::header::HeaderName, &'static str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(k, v)| (k.clone(), HeaderValue::from_static(v)))
            .collect()
    }

    fn config() -> Config {
        Config::from_lookup(|_| None).expect("defaults")
    }

    #[test]
    fn same_origin_requests_pass_and_cross_site_ones_fail() {
        let c = config();
        assert!(same_origin(
            &headers(&[(HOST, "127.0.0.1:3000"), (ORIGIN, "http://127.0.0.1:3000")]),
            &c
        ));
        assert!(same_origin(
            &headers(&[(HOST, "127.0.0.1:3000"), (REFERER, "http://127.0.0.1:3000/x?y")]),
            &c
        ));
        assert!(!same_origin(
            &headers(&[(HOST, "127.0.0.1:3000"), (ORIGIN, "http://evil.example")]),
            &c
        ));
        assert!(!same_origin(
            &headers(&[(HOST, "127.0.0.1:3000"), (ORIGIN, "null")]),
            &c
        ));
        assert!(
            !same_origin(&headers(&[(HOST, "127.0.0.1:3000")]), &c),
            "no origin at all"
        );
    }

    #[test]
    fn a_public_url_fixes_the_expected_origin() {
        let c = Config::from_lookup(|k| (k == "BURNRATE_PUBLIC_URL").then(|| "https://costs.example.com".to_string()))
            .expect("valid");
        assert!(same_origin(
            &headers(&[(HOST, "internal:3000"), (ORIGIN, "https://costs.example.com")]),
            &c
        ));
        assert!(!same_origin(
            &headers(&[(HOST, "internal:3000"), (ORIGIN, "http://internal:3000")]),
            &c
        ));
    }

    #[test]
    fn next_parameters_are_percent_encoded() {
        assert_eq!(
            percent_encode("/teams?period=prev&x=<b>"),
            "/teams%3Fperiod%3Dprev%26x%3D%3Cb%3E"
        );
    }
}
