//! The period and metric filters every cost page shares. They live in the query string, so
//! views are shareable and Back restores them.

use leptos::prelude::*;
use leptos_router::hooks::{use_location, use_query_map};

use super::period::{Metric, Period};

/// Period and metric switches. Plain links: the router turns them into client-side
/// navigations, and they still work before hydration or without JavaScript.
#[component]
pub fn FilterBar() -> impl IntoView {
    let query = use_query_map();
    let location = use_location();
    let path = move || location.pathname.get();
    let period = move || Period::parse(query.read().get("period").as_deref()).unwrap_or_default();
    let metric = move || Metric::parse(query.read().get("metric").as_deref()).unwrap_or_default();

    let period_links = Period::ALL
        .into_iter()
        .map(|p| {
            view! {
                <a
                    class="chip"
                    data-testid=format!("period-{}", p.key())
                    href=move || filter_href(&path(), p, metric())
                    aria-current=move || (period() == p).then_some("page")
                >
                    {p.label()}
                </a>
            }
        })
        .collect_view();
    let metric_links = [Metric::Unblended, Metric::Amortized]
        .into_iter()
        .map(|m| {
            view! {
                <a
                    class="chip"
                    data-testid=format!("metric-{}", m.key())
                    href=move || filter_href(&path(), period(), m)
                    aria-current=move || (metric() == m).then_some("page")
                >
                    {m.label()}
                </a>
            }
        })
        .collect_view();

    view! {
        <div class="filters">
            <nav aria-label="Period" class="chip-group">{period_links}</nav>
            <nav aria-label="Metric" class="chip-group">{metric_links}</nav>
        </div>
    }
}

/// The same page with other filters, so each page keeps its own path.
fn filter_href(path: &str, period: Period, metric: Metric) -> String {
    format!("{path}?period={}&metric={}", period.key(), metric.key())
}
