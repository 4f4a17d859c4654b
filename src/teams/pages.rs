//! The Teams admin page (`/admin/teams`): each team's owners, projects, users and AWS
//! accounts, and the unmapped ones with their recent spend, ready to assign.

use leptos::prelude::*;

use super::model::{TeamRow, Unmapped};
use super::server_fns::{Assign, DeleteTeam, SaveTeam, list_team_mappings};
use crate::format::{tag_label, usd};
use crate::ui::forms::FormError;
use crate::ui::page::PageHeader;
use crate::ui::table::DataTable;

#[component]
pub fn TeamsAdminPage() -> impl IntoView {
    let save = ServerAction::<SaveTeam>::new();
    let remove = ServerAction::<DeleteTeam>::new();
    let assign_action = ServerAction::<Assign>::new();
    let saved = crate::ui::forms::saved_version(save);
    let mappings = crate::codec::resource(
        move || (saved.get(), remove.version().get(), assign_action.version().get()),
        |_| list_team_mappings(),
    );
    view! {
        <PageHeader title="Teams"/>
        <p class="hint">"Spend is allocated to a team through its projects, then its users, then its AWS accounts; anything unmapped shows as Unassigned. "
            "The same mappings can be kept as code: " <code>"burnrate config export"</code> " / " <code>"burnrate config import FILE"</code> "."</p>
        <FormError result=save.value().into()/>
        <FormError result=remove.value().into()/>
        <FormError result=assign_action.value().into()/>
        {crate::ui::page::loaded(mappings, move |data| {
            let names: Vec<String> = data.teams.iter().map(|t| t.name.clone()).collect();
            view! {
                <UnmappedTable rows=data.unmapped teams=names action=assign_action/>
                <h2>"Teams"</h2>
                {data.teams.into_iter().map(|team| view! { <TeamForm team=Some(team) save remove/> }).collect_view()}
                <h2>"New team"</h2>
                <TeamForm team=None save remove/>
            }
        })}
    }
}

#[component]
fn UnmappedTable(rows: Vec<Unmapped>, teams: Vec<String>, action: ServerAction<Assign>) -> impl IntoView {
    if rows.is_empty() {
        return view! { <p data-testid="all-mapped">"Every project, user and AWS account is mapped to a team."</p> }
            .into_any();
    }
    view! {
        <h2>"Unassigned"</h2>
        <DataTable testid="unmapped-table" columns=&["Kind", "Name", "Spend, last 30 days", "Assign to"]>
            {rows.into_iter().map(|row| {
                let label = format!("Team for {} {}", row.kind, row.name);
                let shown = match row.detail.as_str() {
                    "" => tag_label(&row.name).to_string(),
                    detail => format!("{} ({detail})", row.name),
                };
                let options = teams.iter().map(|t| view! { <option value=t.clone()>{t.clone()}</option> }).collect_view();
                view! {
                    <tr data-testid="unmapped-row">
                        <td>{row.kind.clone()}</td>
                        <td>{shown}</td>
                        <td class="num">{usd(row.spend_30d)}</td>
                        <td>
                            <ActionForm action attr:class="inline">
                                <input type="hidden" name="kind" value=row.kind/>
                                <input type="hidden" name="name" value=row.name/>
                                <select name="team" aria-label=label required>
                                    {options}
                                </select>
                                <button type="submit">"Assign"</button>
                            </ActionForm>
                        </td>
                    </tr>
                }
            }).collect_view()}
        </DataTable>
    }
    .into_any()
}

#[component]
fn TeamForm(team: Option<TeamRow>, save: ServerAction<SaveTeam>, remove: ServerAction<DeleteTeam>) -> impl IntoView {
    let original = team.as_ref().map(|t| t.name.clone()).unwrap_or_default();
    let lines = |values: Option<&Vec<String>>| values.map(|v| v.join("\n")).unwrap_or_default();
    let (owners, projects, users, accounts) = (
        lines(team.as_ref().map(|t| &t.owners)),
        lines(team.as_ref().map(|t| &t.projects)),
        lines(team.as_ref().map(|t| &t.users)),
        lines(team.as_ref().map(|t| &t.accounts)),
    );
    let existing = !original.is_empty();
    let (original_field, name_field) = (original.clone(), original.clone());
    view! {
        <section class="card team-form" data-testid="team-form">
            <ActionForm action=save attr:class="stack">
                <input type="hidden" name="original" value=original_field/>
                <label>"Name" <input type="text" name="name" required maxlength="100" value=name_field/></label>
                <label>"Owners (emails, one per line)" <textarea name="owners" rows="2">{owners}</textarea></label>
                <label>"Projects (one per line)" <textarea name="projects" rows="3">{projects}</textarea></label>
                <label>"Users (one per line)" <textarea name="users" rows="3">{users}</textarea></label>
                <label>"AWS accounts (12-digit IDs, one per line): untagged spend in them is the team's"
                    <textarea name="accounts" rows="2">{accounts}</textarea></label>
                <button type="submit">{if existing { "Save team" } else { "Create team" }}</button>
            </ActionForm>
            {existing.then(move || view! {
                <ActionForm action=remove attr:class="inline">
                    <input type="hidden" name="name" value=original/>
                    <button type="submit" class="danger">"Delete team"</button>
                </ActionForm>
            })}
        </section>
    }
}
