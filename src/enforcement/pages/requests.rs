//! The Approvals page's requests: a lead's form to ask for a project's approval, and every
//! request with what became of it; admins approve (perhaps with another cap or last day) or
//! deny (saying why) each waiting one.

use leptos::prelude::*;

use crate::enforcement::model::ApprovalRequest;
use crate::enforcement::server_fns::{DecideApprovalRequest, RequestApproval};
use crate::format::{tag_label, usd};
use crate::ui::table::DataTable;

#[component]
pub fn RequestForm(action: ServerAction<RequestApproval>) -> impl IntoView {
    let result: Signal<_> = action.value().into();
    let field_error = move |field| crate::ui::forms::field_error(result, field);
    view! {
        <details class="card" data-testid="request-approval">
            <summary>"Ask for an approval"</summary>
            <p class="hint">"For a project of one of your teams. An admin approves or denies it; you see the answer here."</p>
            <ActionForm action attr:class="stack" attr:novalidate=true>
                <label>"Project (tag value)" <input type="text" name="project" required/></label>
                {field_error("project")}
                <label>"Cap per period (USD)" <input type="text" name="cap" inputmode="decimal" required/></label>
                {field_error("cap")}
                <label>"Until (last day, UTC)" <input type="date" name="until" required/></label>
                {field_error("until")}
                <label>"Reason" <input type="text" name="reason" required maxlength="1000"/></label>
                {field_error("reason")}
                <crate::ui::forms::FormError result beside_fields=true/>
                <button type="submit">"Request approval"</button>
            </ActionForm>
        </details>
    }
}

#[component]
pub fn RequestsTable(
    requests: Vec<ApprovalRequest>,
    /// The approval in force per project, as "$cap until day".
    in_force: Vec<(String, String)>,
    is_admin: bool,
    decide: ServerAction<DecideApprovalRequest>,
) -> impl IntoView {
    if requests.is_empty() {
        return view! { <p data-testid="no-requests">"No approval has been requested."</p> }.into_any();
    }
    let result: Signal<_> = decide.value().into();
    view! {
        <crate::ui::forms::FormError result/>
        <DataTable testid="requests-table" columns=&["Project", "Cap", "Until", "Reason", "Requested", "In force now", "Decision", ""]>
            {requests.into_iter().map(|r| {
                let pending = r.status == "pending";
                let outcome = match (r.status.as_str(), &r.decided_by, &r.decided_at) {
                    ("approved", Some(by), Some(at)) => format!(
                        "approved by {by}, {at}: {} until {}",
                        r.approved_cap.map(usd).unwrap_or_default(),
                        r.approved_until.map(|d| d.to_string()).unwrap_or_default()
                    ),
                    ("denied", Some(by), Some(at)) => format!("denied by {by}, {at}"),
                    _ => "waiting for an admin".to_string(),
                };
                let note = r.decision_note.clone().unwrap_or_default();
                let now = in_force
                    .iter()
                    .find(|(p, _)| *p == r.project)
                    .map_or_else(|| "none".to_string(), |(_, a)| a.clone());
                let id = r.id.to_string();
                view! {
                    <tr data-testid="request-row" data-status=r.status.clone() data-project=r.project.clone()>
                        <th scope="row">{tag_label(&r.project).to_string()}</th>
                        <td class="num">{usd(r.cap)}</td>
                        <td>{r.until.to_string()}</td>
                        <td>{r.reason.clone()}</td>
                        <td>{r.requested_by.clone()} ", " {r.requested_at.clone()}</td>
                        <td data-testid="request-in-force">{now}</td>
                        <td>{outcome} {(!note.is_empty()).then(|| view! { <br/><small>{note}</small> })}</td>
                        <td>{(is_admin && pending).then(|| view! { <Decide id decide/> })}</td>
                    </tr>
                }
            }).collect_view()}
        </DataTable>
    }
    .into_any()
}

/// Approve (the request's cap and day unless changed) or deny with a note.
#[component]
fn Decide(id: String, decide: ServerAction<DecideApprovalRequest>) -> impl IntoView {
    let approve_id = id.clone();
    view! {
        <ActionForm action=decide attr:class="inline" attr:data-testid="approve-request">
            <input type="hidden" name="id" value=approve_id/>
            <input type="hidden" name="decision" value="approve"/>
            <input type="text" name="cap" inputmode="decimal" placeholder="cap (as asked)" aria-label="Approved cap (USD), if not as asked"/>
            <input type="date" name="until" aria-label="Approved until, if not as asked"/>
            <label title="Otherwise an approval granted since with a larger cap or a later last day is kept, and this answers why">
                <input type="checkbox" name="replace_newer" value="on"/>" replace a newer approval"
            </label>
            <button type="submit">"Approve"</button>
        </ActionForm>
        <ActionForm action=decide attr:class="inline" attr:data-testid="deny-request">
            <input type="hidden" name="id" value=id/>
            <input type="hidden" name="decision" value="deny"/>
            <input type="text" name="note" placeholder="why not" aria-label="Why it is denied" maxlength="1000"/>
            <button type="submit" class="danger">"Deny"</button>
        </ActionForm>
    }
}
