//! Writing audit entries, inside the transaction of the change they describe. Below every
//! feature: each records its changes here; the Audit log page (`audit`) reads them.

use sqlx::PgConnection;

/// Who made a change: a signed-in account, or the CLI or the system.
#[derive(Debug, Clone)]
pub struct Actor {
    pub account_id: Option<i64>,
    pub label: String,
}

impl Actor {
    pub fn system(label: &str) -> Actor {
        Actor {
            account_id: None,
            label: label.to_string(),
        }
    }
}

/// Appends one entry; `action` is dotted (`account.create`), `subject` names what changed.
pub async fn record(
    conn: &mut PgConnection,
    actor: &Actor,
    action: &str,
    subject: &str,
    details: serde_json::Value,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "insert into audit_log (actor_account_id, actor, action, subject, details) values ($1, $2, $3, $4, $5)",
    )
    .bind(actor.account_id)
    .bind(&actor.label)
    .bind(action)
    .bind(subject)
    .bind(details)
    .execute(conn)
    .await?;
    Ok(())
}
