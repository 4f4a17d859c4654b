//! The Ingestion page (`/ingestion`): recent cost loads with their status, size and cost.

use leptos::prelude::*;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use crate::app::{PageHeader, TableHead};
use crate::error::AppError;
use crate::format::usd;

/// One ingestion run as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunSummary {
    pub id: i64,
    pub trigger: String,
    pub status: String,
    pub started_at: String,
    /// `None` while running.
    pub duration_seconds: Option<i64>,
    /// `from – last day`, when the run covered a window.
    pub window: Option<String>,
    pub rows_written: i64,
    pub requests: i32,
    pub api_cost: Decimal,
    pub error: Option<String>,
}

/// The 50 newest runs, newest first. Any signed-in account may read them.
#[server(prefix = "/api", endpoint = "ingestion_runs")]
pub async fn list_runs() -> Result<Vec<RunSummary>, AppError> {
    crate::error::with_status(
        async {
            crate::auth::caller()?;
            let state = use_context::<crate::server::AppState>().ok_or(AppError::Internal)?;
            type Row = (
                i64,
                String,
                String,
                chrono::DateTime<chrono::Utc>,
                Option<i64>,
                Option<chrono::NaiveDate>,
                Option<chrono::NaiveDate>,
                i64,
                i32,
                Decimal,
                Option<String>,
            );
            let rows: Vec<Row> = sqlx::query_as(
                "select id, trigger, status, started_at,
                        extract(epoch from finished_at - started_at)::bigint,
                        window_from, window_to - 1, rows_written, requests, api_cost, error
                 from ingestion_runs order by started_at desc, id desc limit 50",
            )
            .fetch_all(&state.pool)
            .await?;
            Ok(rows
                .into_iter()
                .map(
                    |(id, trigger, status, started, duration, from, last, rows_written, requests, api_cost, error)| {
                        RunSummary {
                            id,
                            trigger,
                            status,
                            started_at: started.format("%Y-%m-%d %H:%M UTC").to_string(),
                            duration_seconds: duration,
                            window: from.zip(last).map(|(f, l)| format!("{f} – {l}")),
                            rows_written,
                            requests,
                            api_cost,
                            error,
                        }
                    },
                )
                .collect())
        }
        .await,
    )
}

#[component]
pub fn IngestionPage() -> impl IntoView {
    let runs = Resource::new(|| (), |_| list_runs());
    view! {
        <PageHeader title="Ingestion"/>
        <Transition fallback=|| view! { <p class="loading">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match runs.await {
                    Err(err) => view! { <p class="error" role="alert">{err.to_string()}</p> }.into_any(),
                    Ok(list) if list.is_empty() => view! {
                        <section class="empty" data-testid="empty-state">
                            <h2>"No cost data has been loaded yet"</h2>
                            <p>"Load the demo organisation with " <code>"burnrate demo"</code> "."</p>
                        </section>
                    }.into_any(),
                    Ok(list) => view! {
                        <table class="data" data-testid="runs-table">
                            <TableHead columns=&["Started", "Trigger", "Status", "Window", "Rows", "Requests", "API cost", "Duration", "Error"]/>
                            <tbody>
                                {list.into_iter().map(|run| view! {
                                    <tr data-testid="run-row">
                                        <td>{run.started_at}</td>
                                        <td>{run.trigger}</td>
                                        <td><span class=format!("status status-{}", run.status)>{run.status.clone()}</span></td>
                                        <td>{run.window.unwrap_or_default()}</td>
                                        <td class="num">{run.rows_written}</td>
                                        <td class="num">{run.requests}</td>
                                        <td class="num">{usd(run.api_cost)}</td>
                                        <td class="num">{run.duration_seconds.map(|s| format!("{s} s")).unwrap_or_else(|| "running".into())}</td>
                                        <td>{run.error.unwrap_or_default()}</td>
                                    </tr>
                                }).collect_view()}
                            </tbody>
                        </table>
                    }.into_any(),
                }
            })}
        </Transition>
    }
}
