//! `GET /api/v1/approvals`: each current approval with its project's spend against the cap in
//! the governing policy's current period, and the days left before it expires.

use axum::Extension;
use axum::Json;
use axum::extract::State;
use chrono::NaiveDate;
use rust_decimal::Decimal;
use serde::Serialize;
use sqlx::PgPool;

use super::{ApiCaller, Problem};
use crate::enforcement::{approvals, judge, policy};
use crate::period::BudgetPeriod;

#[derive(Debug, Serialize)]
pub struct ApprovalNow {
    pub project: String,
    /// The team that owns the project, if any.
    pub team: Option<String>,
    pub approver: String,
    pub reason: String,
    pub cap: Decimal,
    /// The last day (UTC) it counts.
    pub expires: NaiveDate,
    /// Days from today to `expires`, counting that day; 0 or less once it has expired.
    pub days_left: i64,
    /// The project's spend in the governing policy's current period, in its metric.
    pub spend: Decimal,
    pub period_from: NaiveDate,
    pub period_to: NaiveDate,
    /// Spend as a share of the cap.
    pub used: Decimal,
}

pub async fn list(
    State(pool): State<PgPool>,
    Extension(api): Extension<ApiCaller>,
) -> Result<Json<Vec<ApprovalNow>>, Problem> {
    let today = chrono::Utc::now().date_naive();
    let mut conn = pool.acquire().await?;
    let mut out = Vec::new();
    for approval in approvals::current(&mut conn).await? {
        let owner: Option<(i64, String)> =
            sqlx::query_as("select t.id, t.name from projects p join teams t on t.id = p.team_id where p.name = $1")
                .bind(&approval.project)
                .fetch_optional(&mut *conn)
                .await?;
        if api.only_team.is_some() && owner.as_ref().map(|o| o.0) != api.only_team {
            continue;
        }
        let team = owner.map(|o| o.1);
        let Some(governing) = policy::for_team(&mut conn, team.as_deref()).await? else {
            continue;
        };
        let period = BudgetPeriod::parse(&governing.period)
            .unwrap_or(BudgetPeriod::Monthly)
            .containing(today);
        let spend = judge::project_spend(&mut conn, &approval.project, period, governing.metric).await?;
        let used = if approval.cap > Decimal::ZERO {
            spend / approval.cap
        } else {
            Decimal::ZERO
        };
        out.push(ApprovalNow {
            days_left: (approval.expires - today).num_days() + 1,
            project: approval.project,
            team,
            approver: approval.approver,
            reason: approval.reason,
            cap: approval.cap,
            expires: approval.expires,
            spend,
            period_from: period.from,
            period_to: period.to,
            used,
        });
    }
    Ok(Json(out))
}
