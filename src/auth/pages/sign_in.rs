//! Sign-in, first-run setup and own-account pages, and the user menu in the top bar.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_location, use_query_map};

use crate::auth::Role;
use crate::auth::server_fns::{ChangePassword, Login, Logout, SetupAdmin, get_me, setup_needed, setup_token_required};
use crate::ui::forms::FormError;
use crate::ui::page::PageHeader;

/// A new password and its confirmation, named as the server functions expect.
#[component]
fn NewPasswordFields() -> impl IntoView {
    view! {
        <label>
            "New password (12 characters or more)"
            <input type="password" name="password" autocomplete="new-password" required minlength="12"/>
        </label>
        <label>
            "Repeat the new password" <input type="password" name="password_confirm" autocomplete="new-password" required/>
        </label>
    }
}

#[component]
pub fn LoginPage() -> impl IntoView {
    let login = ServerAction::<Login>::new();
    let query = use_query_map();
    let next = move || query.read().get("next").unwrap_or_default();
    let needs_setup = crate::codec::resource(|| (), |_| setup_needed());

    view! {
        <Title text="Sign in · burnrate"/>
        <section class="narrow">
            <h1>"Sign in"</h1>
            <ActionForm action=login attr:class="stack" attr:data-testid="login-form">
                <label>"Email" <input type="email" name="email" autocomplete="username" required/></label>
                <label>
                    "Password" <input type="password" name="password" autocomplete="current-password" required/>
                </label>
                <input type="hidden" name="next" prop:value=next/>
                <button type="submit" class="primary">"Sign in"</button>
            </ActionForm>
            <FormError result=login.value().into()/>
            <Suspense>
                {move || Suspend::new(async move {
                    matches!(needs_setup.await, Ok(true))
                        .then(|| view! { <p>"No admin exists yet: " <a href="/setup">"set up burnrate"</a> "."</p> })
                })}
            </Suspense>
        </section>
    }
}

#[component]
pub fn SetupPage() -> impl IntoView {
    let setup = ServerAction::<SetupAdmin>::new();
    let needs_setup = crate::codec::resource(|| (), |_| setup_needed());
    let needs_token = crate::codec::resource(|| (), |_| setup_token_required());
    let query = use_query_map();
    let token = move || query.read().get("token").unwrap_or_default();

    view! {
        <Title text="Set up · burnrate"/>
        <section class="narrow">
            <h1>"Set up burnrate"</h1>
            <Suspense>
                {move || Suspend::new(async move {
                    if matches!(needs_setup.await, Ok(true)) {
                        let token_field = matches!(needs_token.await, Ok(true)).then(|| view! {
                            <label>
                                "Setup token (printed by " <code>"burnrate serve"</code> " when it started)"
                                <input type="text" name="token" autocomplete="off" required prop:value=token/>
                            </label>
                        });
                        view! {
                            <p>"Create the first admin account. This page closes once an admin exists."</p>
                            <ActionForm action=setup attr:class="stack">
                                {token_field}
                                <label>"Email" <input type="email" name="email" autocomplete="username" required/></label>
                                <label>"Name" <input type="text" name="display_name" autocomplete="name"/></label>
                                <NewPasswordFields/>
                                <button type="submit" class="primary">"Create admin and sign in"</button>
                            </ActionForm>
                        }
                            .into_any()
                    } else {
                        view! { <p>"Setup is complete. " <a href="/login">"Sign in"</a> "."</p> }.into_any()
                    }
                })}
            </Suspense>
            <FormError result=setup.value().into()/>
        </section>
    }
}

#[component]
pub fn AccountPage() -> impl IntoView {
    let change = ServerAction::<ChangePassword>::new();
    view! {
        <PageHeader title="Account"/>
        <section class="narrow">
            <h2>"Change password"</h2>
            <ActionForm action=change attr:class="stack">
                <label>
                    "Current password" <input type="password" name="current" autocomplete="current-password" required/>
                </label>
                <NewPasswordFields/>
                <button type="submit" class="primary">"Change password"</button>
            </ActionForm>
            <FormError result=change.value().into()/>
            {move || {
                matches!(change.value().get(), Some(Ok(())))
                    .then(|| view! { <p role="status">"Password changed. Your other sessions were signed out."</p> })
            }}
        </section>
        <super::tokens::TokensSection/>
    }
}

/// Who is signed in, their links, and sign-out; refreshed on every navigation.
#[component]
pub fn UserMenu() -> impl IntoView {
    let location = use_location();
    let me = crate::codec::resource(move || location.pathname.get(), |_| get_me());
    let logout = ServerAction::<Logout>::new();

    view! {
        <Transition>
            {move || Suspend::new(async move {
                match me.await {
                    Ok(Some(caller)) => {
                        let admin_links = (caller.role == Role::Admin).then(|| {
                            view! {
                                <a href="/admin/teams">"Teams"</a>
                                <a href="/admin/allocation">"Shared costs"</a>
                                <a href="/admin/users">"Users"</a>
                                <a href="/admin/audit">"Audit log"</a>
                            }
                        });
                        view! {
                            <div class="user-menu" data-testid="user-menu">
                                {admin_links}
                                <a href="/account" data-testid="signed-in-as">{caller.email} " (" {caller.role.key()} ")"</a>
                                <ActionForm action=logout attr:class="inline">
                                    <button type="submit" class="link" data-testid="sign-out">"Sign out"</button>
                                </ActionForm>
                            </div>
                        }
                            .into_any()
                    }
                    _ => view! { <div class="user-menu"><a href="/login">"Sign in"</a></div> }.into_any(),
                }
            })}
        </Transition>
    }
}
