//! `/admin/audit`: the newest changes first.

use leptos::prelude::*;

use super::model::AuditEntry;
use super::server_fns::list_audit;
use crate::ui::page::PageHeader;
use crate::ui::table::DataTable;

#[component]
pub fn AuditPage() -> impl IntoView {
    let entries = crate::codec::resource(|| (), |_| list_audit(None));
    view! {
        <PageHeader title="Audit log"/>
        {crate::ui::page::loaded(entries, |list: Vec<AuditEntry>| match list.is_empty() {
                    true => view! { <crate::ui::page::EmptyState><p>"No changes recorded yet."</p></crate::ui::page::EmptyState> }.into_any(),
                    false => view! {
                        <DataTable testid="audit-table" columns=&["When", "Who", "Action", "Subject", "Details"]>
                            {list.into_iter().map(|e| view! {
                                <tr data-testid="audit-row">
                                    <td>{e.at}</td>
                                    <td>{e.actor}</td>
                                    <td>{e.action}</td>
                                    <td>{e.subject}</td>
                                    <td><code>{e.details}</code></td>
                                </tr>
                            }).collect_view()}
                        </DataTable>
                    }.into_any(),
        })}
    }
}
