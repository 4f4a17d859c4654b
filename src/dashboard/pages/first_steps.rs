//! The Overview's "Next steps" for an admin: one line per step not done yet, each with
//! where to do it. Rendered on the server, so it reads the same without JavaScript.

use leptos::prelude::*;

use crate::dashboard::first_steps::{FirstSteps, IAM_POLICY, get_first_steps};
use crate::format::count;

#[component]
pub fn FirstStepsNote() -> impl IntoView {
    let steps = crate::codec::resource(|| (), |()| get_first_steps());
    view! {
        <Transition fallback=|| ()>
            {move || Suspend::new(async move {
                steps.await.ok().filter(FirstSteps::any).map(|steps| view! { <Steps steps/> })
            })}
        </Transition>
    }
}

#[component]
fn Steps(steps: FirstSteps) -> impl IntoView {
    let review = steps.review_violations().then(|| {
        let waiting = match (steps.awaiting_approval, steps.proposed) {
            (0, proposed) => format!("{} actions proposed in dry-run", count(proposed)),
            (awaiting, 0) => format!("{} actions await your approval", count(awaiting)),
            (awaiting, proposed) => format!(
                "{} actions await your approval and {} are proposed in dry-run",
                count(awaiting),
                count(proposed)
            ),
        };
        view! {
            <li data-testid="step-review-violations">
                <a href="/enforcement">"Review violations"</a>": " {waiting}
                ". Approve a project on the Approvals page, or choose a policy's mode."
            </li>
        }
    });
    view! {
        <section class="first-steps" data-testid="first-steps" aria-labelledby="first-steps-title">
            <h2 id="first-steps-title">"Next steps"</h2>
            <ul>
                {steps.connect_aws.then(|| view! {
                    <li data-testid="step-connect-aws">
                        "Connect AWS: give burnrate credentials (an IAM role, a profile, or keys) with this policy, run "
                        <code>"burnrate doctor"</code>" (it changes nothing and names any call the credentials cannot make), then run "
                        <code>"burnrate ingest"</code>" or wait for the schedule ("<a href="/ingestion">"Ingestion"</a>")."
                        <details>
                            <summary>"IAM policy to paste"</summary>
                            <pre data-testid="iam-policy">{IAM_POLICY}</pre>
                        </details>
                    </li>
                })}
                {steps.teams_as_code.then(|| view! {
                    <li data-testid="step-teams-as-code">
                        "Import teams as code: map projects and user tags to teams in YAML and run "
                        <code>"burnrate config import teams.yaml"</code>", or edit them on the "
                        <a href="/admin/teams">"Teams admin"</a>" page."
                    </li>
                })}
                {steps.set_budgets.then(|| view! {
                    <li data-testid="step-set-budgets">
                        "Set budgets: the demo's are examples. Create your own with 50/80/100 % thresholds on the "
                        <a href="/budgets">"Budgets"</a>" page."
                    </li>
                })}
                {review}
            </ul>
        </section>
    }
}
