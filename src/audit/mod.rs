//! The audit log: who changed what and when. Admins read it at `/admin/audit`.

#[cfg(feature = "ssr")]
mod store;

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::AppError;
use crate::ui::page::PageHeader;
use crate::ui::table::TableHead;

/// One audit entry as shown to admins.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEntry {
    pub id: i64,
    pub at: String,
    pub actor: String,
    pub action: String,
    pub subject: String,
    pub details: String,
}

/// The newest entries first, at most `limit` (1–1000, default 200).
#[server(prefix = "/api", endpoint = "admin/audit")]
pub async fn list_audit(limit: Option<i64>) -> Result<Vec<AuditEntry>, AppError> {
    crate::error::with_status(
        async {
            crate::auth::require_admin()?;
            let limit = limit.unwrap_or(200);
            if !(1..=1000).contains(&limit) {
                return Err(AppError::invalid("limit", "expected a number from 1 to 1000"));
            }
            Ok(store::recent(&crate::ctx::pool()?, limit).await?)
        }
        .await,
    )
}

#[component]
pub fn AuditPage() -> impl IntoView {
    let entries = crate::codec::resource(|| (), |_| list_audit(None));
    view! {
        <PageHeader title="Audit log"/>
        {crate::ui::page::loaded(entries, |list: Vec<AuditEntry>| match list.is_empty() {
                    true => view! { <p class="empty">"No changes recorded yet."</p> }.into_any(),
                    false => view! {
                        <table class="data" data-testid="audit-table">
                            <TableHead columns=&["When", "Who", "Action", "Subject", "Details"]/>
                            <tbody>
                                {list.into_iter().map(|e| view! {
                                    <tr data-testid="audit-row">
                                        <td>{e.at}</td>
                                        <td>{e.actor}</td>
                                        <td>{e.action}</td>
                                        <td>{e.subject}</td>
                                        <td><code>{e.details}</code></td>
                                    </tr>
                                }).collect_view()}
                            </tbody>
                        </table>
                    }.into_any(),
        })}
    }
}
