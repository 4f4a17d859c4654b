//! Disabling, enabling and deleting accounts. Disabling or deleting revokes the account's
//! sessions in the same transaction, and the last active admin can be neither disabled,
//! deleted nor demoted (`accounts::set_role`), so the organisation always keeps an admin.

use sqlx::{PgConnection, PgPool};

use crate::audit_log::{Actor, record};
use crate::error::AppError;

/// What happens to the account.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Disable,
    Enable,
    Delete,
}

impl Change {
    fn action(self) -> &'static str {
        match self {
            Change::Disable => "account.disable",
            Change::Enable => "account.enable",
            Change::Delete => "account.delete",
        }
    }
}

/// Takes the accounts table lock every role and lifecycle change takes, so two admins
/// removing each other at once cannot both succeed.
pub async fn lock_accounts(conn: &mut PgConnection) -> Result<(), sqlx::Error> {
    sqlx::query("lock table accounts in share row exclusive mode")
        .execute(conn)
        .await?;
    Ok(())
}

/// Active admins other than `account_id`.
pub async fn other_active_admins(conn: &mut PgConnection, account_id: i64) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("select count(*) from accounts where role = 'admin' and disabled_at is null and id <> $1")
        .bind(account_id)
        .fetch_one(conn)
        .await
}

/// Applies `change` to the account with `email`, audited by `actor`.
pub async fn apply(pool: &PgPool, actor: &Actor, email: &str, change: Change) -> Result<(), AppError> {
    let email = crate::mail::address::normalise_email(email);
    let mut tx = pool.begin().await?;
    lock_accounts(&mut tx).await?;
    let (id, role, disabled): (i64, String, bool) =
        sqlx::query_as("select id, role, disabled_at is not null from accounts where email = $1")
            .bind(&email)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or_else(|| AppError::NotFound(format!("no account with the email {email:?}")))?;
    let removes_admin = change != Change::Enable && role == "admin" && !disabled;
    if removes_admin && other_active_admins(&mut tx, id).await? == 0 {
        return Err(AppError::invalid(
            "account",
            "this is the last active admin; make another account admin first",
        ));
    }
    if actor.account_id == Some(id) && change != Change::Enable {
        return Err(AppError::invalid(
            "account",
            "you cannot disable or delete your own account; ask another admin",
        ));
    }
    let sql = match change {
        Change::Disable => {
            "update accounts set disabled_at = coalesce(disabled_at, now()), updated_at = now() where id = $1"
        }
        Change::Enable => "update accounts set disabled_at = null, updated_at = now() where id = $1",
        Change::Delete => "delete from accounts where id = $1",
    };
    // Sessions go first: a deleted account's go with it anyway, a disabled one's at once.
    if change != Change::Enable {
        sqlx::query("delete from sessions where account_id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
    }
    sqlx::query(sql).bind(id).execute(&mut *tx).await?;
    record(
        &mut tx,
        actor,
        change.action(),
        &email,
        serde_json::json!({ "role": role }),
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Deletes sessions past their absolute or idle expiry (on every sign-in; the index keeps
/// it cheap).
pub async fn purge_expired_sessions(pool: &PgPool, idle: std::time::Duration) -> Result<u64, sqlx::Error> {
    let done = sqlx::query(
        "delete from sessions where expires_at < now() or last_seen_at < now() - make_interval(secs => $1)",
    )
    .bind(idle.as_secs_f64())
    .execute(pool)
    .await?;
    Ok(done.rows_affected())
}
