//! Amounts typed by people (forms, YAML): exact USD, or a clear error.

use rust_decimal::Decimal;

/// The largest budget or cap burnrate accepts: USD 1,000,000,000,000.
pub const MAX_AMOUNT: i64 = 1_000_000_000_000;

/// USD with at most two decimals, above zero and at most 1,000,000,000,000. Thousands
/// separators are refused rather than guessed at.
pub fn parse_amount(text: &str) -> Result<Decimal, String> {
    let text = text.trim();
    let well_formed = !text.is_empty()
        && text.chars().all(|c| c.is_ascii_digit() || c == '.')
        && text.matches('.').count() <= 1
        && !text.starts_with('.')
        && !text.ends_with('.');
    let amount = well_formed
        .then(|| text.parse::<Decimal>().ok())
        .flatten()
        .ok_or_else(|| format!("{text:?} is not an amount; write USD like 25000 or 25000.00"))?;
    if amount.scale() > 2 && amount.normalize().scale() > 2 {
        return Err("an amount has at most 2 decimals (cents)".into());
    }
    if amount <= Decimal::ZERO {
        return Err("the amount must be greater than 0".into());
    }
    if amount > Decimal::from(MAX_AMOUNT) {
        return Err("the amount must be at most 1,000,000,000,000".into());
    }
    Ok(amount.round_dp(2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_must_be_positive_bounded_cents() {
        for (text, expected) in [
            ("0", "greater than 0"),
            ("-5", "is not an amount"),
            ("10.001", "at most 2 decimals"),
            ("1000000000000.01", "at most 1,000,000,000,000"),
            ("25,000", "is not an amount"),
            ("1e6", "is not an amount"),
            ("", "is not an amount"),
        ] {
            let err = parse_amount(text).expect_err(text);
            assert!(err.contains(expected), "{text}: {err}");
        }
        assert_eq!(parse_amount("1000000000000").expect("max"), Decimal::from(MAX_AMOUNT));
        assert_eq!(parse_amount("10.50").expect("cents"), Decimal::new(1050, 2));
        assert_eq!(parse_amount("10.500").expect("trailing zero"), Decimal::new(1050, 2));
    }
}
