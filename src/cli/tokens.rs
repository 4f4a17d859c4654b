//! `burnrate token`: API tokens from the command line (the operator's own authority, like
//! `burnrate admin`). `create` prints the secret alone on standard output, once.

use crate::auth::Role;
use crate::auth::tokens::{self, Creator, NewToken};
use crate::config::Config;
use crate::db::Database;

pub(super) struct CreateArgs {
    pub email: String,
    pub name: String,
    pub role: Option<String>,
    pub team: Option<String>,
    pub expires_days: u32,
    pub service: bool,
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
    println!("email,name,hint,role,team,service,created,expires,last_used,state");
    for t in result? {
        let state = if t.revoked {
            "revoked"
        } else if t.live {
            "live"
        } else {
            "expired"
        };
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
