//! Charts drawn on the server with plotters as SVG. Amounts are exact decimals everywhere
//! else; here they become f64 only to place pixels. plotters escapes text and attributes, so
//! tag values in legends stay text; `<title>`/`<desc>` are added (escaped) for screen readers.

use chrono::NaiveDate;
use plotters::prelude::*;
use rust_decimal::Decimal;
use rust_decimal::prelude::ToPrimitive;

mod burn;
mod hover;
mod legend;
pub use burn::{Burn, burn};
use legend::{Entry, Swatch};

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

/// How strongly a provisional day is drawn, against 1.0 for a settled one.
const PROVISIONAL_OPACITY: f64 = 0.4;
/// The legend entry for provisional days.
const PROVISIONAL_LABEL: &str = "Lighter: provisional days";
/// The chart's width, and the plot's height above the legend, in pixels.
const WIDTH: u32 = 900;
const PLOT_HEIGHT: u32 = 340;
/// Axes and grid lines: a mid grey that reads on a light and a dark page alike.
const GRID: RGBColor = RGBColor(0x8A, 0x8A, 0x84);
/// Horizontal grid lines: a few round amounts, no minor lines between them.
const Y_LABELS: usize = 6;

/// One named series of daily amounts.
#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub points: Vec<(NaiveDate, Decimal)>,
}

/// Stacked daily bars, one colour per series, with a legend below the plot. `days` is every
/// day shown; bars of `provisional` days are drawn lighter, with a
/// legend entry. Each bar's title gives its day, series and exact amount.
pub fn stacked_daily(
    title: &str,
    description: &str,
    days: &[NaiveDate],
    series: &[Series],
    provisional: &[NaiveDate],
) -> String {
    let mut svg = String::new();
    let drawn = draw_stacked(&mut svg, title, days, series, provisional);
    match drawn {
        Ok(targets) => with_accessible_text(targets.add_to(svg), title, description),
        Err(error) => {
            tracing::error!(%error, "drawing a chart failed");
            String::new()
        }
    }
}

fn draw_stacked(
    svg: &mut String,
    title: &str,
    days: &[NaiveDate],
    series: &[Series],
    provisional: &[NaiveDate],
) -> Result<hover::Targets, Box<dyn std::error::Error>> {
    let index = |day: &NaiveDate| days.iter().position(|d| d == day);
    let mut totals = vec![0f64; days.len()];
    for s in series {
        for (day, amount) in &s.points {
            if let Some(i) = index(day) {
                totals[i] += amount.to_f64().unwrap_or(0.0);
            }
        }
    }
    let mut entries: Vec<Entry> = series
        .iter()
        .enumerate()
        .map(|(n, s)| Entry {
            label: s.name.clone(),
            swatch: Swatch::Fill(colour(n).to_rgba()),
        })
        .collect();
    if days.iter().any(|d| provisional.contains(d)) {
        entries.push(Entry {
            label: PROVISIONAL_LABEL.into(),
            swatch: Swatch::Fill(colour(7).mix(PROVISIONAL_OPACITY)),
        });
    }
    let top = totals.iter().cloned().fold(0.0, f64::max).max(1.0) * 1.08;
    let root = SVGBackend::with_string(svg, (WIDTH, PLOT_HEIGHT + legend::height(entries.len()))).into_drawing_area();
    let (plot, legend_area) = root.split_vertically(PLOT_HEIGHT);
    let mut chart = ChartBuilder::on(&plot)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(96)
        .build_cartesian_2d(0f64..days.len().max(1) as f64, 0f64..top)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .max_light_lines(0)
        .bold_line_style(GRID.mix(0.35))
        .axis_style(GRID)
        .y_labels(Y_LABELS)
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
    let mut targets = hover::Targets::default();
    let mut base = vec![0f64; days.len()];
    for (n, s) in series.iter().enumerate() {
        let mut bars = Vec::new();
        for (day, amount) in &s.points {
            if let Some(i) = index(day) {
                let value = amount.to_f64().unwrap_or(0.0);
                let is_provisional = provisional.contains(day);
                let fill = if is_provisional {
                    colour(n).mix(PROVISIONAL_OPACITY).filled()
                } else {
                    colour(n).filled()
                };
                let (from, to) = ((i as f64 + 0.1, base[i]), (i as f64 + 0.9, base[i] + value));
                bars.push(Rectangle::new([from, to], fill));
                targets.rect(
                    chart.backend_coord(&from),
                    chart.backend_coord(&to),
                    &point_title(*day, &s.name, *amount, is_provisional),
                );
                base[i] += value;
            }
        }
        chart.draw_series(bars)?;
    }
    legend::draw(&legend_area, &entries)?;
    root.present()?;
    Ok(targets)
}

/// `2026-11-05 · ml-research: $12,345.67 (provisional)`: a bar's or point's hover title.
pub(crate) fn point_title(day: NaiveDate, series: &str, amount: Decimal, provisional: bool) -> String {
    let marked = if provisional { " (provisional)" } else { "" };
    format!(
        "{day} · {}: {}{marked}",
        crate::format::tag_label(series),
        crate::format::usd(amount)
    )
}

/// `$12,000`: an axis label in whole dollars with thousands separators; the exact figures
/// are in each bar's title and in the table beside each chart.
pub(crate) fn axis_usd(value: f64) -> String {
    let dollars = Decimal::from_f64_retain(value.round()).unwrap_or_default().trunc();
    let text = crate::format::usd(dollars);
    text.strip_suffix(".00").map(str::to_string).unwrap_or(text)
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
        assert!(!svg.contains(PROVISIONAL_LABEL), "no provisional day, no legend entry");
    }

    #[test]
    fn provisional_days_are_drawn_lighter_with_a_legend_entry() {
        let settled = NaiveDate::from_ymd_opt(2026, 11, 20).expect("date");
        let provisional = NaiveDate::from_ymd_opt(2026, 11, 21).expect("date");
        let series = [Series {
            name: "alpha".into(),
            points: vec![(settled, Decimal::from(10)), (provisional, Decimal::from(4))],
        }];
        let svg = stacked_daily("t", "d", &[settled, provisional], &series, &[provisional]);
        assert!(svg.contains(PROVISIONAL_LABEL), "{svg}");
        assert!(svg.contains("opacity=\"0.4\""), "the provisional bar is lighter: {svg}");
        assert!(
            svg.contains("<title>2026-11-21 · alpha: $4.00 (provisional)</title>"),
            "{svg}"
        );
        assert!(svg.contains("<title>2026-11-20 · alpha: $10.00</title>"), "{svg}");
    }

    #[test]
    fn every_series_has_a_swatch_in_a_legend_below_the_plot() {
        let days: Vec<NaiveDate> = (1..=3)
            .map(|d| NaiveDate::from_ymd_opt(2026, 11, d).expect("date"))
            .collect();
        let series: Vec<Series> = ["first", "second", "third", "fourth"]
            .iter()
            .map(|name| Series {
                name: name.to_string(),
                points: days.iter().map(|d| (*d, Decimal::new(123_456, 2))).collect(),
            })
            .collect();
        let svg = stacked_daily("t", "d", &days, &series, &[]);
        // Each series' colour appears at least twice: its bars and its swatch, even the
        // second series (a swatch once went missing there).
        for n in 0..series.len() {
            let RGBColor(r, g, b) = colour(n);
            let hex = format!("#{r:02X}{g:02X}{b:02X}");
            assert!(svg.matches(&hex).count() >= 4, "series {n} ({hex}): {svg}");
        }
        // The labels sit below the plot area (y beyond its 340 pixels).
        for name in ["first", "second", "third", "fourth"] {
            let at = svg.find(&format!("\n{name}\n</text>")).expect(name);
            let tag = &svg[svg[..at].rfind("<text").expect("text element")..at];
            let y: f64 = tag
                .split("y=\"")
                .nth(1)
                .and_then(|r| r.split('"').next())
                .and_then(|v| v.parse().ok())
                .expect("y");
            assert!(y > 340.0, "{name} is drawn at y={y}, inside the plot");
        }
    }

    #[test]
    fn axis_labels_are_whole_dollars_with_thousands_separators_and_the_grid_has_no_minor_lines() {
        assert_eq!(axis_usd(0.0), "$0");
        assert_eq!(axis_usd(1250.0), "$1,250");
        assert_eq!(axis_usd(38572.4), "$38,572");
        assert_eq!(axis_usd(1_200_000.0), "$1,200,000");
        let day = NaiveDate::from_ymd_opt(2026, 11, 1).expect("date");
        let series = [Series {
            name: "a".into(),
            points: vec![(day, Decimal::from(50_000))],
        }];
        let svg = stacked_daily("t", "d", &[day], &series, &[]);
        // Major grid lines at 0.35 opacity, axes and ticks solid: no faint minor lines.
        let lines: Vec<&str> = svg
            .split("<line")
            .skip(1)
            .map(|l| &l[..l.find("/>").unwrap_or(l.len())])
            .collect();
        let grid = lines.iter().filter(|l| l.contains("opacity=\"0.35\"")).count();
        assert!((3..=Y_LABELS + 1).contains(&grid), "{grid} grid lines: {svg}");
        assert!(
            lines
                .iter()
                .all(|l| l.contains("opacity=\"0.35\"") || l.contains("opacity=\"1\"")),
            "a faint line: {svg}"
        );
        assert!(svg.contains("\n$50,000\n") && svg.contains("\n$10,000\n"), "{svg}");
    }
}
