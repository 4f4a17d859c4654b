//! The savings report as CSV (the header is a contract) and as a standalone HTML document
//! that prints cleanly, in the statements' style.

use std::fmt::Write as _;

use rust_decimal::Decimal;

use super::csv::cents;
use super::model::SavingsReport;
use crate::format::csv::{CsvStyle, text};
use crate::format::printable::STYLE;
use crate::format::{escape_html, percent_value, usd};
use crate::period::month_label;

pub const CSV_HEADER: &str = "month,by,name,gpu_spend,proposed,accepted,realised,before_per_30_days,after_per_30_days";

/// One line per lever, per team, and the total; amounts to the cent.
pub fn csv(report: &SavingsReport, style: CsvStyle) -> String {
    let month = month_label(report.month);
    let optional = |value: Option<Decimal>| value.map(cents).unwrap_or_default();
    let mut out = format!("{CSV_HEADER}\n");
    for l in &report.levers {
        let _ = writeln!(
            out,
            "{month},lever,{},,{},{},{},{},{}",
            l.kind.key(),
            cents(l.proposed),
            cents(l.accepted),
            cents(l.realised),
            optional(l.before),
            optional(l.after)
        );
    }
    for t in &report.teams {
        let _ = writeln!(
            out,
            "{month},team,{},{},{},{},{},,",
            text(&t.team, style),
            cents(t.gpu_spend),
            cents(t.proposed),
            cents(t.accepted),
            cents(t.realised)
        );
    }
    let _ = writeln!(
        out,
        "{month},total,,{},{},{},{},,",
        cents(report.gpu_spend),
        cents(report.proposed),
        cents(report.accepted),
        cents(report.realised)
    );
    out
}

/// A share of the month's GPU spend, or a dash when it had none.
fn share(report: &SavingsReport, amount: Decimal) -> String {
    report
        .share_of_spend(amount)
        .map(|s| percent_value(s * Decimal::ONE_HUNDRED))
        .unwrap_or_else(|| "–".into())
}

pub fn html(report: &SavingsReport) -> String {
    let month = month_label(report.month);
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>burnrate savings report {month}</title>\
         <style>{STYLE}</style></head><body><h1>GPU savings report, {month}</h1><p class=\"note\">\
         GPU spend: {} (UTC). Proposed: open now, compounded so a project's never passes its spend. \
         Accepted: in the month, a month's worth each, what it adds after the others it was proposed with. \
         Realised: dollars saved on the month's settled days ({}), each group of changes on the same spend \
         measured once against its 30 days before its first change, for a fixed 90 days after its last \
         (never re-based). Amounts in USD.</p>",
        report.spend_days(),
        report.settled_days(),
    );
    let _ = write!(
        out,
        "<table><thead><tr><th></th><th class=\"num\">Amount</th><th class=\"num\">Of GPU spend</th></tr></thead><tbody>\
         <tr><td>GPU spend</td><td class=\"num\">{}</td><td></td></tr>\
         <tr><td>Proposed (a month)</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\
         <tr><td>Accepted (a month)</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\
         <tr class=\"total\"><td>Realised in the month</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\
         </tbody></table>",
        usd(report.gpu_spend),
        usd(report.proposed),
        share(report, report.proposed),
        usd(report.accepted),
        share(report, report.accepted),
        usd(report.realised),
        share(report, report.realised),
    );
    if let Some(note) = report.held_back_note() {
        out.push_str("<p class=\"note\" data-testid=\"report-held-back\">");
        escape_html(&mut out, &note);
        out.push_str("</p>");
    }
    out.push_str(
        "<section><h2>By lever</h2><table><thead><tr><th>Lever</th><th class=\"num\">Proposed</th>\
         <th class=\"num\">Accepted</th><th class=\"num\">Realised</th><th class=\"num\">Before, per 30 days</th>\
         <th class=\"num\">After, per 30 days</th><th class=\"num\">Change</th></tr></thead><tbody>",
    );
    for l in &report.levers {
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            l.kind.label(),
            usd(l.proposed),
            usd(l.accepted),
            usd(l.realised),
            l.before.map(usd).unwrap_or_default(),
            l.after.map(usd).unwrap_or_default(),
            l.change()
                .map(|c| percent_value(c * Decimal::ONE_HUNDRED))
                .unwrap_or_default(),
        );
    }
    out.push_str(
        "</tbody></table></section><section><h2>By team</h2><table><thead><tr><th>Team</th>\
         <th class=\"num\">GPU spend</th><th class=\"num\">Proposed</th><th class=\"num\">Accepted</th>\
         <th class=\"num\">Realised</th><th class=\"num\">Realised, of its GPU spend</th></tr></thead><tbody>",
    );
    for t in &report.teams {
        out.push_str("<tr><td>");
        escape_html(&mut out, if t.team.is_empty() { "Unassigned" } else { &t.team });
        let realised_share = if t.gpu_spend > Decimal::ZERO {
            percent_value(t.realised / t.gpu_spend * Decimal::ONE_HUNDRED)
        } else {
            "–".into()
        };
        let _ = write!(
            out,
            "</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{realised_share}</td></tr>",
            usd(t.gpu_spend),
            usd(t.proposed),
            usd(t.accepted),
            usd(t.realised),
        );
    }
    out.push_str("</tbody></table></section></body></html>");
    out
}

#[cfg(test)]
mod tests {
    use chrono::NaiveDate;
    use rust_decimal::Decimal;

    use super::html;
    use crate::savings::model::{HeldBack, SavingsReport};

    fn report(month: &str, spend_to: &str, accepted: &str, realised: &str) -> SavingsReport {
        let day = |s: &str| NaiveDate::parse_from_str(s, "%Y-%m-%d").expect("date");
        SavingsReport {
            month: day(month),
            spend_to: day(spend_to),
            settled_to: day(spend_to),
            gpu_spend: Decimal::ONE_HUNDRED,
            levers: vec![],
            teams: vec![],
            proposed: Decimal::ZERO,
            accepted: Decimal::ZERO,
            realised: Decimal::ONE_HUNDRED,
            held_back: HeldBack {
                accepted: accepted.parse().expect("decimal"),
                realised: realised.parse().expect("decimal"),
            },
        }
    }

    #[test]
    fn the_printable_report_states_what_the_months_spend_held_back() {
        let ended = html(&report("2026-11-01", "2026-12-01", "0", "303.4224"));
        assert!(
            ended.contains("Held to the month&#39;s GPU spend: Realised is $303.42 below the measured drop"),
            "{ended}"
        );
        assert!(
            !ended.contains("Accepted is"),
            "nothing held back from Accepted: {ended}"
        );
        let open = html(&report("2026-11-01", "2026-11-05", "12.5", "0"));
        assert!(open.contains("GPU spend so far: Accepted is $12.50 below"), "{open}");
        assert!(open.contains("against the days spent so far"), "{open}");
        let none = html(&report("2026-11-01", "2026-12-01", "0", "0"));
        assert!(!none.contains("report-held-back"), "{none}");
    }
}
