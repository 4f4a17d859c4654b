//! GPU savings server functions: the Savings page, decisions on recommendations, the
//! "savings available" figures, what each project runs, and the what-if calculator.

use leptos::prelude::*;

use super::model::{ProjectWorkload, SavingsAvailable, SavingsData, SavingsReport, WhatIf};
use crate::error::AppError;

#[cfg(feature = "ssr")]
async fn insights() -> Result<std::sync::Arc<super::insights::Insights>, AppError> {
    let pool = crate::ctx::pool()?;
    let config = crate::ctx::config()?;
    let cache = crate::ctx::page_data()?;
    Ok(super::service::cached_insights(&pool, &cache, &config, chrono::Utc::now()).await?)
}

/// Recommendations ranked by monthly saving, the ledger and utilisation; every signed-in
/// role reads them.
#[server(prefix = "/api", endpoint = "savings")]
pub async fn get_savings(
    team: Option<String>,
    kind: Option<String>,
    account: Option<String>,
) -> Result<SavingsData, AppError> {
    let caller = crate::auth::caller()?;
    let kind = super::model::Kind::filter(kind.as_deref()).map_err(|m| AppError::invalid("kind", m))?;
    let account =
        crate::period::AwsAccountId::parse_filter(account.as_deref()).map_err(|m| AppError::invalid("account", m))?;
    let team = team.filter(|t| !t.is_empty());
    let pool = crate::ctx::pool()?;
    let cache = crate::ctx::page_data()?;
    let config = crate::ctx::config()?;
    let latest = super::service::latest_insights(&pool, &cache, &config, chrono::Utc::now()).await?;
    let insights = latest.value;
    let filters = super::service::Filters {
        team: team.as_deref(),
        kind,
        account: super::service::account_usage(&pool, &cache, &insights, account.as_ref()).await?,
    };
    let hours = config.savings.idle_alert_hours;
    let mut page = super::service::page(&pool, &cache, &insights, &caller, &filters, hours).await?;
    page.computed_at = Some(latest.computed_at);
    page.refreshing = !latest.current;
    Ok(page)
}

/// The monthly savings report (`month`: `2026-11`, default this month); every signed-in
/// role reads it, as it reads the Savings page.
#[server(prefix = "/api", endpoint = "savings/report")]
pub async fn get_savings_report(month: Option<String>) -> Result<SavingsReport, AppError> {
    crate::auth::caller()?;
    let today = chrono::Utc::now().date_naive();
    let month = super::service::report_month(month.as_deref(), today).map_err(|m| AppError::invalid("month", m))?;
    let insights = insights().await?;
    Ok(super::report::compute(&crate::ctx::pool()?, &insights, month, today).await?)
}

/// Accepts or dismisses a recommendation (`decision`: accepted, dismissed, or open to take
/// a decision back), with a reason. Admins decide any; leads those of their teams.
#[server(prefix = "/api", endpoint = "savings/decide")]
pub async fn decide_savings(key: String, decision: String, reason: String) -> Result<(), AppError> {
    use super::model::Decision;
    let caller = crate::auth::caller()?;
    let decision = match decision.as_str() {
        "accepted" => Decision::Accepted,
        "dismissed" => Decision::Dismissed,
        "open" => Decision::Open,
        _ => return Err(AppError::invalid("decision", "expected accepted, dismissed or open")),
    };
    let reason = reason.trim();
    if reason.is_empty() || reason.chars().count() > 2000 {
        return Err(AppError::invalid("reason", "say why, in at most 2,000 characters"));
    }
    let insights = insights().await?;
    let today = chrono::Utc::now().date_naive();
    super::service::decide(
        &crate::ctx::pool()?,
        &insights,
        &caller,
        &key,
        (decision, reason),
        today,
    )
    .await?;
    Ok(())
}

/// Snoozes the idle alerts of one GPU or endpoint that is idle now, for 1 to 168 hours, with
/// a reason. Admins snooze any; leads those of their teams' projects.
#[server(prefix = "/api", endpoint = "savings/idle/snooze")]
pub async fn snooze_idle(resource: String, hours: String, reason: String) -> Result<(), AppError> {
    let caller = crate::auth::caller()?;
    let hours: u32 = hours
        .trim()
        .parse()
        .ok()
        .filter(|h| super::idle_alerts::SNOOZE_HOURS.contains(h))
        .ok_or_else(|| AppError::invalid("hours", "whole hours from 1 to 168"))?;
    let reason = reason.trim();
    if reason.is_empty() || reason.chars().count() > 2000 {
        return Err(AppError::invalid("reason", "say why, in at most 2,000 characters"));
    }
    let insights = insights().await?;
    super::service::snooze(&crate::ctx::pool()?, &insights, &caller, &resource, (hours, reason)).await?;
    Ok(())
}

/// Open opportunities and their monthly sum, for the organisation, a team or a project.
#[server(prefix = "/api", endpoint = "savings/available")]
pub async fn get_savings_available(
    team: Option<String>,
    project: Option<String>,
) -> Result<SavingsAvailable, AppError> {
    crate::auth::caller()?;
    let insights = insights().await?;
    let pool = crate::ctx::pool()?;
    Ok(super::service::available(&pool, &insights, team.as_deref(), project.as_deref()).await?)
}

/// What a project declares it runs, and what the caller may do: declare (admins), confirm an
/// inferred workload (admins, the team's leads).
#[server(prefix = "/api", endpoint = "project/workload")]
pub async fn get_project_facts(project: String) -> Result<ProjectWorkload, AppError> {
    let caller = crate::auth::caller()?;
    Ok(super::service::project_workload(&crate::ctx::pool()?, &caller, &project).await?)
}

/// What a project's bill suggests it runs, when it declares nothing. Asked after the Project
/// page has hydrated: it needs the recommendations, which take a second to compute at 10M
/// facts after a data change (docs/PERFORMANCE.md), and the page's costs should not wait.
#[server(prefix = "/api", endpoint = "project/workload/inferred")]
pub async fn get_inferred_workload(project: String) -> Result<Option<super::model::Inferred>, AppError> {
    crate::auth::caller()?;
    Ok(insights().await?.inferred.get(&project).cloned())
}

/// Declares a project's workload and model (admins). An empty `params_b` and `precision`
/// declare no model.
#[server(prefix = "/api", endpoint = "project/workload/save")]
pub async fn save_project_facts(
    project: String,
    workload: String,
    params_b: String,
    precision: String,
) -> Result<bool, AppError> {
    use super::model::{Model, Precision, Workload};
    let caller = crate::auth::require_admin()?;
    if project.is_empty() || project.contains('\0') {
        return Err(AppError::invalid("project", "name a project"));
    }
    let workload = Workload::parse(&workload)
        .ok_or_else(|| AppError::invalid("workload", "expected training, batch, serving, dev or unknown"))?;
    let model = match (params_b.trim(), precision.trim()) {
        ("", "") => None,
        (params, precision) => {
            let params_b = params
                .parse::<rust_decimal::Decimal>()
                .ok()
                .filter(|p| *p > rust_decimal::Decimal::ZERO && *p <= rust_decimal::Decimal::from(100_000))
                .ok_or_else(|| AppError::invalid("params_b", "billions of parameters, e.g. 7 or 0.5"))?;
            let precision = Precision::parse(precision)
                .ok_or_else(|| AppError::invalid("precision", "expected fp32, bf16, fp16, int8 or int4"))?;
            Some(Model { params_b, precision })
        }
    };
    let facts = super::model::ProjectFacts { workload, model };
    let pool = crate::ctx::pool()?;
    let changed = super::service::save_project_facts(&pool, &caller, &project, facts).await?;
    // The page reloads the recommendations next: let it show what this changed.
    let (cache, config) = (crate::ctx::page_data()?, crate::ctx::config()?);
    super::service::settle_insights(&pool, &cache, &config).await?;
    Ok(changed)
}

/// Confirms or corrects the workload a project's bill suggests, in one click: it becomes the
/// declared workload (audited), and the recommendations resting on it count in the totals.
/// Admins confirm any project; leads those of their teams.
#[server(prefix = "/api", endpoint = "project/workload/confirm")]
pub async fn confirm_workload(project: String, workload: String) -> Result<bool, AppError> {
    use super::model::Workload;
    let caller = crate::auth::caller()?;
    if project.is_empty() || project.contains('\0') {
        return Err(AppError::invalid("project", "name a project"));
    }
    let workload = Workload::parse(&workload)
        .filter(|w| *w != Workload::Unknown)
        .ok_or_else(|| AppError::invalid("workload", "expected training, batch, serving or dev"))?;
    let pool = crate::ctx::pool()?;
    let confirmed = super::service::confirm_workload(&pool, &caller, &project, workload).await?;
    // The page reloads the recommendations next: let it show what this changed.
    let (cache, config) = (crate::ctx::page_data()?, crate::ctx::config()?);
    super::service::settle_insights(&pool, &cache, &config).await?;
    Ok(confirmed)
}

/// The what-if calculator, computed here so the page works without JavaScript too. Each
/// input is its own optional argument: a form left empty sends none of them.
#[server(prefix = "/api", endpoint = "what_if")]
pub async fn get_what_if(
    params_b: Option<String>,
    precision: Option<String>,
    workload: Option<String>,
    instances: Option<String>,
    hours_per_day: Option<String>,
    days: Option<String>,
    tokens_per_day: Option<String>,
) -> Result<WhatIf, AppError> {
    crate::auth::caller()?;
    let query = super::model::WhatIfQuery {
        params_b,
        precision,
        workload,
        instances,
        hours_per_day,
        days,
        tokens_per_day,
    };
    let insights = insights().await?;
    Ok(super::what_if::compute(query, &insights))
}
