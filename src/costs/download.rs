//! `GET /api/export.csv`: the `burnrate export` CSV as a download, for every dashboard table.
//! Query: from, to (exclusive), group_by, and optional granularity, metric and account, as
//! the CLI.
//! The rows stream from PostgreSQL to the client as they are read, and text cells are
//! Excel-safe (a spreadsheet opens this file).

use std::collections::HashMap;

use axum::Extension;
use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::NaiveDate;

use super::export::{self, CsvStyle, Granularity};
use crate::auth::Caller;
use crate::config::Config;
use crate::period::{AccountId, DateRange, Metric};

/// Exports streaming at once, at most.
const CONCURRENT_EXPORTS: usize = 4;
static EXPORTS: std::sync::LazyLock<std::sync::Arc<tokio::sync::Semaphore>> =
    std::sync::LazyLock::new(|| std::sync::Arc::new(tokio::sync::Semaphore::new(CONCURRENT_EXPORTS)));
/// The export query's own bound: a whole-history export takes seconds (docs/PERFORMANCE.md).
const EXPORT_STATEMENT_BOUND: std::time::Duration = std::time::Duration::from_secs(600);

pub async fn export_csv(
    State(pool): State<sqlx::PgPool>,
    State(config): State<std::sync::Arc<Config>>,
    caller: Option<Extension<Caller>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    // The guard already refuses signed-out API calls; checked here too, as every handler does.
    if caller.is_none() {
        return (StatusCode::UNAUTHORIZED, "sign in first").into_response();
    }
    let request = match parse(&query) {
        Ok(request) => request,
        Err(message) => return (StatusCode::BAD_REQUEST, message).into_response(),
    };
    let Request { range, keys, selection } = request;
    // At most a few exports at once, each holding one database connection: a crowd of
    // downloads cannot take the pool from sign-in and pages.
    let Ok(slot) = EXPORTS.clone().try_acquire_owned() else {
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, "10")],
            "other exports are running; try again in a few seconds",
        )
            .into_response();
    };
    // The transaction opens before the answer starts, so a database that is down is a 503,
    // not a broken download.
    let tx = match pool.begin().await {
        Ok(tx) => tx,
        Err(error) if crate::error::is_unavailable(&error) => return crate::error::unavailable_response(),
        Err(error) => {
            tracing::error!(%error, "CSV export failed");
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the export failed; see the server log",
            )
                .into_response();
        }
    };
    let names: Vec<&str> = keys.iter().map(|k| k.name()).collect();
    let account = selection
        .account
        .as_ref()
        .map_or(String::new(), |id| format!("-{}", id.as_str()));
    let filename = format!(
        "burnrate-{}{account}-{}-{}.csv",
        names.join("-"),
        range.from,
        range.last_day()
    );
    // A few chunks in flight at most: the rows are read as fast as the client takes them.
    let (chunks, body) = tokio::sync::mpsc::channel::<Result<String, std::io::Error>>(4);
    let patience = config.timeouts.request;
    tokio::spawn(async move {
        let _slot = slot;
        // A client that stops reading for a request timeout gives its connection back.
        let send = |chunk: String| {
            let chunks = chunks.clone();
            async move { matches!(tokio::time::timeout(patience, chunks.send(Ok(chunk))).await, Ok(Ok(()))) }
        };
        let bounds = (CsvStyle::ExcelSafe, Some(EXPORT_STATEMENT_BOUND));
        let streamed = export::stream_csv(tx, range, &keys, &selection, bounds, send).await;
        if let Err(error) = streamed {
            // Headers are sent: the client sees the body end with an error, not a short file.
            tracing::error!(%error, "CSV export failed while streaming");
            let _ = chunks.send(Err(std::io::Error::other("the export failed"))).await;
        }
    });
    // Fused: the compression layer may poll again after the end, which `unfold` forbids.
    let stream = futures_util::StreamExt::fuse(futures_util::stream::unfold(body, |mut body| async move {
        body.recv().await.map(|chunk| (chunk, body))
    }));
    (
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{filename}\""),
            ),
        ],
        axum::body::Body::from_stream(stream),
    )
        .into_response()
}

/// A valid download request.
struct Request {
    range: DateRange,
    keys: Vec<export::Key>,
    selection: export::Selection,
}

fn parse(query: &HashMap<String, String>) -> Result<Request, String> {
    let date = |name: &str| {
        let text = query
            .get(name)
            .ok_or_else(|| format!("{name} is required (YYYY-MM-DD)"))?;
        NaiveDate::parse_from_str(text, "%Y-%m-%d").map_err(|_| format!("{name}: expected YYYY-MM-DD, got {text:?}"))
    };
    let range = export::checked_range(date("from")?, date("to")?)?;
    let keys = export::checked_keys(query.get("group_by").map(String::as_str).unwrap_or(""))?;
    let granularity = match query.get("granularity").map(String::as_str) {
        None | Some("daily") => Granularity::Daily,
        Some("monthly") => Granularity::Monthly,
        Some(other) => return Err(format!("granularity: expected daily or monthly, got {other:?}")),
    };
    let metric = Metric::parse(query.get("metric").map(String::as_str))?;
    let account =
        AccountId::parse_filter(query.get("account").map(String::as_str)).map_err(|m| format!("account: {m}"))?;
    Ok(Request {
        range,
        keys,
        selection: export::Selection {
            granularity,
            metric,
            account,
        },
    })
}
