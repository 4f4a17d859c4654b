//! Server-drawn charts and the legend for the days whose figures are not final.

use chrono::NaiveDate;
use leptos::prelude::*;

use crate::codec::Svg;
use crate::period::OpenDays;

/// The server-drawn SVG. plotters escapes every text and attribute it writes, and the
/// title/description are escaped when added, so the markup carries no tag value as code.
#[component]
pub fn Chart(svg: Svg, testid: &'static str) -> impl IntoView {
    view! { <figure class="chart" data-testid=testid inner_html=svg.0></figure> }
}

/// Says which days are provisional and which are on an open bill, under a chart or table
/// that marks them.
#[component]
pub fn OpenDaysLegend(days: OpenDays) -> impl IntoView {
    let provisional = (!days.provisional.is_empty()).then(|| {
        view! {
            <p class="hint" data-testid="provisional-legend">
                "Provisional: " {span(&days.provisional)} ". AWS publishes a day's figures over the following days and may "
                "restate them; they are drawn lighter in charts and marked in tables, and the run-rate leaves them out."
            </p>
        }
    });
    let bill_open = (!days.bill_open.is_empty()).then(|| {
        view! {
            <p class="hint" data-testid="bill-open-legend">
                "Bill open: " {span(&days.bill_open)} ". AWS calls these days Estimated until the month's bill closes; "
                "past the days it may still restate they count as settled (a change at the close shows on the next statement)."
            </p>
        }
    });
    (provisional, bill_open)
}

/// `2026-11-01 to 2026-11-20`, or the one day.
fn span(days: &[NaiveDate]) -> String {
    match (days.first(), days.last()) {
        (Some(first), Some(last)) if first != last => format!("{first} to {last}"),
        (Some(first), _) => first.to_string(),
        _ => String::new(),
    }
}
