//! Server-side sessions: a random token in an HttpOnly cookie, its SHA-256 in PostgreSQL,
//! with idle and absolute expiry.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::header::{COOKIE, SET_COOKIE};
use http::{HeaderMap, HeaderValue};
use rand::RngCore;
use sha2::{Digest, Sha256};
use sqlx::PgPool;

use super::{Caller, Role};
use crate::config::Config;
use crate::error::AppError;
use crate::page_data::RequestVersion;

pub const COOKIE_NAME: &str = "burnrate_session";

pub fn new_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

pub(super) fn hash_token(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

/// The session token from a request's Cookie headers.
pub fn token_from_headers(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE_NAME)
        .map(|(_, token)| token.to_string())
        .filter(|token| !token.is_empty())
}

/// The stored hash of the request's session token, if it carries one.
pub fn token_hash_of(parts: &http::request::Parts) -> Option<Vec<u8>> {
    token_from_headers(&parts.headers).map(|t| hash_token(&t))
}

/// Starts a session for `account_id` and sets its cookie on the current response.
pub async fn start(pool: &PgPool, config: &Config, account_id: i64) -> Result<(), AppError> {
    let token = new_token();
    let max = config.session_max;
    sqlx::query(
        "insert into sessions (token_hash, account_id, expires_at)
         values ($1, $2, now() + make_interval(secs => $3))",
    )
    .bind(hash_token(&token))
    .bind(account_id)
    .bind(max.as_secs_f64())
    .execute(pool)
    .await?;
    set_cookie(config, &token, max.as_secs());
    Ok(())
}

/// Ends the request's session, if any, on the server.
pub async fn end_current(pool: &PgPool, parts: &http::request::Parts) -> Result<(), AppError> {
    if let Some(hash) = token_hash_of(parts) {
        sqlx::query("delete from sessions where token_hash = $1")
            .bind(hash)
            .execute(pool)
            .await?;
    }
    Ok(())
}

pub fn clear_cookie(config: &Config) {
    set_cookie(config, "", 0);
}

fn set_cookie(config: &Config, token: &str, max_age: u64) {
    let secure = if config.public_url.as_ref().is_some_and(|u| u.https) {
        "; Secure"
    } else {
        ""
    };
    let cookie = format!("{COOKIE_NAME}={token}; Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age}{secure}");
    if let (Some(response), Ok(value)) = (
        leptos::prelude::use_context::<leptos_axum::ResponseOptions>(),
        HeaderValue::from_str(&cookie),
    ) {
        response.append_header(SET_COOKIE, value);
    }
}

/// A live session's caller and the data version at that moment.
pub struct Authenticated {
    pub caller: Caller,
    pub version: RequestVersion,
}

/// A live session's account as the lookup reads it.
#[derive(sqlx::FromRow)]
struct SessionRow {
    id: i64,
    email: String,
    display_name: String,
    role: String,
    team_ids: Vec<i64>,
    version: i64,
}

/// The caller behind a request's cookie, if its session is live, and the data version
/// (`page_data`) at that moment: a signed-in request that shows page data needs both,
/// and one statement saves a round trip (and sqlx's ping on returning the connection) per
/// page view. Refreshes the idle clock at most once a minute, so reads do not become a
/// write per request.
pub async fn authenticate(
    pool: &PgPool,
    config: &Config,
    headers: &HeaderMap,
) -> Result<Option<Authenticated>, sqlx::Error> {
    let Some(token) = token_from_headers(headers) else {
        return Ok(None);
    };
    let hash = hash_token(&token);
    // One round trip: the touch runs in the same statement as the lookup.
    let row: Option<SessionRow> = sqlx::query_as(
        "with live as (
             select a.id, a.email, a.display_name, a.role,
                    array(select o.team_id from team_owners o where lower(o.email) = a.email order by 1) as team_ids
             from sessions s join accounts a on a.id = s.account_id
             where s.token_hash = $1 and s.expires_at > now() and a.disabled_at is null
               and s.last_seen_at > now() - make_interval(secs => $2)
         ), touched as (
             update sessions set last_seen_at = now()
             where token_hash = $1 and last_seen_at < now() - interval '1 minute'
               and exists (select 1 from live)
         )
         select id, email, display_name, role, team_ids, (select version from data_version) as version from live",
    )
    .bind(&hash)
    .bind(config.session_idle.as_secs_f64())
    .fetch_optional(pool)
    .await?;
    Ok(row.map(|row| Authenticated {
        caller: Caller {
            account_id: row.id,
            email: row.email,
            display_name: row.display_name,
            role: Role::parse(&row.role).unwrap_or(Role::Viewer),
            team_ids: row.team_ids,
        },
        version: RequestVersion(row.version),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_cookie_is_found_among_others() {
        let mut headers = HeaderMap::new();
        headers.append(
            COOKIE,
            HeaderValue::from_static("theme=dark; burnrate_session=abc123; other=1"),
        );
        assert_eq!(token_from_headers(&headers).as_deref(), Some("abc123"));
        let mut empty = HeaderMap::new();
        empty.append(COOKIE, HeaderValue::from_static("burnrate_session="));
        assert_eq!(token_from_headers(&empty), None);
    }

    #[test]
    fn tokens_are_random_and_only_their_hash_is_kept() {
        let (a, b) = (new_token(), new_token());
        assert_ne!(a, b);
        assert_eq!(a.len(), 43);
        assert_eq!(hash_token(&a).len(), 32);
        assert_ne!(hash_token(&a), hash_token(&b));
    }
}
