//! What every page has: one header (document title, breadcrumbs and heading), the
//! loading and error scaffold around its data, and the empty state before any data.

use leptos::prelude::*;
use leptos_meta::Title;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::codec::Json;
use crate::error::AppError;

/// A page's document title, breadcrumbs and heading: `Overview / [parent /] title`. The
/// Overview itself (`top`) shows only its own name.
#[component]
pub fn PageHeader(
    #[prop(into)] title: String,
    /// `(href, label)` of the page above this one, if it is not the Overview.
    #[prop(optional)]
    parent: Option<(&'static str, &'static str)>,
    #[prop(optional)] top: bool,
) -> impl IntoView {
    view! {
        <Title text=format!("{title} · burnrate")/>
        <nav class="breadcrumbs" aria-label="Breadcrumb">
            {(!top).then(|| view! { <a href="/">"Overview"</a> " / " })}
            {parent.map(|(href, label)| view! { <a href=href>{label}</a> " / " })}
            <span>{title.clone()}</span>
        </nav>
        <h1>{title}</h1>
    }
}

/// "Loading…" while a page's data comes, its error in words if it failed, else `body`
/// with the data. Keeps what is shown during a filter change (a transition, not a blank).
pub fn loaded<T, V>(
    data: Resource<Result<T, AppError>, Json>,
    body: impl Fn(T) -> V + Clone + Send + Sync + 'static,
) -> impl IntoView
where
    T: Serialize + DeserializeOwned + Clone + Send + Sync + 'static,
    V: IntoView + 'static,
{
    view! {
        <Transition fallback=|| view! { <p class="loading">"Loading…"</p> }>
            {move || {
                let body = body.clone();
                Suspend::new(async move {
                    match data.await {
                        Ok(value) => body(value).into_any(),
                        Err(err) => error_text(&err).into_any(),
                    }
                })
            }}
        </Transition>
    }
}

/// An error in words, announced to screen readers.
pub fn error_text(err: &AppError) -> impl IntoView + use<> {
    view! { <p class="error" role="alert">{err.to_string()}</p> }
}

/// What a page shows when it has nothing to list yet: say so, and what to do.
#[component]
pub fn EmptyState(
    /// The test id, `empty-state` unless the page has several.
    #[prop(default = "empty-state")]
    testid: &'static str,
    children: Children,
) -> impl IntoView {
    view! { <section class="empty" data-testid=testid>{children()}</section> }
}

/// Shown by every cost page, and by the Ingestion page, before any cost data is loaded.
#[component]
pub fn NoCostData() -> impl IntoView {
    view! {
        <EmptyState>
            <h2>"No cost data yet"</h2>
            <p>"Run " <code>"burnrate ingest"</code> " with AWS credentials, or load the demo organisation with "
                <code>"burnrate demo"</code> " (or start with " <code>"burnrate serve --demo"</code> ")."</p>
        </EmptyState>
    }
}
