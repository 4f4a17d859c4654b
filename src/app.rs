//! The HTML shell, the router and the layout shared by every page.

use leptos::prelude::*;
use leptos_meta::{MetaTags, Stylesheet, Title, provide_meta_context};
use leptos_router::{
    Lazy, LazyRoute, ParamSegment, StaticSegment,
    components::{Route, Router, Routes},
    hooks::use_location,
    lazy_route,
};

use crate::allocation::pages::AllocationRulesPage;
use crate::audit::pages::AuditPage;
use crate::auth::pages::sign_in::{AccountPage, LoginPage, SetupPage, UserMenu};
use crate::auth::pages::users::UsersPage;
use crate::budgets::pages::{BudgetPage, BudgetsPage};
use crate::dashboard::pages::breakdown::{ProjectPage, TeamPage, TeamsPage};
use crate::dashboard::pages::overview::OverviewPage;
use crate::enforcement::pages::approvals::ApprovalsPage;
use crate::enforcement::pages::enforcement::EnforcementPage;
use crate::ingestion::pages::IngestionPage;
use crate::savings::pages::{SavingsPage, SavingsReportPage, WhatIfPage};
use crate::statements::pages::StatementsPage;
use crate::teams::pages::TeamsAdminPage;

/// The document around the app, rendered on the server.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    #[cfg(feature = "ssr")]
    set_page_csp();
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <meta name="color-scheme" content="light dark"/>
                <link rel="icon" href="/favicon.ico"/>
                <HydrationScripts options/>
                <MetaTags/>
            </head>
            <body>
                <App/>
            </body>
        </html>
    }
}

#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();

    view! {
        <Stylesheet id="leptos" href="/pkg/burnrate.css"/>
        <Title text="burnrate"/>
        <Router>
            <TopBar/>
            <main>
                <Routes fallback=NotFound>
                    <Route path=StaticSegment("") view={Lazy::<OverviewRoute>::new()}/>
                    <Route path=StaticSegment("login") view={Lazy::<LoginRoute>::new()}/>
                    <Route path=StaticSegment("setup") view={Lazy::<SetupRoute>::new()}/>
                    <Route path=StaticSegment("account") view={Lazy::<AccountRoute>::new()}/>
                    <Route path=StaticSegment("ingestion") view={Lazy::<IngestionRoute>::new()}/>
                    <Route path=StaticSegment("teams") view={Lazy::<TeamsRoute>::new()}/>
                    <Route path=(StaticSegment("teams"), ParamSegment("team")) view={Lazy::<TeamRoute>::new()}/>
                    <Route path=(StaticSegment("projects"), ParamSegment("project")) view={Lazy::<ProjectRoute>::new()}/>
                    <Route path=StaticSegment("budgets") view={Lazy::<BudgetsRoute>::new()}/>
                    <Route path=(StaticSegment("budgets"), ParamSegment("id")) view={Lazy::<BudgetRoute>::new()}/>
                    <Route path=StaticSegment("savings") view={Lazy::<SavingsRoute>::new()}/>
                    <Route path=(StaticSegment("savings"), StaticSegment("report")) view={Lazy::<SavingsReportRoute>::new()}/>
                    <Route path=StaticSegment("statements") view={Lazy::<StatementsRoute>::new()}/>
                    <Route path=StaticSegment("what-if") view={Lazy::<WhatIfRoute>::new()}/>
                    <Route path=StaticSegment("approvals") view={Lazy::<ApprovalsRoute>::new()}/>
                    <Route path=StaticSegment("enforcement") view={Lazy::<EnforcementRoute>::new()}/>
                    <Route path=(StaticSegment("admin"), StaticSegment("users")) view={Lazy::<UsersRoute>::new()}/>
                    <Route path=(StaticSegment("admin"), StaticSegment("teams")) view={Lazy::<TeamsAdminRoute>::new()}/>
                    <Route path=(StaticSegment("admin"), StaticSegment("audit")) view={Lazy::<AuditRoute>::new()}/>
                    <Route path=(StaticSegment("admin"), StaticSegment("allocation")) view={Lazy::<AllocationRoute>::new()}/>
                </Routes>
            </main>
        </Router>
    }
}

/// The bar above every page. Wide screens show the main navigation and the account menu
/// inline; under 860 px (style/main.css) they fold behind a "Menu" disclosure. The
/// disclosure is a plain `<details>`: it opens and closes without JavaScript, and CSS shows
/// the navigation and account menu beside it while it is open, so each exists only once.
#[component]
fn TopBar() -> impl IntoView {
    let location = use_location();
    let menu = NodeRef::<leptos::html::Details>::new();
    // After hydration a link in the open menu navigates in the page, which would leave the
    // menu open over the next page: close it whenever the location changes.
    Effect::new(move |ran_before: Option<()>| {
        location.pathname.track();
        location.search.track();
        if ran_before.is_some()
            && let Some(menu) = menu.get_untracked()
        {
            let _ = menu.remove_attribute("open");
        }
    });

    view! {
        <header class="topbar">
            <a class="brand" href="/">"burnrate"</a>
            <details class="menu" node_ref=menu>
                <summary data-testid="menu-toggle">"Menu"</summary>
            </details>
            <nav class="main-nav" aria-label="Main">
                <a href="/">"Overview"</a>
                <a href="/teams">"Teams"</a>
                <a href="/budgets">"Budgets"</a>
                <a href="/savings">"Savings"</a>
                <a href="/statements">"Statements"</a>
                <a href="/approvals">"Approvals"</a>
                <a href="/enforcement">"Enforcement"</a>
                <a href="/ingestion">"Ingestion"</a>
            </nav>
            <UserMenu/>
        </header>
    }
}

/// Each page is a lazy route: the release build (scripts/build-site.sh) puts its code in its own wasm
/// chunk, so a visit downloads the framework and the pages it shows instead of every page.
macro_rules! lazy_pages {
    ($($route:ident => $page:ident,)*) => {$(
        #[doc = concat!("The lazily loaded route of [`", stringify!($page), "`].")]
        struct $route;

        #[lazy_route]
        impl LazyRoute for $route {
            fn data() -> Self {
                Self
            }

            fn view(this: Self) -> AnyView {
                let _ = this;
                view! { <$page/> }.into_any()
            }
        }
    )*};
}

lazy_pages! {
    OverviewRoute => OverviewPage,
    LoginRoute => LoginPage,
    SetupRoute => SetupPage,
    AccountRoute => AccountPage,
    IngestionRoute => IngestionPage,
    TeamsRoute => TeamsPage,
    TeamRoute => TeamPage,
    ProjectRoute => ProjectPage,
    BudgetsRoute => BudgetsPage,
    BudgetRoute => BudgetPage,
    SavingsRoute => SavingsPage,
    SavingsReportRoute => SavingsReportPage,
    WhatIfRoute => WhatIfPage,
    ApprovalsRoute => ApprovalsPage,
    EnforcementRoute => EnforcementPage,
    UsersRoute => UsersPage,
    TeamsAdminRoute => TeamsAdminPage,
    AuditRoute => AuditPage,
    AllocationRoute => AllocationRulesPage,
    StatementsRoute => StatementsPage,
}

/// Shown for unknown paths, with a 404 status when rendered on the server.
#[component]
fn NotFound() -> impl IntoView {
    #[cfg(feature = "ssr")]
    {
        if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
            response.set_status(http::StatusCode::NOT_FOUND);
        }
    }
    view! {
        <Title text="Not found · burnrate"/>
        <h1>"Page not found"</h1>
        <p><a href="/">"Go to the Overview"</a></p>
    }
}

/// The page's Content-Security-Policy allows exactly the inline hydration script that
/// carries this response's nonce.
#[cfg(feature = "ssr")]
fn set_page_csp() {
    let nonce = leptos::nonce::use_nonce();
    let response = use_context::<leptos_axum::ResponseOptions>();
    if let (Some(nonce), Some(response)) = (nonce, response)
        && let Ok(value) = http::HeaderValue::from_str(&crate::csp::page_csp(&nonce))
    {
        response.insert_header(http::header::CONTENT_SECURITY_POLICY, value);
    }
}
