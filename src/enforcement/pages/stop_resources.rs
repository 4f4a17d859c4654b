//! The resources a stop found or acted on, under its action on the Enforcement page: what
//! a dry-run or manual stop would touch, and what became of each resource once it ran.

use leptos::prelude::*;

use crate::enforcement::model::StopResource;
use crate::format::usd;
use crate::ui::table::DataTable;

/// What each kind is called on the page, and what a stop does to it.
fn kind_label(kind: &str) -> &'static str {
    match kind {
        "ec2" => "EC2 instance",
        "notebook" => "SageMaker notebook",
        "training_job" => {
            "SageMaker training job (stopping loses progress since its last checkpoint; it cannot be restarted)"
        }
        "processing_job" => "SageMaker processing job (cannot be restarted)",
        "endpoint" => "SageMaker endpoint (deleted; reversal creates it again from its config)",
        "iam_role" => "IAM role (the deny policy is attached, so it cannot launch GPUs; reversal detaches it)",
        _ => "resource",
    }
}

/// Folded while the stop is only a proposal, so a long list of violations stays readable on
/// any screen; open once it acts, when each resource's state is what the reader came for.
#[component]
pub fn StopResources(resources: Vec<StopResource>, open: bool) -> impl IntoView {
    (!resources.is_empty()).then(|| {
        let skipped = resources.iter().filter(|r| r.status == "skipped").count();
        let summary = match (resources.len(), skipped) {
            (1, 0) => "1 resource".to_string(),
            (n, 0) => format!("{n} resources"),
            (n, s) => format!("{n} resources, {s} left running"),
        };
        view! {
            <details class="stop-resources" data-testid="stop-resources-details" open=open>
            <summary>{summary}</summary>
            <DataTable testid="stop-resources" columns=&["Resource", "Where", "Instance type", "GPUs", "$/hour", "Age", "User", "Status"]>
                {resources.into_iter().map(|r| {
                    let (id, region, status) = (r.resource_id.clone(), r.region.clone(), r.status.clone());
                    view! {
                    <tr data-testid="stop-resource" data-id=id data-status=status data-region=region>
                        <td><span title=kind_label(&r.kind)>{r.kind.replace('_', " ")}</span> " " <code>{r.resource_id}</code></td>
                        <td>{r.region} {(!r.account.is_empty()).then(|| view! { <br/><small>"account " {r.account}</small> })}</td>
                        <td>{r.instance_type}</td>
                        <td class="num">{r.gpus.normalize().to_string()}</td>
                        <td class="num">{r.usd_per_hour.map(usd).unwrap_or_else(|| "unknown".into())}</td>
                        <td class="num">{r.age_hours.map(|h| if h < 48 { format!("{h} h") } else { format!("{} d", h / 24) }).unwrap_or_default()}</td>
                        <td>{r.user.unwrap_or_default()}</td>
                        <td>
                            <span class=format!("status status-{}", r.status)>{r.status.replace('_', " ")}</span>
                            {r.note.map(|n| view! { <br/><small>{n}</small> })}
                        </td>
                    </tr>
                    }
                }).collect_view()}
            </DataTable>
            </details>
        }
    })
}
