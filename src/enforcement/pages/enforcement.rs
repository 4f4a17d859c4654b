//! `/enforcement`: recorded violations with each action's state and the admins' Approve,
//! Retry and Reverse buttons; the policies and their form; the action trail with its CSV.

use leptos::prelude::*;

use crate::enforcement::model::{ActionState, EnforcementData, TrailRow, ViolationRow};
use crate::enforcement::policy::Policy;
use crate::enforcement::server_fns::{ActOnAction, RemovePolicy, SavePolicy, SnoozeStop, get_enforcement};
use crate::format::{tag_label, usd};
use crate::ui::links::scope_href;
use crate::ui::page::PageHeader;
use crate::ui::table::DataTable;

#[component]
pub fn EnforcementPage() -> impl IntoView {
    let act = ServerAction::<ActOnAction>::new();
    let save = ServerAction::<SavePolicy>::new();
    let remove = ServerAction::<RemovePolicy>::new();
    let snooze = ServerAction::<SnoozeStop>::new();
    let saved = crate::ui::forms::saved_version(save);
    let data = crate::codec::resource(
        move || {
            (
                act.version().get(),
                saved.get(),
                remove.version().get(),
                snooze.version().get(),
            )
        },
        |_| get_enforcement(),
    );
    let act_error = move || {
        let snoozed = snooze.value().get().and_then(Result::err);
        act.value().get().and_then(Result::err).or(snoozed).map(|err| {
            view! { <p class="error" role="alert" data-testid="action-error">{err.to_string()}</p> }
        })
    };
    view! {
        <PageHeader title="Enforcement"/>
        <p class="hint">"Projects above their policy's spend limit without a valid approval, as recorded after each ingestion and by "
            <code>"burnrate enforce evaluate"</code> ". Dry-run policies only record what they would do; manual ones wait for an admin; automatic ones act at once."</p>
        {act_error}
        {crate::ui::page::loaded(data, move |view| view! { <Board view act save remove snooze/> })}
    }
}

#[component]
fn Board(
    view: EnforcementData,
    act: ServerAction<ActOnAction>,
    save: ServerAction<SavePolicy>,
    remove: ServerAction<RemovePolicy>,
    snooze: ServerAction<SnoozeStop>,
) -> impl IntoView {
    let is_admin = view.is_admin;
    let reversible: Vec<String> = view
        .violations
        .iter()
        .filter(|v| v.approved_now && v.actions.iter().any(|a| a.status == "executed" && a.action != "notify"))
        .map(|v| tag_label(&v.project).to_string())
        .collect();
    view! {
        {(!reversible.is_empty()).then(|| view! {
            <p class="notice" role="status" data-testid="reversal-offer">
                "Approved since their actions ran: " {reversible.join(", ")} ". The enforcement loop lifts their flags and stops within a minute; reverse them below to do it now."
            </p>
        })}
        {(!view.unjustified.is_empty()).then(|| view! {
            <div class="notice" role="status" data-testid="unjustified-stops">
                <p><strong>"Stops still in force that are no longer justified"</strong>
                    " (lifted at the next pass; one AWS refused to undo stays here until an admin reverses it):"</p>
                <ul>
                    {view.unjustified.iter().map(|(id, project, why)| view! {
                        <li data-id=id.to_string()>{tag_label(project).to_string()} ": " {why.clone()}</li>
                    }).collect_view()}
                </ul>
            </div>
        })}
        <h2>"Violations"</h2>
        <Violations rows=view.violations is_admin act snooze/>
        <h2>"Policies"</h2>
        <Policies policies=view.policies is_admin remove/>
        {is_admin.then(|| view! { <super::policy_form::PolicyForm teams=view.teams action=save/> })}
        <h2>"Audit log"</h2>
        <ActionTrail rows=view.trail/>
    }
}

/// The badge enforcement's flag action puts on cost pages; nothing when `projects` is empty.
#[component]
pub fn FlagBadge(projects: Vec<String>) -> impl IntoView {
    (!projects.is_empty()).then(|| {
        let links = projects
            .into_iter()
            .map(|p| view! { <a href=scope_href("projects", &p)>{tag_label(&p).to_string()}</a> " " })
            .collect_view();
        view! {
            <p class="flag-badge" role="status" data-testid="flag-badge">
                <strong>"Flagged: "</strong> "over the spend limit without a valid approval: " {links}
                <a href="/enforcement">"See enforcement"</a>
            </p>
        }
    })
}

fn action_buttons(state: &ActionState, approved_now: bool, act: ServerAction<ActOnAction>) -> impl IntoView + use<> {
    let step = match (state.status.as_str(), state.action.as_str()) {
        ("awaiting_approval", _) if state.mode != "dry-run" => Some(("approve", "Approve")),
        ("failed", _) if state.mode != "dry-run" => Some(("retry", "Retry")),
        ("executed", "flag" | "stop") => Some((
            "reverse",
            if approved_now {
                "Reverse (approved since)"
            } else {
                "Reverse"
            },
        )),
        _ => None,
    };
    let id = state.id;
    step.map(move |(step, label)| {
        view! {
            <ActionForm action=act attr:class="inline">
                <input type="hidden" name="id" value=id.to_string()/>
                <input type="hidden" name="step" value=step/>
                <button type="submit" data-testid=format!("{step}-{id}")>{label}</button>
            </ActionForm>
        }
    })
}

#[component]
fn Violations(
    rows: Vec<ViolationRow>,
    is_admin: bool,
    act: ServerAction<ActOnAction>,
    snooze: ServerAction<SnoozeStop>,
) -> impl IntoView {
    if rows.is_empty() {
        return view! { <p data-testid="no-violations">"No violations recorded."</p> }.into_any();
    }
    view! {
        <DataTable testid="violations-table" columns=&["Project", "Team", "Period", "Spend", "Limit", "Reason", "Actions", "Last seen"]>
            {rows.into_iter().map(|row| {
                let (approved_now, can_snooze) = (row.approved_now, row.can_snooze);
                let actions = row.actions.into_iter().map(|state| view! {
                    <li data-testid="action" data-action=state.action.clone() data-status=state.status.clone() data-id=state.id.to_string()>
                        <strong>{state.action.clone()}</strong> " " <span class=format!("status status-{}", state.status)>{state.status.replace('_', " ")}</span>
                        " (" {state.mode.clone()} ")"
                        {state.last_message.clone().map(|m| view! { <br/><small>{m}</small> })}
                        {is_admin.then(|| action_buttons(&state, approved_now, act))}
                        <super::snooze::SnoozeControl state=state.clone() can_snooze snooze/>
                        <super::stop_resources::StopResources resources=state.resources.clone()
                            open=!matches!(state.status.as_str(), "proposed" | "awaiting_approval")/>
                    </li>
                }).collect_view();
                view! {
                    <tr data-testid="violation-row">
                        <th scope="row"><a href=scope_href("projects", &row.project)>{tag_label(&row.project).to_string()}</a></th>
                        <td>{row.team}</td>
                        <td>{row.period_start.to_string()}</td>
                        <td class="num">{usd(row.spend)}</td>
                        <td class="num">{usd(row.limit)}</td>
                        <td>{row.reason.replace('_', " ")}</td>
                        <td><ul class="actions">{actions}</ul></td>
                        <td>{row.last_seen}</td>
                    </tr>
                }
            }).collect_view()}
        </DataTable>
    }
    .into_any()
}

#[component]
fn Policies(policies: Vec<Policy>, is_admin: bool, remove: ServerAction<RemovePolicy>) -> impl IntoView {
    view! {
        <DataTable testid="policies-table" columns=&["Applies to", "Limit", "Period", "Judged on", "Actions", "Mode", "What stop does", ""]>
            {policies.into_iter().map(|p| {
                let stop = p.stop.as_ref().map(|s| match s.stop_type.as_str() {
                    _ if s.on_resources() => format!(
                        "the project's {} in {}{}",
                        s.resources.join(", ").replace('_', " "),
                        if s.regions.is_empty() { "BURNRATE_AWS_REGIONS".to_string() } else { s.regions.join(", ") },
                        s.account.as_ref().map(|a| format!(", account {a}")).unwrap_or_default()
                    ) + if s.allow_instance_store {
                        "; instance-store data may be erased"
                    } else {
                        "; instances with instance store left running"
                    } + &if s.managed_by_tags.is_empty() { String::new() } else {
                        format!("; also left running: instances tagged {}", s.managed_by_tags.join(", "))
                    } + &if s.iam_roles.is_empty() { String::new() } else {
                        let policy = if s.iam_policy_arn.is_empty() { "the project's own deny policy" } else { s.iam_policy_arn.as_str() };
                        format!("; relaunch denied: {policy} on {}", s.iam_roles.join(", "))
                    },
                    "APPLY_IAM_POLICY" => format!("deny policy {} on {}", s.iam_policy_arn, s.iam_roles.join(", ")),
                    _ => format!("stop {} in {}", s.instance_ids.join(", "), s.instance_region),
                }).unwrap_or_else(|| "—".into());
                let team = p.team.clone();
                view! {
                    <tr data-testid="policy-row">
                        <th scope="row">{p.team.clone().unwrap_or_else(|| "Org default".into())}</th>
                        <td class="num">{usd(p.limit)}</td>
                        <td>{p.period}</td>
                        <td data-testid="policy-metric">{p.metric.key()}</td>
                        <td>{p.actions.join(", ")}</td>
                        <td data-testid="policy-mode">{p.mode}</td>
                        <td>{stop}</td>
                        <td>{(is_admin && team.is_some()).then(|| view! {
                            <ActionForm action=remove attr:class="inline">
                                <input type="hidden" name="team" value=team.clone().unwrap_or_default()/>
                                <button type="submit" class="danger">"Use the org default"</button>
                            </ActionForm>
                        })}</td>
                    </tr>
                }
            }).collect_view()}
        </DataTable>
    }
}

#[component]
fn ActionTrail(rows: Vec<TrailRow>) -> impl IntoView {
    view! {
        <p class="hint">"Every proposal, approval, execution, reversal and failure; nothing is ever deleted. The latest 200 are shown. "
            <a download href=crate::ui::links::ACTION_TRAIL_CSV data-testid="audit-csv">"Download the whole log (CSV)"</a></p>
        <DataTable testid="audit-table" columns=&["When (UTC)", "Who", "Event", "Project", "Action", "AWS request id", "Response"]>
            {rows.into_iter().map(|r| view! {
                <tr data-testid="audit-row" data-event=r.event.clone()>
                    <td>{r.at}</td>
                    <td>{r.actor}</td>
                    <td>{r.event.clone()}</td>
                    <td>{tag_label(&r.project).to_string()}</td>
                    <td>{r.action} " #" {r.action_id}</td>
                    <td><code>{r.aws_request_id.unwrap_or_default()}</code></td>
                    <td>{r.response.unwrap_or_default()}</td>
                </tr>
            }).collect_view()}
        </DataTable>
    }
}
