//! The period, metric and credits filters every cost page shares, keeping the Overview's
//! team and account filters. They live in the query string, so
//! views are shareable and Back restores them.

use leptos::prelude::*;
use leptos_router::components::Form;
use leptos_router::hooks::{use_location, use_query_map};

use crate::period::{Credits, Metric, Period};

/// Period, metric and credits switches. Plain links: the router turns them into client-side
/// navigations, and they still work before hydration or without JavaScript.
#[component]
pub fn FilterBar() -> impl IntoView {
    let query = use_query_map();
    let location = use_location();
    let path = move || location.pathname.get();
    let period = move || Period::parse(period_value(&query.read()).as_deref()).unwrap_or_default();
    let metric = move || Metric::parse(query.read().get("metric").as_deref()).unwrap_or_default();
    let credits = move || Credits::parse(query.read().get("credits").as_deref()).unwrap_or_default();
    // The Overview's team and account filters survive period and metric changes.
    let kept = move || {
        let q = query.read();
        ["team", "account"]
            .into_iter()
            .filter_map(|key| q.get(key).filter(|v| !v.is_empty()).map(|v| (key, v)))
            .collect::<Vec<_>>()
    };

    let period_links = Period::ALL
        .into_iter()
        .map(|p| {
            chip(
                format!("period-{}", p.key()),
                None,
                p.label(),
                move || filter_href(&path(), p, metric(), credits(), &kept()),
                move || period() == p,
            )
        })
        .collect_view();
    let metric_links = [Metric::Unblended, Metric::Amortized]
        .into_iter()
        .map(|m| {
            chip(
                format!("metric-{}", m.key()),
                None,
                m.label().to_string(),
                move || filter_href(&path(), period(), m, credits(), &kept()),
                move || metric() == m,
            )
        })
        .collect_view();
    let credits_links = Credits::ALL
        .into_iter()
        .map(|c| {
            chip(
                format!("credits-{}", c.key()),
                Some(format!("Figures {}", c.describe())),
                c.label().to_string(),
                move || filter_href(&path(), period(), metric(), c, &kept()),
                move || credits() == c,
            )
        })
        .collect_view();

    let month_value = move || match period() {
        Period::Month(first) => first.format("%Y-%m").to_string(),
        _ => String::new(),
    };
    let custom = move || match period() {
        Period::Custom(range) => (range.from.to_string(), range.last_day().to_string()),
        _ => (String::new(), String::new()),
    };
    view! {
        <div class="filters">
            <nav aria-label="Period" class="chip-group">{period_links}</nav>
            <nav aria-label="Metric" class="chip-group">{metric_links}</nav>
            <nav aria-label="Credits" class="chip-group">{credits_links}</nav>
            <Form method="GET" action=path attr:class="inline" attr:data-testid="month-form">
                <input type="hidden" name="metric" value=move || metric().key()/>
                <input type="hidden" name="credits" value=move || credits().key()/>
                {move || kept().into_iter().map(|(k, v)| view! { <input type="hidden" name=k value=v/> }).collect_view()}
                <label>"Month " <input type="month" name="month" required value=month_value/></label>
                <button type="submit">"Show month"</button>
            </Form>
            <Form method="GET" action=path attr:class="inline" attr:data-testid="range-form">
                <input type="hidden" name="metric" value=move || metric().key()/>
                <input type="hidden" name="credits" value=move || credits().key()/>
                {move || kept().into_iter().map(|(k, v)| view! { <input type="hidden" name=k value=v/> }).collect_view()}
                <label>"From " <input type="date" name="from" required value=move || custom().0/></label>
                <label>"to " <input type="date" name="to" required value=move || custom().1/></label>
                <button type="submit">"Show range"</button>
            </Form>
        </div>
    }
}

/// One switch: a link to the same page with one filter changed, marked while it is the
/// current one.
fn chip(
    testid: String,
    title: Option<String>,
    label: String,
    href: impl Fn() -> String + Send + Sync + 'static,
    current: impl Fn() -> bool + Send + Sync + 'static,
) -> impl IntoView {
    view! {
        <a class="chip" data-testid=testid title=title href=href aria-current=move || current().then_some("page")>
            {label}
        </a>
    }
}

/// What a cost page's URL asks for, as text its server function validates: the period
/// (see [`period_value`]), metric, credits and account.
#[derive(Debug, Clone, PartialEq)]
pub struct CostFilters {
    pub period: Option<String>,
    pub metric: Option<String>,
    pub credits: Option<String>,
    pub account: Option<String>,
}

impl CostFilters {
    pub fn read(query: &leptos_router::params::ParamsMap) -> CostFilters {
        CostFilters {
            period: period_value(query),
            metric: query.get("metric"),
            credits: query.get("credits"),
            account: query.get("account"),
        }
    }
}

/// `?period=`, or what the month picker or range form put in the URL instead.
pub fn period_value(query: &leptos_router::params::ParamsMap) -> Option<String> {
    Period::query_value(
        query.get("period"),
        query.get("month"),
        query.get("from"),
        query.get("to"),
    )
}

/// The same page with other filters, so each page keeps its own path.
fn filter_href(path: &str, period: Period, metric: Metric, credits: Credits, kept: &[(&str, String)]) -> String {
    let kept: String = kept
        .iter()
        .map(|(key, value)| format!("&{key}={}", crate::format::url_encode(value)))
        .collect();
    // Net is the default, so links of the usual view stay as short as before.
    let credits = match credits {
        Credits::Net => String::new(),
        Credits::Gross => format!("&credits={}", credits.key()),
    };
    format!("{path}?period={}&metric={}{credits}{kept}", period.key(), metric.key())
}
