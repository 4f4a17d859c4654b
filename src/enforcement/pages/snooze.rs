//! A stop's snooze on the Enforcement page: who holds it, until when and why, or the form
//! that snoozes it (admins, and leads of the project's team).

use leptos::prelude::*;

use crate::enforcement::model::ActionState;
use crate::enforcement::server_fns::SnoozeStop;

#[component]
pub fn SnoozeControl(state: ActionState, can_snooze: bool, snooze: ServerAction<SnoozeStop>) -> impl IntoView {
    if let (Some(until), Some(by)) = (state.snoozed_until.clone(), state.snoozed_by.clone()) {
        return view! {
            <p class="hint" data-testid=format!("snoozed-{}", state.id)>
                "Snoozed until " {until} " by " {by} ": " {state.snooze_reason.clone().unwrap_or_default()}
            </p>
        }
        .into_any();
    }
    let pending_or_executed = matches!(state.status.as_str(), "proposed" | "awaiting_approval" | "executed");
    if state.action != "stop" || !can_snooze || !pending_or_executed {
        return ().into_any();
    }
    let id = state.id;
    view! {
        <details data-testid=format!("snooze-{id}")>
            <summary>"Snooze"</summary>
            <ActionForm action=snooze attr:class="stack">
                <input type="hidden" name="id" value=id.to_string()/>
                <label>"Hours (1 to 72)" <input type="number" name="hours" min="1" max="72" value="24" required/></label>
                <label>"Why" <input type="text" name="reason" maxlength="500" required/></label>
                <button type="submit">
                    {if state.status == "executed" { "Snooze (restarts what it stopped)" } else { "Snooze" }}
                </button>
            </ActionForm>
        </details>
    }
    .into_any()
}
