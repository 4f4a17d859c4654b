//! The allocation in Postgres: each day's spend as `engine` allocates it, rewritten in the
//! caller's transaction wherever what it depends on changes: the daily totals (ingestion, the
//! demo, a catalogue update), project and user mappings, teams, and the shared-cost rules.

use std::collections::BTreeMap;

use chrono::NaiveDate;
use rust_decimal::Decimal;
use sqlx::PgConnection;

use super::days::{days_lacking, runs};
use super::engine::{Allocated, Amounts, ProjectDay, Rule, UserShare, allocate_day};
use super::rollups::Owners;
use crate::period::DateRange;

/// Rows written per statement.
const BATCH: usize = 20_000;

/// A fact row `x` of a project no team owns (or no project row names).
const UNOWNED: &str = "not exists (select 1 from projects o where o.name = x.project and o.team_id is not null)";

#[derive(sqlx::FromRow)]
struct TotalRow {
    day: NaiveDate,
    project: String,
    account_id: String,
    team_id: Option<i64>,
    account_team_id: Option<i64>,
    unblended: Decimal,
    amortized: Decimal,
    gpu_unblended: Decimal,
    gpu_amortized: Decimal,
    estimated: bool,
    credit_unblended: Decimal,
    credit_amortized: Decimal,
    refund_unblended: Decimal,
    refund_amortized: Decimal,
    tax_unblended: Decimal,
    tax_amortized: Decimal,
}

#[derive(sqlx::FromRow)]
struct ShareRow {
    day: NaiveDate,
    project: String,
    account_id: String,
    name: String,
    team_id: Option<i64>,
    unblended: Decimal,
    credit: Decimal,
    refund: Decimal,
    tax: Decimal,
    gpu_unblended: Option<Decimal>,
    gpu_amortized: Option<Decimal>,
}

/// Every day of `range` allocated with `rules`, in day order, without writing anything: what
/// `refresh` stores, and what a preview compares.
pub async fn compute(
    conn: &mut PgConnection,
    range: DateRange,
    rules: &[Rule],
) -> Result<Vec<(NaiveDate, bool, Vec<Allocated>)>, sqlx::Error> {
    let teams: Vec<i64> = sqlx::query_scalar("select id from teams order by id")
        .fetch_all(&mut *conn)
        .await?;
    let totals: Vec<TotalRow> = sqlx::query_as(
        "select r.day, r.project, r.account_id, p.team_id, a.team_id as account_team_id, r.unblended, r.amortized,
                r.gpu_unblended, r.gpu_amortized, r.estimated,
                r.credit_unblended, r.credit_amortized, r.refund_unblended, r.refund_amortized,
                r.tax_unblended, r.tax_amortized
         from daily_project_costs r
         left join projects p on p.name = r.project
         left join team_accounts a on a.account_id = r.account_id
         where r.day >= $1 and r.day < $2 order by r.day, r.project, r.account_id",
    )
    .bind(range.from)
    .bind(range.to)
    .fetch_all(&mut *conn)
    .await?;
    // Shares within unowned projects only: owned ones need none. Each grain has one row per
    // project, user and account a day, and a project's day in an account is split by that
    // account's rows alone.
    let users: Vec<ShareRow> = sqlx::query_as(&format!(
        // Every user any of the five user grains names (a user with a credit alone counts), in
        // unowned projects only: at 10M facts 98 % of the user grain is owned projects', which
        // a filter after the union and its five joins read, deduplicated and joined first.
        "with c as (select day, project, account_id, user_name from costs_by_user x where day >= $1 and day < $2 and {UNOWNED}
                    union select day, project, account_id, user_name from costs_by_user_credit x where day >= $1 and day < $2 and {UNOWNED}
                    union select day, project, account_id, user_name from costs_by_user_refund x where day >= $1 and day < $2 and {UNOWNED}
                    union select day, project, account_id, user_name from costs_by_user_tax x where day >= $1 and day < $2 and {UNOWNED}
                    union select day, project, account_id, user_name from costs_by_user_gpu x where day >= $1 and day < $2 and {UNOWNED})
         select c.day, c.project, c.account_id, c.user_name as name, u.team_id,
                coalesce(n.unblended, 0) as unblended, coalesce(cr.unblended, 0) as credit,
                coalesce(rf.unblended, 0) as refund, coalesce(tx.unblended, 0) as tax,
                g.unblended as gpu_unblended, g.amortized as gpu_amortized
         from c
         left join projects p on p.name = c.project
         left join tagged_users u on u.name = c.user_name
         left join costs_by_user n using (day, project, account_id, user_name)
         left join costs_by_user_credit cr using (day, project, account_id, user_name)
         left join costs_by_user_refund rf using (day, project, account_id, user_name)
         left join costs_by_user_tax tx using (day, project, account_id, user_name)
         left join costs_by_user_gpu g using (day, project, account_id, user_name)
         where p.team_id is null
         order by c.day, c.project, c.account_id, c.user_name"
    ))
    .bind(range.from)
    .bind(range.to)
    .fetch_all(&mut *conn)
    .await?;
    let services: Vec<ShareRow> = if rules.iter().any(|r| !r.services.is_empty()) {
        sqlx::query_as(
            "select c.day, c.project, c.account_id, c.service as name, null::bigint as team_id, c.unblended,
                    0::numeric as credit, 0::numeric as refund, 0::numeric as tax,
                    null::numeric as gpu_unblended, null::numeric as gpu_amortized
             from costs_by_service c left join projects p on p.name = c.project
             where c.day >= $1 and c.day < $2 and p.team_id is null
             order by c.day, c.project, c.account_id, c.service",
        )
        .bind(range.from)
        .bind(range.to)
        .fetch_all(&mut *conn)
        .await?
    } else {
        Vec::new()
    };
    let mut user_shares = group(users);
    let mut service_shares = group(services);
    let mut days: Vec<(NaiveDate, bool, Vec<ProjectDay>)> = Vec::new();
    for row in totals {
        if days.last().is_none_or(|d| d.0 != row.day) {
            days.push((row.day, false, Vec::new()));
        }
        let Some(day) = days.last_mut() else { continue };
        day.1 |= row.estimated;
        let key = (row.day, row.project.clone(), row.account_id.clone());
        let unowned = row.team_id.is_none();
        day.2.push(ProjectDay {
            team: row.team_id,
            account_team: row.account_team_id,
            amounts: Amounts {
                unblended: row.unblended,
                amortized: row.amortized,
                gpu_unblended: row.gpu_unblended,
                gpu_amortized: row.gpu_amortized,
                credit_unblended: row.credit_unblended,
                credit_amortized: row.credit_amortized,
                refund_unblended: row.refund_unblended,
                refund_amortized: row.refund_amortized,
                tax_unblended: row.tax_unblended,
                tax_amortized: row.tax_amortized,
            },
            users: if unowned {
                user_shares
                    .remove(&key)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|r| UserShare {
                        user: r.name,
                        team: r.team_id,
                        net: r.unblended,
                        credit: r.credit,
                        refund: r.refund,
                        tax: r.tax,
                        gpu: r.gpu_unblended.zip(r.gpu_amortized),
                    })
                    .collect()
            } else {
                Vec::new()
            },
            services: if unowned {
                service_shares
                    .remove(&key)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|r| (r.name, r.unblended))
                    .collect()
            } else {
                Vec::new()
            },
            project: row.project,
            account: row.account_id,
        });
    }
    Ok(days
        .into_iter()
        .map(|(day, estimated, projects)| (day, estimated, allocate_day(&projects, rules, &teams)))
        .collect())
}

/// Share rows by day, project and account.
type Shares = BTreeMap<(NaiveDate, String, String), Vec<ShareRow>>;

fn group(rows: Vec<ShareRow>) -> Shares {
    let mut shares: Shares = BTreeMap::new();
    for row in rows {
        shares
            .entry((row.day, row.project.clone(), row.account_id.clone()))
            .or_default()
            .push(row);
    }
    shares
}

/// Serialises every rewrite of the allocation (ingestion, the demo, mapping and rule
/// changes, the start-up fill), until the caller's transaction ends. Without it two writers'
/// deletes would each miss the other's new rows and both sets would stay, counting spend
/// twice. Waiting is bounded by the session's lock timeout.
pub async fn lock(conn: &mut PgConnection) -> Result<(), sqlx::Error> {
    sqlx::query("select pg_advisory_xact_lock(hashtext('burnrate.allocation'))")
        .execute(conn)
        .await?;
    Ok(())
}

/// Days allocated at a time: memory stays flat however long the history.
const CHUNK_DAYS: u64 = 31;

/// Rewrites the allocation of `range` from the daily totals, the mappings and the stored rules,
/// with the page rollups of the same days. Call it in the transaction that changed any of them.
pub async fn refresh(conn: &mut PgConnection, range: DateRange) -> Result<(), sqlx::Error> {
    refresh_runs(conn, &[range], &Owners::All).await
}

/// `refresh` of each of `runs`, then the page rollups' month-to-date rows they change, once;
/// the owned-spend rollup of `owners` only.
pub(super) async fn refresh_runs(
    conn: &mut PgConnection,
    runs: &[DateRange],
    owners: &Owners,
) -> Result<(), sqlx::Error> {
    lock(conn).await?;
    // For the rest of the transaction: the rewrite's sorts and bitmaps of a month's rows fit
    // in memory (at the default 4 MB they spill to disk and go lossy), and its statements,
    // each run once, are not worth compiling (JIT took 0.26 s per month-to-date statement).
    // 64 MB is per sort or hash node (hashes may take twice that); one rewrite runs at a
    // time, under the lock, so only one transaction uses it.
    sqlx::query("set local work_mem = '64MB'").execute(&mut *conn).await?;
    sqlx::query("set local jit = off").execute(&mut *conn).await?;
    let rules = super::rule_store::engine_rules(conn).await?;
    for range in runs {
        sqlx::query("delete from allocated_daily_costs where day >= $1 and day < $2")
            .bind(range.from)
            .bind(range.to)
            .execute(&mut *conn)
            .await?;
        let mut from = range.from;
        while from < range.to {
            let to = (from + chrono::Days::new(CHUNK_DAYS)).min(range.to);
            write_chunk(conn, DateRange { from, to }, &rules).await?;
            from = to;
        }
        super::rollups::write_days(conn, *range, owners).await?;
    }
    super::rollups::write_to_date(conn, runs, owners).await
}

async fn write_chunk(conn: &mut PgConnection, range: DateRange, rules: &[Rule]) -> Result<(), sqlx::Error> {
    let days = compute(conn, range, rules).await?;
    let rows: Vec<(NaiveDate, bool, &Allocated)> = days
        .iter()
        .flat_map(|(day, estimated, rows)| rows.iter().map(move |r| (*day, *estimated, r)))
        .collect();
    for batch in rows.chunks(BATCH) {
        insert(conn, batch).await?;
    }
    Ok(())
}

async fn insert(conn: &mut PgConnection, rows: &[(NaiveDate, bool, &Allocated)]) -> Result<(), sqlx::Error> {
    let column = |f: fn(&Allocated) -> Decimal| rows.iter().map(|r| f(r.2)).collect::<Vec<Decimal>>();
    sqlx::query(
        "insert into allocated_daily_costs
             (day, estimated, team_id, source, rule_id, project, user_name, unblended, amortized, gpu_unblended, gpu_amortized,
              credit_unblended, credit_amortized, refund_unblended, refund_amortized, tax_unblended, tax_amortized,
              account_id)
         select * from unnest($1::date[], $2::bool[], $3::bigint[], $4::text[], $5::bigint[], $6::text[], $7::text[],
                              $8::numeric[], $9::numeric[], $10::numeric[], $11::numeric[], $12::numeric[], $13::numeric[],
                              $14::numeric[], $15::numeric[], $16::numeric[], $17::numeric[], $18::text[])",
    )
    .bind(rows.iter().map(|r| r.0).collect::<Vec<_>>())
    .bind(rows.iter().map(|r| r.1).collect::<Vec<_>>())
    .bind(rows.iter().map(|r| r.2.team).collect::<Vec<_>>())
    .bind(rows.iter().map(|r| r.2.source.key()).collect::<Vec<_>>())
    .bind(rows.iter().map(|r| r.2.rule).collect::<Vec<_>>())
    .bind(rows.iter().map(|r| r.2.project.as_str()).collect::<Vec<_>>())
    .bind(rows.iter().map(|r| r.2.user.as_str()).collect::<Vec<_>>())
    .bind(column(|a| a.amounts.unblended))
    .bind(column(|a| a.amounts.amortized))
    .bind(column(|a| a.amounts.gpu_unblended))
    .bind(column(|a| a.amounts.gpu_amortized))
    .bind(column(|a| a.amounts.credit_unblended))
    .bind(column(|a| a.amounts.credit_amortized))
    .bind(column(|a| a.amounts.refund_unblended))
    .bind(column(|a| a.amounts.refund_amortized))
    .bind(column(|a| a.amounts.tax_unblended))
    .bind(column(|a| a.amounts.tax_amortized))
    .bind(rows.iter().map(|r| r.2.account.as_str()).collect::<Vec<_>>())
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Rewrites every day with spend, the owned-spend rollup included: for anything that may
/// move spend on every day.
pub async fn refresh_all(conn: &mut PgConnection) -> Result<u64, sqlx::Error> {
    refresh_every_day(conn, &Owners::All).await
}

/// Rewrites the allocation of every day with spend, and the owned-spend rollup of `owners`:
/// after a rule change (no owner's), which moves shared spend on every day. Returns how many
/// days it rewrote.
pub async fn refresh_every_day(conn: &mut PgConnection, owners: &Owners) -> Result<u64, sqlx::Error> {
    // Before reading the span: an ingestion holding the lock may be adding days.
    lock(conn).await?;
    let span: (Option<NaiveDate>, Option<NaiveDate>) =
        sqlx::query_as("select min(day), max(day) from daily_project_costs")
            .fetch_one(&mut *conn)
            .await?;
    match span {
        (Some(from), Some(last)) => {
            let every_day = DateRange {
                from,
                to: last + chrono::Days::new(1),
            };
            refresh_runs(conn, &[every_day], owners).await?;
            Ok(every_day.days().unsigned_abs())
        }
        _ => {
            sqlx::query("delete from allocated_daily_costs")
                .execute(&mut *conn)
                .await?;
            super::rollups::clear(conn).await?;
            Ok(0)
        }
    }
}

/// Allocates the days the daily totals have and the allocation lacks: after the upgrade that
/// added allocation, or anything else that wrote the daily totals alone. True when it wrote any.
pub async fn fill_gaps(conn: &mut PgConnection) -> Result<bool, sqlx::Error> {
    // Replicas starting together after an upgrade: one fills, the others go on serving
    // instead of waiting out the lock timeout and failing their start.
    let free: bool = sqlx::query_scalar("select pg_try_advisory_xact_lock(hashtext('burnrate.allocation'))")
        .fetch_one(&mut *conn)
        .await?;
    if !free {
        tracing::info!("another process is rewriting the allocation; leaving the gaps to it");
        return Ok(false);
    }
    let mut missing = days_lacking(conn, "daily_project_costs", "allocated_daily_costs").await?;
    missing.extend(days_allocated_before_accounts(conn).await?);
    missing.sort_unstable();
    missing.dedup();
    refresh_runs(conn, &runs(&missing), &Owners::All).await?;
    // Days allocated before the page rollups existed.
    let filled = super::rollups::fill_missing(conn).await?;
    Ok(!missing.is_empty() || filled)
}

/// Days allocated before the allocation kept accounts (rows with account '') whose daily totals
/// now has them: the upgrade that added accounts to the allocation left them so, their
/// totals right, until they are rewritten. History older than Cost Explorer keeps stays
/// without accounts for good, so this runs at every start: its days are found by one probe
/// each of the (account, day) index (a recursive skip scan), not by reading their rows.
async fn days_allocated_before_accounts(conn: &mut PgConnection) -> Result<Vec<NaiveDate>, sqlx::Error> {
    sqlx::query_scalar(
        "with recursive d(day) as (
             select min(day) from allocated_daily_costs where account_id = ''
             union all
             select (select min(a.day) from allocated_daily_costs a where a.account_id = '' and a.day > d.day)
             from d where d.day is not null)
         select d.day from d
         where d.day is not null
           and exists (select 1 from daily_project_costs r where r.day = d.day and r.account_id <> '')
         order by 1",
    )
    .fetch_all(conn)
    .await
}

/// `fill_gaps` in a transaction of its own, as bulk work (no statement bound).
pub async fn fill_gaps_in_transaction(pool: &sqlx::PgPool) -> Result<bool, sqlx::Error> {
    let mut tx = pool.begin().await?;
    crate::db::lift_statement_timeout_in_transaction(&mut tx).await?;
    let filled = fill_gaps(&mut tx).await?;
    tx.commit().await?;
    Ok(filled)
}
