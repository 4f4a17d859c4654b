//! Sign-in rate limits, kept in PostgreSQL so they hold across restarts and replicas.
//! Limits apply to any email string, known or not, so they reveal nothing about accounts.

use sqlx::PgPool;

use crate::error::AppError;

/// Failures counted over this many minutes.
pub const WINDOW_MINUTES: i32 = 15;
/// Failed sign-ins allowed per email (since its last success) in the window.
pub const PER_ACCOUNT: i64 = 5;
/// Failed sign-ins allowed per client address in the window.
pub const PER_IP: i64 = 20;

/// Refuses the attempt when the email or the address has failed too often lately.
pub async fn check(pool: &PgPool, email: &str, ip: &str) -> Result<(), AppError> {
    let (by_email, by_ip): (i64, i64) = sqlx::query_as(
        "select
            (select count(*) from sign_in_attempts
             where email = $1 and not succeeded and created_at > now() - make_interval(mins => $3)
               and created_at > coalesce((select max(created_at) from sign_in_attempts where email = $1 and succeeded), '-infinity')),
            (select count(*) from sign_in_attempts
             where ip = $2 and not succeeded and created_at > now() - make_interval(mins => $3))",
    )
    .bind(email)
    .bind(ip)
    .bind(WINDOW_MINUTES)
    .fetch_one(pool)
    .await?;
    if by_email >= PER_ACCOUNT || by_ip >= PER_IP {
        return Err(AppError::TooManyRequests(format!(
            "too many failed sign-ins; try again in {WINDOW_MINUTES} minutes"
        )));
    }
    Ok(())
}

pub async fn record(pool: &PgPool, email: &str, ip: &str, succeeded: bool) -> Result<(), AppError> {
    sqlx::query("insert into sign_in_attempts (email, ip, succeeded) values ($1, $2, $3)")
        .bind(email)
        .bind(ip)
        .bind(succeeded)
        .execute(pool)
        .await?;
    // Old attempts only cost space; trim them as we go.
    sqlx::query("delete from sign_in_attempts where created_at < now() - interval '1 day'")
        .execute(pool)
        .await?;
    Ok(())
}
