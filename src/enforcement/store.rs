//! The Enforcement page's reads: recorded violations with their actions' states, and the
//! team names its policy form offers.

use chrono::NaiveDate;
use rust_decimal::Decimal;
use sqlx::PgPool;

use super::model::{ActionState, StopResource, ViolationRow};
use crate::format::UNASSIGNED_TEAM;

/// A violation as stored, before its actions are attached.
#[derive(sqlx::FromRow)]
struct Violation {
    id: i64,
    project: String,
    team: Option<String>,
    team_id: Option<i64>,
    period_start: NaiveDate,
    reason: String,
    spend: Decimal,
    spend_limit: Decimal,
    last_seen: String,
}

/// An action's state and the violation it belongs to.
#[derive(sqlx::FromRow)]
struct ActionOf {
    violation_id: i64,
    #[sqlx(flatten)]
    state: ActionState,
}

/// Every recorded violation of the last 13 months with its actions, newest period first, as
/// `caller` may act on them; only `only_team`'s projects' when given (the 1,000 newest).
pub async fn recorded(
    pool: &PgPool,
    caller: &crate::auth::Caller,
    only_team: Option<i64>,
) -> Result<Vec<ViolationRow>, sqlx::Error> {
    let violations: Vec<Violation> = sqlx::query_as(
        "select v.id, v.project, t.name as team, t.id as team_id, v.period_start, v.reason, v.spend, v.spend_limit,
                to_char(v.last_seen_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI \"UTC\"') as last_seen
         from violations v left join projects p on p.name = v.project left join teams t on t.id = p.team_id
         where v.period_start >= current_date - 400 and ($1::bigint is null or t.id = $1)
         order by v.period_start desc, v.spend desc, v.project limit 1000",
    )
    .bind(only_team)
    .fetch_all(pool)
    .await?;
    let ids: Vec<i64> = violations.iter().map(|v| v.id).collect();
    let actions: Vec<ActionOf> = sqlx::query_as(
        "select violation_id, id, action, mode, status, last_message,
                to_char(snoozed_until at time zone 'UTC', 'YYYY-MM-DD HH24:MI \"UTC\"') as snoozed_until, snoozed_by,
                snooze_reason
         from enforcement_actions where violation_id = any($1) order by id",
    )
    .bind(&ids)
    .fetch_all(pool)
    .await?;
    let stop_ids: Vec<i64> = actions
        .iter()
        .filter(|a| a.state.action == "stop")
        .map(|a| a.state.id)
        .collect();
    let resources = super::resources::store::of_actions(&mut *pool.acquire().await?, &stop_ids).await?;
    let now = chrono::Utc::now();
    let resources_of = |action_id: i64| -> Vec<StopResource> {
        resources
            .iter()
            .filter(|r| r.action_id == action_id)
            .map(|r| StopResource {
                account: r.account_id.clone(),
                region: r.region.clone(),
                kind: r.kind.clone(),
                resource_id: r.resource_id.clone(),
                instance_type: r.instance_type.clone(),
                gpus: r.gpus,
                usd_per_hour: r.usd_per_hour,
                age_hours: r.launched_at.map(|at| (now - at).num_hours()),
                user: r.user_tag.clone(),
                status: r.status.clone(),
                note: r.note.clone(),
            })
            .collect()
    };
    let approved: Vec<String> =
        sqlx::query_scalar("select project from approvals where ended_at is null and expires >= current_date")
            .fetch_all(pool)
            .await?;
    Ok(violations
        .into_iter()
        .map(|v| ViolationRow {
            actions: actions
                .iter()
                .filter(|a| a.violation_id == v.id)
                .map(|a| ActionState {
                    resources: resources_of(a.state.id),
                    ..a.state.clone()
                })
                .collect(),
            approved_now: approved.contains(&v.project),
            can_snooze: caller.is_admin() || v.team_id.is_some_and(|team| caller.can_edit_team(team)),
            project: v.project,
            team: v.team.unwrap_or_else(|| UNASSIGNED_TEAM.to_string()),
            period_start: v.period_start,
            reason: v.reason,
            spend: v.spend,
            limit: v.spend_limit,
            last_seen: v.last_seen,
        })
        .collect())
}

/// Every team's name, for the policy form's team choice.
pub async fn team_names(conn: &mut sqlx::PgConnection) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar("select name from teams order by name")
        .fetch_all(conn)
        .await
}
