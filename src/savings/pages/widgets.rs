//! Savings pieces on other pages: "savings available" (Overview, Team, Project) and the
//! admins' form declaring what a project runs (Project page).

use leptos::prelude::*;

use crate::format::{count, quantity, usd};
use crate::savings::model::{Precision, Workload};
use crate::savings::server_fns::{
    ConfirmWorkload, SaveProjectFacts, get_inferred_workload, get_project_facts, get_savings_available,
};

/// "Savings available: $X a month in N opportunities", linking to the Savings page filtered
/// to the team (or to everything). Fetched once the page has hydrated, not while the server
/// renders: the recommendations take a second to compute at 10M facts after a data change,
/// and the cost page around the note should not wait for them.
#[component]
pub fn SavingsAvailableNote(
    #[prop(optional)] team: Option<String>,
    #[prop(optional)] project: Option<String>,
) -> impl IntoView {
    let mounted = RwSignal::new(false);
    // Effects run only in the browser, after hydration.
    Effect::new(move |_| mounted.set(true));
    view! {
        <Show when=move || mounted.get()>
            <AvailableFigure team=team.clone() project=project.clone()/>
        </Show>
    }
}

#[component]
fn AvailableFigure(team: Option<String>, project: Option<String>) -> impl IntoView {
    let href = match &team {
        Some(t) => format!("/savings?team={}", crate::format::url_encode(t)),
        None => "/savings".to_string(),
    };
    let data = crate::codec::resource(
        move || (team.clone(), project.clone()),
        |(team, project)| get_savings_available(team, project),
    );
    view! {
        <Transition fallback=|| ()>
            {move || Suspend::new({
                let href = href.clone();
                async move {
                    data.await.ok().filter(|a| a.count + a.to_confirm > 0).map(|a| view! {
                        <p class="savings-available" data-testid="savings-available">
                            "Savings available: " <strong data-testid="savings-available-figure">{usd(a.monthly_saving)}</strong> " a month in "
                            <a href=href>{count(a.count)} " GPU recommendation" {if a.count == 1 { "" } else { "s" }}</a> "."
                            {(a.to_confirm > 0).then(|| view! {
                                <span data-testid="savings-to-confirm">{format!(" {} more in {} resting on workloads inferred from the bill, once confirmed.", usd(a.to_confirm_saving), count(a.to_confirm))}</span>
                            })}
                        </p>
                    })
                }
            })}
        </Transition>
    }
}

/// What the project runs, and (admins) a form to declare it.
#[component]
pub fn ProjectFactsForm(project: String) -> impl IntoView {
    let save = ServerAction::<SaveProjectFacts>::new();
    let confirm = ServerAction::<ConfirmWorkload>::new();
    let saved = crate::ui::forms::saved_version(save);
    let confirmed = crate::ui::forms::saved_version(confirm);
    let name = project.clone();
    let facts = crate::codec::resource(
        move || (name.clone(), saved.get(), confirmed.get()),
        |(p, _, _)| get_project_facts(p),
    );
    view! {
        <section aria-label="Workload" data-testid="project-workload">
            <h2>"Workload"</h2>
            {crate::ui::page::loaded(facts, move |w: crate::savings::model::ProjectWorkload| {
                let model = w.facts.model.map(|m| format!(", model {}B {}", quantity(m.params_b, 3), m.precision.key())).unwrap_or_default();
                view! {
                    <p data-testid="workload-now">{format!("Declared: {}{model}", w.facts.workload.key())}</p>
                    {(w.facts.workload == Workload::Unknown).then(|| view! {
                        <InferredNote project=project.clone() may_confirm=w.may_confirm confirm/>
                    })}
                    {w.may_edit.then(|| view! { <FactsForm project=project.clone() save/> })}
                }
            })}
        </section>
    }
}

/// What the bill suggests a project runs, fetched once the page has hydrated (as the
/// "Savings available" note, and for the same reason: it needs the recommendations).
#[component]
fn InferredNote(project: String, may_confirm: bool, confirm: ServerAction<ConfirmWorkload>) -> impl IntoView {
    let mounted = RwSignal::new(false);
    Effect::new(move |_| mounted.set(true));
    view! {
        <Show when=move || mounted.get()>
            <InferredLoaded project=project.clone() may_confirm confirm/>
        </Show>
    }
}

#[component]
fn InferredLoaded(project: String, may_confirm: bool, confirm: ServerAction<ConfirmWorkload>) -> impl IntoView {
    let name = project.clone();
    let inferred = crate::codec::resource(move || name.clone(), get_inferred_workload);
    view! {
        <Transition fallback=|| ()>
            {move || Suspend::new({
                let project = project.clone();
                async move {
                    inferred.await.ok().flatten().map(|inferred| view! {
                        <super::inferred::InferredWorkload inferred project may_confirm confirm/>
                    })
                }
            })}
        </Transition>
    }
}

#[component]
fn FactsForm(project: String, save: ServerAction<SaveProjectFacts>) -> impl IntoView {
    let result: Signal<_> = save.value().into();
    let field_error = move |field| crate::ui::forms::field_error(result, field);
    view! {
        <details class="card">
            <summary>"Declare what this project runs"</summary>
            <ActionForm action=save attr:class="stack" attr:novalidate=true>
                <input type="hidden" name="project" value=project/>
                <label>"Workload " <select name="workload">
                    {Workload::ALL.into_iter().map(|w| view! { <option value=w.key()>{w.key()}</option> }).collect_view()}
                </select></label>
                {field_error("workload")}
                <label>"Model size (billions of parameters, empty for none) " <input type="text" name="params_b" inputmode="decimal"/></label>
                {field_error("params_b")}
                <label>"Precision " <select name="precision">
                    <option value="">"none"</option>
                    {Precision::ALL.into_iter().map(|p| view! { <option value=p.key()>{p.key()}</option> }).collect_view()}
                </select></label>
                {field_error("precision")}
                <crate::ui::forms::FormError result beside_fields=true/>
                <button type="submit">"Save workload"</button>
            </ActionForm>
        </details>
    }
}
