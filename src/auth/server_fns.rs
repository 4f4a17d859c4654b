//! The auth server functions: sign-in, sign-out, first-run setup, the caller's own
//! password, and (admins only) account administration. Each checks who is calling first,
//! except the five the signed-out sign-in and setup pages need (`me`, `login`,
//! `setup_needed`, `setup_token_required`, `setup`), which the middleware's public list
//! also names; `scripts/check-layers.py` fails on any other server function without a
//! caller check.

use leptos::prelude::*;

use super::Caller;
#[cfg(feature = "ssr")]
use super::Role;
use super::model::AccountSummary;
#[cfg(feature = "ssr")]
use super::{accounts, lifecycle, password, rate_limit, safe_next, sessions, setup_token};
use crate::error::AppError;

/// What sign-in and account functions read: the pool and the settings.
#[cfg(feature = "ssr")]
struct Services {
    pool: sqlx::PgPool,
    config: std::sync::Arc<crate::config::Config>,
}

#[cfg(feature = "ssr")]
fn state() -> Result<Services, AppError> {
    Ok(Services {
        pool: crate::ctx::pool()?,
        config: crate::ctx::config()?,
    })
}

/// Who is signed in, or `None`.
#[server(prefix = "/api", endpoint = "me")]
pub async fn get_me() -> Result<Option<Caller>, AppError> {
    Ok(super::caller().ok())
}

/// Signs in and starts a new session (any session the browser had is ended: the id
/// rotates). Redirects to `next` when it is a path on this site.
#[server(prefix = "/api", endpoint = "login")]
pub async fn login(email: String, password: String, next: Option<String>) -> Result<(), AppError> {
    let state = state()?;
    let parts = use_context::<http::request::Parts>().ok_or(AppError::Internal)?;
    let ip = crate::client_address::client_ip(&parts, &state.config.trusted_proxies);
    let email = crate::mail::address::normalise_email(&email);
    if email.len() > 254 {
        return Err(AppError::SignInFailed);
    }
    // Counted before the password is checked, so concurrent guesses cannot all pass.
    let attempt = rate_limit::claim(&state.pool, &email, &ip).await?;
    let account = accounts::find_by_email(&state.pool, &email).await?;
    let hash = account.as_ref().map(|a| a.password_hash.clone());
    let ok = match password::verify(password, hash).await {
        Ok(ok) => ok,
        Err(busy) => {
            // Not a guess: the server was too busy to check it.
            rate_limit::forget(&state.pool, attempt).await?;
            return Err(busy);
        }
    };
    if ok {
        rate_limit::succeeded(&state.pool, attempt).await?;
    }
    let account = account.filter(|_| ok).ok_or(AppError::SignInFailed)?;
    sessions::end_current(&state.pool, &parts).await?;
    lifecycle::purge_expired_sessions(&state.pool, state.config.session_idle).await?;
    sessions::start(&state.pool, &state.config, account.id).await?;
    leptos_axum::redirect(&safe_next(next.as_deref()));
    Ok(())
}

/// Ends the session on the server and clears the cookie.
#[server(prefix = "/api", endpoint = "logout")]
pub async fn logout() -> Result<(), AppError> {
    super::caller()?;
    let state = state()?;
    let parts = use_context::<http::request::Parts>().ok_or(AppError::Internal)?;
    sessions::end_current(&state.pool, &parts).await?;
    sessions::clear_cookie(&state.config);
    leptos_axum::redirect("/login");
    Ok(())
}

/// True while no admin exists, so the first-run setup page is open. Public: the sign-in
/// page asks before anyone is signed in.
#[server(prefix = "/api", endpoint = "setup_needed")]
pub async fn setup_needed() -> Result<bool, AppError> {
    Ok(!accounts::admin_exists(&state()?.pool).await?)
}

/// True when setup asks for the one-time token `serve` printed (no admin yet, and the
/// server listens beyond loopback). Public, for the setup page.
#[server(prefix = "/api", endpoint = "setup_token_required")]
pub async fn setup_token_required() -> Result<bool, AppError> {
    setup_token::provided().map(|token| token.current().is_some())
}

/// Creates the first admin and signs them in; refused once any admin exists.
#[server(prefix = "/api", endpoint = "setup")]
pub async fn setup_admin(
    email: String,
    display_name: String,
    password: String,
    password_confirm: String,
    token: Option<String>,
) -> Result<(), AppError> {
    let state = state()?;
    let setup_token = setup_token::provided()?;
    setup_token.check(token.as_deref())?;
    if password != password_confirm {
        return Err(AppError::invalid("password_confirm", "the two passwords differ"));
    }
    let new = accounts::NewAccount::validate(&email, &display_name, Role::Admin, &password)?;
    let id = accounts::create_first_admin(&state.pool, new).await?;
    setup_token.spend();
    sessions::start(&state.pool, &state.config, id).await?;
    leptos_axum::redirect("/");
    Ok(())
}

/// Changes the caller's own password; other sessions of the account end.
#[server(prefix = "/api", endpoint = "change_password")]
pub async fn change_password(current: String, password: String, password_confirm: String) -> Result<(), AppError> {
    let caller = super::caller()?;
    let state = state()?;
    if password != password_confirm {
        return Err(AppError::invalid("password_confirm", "the two passwords differ"));
    }
    password::check_policy(&password)?;
    let account = accounts::find_by_email(&state.pool, &caller.email)
        .await?
        .ok_or(AppError::Unauthorized)?;
    if !password::verify(current, Some(account.password_hash)).await? {
        return Err(AppError::invalid("current", "the current password is incorrect"));
    }
    let parts = use_context::<http::request::Parts>().ok_or(AppError::Internal)?;
    accounts::set_password(
        &state.pool,
        &caller,
        caller.account_id,
        &password,
        sessions::token_hash_of(&parts),
    )
    .await
}

#[server(prefix = "/api", endpoint = "admin/accounts")]
pub async fn list_accounts() -> Result<Vec<AccountSummary>, AppError> {
    super::require_admin()?;
    Ok(super::accounts::summaries(&state()?.pool).await?)
}

#[server(prefix = "/api", endpoint = "admin/create_account")]
pub async fn create_account(
    email: String,
    display_name: String,
    role: String,
    password: String,
) -> Result<(), AppError> {
    let caller = super::require_admin()?;
    let new = super::accounts::NewAccount::validate(&email, &display_name, Role::parse(&role)?, &password)?;
    super::accounts::create(&state()?.pool, &(&caller).into(), new)
        .await
        .map(|_| ())
}

#[server(prefix = "/api", endpoint = "admin/set_role")]
pub async fn set_role(account_id: i64, role: String) -> Result<(), AppError> {
    let caller = super::require_admin()?;
    super::accounts::set_role(&state()?.pool, &caller, account_id, Role::parse(&role)?).await
}

/// Sets a new password for another account and signs it out everywhere.
#[server(prefix = "/api", endpoint = "admin/reset_password")]
pub async fn reset_password(account_id: i64, password: String) -> Result<(), AppError> {
    let caller = super::require_admin()?;
    super::accounts::set_password(&state()?.pool, &caller, account_id, &password, None).await
}

/// Disables, enables or deletes an account (`step`: disable, enable, delete); disabling
/// and deleting sign it out everywhere at once.
#[server(prefix = "/api", endpoint = "admin/account_lifecycle")]
pub async fn change_account(email: String, step: String) -> Result<(), AppError> {
    use super::lifecycle::{self, Change};
    let caller = super::require_admin()?;
    let change = match step.as_str() {
        "disable" => Change::Disable,
        "enable" => Change::Enable,
        "delete" => Change::Delete,
        _ => return Err(AppError::invalid("step", "expected disable, enable or delete")),
    };
    lifecycle::apply(&state()?.pool, &(&caller).into(), &email, change).await
}

/// The caller's API tokens; an admin also sees every service token.
#[server(prefix = "/api", endpoint = "tokens")]
pub async fn list_tokens() -> Result<Vec<super::model::TokenSummary>, AppError> {
    let caller = super::caller()?;
    let pool = state()?.pool;
    let mut tokens = super::tokens::list(&pool, Some(caller.account_id)).await?;
    if caller.is_admin() {
        let others = super::tokens::list(&pool, None).await?;
        tokens.extend(others.into_iter().filter(|t| t.service && t.email != caller.email));
    }
    Ok(tokens)
}

/// Makes an API token for the caller's own account (a service token: admins only) and
/// returns its secret, shown once.
#[server(prefix = "/api", endpoint = "create_token")]
pub async fn create_api_token(
    name: String,
    role: String,
    team: String,
    expires_days: String,
    service: Option<String>,
) -> Result<String, AppError> {
    use super::tokens::{Creator, NewToken, create};
    let caller = super::caller()?;
    let expires_days: u32 = expires_days.trim().parse().map_err(|_| {
        AppError::invalid(
            "expires_days",
            format!("a whole number of days from 1 to {}", super::tokens::MAX_DAYS),
        )
    })?;
    let role = match role.trim() {
        "" => None,
        text => Some(Role::parse(text)?),
    };
    let new = NewToken {
        owner_email: caller.email.clone(),
        name,
        role,
        team: Some(team),
        expires_days,
        service: service.is_some(),
    };
    let (secret, _) = create(&state()?.pool, Creator::Caller(&caller), new).await?;
    Ok(secret)
}

/// Revokes a live token: the caller's own, or (admins) anyone's.
#[server(prefix = "/api", endpoint = "revoke_token")]
pub async fn revoke_api_token(email: String, name: String) -> Result<(), AppError> {
    let caller = super::caller()?;
    let revoked = super::tokens::revoke(&state()?.pool, super::tokens::Creator::Caller(&caller), &email, &name).await?;
    if !revoked {
        return Err(AppError::NotFound(format!("a live token {name:?} of {email}")));
    }
    Ok(())
}
