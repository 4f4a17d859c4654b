//! Writing daily cost facts: one window of days is replaced whole, with its rollup, inside
//! the caller's transaction. Demo loading and ingestion both write through here.

use std::collections::BTreeSet;

use rust_decimal::Decimal;
use sqlx::PgConnection;

use super::period::DateRange;
use super::usage_type;

/// The fact tables, one per Cost Explorer group-by pair. The second column names the
/// dimension grouped with the project tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grain {
    ByUser,
    ByUsageType,
    ByService,
}

impl Grain {
    pub const ALL: [Grain; 3] = [Grain::ByUser, Grain::ByUsageType, Grain::ByService];

    fn table(self) -> &'static str {
        match self {
            Grain::ByUser => "costs_by_user",
            Grain::ByUsageType => "costs_by_usage_type",
            Grain::ByService => "costs_by_service",
        }
    }

    fn dimension_column(self) -> &'static str {
        match self {
            Grain::ByUser => "user_name",
            Grain::ByUsageType => "usage_type",
            Grain::ByService => "service",
        }
    }
}

/// One day's cost for a project and one other dimension, exactly as the source gave it.
/// An empty `project` or `dimension` is spend without that tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CostRow {
    pub day: chrono::NaiveDate,
    pub project: String,
    pub dimension: String,
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
}

impl CostBatch {
    pub fn rows(&self, grain: Grain) -> &[CostRow] {
        match grain {
            Grain::ByUser => &self.by_user,
            Grain::ByUsageType => &self.by_usage_type,
            Grain::ByService => &self.by_service,
        }
    }

    pub fn len(&self) -> usize {
        self.by_user.len() + self.by_usage_type.len() + self.by_service.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Rows per INSERT … UNNEST statement: large enough to amortise the round trip, small
/// enough to keep each bind buffer a few MB.
const CHUNK: usize = 10_000;

/// Replaces every fact in `range` with `batch`, records any new projects, users and usage
/// types, and rewrites the rollup for `range`. Returns the number of fact rows written.
/// Run it inside a transaction: readers then see the old window or the new one, never a mix.
pub async fn replace_window(conn: &mut PgConnection, range: DateRange, batch: &CostBatch) -> Result<u64, sqlx::Error> {
    for grain in Grain::ALL {
        sqlx::query(&format!("delete from {} where day >= $1 and day < $2", grain.table()))
            .bind(range.from)
            .bind(range.to)
            .execute(&mut *conn)
            .await?;
        for chunk in batch.rows(grain).chunks(CHUNK) {
            insert_chunk(conn, grain, chunk).await?;
        }
    }
    record_dimensions(conn, batch).await?;
    super::rollups::refresh(conn, range).await?;
    Ok(batch.len() as u64)
}

async fn insert_chunk(conn: &mut PgConnection, grain: Grain, rows: &[CostRow]) -> Result<(), sqlx::Error> {
    let sql = format!(
        "insert into {} (day, project, {}, unblended, amortized, usage_quantity, estimated)
         select * from unnest($1::date[], $2::text[], $3::text[], $4::numeric[], $5::numeric[], $6::numeric[], $7::bool[])",
        grain.table(),
        grain.dimension_column()
    );
    sqlx::query(&sql)
        .bind(rows.iter().map(|r| r.day).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.project.as_str()).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.dimension.as_str()).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.unblended).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.amortized).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.usage_quantity).collect::<Vec<_>>())
        .bind(rows.iter().map(|r| r.estimated).collect::<Vec<_>>())
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// New tag values appear as unmapped projects and users so admins can assign them;
/// new usage types are parsed once into the catalogue.
async fn record_dimensions(conn: &mut PgConnection, batch: &CostBatch) -> Result<(), sqlx::Error> {
    let projects = Grain::ALL
        .iter()
        .flat_map(|g| batch.rows(*g))
        .map(|r| r.project.as_str());
    insert_tag_values(conn, "projects", projects).await?;
    insert_tag_values(conn, "tagged_users", batch.by_user.iter().map(|r| r.dimension.as_str())).await?;

    let usage_types: BTreeSet<&str> = batch.by_usage_type.iter().map(|r| r.dimension.as_str()).collect();
    let parsed: Vec<(&str, usage_type::UsageType)> =
        usage_types.into_iter().map(|u| (u, usage_type::parse(u))).collect();
    sqlx::query(
        "insert into usage_types (usage_type, purchase_option, instance_type, instance_family, gpu_model, gpu_count, gpu_memory_gib)
         select * from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::int[])
         on conflict do nothing",
    )
    .bind(parsed.iter().map(|(u, _)| *u).collect::<Vec<_>>())
    .bind(parsed.iter().map(|(_, p)| p.purchase_option.key()).collect::<Vec<_>>())
    .bind(parsed.iter().map(|(_, p)| p.instance_type.clone()).collect::<Vec<_>>())
    .bind(parsed.iter().map(|(_, p)| p.instance_family().map(str::to_string)).collect::<Vec<_>>())
    .bind(parsed.iter().map(|(_, p)| p.gpu.map(|g| g.model)).collect::<Vec<_>>())
    .bind(parsed.iter().map(|(_, p)| p.gpu.map(|g| g.count)).collect::<Vec<_>>())
    .bind(parsed.iter().map(|(_, p)| p.gpu.map(|g| g.memory_gib_each)).collect::<Vec<_>>())
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Adds tag values not seen before to `table` (projects or tagged_users), unmapped.
async fn insert_tag_values<'a>(
    conn: &mut PgConnection,
    table: &'static str,
    values: impl Iterator<Item = &'a str>,
) -> Result<(), sqlx::Error> {
    let distinct: BTreeSet<&str> = values.filter(|v| !v.is_empty()).collect();
    sqlx::query(&format!(
        "insert into {table} (name) select * from unnest($1::text[]) on conflict do nothing"
    ))
    .bind(distinct.into_iter().collect::<Vec<_>>())
    .execute(&mut *conn)
    .await?;
    Ok(())
}
