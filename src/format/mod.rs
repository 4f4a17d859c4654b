//! Display formatting shared by the server and the browser: money, percentages, labels.
//! Amounts stay exact `Decimal`s until this last step.

#[cfg(feature = "ssr")]
pub mod amount;
#[cfg(feature = "ssr")]
pub mod csv;

use rust_decimal::{Decimal, RoundingStrategy};

/// How untagged spend (an empty tag value) is shown.
pub const UNTAGGED: &str = "(untagged)";

/// The team that spend of an unmapped or untagged project is shown under.
pub const UNASSIGNED_TEAM: &str = "Unassigned";

/// `$1,234,567.89`: US dollars with thousands separators and two decimals (half away from zero).
pub fn usd(amount: Decimal) -> String {
    let rounded = amount.round_dp_with_strategy(2, RoundingStrategy::MidpointAwayFromZero);
    let negative = rounded.is_sign_negative() && !rounded.is_zero();
    let text = format!("{:.2}", rounded.abs());
    let (whole, cents) = text.split_once('.').unwrap_or((&text, "00"));
    format!(
        "{}${}.{}",
        if negative { "-" } else { "" },
        group_thousands(whole),
        cents
    )
}

/// `12.3%` from a fraction (0.123); `—` when there is nothing to divide by.
pub fn percent(part: Decimal, whole: Decimal) -> String {
    if whole.is_zero() {
        return "—".to_string();
    }
    let pct = (part / whole * Decimal::ONE_HUNDRED).round_dp_with_strategy(1, RoundingStrategy::MidpointAwayFromZero);
    format!("{pct:.1}%")
}

/// Percent-encodes everything but unreserved characters, for a path segment or query value
/// (tag values and team names may hold `/`, `&`, `#` or spaces).
pub fn url_encode(value: &str) -> String {
    let mut encoded = String::with_capacity(value.len());
    for byte in value.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => encoded.push(byte as char),
            _ => encoded.push_str(&format!("%{byte:02X}")),
        }
    }
    encoded
}

/// Appends `text` to `out` with `& < > " '` escaped: safe as HTML or SVG text and inside
/// a quoted attribute. Tag values come from AWS and are untrusted.
pub fn escape_html(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
}

/// A tag value for display: the empty value is untagged spend.
pub fn tag_label(value: &str) -> &str {
    if value.is_empty() { UNTAGGED } else { value }
}

fn group_thousands(digits: &str) -> String {
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    fn d(s: &str) -> Decimal {
        Decimal::from_str(s).expect("test literal")
    }

    #[test]
    fn usd_groups_thousands_and_rounds_half_away_from_zero() {
        assert_eq!(usd(d("1234567.885")), "$1,234,567.89");
        assert_eq!(usd(d("999.994")), "$999.99");
        assert_eq!(usd(d("0")), "$0.00");
        assert_eq!(usd(d("-1000.5")), "-$1,000.50");
        assert_eq!(usd(d("-0.001")), "$0.00");
        assert_eq!(usd(d("100")), "$100.00");
    }

    #[test]
    fn percent_has_one_decimal_and_handles_zero_totals() {
        assert_eq!(percent(d("1"), d("3")), "33.3%");
        assert_eq!(percent(d("2"), d("3")), "66.7%");
        assert_eq!(percent(d("5"), d("0")), "—");
    }

    #[test]
    fn empty_tag_is_shown_as_untagged() {
        assert_eq!(tag_label(""), "(untagged)");
        assert_eq!(tag_label("<b>x</b>"), "<b>x</b>");
    }
}
