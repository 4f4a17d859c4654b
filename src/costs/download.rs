//! `GET /api/export.csv`: the `burnrate export` CSV as a download, for every dashboard table.
//! Query: from, to (exclusive), group_by, and optional granularity, metric, credits (net or
//! gross) and account, as the CLI.
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
use crate::period::{AwsAccountId, Credits, DateRange, Metric};

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
    let request = match parse(&|name| query.get(name).map(String::as_str)) {
        Ok(request) => request,
        Err((_, message)) => return (StatusCode::BAD_REQUEST, message).into_response(),
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

/// A valid export request, from the download's query or `GET /api/v1/costs`.
pub struct Request {
    pub range: DateRange,
    pub keys: Vec<export::Key>,
    pub selection: export::Selection,
}

/// Reads from, to, group_by, granularity, metric, credits and account through `get`; an
/// error names its parameter.
pub fn parse<'a>(get: &dyn Fn(&str) -> Option<&'a str>) -> Result<Request, (&'static str, String)> {
    let date = |name: &'static str| {
        let text = get(name).ok_or_else(|| (name, format!("{name} is required (YYYY-MM-DD)")))?;
        NaiveDate::parse_from_str(text, "%Y-%m-%d")
            .map_err(|_| (name, format!("{name}: expected YYYY-MM-DD, got {text:?}")))
    };
    let range = export::checked_range(date("from")?, date("to")?).map_err(|m| ("to", m))?;
    let keys = export::checked_keys(get("group_by").unwrap_or("")).map_err(|m| ("group_by", m))?;
    let granularity = match get("granularity") {
        None | Some("daily") => Granularity::Daily,
        Some("monthly") => Granularity::Monthly,
        Some(other) => {
            return Err((
                "granularity",
                format!("granularity: expected daily or monthly, got {other:?}"),
            ));
        }
    };
    let metric = Metric::parse(get("metric")).map_err(|m| ("metric", m))?;
    let credits = Credits::parse(get("credits")).map_err(|m| ("credits", m))?;
    export::table_for_credits(&keys, credits).map_err(|m| ("credits", m))?;
    let account = AwsAccountId::parse_filter(get("account")).map_err(|m| ("account", format!("account: {m}")))?;
    Ok(Request {
        range,
        keys,
        selection: export::Selection {
            granularity,
            metric,
            credits,
            account,
            team: None,
        },
    })
}
