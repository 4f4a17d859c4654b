//! Which projects carry the enforcement flag: an executed, unreversed flag action.

/// Projects with an executed, unreversed flag: the badge stays until an admin reverses it.
pub async fn flagged_projects(conn: &mut sqlx::PgConnection) -> Result<Vec<String>, sqlx::Error> {
    flagged_in(conn, None, None).await
}

/// Flagged projects, narrowed to `team` (`Unassigned` for projects in no team) and/or to
/// one `project` when given.
pub async fn flagged_in(
    executor: impl sqlx::PgExecutor<'_>,
    team: Option<&str>,
    project: Option<&str>,
) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar(
        "select distinct v.project from enforcement_actions a join violations v on v.id = a.violation_id
         left join projects p on p.name = v.project left join teams t on t.id = p.team_id
         where a.action = 'flag' and a.status = 'executed'
           and ($1::text is null or coalesce(t.name, $2) = $1)
           and ($3::text is null or v.project = $3)
         order by 1",
    )
    .bind(team)
    .bind(crate::format::UNASSIGNED_TEAM)
    .bind(project)
    .fetch_all(executor)
    .await
}
