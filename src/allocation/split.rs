//! Splitting an amount by weights so the parts add up to it exactly.
//!
//! Each part is the amount's share rounded toward zero at the amount's own precision (never
//! coarser than a cent); the units the rounding left over go one each to the parts with the
//! largest remainders (the first listed on a tie). So the parts always sum to the amount to
//! the last digit, no part is off by more than one unit, and the same input always gives the
//! same parts.

use rust_decimal::Decimal;
use rust_decimal::prelude::{Signed, ToPrimitive};

/// `amount` split in proportion to `weights`. Negative weights count as zero. `None` when
/// there is nothing to split by (no positive weight).
pub fn split_exact(amount: Decimal, weights: &[Decimal]) -> Option<Vec<Decimal>> {
    let weights: Vec<Decimal> = weights.iter().map(|w| (*w).max(Decimal::ZERO)).collect();
    let total: Decimal = weights.iter().sum();
    if total <= Decimal::ZERO {
        return None;
    }
    let scale = amount.scale().max(2);
    let unit = Decimal::new(1, scale);
    let mut parts = Vec::with_capacity(weights.len());
    let mut remainders = Vec::with_capacity(weights.len());
    for (index, weight) in weights.iter().enumerate() {
        // Multiplying first keeps the most digits; rust_decimal rounds the 28th digit.
        let exact = amount * *weight / total;
        let part = exact.trunc_with_scale(scale);
        remainders.push(((exact - part).abs(), index));
        parts.push(part);
    }
    let left: Decimal = amount - parts.iter().sum::<Decimal>();
    let units = (left / unit).trunc();
    let step = unit * left.signum();
    // Largest remainder first; among equals, the first listed.
    remainders.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let count = units.abs().to_usize().unwrap_or(0);
    for (_, index) in remainders.iter().cycle().take(count) {
        parts[*index] += step;
    }
    Some(parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    fn d(text: &str) -> Decimal {
        Decimal::from_str(text).expect("decimal")
    }

    fn ds(texts: &[&str]) -> Vec<Decimal> {
        texts.iter().map(|t| d(t)).collect()
    }

    #[test]
    fn a_hundred_dollars_in_three_gives_the_extra_cent_to_the_first() {
        let thirds = ds(&["1", "1", "1"]);
        assert_eq!(
            split_exact(d("100.00"), &thirds),
            Some(ds(&["33.34", "33.33", "33.33"]))
        );
        assert_eq!(split_exact(d("0.02"), &thirds), Some(ds(&["0.01", "0.01", "0.00"])));
    }

    #[test]
    fn the_largest_remainder_takes_the_leftover_cent() {
        // 10.00 × 1/6 = 1.666…, × 2/6 = 3.333…, × 3/6 = 5.00: one cent is left, and 1/6 has
        // the larger remainder.
        let parts = split_exact(d("10.00"), &ds(&["1", "2", "3"])).expect("weights");
        assert_eq!(parts, ds(&["1.67", "3.33", "5.00"]));
    }

    #[test]
    fn credits_split_the_same_way_and_still_sum_exactly() {
        let parts = split_exact(d("-100.00"), &ds(&["1", "1", "1"])).expect("weights");
        assert_eq!(parts, ds(&["-33.34", "-33.33", "-33.33"]));
    }

    #[test]
    fn sub_cent_amounts_keep_their_precision() {
        let amount = d("12.3456789");
        let parts = split_exact(amount, &ds(&["2", "1"])).expect("weights");
        assert_eq!(parts, ds(&["8.2304526", "4.1152263"]));
        assert_eq!(parts.iter().sum::<Decimal>(), amount);
    }

    #[test]
    fn negative_and_zero_weights_take_nothing_and_no_positive_weight_is_no_split() {
        let parts = split_exact(d("9.99"), &ds(&["-5", "0", "3"])).expect("one positive weight");
        assert_eq!(parts, ds(&["0.00", "0.00", "9.99"]));
        assert_eq!(split_exact(d("9.99"), &ds(&["0", "-1"])), None);
        assert_eq!(split_exact(d("9.99"), &[]), None);
    }

    #[test]
    fn every_split_sums_to_its_amount_to_the_last_digit() {
        // A deterministic sweep of awkward amounts and weights.
        let mut seed: u64 = 7;
        let mut next = move || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            seed >> 33
        };
        for _ in 0..2_000 {
            let amount = Decimal::new(next() as i64 % 2_000_000 - 1_000_000, (next() % 7) as u32);
            let n = 1 + (next() % 9) as usize;
            let weights: Vec<Decimal> = (0..n).map(|_| Decimal::new((next() % 10_000) as i64, 3)).collect();
            if let Some(parts) = split_exact(amount, &weights) {
                assert_eq!(parts.iter().sum::<Decimal>(), amount, "{amount} by {weights:?}");
                assert_eq!(parts.len(), n);
            }
        }
    }
}
