//! The Audit log's server function (admins only).

use leptos::prelude::*;

use super::model::AuditEntry;
use crate::error::AppError;

/// The newest entries first, at most `limit` (1–1000, default 200).
#[server(prefix = "/api", endpoint = "admin/audit")]
pub async fn list_audit(limit: Option<i64>) -> Result<Vec<AuditEntry>, AppError> {
    crate::auth::require_admin()?;
    let limit = limit.unwrap_or(200);
    if !(1..=1000).contains(&limit) {
        return Err(AppError::invalid("limit", "expected a number from 1 to 1000"));
    }
    Ok(super::store::recent(&crate::ctx::pool()?, limit).await?)
}
