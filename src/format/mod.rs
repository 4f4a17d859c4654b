//! Display formatting shared by the server and the browser: money, percentages, counts, figures
//! and labels, with thousands separators. Amounts stay exact `Decimal`s until this last step.

#[cfg(feature = "ssr")]
pub mod amount;
#[cfg(feature = "ssr")]
pub mod csv;
#[cfg(feature = "ssr")]
pub mod printable;

use rust_decimal::{Decimal, RoundingStrategy};

/// How untagged spend (an empty tag value) is shown.
pub const UNTAGGED: &str = "(untagged)";

/// The team that spend of an unmapped or untagged project is shown under.
pub const UNASSIGNED_TEAM: &str = "Unassigned";

/// `$1,234,567.89`: US dollars with thousands separators and two decimals (half away from zero).
pub fn usd(amount: Decimal) -> String {
    dollars(number(amount, 2))
}

/// `$16.288`, `$1.20`, `$0.0004`: US dollars with thousands separators and two to
/// `max_decimals` decimals (half away from zero; zeros past the cents dropped), for unit
/// prices such as $/h and for differences smaller than a cent.
pub fn usd_precise(amount: Decimal, max_decimals: u32) -> String {
    let rounded = amount
        .round_dp_with_strategy(max_decimals, RoundingStrategy::MidpointAwayFromZero)
        .normalize();
    dollars(number(rounded, rounded.scale().max(max_decimals.min(2))))
}

/// `12.3%` from a fraction (0.123), `1,234.5%` past a thousand; `—` when there is nothing to
/// divide by.
pub fn percent(part: Decimal, whole: Decimal) -> String {
    if whole.is_zero() {
        return "—".to_string();
    }
    percent_value(part / whole * Decimal::ONE_HUNDRED)
}

/// `12.3%` from a value already in percent (12.34): one decimal, half away from zero, with
/// thousands separators, as [`percent`] writes it.
pub fn percent_value(pct: Decimal) -> String {
    format!("{}%", number(pct, 1))
}

/// `38,572.4`: a figure such as hours with thousands separators and exactly `decimals`
/// decimals (half away from zero); `-1,000.5` below zero, never `-0.0`.
pub fn number(value: Decimal, decimals: u32) -> String {
    let rounded = value.round_dp_with_strategy(decimals, RoundingStrategy::MidpointAwayFromZero);
    let negative = rounded.is_sign_negative() && !rounded.is_zero();
    // Rounded first: `Decimal`'s `Display` truncates to the precision, and here only pads.
    let text = format!("{:.*}", decimals as usize, rounded.abs());
    let (whole, fraction) = match text.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (text.as_str(), None),
    };
    let mut out = String::with_capacity(text.len() + text.len() / 3 + 1);
    if negative {
        out.push('-');
    }
    out.push_str(&group_thousands(whole));
    if let Some(fraction) = fraction {
        out.push('.');
        out.push_str(fraction);
    }
    out
}

/// `15.6`, `1,128`, `0.125`: a measure (GiB, hours in prose) with thousands separators and
/// at most `max_decimals` decimals (half away from zero), trailing zeros dropped.
pub fn quantity(value: Decimal, max_decimals: u32) -> String {
    let rounded = value
        .round_dp_with_strategy(max_decimals, RoundingStrategy::MidpointAwayFromZero)
        .normalize();
    number(rounded, rounded.scale())
}

/// `12,345`: a count (rows, projects, attempts, days) with thousands separators.
pub fn count(n: impl Whole) -> String {
    let n = n.widen();
    let digits = n.unsigned_abs().to_string();
    let grouped = group_thousands(&digits);
    if n < 0 { format!("-{grouped}") } else { grouped }
}

/// The integer types [`count`] takes: `usize` lengths as well as stored `i32`/`i64` counts.
pub trait Whole: Copy {
    /// The value as an `i128`, which holds every one of them exactly.
    fn widen(self) -> i128;
}

macro_rules! whole {
    ($($t:ty),*) => {
        $(impl Whole for $t {
            fn widen(self) -> i128 {
                self as i128
            }
        })*
    };
}

whole!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);

/// `$` after the sign of a number [`number`] wrote: `-1,000.50` → `-$1,000.50`.
fn dollars(figure: String) -> String {
    match figure.strip_prefix('-') {
        Some(positive) => format!("-${positive}"),
        None => format!("${figure}"),
    }
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
        assert_eq!(percent(d("0"), d("7")), "0.0%");
        assert_eq!(percent(d("12345"), d("1000")), "1,234.5%");
        assert_eq!(percent(d("1"), d("2000")), "0.1%");
        assert_eq!(percent(d("-1"), d("8")), "-12.5%");
    }

    #[test]
    fn percent_value_groups_and_rounds_half_away_from_zero() {
        assert_eq!(percent_value(d("0")), "0.0%");
        assert_eq!(percent_value(d("65")), "65.0%");
        assert_eq!(percent_value(d("12.25")), "12.3%");
        assert_eq!(percent_value(d("99.95")), "100.0%");
        assert_eq!(percent_value(d("1234.56")), "1,234.6%");
        assert_eq!(percent_value(d("-0.04")), "0.0%");
        assert_eq!(percent_value(d("-2.05")), "-2.1%");
    }

    #[test]
    fn number_has_fixed_decimals_and_thousands_separators() {
        assert_eq!(number(d("0"), 1), "0.0");
        assert_eq!(number(d("0"), 0), "0");
        assert_eq!(number(d("999"), 0), "999");
        assert_eq!(number(d("999.4"), 0), "999");
        assert_eq!(number(d("1000"), 1), "1,000.0");
        assert_eq!(number(d("38572.44"), 1), "38,572.4");
        assert_eq!(number(d("1234567.891"), 2), "1,234,567.89");
        assert_eq!(number(d("1234567.891"), 0), "1,234,568");
        assert_eq!(number(d("12.3"), 3), "12.300");
        assert_eq!(number(d("-1234.56"), 1), "-1,234.6");
        assert_eq!(number(d("-999999.96"), 1), "-1,000,000.0");
    }

    #[test]
    fn number_rounds_midpoints_away_from_zero() {
        assert_eq!(number(d("0.05"), 1), "0.1");
        assert_eq!(number(d("0.25"), 1), "0.3");
        assert_eq!(number(d("2.45"), 1), "2.5");
        assert_eq!(number(d("999.95"), 1), "1,000.0");
        assert_eq!(number(d("-0.05"), 1), "-0.1");
        assert_eq!(number(d("-0.04"), 1), "0.0");
        assert_eq!(number(d("0.5"), 0), "1");
    }

    #[test]
    fn quantity_drops_trailing_zeros() {
        assert_eq!(quantity(d("0"), 2), "0");
        assert_eq!(quantity(d("15.60"), 1), "15.6");
        assert_eq!(quantity(d("1128"), 1), "1,128");
        assert_eq!(quantity(d("0.125"), 3), "0.125");
        assert_eq!(quantity(d("2.05"), 1), "2.1");
        assert_eq!(quantity(d("5759.96"), 1), "5,760");
        assert_eq!(quantity(d("-1000.00"), 2), "-1,000");
    }

    #[test]
    fn usd_precise_keeps_cents_and_up_to_the_asked_decimals() {
        assert_eq!(usd_precise(d("16.288"), 4), "$16.288");
        assert_eq!(usd_precise(d("1.2"), 4), "$1.20");
        assert_eq!(usd_precise(d("3"), 4), "$3.00");
        assert_eq!(usd_precise(d("0.00004"), 4), "$0.00");
        assert_eq!(usd_precise(d("0.00005"), 4), "$0.0001");
        assert_eq!(usd_precise(d("1234.56785"), 4), "$1,234.5679");
        assert_eq!(usd_precise(d("-0.004"), 10), "-$0.004");
    }

    #[test]
    fn count_groups_thousands() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1,000");
        assert_eq!(count(12345_i64), "12,345");
        assert_eq!(count(1234567_usize), "1,234,567");
        assert_eq!(count(-1234567_i64), "-1,234,567");
        assert_eq!(count(-999_i32), "-999");
        assert_eq!(count(u64::MAX), "18,446,744,073,709,551,615");
        assert_eq!(count(i64::MIN), "-9,223,372,036,854,775,808");
    }

    #[test]
    fn empty_tag_is_shown_as_untagged() {
        assert_eq!(tag_label(""), "(untagged)");
        assert_eq!(tag_label("<b>x</b>"), "<b>x</b>");
    }
}
