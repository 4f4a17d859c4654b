//! The Audit log page's read.

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use super::model::AuditEntry;

/// An `audit_log` row.
#[derive(sqlx::FromRow)]
struct Entry {
    id: i64,
    created_at: DateTime<Utc>,
    actor: String,
    action: String,
    subject: String,
    details: serde_json::Value,
}

/// The newest `limit` entries, newest first.
pub async fn recent(pool: &PgPool, limit: i64) -> Result<Vec<AuditEntry>, sqlx::Error> {
    let entries: Vec<Entry> = sqlx::query_as(
        "select id, created_at, actor, action, subject, details from audit_log order by id desc limit $1",
    )
    .bind(limit)
    .fetch_all(pool)
    .await?;
    Ok(entries
        .into_iter()
        .map(|e| AuditEntry {
            id: e.id,
            at: e.created_at.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
            actor: e.actor,
            action: e.action,
            subject: e.subject,
            details: e.details.to_string(),
        })
        .collect())
}
