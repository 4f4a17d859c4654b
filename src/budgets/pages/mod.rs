//! The Budgets page (`/budgets`): every budget with spend, % used, forecast and status, and
//! a form for a new one; the budget page (`/budgets/:id`): its burn chart, thresholds,
//! recipients, alert history and edit form.

pub mod aws;

use leptos::prelude::*;
use leptos_router::hooks::use_params_map;

use crate::budgets::model::{BudgetData, BudgetLine};
use crate::budgets::server_fns::{DeleteBudget, RetryAlert, SaveBudget, get_budget, list_budgets};
use crate::budgets::{Budget, BudgetScope, BudgetStatus, ScopeChoices, Threshold};
use crate::error::AppError;
use crate::format::{count, tag_label, usd};
use crate::period::BudgetPeriod;
use crate::ui::chart::Chart;
use crate::ui::links::scope_href;
use crate::ui::page::PageHeader;
use crate::ui::table::DataTable;

/// AWS Budgets emails at most this many subscribers per notification.
const AWS_EMAIL_SUBSCRIBERS: usize = 10;

#[component]
pub fn BudgetsPage() -> impl IntoView {
    let save = ServerAction::<SaveBudget>::new();
    let saved = crate::ui::forms::saved_version(save);
    let data = crate::codec::resource(move || saved.get(), |_| list_budgets());
    view! {
        <PageHeader title="Budgets"/>
        <p class="hint">"Spend against each budget for its current calendar period (UTC). The status shows the highest threshold crossed; "
            "alerts go to the scope's team owners and the listed recipients, once per threshold per period."</p>
        {crate::ui::page::loaded(data, move |list| view! {
                        <BudgetTable lines=list.budgets/>
                        {let choices = list.choices.clone(); choices.any().then(|| view! {
                            <details class="card" data-testid="new-budget">
                                <summary>"New budget"</summary>
                                <BudgetForm budget=None choices=choices action=save/>
                            </details>
                        })}
                        <aws::AwsBudgetsPanel can_sync=list.can_sync/>
                    })}
    }
}

#[component]
fn BudgetTable(lines: Vec<BudgetLine>) -> impl IntoView {
    if lines.is_empty() {
        return view! {
            <crate::ui::page::EmptyState testid="no-budgets">
                <p>"No budgets yet. Create one below, or add a " <code>"budgets:"</code> " section to your config file and run "
                <code>"burnrate config import FILE"</code> "."</p>
            </crate::ui::page::EmptyState>
        }
        .into_any();
    }
    view! {
        <DataTable testid="budgets-table" columns=&["Budget", "Scope", "Period", "Budget (USD)", "Counts", "Spend", "Used", "Forecast", "Status"]>
            {lines.into_iter().map(|line| {
                let status = line.status;
                let spec = &status.budget.spec;
                view! {
                    <tr data-testid="budget-row">
                        <th scope="row"><a href=crate::ui::links::budget_href(status.budget.id)>{spec.name.clone()}</a></th>
                        <td><ScopeLink scope=spec.scope.clone()/></td>
                        <td>{format!("{} ({} – {})", spec.period.key(), status.period.from, status.period.last_day())}</td>
                        <td class="num">{usd(spec.amount)}</td>
                        <td data-testid="budget-counts" title=spec.counts()>{format!("{}, {}", spec.metric.key(), spec.credits.key())}</td>
                        <td class="num" data-testid="budget-spend" data-value=status.spend.to_string()>{usd(status.spend)}</td>
                        <td class="num" data-testid="budget-used">{status.percent_used()}</td>
                        <td class="num">{usd(status.forecast)}</td>
                        <td><StatusBadge status=status.clone()/></td>
                    </tr>
                }
            }).collect_view()}
        </DataTable>
    }
    .into_any()
}

/// The status in words and colour, so colour is never the only signal.
#[component]
pub fn StatusBadge(status: BudgetStatus) -> impl IntoView {
    let level = status.level();
    let text = match status.crossed.iter().max_by_key(|t| t.percent) {
        None => "On track".to_string(),
        Some(t) => format!("{} reached", t.shown()),
    };
    view! { <span class=format!("badge status-{level}") data-testid="budget-status" data-level=level>{text}</span> }
}

/// Budget use on cost pages: each budget's spend against its amount, linked to its page.
#[component]
pub fn BudgetUses(uses: Vec<crate::budgets::BudgetUse>) -> impl IntoView {
    (!uses.is_empty()).then(|| {
        view! {
            <ul class="budget-uses" data-testid="budget-uses">
                {uses.into_iter().map(|u| view! {
                    <li>
                        <a href=crate::ui::links::budget_href(u.id)>{u.name.clone()}</a> ": "
                        {usd(u.spend)} " of " {usd(u.amount)} " this " {u.period.noun()}
                        " " <span class=format!("badge status-{}", u.level) data-testid="budget-use">{u.used.clone()}</span>
                    </li>
                }).collect_view()}
            </ul>
        }
    })
}

#[component]
fn ScopeLink(scope: BudgetScope) -> impl IntoView {
    match scope {
        BudgetScope::Org => view! { <span>"Organisation"</span> }.into_any(),
        BudgetScope::Team(team) => view! { <a href=scope_href("teams", &team)>{format!("Team {team}")}</a> }.into_any(),
        BudgetScope::Project(project) => {
            view! { <a href=scope_href("projects", &project)>{format!("Project {}", tag_label(&project))}</a> }
                .into_any()
        }
        BudgetScope::Account(id) => {
            view! { <a href=format!("/?account={id}")>{format!("AWS account {id}")}</a> }.into_any()
        }
    }
}

#[component]
pub fn BudgetPage() -> impl IntoView {
    let params = use_params_map();
    let save = ServerAction::<SaveBudget>::new();
    let retry = ServerAction::<RetryAlert>::new();
    let id = move || params.read().get("id").and_then(|id| id.parse::<i64>().ok());
    let saved = crate::ui::forms::saved_version(save);
    let data = crate::codec::resource(
        move || (id(), saved.get(), retry.version().get()),
        |(id, _, _)| async move {
            match id {
                Some(id) => get_budget(id).await,
                None => Err(AppError::NotFound("no such budget".into())),
            }
        },
    );
    view! {
        <Transition fallback=|| view! { <p class="loading">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match data.await {
                    Err(err) => view! {
                        <PageHeader title="Budget" parent=("/budgets", "Budgets")/>
                        {crate::ui::page::error_text(&err)}
                    }.into_any(),
                    Ok(detail) => view! { <BudgetBody detail save retry/> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn BudgetBody(detail: BudgetData, save: ServerAction<SaveBudget>, retry: ServerAction<RetryAlert>) -> impl IntoView {
    let status = detail.line.status;
    let budget = status.budget.clone();
    let spec = budget.spec.clone();
    let remove = ServerAction::<DeleteBudget>::new();
    let beyond_aws = detail.recipients.len().saturating_sub(AWS_EMAIL_SUBSCRIBERS);
    view! {
        <PageHeader title=spec.name.clone() parent=("/budgets", "Budgets")/>
        <section class="cards" aria-label="Summary">
            <div class="card"><h2>"Spend"</h2>
                <p class="figure" data-testid="budget-spend" data-value=status.spend.to_string()>{usd(status.spend)}</p>
                <p class="hint">{format!("{} – {}, {}", status.period.from, status.period.last_day(), spec.counts())}</p></div>
            <div class="card"><h2>"Used"</h2>
                <p class="figure" data-testid="budget-used">{status.percent_used()}</p>
                <p class="hint">"of " {usd(spec.amount)} " " <StatusBadge status=status.clone()/></p></div>
            <div class="card"><h2>"Forecast"</h2>
                <p class="figure" data-testid="budget-forecast">{usd(status.forecast)}</p>
                <p class="hint">"Spend before today plus the last 7 days' run-rate for each day left"</p></div>
        </section>
        <Chart svg=detail.burn_svg testid="budget-chart"/>
        <section>
            <h2>"Thresholds"</h2>
            <ul data-testid="thresholds">
                {spec.thresholds.iter().map(|t| {
                    let crossed = status.crossed.contains(t);
                    let ladder = spec.escalation_for(*t).join(", ");
                    let ladder = (!ladder.is_empty()).then(|| view! { " → also " <span data-testid="escalation">{ladder}</span> });
                    view! { <li>{t.shown()} " — " {usd(t.trigger_amount(spec.amount))} {crossed.then_some(" (crossed)")} {ladder}</li> }
                }).collect_view()}
            </ul>
            <h2>"Recipients of every threshold"</h2>
            <p data-testid="recipients">{if detail.recipients.is_empty() {
                "Nobody: the scope has no team owners and no extra addresses are listed.".to_string()
            } else {
                detail.recipients.join(", ")
            }}</p>
            {(beyond_aws > 0).then(|| view! {
                <p class="hint">{format!("AWS Budgets emails at most {AWS_EMAIL_SUBSCRIBERS} subscribers per threshold; burnrate's own alert emails reach the other {}.", count(beyond_aws))}</p>
            })}
        </section>
        <AlertHistory alerts=detail.alerts is_admin=detail.is_admin retry/>
        {detail.line.can_edit.then(|| view! {
            <details class="card" data-testid="edit-budget">
                <summary>"Edit budget"</summary>
                <BudgetForm budget=Some(budget.clone()) choices=detail.choices action=save/>
                <ActionForm action=remove attr:class="inline">
                    <input type="hidden" name="id" value=budget.id/>
                    <button type="submit" class="danger">"Delete budget"</button>
                </ActionForm>
            </details>
        })}
    }
}

#[component]
fn AlertHistory(
    alerts: Vec<(i64, crate::budgets::AlertRecord)>,
    is_admin: bool,
    retry: ServerAction<RetryAlert>,
) -> impl IntoView {
    if alerts.is_empty() {
        return view! { <h2>"Alert history"</h2><p data-testid="no-alerts">"No alerts yet: none of this budget's thresholds has been crossed."</p> }.into_any();
    }
    view! {
        <h2>"Alert history"</h2>
        <DataTable testid="alert-history" columns=&["Period", "Threshold", "Spend then", "Status", "Attempts", "Delivery per recipient", "SMTP reply", "Queued", "Sent"]>
            {alerts.into_iter().map(|(id, alert)| view! {
                <tr data-testid="alert-row">
                    <td>{alert.period_start.to_string()}</td>
                    <td>{alert.threshold.shown()}</td>
                    <td class="num">{usd(alert.spend)}</td>
                    <td data-testid="alert-status">{alert.status.clone()}
                        {(is_admin && alert.status == "failed").then(|| view! {
                            <ActionForm action=retry attr:class="inline">
                                <input type="hidden" name="alert_id" value=id/>
                                <button type="submit">"Retry"</button>
                            </ActionForm>
                        })}
                    </td>
                    <td class="num">{count(alert.attempts)}</td>
                    <td data-testid="alert-deliveries">
                        {if alert.deliveries.is_empty() { alert.recipients.join(", ") } else { alert.deliveries.join("; ") }}
                    </td>
                    <td>{alert.last_reply.unwrap_or_default()}</td>
                    <td>{alert.created_at}</td>
                    <td>{alert.sent_at.unwrap_or_default()}</td>
                </tr>
            }).collect_view()}
        </DataTable>
    }
    .into_any()
}

/// The create/edit form. Errors show beside their field; nothing is saved until all pass.
#[component]
fn BudgetForm(budget: Option<Budget>, choices: ScopeChoices, action: ServerAction<SaveBudget>) -> impl IntoView {
    let spec = budget.as_ref().map(|b| b.spec.clone());
    let result: Signal<_> = action.value().into();
    let field_error = move |field| crate::ui::forms::field_error(result, field);
    let scope = spec.as_ref().map(|s| s.scope.clone()).unwrap_or(if choices.org {
        BudgetScope::Org
    } else {
        BudgetScope::Team(choices.teams.first().cloned().unwrap_or_default())
    });
    let thresholds = match &spec {
        Some(spec) => spec
            .thresholds
            .iter()
            .map(|t| spec.threshold_line(*t))
            .collect::<Vec<_>>(),
        None => Threshold::defaults().iter().map(Threshold::label).collect(),
    }
    .join("\n");
    let period = spec.as_ref().map(|s| s.period).unwrap_or(BudgetPeriod::Monthly);
    let metric = spec.as_ref().map(|s| s.metric.key()).unwrap_or("unblended");
    let credits = spec.as_ref().map(|s| s.credits).unwrap_or_default();
    let kind = scope.kind();
    let scope_names: Vec<String> = choices.teams.iter().chain(choices.projects.iter()).cloned().collect();
    let id = budget.as_ref().map(|b| b.id.to_string());
    view! {
        <ActionForm action attr:class="stack budget-form" attr:novalidate=true>
            {id.map(|id| view! { <input type="hidden" name="id" value=id/> })}
            <label>"Name" <input type="text" name="name" required maxlength="200" value=spec.as_ref().map(|s| s.name.clone())/></label>
            {field_error("name")}
            <fieldset>
                <legend>"Scope"</legend>
                <label>"Covers" <select name="scope_kind">
                    {choices.org.then(|| view! { <option value="org" selected=kind == "org">"Whole organisation"</option> })}
                    <option value="team" selected=kind == "team">"A team"</option>
                    <option value="project" selected=kind == "project">"A project"</option>
                    {choices.org.then(|| view! { <option value="account" selected=kind == "account">"An AWS account"</option> })}
                </select></label>
                <label>"Team or project name, or account ID" <input type="text" name="scope_name" list="budget-scopes" value=scope.name().to_string()/></label>
                <datalist id="budget-scopes">
                    {scope_names.into_iter().map(|n| view! { <option value=n.clone()></option> }).collect_view()}
                </datalist>
                {field_error("scope")}
            </fieldset>
            <label>"Period" <select name="period">
                {BudgetPeriod::ALL.into_iter().map(|p| view! { <option value=p.key() selected=p == period>{p.key()}</option> }).collect_view()}
            </select></label>
            {field_error("period")}
            <label>"Amount (USD)" <input type="text" name="amount" inputmode="decimal" required value=spec.as_ref().map(|s| s.amount.to_string())/></label>
            {field_error("amount")}
            <label>"Metric" <select name="metric">
                <option value="unblended" selected=metric == "unblended">"unblended"</option>
                <option value="amortized" selected=metric == "amortized">"amortized"</option>
            </select></label>
            {field_error("metric")}
            <label>"Credits and refunds" <select name="credits" data-testid="budget-credits">
                {crate::period::Credits::ALL.into_iter().map(|c| view! {
                    <option value=c.key() selected=c == credits>{format!("{} (spend {})", c.label(), c.describe())}</option>
                }).collect_view()}
            </select></label>
            {field_error("credits")}
            <label>"Thresholds (one per line: 80, or 100 forecasted; at most 10). Addresses after a threshold hear of it alone: 80 director@example.com" <textarea name="thresholds" rows="4">{thresholds}</textarea></label>
            {field_error("thresholds")}
            <label>"Extra recipients (besides the team owners; comma or line separated)"
                <textarea name="recipients" rows="2">{spec.as_ref().map(|s| s.recipients.join("\n")).unwrap_or_default()}</textarea></label>
            {field_error("recipients")}
            <crate::ui::forms::FormError result beside_fields=true/>
            <button type="submit">{if budget.is_some() { "Save budget" } else { "Create budget" }}</button>
        </ActionForm>
    }
}
