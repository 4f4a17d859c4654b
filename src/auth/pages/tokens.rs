//! The account page's API tokens: make one (its secret shown once), see each one's scope,
//! expiry and last use, and revoke it.

use leptos::prelude::*;

use crate::auth::Role;
use crate::auth::model::TokenSummary;
use crate::auth::server_fns::{CreateApiToken, RevokeApiToken, list_tokens};
use crate::ui::forms::FormError;
use crate::ui::table::DataTable;

#[component]
pub fn TokensSection() -> impl IntoView {
    let create = ServerAction::<CreateApiToken>::new();
    let revoke = ServerAction::<RevokeApiToken>::new();
    let tokens = crate::codec::resource(
        move || (create.version().get(), revoke.version().get()),
        |_| list_tokens(),
    );
    let secret = move || match create.value().get() {
        Some(Ok(secret)) => Some(view! {
            <div class="notice" role="status" data-testid="token-created">
                <p>"Copy the secret now: it is shown once, and only its hash is kept."</p>
                <code data-testid="token-secret">{secret}</code>
            </div>
        }),
        _ => None,
    };
    view! {
        <section class="narrow" aria-label="API tokens" data-testid="tokens">
            <h2>"API tokens"</h2>
            <p class="hint">"For code: "<code>"Authorization: Bearer brt_…"</code>" on "<code>"/api/v1"</code>
                " only (never these pages). A token acts as you, with a role no higher than yours, and optionally for one team."</p>
            <ActionForm action=create attr:class="stack" attr:data-testid="create-token-form">
                <label>"Name" <input type="text" name="name" required maxlength="100"/></label>
                <label>"Role "
                    <select name="role">
                        <option value="">"my role"</option>
                        {Role::ALL.into_iter().map(|r| view! { <option value=r.key()>{r.key()}</option> }).collect_view()}
                    </select>
                </label>
                <label>"Team (empty: every team)" <input type="text" name="team"/></label>
                <label>"Expires in days (at most 365)" <input type="number" name="expires_days" value="90" min="1" max="365" required/></label>
                <label><input type="checkbox" name="service" value="on"/> " A service token (admins)"</label>
                <button type="submit" class="primary">"Create token"</button>
            </ActionForm>
            <FormError result=create.value().into()/>
            {secret}
            <FormError result=revoke.value().into()/>
            {crate::ui::page::loaded(tokens, move |list| view! { <TokenTable list revoke/> })}
        </section>
    }
}

#[component]
fn TokenTable(list: Vec<TokenSummary>, revoke: ServerAction<RevokeApiToken>) -> impl IntoView {
    if list.is_empty() {
        return view! { <p class="hint" data-testid="tokens-empty">"No API token yet."</p> }.into_any();
    }
    let rows = list
        .into_iter()
        .map(|t| {
            let state = t.state();
            let revoke_form = t.live.then(|| {
                let (email, name) = (t.email.clone(), t.name.clone());
                view! {
                    <ActionForm action=revoke attr:class="inline">
                        <input type="hidden" name="email" value=email/>
                        <input type="hidden" name="name" value=name/>
                        <button type="submit" class="danger">"Revoke"</button>
                    </ActionForm>
                }
            });
            view! {
                <tr data-testid="token-row" data-state=state>
                    <th scope="row">{t.name.clone()}</th>
                    <td><code>{t.hint}"…"</code></td>
                    <td>{t.email}{t.service.then_some(" (service)")}</td>
                    <td>{t.role.key()}</td>
                    <td>{t.team.unwrap_or_else(|| "every team".into())}</td>
                    <td>{t.expires_at}</td>
                    <td>{t.last_used_at.unwrap_or_else(|| "never".into())}</td>
                    <td>{state} " " {revoke_form}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <DataTable testid="tokens-table" columns=&["Name", "Secret starts", "Acts as", "Role", "Team", "Expires", "Last used", "State"]>{rows}</DataTable>
    }
    .into_any()
}
