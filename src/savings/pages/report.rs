//! `/savings/report?month=2026-11`: the month's savings for finance: proposed, accepted and
//! realised by lever and by team, against the GPU spend, with before and after per lever;
//! the same as CSV and as a printable document.

use leptos::prelude::*;
use leptos_router::components::Form;
use leptos_router::hooks::use_query_map;

use crate::format::{percent_value, url_encode, usd};
use crate::savings::model::SavingsReport;
use crate::savings::server_fns::get_savings_report;
use crate::ui::links::{SAVINGS_REPORT_CSV, SAVINGS_REPORT_HTML};
use crate::ui::page::{PageHeader, loaded};
use crate::ui::table::DataTable;

#[component]
pub fn SavingsReportPage() -> impl IntoView {
    let query = use_query_map();
    let data = crate::codec::resource(move || query.read().get("month"), get_savings_report);
    view! {
        <PageHeader title="Savings report"/>
        <p class="hint">"For one month (UTC): the GPU spend; what is proposed (open now, compounded so a project's never passes its spend); "
            "what was accepted in the month (a month's worth each, what it adds after the others it was proposed with); and what was realised: dollars saved on the month's settled days, "
            "each group of changes on the same spend measured once, against its 30 days before its first change, for a fixed 90 days after its last (never re-based; docs/SAVINGS.md). "
            <a href="/savings">"Recommendations"</a> "."</p>
        {move || loaded(data, |report| view! { <ReportBody report/> })}
    }
}

fn share(report: &SavingsReport, amount: rust_decimal::Decimal) -> String {
    report
        .share_of_spend(amount)
        .map(|s| percent_value(s * rust_decimal::Decimal::ONE_HUNDRED))
        .unwrap_or_else(|| "–".into())
}

#[component]
fn ReportBody(report: SavingsReport) -> impl IntoView {
    let month = crate::period::month_label(report.month);
    let link = |base: &str| format!("{base}?month={}", url_encode(&month));
    let (csv_href, html_href) = (link(SAVINGS_REPORT_CSV), link(SAVINGS_REPORT_HTML));
    let levers = report
        .levers
        .iter()
        .map(|l| {
            view! {
                <tr data-testid="report-lever" data-kind=l.kind.key()>
                    <th scope="row">{l.kind.label()}</th>
                    <td class="num">{usd(l.proposed)}</td>
                    <td class="num">{usd(l.accepted)}</td>
                    <td class="num" data-testid="lever-realised">{usd(l.realised)}</td>
                    <td class="num">{l.before.map(usd).unwrap_or_default()}</td>
                    <td class="num">{l.after.map(usd).unwrap_or_default()}</td>
                    <td class="num" data-testid="lever-change">{l.change().map(|c| percent_value(c * rust_decimal::Decimal::ONE_HUNDRED)).unwrap_or_default()}</td>
                </tr>
            }
        })
        .collect_view();
    let teams = report
        .teams
        .iter()
        .map(|t| {
            let name = if t.team.is_empty() {
                "Unassigned".to_string()
            } else {
                t.team.clone()
            };
            view! {
                <tr data-testid="report-team">
                    <th scope="row">{name}</th>
                    <td class="num">{usd(t.gpu_spend)}</td>
                    <td class="num">{usd(t.proposed)}</td>
                    <td class="num">{usd(t.accepted)}</td>
                    <td class="num">{usd(t.realised)}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <Form method="GET" action="/savings/report" attr:class="filters">
            <label>"Month " <input type="month" name="month" value=month.clone() required/></label>
            <button type="submit">"Show"</button>
            <a href=csv_href rel="external" data-testid="report-csv">"Download CSV"</a>
            <a href=html_href rel="external" target="_blank" data-testid="report-html">"Printable"</a>
        </Form>
        <section class="cards" aria-label="Totals">
            <div class="card"><h2>"GPU spend"</h2><p class="figure" data-testid="report-gpu-spend">{usd(report.gpu_spend)}</p>
                <p class="hint">{report.spend_days()}</p></div>
            <div class="card"><h2>"Proposed"</h2><p class="figure" data-testid="report-proposed">{usd(report.proposed)}</p><p class="hint">{format!("a month, {} of GPU spend", share(&report, report.proposed))}</p></div>
            <div class="card"><h2>"Accepted"</h2><p class="figure" data-testid="report-accepted">{usd(report.accepted)}</p><p class="hint">{format!("a month, {} of GPU spend", share(&report, report.accepted))}</p></div>
            <div class="card"><h2>"Realised"</h2><p class="figure" data-testid="report-realised">{usd(report.realised)}</p><p class="hint">{format!("in the month, {} of GPU spend; {}", share(&report, report.realised), report.settled_days())}</p></div>
        </section>
        {report.held_back_note().map(|note| view! { <p class="hint" data-testid="report-held-back">{note}</p> })}
        <h2>"By lever"</h2>
        <DataTable testid="report-levers" columns=&["Lever", "Proposed", "Accepted", "Realised", "Before, per 30 days", "After, per 30 days", "Change"]>{levers}</DataTable>
        <h2>"By team"</h2>
        <DataTable testid="report-teams" columns=&["Team", "GPU spend", "Proposed", "Accepted", "Realised"]>{teams}</DataTable>
    }
}
