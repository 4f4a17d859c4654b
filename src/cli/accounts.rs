//! `burnrate admin`: sign-in accounts from the command line.

use anyhow::Context;

use crate::config::Config;
use crate::db::Database;

pub(super) async fn create_account(config: Config, email: &str, name: &str, role: &str) -> anyhow::Result<()> {
    use crate::auth::{Role, accounts};
    let password = read_new_password()?;
    let role = Role::parse(role)?;
    let new = accounts::NewAccount::validate(email, name, role, &password)?;
    let db = Database::open(&config).await?;
    let actor = crate::audit_log::Actor::system("cli");
    let result = accounts::create(&db.pool, &actor, new).await;
    db.close().await;
    result?;
    println!(
        "created {} account {}",
        role.key(),
        crate::mail::address::normalise_email(email)
    );
    Ok(())
}

pub(super) async fn change_account(
    config: Config,
    email: &str,
    change: crate::auth::lifecycle::Change,
) -> anyhow::Result<()> {
    let db = Database::open(&config).await?;
    let actor = crate::audit_log::Actor::system("cli");
    let result = crate::auth::lifecycle::apply(&db.pool, &actor, email, change).await;
    db.close().await;
    result?;
    let done = match change {
        crate::auth::lifecycle::Change::Disable => "disabled",
        crate::auth::lifecycle::Change::Enable => "enabled",
        crate::auth::lifecycle::Change::Delete => "deleted",
    };
    println!("{done} account {}", crate::mail::address::normalise_email(email));
    Ok(())
}

/// One line from standard input, or two matching prompts at a terminal.
pub(super) fn read_new_password() -> anyhow::Result<String> {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() {
        let first = rpassword::prompt_password("Password: ")?;
        let second = rpassword::prompt_password("Repeat the password: ")?;
        if first != second {
            anyhow::bail!("the two passwords differ");
        }
        Ok(first)
    } else {
        let mut line = String::new();
        std::io::stdin()
            .read_line(&mut line)
            .context("reading the password from standard input")?;
        Ok(line.trim_end_matches(['\r', '\n']).to_string())
    }
}
