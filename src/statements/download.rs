//! `GET /api/statement?month=YYYY-MM&team=&account=&format=csv|html`: a month's chargeback
//! statement for any signed-in role, as the CSV (Excel-safe) or the printable HTML; with
//! `account=`, that linked account's part of it, computed now.

use std::collections::HashMap;

use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

pub async fn statement(
    State(pool): State<sqlx::PgPool>,
    caller: Option<axum::Extension<crate::auth::Caller>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    if caller.is_none() {
        return (StatusCode::UNAUTHORIZED, "sign in first").into_response();
    }
    let month = match super::store::parse_month(query.get("month").map_or("", String::as_str)) {
        Ok(month) => month,
        Err(message) => return (StatusCode::BAD_REQUEST, format!("month: {message}")).into_response(),
    };
    let team = query.get("team").map(String::as_str).filter(|t| !t.is_empty());
    let account = match crate::period::AwsAccountId::parse_filter(query.get("account").map(String::as_str)) {
        Ok(account) => account,
        Err(message) => return (StatusCode::BAD_REQUEST, format!("account: {message}")).into_response(),
    };
    let html = match query.get("format").map_or("csv", String::as_str) {
        "csv" => false,
        "html" => true,
        _ => return (StatusCode::BAD_REQUEST, "format: expected csv or html").into_response(),
    };
    let today = chrono::Utc::now().date_naive();
    let statement = match (pool.acquire().await, &account) {
        (Ok(mut conn), None) => super::store::statement(&mut conn, month, today).await,
        (Ok(mut conn), Some(account)) => super::store::statement_in_account(&mut conn, month, account).await,
        (Err(error), _) => Err(error),
    };
    match statement {
        Ok(statement) if html => (
            [
                (header::CONTENT_TYPE, "text/html; charset=utf-8".to_string()),
                (header::CONTENT_SECURITY_POLICY, super::render::html_csp()),
            ],
            super::render::html(&statement, team),
        )
            .into_response(),
        Ok(statement) => (
            [
                (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
                (
                    header::CONTENT_DISPOSITION,
                    format!(
                        "attachment; filename=\"burnrate-statement-{}{}.csv\"",
                        super::store::month_label(month),
                        account.as_ref().map_or(String::new(), |id| format!("-{id}"))
                    ),
                ),
            ],
            super::render::csv(&statement, team, crate::format::csv::CsvStyle::ExcelSafe),
        )
            .into_response(),
        Err(error) if crate::error::is_unavailable(&error) => crate::error::unavailable_response(),
        Err(error) => {
            tracing::error!(%error, "statement failed");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the statement failed; see the server log",
            )
                .into_response()
        }
    }
}
