//! The Ingestion page's server function.

use leptos::prelude::*;

use super::model::IngestionData;
use crate::error::AppError;

/// The schedule's state and the 50 newest runs, newest first. Any signed-in account may read them.
#[server(prefix = "/api", endpoint = "ingestion_runs")]
pub async fn list_runs() -> Result<IngestionData, AppError> {
    crate::auth::caller()?;
    let pool = crate::ctx::pool()?;
    let runs = super::store::recent_runs(&pool).await?;
    let schedule = super::schedule::shared()?.read().map(|s| s.clone()).unwrap_or_default();
    let unknown_instance_types = super::store::unknown_instance_types(&pool).await?;
    let settings = &crate::ctx::config()?.ingest;
    let bill = super::bill::project(
        settings,
        &super::bill::pace(&pool).await?,
        chrono::Utc::now().date_naive(),
    );
    Ok(IngestionData {
        schedule,
        runs,
        unknown_instance_types,
        bill,
    })
}
