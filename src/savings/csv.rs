//! `burnrate insights` CSV: the header and columns are a contract.

use rust_decimal::Decimal;

use super::model::Recommendation;
use crate::format::csv::{CsvStyle, text};

pub const HEADER: &str =
    "kind,team,project,usage_type,instance_type,recommended,from,to,basis_cost,monthly_saving,detail,compounded_saving";

/// The rows, in the order given (the caller sorts). Text cells come from AWS tags and
/// people: verbatim for programs, defused for spreadsheets when `style` says so.
pub fn render(recommendations: &[Recommendation], style: CsvStyle) -> String {
    let mut out = format!("{HEADER}\n");
    for r in recommendations {
        let cells = [
            text(r.kind.key(), style),
            text(&r.team, style),
            text(&r.project, style),
            text(&r.usage_type, style),
            text(&r.instance_type, style),
            text(&r.recommended, style),
            r.from.to_string(),
            r.to.to_string(),
            r.basis_cost.map(|d| d.normalize().to_string()).unwrap_or_default(),
            cents(r.monthly_saving),
            text(&r.detail, style),
            cents(r.compounded_saving),
        ];
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

/// Two decimals, half away from zero.
pub fn cents(amount: Decimal) -> String {
    format!(
        "{:.2}",
        amount.round_dp_with_strategy(2, rust_decimal::RoundingStrategy::MidpointAwayFromZero)
    )
}
