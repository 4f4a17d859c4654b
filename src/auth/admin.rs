//! Account administration for admins: list, create, change roles, reset passwords.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use super::Role;
use crate::error::AppError;
use crate::ui::forms::FormError;
use crate::ui::page::PageHeader;
use crate::ui::table::TableHead;

/// One account as the Users page lists it (never its password hash).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountSummary {
    pub id: i64,
    pub email: String,
    pub display_name: String,
    pub role: Role,
    pub created_at: String,
    pub disabled: bool,
}

#[server(prefix = "/api", endpoint = "admin/accounts")]
pub async fn list_accounts() -> Result<Vec<AccountSummary>, AppError> {
    crate::error::with_status(
        async {
            super::require_admin()?;
            type Row = (i64, String, String, String, chrono::DateTime<chrono::Utc>, bool);
            let rows: Vec<Row> = sqlx::query_as(
                "select id, email, display_name, role, created_at, disabled_at is not null from accounts order by email",
            )
            .fetch_all(&super::state()?.pool)
            .await?;
            Ok(rows
                .into_iter()
                .map(|(id, email, display_name, role, created_at, disabled)| AccountSummary {
                    id,
                    email,
                    display_name,
                    role: Role::parse(&role).unwrap_or(Role::Viewer),
                    created_at: created_at.format("%Y-%m-%d %H:%M UTC").to_string(),
                    disabled,
                })
                .collect())
        }
        .await,
    )
}

#[server(prefix = "/api", endpoint = "admin/create_account")]
pub async fn create_account(
    email: String,
    display_name: String,
    role: String,
    password: String,
) -> Result<(), AppError> {
    crate::error::with_status(
        async {
            let caller = super::require_admin()?;
            let new = super::accounts::NewAccount::validate(&email, &display_name, Role::parse(&role)?, &password)?;
            super::accounts::create(&super::state()?.pool, &(&caller).into(), new)
                .await
                .map(|_| ())
        }
        .await,
    )
}

#[server(prefix = "/api", endpoint = "admin/set_role")]
pub async fn set_role(account_id: i64, role: String) -> Result<(), AppError> {
    crate::error::with_status(
        async {
            let caller = super::require_admin()?;
            super::accounts::set_role(&super::state()?.pool, &caller, account_id, Role::parse(&role)?).await
        }
        .await,
    )
}

/// Sets a new password for another account and signs it out everywhere.
#[server(prefix = "/api", endpoint = "admin/reset_password")]
pub async fn reset_password(account_id: i64, password: String) -> Result<(), AppError> {
    crate::error::with_status(
        async {
            let caller = super::require_admin()?;
            super::accounts::set_password(&super::state()?.pool, &caller, account_id, &password, None).await
        }
        .await,
    )
}

/// Disables, enables or deletes an account (`step`: disable, enable, delete); disabling
/// and deleting sign it out everywhere at once.
#[server(prefix = "/api", endpoint = "admin/account_lifecycle")]
pub async fn change_account(email: String, step: String) -> Result<(), AppError> {
    crate::error::with_status(
        async {
            use super::lifecycle::{self, Change};
            let caller = super::require_admin()?;
            let change = match step.as_str() {
                "disable" => Change::Disable,
                "enable" => Change::Enable,
                "delete" => Change::Delete,
                _ => return Err(AppError::invalid("step", "expected disable, enable or delete")),
            };
            lifecycle::apply(&super::state()?.pool, &(&caller).into(), &email, change).await
        }
        .await,
    )
}

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
                        <table class="data" data-testid="accounts-table">
                            <TableHead columns=&["Email", "Name", "Role", "Reset password", "Created", "Access"]/>
                            <tbody>
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
                            </tbody>
                        </table>
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
