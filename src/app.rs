//! The HTML shell, the router and the layout shared by every page.

use leptos::prelude::*;
use leptos_meta::{MetaTags, Stylesheet, Title, provide_meta_context};
use leptos_router::{
    StaticSegment,
    components::{Route, Router, Routes},
};

use crate::costs::overview::OverviewPage;

/// The document around the app, rendered on the server.
pub fn shell(options: LeptosOptions) -> impl IntoView {
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
            <header class="topbar">
                <a class="brand" href="/">"burnrate"</a>
                <nav aria-label="Main">
                    <a href="/">"Overview"</a>
                </nav>
            </header>
            <main>
                <Routes fallback=NotFound>
                    <Route path=StaticSegment("") view=OverviewPage/>
                </Routes>
            </main>
        </Router>
    }
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
