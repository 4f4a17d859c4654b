//! Server functions for `/approvals` and `/enforcement`. Everyone signed in reads; only
//! admins (finance) change approvals and policies and approve, retry or reverse actions.
// `save_policy` takes one argument per form field, as ActionForm posts them; the macro
// also generates a client stub with those arguments, which a function attribute cannot reach.
#![allow(clippy::too_many_arguments)]

use leptos::prelude::*;

use super::model::{ApprovalsData, EnforcementData};
use crate::error::AppError;

#[server(prefix = "/api", endpoint = "approvals")]
pub async fn list_approvals() -> Result<ApprovalsData, AppError> {
    let caller = crate::auth::caller()?;
    let pool = &crate::ctx::pool()?;
    let today = chrono::Utc::now().date_naive();
    let mut conn = pool.acquire().await?;
    Ok(ApprovalsData {
        current: super::approvals::current(&mut conn).await?,
        standing: super::standing::all(&mut conn, today, None).await?,
        history: super::approvals::history(&mut conn).await?,
        requests: super::requests::list(&mut conn, None).await?,
        today,
        is_admin: caller.is_admin(),
        may_request: caller.is_admin() || (caller.role == crate::auth::Role::Lead && !caller.team_ids.is_empty()),
    })
}

/// Adds an approval, or replaces the project's current one with a new version (admins). The
/// approver is the signed-in admin.
#[server(prefix = "/api", endpoint = "save_approval")]
pub async fn save_approval(project: String, reason: String, cap: String, expires: String) -> Result<(), AppError> {
    let caller = crate::auth::require_admin()?;
    let input = super::approvals::ApprovalInput {
        project,
        approver: caller.email.clone(),
        reason,
        cap,
        expires,
    };
    let approval = super::approvals::validate(&input).map_err(AppError::InvalidFields)?;
    let (pool, executor) = (crate::ctx::pool()?, super::executor::current()?);
    super::changes::save_approval(&pool, &executor, &caller, &approval).await
}

/// Asks for a project's approval: leads for their teams' projects, admins for any.
#[server(prefix = "/api", endpoint = "request_approval")]
pub async fn request_approval(project: String, cap: String, until: String, reason: String) -> Result<i64, AppError> {
    let caller = crate::auth::caller()?;
    let input = super::requests::RequestInput {
        project,
        cap,
        until,
        reason,
    };
    let today = chrono::Utc::now().date_naive();
    Ok(super::requests::create(&crate::ctx::pool()?, &caller, &input, today)
        .await?
        .id)
}

/// Approves (`decision` = approve, optionally with another cap or last day) or denies (with
/// a note) a waiting request (admins).
#[server(prefix = "/api", endpoint = "decide_approval_request")]
pub async fn decide_approval_request(
    id: i64,
    decision: String,
    #[server(default)] cap: Option<String>,
    #[server(default)] until: Option<String>,
    #[server(default)] note: Option<String>,
    #[server(default)] replace_newer: Option<String>,
) -> Result<(), AppError> {
    let caller = crate::auth::require_admin()?;
    let cap = match cap.as_deref().map(str::trim).filter(|c| !c.is_empty()) {
        None => None,
        Some(text) => Some(crate::format::amount::parse_amount(text).map_err(|m| AppError::invalid("cap", m))?),
    };
    let until = match until.as_deref().map(str::trim).filter(|u| !u.is_empty()) {
        None => None,
        Some(text) => Some(
            chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
                .map_err(|_| AppError::invalid("until", "expected a date YYYY-MM-DD"))?,
        ),
    };
    let decision = super::requests::Decision::parse(&decision, cap, until, note.as_deref())?
        .replacing_newer(replace_newer.is_some_and(|v| matches!(v.trim(), "on" | "true" | "1")));
    let (pool, executor) = (crate::ctx::pool()?, super::executor::current()?);
    let today = chrono::Utc::now().date_naive();
    super::requests::decide(&pool, &executor, &caller, id, &decision, today).await?;
    Ok(())
}

#[server(prefix = "/api", endpoint = "revoke_approval")]
pub async fn revoke_approval(project: String) -> Result<(), AppError> {
    let caller = crate::auth::require_admin()?;
    let (pool, executor) = (crate::ctx::pool()?, super::executor::current()?);
    super::changes::revoke_approval(&pool, &executor, &caller, &project).await
}

#[server(prefix = "/api", endpoint = "enforcement")]
pub async fn get_enforcement() -> Result<EnforcementData, AppError> {
    let caller = crate::auth::caller()?;
    let pool = &crate::ctx::pool()?;
    let violations = super::store::recorded(pool, &caller, None).await?;
    let mut conn = pool.acquire().await?;
    Ok(EnforcementData {
        violations,
        policies: super::policy::all(&mut conn).await?,
        trail: super::trail::recent(&mut conn, 200).await?,
        teams: super::store::team_names(&mut conn).await?,
        is_admin: caller.is_admin(),
        unjustified: super::reconcile::unjustified(pool, chrono::Utc::now().date_naive()).await?,
    })
}

/// `approve`, `retry` or `reverse` one action (admins).
#[server(prefix = "/api", endpoint = "enforcement_action")]
pub async fn act_on_action(id: i64, step: String) -> Result<String, AppError> {
    let caller = crate::auth::require_admin()?;
    let (pool, executor) = (crate::ctx::pool()?, super::executor::current()?);
    super::changes::act(&pool, &executor, &caller, id, &step).await
}

/// Snoozes a pending or executed stop for 1 to 72 hours (admins, and leads of the project's
/// team); an executed one is reversed until the snooze ends.
#[server(prefix = "/api", endpoint = "snooze_stop")]
pub async fn snooze_stop(id: i64, hours: String, reason: String) -> Result<String, AppError> {
    let caller = crate::auth::caller()?;
    let snooze = super::snooze::validate(&hours, &reason).map_err(AppError::InvalidFields)?;
    let (pool, executor) = (crate::ctx::pool()?, super::executor::current()?);
    super::changes::snooze(&pool, &executor, &caller, id, &snooze).await
}

/// Saves the org default (empty team) or a team's override (admins). The actions come as
/// one checkbox each.
#[server(prefix = "/api", endpoint = "save_policy")]
pub async fn save_policy(
    team: String,
    limit: String,
    period: String,
    metric: Option<String>,
    mode: String,
    notify: Option<String>,
    flag: Option<String>,
    stop: Option<String>,
    stop_type: Option<String>,
    execution_role_arn: Option<String>,
    iam_policy_arn: Option<String>,
    iam_roles: Option<String>,
    instance_ids: Option<String>,
    instance_region: Option<String>,
    stop_ec2: Option<String>,
    stop_notebooks: Option<String>,
    stop_training_jobs: Option<String>,
    stop_processing_jobs: Option<String>,
    stop_endpoints: Option<String>,
    stop_regions: Option<String>,
    stop_account: Option<String>,
    stop_managed_by_tags: Option<String>,
    stop_instance_store: Option<String>,
) -> Result<(), AppError> {
    let caller = crate::auth::require_admin()?;
    // The form offers both ways of stopping; the chosen one's fields count.
    let on_resources = stop_type.as_deref().is_none_or(|t| t.trim().is_empty());
    let stop_resources = [
        ("ec2", stop_ec2),
        ("notebooks", stop_notebooks),
        ("training_jobs", stop_training_jobs),
        ("processing_jobs", stop_processing_jobs),
        ("endpoints", stop_endpoints),
    ]
    .into_iter()
    .filter(|(_, on)| on_resources && on.is_some())
    .map(|(kind, _)| kind.to_string())
    .collect();
    let actions = [("notify", notify), ("flag", flag), ("stop", stop)]
        .into_iter()
        .filter(|(_, on)| on.is_some())
        .map(|(name, _)| name.to_string())
        .collect();
    let input = super::policy::PolicyInput {
        team,
        limit,
        period,
        metric: metric.unwrap_or_default(),
        actions,
        mode,
        stop_type: stop_type.unwrap_or_default(),
        execution_role_arn: execution_role_arn.unwrap_or_default(),
        iam_policy_arn: iam_policy_arn.unwrap_or_default(),
        iam_roles: iam_roles.unwrap_or_default(),
        instance_ids: instance_ids.unwrap_or_default(),
        instance_region: instance_region.unwrap_or_default(),
        stop_resources,
        stop_regions: stop_regions.filter(|_| on_resources).unwrap_or_default(),
        stop_account: stop_account.filter(|_| on_resources).unwrap_or_default(),
        stop_managed_by_tags: stop_managed_by_tags.filter(|_| on_resources).unwrap_or_default(),
        stop_instance_store: stop_instance_store.filter(|_| on_resources).unwrap_or_default(),
    };
    let policy = super::policy::validate(&input).map_err(AppError::InvalidFields)?;
    let (pool, executor) = (crate::ctx::pool()?, super::executor::current()?);
    super::changes::save_policy(&pool, &executor, &caller, &policy).await
}

/// Removes a team's override; the org default governs the team again (admins).
#[server(prefix = "/api", endpoint = "remove_policy")]
pub async fn remove_policy(team: String) -> Result<(), AppError> {
    let caller = crate::auth::require_admin()?;
    let (pool, executor) = (crate::ctx::pool()?, super::executor::current()?);
    super::changes::remove_policy(&pool, &executor, &caller, &team).await
}
