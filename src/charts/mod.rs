//! Charts drawn on the server with plotters as SVG. Amounts are exact decimals everywhere
//! else; here they become f64 only to place pixels. plotters escapes text and attributes, so
//! tag values in legends stay text; `<title>`/`<desc>` are added (escaped) for screen readers.

use chrono::NaiveDate;
use plotters::prelude::*;
use rust_decimal::Decimal;
use rust_decimal::prelude::ToPrimitive;

mod burn;
pub use burn::{Burn, burn};

/// Okabe–Ito, then Paul Tol's muted scheme: distinguishable with common colour-blindness.
const PALETTE: [(u8, u8, u8); 16] = [
    (0xE6, 0x9F, 0x00),
    (0x56, 0xB4, 0xE9),
    (0x00, 0x9E, 0x73),
    (0xF0, 0xE4, 0x42),
    (0x00, 0x72, 0xB2),
    (0xD5, 0x5E, 0x00),
    (0xCC, 0x79, 0xA7),
    (0x99, 0x99, 0x99),
    (0x33, 0x22, 0x88),
    (0x88, 0xCC, 0xEE),
    (0x44, 0xAA, 0x99),
    (0x11, 0x77, 0x33),
    (0x99, 0x99, 0x33),
    (0xDD, 0xCC, 0x77),
    (0xCC, 0x66, 0x77),
    (0xAA, 0x44, 0x99),
];

pub fn colour(index: usize) -> RGBColor {
    let (r, g, b) = PALETTE[index % PALETTE.len()];
    RGBColor(r, g, b)
}

/// How strongly a provisional (Estimated) day is drawn, against 1.0 for a settled one.
const ESTIMATED_OPACITY: f64 = 0.4;
/// The legend entry for provisional days.
const ESTIMATED_LABEL: &str = "Lighter: Estimated (provisional) days";

/// One named series of daily amounts.
#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub points: Vec<(NaiveDate, Decimal)>,
}

/// Stacked daily bars, one colour per series, with a legend. `days` is every day shown;
/// bars of `estimated` days (provisional figures) are drawn lighter, with a legend entry.
pub fn stacked_daily(
    title: &str,
    description: &str,
    days: &[NaiveDate],
    series: &[Series],
    estimated: &[NaiveDate],
) -> String {
    let mut svg = String::new();
    let drawn = draw_stacked(&mut svg, title, days, series, estimated);
    if let Err(error) = drawn {
        tracing::error!(%error, "drawing a chart failed");
        return String::new();
    }
    with_accessible_text(svg, title, description)
}

fn draw_stacked(
    svg: &mut String,
    title: &str,
    days: &[NaiveDate],
    series: &[Series],
    estimated: &[NaiveDate],
) -> Result<(), Box<dyn std::error::Error>> {
    let index = |day: &NaiveDate| days.iter().position(|d| d == day);
    let mut totals = vec![0f64; days.len()];
    for s in series {
        for (day, amount) in &s.points {
            if let Some(i) = index(day) {
                totals[i] += amount.to_f64().unwrap_or(0.0);
            }
        }
    }
    let top = totals.iter().cloned().fold(0.0, f64::max).max(1.0) * 1.08;
    let root = SVGBackend::with_string(svg, (900, 380)).into_drawing_area();
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(72)
        .build_cartesian_2d(0f64..days.len().max(1) as f64, 0f64..top)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_desc("Day (UTC)")
        .y_desc("Spend (USD)")
        .x_labels(8)
        .x_label_formatter(&|x| {
            days.get(*x as usize)
                .map(|d| d.format("%m-%d").to_string())
                .unwrap_or_default()
        })
        .y_label_formatter(&|y| axis_usd(*y))
        .draw()?;
    let mut base = vec![0f64; days.len()];
    for (n, s) in series.iter().enumerate() {
        let mut bars = Vec::new();
        for (day, amount) in &s.points {
            if let Some(i) = index(day) {
                let value = amount.to_f64().unwrap_or(0.0);
                let fill = if estimated.contains(day) {
                    colour(n).mix(ESTIMATED_OPACITY).filled()
                } else {
                    colour(n).filled()
                };
                bars.push(Rectangle::new(
                    [(i as f64 + 0.1, base[i]), (i as f64 + 0.9, base[i] + value)],
                    fill,
                ));
                base[i] += value;
            }
        }
        chart
            .draw_series(bars)?
            .label(s.name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], colour(n).filled()));
    }
    if days.iter().any(|d| estimated.contains(d)) {
        chart
            .draw_series(std::iter::empty::<Rectangle<(f64, f64)>>())?
            .label(ESTIMATED_LABEL)
            .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], colour(7).mix(ESTIMATED_OPACITY).filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .border_style(BLACK.mix(0.3))
        .draw()?;
    root.present()?;
    Ok(())
}

/// `$12k`, `$1.2M`: short axis labels; exact figures are in the table beside each chart.
pub(crate) fn axis_usd(value: f64) -> String {
    match value.abs() {
        v if v >= 1e6 => format!("${:.1}M", value / 1e6),
        v if v >= 1e3 => format!("${:.0}k", value / 1e3),
        _ => format!("${value:.0}"),
    }
}

/// Adds `role="img"`, `<title>` and `<desc>` right after the opening `<svg …>` tag.
pub(crate) fn with_accessible_text(svg: String, title: &str, description: &str) -> String {
    let Some(open_end) = svg
        .find("<svg")
        .and_then(|start| svg[start..].find('>').map(|end| start + end))
    else {
        return svg;
    };
    let mut out = String::with_capacity(svg.len() + title.len() + description.len() + 64);
    out.push_str(&svg[..open_end]);
    out.push_str(" role=\"img\" class=\"chart\"><title>");
    crate::format::escape_html(&mut out, title);
    out.push_str("</title><desc>");
    crate::format::escape_html(&mut out, description);
    out.push_str("</desc>");
    out.push_str(&svg[open_end + 1..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_series_names_stay_text_inside_the_svg() {
        let day = NaiveDate::from_ymd_opt(2026, 11, 1).expect("date");
        let hostile = "<img src=x onerror=alert(1)>";
        let svg = stacked_daily(
            "Daily spend by <team>",
            "Stacked bars & a legend",
            &[day],
            &[Series {
                name: hostile.into(),
                points: vec![(day, Decimal::new(1234, 2))],
            }],
            &[],
        );
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.contains("<title>Daily spend by &lt;team&gt;</title>"));
        assert!(svg.contains("<desc>Stacked bars &amp; a legend</desc>"));
        assert!(svg.contains("&lt;img src=x onerror=alert(1)&gt;"));
        assert!(!svg.contains("<img"));
        assert!(svg.contains("Spend (USD)") && svg.contains("Day (UTC)"));
        assert!(!svg.contains(ESTIMATED_LABEL), "no provisional day, no legend entry");
    }

    #[test]
    fn estimated_days_are_drawn_lighter_with_a_legend_entry() {
        let settled = NaiveDate::from_ymd_opt(2026, 11, 20).expect("date");
        let provisional = NaiveDate::from_ymd_opt(2026, 11, 21).expect("date");
        let series = [Series {
            name: "alpha".into(),
            points: vec![(settled, Decimal::from(10)), (provisional, Decimal::from(4))],
        }];
        let svg = stacked_daily("t", "d", &[settled, provisional], &series, &[provisional]);
        assert!(svg.contains(ESTIMATED_LABEL), "{svg}");
        assert!(svg.contains("opacity=\"0.4\""), "the provisional bar is lighter: {svg}");
    }
}
