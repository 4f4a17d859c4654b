//! Server functions for the Budgets pages. Anyone signed in reads; admins edit every budget,
//! leads only budgets whose scope is one of their teams or a project of one of them.

// `save_budget` takes one argument per form field, as ActionForm posts them; the macro's
// generated client stub cannot carry a per-function allow.
#![allow(clippy::too_many_arguments)]

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use super::{AlertRecord, BudgetStatus};
use crate::error::AppError;

/// A budget on the list, and whether the caller may change it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetLine {
    pub status: BudgetStatus,
    pub can_edit: bool,
}

/// The list page, with what the caller may create.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetList {
    pub budgets: Vec<BudgetLine>,
    pub choices: ScopeChoices,
    /// Admins may push budgets to AWS.
    pub can_sync: bool,
}

/// Scopes the caller may budget: every team for admins, their own teams for leads.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScopeChoices {
    pub org: bool,
    pub teams: Vec<String>,
    pub projects: Vec<String>,
}

impl ScopeChoices {
    pub fn any(&self) -> bool {
        self.org || !self.teams.is_empty() || !self.projects.is_empty()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetDetail {
    pub line: BudgetLine,
    pub choices: ScopeChoices,
    pub burn_svg: crate::codec::Svg,
    pub alerts: Vec<(i64, AlertRecord)>,
    /// Recipients beyond AWS's 10 email subscribers per notification get only burnrate's email.
    pub recipients: Vec<String>,
    pub is_admin: bool,
}

#[server(prefix = "/api", endpoint = "budgets")]
pub async fn list_budgets() -> Result<BudgetList, AppError> {
    crate::error::with_status(
        async {
            let caller = crate::auth::caller()?;
            let pool = &crate::ctx::pool()?;
            let mut conn = pool.acquire().await?;
            let today = chrono::Utc::now().date_naive();
            let mut budgets = Vec::new();
            for budget in super::store::list(&mut conn).await? {
                let can_edit = server::may_edit(&mut conn, &caller, &budget.spec.scope).await?;
                let (status, _) = super::evaluate::status(&mut conn, &budget, today).await?;
                budgets.push(BudgetLine { status, can_edit });
            }
            let choices = server::choices(&mut conn, &caller).await?;
            Ok(BudgetList {
                budgets,
                choices,
                can_sync: caller.is_admin(),
            })
        }
        .await,
    )
}

#[server(prefix = "/api", endpoint = "budget")]
pub async fn get_budget(id: i64) -> Result<BudgetDetail, AppError> {
    crate::error::with_status(
        async {
            let caller = crate::auth::caller()?;
            let pool = &crate::ctx::pool()?;
            let mut conn = pool.acquire().await?;
            let budget = super::store::get(&mut conn, id)
                .await?
                .ok_or_else(|| AppError::NotFound("no such budget".into()))?;
            let today = chrono::Utc::now().date_naive();
            let can_edit = server::may_edit(&mut conn, &caller, &budget.spec.scope).await?;
            let (status, daily) = super::evaluate::status(&mut conn, &budget, today).await?;
            let estimated = crate::costs::queries::estimated_days(&mut *conn, status.period).await?;
            let burn_svg = server::burn_chart(&status, &daily, &estimated);
            let recipients = super::evaluate::recipients(&mut conn, &budget).await?;
            let alerts = server::alerts(&mut conn, id).await?;
            let choices = server::choices(&mut conn, &caller).await?;
            Ok(BudgetDetail {
                line: BudgetLine { status, can_edit },
                choices,
                burn_svg: crate::codec::Svg(burn_svg),
                alerts,
                recipients,
                is_admin: caller.is_admin(),
            })
        }
        .await,
    )
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
    thresholds: String,
    recipients: String,
) -> Result<i64, AppError> {
    use super::spec::{BudgetInput, recipient_list, threshold_lines, validate};
    use sqlx::Acquire;
    crate::error::with_status(
        async {
            let caller = crate::auth::caller()?;
            let input = BudgetInput {
                name,
                scope_kind,
                scope_name,
                period,
                amount,
                metric,
                thresholds: threshold_lines(&thresholds),
                recipients: recipient_list(&recipients),
            };
            let spec = validate(&input).map_err(AppError::InvalidFields)?;
            let pool = &crate::ctx::pool()?;
            let mut conn = pool.acquire().await?;
            let mut tx = conn.begin().await?;
            if let Some(id) = id {
                let existing = super::store::get(&mut tx, id)
                    .await?
                    .ok_or_else(|| AppError::NotFound("no such budget".into()))?;
                server::require_edit(&mut tx, &caller, &existing.spec.scope).await?;
            }
            server::require_edit(&mut tx, &caller, &spec.scope).await?;
            let saved = super::store::save(&mut tx, &(&caller).into(), id, &spec).await?;
            tx.commit().await?;
            leptos_axum::redirect(&format!("/budgets/{saved}"));
            Ok(saved)
        }
        .await,
    )
}

#[server(prefix = "/api", endpoint = "delete_budget")]
pub async fn delete_budget(id: i64) -> Result<(), AppError> {
    use sqlx::Acquire;
    crate::error::with_status(
        async {
            let caller = crate::auth::caller()?;
            let pool = &crate::ctx::pool()?;
            let mut conn = pool.acquire().await?;
            let mut tx = conn.begin().await?;
            let existing = super::store::get(&mut tx, id)
                .await?
                .ok_or_else(|| AppError::NotFound("no such budget".into()))?;
            server::require_edit(&mut tx, &caller, &existing.spec.scope).await?;
            super::store::delete(&mut tx, &(&caller).into(), id).await?;
            tx.commit().await?;
            leptos_axum::redirect("/budgets");
            Ok(())
        }
        .await,
    )
}

/// Puts a failed alert back in the queue and tries to send it now (admins).
#[server(prefix = "/api", endpoint = "retry_alert")]
pub async fn retry_alert(alert_id: i64) -> Result<(), AppError> {
    crate::error::with_status(
        async {
            crate::auth::require_admin()?;
            if !super::outbox::requeue(&crate::ctx::pool()?, alert_id).await? {
                return Err(AppError::NotFound("no failed alert with this id".into()));
            }
            // The background sender delivers it, not this request: a slow SMTP server must
            // not hold the admin's page, nor the rest of the queue ride on it.
            crate::ctx::get::<super::outbox::AlertSender>()?.wake();
            Ok(())
        }
        .await,
    )
}

#[cfg(feature = "ssr")]
mod server {
    use chrono::NaiveDate;
    use rust_decimal::Decimal;
    use sqlx::PgConnection;

    use super::super::{AlertRecord, BudgetScope, BudgetStatus, Threshold, ThresholdKind, store};
    use super::ScopeChoices;
    use crate::auth::Caller;
    use crate::error::AppError;

    pub async fn may_edit(conn: &mut PgConnection, caller: &Caller, scope: &BudgetScope) -> Result<bool, sqlx::Error> {
        if caller.is_admin() {
            return Ok(true);
        }
        Ok(match store::owning_team(conn, scope).await? {
            Some(team_id) => caller.can_edit_team(team_id),
            None => false,
        })
    }

    pub async fn require_edit(conn: &mut PgConnection, caller: &Caller, scope: &BudgetScope) -> Result<(), AppError> {
        if may_edit(conn, caller, scope).await? {
            Ok(())
        } else if caller.is_admin() || caller.role == crate::auth::Role::Lead {
            Err(AppError::Forbidden(format!(
                "leads may change budgets of their own teams and their projects only, not {}",
                scope.label()
            )))
        } else {
            Err(AppError::Forbidden("viewers cannot change budgets".into()))
        }
    }

    pub async fn choices(conn: &mut PgConnection, caller: &Caller) -> Result<ScopeChoices, sqlx::Error> {
        let admin = caller.is_admin();
        let team_ids: Vec<i64> = if caller.role == crate::auth::Role::Lead {
            caller.team_ids.clone()
        } else {
            Vec::new()
        };
        if !admin && team_ids.is_empty() {
            return Ok(ScopeChoices::default());
        }
        let teams = sqlx::query_scalar("select name from teams where $1 or id = any($2) order by name")
            .bind(admin)
            .bind(&team_ids)
            .fetch_all(&mut *conn)
            .await?;
        let projects =
            sqlx::query_scalar("select name from projects where $1 or team_id = any($2) order by name limit 5000")
                .bind(admin)
                .bind(&team_ids)
                .fetch_all(&mut *conn)
                .await?;
        Ok(ScopeChoices {
            org: admin,
            teams,
            projects,
        })
    }

    /// One alert as the history lists it.
    #[derive(sqlx::FromRow)]
    struct AlertRow {
        id: i64,
        period_start: NaiveDate,
        percent: Decimal,
        kind: String,
        spend: Decimal,
        status: String,
        attempts: i32,
        recipients: Vec<String>,
        deliveries: Vec<String>,
        last_reply: Option<String>,
        created_at: String,
        sent_at: Option<String>,
    }

    pub async fn alerts(conn: &mut PgConnection, budget_id: i64) -> Result<Vec<(i64, AlertRecord)>, sqlx::Error> {
        let rows: Vec<AlertRow> = sqlx::query_as(
            "select a.id, a.period_start, a.percent, a.kind, a.spend, a.status, a.attempts, a.recipients,
                    array(select d.recipient || ': ' || d.status || coalesce(' (' || d.last_reply || ')', '')
                          from alert_deliveries d where d.alert_id = a.id order by d.recipient) as deliveries,
                    a.last_reply,
                    to_char(a.created_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS \"UTC\"') as created_at,
                    to_char(a.sent_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS \"UTC\"') as sent_at
             from budget_alerts a where a.budget_id = $1 order by a.created_at desc, a.id desc limit 200",
        )
        .bind(budget_id)
        .fetch_all(conn)
        .await?;
        Ok(rows
            .into_iter()
            .map(|row| {
                let kind = ThresholdKind::parse(&row.kind).unwrap_or(ThresholdKind::Actual);
                (
                    row.id,
                    AlertRecord {
                        period_start: row.period_start,
                        threshold: Threshold {
                            kind,
                            percent: row.percent.normalize(),
                        },
                        spend: row.spend,
                        status: row.status,
                        attempts: row.attempts,
                        recipients: row.recipients,
                        deliveries: row.deliveries,
                        last_reply: row.last_reply,
                        created_at: row.created_at,
                        sent_at: row.sent_at,
                    },
                )
            })
            .collect())
    }

    /// Cumulative actual spend, the forecast to the period's end, the budget line and its
    /// thresholds.
    pub fn burn_chart(status: &BudgetStatus, daily: &[(NaiveDate, Decimal)], estimated: &[NaiveDate]) -> String {
        let spec = &status.budget.spec;
        let days: Vec<NaiveDate> = status
            .period
            .from
            .iter_days()
            .take_while(|d| *d < status.period.to)
            .collect();
        let mut running = Decimal::ZERO;
        let actual: Vec<(NaiveDate, Decimal)> = daily
            .iter()
            .map(|(d, v)| {
                running += *v;
                (*d, running)
            })
            .collect();
        let start = actual.last().copied().unwrap_or((status.period.from, Decimal::ZERO));
        let remaining: Vec<NaiveDate> = start.0.iter_days().take_while(|d| *d < status.period.to).collect();
        let steps = Decimal::from((remaining.len().max(2) - 1) as i64);
        let forecast: Vec<(NaiveDate, Decimal, Decimal, Decimal)> = remaining
            .iter()
            .enumerate()
            .map(|(n, d)| {
                let value = start.1 + (status.forecast - start.1) * Decimal::from(n as i64) / steps;
                (*d, value, value, value)
            })
            .collect();
        let thresholds: Vec<(String, Decimal)> = spec
            .thresholds
            .iter()
            .filter(|t| t.percent != Decimal::ONE_HUNDRED)
            .map(|t| (t.label(), t.trigger_amount(spec.amount)))
            .collect();
        let description = format!(
            "Cumulative {} spend for {} to {}: {} so far, {} forecast, against a budget of {}.",
            spec.metric.key(),
            status.period.from,
            status.period.last_day(),
            crate::format::usd(status.spend),
            crate::format::usd(status.forecast),
            crate::format::usd(spec.amount)
        );
        crate::charts::burn(
            &format!("{}: spend against budget", spec.name),
            &description,
            &crate::charts::Burn {
                days: &days,
                actual: &actual,
                estimated,
                forecast: &forecast,
                budget: Some(spec.amount),
                thresholds: &thresholds,
            },
        )
    }
}
