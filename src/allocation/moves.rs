//! A mapping change: which days and which owners' rollup rows it rewrites. Moving a project
//! or a user tag between teams changes the allocation only on the days the moved value has
//! spend, and the owned-spend rollup only of the project's old and new owners.

use chrono::NaiveDate;
use sqlx::PgConnection;

use super::rollups::Owners;
use super::store::{lock, refresh_all, refresh_every_day, refresh_runs, runs};
use crate::period::DateRange;

/// What a mapping change moved: the projects and user tags whose team changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Moved {
    pub projects: Vec<String>,
    pub users: Vec<String>,
    /// A team was deleted: its rows go with it, on any day.
    pub every_day: bool,
    /// A team was created: rules without a team list split among every team, so with such
    /// a rule every day changes.
    pub team_created: bool,
}

/// Contiguous runs of days rewritten one at a time; beyond this many, one span from the first
/// to the last is cheaper than the queries of each run.
const MAX_RUNS: usize = 64;

/// Rewrites the days a mapping change moved spend on: those on which a moved project or
/// user tag has spend. On any other day every team's own spend is unchanged, so proportional
/// shares are too, and the user-tag and service steps read only the moved values' rows.
/// Every day when a team was deleted, or created while a rule splits among every team.
/// Call it after the change, in its transaction.
pub async fn refresh_moved(conn: &mut PgConnection, moved: &Moved) -> Result<(), sqlx::Error> {
    // Before reading which days: an ingestion holding the lock may be adding some.
    lock(conn).await?;
    if moved.every_day {
        return refresh_all(conn).await;
    }
    let owners = owners_of(conn, moved).await?;
    if moved.team_created && splits_among_all(conn).await? {
        return refresh_every_day(conn, &owners).await;
    }
    // An empty list is a one-time filter, so its grain is not scanned at all.
    let days: Vec<NaiveDate> = sqlx::query_scalar(
        "select day from daily_project_costs where cardinality($1::text[]) > 0 and project = any($1)
         union
         select day from costs_by_user where cardinality($2::text[]) > 0 and user_name = any($2)
         order by 1",
    )
    .bind(&moved.projects)
    .bind(&moved.users)
    .fetch_all(&mut *conn)
    .await?;
    let mut runs = runs(&days);
    if runs.len() > MAX_RUNS
        && let (Some(first), Some(last)) = (runs.first().copied(), runs.last().copied())
    {
        runs = vec![DateRange {
            from: first.from,
            to: last.to,
        }];
    }
    refresh_runs(conn, &runs, &owners).await
}

/// The owners whose owned-spend rows a change rewrites: every one when a team was deleted;
/// else the teams that owned a moved project before the change (its rollup rows say so) and
/// those that own it now (`None` for no team). A user tag's move changes no owner's rows:
/// they follow the project's team. Takes the allocation's lock first, so an ingestion
/// cannot add rows of another owner between this read and the rewrite.
pub async fn owners_of(conn: &mut PgConnection, moved: &Moved) -> Result<Owners, sqlx::Error> {
    lock(conn).await?;
    if moved.every_day {
        return Ok(Owners::All);
    }
    if moved.projects.is_empty() {
        return Ok(Owners::NONE);
    }
    let teams: Vec<Option<i64>> = sqlx::query_scalar(
        "select team_id from owned_spend_spans where dimension = 'project' and span = 'day' and key = any($1)
         union
         select (select p.team_id from projects p where p.name = m.name) from unnest($1::text[]) as m(name)",
    )
    .bind(&moved.projects)
    .fetch_all(&mut *conn)
    .await?;
    Ok(Owners::Only(teams))
}

/// True when a shared-cost rule lists no teams, so it splits among every team there is.
async fn splits_among_all(conn: &mut PgConnection) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar(
        "select exists (select 1 from allocation_rules r
                        where not exists (select 1 from allocation_rule_teams t where t.rule_id = r.id))",
    )
    .fetch_one(conn)
    .await
}
