//! `/approvals`: approved high-cost projects with their spend against the cap and the days
//! left, approval requests, their full history, and the admins' form.

use leptos::prelude::*;

use super::requests::{RequestForm, RequestsTable};
use crate::enforcement::model::ApprovalsData;
use crate::enforcement::server_fns::{
    DecideApprovalRequest, RequestApproval, RevokeApproval, SaveApproval, list_approvals,
};
use crate::format::{tag_label, usd};
use crate::ui::links::scope_href;
use crate::ui::page::PageHeader;
use crate::ui::table::DataTable;

#[component]
pub fn ApprovalsPage() -> impl IntoView {
    let save = ServerAction::<SaveApproval>::new();
    let revoke = ServerAction::<RevokeApproval>::new();
    let request = ServerAction::<RequestApproval>::new();
    let decide = ServerAction::<DecideApprovalRequest>::new();
    let saved = crate::ui::forms::saved_version(save);
    let requested = crate::ui::forms::saved_version(request);
    let decided = crate::ui::forms::saved_version(decide);
    let data = crate::codec::resource(
        move || (saved.get(), revoke.version().get(), requested.get(), decided.get()),
        |_| list_approvals(),
    );
    view! {
        <PageHeader title="Approved projects"/>
        <p class="hint">"Projects allowed to spend above the policy limit, up to their cap per period, through their expiry date (UTC). "
            "Kept as code too: the " <code>"approvals:"</code> " section of " <code>"burnrate config import"</code> "."</p>
        {crate::ui::page::loaded(data, move |view| view! { <ApprovalsBody view save revoke request decide/> })}
    }
}

#[component]
fn ApprovalsBody(
    view: ApprovalsData,
    save: ServerAction<SaveApproval>,
    revoke: ServerAction<RevokeApproval>,
    request: ServerAction<RequestApproval>,
    decide: ServerAction<DecideApprovalRequest>,
) -> impl IntoView {
    let is_admin = view.is_admin;
    let may_request = view.may_request;
    let today = view.today;
    let standing = view.standing;
    let requests = view.requests;
    // Beside each request, the approval in force now: deciding an old request must not take
    // back, unseen, what was granted since.
    let in_force: Vec<(String, String)> = view
        .current
        .iter()
        .map(|a| (a.project.clone(), format!("{} until {}", usd(a.cap), a.expires)))
        .collect();
    let current = if view.current.is_empty() {
        view! { <p data-testid="no-approvals">"No project is approved: every project is held to its policy limit."</p> }
            .into_any()
    } else {
        view! {
            <DataTable testid="approvals-table" columns=&["Project", "Approver", "Reason", "Cap per period", "Spend this period", "Used", "Expires", "Days left", "State", ""]>
                {view.current.into_iter().map(|a| {
                    let expired = a.expires < today;
                    let project = a.project.clone();
                    let now = standing.iter().find(|s| s.project == a.project);
                    let spend = now.map(|s| usd(s.spend)).unwrap_or_default();
                    let used = now
                        .map(|s| format!("{} %", (s.used * rust_decimal::Decimal::ONE_HUNDRED).round_dp(0)))
                        .unwrap_or_default();
                    let days_left = now.map(|s| s.days_left.max(0).to_string()).unwrap_or_default();
                    view! {
                        <tr data-testid="approval-row">
                            <th scope="row"><a href=scope_href("projects", &a.project)>{tag_label(&a.project).to_string()}</a></th>
                            <td>{a.approver}</td>
                            <td>{a.reason}</td>
                            <td class="num">{usd(a.cap)}</td>
                            <td class="num" data-testid="approval-spend">{spend}</td>
                            <td class="num" data-testid="approval-used">{used}</td>
                            <td>{a.expires.to_string()}</td>
                            <td class="num" data-testid="approval-days-left">{days_left}</td>
                            <td data-testid="approval-state">{if expired { "expired" } else { "in force" }}</td>
                            <td>{is_admin.then(|| view! {
                                <ActionForm action=revoke attr:class="inline">
                                    <input type="hidden" name="project" value=project/>
                                    <button type="submit" class="danger">"Revoke"</button>
                                </ActionForm>
                            })}</td>
                        </tr>
                    }
                }).collect_view()}
            </DataTable>
        }.into_any()
    };
    let history = view
        .history
        .into_iter()
        .map(|v| {
            view! {
                <tr data-testid="history-row">
                    <td>{tag_label(&v.approval.project).to_string()}</td>
                    <td class="num">{usd(v.approval.cap)}</td>
                    <td>{v.approval.expires.to_string()}</td>
                    <td>{v.approval.approver}</td>
                    <td>{v.created_by} ", " {v.created_at}</td>
                    <td>{match (v.ended_how, v.ended_by, v.ended_at) {
                        (Some(how), Some(by), Some(at)) => format!("{how} by {by}, {at}"),
                        _ => "current".to_string(),
                    }}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        {current}
        {is_admin.then(|| view! { <ApprovalForm action=save/> })}
        <h2>"Requests"</h2>
        {may_request.then(|| view! { <RequestForm action=request/> })}
        <RequestsTable requests in_force is_admin decide/>
        <details class="chart-table">
            <summary>"History: every version of every approval"</summary>
            <DataTable testid="approval-history" columns=&["Project", "Cap", "Expires", "Approver", "Recorded", "Ended"]>{history}</DataTable>
        </details>
    }
}

#[component]
fn ApprovalForm(action: ServerAction<SaveApproval>) -> impl IntoView {
    let result: Signal<_> = action.value().into();
    let field_error = move |field| crate::ui::forms::field_error(result, field);
    view! {
        <details class="card" data-testid="new-approval">
            <summary>"Approve a project (or change an approval)"</summary>
            <ActionForm action attr:class="stack" attr:novalidate=true>
                <label>"Project (tag value)" <input type="text" name="project" required/></label>
                {field_error("project")}
                <p class="hint">"You are its approver."</p>
                <label>"Reason" <input type="text" name="reason" required maxlength="1000"/></label>
                {field_error("reason")}
                <label>"Cap per period (USD)" <input type="text" name="cap" inputmode="decimal" required/></label>
                {field_error("cap")}
                <label>"Expires (last day, UTC)" <input type="date" name="expires" required/></label>
                {field_error("expires")}
                <crate::ui::forms::FormError result beside_fields=true/>
                <button type="submit">"Save approval"</button>
            </ActionForm>
        </details>
    }
}
