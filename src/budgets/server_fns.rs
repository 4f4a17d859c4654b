//! Server functions for the Budgets pages and their AWS panel. Anyone signed in reads; admins edit every budget,
//! leads only budgets whose scope is one of their teams or a project of one of them.

// `save_budget` takes one argument per form field, as ActionForm posts them; the macro's
// generated client stub cannot carry a per-function allow.
#![allow(clippy::too_many_arguments)]

use leptos::prelude::*;

#[cfg(feature = "ssr")]
use super::model::BudgetLine;
use super::model::{AwsBudgetRow, BudgetData, BudgetsData};
use crate::error::AppError;

#[server(prefix = "/api", endpoint = "budgets")]
pub async fn list_budgets() -> Result<BudgetsData, AppError> {
    let caller = crate::auth::caller()?;
    let pool = &crate::ctx::pool()?;
    let mut conn = pool.acquire().await?;
    let today = chrono::Utc::now().date_naive();
    let mut budgets = Vec::new();
    for budget in super::store::list(&mut conn).await? {
        let can_edit = super::access::may_edit(&mut conn, &caller, &budget.spec.scope).await?;
        let status = super::evaluate::status(&mut conn, &budget, today).await?.status;
        budgets.push(BudgetLine { status, can_edit });
    }
    let choices = super::access::choices(&mut conn, &caller).await?;
    Ok(BudgetsData {
        budgets,
        choices,
        can_sync: caller.is_admin(),
    })
}

#[server(prefix = "/api", endpoint = "budget")]
pub async fn get_budget(id: i64) -> Result<BudgetData, AppError> {
    let caller = crate::auth::caller()?;
    let pool = &crate::ctx::pool()?;
    let mut conn = pool.acquire().await?;
    let budget = super::store::get(&mut conn, id)
        .await?
        .ok_or_else(|| AppError::NotFound("no such budget".into()))?;
    let today = chrono::Utc::now().date_naive();
    let can_edit = super::access::may_edit(&mut conn, &caller, &budget.spec.scope).await?;
    let super::evaluate::Standing { status, daily } = super::evaluate::status(&mut conn, &budget, today).await?;
    let open = crate::costs::queries::open_days(&mut *conn, status.period).await?;
    let burn_svg = super::chart::burn_chart(&status, &daily, &open.provisional);
    let recipients = super::evaluate::recipients(&mut conn, &budget).await?;
    let alerts = super::store::alerts(&mut conn, id).await?;
    let choices = super::access::choices(&mut conn, &caller).await?;
    Ok(BudgetData {
        line: BudgetLine { status, can_edit },
        choices,
        burn_svg: crate::codec::Svg(burn_svg),
        alerts,
        recipients,
        is_admin: caller.is_admin(),
    })
}

/// Creates (`id` empty) or updates a budget. Thresholds are one per line (`80`,
/// `100 forecasted`); recipients are separated by commas or new lines.
#[server(prefix = "/api", endpoint = "save_budget")]
pub async fn save_budget(
    id: Option<i64>,
    name: String,
    scope_kind: String,
    scope_name: String,
    period: String,
    amount: String,
    metric: String,
    #[server(default)] credits: Option<String>,
    thresholds: String,
    recipients: String,
) -> Result<i64, AppError> {
    use super::spec::{BudgetInput, recipient_list, threshold_lines, validate};
    let caller = crate::auth::caller()?;
    let input = BudgetInput {
        name,
        scope_kind,
        scope_name,
        period,
        amount,
        metric,
        credits: credits.unwrap_or_default(),
        thresholds: threshold_lines(&thresholds),
        recipients: recipient_list(&recipients),
    };
    let spec = validate(&input).map_err(AppError::InvalidFields)?;
    let saved = super::access::save(&crate::ctx::pool()?, &caller, id, &spec).await?;
    leptos_axum::redirect(&format!("/budgets/{saved}"));
    Ok(saved)
}

#[server(prefix = "/api", endpoint = "delete_budget")]
pub async fn delete_budget(id: i64) -> Result<(), AppError> {
    let caller = crate::auth::caller()?;
    super::access::delete(&crate::ctx::pool()?, &caller, id).await?;
    leptos_axum::redirect("/budgets");
    Ok(())
}

/// Puts a failed alert back in the queue and tries to send it now (admins).
#[server(prefix = "/api", endpoint = "retry_alert")]
pub async fn retry_alert(alert_id: i64) -> Result<(), AppError> {
    crate::auth::require_admin()?;
    if !crate::outbox::requeue(&crate::ctx::pool()?, alert_id).await? {
        return Err(AppError::NotFound("no failed alert with this id".into()));
    }
    // The background sender delivers it, not this request: a slow SMTP server must
    // not hold the admin's page, nor the rest of the queue ride on it.
    crate::outbox::sender()?.wake();
    Ok(())
}

#[server(prefix = "/api", endpoint = "aws_budgets")]
pub async fn list_aws_budgets() -> Result<Vec<AwsBudgetRow>, AppError> {
    crate::auth::caller()?;
    let aws = crate::aws::budgets::AwsBudgets::from_environment()
        .await
        .map_err(unavailable)?;
    super::aws_sync::summaries(&aws).await.map_err(unavailable)
}

/// Makes AWS Budgets match burnrate's budgets (admins); returns the summary line.
#[server(prefix = "/api", endpoint = "sync_budgets")]
pub async fn sync_aws_budgets() -> Result<String, AppError> {
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

/// AWS errors are the user's to act on (credentials, account, permissions), so they are shown.
#[cfg(feature = "ssr")]
fn unavailable(err: impl std::fmt::Display) -> AppError {
    tracing::warn!(error = %err, "AWS Budgets unavailable");
    AppError::invalid("aws", err.to_string())
}
