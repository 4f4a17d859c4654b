//! A mapping change: which days and which owners' page-rollup rows it rewrites. Moving a project
//! or a user tag between teams changes the allocation only on the days the moved value has
//! spend, and the owned-spend rollup only of the project's old and new owners.

use chrono::NaiveDate;
use sqlx::PgConnection;

use super::days::runs;
use super::rollups::Owners;
use super::store::{lock, refresh_every_day, refresh_runs};
use crate::period::DateRange;

/// What a mapping change moved: the projects and user tags whose team changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Moved {
    pub projects: Vec<String>,
    pub users: Vec<String>,
    /// AWS accounts whose team changed.
    pub accounts: Vec<String>,
    /// Deleted teams: their rows go with them, on the days they had any.
    pub deleted: DeletedTeams,
    /// A team was created: a rule without a team list splits among every team, so it may
    /// take a share (see [`days_a_new_team_shares`]).
    pub team_created: bool,
}

/// Teams about to be deleted, read before the delete takes their allocated rows with it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeletedTeams {
    pub ids: Vec<i64>,
    /// The days any of them has allocated rows on.
    pub days: Vec<NaiveDate>,
}

/// What deleting the teams `names` will move. Call it before deleting them, in the same
/// transaction.
pub async fn before_deleting(conn: &mut PgConnection, names: &[&str]) -> Result<DeletedTeams, sqlx::Error> {
    if names.is_empty() {
        return Ok(DeletedTeams::default());
    }
    // Before reading the days: an ingestion holding the lock may be adding some.
    lock(conn).await?;
    let ids: Vec<i64> = sqlx::query_scalar("select id from teams where name = any($1)")
        .bind(names)
        .fetch_all(&mut *conn)
        .await?;
    let days =
        sqlx::query_scalar("select distinct day from allocated_daily_costs where team_id = any($1) order by day")
            .bind(&ids)
            .fetch_all(&mut *conn)
            .await?;
    Ok(DeletedTeams { ids, days })
}

/// Contiguous runs of days rewritten one at a time; beyond this many, one span from the first
/// to the last is cheaper than the queries of each run.
const MAX_RUNS: usize = 64;

/// Rewrites the days a mapping change moved spend on, and no other:
/// - those on which a moved project, user tag or account has spend (on any other day every
///   team's own spend is unchanged, so proportional shares are too, and the user-tag,
///   account and service steps read only the moved values' rows);
/// - for a deleted team, the days it had any row (a shared part, say);
/// - for a created team, the days a rule splitting among every team gives it a share.
///
/// So creating or deleting an empty team, with no such rule, rewrites nothing. Call it
/// after the change, in its transaction. Returns how many days it rewrote.
pub async fn refresh_moved(conn: &mut PgConnection, moved: &Moved) -> Result<u64, sqlx::Error> {
    // Before reading which days: an ingestion holding the lock may be adding some.
    lock(conn).await?;
    let owners = owners_of(conn, moved).await?;
    // An empty list is a one-time filter, so its grain is not scanned at all.
    let mut days: Vec<NaiveDate> = sqlx::query_scalar(
        "select day from daily_project_costs where cardinality($1::text[]) > 0 and project = any($1)
         union
         select day from costs_by_user where cardinality($2::text[]) > 0 and user_name = any($2)
         union
         select day from daily_project_costs where cardinality($3::text[]) > 0 and account_id = any($3)",
    )
    .bind(&moved.projects)
    .bind(&moved.users)
    .bind(&moved.accounts)
    .fetch_all(&mut *conn)
    .await?;
    days.extend(&moved.deleted.days);
    if moved.team_created {
        match days_a_new_team_shares(conn).await? {
            NewTeamShares::EveryDay => return refresh_every_day(conn, &owners).await,
            NewTeamShares::Days(shared) => days.extend(shared),
        }
    }
    days.sort_unstable();
    days.dedup();
    let mut runs = runs(&days);
    if runs.len() > MAX_RUNS
        && let (Some(first), Some(last)) = (runs.first().copied(), runs.last().copied())
    {
        runs = vec![DateRange {
            from: first.from,
            to: last.to,
        }];
    }
    refresh_runs(conn, &runs, &owners).await?;
    Ok(runs.iter().map(|r| r.days().unsigned_abs()).sum())
}

/// The owners whose owned-spend rows a change rewrites: the teams that owned a moved
/// project before the change (its rollup rows say so), those that own it now (`None` for
/// no team), and deleted teams. A user tag's or an account's move changes no owner's rows: they follow the
/// project's team. Takes the allocation's lock first, so an ingestion cannot add rows of
/// another owner between this read and the rewrite.
pub async fn owners_of(conn: &mut PgConnection, moved: &Moved) -> Result<Owners, sqlx::Error> {
    lock(conn).await?;
    let mut teams: Vec<Option<i64>> = Vec::new();
    if !moved.projects.is_empty() {
        teams = sqlx::query_scalar(
            "select team_id from owned_spend_spans where dimension = 'project' and span = 'day' and key = any($1)
             union
             select (select p.team_id from projects p where p.name = m.name) from unnest($1::text[]) as m(name)",
        )
        .bind(&moved.projects)
        .fetch_all(&mut *conn)
        .await?;
    }
    // The page rollups keep a deleted team's rows (no foreign key) until rewritten.
    teams.extend(moved.deleted.ids.iter().copied().map(Some));
    Ok(Owners::Only(teams))
}

/// Where a new team, with no spend of its own yet, takes a share.
enum NewTeamShares {
    /// An even split among every team gives it a share of every day.
    EveryDay,
    /// A proportional split among every team gives it a share only on days no team has
    /// spend of its own (the split falls back to even); none without such a rule.
    Days(Vec<NaiveDate>),
}

async fn days_a_new_team_shares(conn: &mut PgConnection) -> Result<NewTeamShares, sqlx::Error> {
    let splits: Vec<String> = sqlx::query_scalar(
        "select distinct r.split from allocation_rules r
         where not exists (select 1 from allocation_rule_teams t where t.rule_id = r.id)",
    )
    .fetch_all(&mut *conn)
    .await?;
    if splits.iter().any(|s| s == "even") {
        return Ok(NewTeamShares::EveryDay);
    }
    if !splits.iter().any(|s| s == "proportional") {
        return Ok(NewTeamShares::Days(Vec::new()));
    }
    // A team's own spend is what steps 1 to 3 gave it; the split weighs positive totals.
    let days = sqlx::query_scalar(
        "select day from (
             select day, team_id, sum(unblended) filter (where source in ('direct', 'user', 'account')) as own
             from team_daily_costs group by day, team_id
         ) t
         group by day
         having not coalesce(bool_or(team_id is not null and own > 0), false)",
    )
    .fetch_all(conn)
    .await?;
    Ok(NewTeamShares::Days(days))
}
