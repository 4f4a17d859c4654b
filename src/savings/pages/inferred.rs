//! A recommendation resting on a workload read from the bill: what it rests on, how sure it
//! is, and (admins, the team's leads) one click to confirm it or pick the right one.

use leptos::prelude::*;

use crate::savings::model::{Inferred, Workload};
use crate::savings::server_fns::ConfirmWorkload;

#[component]
pub fn InferredWorkload(
    inferred: Inferred,
    project: String,
    may_confirm: bool,
    confirm: ServerAction<ConfirmWorkload>,
) -> impl IntoView {
    let label = format!("Workload of {}", crate::format::tag_label(&project));
    let options = Workload::ALL
        .into_iter()
        .filter(|w| *w != Workload::Unknown)
        .map(|w| view! { <option value=w.key() selected=w == inferred.workload>{w.key()}</option> })
        .collect_view();
    let summary = format!("{}? ({})", inferred.workload.key(), inferred.confidence.key());
    let about = format!("Inferred workload of {}", crate::format::tag_label(&project));
    view! {
        <details class="inferred" data-testid="inferred" data-confidence=inferred.confidence.key()>
            <summary aria-label=about>{summary}</summary>
            <p class="hint">{inferred.basis} " · " {inferred.confidence.key()} " confidence. Not in the totals until a lead confirms the workload."</p>
            {may_confirm.then(|| view! {
                <ActionForm action=confirm attr:class="confirm-workload" attr:data-testid="confirm-workload">
                    <input type="hidden" name="project" value=project/>
                    <select name="workload" aria-label=label>{options}</select>
                    <button type="submit">"Confirm workload"</button>
                </ActionForm>
            })}
        </details>
    }
}
