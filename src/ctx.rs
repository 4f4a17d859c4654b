//! What a server function reads from its request's context: each piece `server.rs`
//! provides on its own (the pool, the settings, the page-data cache, and the feature
//! services such as the alert sender or the enforcement runner), so a function depends
//! on what it uses and nothing imports the composition root.

use std::sync::Arc;

use leptos::prelude::use_context;
use sqlx::PgPool;

use crate::config::Config;
use crate::error::AppError;
use crate::page_data::PageDataCache;

/// A piece the server provided to every server function. Missing means the server was
/// wired wrongly, a bug the caller cannot fix: 500, and the type in the log.
pub fn get<T: Clone + Send + Sync + 'static>() -> Result<T, AppError> {
    use_context::<T>().ok_or_else(|| {
        tracing::error!(
            missing = std::any::type_name::<T>(),
            "server function context not provided"
        );
        AppError::Internal
    })
}

pub fn pool() -> Result<PgPool, AppError> {
    get::<PgPool>()
}

pub fn config() -> Result<Arc<Config>, AppError> {
    get::<Arc<Config>>()
}

pub fn page_data() -> Result<PageDataCache, AppError> {
    get::<PageDataCache>()
}
