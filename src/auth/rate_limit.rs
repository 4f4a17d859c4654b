//! Sign-in rate limits, kept in PostgreSQL so they hold across restarts and replicas.
//! Limits apply to any email string, known or not, so they reveal nothing about accounts.
//!
//! Two limits, both per client address (`crate::client_address`): failures for one account
//! from one address, and failures from one address over every account. Failures from one
//! address never refuse a correct password from another, so nobody can lock the
//! organisation, or one colleague, out. Each attempt is claimed (recorded as a failure)
//! under two advisory locks before its password is checked and marked succeeded after, so
//! concurrent guesses queue and each counts those before it: none slips past the limit.

use sqlx::PgPool;

use crate::error::AppError;

/// Failures counted over this many minutes.
pub const WINDOW_MINUTES: i32 = 15;
/// Failed sign-ins allowed per email and client address (since the last success) in the window.
pub const PER_ACCOUNT: i64 = 5;
/// Failed sign-ins allowed per client address in the window.
pub const PER_IP: i64 = 20;

/// Claims one attempt for `email` from `ip`, or refuses it when either limit is reached.
/// The attempt counts as failed until [`succeeded`] says otherwise. Returns its id.
pub async fn claim(pool: &PgPool, email: &str, ip: &str) -> Result<i64, AppError> {
    let mut tx = pool.begin().await?;
    // Always the address first, then the account at that address: one order, no deadlock.
    sqlx::query(
        "select pg_advisory_xact_lock(hashtextextended('burnrate sign-in ip ' || $2, 0)),
                pg_advisory_xact_lock(hashtextextended('burnrate sign-in account ' || $2 || ' ' || $1, 0))",
    )
    .bind(email)
    .bind(ip)
    .execute(&mut *tx)
    .await?;
    let (by_account, by_ip): (i64, i64) = sqlx::query_as(
        "select
            (select count(*) from sign_in_attempts a
             where a.email = $1 and a.ip = $2 and not a.succeeded and a.created_at > now() - make_interval(mins => $3)
               and a.created_at > coalesce((select max(created_at) from sign_in_attempts s
                                             where s.email = $1 and s.ip = $2 and s.succeeded), '-infinity')),
            (select count(*) from sign_in_attempts
             where ip = $2 and not succeeded and created_at > now() - make_interval(mins => $3))",
    )
    .bind(email)
    .bind(ip)
    .bind(WINDOW_MINUTES)
    .fetch_one(&mut *tx)
    .await?;
    if by_account >= PER_ACCOUNT || by_ip >= PER_IP {
        return Err(AppError::TooManyRequests(format!(
            "too many failed sign-ins from this address; try again in {WINDOW_MINUTES} minutes"
        )));
    }
    let id: i64 =
        sqlx::query_scalar("insert into sign_in_attempts (email, ip, succeeded) values ($1, $2, false) returning id")
            .bind(email)
            .bind(ip)
            .fetch_one(&mut *tx)
            .await?;
    tx.commit().await?;
    // Old attempts only cost space; trimmed as we go (through the created_at index).
    sqlx::query("delete from sign_in_attempts where created_at < now() - interval '1 day'")
        .execute(pool)
        .await?;
    Ok(id)
}

/// Marks a claimed attempt as a success (the password matched).
pub async fn succeeded(pool: &PgPool, attempt: i64) -> Result<(), AppError> {
    sqlx::query("update sign_in_attempts set succeeded = true where id = $1")
        .bind(attempt)
        .execute(pool)
        .await?;
    Ok(())
}

/// Drops a claimed attempt whose password was never checked (the server was busy).
pub async fn forget(pool: &PgPool, attempt: i64) -> Result<(), AppError> {
    sqlx::query("delete from sign_in_attempts where id = $1")
        .bind(attempt)
        .execute(pool)
        .await?;
    Ok(())
}
