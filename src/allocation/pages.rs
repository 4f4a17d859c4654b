//! The shared-cost rules page (`/admin/allocation`): the precedence, the rules in order,
//! the unowned projects they may take from, and for admins a form that previews what a rule
//! would move before it is saved.

use leptos::prelude::*;

use super::model::{Preview, SharedRule, SplitKind};
use super::server_fns::{ChangeAllocationRule, PreviewAllocationRule, SaveAllocationRule, get_allocation_rules};
use crate::format::{count, tag_label, usd};
use crate::ui::forms::{FormError, field_error};
use crate::ui::page::{PageHeader, loaded};
use crate::ui::table::DataTable;

#[component]
pub fn AllocationRulesPage() -> impl IntoView {
    let save = ServerAction::<SaveAllocationRule>::new();
    let change = ServerAction::<ChangeAllocationRule>::new();
    let saved = crate::ui::forms::saved_version(save);
    let data = crate::codec::resource(
        move || (saved.get(), change.version().get()),
        |_| get_allocation_rules(),
    );
    view! {
        <PageHeader title="Shared-cost rules"/>
        <p class="hint">"Every dollar is allocated once, by the first step that claims it: "
            "1. the team that owns its project; 2. for a project no team owns (or untagged spend), the team of its user tag; "
            "3. these rules, in order, for what is left; 4. Unassigned. Shares are computed per day, so a month adds up day by day. "
            "Keep the rules as code in the " <code>"shared_costs:"</code> " section of " <code>"burnrate config export"</code> "."</p>
        <FormError result=save.value().into()/>
        <FormError result=change.value().into()/>
        {move || loaded(data, move |page| {
            let is_admin = page.is_admin;
            view! {
                <RulesTable rules=page.rules.clone() is_admin change save/>
                <UnownedTable unowned=page.unowned.clone()/>
                {is_admin.then(|| view! {
                    <h2>"Add a rule"</h2>
                    <RuleForm rule=None teams=page.teams.clone() services=page.services.clone() save/>
                })}
            }
        })}
    }
}

#[component]
fn RulesTable(
    rules: Vec<SharedRule>,
    is_admin: bool,
    change: ServerAction<ChangeAllocationRule>,
    save: ServerAction<SaveAllocationRule>,
) -> impl IntoView {
    if rules.is_empty() {
        return view! { <p data-testid="no-rules">"No shared-cost rules: spend no team or user tag claims stays Unassigned."</p> }.into_any();
    }
    view! {
        <DataTable testid="rules-table" columns=&["Order", "Rule", "Takes", "Divided", ""]>
            {rules.into_iter().enumerate().map(|(n, rule)| {
                let name = rule.name.clone();
                view! {
                    <tr data-testid="rule-row">
                        <td class="num">{count(n + 1)}</td>
                        <th scope="row">{rule.name.clone()}</th>
                        <td>{rule.selector.label()}</td>
                        <td>{rule.split_label()}</td>
                        <td>{is_admin.then(|| view! {
                            <ActionForm action=change attr:class="inline">
                                <input type="hidden" name="name" value=name.clone()/>
                                <button type="submit" name="action" value="up" disabled=n == 0>"Move up"</button>
                                <button type="submit" name="action" value="delete" class="danger">"Delete"</button>
                            </ActionForm>
                            <details>
                                <summary>"Edit"</summary>
                                <RuleForm rule=Some(rule.clone()) teams=vec![] services=vec![] save/>
                            </details>
                        })}</td>
                    </tr>
                }
            }).collect_view()}
        </DataTable>
    }
    .into_any()
}

#[component]
fn UnownedTable(unowned: Vec<(String, rust_decimal::Decimal)>) -> impl IntoView {
    (!unowned.is_empty()).then(|| {
        view! {
            <details class="card">
                <summary>"Projects no team owns, last month"</summary>
                <DataTable testid="unowned-table" columns=&["Project", "Unblended (USD)"]>
                    {unowned.into_iter().map(|(project, spend)| view! {
                        <tr><td>{tag_label(&project).to_string()}</td><td class="num">{usd(spend)}</td></tr>
                    }).collect_view()}
                </DataTable>
            </details>
        }
    })
}

/// The rule form: Preview shows what the rule would move last month; Save then saves what
/// was previewed.
#[component]
fn RuleForm(
    rule: Option<SharedRule>,
    teams: Vec<String>,
    services: Vec<String>,
    save: ServerAction<SaveAllocationRule>,
) -> impl IntoView {
    let preview = ServerAction::<PreviewAllocationRule>::new();
    let result: Signal<_> = preview.value().into();
    let original = rule.as_ref().map(|r| r.name.clone()).unwrap_or_default();
    let selector = rule.as_ref().map(SharedRule::selector_key).unwrap_or("untagged");
    let split = rule.as_ref().map(|r| r.split).unwrap_or(SplitKind::Proportional);
    view! {
        <ActionForm action=preview attr:class="stack" attr:data-testid="rule-form">
            <input type="hidden" name="original" value=original/>
            <label>"Name" <input type="text" name="name" required maxlength="200" value=rule.as_ref().map(|r| r.name.clone())/></label>
            {field_error(result, "name")}
            <label>"Takes" <select name="selector">
                <option value="untagged" selected=selector == "untagged">"Untagged spend"</option>
                <option value="projects" selected=selector == "projects">"These projects (unowned)"</option>
                <option value="services" selected=selector == "services">"These services' share of unowned spend"</option>
            </select></label>
            {field_error(result, "selector")}
            <label>"Projects or services (one per line)"
                <textarea name="values" rows="3">{rule.as_ref().map(SharedRule::values_text)}</textarea></label>
            {(!services.is_empty()).then(|| view! {
                <p class="hint">"Services last month: " {services.join(", ")}</p>
            })}
            {field_error(result, "values")}
            <label>"Divided" <select name="split">
                {SplitKind::ALL.into_iter().map(|k| view! { <option value=k.key() selected=k == split>{k.key()}</option> }).collect_view()}
            </select></label>
            {field_error(result, "split")}
            <label>{format!("Teams (one per line; a fixed split gives each its percentage: ml-research 60; none listed: every team{})",
                if teams.is_empty() { String::new() } else { format!(" of {}", teams.join(", ")) })}
                <textarea name="teams" rows="3">{rule.as_ref().map(SharedRule::teams_text)}</textarea></label>
            {field_error(result, "teams")}
            <label>"Preview month (last month when empty)" <input type="month" name="month"/></label>
            {field_error(result, "month")}
            <FormError result beside_fields=true/>
            <button type="submit" data-testid="preview-rule">"Preview"</button>
        </ActionForm>
        {move || result.get().and_then(Result::ok).map(|p| view! { <PreviewTable preview=p save/> })}
    }
}

#[component]
fn PreviewTable(preview: Preview, save: ServerAction<SaveAllocationRule>) -> impl IntoView {
    let rows = preview
        .teams
        .iter()
        .map(|row| {
            let moved = row.proposed - row.now;
            view! {
                <tr data-testid="preview-row">
                    <th scope="row" data-testid="preview-team">{row.team.clone()}</th>
                    <td class="num">{usd(row.now)}</td>
                    <td class="num" data-testid="preview-proposed" data-value=row.proposed.to_string()>{usd(row.proposed)}</td>
                    <td class="num">{if moved.is_zero() { String::new() } else { format!("{}{}", if moved > rust_decimal::Decimal::ZERO { "+" } else { "" }, usd(moved)) }}</td>
                </tr>
            }
        })
        .collect_view();
    let rule = preview.rule.clone();
    view! {
        <section class="card" data-testid="preview">
            <h3>{format!("What this would move, {} – {} (unblended)", preview.from, preview.to)}</h3>
            <DataTable columns=&["Team", "Now", "With this rule", "Moves"]>{rows}</DataTable>
            {rule.map(|rule| view! {
                <ActionForm action=save attr:class="inline">
                    <input type="hidden" name="original" value=preview.original.clone().unwrap_or_default()/>
                    <input type="hidden" name="name" value=rule.name.clone()/>
                    <input type="hidden" name="selector" value=rule.selector_key()/>
                    <input type="hidden" name="values" value=rule.values_text()/>
                    <input type="hidden" name="split" value=rule.split.key()/>
                    <input type="hidden" name="teams" value=rule.teams_text()/>
                    <button type="submit" data-testid="save-rule">"Save this rule"</button>
                </ActionForm>
            })}
        </section>
    }
}
