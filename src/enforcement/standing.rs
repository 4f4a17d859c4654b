//! Where each current approval stands: its project's spend in the governing policy's current
//! period against the cap, and the days left. What the Approvals page, `/api/v1/approvals`
//! and the approval warnings read.

use sqlx::PgConnection;

/// Each current approval against its cap in the governing policy's current period, with the
/// days left; only the projects of `only_team` when given.
pub async fn all(
    conn: &mut PgConnection,
    today: chrono::NaiveDate,
    only_team: Option<i64>,
) -> Result<Vec<super::model::ApprovalStanding>, sqlx::Error> {
    let mut out = Vec::new();
    for approval in super::approvals::current(conn).await? {
        let owner: Option<(i64, String)> =
            sqlx::query_as("select t.id, t.name from projects p join teams t on t.id = p.team_id where p.name = $1")
                .bind(&approval.project)
                .fetch_optional(&mut *conn)
                .await?;
        if only_team.is_some() && owner.as_ref().map(|o| o.0) != only_team {
            continue;
        }
        let team = owner.map(|o| o.1);
        // No policy row at all (never seeded): judged as the built-in default would, monthly.
        let governing = super::policy::for_team(conn, team.as_deref()).await?;
        let period = governing
            .as_ref()
            .and_then(|g| crate::period::BudgetPeriod::parse(&g.period))
            .unwrap_or(crate::period::BudgetPeriod::Monthly)
            .containing(today);
        let metric = governing.map(|g| g.metric).unwrap_or_default();
        let spend = super::judge::project_spend(conn, &approval.project, period, metric).await?;
        out.push(super::model::ApprovalStanding {
            days_left: (approval.expires - today).num_days() + 1,
            used: if approval.cap > rust_decimal::Decimal::ZERO {
                spend / approval.cap
            } else {
                rust_decimal::Decimal::ZERO
            },
            project: approval.project,
            team,
            approver: approval.approver,
            reason: approval.reason,
            cap: approval.cap,
            expires: approval.expires,
            spend,
            period_from: period.from,
            period_to: period.to,
        });
    }
    Ok(out)
}
