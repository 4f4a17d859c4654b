//! The Ingestion page's reads: the newest runs as listed.

use chrono::{DateTime, NaiveDate, Utc};
use rust_decimal::Decimal;
use sqlx::PgPool;

use super::model::RunSummary;

/// An `ingestion_runs` row as the page needs it.
#[derive(sqlx::FromRow)]
struct Run {
    id: i64,
    trigger: String,
    status: String,
    started_at: DateTime<Utc>,
    duration_seconds: Option<i64>,
    window_from: Option<NaiveDate>,
    window_last: Option<NaiveDate>,
    rows_written: i64,
    requests: i32,
    api_cost: Decimal,
    grain_difference: Option<Decimal>,
    error: Option<String>,
}

/// The 50 newest runs, newest first.
pub async fn recent_runs(pool: &PgPool) -> Result<Vec<RunSummary>, sqlx::Error> {
    let runs: Vec<Run> = sqlx::query_as(
        "select id, trigger, status, started_at,
                extract(epoch from finished_at - started_at)::bigint as duration_seconds,
                window_from, window_to - 1 as window_last, rows_written, requests, api_cost, grain_difference, error
         from ingestion_runs order by started_at desc, id desc limit 50",
    )
    .fetch_all(pool)
    .await?;
    Ok(runs
        .into_iter()
        .map(|run| {
            let window = run.window_from.zip(run.window_last);
            RunSummary {
                id: run.id,
                trigger: run.trigger,
                status: run.status,
                started_at: run.started_at.format("%Y-%m-%d %H:%M UTC").to_string(),
                duration_seconds: run.duration_seconds,
                window: window.map(|(from, last)| format!("{from} – {last}")),
                days: window.map(|(from, last)| (last - from).num_days() + 1),
                rows_written: run.rows_written,
                requests: run.requests,
                api_cost: run.api_cost,
                grain_difference: run.grain_difference,
                error: run.error,
            }
        })
        .collect())
}

/// Usage types with an accelerator instance type (p*, g*, inf*, trn*, dl*) the GPU catalogue
/// lacks, costliest first, with their spend over the last 30 days with data.
pub async fn unknown_instance_types(pool: &PgPool) -> Result<Vec<super::model::UnknownInstanceType>, sqlx::Error> {
    let rows: Vec<super::model::UnknownInstanceType> = sqlx::query_as(
        "select u.usage_type, u.instance_type,
                coalesce((select sum(c.unblended) from costs_by_usage_type c
                          where c.usage_type = u.usage_type
                            and c.day > (select max(day) from daily_project_costs) - 30), 0) as spend_30d
         from usage_types u
         where u.instance_type is not null and u.gpu_model is null
         order by spend_30d desc, u.usage_type",
    )
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .filter(|row| crate::catalogue::looks_like_accelerator(&row.instance_type))
        .collect())
}
