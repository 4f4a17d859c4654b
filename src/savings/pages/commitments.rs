//! The Savings page's commitments section: what the organisation already owns and how much of
//! it is used, every purchase option on each family's uncovered baseline with its break-even
//! month, and AWS's own Savings Plans recommendation beside burnrate's.

use leptos::prelude::*;

use crate::format::{count, percent_value, quantity, usd, usd_precise};
use crate::savings::model::commitments::{AwsRecommendation, Commitments, FamilyCommitment, OwnedCommitment};
use crate::ui::table::DataTable;

fn share(value: rust_decimal::Decimal) -> String {
    percent_value(value * rust_decimal::Decimal::ONE_HUNDRED)
}

#[component]
pub fn CommitmentsSection(commitments: Commitments) -> impl IntoView {
    let read = match commitments.read {
        Some((from, to)) => format!(
            "Owned Savings Plans and Reserved Instances as Cost Explorer reported them from {from} to {}.",
            to.pred_opt().unwrap_or(to)
        ),
        None => "Owned Savings Plans and Reserved Instances have not been read from Cost Explorer yet: they are read after ingestion, at most every 20 hours, unless BURNRATE_COMMITMENTS=off. Until then nothing owned is subtracted.".to_string(),
    };
    view! {
        <section aria-label="Commitments" data-testid="commitments">
            <h2>"Commitments"</h2>
            <p class="hint" data-testid="commitments-read">{read} " Commitments belong to the whole organisation: the team and account filters above do not narrow them."</p>
            {commitments.read_problem.map(|p| view! {
                <p class="error" role="alert" data-testid="commitments-problem">"The last read failed; the figures below are the last good ones. " {p}</p>
            })}
            {(!commitments.skipped.is_empty()).then(|| view! {
                <ul class="notice" data-testid="commitments-skipped">
                    {commitments.skipped.into_iter().map(|why| view! { <li>{why}</li> }).collect_view()}
                </ul>
            })}
            <OwnedTable rows=commitments.owned/>
            <FamilyOptions families=commitments.families/>
            <AwsBeside rows=commitments.aws/>
        </section>
    }
}

#[component]
fn OwnedTable(rows: Vec<OwnedCommitment>) -> impl IntoView {
    if rows.is_empty() {
        return view! { <p class="hint" data-testid="owned-empty">"No Savings Plan or Reserved Instance reported in the period."</p> }.into_any();
    }
    let body = rows
        .into_iter()
        .map(|o| {
            let used = o.utilisation().map(share).unwrap_or_default();
            let flag = o.underused.then_some(
                "underused: in some hours nothing eligible ran for it to cover; no more of this kind is advised until it is used",
            );
            view! {
                <tr data-testid="owned-row" data-underused=o.underused.to_string()>
                    <td>{o.offer.label()}</td>
                    <td><code>{o.id}</code></td>
                    <td>{o.instance_type}</td>
                    <td class="num">{usd(o.commitment)}</td>
                    <td class="num" data-testid="owned-used">{used}</td>
                    <td class="num">{usd(o.unused_per_30_days)}</td>
                    <td class="num">{usd(o.net_savings)}</td>
                    <td>{flag}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <DataTable testid="owned-table" columns=&["Owned", "Plan type or reservation", "Instance type", "Commitment in the period", "Used", "Unused per 30 days", "Saved against on-demand", ""]>{body}</DataTable>
    }
    .into_any()
}

#[component]
fn FamilyOptions(families: Vec<FamilyCommitment>) -> impl IntoView {
    families
        .into_iter()
        .map(|f| {
            let covered_all = f.to_commit <= rust_decimal::Decimal::ZERO;
            let summary = if covered_all {
                format!(
                    "{}: steady baseline {} instances, all covered by owned commitments ({} instances); nothing to commit",
                    f.family,
                    quantity(f.baseline, 2),
                    quantity(f.covered, 2),
                )
            } else {
                format!(
                    "{}: steady baseline {} instances at {}/h each, {} instances covered by owned commitments; burnrate would commit {} instances ({}/h on demand)",
                    f.family,
                    quantity(f.baseline, 2),
                    usd_precise(f.on_demand_rate, 4),
                    quantity(f.covered, 2),
                    quantity(f.to_commit, 2),
                    usd_precise(f.to_commit * f.on_demand_rate, 4),
                )
            };
            let rows = f
                .options
                .into_iter()
                .map(|o| {
                    let break_even = match o.break_even_month {
                        Some(1) => "month 1 (immediate)".to_string(),
                        Some(m) => format!("month {}", count(m)),
                        None => "never within the term".to_string(),
                    };
                    let source = if o.quoted { "quoted" } else { "default, not a quote" };
                    view! {
                        <tr data-testid="option-row">
                            <td>{o.terms.label()}</td>
                            <td class="num">{share(o.discount)} " (" {source} ")"</td>
                            <td class="num">{usd(o.upfront)}</td>
                            <td class="num">{usd_precise(o.recurring_per_hour, 4)} "/h"</td>
                            <td class="num">{usd(o.on_demand_per_year)} " → " {usd(o.committed_per_year)}</td>
                            <td class="num">{usd(o.saving_per_30_days)}</td>
                            <td data-testid="break-even">{break_even}</td>
                        </tr>
                    }
                })
                .collect_view();
            let table = (!covered_all).then(|| view! {
                <DataTable columns=&["Option", "Off on-demand", "Upfront", "Billed hourly", "A year: on-demand → committed", "Saving per 30 days", "Breaks even"]>{rows}</DataTable>
            });
            view! {
                <details class="family" data-testid="family-options" data-family=f.family.clone()>
                    <summary>{summary}</summary>
                    {f.held_back.map(|why| view! { <p class="hint" data-testid="held-back">{why}</p> })}
                    {table}
                </details>
            }
        })
        .collect_view()
}

#[component]
fn AwsBeside(rows: Vec<AwsRecommendation>) -> impl IntoView {
    (!rows.is_empty()).then(|| {
        let body = rows
            .into_iter()
            .map(|a| {
                view! {
                    <tr data-testid="aws-row">
                        <td><code>{a.plan_type}</code></td>
                        <td class="num">{usd_precise(a.hourly_commitment, 4)} "/h"</td>
                        <td class="num">{usd(a.monthly_saving)}</td>
                        <td class="num">{a.saving_share.map(share).unwrap_or_default()}</td>
                        <td class="num">{usd_precise(a.burnrate_hourly, 4)} "/h"</td>
                        <td>{a.difference}</td>
                    </tr>
                }
            })
            .collect_view();
        view! {
            <h3>"AWS's recommendation beside burnrate's"</h3>
            <DataTable testid="aws-table" columns=&["Plan type", "AWS: commit", "AWS: saving a month", "AWS: saving", "burnrate: commit", "Why they differ"]>{body}</DataTable>
        }
    })
}
