//! What follows a change to the cost facts, in the transaction that made it: the daily
//! per-project totals of the changed days (`costs::daily_totals`), then their allocation and
//! page rollups. Every writer of facts ends here, so pages never see facts and figures
//! that disagree.

use sqlx::PgConnection;

use crate::costs::store::CostBatch;
use crate::period::DateRange;

/// Rewrites what derives from the facts of `range`, after they were written in this
/// transaction.
pub async fn written(conn: &mut PgConnection, range: DateRange) -> Result<(), sqlx::Error> {
    // The allocation's lock first, as every rewrite of the allocation takes it: a writer
    // holding it (a start-up fill, a mapping change) reads the daily totals, and no two
    // writers may take the daily totals' rows and the lock in opposite orders.
    super::store::lock(conn).await?;
    crate::costs::daily_totals::refresh(conn, range).await?;
    super::store::refresh(conn, range).await
}

/// Replaces every fact in `range` with `batch` and rewrites what derives from them. Returns
/// the fact rows written. Run it inside a transaction.
pub async fn replace_window(conn: &mut PgConnection, range: DateRange, batch: &CostBatch) -> Result<u64, sqlx::Error> {
    let rows = crate::costs::store::replace_window(conn, range, batch).await?;
    written(conn, range).await?;
    Ok(rows)
}

/// Reads every stored usage type again with this build's catalogue; when one changes, the
/// days that use it are derived again in the same transaction, so GPU spend never
/// disagrees with the usage types. Returns how many changed.
pub async fn reread_usage_types(pool: &sqlx::PgPool) -> Result<u64, sqlx::Error> {
    let mut tx = pool.begin().await?;
    // Rebuilding a changed type's history is bulk work, like ingestion: not held to the
    // statement bound of a page.
    crate::db::lift_statement_timeout_in_transaction(&mut tx).await?;
    let (changed, days) = crate::costs::store::reread_usage_types(&mut tx).await?;
    if let Some(range) = days {
        written(&mut tx, range).await?;
    }
    tx.commit().await?;
    Ok(changed)
}
