//! `/admin/users`: accounts, their roles, password resets, and disabling or deleting.

use leptos::prelude::*;

use crate::auth::Role;
use crate::auth::model::AccountSummary;
use crate::auth::server_fns::{ChangeAccount, CreateAccount, ResetPassword, SetRole, list_accounts};
use crate::ui::forms::FormError;
use crate::ui::page::PageHeader;
use crate::ui::table::DataTable;

#[component]
pub fn UsersPage() -> impl IntoView {
    let create = ServerAction::<CreateAccount>::new();
    let change_role = ServerAction::<SetRole>::new();
    let reset = ServerAction::<ResetPassword>::new();
    let lifecycle = ServerAction::<ChangeAccount>::new();
    let created = crate::ui::forms::saved_version(create);
    let accounts = crate::codec::resource(
        move || {
            (
                created.get(),
                change_role.version().get(),
                reset.version().get(),
                lifecycle.version().get(),
            )
        },
        |_| list_accounts(),
    );
    let role_options = || {
        Role::ALL
            .into_iter()
            .map(|r| view! { <option value=r.key()>{r.key()}</option> })
            .collect_view()
    };

    view! {
        <PageHeader title="Users"/>
        <FormError result=change_role.value().into()/>
        <FormError result=reset.value().into()/>
        <FormError result=lifecycle.value().into()/>
        {crate::ui::page::loaded(accounts, move |list| view! {
                        <DataTable testid="accounts-table" columns=&["Email", "Name", "Role", "Reset password", "Created", "Access"]>
                            {list.into_iter().map(|account| {
                                let role_label = format!("Role of {}", account.email);
                                let password_label = format!("New password for {}", account.email);
                                view! {
                                <tr data-testid="account-row" data-disabled=account.disabled.to_string()>
                                    <th scope="row">{account.email.clone()}</th>
                                    <td>{account.display_name.clone()}</td>
                                    <td>
                                        <ActionForm action=change_role attr:class="inline">
                                            <input type="hidden" name="account_id" value=account.id/>
                                            <select name="role" aria-label=role_label>
                                                {Role::ALL.into_iter().map(|r| view! {
                                                    <option value=r.key() selected=r == account.role>{r.key()}</option>
                                                }).collect_view()}
                                            </select>
                                            <button type="submit">"Save"</button>
                                        </ActionForm>
                                    </td>
                                    <td>
                                        <ActionForm action=reset attr:class="inline">
                                            <input type="hidden" name="account_id" value=account.id/>
                                            <input type="password" name="password" autocomplete="new-password"
                                                minlength="12" required aria-label=password_label/>
                                            <button type="submit">"Reset"</button>
                                        </ActionForm>
                                    </td>
                                    <td>{account.created_at.clone()}</td>
                                    <td>{lifecycle_buttons(&account, lifecycle)}</td>
                                </tr>
                            }}).collect_view()}
                        </DataTable>
                    })}
        <section class="narrow">
            <h2>"Add a user"</h2>
            <ActionForm action=create attr:class="stack" attr:data-testid="create-account-form">
                <label>"Email" <input type="email" name="email" required/></label>
                <label>"Name" <input type="text" name="display_name"/></label>
                <label>"Role" <select name="role">{role_options()}</select></label>
                <label>
                    "Initial password (12 characters or more)"
                    <input type="password" name="password" autocomplete="new-password" minlength="12" required/>
                </label>
                <button type="submit" class="primary">"Add user"</button>
            </ActionForm>
            <FormError result=create.value().into()/>
        </section>
    }
}

/// Disable (or enable) and delete, each a small form.
fn lifecycle_buttons(account: &AccountSummary, action: ServerAction<ChangeAccount>) -> impl IntoView + use<> {
    let (step, label) = if account.disabled {
        ("enable", "Enable")
    } else {
        ("disable", "Disable")
    };
    let email = account.email.clone();
    let (toggle_id, delete_id) = (format!("{step}-{email}"), format!("delete-{email}"));
    let (email_a, email_b) = (email.clone(), email);
    let disabled = account.disabled;
    view! {
        {disabled.then(|| view! { <span class="status status-cancelled">"disabled "</span> })}
        <ActionForm action attr:class="inline">
            <input type="hidden" name="email" value=email_a/>
            <input type="hidden" name="step" value=step/>
            <button type="submit" data-testid=toggle_id>{label}</button>
        </ActionForm>
        <ActionForm action attr:class="inline">
            <input type="hidden" name="email" value=email_b/>
            <input type="hidden" name="step" value="delete"/>
            <button type="submit" class="danger" data-testid=delete_id>"Delete"</button>
        </ActionForm>
    }
}
