//! The action trail (table `enforcement_audit`): one row per proposal, approval, execution,
//! reversal, retry and failure of an enforcement action, apart from the audit log of
//! changes (`audit_log`). The table refuses updates and deletes, so what happened stays
//! written.

use sqlx::PgConnection;

use super::model::TrailRow;
use crate::format::csv::{CsvStyle, text};

/// One entry about to be appended.
#[derive(Debug, Clone)]
pub struct Entry<'a> {
    pub actor: &'a str,
    pub event: &'a str,
    pub action_id: i64,
    pub project: &'a str,
    pub action: &'a str,
    pub aws_request_id: Option<String>,
    pub response: Option<String>,
}

impl<'a> Entry<'a> {
    pub fn new(actor: &'a str, event: &'a str, action_id: i64, project: &'a str, action: &'a str) -> Entry<'a> {
        Entry {
            actor,
            event,
            action_id,
            project,
            action,
            aws_request_id: None,
            response: None,
        }
    }

    pub fn response(mut self, response: &str) -> Entry<'a> {
        self.response = Some(response.to_string());
        self
    }

    pub fn request_id(mut self, request_id: Option<String>) -> Entry<'a> {
        self.aws_request_id = request_id;
        self
    }
}

pub async fn append(conn: &mut PgConnection, entry: &Entry<'_>) -> Result<(), sqlx::Error> {
    sqlx::query(
        "insert into enforcement_audit (actor, event, action_id, project, action, aws_request_id, response)
         values ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(entry.actor)
    .bind(entry.event)
    .bind(entry.action_id)
    .bind(entry.project)
    .bind(entry.action)
    .bind(&entry.aws_request_id)
    .bind(&entry.response)
    .execute(conn)
    .await?;
    Ok(())
}

/// The newest `limit` entries, newest first.
pub async fn recent(conn: &mut PgConnection, limit: i64) -> Result<Vec<TrailRow>, sqlx::Error> {
    sqlx::query_as(
        "select id, to_char(at at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') as at, actor, event, action_id,
                project, action, aws_request_id, response
         from enforcement_audit order by id desc limit $1",
    )
    .bind(limit)
    .fetch_all(conn)
    .await
}

pub const CSV_HEADER: &str = "id,at,actor,event,action_id,project,action,aws_request_id,response";

/// The whole log as CSV, oldest first, for a spreadsheet: text cells are Excel-safe (a
/// project tag or an AWS message could start with `=`).
pub async fn csv(conn: &mut PgConnection) -> Result<String, sqlx::Error> {
    let mut rows = recent(conn, i64::MAX).await?;
    rows.reverse();
    let mut out = format!("{CSV_HEADER}\n");
    for row in rows {
        let line = [
            row.id.to_string(),
            row.at,
            text(&row.actor, CsvStyle::ExcelSafe),
            row.event,
            row.action_id.to_string(),
            text(&row.project, CsvStyle::ExcelSafe),
            row.action,
            text(row.aws_request_id.as_deref().unwrap_or(""), CsvStyle::ExcelSafe),
            text(row.response.as_deref().unwrap_or(""), CsvStyle::ExcelSafe),
        ];
        out.push_str(&line.join(","));
        out.push('\n');
    }
    Ok(out)
}
