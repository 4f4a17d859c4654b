//! Demo sign-in accounts, one per role, created with `serve --demo` when none exist.

use rand::Rng;
use rand::distributions::Alphanumeric;
use sqlx::PgPool;

use crate::audit_log::Actor;
use crate::auth::{Role, accounts};
use crate::error::AppError;

/// (role, email, password) of each demo account. The lead owns the ml-research team.
pub type DemoAccount = (Role, &'static str, String);

const ACCOUNTS: [(Role, &str, &str); 3] = [
    (Role::Admin, "admin@example.com", "Demo Admin"),
    (Role::Lead, "alice@example.com", "Alice Moreau"),
    (Role::Viewer, "viewer@example.com", "Demo Viewer"),
];

/// Creates the demo accounts with random passwords if the database has no accounts yet.
pub async fn create_if_none(pool: &PgPool) -> Result<Option<Vec<DemoAccount>>, AppError> {
    if accounts::any_exist(pool).await? {
        return Ok(None);
    }
    let mut created = Vec::new();
    for (role, email, name) in ACCOUNTS {
        let password: String = rand::thread_rng()
            .sample_iter(&Alphanumeric)
            .take(16)
            .map(char::from)
            .collect();
        let new = accounts::NewAccount::validate(email, name, role, &password)?;
        accounts::create(pool, &Actor::system("demo"), new).await?;
        created.push((role, email, password));
    }
    Ok(Some(created))
}

/// The one-time notice printed at start with the demo credentials.
pub fn credentials_banner(created: &[DemoAccount]) -> String {
    let mut text = String::from("Demo accounts (shown once; change the passwords under Account):\n");
    for (role, email, password) in created {
        text.push_str(&format!("  {:<7} {:<20} {}\n", role.key(), email, password));
    }
    text
}
