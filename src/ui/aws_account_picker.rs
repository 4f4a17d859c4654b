//! `?account=`: the linked-AWS-account narrowing every cost page offers, and the line that
//! says a page shows one account only. The page's other filters (period, metric, credits,
//! team) are kept, so narrowing and widening change nothing else.

use leptos::prelude::*;
use leptos_router::components::Form;
use leptos_router::hooks::{use_location, use_query_map};

use crate::format::url_encode;

/// The query parameters a change of account keeps (the Overview's team among them).
const KEPT: [&str; 7] = ["period", "month", "from", "to", "metric", "credits", "team"];

/// The current page's other filters, as (name, value). Read once, untracked: every page
/// that shows the picker reads its data through a resource keyed by all of these, so a
/// change of any of them renders the picker again with the new values.
fn kept() -> Vec<(&'static str, String)> {
    let query = use_query_map();
    let query = query.read_untracked();
    KEPT.into_iter()
        .filter_map(|key| query.get(key).filter(|v| !v.is_empty()).map(|v| (key, v)))
        .collect()
}

/// A select of the accounts Cost Explorer has named (`accounts`: ID and name), as a GET
/// form to the same page. Nothing while no account is known and none is chosen.
#[component]
pub fn AccountPicker(accounts: Vec<(String, String)>, current: Option<String>) -> impl IntoView {
    if accounts.is_empty() && current.is_none() {
        return ().into_any();
    }
    let path = use_location().pathname.get_untracked();
    let current = current.unwrap_or_default();
    let options = accounts
        .into_iter()
        .map(|(id, name)| {
            let label = if name.is_empty() {
                id.clone()
            } else {
                format!("{name} ({id})")
            };
            let selected = id == current;
            view! { <option value=id selected=selected>{label}</option> }
        })
        .collect_view();
    let hidden = kept()
        .into_iter()
        .map(|(name, value)| view! { <input type="hidden" name=name value=value/> })
        .collect_view();
    view! {
        <Form method="GET" action=path attr:class="inline" attr:data-testid="account-form">
            {hidden}
            <label>"AWS account " <select name="account" data-testid="account-select">
                <option value="" selected=current.is_empty()>"All accounts"</option>
                {options}
            </select></label>
            <button type="submit">"Show account"</button>
        </Form>
    }
    .into_any()
}

/// "Spend in AWS account … only", with a link to the same page for every account.
#[component]
pub fn AccountNote(account: Option<String>) -> impl IntoView {
    account.map(|id| {
        let path = use_location().pathname.get_untracked();
        let query: Vec<String> = kept()
            .into_iter()
            .map(|(name, value)| format!("{name}={}", url_encode(&value)))
            .collect();
        let every = match query.is_empty() {
            true => path,
            false => format!("{path}?{}", query.join("&")),
        };
        view! {
            <p class="hint" data-testid="account-note">"Spend in AWS account " {id} " only ("
                <a href=every data-testid="every-account">"every account"</a> ")."</p>
        }
    })
}
