//! The daily totals per project and linked account (`daily_project_costs`) that pages read. It is derived from `costs_by_usage_type`
//! (the grain that knows GPU and spot), whose daily totals equal the other grains', with
//! each project-day's credits, refunds and tax from the record-type grain. The allocation to
//! teams of the same days is rewritten after it (`allocation::facts::written`).

use sqlx::PgConnection;

use crate::period::DateRange;

/// Rewrites the daily totals of `range` from the facts. Call it through
/// `allocation::facts::written`, in the transaction that wrote the facts, so the two never
/// disagree and the allocation's lock is taken first.
pub async fn refresh(conn: &mut PgConnection, range: DateRange) -> Result<(), sqlx::Error> {
    sqlx::query("delete from daily_project_costs where day >= $1 and day < $2")
        .bind(range.from)
        .bind(range.to)
        .execute(&mut *conn)
        .await?;
    sqlx::query(
        "insert into daily_project_costs
             (day, project, account_id, unblended, amortized, gpu_unblended, gpu_amortized, spot_unblended,
              spot_amortized, estimated)
         select c.day, c.project, c.account_id, sum(c.unblended), sum(c.amortized),
                coalesce(sum(c.unblended) filter (where u.gpu_count > 0), 0),
                coalesce(sum(c.amortized) filter (where u.gpu_count > 0), 0),
                coalesce(sum(c.unblended) filter (where u.purchase_option = 'spot'), 0),
                coalesce(sum(c.amortized) filter (where u.purchase_option = 'spot'), 0),
                bool_or(c.estimated)
         from costs_by_usage_type c
         left join usage_types u on u.usage_type = c.usage_type
         where c.day >= $1 and c.day < $2
         group by c.day, c.project, c.account_id",
    )
    .bind(range.from)
    .bind(range.to)
    .execute(&mut *conn)
    .await?;
    // Each project-day's credits, refunds and tax, as the record-type grain reports them.
    sqlx::query(
        "update daily_project_costs r set
             credit_unblended = k.credit_unblended, credit_amortized = k.credit_amortized,
             refund_unblended = k.refund_unblended, refund_amortized = k.refund_amortized,
             tax_unblended = k.tax_unblended, tax_amortized = k.tax_amortized
         from (
             select day, project, account_id,
                    coalesce(sum(unblended) filter (where record_type = 'Credit'), 0) as credit_unblended,
                    coalesce(sum(amortized) filter (where record_type = 'Credit'), 0) as credit_amortized,
                    coalesce(sum(unblended) filter (where record_type = 'Refund'), 0) as refund_unblended,
                    coalesce(sum(amortized) filter (where record_type = 'Refund'), 0) as refund_amortized,
                    coalesce(sum(unblended) filter (where record_type = 'Tax'), 0) as tax_unblended,
                    coalesce(sum(amortized) filter (where record_type = 'Tax'), 0) as tax_amortized
             from costs_by_record_type
             where day >= $1 and day < $2 and record_type in ('Credit', 'Refund', 'Tax')
             group by 1, 2, 3
         ) k
         where k.day = r.day and k.project = r.project and k.account_id = r.account_id",
    )
    .bind(range.from)
    .bind(range.to)
    .execute(&mut *conn)
    .await?;
    Ok(())
}
