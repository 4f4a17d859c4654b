//! API tokens: `Authorization: Bearer brt_…` on `/api/v1` only (never the pages or server
//! functions). A token acts as its account, with a role no higher than the account's at every
//! use, optionally for one team only, until it expires (at most a year) or is revoked.
//!
//! Only the secret's SHA-256 is stored: the secret is shown once. Secrets are 32 random bytes,
//! so a fast hash is as safe as a slow one. The `brt_` prefix lets secret scanners find one
//! that leaked. Every use is counted against a per-token rate limit in the same statement that
//! checks the token, so the limit holds across replicas and revocation takes effect at once.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use rand::RngCore;
use sqlx::PgPool;

use super::model::{Caller, Role, TokenSummary};
use crate::audit_log::{Actor, record};
use crate::error::AppError;

pub const PREFIX: &str = "brt_";
/// The longest a token may live.
pub const MAX_DAYS: u32 = 365;
/// The default life of a token.
pub const DEFAULT_DAYS: u32 = 90;

/// What a new token is for.
#[derive(Debug, Clone)]
pub struct NewToken {
    /// The account the token acts as.
    pub owner_email: String,
    pub name: String,
    /// `None`: the account's own role.
    pub role: Option<Role>,
    /// A team name: the token reads and writes that team only.
    pub team: Option<String>,
    pub expires_days: u32,
    /// Made by an admin for a service (CI, a launcher).
    pub service: bool,
}

/// Who asks for a token: a signed-in account (its role bounds the token), or the operator at
/// the CLI.
#[derive(Debug, Clone, Copy)]
pub enum Creator<'a> {
    Caller(&'a Caller),
    Operator,
}

fn rank(role: Role) -> u8 {
    match role {
        Role::Admin => 3,
        Role::Lead => 2,
        Role::Viewer => 1,
    }
}

/// The lower of two roles.
pub fn lower(a: Role, b: Role) -> Role {
    if rank(a) <= rank(b) { a } else { b }
}

fn new_secret() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(bytes))
}

/// The token's name: 1–100 characters, no control characters.
fn checked_name(name: &str) -> Result<String, AppError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 100 || name.chars().any(char::is_control) {
        return Err(AppError::invalid(
            "name",
            "a token's name is 1 to 100 characters, without control characters",
        ));
    }
    Ok(name.to_string())
}

#[derive(sqlx::FromRow)]
struct Owner {
    id: i64,
    email: String,
    role: String,
    disabled: bool,
}

/// Creates a token and returns its secret (shown once) with its summary.
pub async fn create(pool: &PgPool, creator: Creator<'_>, new: NewToken) -> Result<(String, TokenSummary), AppError> {
    let name = checked_name(&new.name)?;
    if !(1..=MAX_DAYS).contains(&new.expires_days) {
        return Err(AppError::invalid(
            "expires_days",
            format!("a token expires in 1 to {MAX_DAYS} days"),
        ));
    }
    let email = new.owner_email.trim().to_lowercase();
    let owner: Owner =
        sqlx::query_as("select id, email, role, disabled_at is not null as disabled from accounts where email = $1")
            .bind(&email)
            .fetch_optional(pool)
            .await?
            .ok_or_else(|| AppError::invalid("email", format!("no account has the email {email:?}")))?;
    if owner.disabled {
        return Err(AppError::invalid("email", "the account is disabled"));
    }
    let owner_role = Role::parse(&owner.role)?;
    let actor: Actor = match creator {
        Creator::Caller(caller) => {
            // Anyone makes their own tokens; only an admin makes one for a service.
            if caller.account_id != owner.id && !caller.is_admin() {
                return Err(AppError::Forbidden(
                    "a token is made by its own account or by an admin".into(),
                ));
            }
            if new.service && !caller.is_admin() {
                return Err(AppError::Forbidden("only admins make service tokens".into()));
            }
            caller.into()
        }
        Creator::Operator => Actor::system("cli"),
    };
    let role = new.role.unwrap_or(owner_role);
    let ceiling = match creator {
        Creator::Caller(caller) => lower(owner_role, caller.role),
        Creator::Operator => owner_role,
    };
    if rank(role) > rank(ceiling) {
        return Err(AppError::invalid(
            "role",
            format!("a token's role is at most {} here", ceiling.key()),
        ));
    }
    let team_id: Option<i64> = match new.team.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
        None => None,
        Some(team) => Some(
            sqlx::query_scalar("select id from teams where name = $1")
                .bind(team)
                .fetch_optional(pool)
                .await?
                .ok_or_else(|| AppError::invalid("team", format!("no team is named {team:?}")))?,
        ),
    };
    let secret = new_secret();
    let hint = secret.chars().take(PREFIX.len() + 6).collect::<String>();
    let team_name = new.team.as_deref().map(str::trim).filter(|t| !t.is_empty());
    let mut tx = pool.begin().await?;
    // An expired token no longer holds its name: it is marked revoked, so the name is free.
    sqlx::query(
        "update api_tokens set revoked_at = now(), revoked_by = 'expired'
         where account_id = $1 and name = $2 and revoked_at is null and expires_at <= now()",
    )
    .bind(owner.id)
    .bind(&name)
    .execute(&mut *tx)
    .await?;
    let inserted: Result<i64, sqlx::Error> = sqlx::query_scalar(
        "insert into api_tokens (account_id, name, secret_hash, hint, role, team_id, service, created_by, expires_at)
         values ($1, $2, $3, $4, $5, $6, $7, $8, now() + make_interval(days => $9))
         returning id",
    )
    .bind(owner.id)
    .bind(&name)
    .bind(super::sessions::hash_token(&secret))
    .bind(&hint)
    .bind(role.key())
    .bind(team_id)
    .bind(new.service)
    .bind(&actor.label)
    .bind(new.expires_days as i32)
    .fetch_one(&mut *tx)
    .await;
    let id = match inserted {
        Ok(id) => id,
        Err(sqlx::Error::Database(db)) if db.code().as_deref() == Some("23505") => {
            return Err(AppError::invalid(
                "name",
                format!("{} already has a live token named {name:?}", owner.email),
            ));
        }
        Err(error) => return Err(error.into()),
    };
    // The audit entry names the token, never its secret or hash.
    record(
        &mut tx,
        &actor,
        "token.create",
        &owner.email,
        serde_json::json!({"name": name, "role": role.key(), "team": team_name, "service": new.service,
                           "expires_days": new.expires_days}),
    )
    .await?;
    tx.commit().await?;
    let summary = list(pool, Some(owner.id))
        .await?
        .into_iter()
        .find(|t| t.id == id)
        .ok_or(AppError::Internal)?;
    Ok((secret, summary))
}

#[derive(sqlx::FromRow)]
struct SummaryRow {
    id: i64,
    email: String,
    name: String,
    hint: String,
    role: String,
    team: Option<String>,
    service: bool,
    created_by: String,
    created_at: DateTime<Utc>,
    expires_at: DateTime<Utc>,
    last_used_at: Option<DateTime<Utc>>,
    revoked_at: Option<DateTime<Utc>>,
}

fn stamp(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%d %H:%M UTC").to_string()
}

/// Tokens of one account (or every account's), live ones first, newest first.
pub async fn list(pool: &PgPool, account: Option<i64>) -> Result<Vec<TokenSummary>, sqlx::Error> {
    let rows: Vec<SummaryRow> = sqlx::query_as(
        "select t.id, a.email, t.name, t.hint, t.role, tm.name as team, t.service, t.created_by, t.created_at,
                t.expires_at, t.last_used_at, t.revoked_at
         from api_tokens t join accounts a on a.id = t.account_id left join teams tm on tm.id = t.team_id
         where $1::bigint is null or t.account_id = $1
         order by t.revoked_at is not null, t.created_at desc, t.id desc",
    )
    .bind(account)
    .fetch_all(pool)
    .await?;
    let now = Utc::now();
    Ok(rows
        .into_iter()
        .map(|r| TokenSummary {
            id: r.id,
            email: r.email,
            name: r.name,
            hint: r.hint,
            role: Role::parse(&r.role).unwrap_or(Role::Viewer),
            team: r.team,
            service: r.service,
            created_by: r.created_by,
            created_at: stamp(r.created_at),
            expires_at: stamp(r.expires_at),
            last_used_at: r.last_used_at.map(stamp),
            live: r.revoked_at.is_none() && r.expires_at > now,
            revoked: r.revoked_at.is_some(),
        })
        .collect())
}

/// Revokes `email`'s live token named `name`. Its next use is refused. Returns whether one was.
pub async fn revoke(pool: &PgPool, creator: Creator<'_>, email: &str, name: &str) -> Result<bool, AppError> {
    let email = email.trim().to_lowercase();
    let actor: Actor = match creator {
        Creator::Caller(caller) if caller.email != email && !caller.is_admin() => {
            return Err(AppError::Forbidden(
                "a token is revoked by its own account or by an admin".into(),
            ));
        }
        Creator::Caller(caller) => caller.into(),
        Creator::Operator => Actor::system("cli"),
    };
    let mut tx = pool.begin().await?;
    let revoked: Option<i64> = sqlx::query_scalar(
        "update api_tokens t set revoked_at = now(), revoked_by = $3
         from accounts a
         where a.id = t.account_id and a.email = $1 and t.name = $2 and t.revoked_at is null
         returning t.id",
    )
    .bind(&email)
    .bind(name.trim())
    .bind(&actor.label)
    .fetch_optional(&mut *tx)
    .await?;
    if revoked.is_some() {
        record(
            &mut tx,
            &actor,
            "token.revoke",
            &email,
            serde_json::json!({"name": name.trim()}),
        )
        .await?;
    }
    tx.commit().await?;
    Ok(revoked.is_some())
}

/// What a bearer secret gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Use {
    /// The caller (its role the lower of the token's and the account's), and the one team the
    /// token is limited to, if any.
    Allowed { caller: Caller, team_id: Option<i64> },
    /// Over the per-minute limit: try again in this many seconds.
    Limited { retry_after_secs: u64 },
    /// Unknown, revoked, expired, or its account disabled.
    Refused,
}

#[derive(sqlx::FromRow)]
struct UseRow {
    account_id: i64,
    email: String,
    display_name: String,
    token_role: String,
    account_role: String,
    team_id: Option<i64>,
    team_ids: Vec<i64>,
    window_uses: i32,
    retry_after: f64,
}

/// Checks a bearer secret and counts the use, in one statement.
pub async fn authenticate(pool: &PgPool, secret: &str, per_minute: u32) -> Result<Use, sqlx::Error> {
    if !secret.starts_with(PREFIX) {
        return Ok(Use::Refused);
    }
    // SET expressions all read the row as it was, so the window restarts and counts at once.
    let row: Option<UseRow> = sqlx::query_as(
        "with hit as (
             update api_tokens t set
                 last_used_at = now(),
                 window_uses = case when t.window_started_at <= now() - interval '1 minute' then 1 else t.window_uses + 1 end,
                 window_started_at = case when t.window_started_at <= now() - interval '1 minute' then now() else t.window_started_at end
             from accounts a
             where t.secret_hash = $1 and t.revoked_at is null and t.expires_at > now()
               and a.id = t.account_id and a.disabled_at is null
             returning a.id as account_id, a.email, a.display_name, t.role as token_role, a.role as account_role,
                       t.team_id, t.window_uses, t.window_started_at
         )
         select account_id, email, display_name, token_role, account_role, team_id, window_uses,
                array(select o.team_id from team_owners o where lower(o.email) = hit.email order by 1) as team_ids,
                extract(epoch from (window_started_at + interval '1 minute' - now()))::float8 as retry_after
         from hit",
    )
    .bind(super::sessions::hash_token(secret))
    .fetch_optional(pool)
    .await?;
    let Some(row) = row else {
        return Ok(Use::Refused);
    };
    if row.window_uses > i32::try_from(per_minute).unwrap_or(i32::MAX) {
        return Ok(Use::Limited {
            retry_after_secs: row.retry_after.ceil().max(1.0) as u64,
        });
    }
    let role = lower(
        Role::parse(&row.token_role).unwrap_or(Role::Viewer),
        Role::parse(&row.account_role).unwrap_or(Role::Viewer),
    );
    // A one-team token may edit at most that team, whatever else its account owns: an
    // admin's acts as a lead of that team (an admin may edit any team), a lead's only if the
    // lead owns it.
    let (role, team_ids) = match row.team_id {
        None => (role, row.team_ids),
        Some(only) if role == Role::Admin => (Role::Lead, vec![only]),
        Some(only) => (role, row.team_ids.into_iter().filter(|t| *t == only).collect()),
    };
    Ok(Use::Allowed {
        caller: Caller {
            account_id: row.account_id,
            email: row.email,
            display_name: row.display_name,
            role,
            team_ids,
        },
        team_id: row.team_id,
    })
}
