//! Server-drawn charts and the legend for the days AWS still calls Estimated.

use chrono::NaiveDate;
use leptos::prelude::*;

use crate::codec::Svg;

/// The server-drawn SVG. plotters escapes every text and attribute it writes, and the
/// title/description are escaped when added, so the markup carries no tag value as code.
#[component]
pub fn Chart(svg: Svg, testid: &'static str) -> impl IntoView {
    view! { <figure class="chart" data-testid=testid inner_html=svg.0></figure> }
}

/// Says which days are provisional, under a chart or table that marks them.
#[component]
pub fn EstimatedLegend(days: Vec<NaiveDate>) -> impl IntoView {
    (!days.is_empty()).then(|| {
        let span = match (days.first(), days.last()) {
            (Some(first), Some(last)) if first != last => format!("{first} to {last}"),
            (Some(first), _) => first.to_string(),
            _ => String::new(),
        };
        view! {
            <p class="hint" data-testid="estimated-legend">
                "Estimated: " {span} " are provisional. AWS publishes a day's figures over the following days and may "
                "restate them; they are drawn lighter in charts and marked in tables, and the run-rate leaves them out."
            </p>
        }
    })
}
