//! The AWS Budgets panel on `/budgets`: the account's budgets, read-only, and the admins'
//! Sync button. Loaded on request, so the page never waits on AWS.

use leptos::prelude::*;

use crate::budgets::server_fns::{ListAwsBudgets, SyncAwsBudgets};
use crate::ui::table::DataTable;

#[component]
pub fn AwsBudgetsPanel(can_sync: bool) -> impl IntoView {
    let load = ServerAction::<ListAwsBudgets>::new();
    let sync = ServerAction::<SyncAwsBudgets>::new();
    view! {
        <section class="card" data-testid="aws-budgets">
            <h2>"AWS Budgets"</h2>
            <p class="hint">"burnrate keeps one AWS budget per burnrate budget, named burnrate-<id>, with its thresholds as AWS notifications "
                "(at most 10 email subscribers each; burnrate's own emails reach everyone). Other AWS budgets are shown, never changed."</p>
            <ActionForm action=load attr:class="inline"><button type="submit">"Show AWS budgets"</button></ActionForm>
            {can_sync.then(|| view! {
                <ActionForm action=sync attr:class="inline"><button type="submit">"Sync to AWS Budgets"</button></ActionForm>
            })}
            {move || sync.value().get().map(|result| match result {
                Ok(summary) => view! { <p data-testid="sync-result">{summary}</p> }.into_any(),
                Err(err) => crate::ui::page::error_text(&err).into_any(),
            })}
            {move || load.value().get().map(|result| match result {
                Err(err) => crate::ui::page::error_text(&err).into_any(),
                Ok(rows) if rows.is_empty() => view! { <p>"The AWS account has no budgets."</p> }.into_any(),
                Ok(rows) => view! {
                    <DataTable testid="aws-budgets-table" columns=&["AWS budget", "Limit", "Period", "Managed by"]>
                        {rows.into_iter().map(|row| view! {
                            <tr>
                                <td>{row.name}</td>
                                <td>{row.limit}</td>
                                <td>{row.time_unit}</td>
                                <td>{if row.managed { "burnrate" } else { "AWS (read-only here)" }}</td>
                            </tr>
                        }).collect_view()}
                    </DataTable>
                }.into_any(),
            })}
        </section>
    }
}
