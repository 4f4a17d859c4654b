//! Writing daily cost facts: one window of days is replaced whole inside the caller's
//! transaction, where `allocation::facts::written` then derives its daily totals and
//! allocation. Demo loading and ingestion both write through here.

use rust_decimal::Decimal;
use sqlx::PgConnection;

pub use super::grain::Grain;
use crate::period::DateRange;
use crate::usage_type;

/// One day's cost for a project and one other dimension in one AWS account, exactly as the
/// source gave it. An empty `project` or `dimension` is spend without that tag; an empty
/// `account` is a fact stored before accounts were (see the linked-accounts migration).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CostRow {
    pub day: chrono::NaiveDate,
    pub project: String,
    pub dimension: String,
    /// Cost Explorer's LINKED_ACCOUNT: the 12-digit account ID.
    pub account: String,
    pub unblended: Decimal,
    pub amortized: Decimal,
    pub usage_quantity: Decimal,
    pub estimated: bool,
}

/// The facts of one window at every grain.
#[derive(Debug, Default, Clone)]
pub struct CostBatch {
    pub by_user: Vec<CostRow>,
    pub by_usage_type: Vec<CostRow>,
    pub by_service: Vec<CostRow>,
    pub by_record_type: Vec<CostRow>,
    /// Credits, refunds and tax by project and user tag (each filtered to its record type).
    pub by_user_credit: Vec<CostRow>,
    pub by_user_refund: Vec<CostRow>,
    pub by_user_tax: Vec<CostRow>,
    /// Spend on GPU usage types by project and user tag.
    pub by_user_gpu: Vec<CostRow>,
}

impl CostBatch {
    pub fn rows(&self, grain: Grain) -> &[CostRow] {
        match grain {
            Grain::ByUser => &self.by_user,
            Grain::ByUsageType => &self.by_usage_type,
            Grain::ByService => &self.by_service,
            Grain::ByRecordType => &self.by_record_type,
            Grain::ByUserCredit => &self.by_user_credit,
            Grain::ByUserRefund => &self.by_user_refund,
            Grain::ByUserTax => &self.by_user_tax,
            Grain::ByUserGpu => &self.by_user_gpu,
        }
    }

    pub fn len(&self) -> usize {
        Grain::ALL.iter().map(|grain| self.rows(*grain).len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Rows per COPY buffer sent: a few MB, so memory stays flat however large the window.
const CHUNK: usize = 20_000;

/// Replaces every fact in `range` with `batch` and records any new projects, users and
/// usage types. Returns the number of fact rows written. Run it inside a transaction, and
/// rewrite what derives from the facts in it too (`allocation::facts::replace_window` does
/// both): readers then see the old window or the new one, never a mix.
pub(crate) async fn replace_window(
    conn: &mut PgConnection,
    range: DateRange,
    batch: &CostBatch,
) -> Result<u64, sqlx::Error> {
    for grain in Grain::ALL {
        delete_window(conn, grain.table(), range).await?;
        copy_rows(conn, grain.table(), grain, batch.rows(grain)).await?;
    }
    // A batch is no Cost Explorer answer: its account views are its own exact sums.
    super::aws_account_views::derive_window(conn, range).await?;
    finish_window(conn, range).await?;
    Ok(batch.len() as u64)
}

/// A window's facts gathered in temporary tables on one connection, page by page, so a run
/// holds neither all its rows in memory nor any lock while it waits on AWS. Only
/// [`Staging::replace_window`], inside the caller's transaction, touches the fact tables.
pub struct Staging(());

impl Staging {
    /// Empty staging tables on `conn` (temporary: other connections never see them).
    pub async fn begin(conn: &mut PgConnection) -> Result<Staging, sqlx::Error> {
        for grain in Grain::ALL {
            sqlx::query(&format!(
                "create temp table if not exists {} (like {}) on commit preserve rows",
                grain.staging_table(),
                grain.table()
            ))
            .execute(&mut *conn)
            .await?;
            sqlx::query(&format!("truncate {}", grain.staging_table()))
                .execute(&mut *conn)
                .await?;
        }
        Ok(Staging(()))
    }

    pub async fn append(&self, conn: &mut PgConnection, grain: Grain, rows: &[CostRow]) -> Result<(), sqlx::Error> {
        copy_rows(conn, grain.staging_table(), grain, rows).await
    }

    /// An error naming the first group staged twice for one day (Cost Explorer answered it
    /// twice), if any.
    pub async fn check_unique(&self, conn: &mut PgConnection) -> Result<(), StagingError> {
        for grain in Grain::ALL {
            let duplicate: Option<(chrono::NaiveDate, String, String)> = sqlx::query_as(&format!(
                "select day, project, {column} from {table} group by day, project, {column}, account_id
                 having count(*) > 1 order by 1, 2, 3 limit 1",
                column = grain.dimension_column(),
                table = grain.staging_table()
            ))
            .fetch_optional(&mut *conn)
            .await?;
            if let Some((day, project, dimension)) = duplicate {
                return Err(StagingError::Duplicate {
                    day,
                    project,
                    dimension,
                });
            }
        }
        Ok(())
    }

    /// Replaces every fact in `range` with the staged rows, then records dimensions, as
    /// [`replace_window`] does (the caller then calls `allocation::facts::written`).
    /// Returns the rows written.
    pub(crate) async fn replace_window(&self, conn: &mut PgConnection, range: DateRange) -> Result<u64, sqlx::Error> {
        let mut written = 0;
        for grain in Grain::ALL {
            delete_window(conn, grain.table(), range).await?;
            let columns = format!(
                "day, project, {}, account_id, unblended, amortized, usage_quantity, estimated",
                grain.dimension_column()
            );
            written += sqlx::query(&format!(
                "insert into {} ({columns}) select {columns} from {}",
                grain.table(),
                grain.staging_table()
            ))
            .execute(&mut *conn)
            .await?
            .rows_affected();
        }
        finish_window(conn, range).await?;
        Ok(written)
    }

    /// The GPU usage types (by the catalogue) each account's staged usage-type grain names:
    /// what `Grain::ByUserGpu` is asked for, per account.
    pub async fn gpu_usage_types(
        &self,
        conn: &mut PgConnection,
    ) -> Result<std::collections::BTreeMap<String, Vec<String>>, sqlx::Error> {
        let staged: Vec<(String, String)> = sqlx::query_as(&format!(
            "select distinct account_id, usage_type from {} order by 1, 2",
            Grain::ByUsageType.staging_table()
        ))
        .fetch_all(&mut *conn)
        .await?;
        let mut by_account: std::collections::BTreeMap<String, Vec<String>> = std::collections::BTreeMap::new();
        for (account, usage_type) in staged {
            if usage_type::parse(&usage_type).gpu.is_some() {
                by_account.entry(account).or_default().push(usage_type);
            }
        }
        Ok(by_account)
    }

    /// Frees the staged rows (the tables stay for the connection's next run).
    pub async fn clear(self, conn: &mut PgConnection) -> Result<(), sqlx::Error> {
        for grain in Grain::ALL {
            sqlx::query(&format!("truncate {}", grain.staging_table()))
                .execute(&mut *conn)
                .await?;
        }
        Ok(())
    }
}

/// Why staged rows cannot be stored.
#[derive(Debug, thiserror::Error)]
pub enum StagingError {
    #[error("Cost Explorer returned the group {project:?} / {dimension:?} twice for {day}; nothing was stored")]
    Duplicate {
        day: chrono::NaiveDate,
        project: String,
        dimension: String,
    },
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
}

async fn delete_window(conn: &mut PgConnection, table: &str, range: DateRange) -> Result<(), sqlx::Error> {
    sqlx::query(&format!("delete from {table} where day >= $1 and day < $2"))
        .bind(range.from)
        .bind(range.to)
        .execute(conn)
        .await?;
    Ok(())
}

/// After a window's facts are written: new tag values and usage types.
async fn finish_window(conn: &mut PgConnection, range: DateRange) -> Result<(), sqlx::Error> {
    record_dimensions(conn, range).await
}

/// Rows after which a write refreshes the planner's statistics: without them, pages that
/// filter by team pick nested loops over millions of rows (2.4 s instead of 46 ms at 10M).
pub const ANALYZE_AFTER_ROWS: u64 = 10_000;

/// Refreshes planner statistics for the cost tables (after a large committed write;
/// autovacuum would get there too, but only minutes later).
pub async fn refresh_statistics(conn: &mut PgConnection) -> Result<(), sqlx::Error> {
    sqlx::query(
        "analyze costs_by_user, costs_by_usage_type, costs_by_service, costs_by_user_credit, costs_by_user_refund,
                 costs_by_user_tax, costs_by_user_gpu, daily_project_costs, projects, tagged_users,
                 team_daily_costs, team_account_daily_costs, allocated_project_spans, owned_spend_spans, record_type_days,
                 costs_by_account, costs_by_account_record_type",
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// COPY is several times faster than INSERT for bulk facts; values go in PostgreSQL's text
/// format, escaped, so tag values with tabs, newlines or backslashes arrive verbatim.
async fn copy_rows(conn: &mut PgConnection, table: &str, grain: Grain, rows: &[CostRow]) -> Result<(), sqlx::Error> {
    if rows.is_empty() {
        return Ok(());
    }
    let mut copy = conn
        .copy_in_raw(&format!(
            "copy {table} (day, project, {}, account_id, unblended, amortized, usage_quantity, estimated) from stdin",
            grain.dimension_column()
        ))
        .await?;
    let mut buffer = String::with_capacity(CHUNK * 96);
    for chunk in rows.chunks(CHUNK) {
        buffer.clear();
        for row in chunk {
            use std::fmt::Write;
            let _ = write!(buffer, "{}\t", row.day);
            push_escaped(&mut buffer, &row.project);
            buffer.push('\t');
            push_escaped(&mut buffer, &row.dimension);
            buffer.push('\t');
            push_escaped(&mut buffer, &row.account);
            let _ = writeln!(
                buffer,
                "\t{}\t{}\t{}\t{}",
                row.unblended,
                row.amortized,
                row.usage_quantity,
                if row.estimated { 't' } else { 'f' }
            );
        }
        if let Err(error) = copy.send(buffer.as_bytes()).await {
            let _ = copy.abort("burnrate: send failed").await;
            return Err(error);
        }
    }
    copy.finish().await?;
    Ok(())
}

/// COPY text format: backslash, tab, newline and carriage return are escaped.
fn push_escaped(buffer: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '\\' => buffer.push_str("\\\\"),
            '\t' => buffer.push_str("\\t"),
            '\n' => buffer.push_str("\\n"),
            '\r' => buffer.push_str("\\r"),
            c => buffer.push(c),
        }
    }
}

/// New tag values in the window's facts appear as unmapped projects and users so admins
/// can assign them; new usage types are parsed once into the catalogue.
async fn record_dimensions(conn: &mut PgConnection, range: DateRange) -> Result<(), sqlx::Error> {
    for new_tag_values in [
        "insert into projects (name)
         select project from costs_by_user where day >= $1 and day < $2 and project <> ''
         union select project from costs_by_usage_type where day >= $1 and day < $2 and project <> ''
         union select project from costs_by_service where day >= $1 and day < $2 and project <> ''
         on conflict do nothing",
        "insert into tagged_users (name)
         select distinct user_name from costs_by_user where day >= $1 and day < $2 and user_name <> ''
         on conflict do nothing",
    ] {
        sqlx::query(new_tag_values)
            .bind(range.from)
            .bind(range.to)
            .execute(&mut *conn)
            .await?;
    }

    // Only types not stored yet: one a newer catalogue reads differently is read again by
    // `allocation::facts::reread_usage_types`, which rebuilds every day that uses it, not just this window's.
    let new: Vec<String> = sqlx::query_scalar(
        "select distinct c.usage_type from costs_by_usage_type c
         where c.day >= $1 and c.day < $2
           and not exists (select 1 from usage_types u where u.usage_type = c.usage_type)",
    )
    .bind(range.from)
    .bind(range.to)
    .fetch_all(&mut *conn)
    .await?;
    record_usage_types(conn, &new).await?;
    Ok(())
}

/// Parses each usage type and stores what it means, updating rows a newer catalogue reads
/// differently. Returns how many rows changed.
pub async fn record_usage_types(conn: &mut PgConnection, names: &[String]) -> Result<u64, sqlx::Error> {
    let parsed: Vec<usage_type::UsageType> = names.iter().map(|u| usage_type::parse(u)).collect();
    let written = sqlx::query(
        "insert into usage_types as u
             (usage_type, purchase_option, instance_type, instance_family, gpu_model, gpu_count, gpu_memory_gib, workload)
         select * from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::numeric[], $7::numeric[],
                              $8::text[])
         on conflict (usage_type) do update set
             purchase_option = excluded.purchase_option, instance_type = excluded.instance_type,
             instance_family = excluded.instance_family, gpu_model = excluded.gpu_model,
             gpu_count = excluded.gpu_count, gpu_memory_gib = excluded.gpu_memory_gib, workload = excluded.workload
         where (u.purchase_option, u.instance_type, u.instance_family, u.gpu_model, u.gpu_count, u.gpu_memory_gib,
                u.workload)
               is distinct from
               (excluded.purchase_option, excluded.instance_type, excluded.instance_family, excluded.gpu_model,
                excluded.gpu_count, excluded.gpu_memory_gib, excluded.workload)",
    )
    .bind(names)
    .bind(parsed.iter().map(|p| p.purchase_option.key()).collect::<Vec<_>>())
    .bind(parsed.iter().map(|p| p.instance_type.clone()).collect::<Vec<_>>())
    .bind(parsed.iter().map(|p| p.instance_family().map(str::to_string)).collect::<Vec<_>>())
    .bind(parsed.iter().map(|p| p.gpu.map(|g| g.model)).collect::<Vec<_>>())
    .bind(parsed.iter().map(|p| p.gpu.map(|g| g.count)).collect::<Vec<_>>())
    .bind(parsed.iter().map(|p| p.gpu.map(|g| g.memory_gib_each)).collect::<Vec<_>>())
    .bind(
        names
            .iter()
            .map(|u| usage_type::sagemaker_use(u).and_then(|s| s.workload_key()))
            .collect::<Vec<_>>(),
    )
    .execute(&mut *conn)
    .await?;
    Ok(written.rows_affected())
}

/// What the daily totals and page rollups read of each usage type: its GPUs (GPU spend), and its purchase option,
/// family, GPU model and workload (the page rollups' breakdowns).
type UsageTypeRow = (
    String,
    Option<Decimal>,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
);

async fn usage_type_rows(conn: &mut PgConnection) -> Result<Vec<UsageTypeRow>, sqlx::Error> {
    sqlx::query_as(
        "select usage_type, gpu_count, purchase_option, instance_family, gpu_model, workload
         from usage_types order by usage_type",
    )
    .fetch_all(conn)
    .await
}

/// Reads every stored usage type again with this build's catalogue, on `conn`. Returns how
/// many changed and the days whose facts use a changed one (a family the catalogue did not
/// know is now a GPU, say): what derives from those days must be written again.
pub async fn reread_usage_types(conn: &mut PgConnection) -> Result<(u64, Option<DateRange>), sqlx::Error> {
    let names: Vec<String> = sqlx::query_scalar("select usage_type from usage_types order by usage_type")
        .fetch_all(&mut *conn)
        .await?;
    let before = usage_type_rows(conn).await?;
    let changed = record_usage_types(conn, &names).await?;
    if changed == 0 {
        return Ok((0, None));
    }
    let after = usage_type_rows(conn).await?;
    let moved: Vec<String> = before
        .iter()
        .zip(&after)
        .filter(|(b, a)| b != a)
        .map(|(b, _)| b.0.clone())
        .collect();
    let span: (Option<chrono::NaiveDate>, Option<chrono::NaiveDate>) =
        sqlx::query_as("select min(day), max(day) from costs_by_usage_type where usage_type = any($1)")
            .bind(&moved)
            .fetch_one(&mut *conn)
            .await?;
    let days = match span {
        (Some(from), Some(last)) => Some(DateRange {
            from,
            to: last + chrono::Days::new(1),
        }),
        _ => None,
    };
    Ok((changed, days))
}
