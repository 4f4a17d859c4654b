//! Accounts in PostgreSQL: lookup, creation, roles and passwords, each change audited.

use sqlx::PgPool;

use super::model::AccountSummary;
use super::{Caller, Role, password};
use crate::audit_log::{Actor, record};
use crate::error::AppError;
use crate::mail::address::{normalise_email, validate_email};

/// An account as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Account {
    pub id: i64,
    pub email: String,
    pub display_name: String,
    pub role: String,
    pub password_hash: String,
}

/// A validated account to create.
pub struct NewAccount {
    pub email: String,
    pub display_name: String,
    pub role: Role,
    pub password: String,
}

impl NewAccount {
    pub fn validate(email: &str, display_name: &str, role: Role, password: &str) -> Result<NewAccount, AppError> {
        let email = validate_email(email)?;
        let display_name = display_name.trim().to_string();
        if display_name.chars().count() > 100 {
            return Err(AppError::invalid("display_name", "use at most 100 characters"));
        }
        password::check_policy(password)?;
        Ok(NewAccount {
            email,
            display_name,
            role,
            password: password.to_string(),
        })
    }
}

pub async fn find_by_email(pool: &PgPool, email: &str) -> Result<Option<Account>, AppError> {
    Ok(
        // A disabled account signs in as an unknown email would: it cannot.
        sqlx::query_as(
            "select id, email, display_name, role, password_hash from accounts where email = $1 and disabled_at is null",
        )
            .bind(normalise_email(email))
            .fetch_optional(pool)
            .await?,
    )
}

pub async fn admin_exists(pool: &PgPool) -> Result<bool, AppError> {
    Ok(
        sqlx::query_scalar("select exists (select 1 from accounts where role = 'admin' and disabled_at is null)")
            .fetch_one(pool)
            .await?,
    )
}

pub async fn any_exist(pool: &PgPool) -> Result<bool, AppError> {
    Ok(sqlx::query_scalar("select exists (select 1 from accounts)")
        .fetch_one(pool)
        .await?)
}

/// Creates an account; a taken email is a field error.
pub async fn create(pool: &PgPool, actor: &Actor, new: NewAccount) -> Result<i64, AppError> {
    let hash = password::hash(new.password.clone()).await?;
    let mut tx = pool.begin().await?;
    let id = insert(&mut tx, &new, &hash).await?;
    record(
        &mut tx,
        actor,
        "account.create",
        &new.email,
        serde_json::json!({"role": new.role.key()}),
    )
    .await?;
    tx.commit().await?;
    Ok(id)
}

/// Creates the first admin; refused once an admin exists, also when two setups race.
pub async fn create_first_admin(pool: &PgPool, new: NewAccount) -> Result<i64, AppError> {
    let hash = password::hash(new.password.clone()).await?;
    let mut tx = pool.begin().await?;
    // Serialises concurrent setups: the second one then sees the first admin.
    sqlx::query("lock table accounts in share row exclusive mode")
        .execute(&mut *tx)
        .await?;
    let exists: bool = sqlx::query_scalar("select exists (select 1 from accounts where role = 'admin')")
        .fetch_one(&mut *tx)
        .await?;
    if exists {
        return Err(AppError::Forbidden("setup is complete; sign in instead".into()));
    }
    let id = insert(&mut tx, &new, &hash).await?;
    record(
        &mut tx,
        &Actor::system("setup"),
        "account.create",
        &new.email,
        serde_json::json!({"role": "admin"}),
    )
    .await?;
    tx.commit().await?;
    Ok(id)
}

async fn insert(conn: &mut sqlx::PgConnection, new: &NewAccount, hash: &str) -> Result<i64, AppError> {
    sqlx::query_scalar(
        "insert into accounts (email, display_name, role, password_hash) values ($1, $2, $3, $4) returning id",
    )
    .bind(&new.email)
    .bind(&new.display_name)
    .bind(new.role.key())
    .bind(hash)
    .fetch_one(conn)
    .await
    .map_err(|err| match &err {
        sqlx::Error::Database(db) if db.is_unique_violation() => {
            AppError::invalid("email", "an account with this email already exists")
        }
        _ => err.into(),
    })
}

/// Changes an account's role; the last admin cannot be demoted.
pub async fn set_role(pool: &PgPool, caller: &Caller, account_id: i64, role: Role) -> Result<(), AppError> {
    let mut tx = pool.begin().await?;
    super::lifecycle::lock_accounts(&mut tx).await?;
    let email: String = sqlx::query_scalar("select email from accounts where id = $1")
        .bind(account_id)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("account {account_id}")))?;
    let other_admins = super::lifecycle::other_active_admins(&mut tx, account_id).await?;
    if role != Role::Admin && other_admins == 0 {
        return Err(AppError::invalid(
            "role",
            "this is the last admin; make another account admin first",
        ));
    }
    sqlx::query("update accounts set role = $2, updated_at = now() where id = $1")
        .bind(account_id)
        .bind(role.key())
        .execute(&mut *tx)
        .await?;
    record(
        &mut tx,
        &caller.into(),
        "account.set_role",
        &email,
        serde_json::json!({"role": role.key()}),
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Sets a new password and ends the account's sessions, except `keep` (the caller's own
/// session when they change their own password).
pub async fn set_password(
    pool: &PgPool,
    caller: &Caller,
    account_id: i64,
    new_password: &str,
    keep: Option<Vec<u8>>,
) -> Result<(), AppError> {
    password::check_policy(new_password)?;
    let hash = password::hash(new_password.to_string()).await?;
    let mut tx = pool.begin().await?;
    let email: String =
        sqlx::query_scalar("update accounts set password_hash = $2, updated_at = now() where id = $1 returning email")
            .bind(account_id)
            .bind(hash)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or_else(|| AppError::NotFound(format!("account {account_id}")))?;
    sqlx::query("delete from sessions where account_id = $1 and token_hash is distinct from $2")
        .bind(account_id)
        .bind(keep)
        .execute(&mut *tx)
        .await?;
    let action = if account_id == caller.account_id {
        "account.change_password"
    } else {
        "account.reset_password"
    };
    record(&mut tx, &caller.into(), action, &email, serde_json::json!({})).await?;
    tx.commit().await?;
    Ok(())
}

/// An account as the Users page lists it.
#[derive(sqlx::FromRow)]
struct AccountRow {
    id: i64,
    email: String,
    display_name: String,
    role: String,
    created_at: chrono::DateTime<chrono::Utc>,
    disabled: bool,
}

/// Every account by email, without password hashes.
pub async fn summaries(pool: &PgPool) -> Result<Vec<AccountSummary>, sqlx::Error> {
    let rows: Vec<AccountRow> = sqlx::query_as(
        "select id, email, display_name, role, created_at, disabled_at is not null as disabled
         from accounts order by email",
    )
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|row| AccountSummary {
            id: row.id,
            email: row.email,
            display_name: row.display_name,
            role: Role::parse(&row.role).unwrap_or(Role::Viewer),
            created_at: row.created_at.format("%Y-%m-%d %H:%M UTC").to_string(),
            disabled: row.disabled,
        })
        .collect())
}

/// `emails` without those of disabled accounts: a disabled person gets no alert or
/// enforcement mail, as owner, admin or listed recipient. Addresses with no account stay.
pub async fn without_disabled(conn: &mut sqlx::PgConnection, emails: Vec<String>) -> Result<Vec<String>, sqlx::Error> {
    let disabled: Vec<String> = sqlx::query_scalar(
        "select lower(email) from accounts where disabled_at is not null and lower(email) = any($1)",
    )
    .bind(emails.iter().map(|e| e.to_lowercase()).collect::<Vec<_>>())
    .fetch_all(conn)
    .await?;
    Ok(emails
        .into_iter()
        .filter(|e| !disabled.contains(&e.to_lowercase()))
        .collect())
}
