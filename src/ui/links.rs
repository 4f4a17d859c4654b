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
/// The monthly savings report as CSV, and as printable HTML (`?month=2026-11`).
pub const SAVINGS_REPORT_CSV: &str = "/api/savings/report.csv";
pub const SAVINGS_REPORT_HTML: &str = "/api/savings/report.html";

/// The enforcement action trail as CSV (`enforcement::download`).
pub const ACTION_TRAIL_CSV: &str = "/api/enforcement_audit.csv";

/// `/teams/<name>` or `/projects/<name>` narrowed to one AWS account when `account` is set,
/// so following a link keeps the page's `?account=`.
pub fn scope_href_in(kind: &str, name: &str, account: Option<&str>) -> String {
    format!("{}{}", scope_href(kind, name), account_query('?', account))
}

/// `?account=ID` (or `&account=ID` after other parameters), or nothing for every account.
pub fn account_query(separator: char, account: Option<&str>) -> String {
    account.map_or(String::new(), |id| format!("{separator}account={}", url_encode(id)))
}

/// The CSV download (`/api/export.csv`) of `range`, daily, grouped by `group_by` (keys
/// joined by commas, each already valid), in `metric`, in one AWS account when `account`
/// is set.
pub fn export_href(range: DateRange, group_by: &str, metric: Metric, account: Option<&str>) -> String {
    format!(
        "/api/export.csv?from={}&to={}&group_by={group_by}&metric={}{}",
        range.from,
        range.to,
        metric.key(),
        account_query('&', account)
    )
}
