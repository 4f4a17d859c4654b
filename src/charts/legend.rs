//! The legend, drawn below the plot area so it never covers data: one entry per series,
//! each with its own swatch (a filled square for bars and bands, a line sample for lines).

use plotters::coord::Shift;
use plotters::prelude::*;

/// How an entry's sample is drawn.
#[derive(Debug, Clone, Copy)]
pub enum Swatch {
    Fill(RGBAColor),
    Line {
        colour: RGBAColor,
        width: u32,
        dashed: bool,
    },
}

#[derive(Debug, Clone)]
pub struct Entry {
    pub label: String,
    pub swatch: Swatch,
}

/// Entries per row, and the height of a row, in pixels.
const COLUMNS: usize = 3;
const ROW_HEIGHT: u32 = 22;
/// Longer labels are cut with an ellipsis: the table beside each chart has them whole.
const MAX_LABEL_CHARS: usize = 40;

/// The height the legend of `entries` needs.
pub fn height(entries: usize) -> u32 {
    entries.div_ceil(COLUMNS) as u32 * ROW_HEIGHT + 8
}

/// Draws `entries` in rows across `area`.
pub fn draw<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[Entry],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let (width, _) = area.dim_in_pixel();
    let column_width = (width as i32 - 24) / COLUMNS as i32;
    for (n, entry) in entries.iter().enumerate() {
        let x = 12 + (n % COLUMNS) as i32 * column_width;
        let y = 4 + (n / COLUMNS) as i32 * ROW_HEIGHT as i32 + ROW_HEIGHT as i32 / 2;
        match entry.swatch {
            Swatch::Fill(colour) => {
                area.draw(&Rectangle::new([(x, y - 6), (x + 12, y + 6)], colour.filled()))?;
                area.draw(&Rectangle::new([(x, y - 6), (x + 12, y + 6)], BLACK.mix(0.25)))?;
            }
            Swatch::Line {
                colour,
                width,
                dashed: false,
            } => {
                area.draw(&PathElement::new([(x, y), (x + 16, y)], colour.stroke_width(width)))?;
            }
            Swatch::Line {
                colour,
                width,
                dashed: true,
            } => {
                for start in [x, x + 7, x + 14] {
                    area.draw(&PathElement::new(
                        [(start, y), (start + 4, y)],
                        colour.stroke_width(width),
                    ))?;
                }
            }
        }
        area.draw(&Text::new(
            shortened(&entry.label),
            (x + 22, y - 7),
            ("sans-serif", 13).into_font().color(&BLACK.mix(0.85)),
        ))?;
    }
    Ok(())
}

fn shortened(label: &str) -> String {
    match label.char_indices().nth(MAX_LABEL_CHARS) {
        Some((cut, _)) => format!("{}…", &label[..cut]),
        None => label.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_labels_are_cut_on_a_character_boundary() {
        assert_eq!(shortened("short"), "short");
        let long = "é".repeat(41);
        assert_eq!(shortened(&long), format!("{}…", "é".repeat(40)));
        assert_eq!(shortened(&"é".repeat(40)), "é".repeat(40));
    }

    #[test]
    fn the_legend_grows_a_row_per_three_entries() {
        assert_eq!(height(1), 30);
        assert_eq!(height(3), 30);
        assert_eq!(height(4), 52);
    }
}
