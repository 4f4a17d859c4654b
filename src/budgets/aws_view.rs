//! The AWS Budgets panel on `/budgets`: the account's budgets, read-only, and the admins'
//! Sync button. Loaded on request, so the page never waits on AWS.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::AppError;
use crate::ui::table::TableHead;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AwsBudgetRow {
    pub name: String,
    pub limit: String,
    pub time_unit: String,
    /// Created by burnrate (`burnrate-<id>`); the rest are listed, never changed.
    pub managed: bool,
}

#[server(prefix = "/api", endpoint = "aws_budgets")]
pub async fn list_aws_budgets() -> Result<Vec<AwsBudgetRow>, AppError> {
    crate::error::with_status(
        async {
            crate::auth::caller()?;
            let aws = crate::aws::budgets::AwsBudgets::from_environment()
                .await
                .map_err(unavailable)?;
            let rows = super::aws_sync::summaries(&aws).await.map_err(unavailable)?;
            Ok(rows
                .into_iter()
                .map(|b| AwsBudgetRow {
                    name: b.name,
                    limit: b.limit,
                    time_unit: b.time_unit,
                    managed: b.managed,
                })
                .collect())
        }
        .await,
    )
}

/// Makes AWS Budgets match burnrate's budgets (admins); returns the summary line.
#[server(prefix = "/api", endpoint = "sync_budgets")]
pub async fn sync_aws_budgets() -> Result<String, AppError> {
    crate::error::with_status(
        async {
            let caller = crate::auth::require_admin()?;
            let (pool, config) = (crate::ctx::pool()?, crate::ctx::config()?);
            let aws = crate::aws::budgets::AwsBudgets::from_environment()
                .await
                .map_err(unavailable)?;
            let report = super::aws_sync::sync(&pool, &aws, &config.ingest.tag_project)
                .await
                .map_err(unavailable)?;
            let mut conn = pool.acquire().await?;
            crate::audit_log::record(
                &mut conn,
                &(&caller).into(),
                "budget.aws_sync",
                "AWS Budgets",
                serde_json::json!({
                    "created": report.created, "replaced": report.replaced,
                    "deleted": report.deleted, "skipped": report.skipped,
                }),
            )
            .await?;
            Ok(report.to_string())
        }
        .await,
    )
}

/// AWS errors are the user's to act on (credentials, account, permissions), so they are shown.
#[cfg(feature = "ssr")]
fn unavailable(err: impl std::fmt::Display) -> AppError {
    tracing::warn!(error = %err, "AWS Budgets unavailable");
    AppError::invalid("aws", err.to_string())
}

#[component]
pub fn AwsBudgets(can_sync: bool) -> impl IntoView {
    let load = ServerAction::<ListAwsBudgets>::new();
    let sync = ServerAction::<SyncAwsBudgets>::new();
    view! {
        <section class="card" data-testid="aws-budgets">
            <h2>"AWS Budgets"</h2>
            <p class="hint">"burnrate keeps one AWS budget per burnrate budget, named burnrate-<id>, with its thresholds as AWS notifications "
                "(at most 10 email subscribers each; burnrate's own emails reach everyone). Other AWS budgets are shown, never changed."</p>
            <ActionForm action=load attr:class="inline"><button type="submit">"Show AWS budgets"</button></ActionForm>
            {can_sync.then(|| view! {
                <ActionForm action=sync attr:class="inline"><button type="submit">"Sync to AWS Budgets"</button></ActionForm>
            })}
            {move || sync.value().get().map(|result| match result {
                Ok(summary) => view! { <p data-testid="sync-result">{summary}</p> }.into_any(),
                Err(err) => crate::ui::page::error_text(&err).into_any(),
            })}
            {move || load.value().get().map(|result| match result {
                Err(err) => crate::ui::page::error_text(&err).into_any(),
                Ok(rows) if rows.is_empty() => view! { <p>"The AWS account has no budgets."</p> }.into_any(),
                Ok(rows) => view! {
                    <table class="data" data-testid="aws-budgets-table">
                        <TableHead columns=&["AWS budget", "Limit", "Period", "Managed by"]/>
                        <tbody>
                            {rows.into_iter().map(|row| view! {
                                <tr>
                                    <td>{row.name}</td>
                                    <td>{row.limit}</td>
                                    <td>{row.time_unit}</td>
                                    <td>{if row.managed { "burnrate" } else { "AWS (read-only here)" }}</td>
                                </tr>
                            }).collect_view()}
                        </tbody>
                    </table>
                }.into_any(),
            })}
        </section>
    }
}
