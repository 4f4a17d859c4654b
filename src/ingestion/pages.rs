//! `/ingestion`: the schedule's state and the recent runs with their status, size and cost.

use leptos::prelude::*;

use super::model::{ProjectedBill, RunSummary};
use super::server_fns::list_runs;
use crate::format::{count, usd, usd_precise};
use crate::ui::page::PageHeader;
use crate::ui::table::DataTable;

#[component]
pub fn IngestionPage() -> impl IntoView {
    let runs = crate::codec::resource(|| (), |_| list_runs());
    view! {
        <PageHeader title="Ingestion"/>
        {crate::ui::page::loaded(runs, move |overview| view! {
                        <p class=if overview.schedule.problem { "notice notice-problem" } else { "notice" } data-testid="schedule-status">
                            {overview.schedule.message}
                        </p>
                        <Bill bill=overview.bill/>
                        <RunsTable runs=overview.runs/>
                        <UnknownTypes types=overview.unknown_instance_types/>
                    })}
    }
}

#[component]
fn RunsTable(runs: Vec<RunSummary>) -> impl IntoView {
    if runs.is_empty() {
        return view! { <crate::ui::page::NoCostData/> }.into_any();
    }
    view! {
                        <DataTable testid="runs-table" columns=&["Started", "Trigger", "Status", "Window", "Days", "Rows", "Requests", "API cost", "Grain difference", "Duration", "Error"]>
                            {runs.into_iter().map(|run| view! {
                                <tr data-testid="run-row">
                                    <td>{run.started_at}</td>
                                    <td>{run.trigger}</td>
                                    <td><span class=format!("status status-{}", run.status)>{run.status.clone()}</span></td>
                                    <td>{run.window.unwrap_or_default()}</td>
                                    <td class="num">{run.days.map(count).unwrap_or_default()}</td>
                                    <td class="num">{count(run.rows_written)}</td>
                                    <td class="num">{count(run.requests)}</td>
                                    <td class="num">{usd(run.api_cost)}</td>
                                    <td class="num" data-testid="grain-difference" title="The largest daily difference between the unfiltered queries' totals (four project grains and two account views): Cost Explorer rounds each group on its own. Runs fail above USD 0.01.">
                                        {run.grain_difference.map(|d| usd_precise(d, 10)).unwrap_or_default()}
                                    </td>
                                    <td class="num">{run.duration_seconds.map(|s| format!("{} s", count(s))).unwrap_or_else(|| "running".into())}</td>
                                    <td>{run.error.unwrap_or_default()}</td>
                                </tr>
                            }).collect_view()}
                        </DataTable>
    }
    .into_any()
}

/// The month's Cost Explorer bill at the current pace, with the product it comes from.
#[component]
fn Bill(bill: Option<ProjectedBill>) -> impl IntoView {
    bill.map(|b| {
        let reads = (b.requests_a_read > 0).then(|| {
            format!(
                ", plus {} commitments reads a day × {} days × {} requests × USD 0.01",
                b.reads_a_day,
                b.days,
                count(b.requests_a_read)
            )
        });
        view! {
            <p class="notice" data-testid="ce-bill">
                "Projected Cost Explorer bill for " {b.month.clone()} ": "
                <strong data-testid="ce-bill-usd">{usd(b.usd)}</strong>
                {format!(
                    " = {} runs a day × {} days × {} requests a run × USD 0.01{} ({}; requests a run is the median of the last 10 successful runs).",
                    b.runs_a_day,
                    b.days,
                    count(b.requests_a_run),
                    reads.unwrap_or_default(),
                    b.runs_basis
                )}
            </p>
        }
    })
}

#[component]
fn UnknownTypes(types: Vec<super::model::UnknownInstanceType>) -> impl IntoView {
    (!types.is_empty()).then(|| {
        view! {
            <section class="card" data-testid="unknown-instance-types">
                <h2>"Instance types missing from the GPU catalogue"</h2>
                <p class="hint">"Their spend is in every total, but not in GPU spend, GPU-hours or savings until "
                    <code>"catalogue/gpu_catalogue.csv"</code> " lists them."</p>
                <DataTable columns=&["Usage type", "Instance type", "Spend, last 30 days"]>
                    {types.into_iter().map(|t| view! {
                        <tr data-testid="unknown-type-row">
                            <td><code>{t.usage_type}</code></td>
                            <td><code>{t.instance_type}</code></td>
                            <td class="num">{usd(t.spend_30d)}</td>
                        </tr>
                    }).collect_view()}
                </DataTable>
            </section>
        }
    })
}
