//! The daily per-project rollup that pages read. It is derived from `costs_by_usage_type`
//! (the grain that knows GPU and spot), whose daily totals equal the other grains'. The
//! allocation to teams of the same days is rewritten with it.

use sqlx::PgConnection;

use crate::period::DateRange;

/// Rewrites the rollup rows of `range` from the facts. Call it in the transaction that
/// wrote the facts so the two never disagree.
pub async fn refresh(conn: &mut PgConnection, range: DateRange) -> Result<(), sqlx::Error> {
    sqlx::query("delete from daily_project_costs where day >= $1 and day < $2")
        .bind(range.from)
        .bind(range.to)
        .execute(&mut *conn)
        .await?;
    sqlx::query(
        "insert into daily_project_costs
             (day, project, unblended, amortized, gpu_unblended, gpu_amortized, spot_unblended, spot_amortized, estimated)
         select c.day, c.project, sum(c.unblended), sum(c.amortized),
                coalesce(sum(c.unblended) filter (where u.gpu_count > 0), 0),
                coalesce(sum(c.amortized) filter (where u.gpu_count > 0), 0),
                coalesce(sum(c.unblended) filter (where u.purchase_option = 'spot'), 0),
                coalesce(sum(c.amortized) filter (where u.purchase_option = 'spot'), 0),
                bool_or(c.estimated)
         from costs_by_usage_type c
         left join usage_types u on u.usage_type = c.usage_type
         where c.day >= $1 and c.day < $2
         group by c.day, c.project",
    )
    .bind(range.from)
    .bind(range.to)
    .execute(&mut *conn)
    .await?;
    crate::allocation::store::refresh(conn, range).await
}
