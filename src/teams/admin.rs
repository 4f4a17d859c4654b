//! The Teams admin page (`/admin/teams`): each team's owners, projects and users, and the
//! unmapped projects and users with their recent spend, ready to assign. Every save is the
//! same whole-state diff as `burnrate config import`, so both paths audit alike.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::AppError;
use crate::format::{tag_label, usd};
use crate::ui::forms::FormError;
use crate::ui::page::PageHeader;
use crate::ui::table::TableHead;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamRow {
    pub name: String,
    pub owners: Vec<String>,
    pub projects: Vec<String>,
    pub users: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unmapped {
    pub kind: String,
    pub name: String,
    /// Unblended spend over the last 30 days, so the costliest gaps come first.
    pub spend_30d: rust_decimal::Decimal,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamMappings {
    pub teams: Vec<TeamRow>,
    pub unmapped: Vec<Unmapped>,
}

#[server(prefix = "/api", endpoint = "admin/teams")]
pub async fn list_team_mappings() -> Result<TeamMappings, AppError> {
    crate::error::with_status(
        async {
            crate::auth::require_admin()?;
            let pool = &crate::ctx::pool()?;
            let mut conn = pool.acquire().await?;
            let teams = super::store::load(&mut conn)
                .await?
                .into_iter()
                .map(|(name, m)| TeamRow {
                    name,
                    owners: m.owners.into_iter().collect(),
                    projects: m.projects.into_iter().collect(),
                    users: m.users.into_iter().collect(),
                })
                .collect();
            let unmapped: Vec<(String, String, rust_decimal::Decimal)> = sqlx::query_as(
                "select 'project', p.name, coalesce(sum(c.unblended), 0) from projects p
                   left join daily_project_costs c on c.project = p.name and c.day >= current_date - 30
                   where p.team_id is null group by p.name
                 union all
                 select 'user', u.name, coalesce(sum(c.unblended), 0) from tagged_users u
                   left join costs_by_user c on c.user_name = u.name and c.day >= current_date - 30
                   where u.team_id is null group by u.name
                 order by 3 desc, 2 limit 200",
            )
            .fetch_all(&mut *conn)
            .await?;
            Ok(TeamMappings {
                teams,
                unmapped: unmapped
                    .into_iter()
                    .map(|(kind, name, spend_30d)| Unmapped { kind, name, spend_30d })
                    .collect(),
            })
        }
        .await,
    )
}

/// Creates a team (`original` empty) or replaces one's name, owners, projects and users.
/// Lists are one entry per line. Projects or users listed here move from any other team.
#[server(prefix = "/api", endpoint = "admin/save_team")]
pub async fn save_team(
    original: String,
    name: String,
    owners: String,
    projects: String,
    users: String,
) -> Result<(), AppError> {
    crate::error::with_status(
        async {
            let caller = crate::auth::require_admin()?;
            let edit = super::edit::TeamEdit::validate(&original, &name, &owners, &projects, &users)?;
            let pool = crate::ctx::pool()?;
            super::edit::save(&pool, &(&caller).into(), edit).await?;
            // Disarmed enforcement actions lose their AWS side at once.
            crate::ctx::get::<crate::enforcement::executor::Executor>()?
                .wake
                .notify_one();
            Ok(())
        }
        .await,
    )
}

#[server(prefix = "/api", endpoint = "admin/delete_team")]
pub async fn delete_team(name: String) -> Result<(), AppError> {
    crate::error::with_status(
        async {
            let caller = crate::auth::require_admin()?;
            let pool = crate::ctx::pool()?;
            super::edit::delete(&pool, &(&caller).into(), &name).await?;
            crate::ctx::get::<crate::enforcement::executor::Executor>()?
                .wake
                .notify_one();
            Ok(())
        }
        .await,
    )
}

/// Maps one unmapped project or user to a team.
#[server(prefix = "/api", endpoint = "admin/assign")]
pub async fn assign(kind: String, name: String, team: String) -> Result<(), AppError> {
    crate::error::with_status(
        async {
            let caller = crate::auth::require_admin()?;
            let pool = crate::ctx::pool()?;
            super::edit::assign(&pool, &(&caller).into(), &kind, &name, &team).await?;
            crate::ctx::get::<crate::enforcement::executor::Executor>()?
                .wake
                .notify_one();
            Ok(())
        }
        .await,
    )
}

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
        <p class="hint">"Spend is allocated to a team through its projects and users; anything unmapped shows as Unassigned. "
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
        return view! { <p data-testid="all-mapped">"Every project and user is mapped to a team."</p> }.into_any();
    }
    view! {
        <h2>"Unassigned"</h2>
        <table class="data" data-testid="unmapped-table">
            <TableHead columns=&["Kind", "Name", "Spend, last 30 days", "Assign to"]/>
            <tbody>
                {rows.into_iter().map(|row| {
                    let label = format!("Team for {} {}", row.kind, row.name);
                    let shown = tag_label(&row.name).to_string();
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
            </tbody>
        </table>
    }
    .into_any()
}

#[component]
fn TeamForm(team: Option<TeamRow>, save: ServerAction<SaveTeam>, remove: ServerAction<DeleteTeam>) -> impl IntoView {
    let original = team.as_ref().map(|t| t.name.clone()).unwrap_or_default();
    let lines = |values: Option<&Vec<String>>| values.map(|v| v.join("\n")).unwrap_or_default();
    let (owners, projects, users) = (
        lines(team.as_ref().map(|t| &t.owners)),
        lines(team.as_ref().map(|t| &t.projects)),
        lines(team.as_ref().map(|t| &t.users)),
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
