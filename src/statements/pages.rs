//! The Statements page (`/statements`): each month with spend, its total, whether it is
//! final, and its statement for the whole organisation or one team, as CSV or printable HTML.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use super::server_fns::get_statements;
use crate::format::{url_encode, usd};
use crate::ui::aws_account_picker::{AccountNote, AccountPicker};
use crate::ui::links::account_query;
use crate::ui::page::{PageHeader, loaded};
use crate::ui::table::DataTable;

#[component]
pub fn StatementsPage() -> impl IntoView {
    let query = use_query_map();
    let data = crate::codec::resource(move || query.read().get("account"), get_statements);
    let team = RwSignal::new(String::new());
    view! {
        <PageHeader title="Statements"/>
        <p class="hint">"A month's chargeback statement per team: its projects' usage, its shares of shared-cost rules, credits, refunds, tax and the total, unblended and amortized, exact. "
            "Once a month has ended and its bill has closed (Cost Explorer no longer calls any of its days Estimated), its statement is frozen: later restatements show as an adjustment on the next month's. "
            "The same from the command line: " <code>"burnrate statement --month YYYY-MM [--team NAME] [--account ID] [--format csv|html]"</code> "."</p>
        {move || loaded(data, move |page| {
            let teams = page.teams.clone();
            let account = page.account.clone();
            view! {
                <div class="filters"><AccountPicker accounts=page.accounts.clone() current=page.account.clone()/></div>
                <AccountNote account=page.account.clone()/>
                {page.account.clone().map(|_| view! {
                    <p class="hint" data-testid="account-statement-note">"An account's statement is its part of the month's allocation, computed when asked: never frozen and without adjustments. The organisation's statement is the one charged."</p>
                })}
                <label>"Team "
                    <select data-testid="statement-team" on:change=move |ev| team.set(event_target_value(&ev))>
                        <option value="">"Every team"</option>
                        {teams.into_iter().map(|t| view! { <option value=t.clone()>{t.clone()}</option> }).collect_view()}
                        <option value="Unassigned">"Unassigned"</option>
                    </select>
                </label>
                <DataTable testid="statements-table" columns=&["Month", "Total (unblended)", "Status", "Statement"]>
                    {page.months.clone().into_iter().map(|m| {
                        let month = m.month.clone();
                        let account = account.clone();
                        let account_shown = account.is_some();
                        let href = move |format: &str| {
                            let team = team.get();
                            format!("/api/statement?month={}&format={format}{}{}", month,
                                if team.is_empty() { String::new() } else { format!("&team={}", url_encode(&team)) },
                                account_query('&', account.as_deref()))
                        };
                        let (csv, html) = (href.clone(), href);
                        view! {
                            <tr data-testid="statement-row">
                                <th scope="row">{m.month.clone()}</th>
                                <td class="num">{usd(m.total)}</td>
                                <td>{match (&account_shown, &m.frozen_at) {
                                    (true, _) => "the account's part, computed when opened".to_string(),
                                    (false, Some(at)) => format!("frozen {at}"),
                                    (false, None) => "provisional, or final and not yet opened".to_string(),
                                }}</td>
                                <td>
                                    <a download href=move || csv("csv")>"CSV"</a> " · "
                                    <a target="_blank" rel="noopener" href=move || html("html")>"Printable"</a>
                                </td>
                            </tr>
                        }
                    }).collect_view()}
                </DataTable>
            }
        })}
    }
}
