//! `burnrate token`: API tokens from the command line (the operator's own authority, like
//! `burnrate admin`). `create` prints the secret alone on standard output, once.

use crate::auth::Role;
use crate::auth::tokens::{self, Creator, NewToken};
use crate::config::Config;
use crate::db::Database;

#[derive(Debug, clap::Args)]
pub(super) struct CreateArgs {
    /// The account the token acts as.
    #[arg(long)]
    email: String,
    /// A name to tell it by, unique among the account's live tokens.
    #[arg(long)]
    name: String,
    /// admin, lead or viewer, at most the account's own [default: the account's role].
    #[arg(long, value_parser = ["admin", "lead", "viewer"])]
    role: Option<String>,
    /// Limit the token to one team's figures.
    #[arg(long)]
    team: Option<String>,
    /// Days until it expires (at most 365).
    #[arg(long, default_value_t = tokens::DEFAULT_DAYS, value_parser = clap::value_parser!(u32).range(1..=365))]
    expires_days: u32,
    /// Mark it a service token (CI, a launcher) rather than the account's own.
    #[arg(long)]
    service: bool,
}

pub(super) async fn create_token(config: Config, args: CreateArgs) -> anyhow::Result<()> {
    let role = args.role.as_deref().map(Role::parse).transpose()?;
    let db = Database::open(&config).await?;
    let result = tokens::create(
        &db.pool,
        Creator::Operator,
        NewToken {
            owner_email: args.email,
            name: args.name,
            role,
            team: args.team,
            expires_days: args.expires_days,
            service: args.service,
        },
    )
    .await;
    db.close().await;
    let (secret, summary) = result?;
    eprintln!(
        "created token {:?} for {} ({}{}), expires {}; the secret below is shown once",
        summary.name,
        summary.email,
        summary.role.key(),
        summary.team.map(|t| format!(", team {t}")).unwrap_or_default(),
        summary.expires_at
    );
    println!("{secret}");
    Ok(())
}

pub(super) async fn list_tokens(config: Config) -> anyhow::Result<()> {
    let db = Database::open(&config).await?;
    let result = tokens::list(&db.pool, None).await;
    db.close().await;
    let list = result?;
    println!("email,name,hint,role,team,service,created,expires,last_used,state");
    for t in list {
        let state = t.state();
        println!(
            "{},{},{},{},{},{},{},{},{},{state}",
            crate::format::csv::csv_field(&t.email),
            crate::format::csv::csv_field(&t.name),
            t.hint,
            t.role.key(),
            crate::format::csv::csv_field(t.team.as_deref().unwrap_or("")),
            t.service,
            t.created_at,
            t.expires_at,
            t.last_used_at.unwrap_or_default(),
        );
    }
    Ok(())
}

pub(super) async fn revoke_token(config: Config, name: &str, email: &str) -> anyhow::Result<()> {
    let db = Database::open(&config).await?;
    let result = tokens::revoke(&db.pool, Creator::Operator, email, name).await;
    db.close().await;
    if !result? {
        anyhow::bail!("{email} has no live token named {name:?}");
    }
    println!("revoked token {name:?} of {email}");
    Ok(())
}
