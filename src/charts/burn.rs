//! The burn-rate chart: cumulative spend, the forecast with its range, and the budget line.

use chrono::NaiveDate;
use plotters::prelude::*;
use rust_decimal::Decimal;
use rust_decimal::prelude::ToPrimitive;

use super::hover::Targets;
use super::legend::{self, Entry, Swatch};
use super::{GRID, PLOT_HEIGHT, axis_usd, colour, point_title, with_accessible_text};

/// Cumulative spend so far, the forecast to the period's end with its band, and the budget
/// line when there is one. `actual` and the forecast points are (day, cumulative USD).
pub struct Burn<'a> {
    pub days: &'a [NaiveDate],
    pub actual: &'a [(NaiveDate, Decimal)],
    /// Provisional days (`costs::settlement`): the actual line is dashed across them.
    pub provisional: &'a [NaiveDate],
    /// (day, low, expected, high), from the last actual day to the period's last day.
    pub forecast: &'a [(NaiveDate, Decimal, Decimal, Decimal)],
    pub budget: Option<Decimal>,
    /// Budget thresholds drawn as dotted lines: (label, amount).
    pub thresholds: &'a [(String, Decimal)],
}

pub fn burn(title: &str, description: &str, burn: &Burn) -> String {
    let mut svg = String::new();
    match draw_burn(&mut svg, title, burn) {
        Ok(targets) => with_accessible_text(targets.add_to(svg), title, description),
        Err(error) => {
            tracing::error!(%error, "drawing a chart failed");
            String::new()
        }
    }
}

/// The legend entries, in drawing order, for what `burn` has to show.
fn entries(burn: &Burn) -> Vec<Entry> {
    let line = |n: usize, width: u32, dashed: bool| Swatch::Line {
        colour: colour(n).to_rgba(),
        width,
        dashed,
    };
    let mut entries = Vec::new();
    if !burn.forecast.is_empty() {
        entries.push(Entry {
            label: "Forecast range".into(),
            swatch: Swatch::Fill(colour(1).mix(0.25)),
        });
    }
    entries.push(Entry {
        label: "Actual".into(),
        swatch: line(4, 3, false),
    });
    if burn.actual.iter().any(|(d, _)| burn.provisional.contains(d)) {
        entries.push(Entry {
            label: "Actual, provisional days".into(),
            swatch: line(4, 3, true),
        });
    }
    if !burn.forecast.is_empty() {
        entries.push(Entry {
            label: "Forecast".into(),
            swatch: line(5, 2, true),
        });
    }
    if burn.budget.is_some() {
        entries.push(Entry {
            label: "Budget".into(),
            swatch: line(7, 2, false),
        });
    }
    for (n, (label, _)) in burn.thresholds.iter().enumerate() {
        entries.push(Entry {
            label: format!("Threshold {label}"),
            swatch: line(2 + n % 2, 1, true),
        });
    }
    entries
}

fn draw_burn(svg: &mut String, title: &str, burn: &Burn) -> Result<Targets, Box<dyn std::error::Error>> {
    // Pixels only: amounts stay exact decimals in the page data and tables.
    let f = |d: &Decimal| d.to_f64().unwrap_or(0.0);
    let x = |day: &NaiveDate| burn.days.iter().position(|d| d == day).map(|i| i as f64 + 1.0);
    let mut top = burn.budget.as_ref().map(f).unwrap_or(0.0);
    top = burn.thresholds.iter().map(|(_, v)| f(v)).fold(top, f64::max);
    top = burn.actual.iter().map(|(_, v)| f(v)).fold(top, f64::max);
    top = burn.forecast.iter().map(|(_, _, _, high)| f(high)).fold(top, f64::max);
    let entries = entries(burn);
    let root = SVGBackend::with_string(svg, (900, PLOT_HEIGHT + legend::height(entries.len()))).into_drawing_area();
    let (plot, legend_area) = root.split_vertically(PLOT_HEIGHT);
    let mut chart = ChartBuilder::on(&plot)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(96)
        .build_cartesian_2d(0f64..burn.days.len().max(1) as f64, 0f64..(top.max(1.0) * 1.08))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .max_light_lines(0)
        .bold_line_style(GRID.mix(0.35))
        .axis_style(GRID)
        .y_labels(6)
        .x_desc("Day (UTC)")
        .y_desc("Cumulative spend (USD)")
        .x_labels(8)
        .x_label_formatter(&|v| {
            burn.days
                .get((*v as usize).saturating_sub(1))
                .map(|d| d.format("%m-%d").to_string())
                .unwrap_or_default()
        })
        .y_label_formatter(&|v| axis_usd(*v))
        .draw()?;
    let band: Vec<(f64, f64)> = burn
        .forecast
        .iter()
        .filter_map(|(d, _, _, high)| x(d).map(|x| (x, f(high))))
        .chain(
            burn.forecast
                .iter()
                .rev()
                .filter_map(|(d, low, _, _)| x(d).map(|x| (x, f(low)))),
        )
        .collect();
    if !band.is_empty() {
        chart.draw_series(std::iter::once(Polygon::new(band, colour(1).mix(0.25).filled())))?;
    }
    // Settled days solid; from the last settled day on, a dashed line through provisional days.
    let first_provisional = burn.actual.iter().position(|(d, _)| burn.provisional.contains(d));
    let settled_end = first_provisional.unwrap_or(burn.actual.len());
    chart.draw_series(LineSeries::new(
        burn.actual[..settled_end]
            .iter()
            .filter_map(|(d, v)| x(d).map(|x| (x, f(v)))),
        colour(4).stroke_width(3),
    ))?;
    if let Some(first) = first_provisional {
        chart.draw_series(DashedLineSeries::new(
            burn.actual[first.saturating_sub(1)..]
                .iter()
                .filter_map(|(d, v)| x(d).map(|x| (x, f(v)))),
            3,
            3,
            colour(4).stroke_width(3),
        ))?;
    }
    chart.draw_series(DashedLineSeries::new(
        burn.forecast
            .iter()
            .filter_map(|(d, _, mid, _)| x(d).map(|x| (x, f(mid)))),
        6,
        4,
        colour(5).stroke_width(2),
    ))?;
    // The budget's height on the plot (a pixel coordinate, from its exact amount).
    if let Some(budget_y) = burn.budget.as_ref().map(f) {
        chart.draw_series(LineSeries::new(
            [(0.0, budget_y), (burn.days.len() as f64, budget_y)],
            colour(7).stroke_width(2),
        ))?;
    }
    for (n, (_, amount)) in burn.thresholds.iter().enumerate() {
        let y = f(amount);
        let style = colour(2 + n % 2).stroke_width(1);
        chart.draw_series(DashedLineSeries::new(
            [(0.0, y), (burn.days.len() as f64, y)],
            2,
            4,
            style,
        ))?;
    }
    let mut targets = Targets::default();
    for (day, amount) in burn.actual {
        if let Some(at) = x(day) {
            let title = point_title(*day, "Actual, cumulative", *amount, burn.provisional.contains(day));
            targets.point(chart.backend_coord(&(at, f(amount))), &title);
        }
    }
    for (day, low, expected, high) in burn.forecast {
        if let Some(at) = x(day) {
            let title = format!(
                "{} (range {} to {})",
                point_title(*day, "Forecast, cumulative", *expected, false),
                crate::format::usd(*low),
                crate::format::usd(*high)
            );
            targets.point(chart.backend_coord(&(at, f(expected))), &title);
        }
    }
    legend::draw(&legend_area, &entries)?;
    root.present()?;
    Ok(targets)
}
