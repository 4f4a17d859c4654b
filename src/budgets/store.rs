//! Budgets in Postgres. Callers hold the transaction, so a form save and a whole YAML file
//! both commit all or nothing.

use std::collections::HashMap;

use chrono::NaiveDate;
use rust_decimal::Decimal;
use sqlx::PgConnection;

use super::{AlertRecord, Budget, BudgetScope, BudgetSpec, Escalation, Threshold, ThresholdKind};
use crate::audit_log::{Actor, record};
use crate::error::{AppError, FieldError};
use crate::period::BudgetPeriod;
use crate::period::{Credits, Metric};

/// A `budgets` row with its team's name.
#[derive(sqlx::FromRow)]
struct BudgetRow {
    id: i64,
    key: String,
    name: String,
    scope_kind: String,
    team: Option<String>,
    project: Option<String>,
    account_id: Option<String>,
    period: String,
    amount: Decimal,
    metric: String,
    credits: String,
    recipients: Vec<String>,
}

/// A threshold of one budget.
#[derive(sqlx::FromRow)]
struct ThresholdRow {
    budget_id: i64,
    percent: Decimal,
    kind: String,
    recipients: Vec<String>,
}

const SELECT_BUDGETS: &str =
    "select b.id, b.key, b.name, b.scope_kind, t.name as team, b.project, b.account_id, b.period, b.amount, b.metric, b.credits, b.recipients
     from budgets b left join teams t on t.id = b.team_id";

/// Every budget, by name.
pub async fn list(conn: &mut PgConnection) -> Result<Vec<Budget>, sqlx::Error> {
    let rows: Vec<BudgetRow> = sqlx::query_as(&format!("{SELECT_BUDGETS} order by b.name"))
        .fetch_all(&mut *conn)
        .await?;
    with_thresholds(conn, rows).await
}

pub async fn get(conn: &mut PgConnection, id: i64) -> Result<Option<Budget>, sqlx::Error> {
    let rows: Vec<BudgetRow> = sqlx::query_as(&format!("{SELECT_BUDGETS} where b.id = $1"))
        .bind(id)
        .fetch_all(&mut *conn)
        .await?;
    Ok(with_thresholds(conn, rows).await?.into_iter().next())
}

async fn with_thresholds(conn: &mut PgConnection, rows: Vec<BudgetRow>) -> Result<Vec<Budget>, sqlx::Error> {
    let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
    let thresholds: Vec<ThresholdRow> = sqlx::query_as(
        "select budget_id, percent, kind, recipients from budget_thresholds
         where budget_id = any($1) order by kind, percent",
    )
    .bind(&ids)
    .fetch_all(&mut *conn)
    .await?;
    let mut by_budget: HashMap<i64, Vec<Threshold>> = HashMap::new();
    let mut escalations: HashMap<i64, Vec<Escalation>> = HashMap::new();
    for row in thresholds {
        let kind = ThresholdKind::parse(&row.kind).unwrap_or(ThresholdKind::Actual);
        let threshold = Threshold {
            kind,
            percent: row.percent.normalize(),
        };
        by_budget.entry(row.budget_id).or_default().push(threshold);
        if !row.recipients.is_empty() {
            escalations.entry(row.budget_id).or_default().push(Escalation {
                threshold,
                recipients: row.recipients,
            });
        }
    }
    rows.into_iter()
        .map(|row| {
            let scope = match (row.scope_kind.as_str(), row.team, row.project) {
                ("team", Some(team), _) => BudgetScope::Team(team),
                ("project", _, Some(project)) => BudgetScope::Project(project),
                // The column admits 12 digits only, so the ID parses; a row that did not
                // would be a decode error, never a budget of another scope.
                ("account", _, _) => BudgetScope::Account(
                    crate::period::AwsAccountId::parse(row.account_id.as_deref().unwrap_or_default())
                        .map_err(|m| sqlx::Error::Decode(m.into()))?,
                ),
                _ => BudgetScope::Org,
            };
            let mut thresholds = by_budget.remove(&row.id).unwrap_or_default();
            thresholds.sort();
            let mut escalation = escalations.remove(&row.id).unwrap_or_default();
            escalation.sort_by_key(|e| e.threshold);
            Ok(Budget {
                id: row.id,
                spec: BudgetSpec {
                    key: Some(row.key),
                    name: row.name,
                    scope,
                    // The table's checks allow only these values.
                    period: BudgetPeriod::parse(&row.period).unwrap_or(BudgetPeriod::Monthly),
                    amount: row.amount,
                    metric: Metric::parse(Some(&row.metric)).unwrap_or_default(),
                    credits: Credits::parse(Some(&row.credits)).unwrap_or_default(),
                    thresholds,
                    recipients: row.recipients,
                    escalation,
                },
            })
        })
        .collect()
}

/// The team id and project a scope stores, or the scope field's error when it names
/// nothing known.
pub async fn resolve_scope(
    conn: &mut PgConnection,
    scope: &BudgetScope,
) -> Result<Result<(Option<i64>, Option<String>), FieldError>, sqlx::Error> {
    Ok(match scope {
        BudgetScope::Org | BudgetScope::Account(_) => Ok((None, None)),
        BudgetScope::Team(team) => sqlx::query_scalar("select id from teams where name = $1")
            .bind(team)
            .fetch_optional(&mut *conn)
            .await?
            .map(|id| (Some(id), None))
            .ok_or_else(|| FieldError::new("scope", format!("there is no team named {team:?}"))),
        BudgetScope::Project(project) => {
            let known: bool = sqlx::query_scalar("select exists (select 1 from projects where name = $1)")
                .bind(project)
                .fetch_one(&mut *conn)
                .await?;
            if known {
                Ok((None, Some(project.clone())))
            } else {
                Err(FieldError::new(
                    "scope",
                    format!(
                        "there is no project named {:?} in the cost data or the team mappings",
                        crate::format::tag_label(project)
                    ),
                ))
            }
        }
    })
}

/// The team whose owners may edit budgets with this scope: the team itself, or the
/// project's team. `None` for the org and for unmapped projects (admins only).
pub async fn owning_team(conn: &mut PgConnection, scope: &BudgetScope) -> Result<Option<i64>, sqlx::Error> {
    match scope {
        BudgetScope::Org | BudgetScope::Account(_) => Ok(None),
        BudgetScope::Team(team) => {
            sqlx::query_scalar("select id from teams where name = $1")
                .bind(team)
                .fetch_optional(conn)
                .await
        }
        BudgetScope::Project(project) => Ok(sqlx::query_scalar::<_, Option<i64>>(
            "select team_id from projects where name = $1",
        )
        .bind(project)
        .fetch_optional(conn)
        .await?
        .flatten()),
    }
}

/// Creates (`id` `None`) or replaces a budget; returns its id. Audited.
pub async fn save(conn: &mut PgConnection, actor: &Actor, id: Option<i64>, spec: &BudgetSpec) -> Result<i64, AppError> {
    let (team_id, project) = resolve_scope(conn, &spec.scope)
        .await?
        .map_err(|e| AppError::InvalidFields(vec![e]))?;
    let clash: Option<i64> =
        sqlx::query_scalar("select id from budgets where lower(name) = lower($1) and id is distinct from $2")
            .bind(&spec.name)
            .bind(id)
            .fetch_optional(&mut *conn)
            .await?;
    if clash.is_some() {
        return Err(AppError::InvalidFields(vec![FieldError::new(
            "name",
            format!("another budget is already named {:?}", spec.name),
        )]));
    }
    // A new budget without a key takes its name as key; an earlier budget renamed since may
    // still hold that key.
    let key = spec.key.clone().or_else(|| id.is_none().then(|| spec.name.clone()));
    if let Some(key) = &key {
        let taken: Option<String> =
            sqlx::query_scalar("select name from budgets where lower(key) = lower($1) and id is distinct from $2")
                .bind(key)
                .bind(id)
                .fetch_optional(&mut *conn)
                .await?;
        if let Some(holder) = taken {
            return Err(AppError::InvalidFields(vec![FieldError::new(
                "name",
                format!(
                    "the budget {holder:?} already has the key {key:?} (it was once named so); choose another name or key"
                ),
            )]));
        }
    }
    let query = match id {
        None => sqlx::query_scalar(
            "insert into budgets (key, name, scope_kind, team_id, project, period, amount, metric, recipients, credits,
                                  account_id)
             values (coalesce($10, $2), $2, $3, $4, $5, $6, $7, $8, $9, $11, $12) returning id",
        ),
        Some(_) => sqlx::query_scalar(
            "update budgets set name = $2, scope_kind = $3, team_id = $4, project = $5, period = $6,
                    amount = $7, metric = $8, recipients = $9, key = coalesce($10, key), credits = $11,
                    account_id = $12, updated_at = now()
             where id = $1 returning id",
        ),
    };
    let saved: Option<i64> = query
        .bind(id)
        .bind(&spec.name)
        .bind(spec.scope.kind())
        .bind(team_id)
        .bind(project)
        .bind(spec.period.key())
        .bind(spec.amount)
        .bind(spec.metric.key())
        .bind(&spec.recipients)
        .bind(&key)
        .bind(spec.credits.key())
        .bind(match &spec.scope {
            BudgetScope::Account(id) => Some(id.as_str()),
            _ => None,
        })
        .fetch_optional(&mut *conn)
        .await?;
    let saved = saved.ok_or_else(|| AppError::NotFound("no such budget".into()))?;
    sqlx::query("delete from budget_thresholds where budget_id = $1")
        .bind(saved)
        .execute(&mut *conn)
        .await?;
    for threshold in &spec.thresholds {
        sqlx::query("insert into budget_thresholds (budget_id, percent, kind, recipients) values ($1, $2, $3, $4)")
            .bind(saved)
            .bind(threshold.percent)
            .bind(threshold.kind.key())
            .bind(spec.escalation_for(*threshold))
            .execute(&mut *conn)
            .await?;
    }
    let action = if id.is_some() { "budget.update" } else { "budget.create" };
    record(conn, actor, action, &spec.name, audit_details(saved, spec)).await?;
    Ok(saved)
}

pub async fn delete(conn: &mut PgConnection, actor: &Actor, id: i64) -> Result<(), AppError> {
    let name: Option<String> = sqlx::query_scalar("delete from budgets where id = $1 returning name")
        .bind(id)
        .fetch_optional(&mut *conn)
        .await?;
    let name = name.ok_or_else(|| AppError::NotFound("no such budget".into()))?;
    record(conn, actor, "budget.delete", &name, serde_json::json!({ "id": id })).await?;
    Ok(())
}

fn audit_details(id: i64, spec: &BudgetSpec) -> serde_json::Value {
    serde_json::json!({
        "id": id,
        "scope": spec.scope.kind(),
        "scope_name": spec.scope.name(),
        "period": spec.period.key(),
        "amount": spec.amount.to_string(),
        "metric": spec.metric.key(),
        "credits": spec.credits.key(),
        "thresholds": spec.thresholds.iter().map(|t| spec.threshold_line(*t)).collect::<Vec<_>>(),
        "recipients": spec.recipients,
    })
}

/// Names of budgets scoped to a team, so deleting the team can say what holds it.
pub async fn names_for_team(conn: &mut PgConnection, team: &str) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar(
        "select b.name from budgets b join teams t on t.id = b.team_id where t.name = $1 order by b.name",
    )
    .bind(team)
    .fetch_all(conn)
    .await
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
