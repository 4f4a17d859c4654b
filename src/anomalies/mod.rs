//! Spend anomalies (#56): days whose spend stands out from the series' own recent shape
//! (docs/ANOMALIES.md). `rule` is the detection itself, pure and exact; `series` reads the
//! daily series per scope; `detect` joins the days that count into anomalies and names what
//! drove each; `csv` writes them as `burnrate anomalies` prints them.

pub mod csv;
pub mod detect;
pub mod rule;
pub mod series;
