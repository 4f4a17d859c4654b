//! burnrate: a self-hosted GPU and AI cloud FinOps dashboard.
//!
//! One crate, two builds: the `ssr` feature builds the server binary (axum, Postgres,
//! the CLI), the `hydrate` feature builds the wasm bundle that hydrates the pages.
//! Modules are organised by feature; server-only modules sit behind `ssr`.

pub mod allocation;
#[cfg(feature = "ssr")]
pub mod anomalies;
#[cfg(feature = "ssr")]
pub mod api;
pub mod app;
#[cfg(feature = "ssr")]
pub mod as_code;
pub mod audit;
#[cfg(feature = "ssr")]
pub mod audit_log;
pub mod auth;
pub mod budgets;
pub mod codec;
pub mod costs;
pub mod dashboard;
pub mod enforcement;
pub mod error;
pub mod format;
pub mod ingestion;
pub mod period;
pub mod savings;
pub mod statements;
pub mod teams;
pub mod ui;

#[cfg(feature = "ssr")]
pub mod aws;
#[cfg(feature = "ssr")]
pub mod catalogue;
#[cfg(feature = "ssr")]
pub mod charts;
#[cfg(feature = "ssr")]
pub mod cli;
#[cfg(feature = "ssr")]
pub mod client_address;
#[cfg(feature = "ssr")]
pub mod config;
#[cfg(feature = "ssr")]
pub mod csp;
#[cfg(feature = "ssr")]
pub mod ctx;
#[cfg(feature = "ssr")]
pub mod db;
#[cfg(feature = "ssr")]
pub mod demo;
#[cfg(feature = "ssr")]
pub mod doctor;
#[cfg(feature = "ssr")]
pub mod jobs;
#[cfg(feature = "ssr")]
pub mod mail;
#[cfg(feature = "ssr")]
pub mod metrics;
#[cfg(feature = "ssr")]
pub mod outbox;
#[cfg(feature = "ssr")]
pub mod page_cache;
#[cfg(feature = "ssr")]
pub mod page_data;
#[cfg(feature = "ssr")]
pub mod preflight;
#[cfg(feature = "ssr")]
pub mod server;
#[cfg(feature = "ssr")]
pub mod usage_type;

#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    // Pages are lazy routes (see `app`): hydration waits for the page's wasm chunk.
    wasm_bindgen_futures::spawn_local(async {
        let Some(body) = leptos::prelude::document().body() else {
            return;
        };
        leptos::mount::hydrate_from_async(body.clone(), app::App).await.forget();
        // Marks the page interactive, so browser tests wait for it instead of sleeping.
        let _ = body.set_attribute("data-hydrated", "true");
    });
}
