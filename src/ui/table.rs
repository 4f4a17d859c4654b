//! Table pieces shared by every page.

use leptos::prelude::*;

/// A table's header row of plain column names.
#[component]
pub fn TableHead(columns: &'static [&'static str]) -> impl IntoView {
    view! {
        <thead>
            <tr>{columns.iter().map(|name| view! { <th scope="col">{*name}</th> }).collect_view()}</tr>
        </thead>
    }
}

/// A data table: its header of plain column names and a body of the rows it is given.
#[component]
pub fn DataTable(
    /// The `data-testid` the browser tests find the table by.
    #[prop(optional)]
    testid: Option<&'static str>,
    columns: &'static [&'static str],
    children: Children,
) -> impl IntoView {
    view! {
        <table class="data" data-testid=testid>
            <TableHead columns/>
            <tbody>{children()}</tbody>
        </table>
    }
}
