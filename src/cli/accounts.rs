//! `burnrate admin`: sign-in accounts from the command line.

use crate::config::Config;
use crate::db::Database;

pub(super) async fn create_account(config: Config, email: &str, name: &str, role: &str) -> Result<(), String> {
    use crate::auth::{Role, accounts};
    let password = read_new_password()?;
    let role = Role::parse(role).map_err(|e| e.to_string())?;
    let new = accounts::NewAccount::validate(email, name, role, &password).map_err(|e| e.to_string())?;
    let db = Database::open(&config).await.map_err(|e| e.to_string())?;
    let actor = crate::audit_log::Actor::system("cli");
    let result = accounts::create(&db.pool, &actor, new).await.map_err(|e| e.to_string());
    db.close().await;
    result?;
    println!("created {} account {}", role.key(), accounts::normalise_email(email));
    Ok(())
}

pub(super) async fn change_account(
    config: Config,
    email: &str,
    change: crate::auth::lifecycle::Change,
) -> Result<(), String> {
    let db = Database::open(&config).await.map_err(|e| e.to_string())?;
    let actor = crate::audit_log::Actor::system("cli");
    let result = crate::auth::lifecycle::apply(&db.pool, &actor, email, change).await;
    db.close().await;
    result.map_err(|e| e.to_string())?;
    let done = match change {
        crate::auth::lifecycle::Change::Disable => "disabled",
        crate::auth::lifecycle::Change::Enable => "enabled",
        crate::auth::lifecycle::Change::Delete => "deleted",
    };
    println!("{done} account {}", crate::auth::accounts::normalise_email(email));
    Ok(())
}

/// One line from standard input, or two matching prompts at a terminal.
pub(super) fn read_new_password() -> Result<String, String> {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() {
        let first = rpassword::prompt_password("Password: ").map_err(|e| e.to_string())?;
        let second = rpassword::prompt_password("Repeat the password: ").map_err(|e| e.to_string())?;
        if first != second {
            return Err("the two passwords differ".into());
        }
        Ok(first)
    } else {
        let mut line = String::new();
        std::io::stdin()
            .read_line(&mut line)
            .map_err(|e| format!("reading the password from standard input: {e}"))?;
        Ok(line.trim_end_matches(['\r', '\n']).to_string())
    }
}
