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
