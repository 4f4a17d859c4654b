//! `GET /api/savings.csv?team=&kind=&account=`: the Savings page's recommendations as a
//! download, in the `burnrate insights` columns, Excel-safe; and the monthly savings report
//! (`/api/savings/report.csv` and `.html`, `?month=2026-11`).

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::service::InsightsError;
use crate::config::Config;
use crate::page_data::PageDataCache;

pub async fn savings_csv(
    State(pool): State<sqlx::PgPool>,
    State(config): State<Arc<Config>>,
    State(cache): State<PageDataCache>,
    caller: Option<axum::Extension<crate::auth::Caller>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    if caller.is_none() {
        return (StatusCode::UNAUTHORIZED, "sign in first").into_response();
    }
    let team = query.get("team").filter(|t| !t.is_empty());
    let kind = match super::model::Kind::filter(query.get("kind").map(String::as_str)) {
        Ok(kind) => kind,
        Err(expected) => return (StatusCode::BAD_REQUEST, format!("kind: {expected}")).into_response(),
    };
    let account = match crate::period::AwsAccountId::parse_filter(query.get("account").map(String::as_str)) {
        Ok(account) => account,
        Err(message) => return (StatusCode::BAD_REQUEST, format!("account: {message}")).into_response(),
    };
    let insights = match super::service::cached_insights(&pool, &cache, &config, chrono::Utc::now()).await {
        Err(InsightsError::NotReady) => return not_ready(),
        Err(InsightsError::Database(error)) => Err(error),
        Ok(insights) => Ok(insights),
    };
    let filtered = match insights {
        Ok(insights) => super::service::account_usage(&pool, &cache, &insights, account.as_ref())
            .await
            .map(|account| (insights, account)),
        Err(error) => Err(error),
    };
    match filtered {
        Ok((insights, account)) => {
            let filters = super::service::Filters {
                team: team.map(String::as_str),
                kind,
                account,
            };
            let rows: Vec<_> = insights
                .recommendations
                .iter()
                .filter(|r| filters.keeps(r))
                .cloned()
                .collect();
            (
                [
                    (header::CONTENT_TYPE, "text/csv; charset=utf-8"),
                    (
                        header::CONTENT_DISPOSITION,
                        "attachment; filename=\"burnrate-savings.csv\"",
                    ),
                ],
                super::csv::render(&rows, crate::format::csv::CsvStyle::ExcelSafe),
            )
                .into_response()
        }
        Err(error) if crate::error::is_unavailable(&error) => crate::error::unavailable_response(),
        Err(error) => {
            tracing::error!(%error, "savings CSV failed");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the export failed; see the server log",
            )
                .into_response()
        }
    }
}

/// The report as CSV or, at `SAVINGS_REPORT_HTML`, as the printable document.
pub async fn savings_report(
    State(pool): State<sqlx::PgPool>,
    State(config): State<Arc<Config>>,
    State(cache): State<PageDataCache>,
    caller: Option<axum::Extension<crate::auth::Caller>>,
    uri: axum::http::Uri,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    if caller.is_none() {
        return (StatusCode::UNAUTHORIZED, "sign in first").into_response();
    }
    let html = uri.path() == crate::ui::links::SAVINGS_REPORT_HTML;
    let (pool, cache) = (&pool, &cache);
    let now = chrono::Utc::now();
    let month = match super::service::report_month(query.get("month").map(String::as_str), now.date_naive()) {
        Ok(month) => month,
        Err(message) => return (StatusCode::BAD_REQUEST, format!("month: {message}")).into_response(),
    };
    let report = match super::service::cached_insights(pool, cache, &config, now).await {
        Ok(insights) => super::report::compute(pool, &insights, month, now.date_naive()).await,
        Err(InsightsError::NotReady) => return not_ready(),
        Err(InsightsError::Database(error)) => Err(error),
    };
    match report {
        Ok(report) if html => (
            [
                (header::CONTENT_TYPE, "text/html; charset=utf-8".to_string()),
                (header::CONTENT_SECURITY_POLICY, crate::format::printable::html_csp()),
            ],
            super::report_render::html(&report),
        )
            .into_response(),
        Ok(report) => (
            [
                (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
                (
                    header::CONTENT_DISPOSITION,
                    format!(
                        "attachment; filename=\"burnrate-savings-report-{}.csv\"",
                        crate::period::month_label(report.month)
                    ),
                ),
            ],
            super::report_render::csv(&report, crate::format::csv::CsvStyle::ExcelSafe),
        )
            .into_response(),
        Err(error) if crate::error::is_unavailable(&error) => crate::error::unavailable_response(),
        Err(error) => {
            tracing::error!(%error, "savings report failed");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the report failed; see the server log",
            )
                .into_response()
        }
    }
}

/// 503 with Retry-After: the first recommendation set since the start is still computing.
fn not_ready() -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::RETRY_AFTER, "5")],
        InsightsError::NotReady.to_string(),
    )
        .into_response()
}
