//! Links every page builds the same way: a team's or project's page, and CSV downloads.

use crate::format::url_encode;
use crate::period::{DateRange, Metric};

/// `/teams/<name>` and `/projects/<name>` with the name percent-encoded; untagged spend's
/// project is the empty name.
pub fn scope_href(kind: &str, name: &str) -> String {
    format!("/{kind}/{}", url_encode(name))
}

/// A budget's page.
pub fn budget_href(id: i64) -> String {
    format!("/budgets/{id}")
}

/// The Savings page's recommendations as CSV (`savings::download`); `?team=&kind=` filter.
pub const SAVINGS_CSV: &str = "/api/savings.csv";

/// The enforcement audit log as CSV (`enforcement::download`).
pub const ENFORCEMENT_AUDIT_CSV: &str = "/api/enforcement_audit.csv";

/// The CSV download (`/api/export.csv`) of `range`, daily, grouped by `group_by` (keys
/// joined by commas, each already valid), in `metric`.
pub fn export_href(range: DateRange, group_by: &str, metric: Metric) -> String {
    format!(
        "/api/export.csv?from={}&to={}&group_by={group_by}&metric={}",
        range.from,
        range.to,
        metric.key()
    )
}
