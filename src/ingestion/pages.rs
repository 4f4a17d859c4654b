//! `/ingestion`: the schedule's state and the recent runs with their status, size and cost.

use leptos::prelude::*;

use super::api::list_runs;
use super::model::RunSummary;
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
                                    <td class="num" data-testid="grain-difference" title="The largest daily difference between the four unfiltered group-by queries' totals: Cost Explorer rounds each group on its own. Runs fail above USD 0.01.">
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
