//! A statement as CSV (`month,team,section,item,unblended,amortized`, a contract) and as a
//! standalone HTML document that prints cleanly from a browser.

use std::fmt::Write as _;

use rust_decimal::Decimal;

use super::model::{Section, Statement, StatementLine};
use super::store::month_label;
use crate::format::csv::{CsvStyle, text};
use crate::format::{escape_html, percent, usd};

pub const CSV_HEADER: &str = "month,team,section,item,unblended,amortized";

/// The lines of `team` (every team when `None`).
pub fn lines_of<'a>(statement: &'a Statement, team: Option<&'a str>) -> impl Iterator<Item = &'a StatementLine> {
    statement.lines.iter().filter(move |l| team.is_none_or(|t| l.team == t))
}

/// An exact amount with at least the cents written out: `12.5` is `12.50`, `0.0123` stays.
fn amount(value: Decimal) -> String {
    let mut value = value;
    if value.scale() < 2 {
        value.rescale(2);
    }
    value.to_string()
}

/// [`amount`] as the printable statement shows it: exact, with thousands separators
/// (`1,234,567.891`, `12.50`).
fn shown_amount(value: Decimal) -> String {
    crate::format::number(value, value.scale().max(2))
}

/// Exact decimals (never rounded; at least two places); text cells escaped for `style`.
pub fn csv(statement: &Statement, team: Option<&str>, style: CsvStyle) -> String {
    let month = month_label(statement.month);
    let mut out = format!("{CSV_HEADER}\n");
    for line in lines_of(statement, team) {
        let _ = writeln!(
            out,
            "{month},{},{},{},{},{}",
            text(&line.team, style),
            line.section.key(),
            text(&line.item, style),
            amount(line.unblended),
            amount(line.amortized)
        );
    }
    out
}

use crate::format::printable::STYLE;
/// The Content-Security-Policy of the HTML statement (`format::printable`).
pub use crate::format::printable::html_csp;

/// A printable statement: one section per team with its lines, its total and its monthly
/// budgets' use.
pub fn html(statement: &Statement, team: Option<&str>) -> String {
    let month = month_label(statement.month);
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>burnrate statement {month}</title>\
         <style>{STYLE}</style></head><body><h1>Chargeback statement, {month}</h1><p class=\"note\">"
    );
    match (&statement.frozen_at, &statement.account) {
        (_, Some(account)) => {
            out.push_str("Spend in AWS account ");
            escape_html(&mut out, account);
            out.push_str(
                " only, as the allocation has it now: never frozen and without adjustments. \
                 The organisation's statement is the one charged.",
            );
        }
        (Some(at), None) => {
            let _ = write!(
                out,
                "Final: frozen {at}; later restatements appear as adjustments on the next statement."
            );
        }
        (None, None) => out.push_str("Provisional: the month's figures may still change."),
    }
    out.push_str(" Amounts in USD, exact (never rounded), so each team's lines add up to its total.</p>");
    let mut teams: Vec<&str> = Vec::new();
    for line in lines_of(statement, team) {
        if !teams.contains(&line.team.as_str()) {
            teams.push(&line.team);
        }
    }
    for name in teams {
        out.push_str("<section><h2>");
        escape_html(&mut out, name);
        out.push_str(
            "</h2><table><thead><tr><th>Section</th><th>Item</th><th class=\"num\">Unblended</th>\
                      <th class=\"num\">Amortized</th></tr></thead><tbody>",
        );
        let mut total = Decimal::ZERO;
        for line in statement.lines.iter().filter(|l| l.team == name) {
            let class = if line.section == Section::Total {
                " class=\"total\""
            } else {
                ""
            };
            let _ = write!(out, "<tr{class}><td>{}</td><td>", line.section.key());
            if line.untagged {
                out.push_str("<em title=\"spend that carried no project tag\">");
                escape_html(&mut out, &line.item);
                out.push_str("</em>");
            } else {
                escape_html(&mut out, &line.item);
            }
            let _ = write!(
                out,
                "</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                shown_amount(line.unblended),
                shown_amount(line.amortized)
            );
            if line.section == Section::Total {
                total = line.unblended;
            }
        }
        out.push_str("</tbody></table>");
        for (_, budget, amount, metric, credits) in statement.budgets.iter().filter(|b| b.0 == name) {
            let amount_of = |l: &StatementLine| {
                if metric == "amortized" {
                    l.amortized
                } else {
                    l.unblended
                }
            };
            // A budget before credits counts the total less the team's credits and refunds.
            let left_out: Decimal = statement
                .lines
                .iter()
                .filter(|l| l.team == name && credits == "gross")
                .filter(|l| matches!(l.section, Section::Credit | Section::Refund))
                .map(amount_of)
                .sum();
            let spent = statement
                .lines
                .iter()
                .find(|l| l.team == name && l.section == Section::Total)
                .map_or(total, amount_of)
                - left_out;
            out.push_str("<p class=\"note\">Budget ");
            escape_html(&mut out, budget);
            let _ = write!(
                out,
                ": {} monthly ({metric}, {}), {} used.</p>",
                usd(*amount),
                if credits == "gross" {
                    "before credits"
                } else {
                    "net of credits"
                },
                percent(spent, *amount)
            );
        }
        out.push_str("</section>");
    }
    out.push_str("</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;

    #[test]
    fn tag_values_are_escaped_in_csv_and_html() {
        let statement = Statement {
            month: NaiveDate::from_ymd_opt(2026, 10, 1).expect("date"),
            lines: vec![StatementLine {
                team: "ml".into(),
                team_id: Some(1),
                adjusts: None,
                section: Section::Direct,
                item: "=HYPERLINK(\"x\") <img src=x onerror=alert(1)>".into(),
                untagged: false,
                unblended: Decimal::new(12345, 3),
                amortized: Decimal::new(12345, 3),
            }],
            frozen_at: None,
            budgets: vec![],
            account: None,
        };
        let csv_text = csv(&statement, None, CsvStyle::ExcelSafe);
        assert_eq!(
            csv_text,
            "month,team,section,item,unblended,amortized\n\
             2026-10,ml,direct,\"'=HYPERLINK(\"\"x\"\") <img src=x onerror=alert(1)>\",12.345,12.345\n"
        );
        let page = html(&statement, Some("ml"));
        assert!(
            page.contains("=HYPERLINK(&quot;x&quot;) &lt;img src=x onerror=alert(1)&gt;"),
            "{page}"
        );
        assert!(!page.contains("<img"));
        assert!(page.contains("@media print"));
        assert!(page.contains("Provisional"));
    }

    #[test]
    fn printable_amounts_are_exact_with_thousands_separators() {
        let line = |unblended: Decimal| StatementLine {
            team: "ml".into(),
            team_id: Some(1),
            adjusts: None,
            section: Section::Direct,
            item: "train".into(),
            untagged: false,
            unblended,
            amortized: Decimal::new(125, 1),
        };
        let statement = Statement {
            month: NaiveDate::from_ymd_opt(2026, 10, 1).expect("date"),
            lines: vec![line(Decimal::new(1_234_567_891, 3)), line(Decimal::new(-100_000, 0))],
            frozen_at: None,
            budgets: vec![],
            account: None,
        };
        let page = html(&statement, None);
        assert!(
            page.contains("<td class=\"num\">1,234,567.891</td><td class=\"num\">12.50</td>"),
            "{page}"
        );
        assert!(page.contains("<td class=\"num\">-100,000.00</td>"), "{page}");
        assert!(
            csv(&statement, None, CsvStyle::Verbatim).contains(",1234567.891,12.50\n"),
            "the CSV keeps its plain numbers"
        );
    }
}
