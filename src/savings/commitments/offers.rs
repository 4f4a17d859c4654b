//! Every purchase option priced on the capacity burnrate would commit: Savings Plans and
//! Reserved Instances, 1 or 3 years, no, partial or all upfront, each with its upfront payment,
//! its hourly bill, its yearly cost against on-demand and the month it breaks even, as seed 002
//! works it: "(on-demand hourly × 8760 hours) vs (reserved upfront + reserved hourly × 8760)".
//!
//! Discounts come from `pricing: commitments:` where the organisation has a quote for the
//! instance type (and region), else from the defaults below. The defaults are round figures
//! inside the ranges AWS's public price lists show for GPU families, not quotes: Savings Plans
//! start from `savings_plan_discount_percent` (the 1-year no-upfront figure, default 28 %).

use rust_decimal::Decimal;
use rust_decimal::prelude::ToPrimitive;

use crate::savings::model::commitments::{Offer, Payment, PricedOption, Terms};
use crate::savings::pricing::{CommitmentPrice, Pricing};

/// Hours in a year and in a month of a year, as AWS's commitment terms count them.
pub const HOURS_PER_YEAR: i64 = 8760;
pub const HOURS_PER_MONTH: i64 = 730;

/// The default discount off on-demand for `terms`, as a share.
pub fn default_discount(pricing: &Pricing, terms: Terms) -> Decimal {
    // Percentage points above the 1-year no-upfront Savings Plan (Savings Plans), or the
    // Reserved Instance discount itself (EC2 Standard Reserved Instances).
    let points: i64 = match (terms.offer, terms.years, terms.payment) {
        (Offer::SavingsPlan, 1, Payment::NoUpfront) => 0,
        (Offer::SavingsPlan, 1, Payment::PartialUpfront) => 3,
        (Offer::SavingsPlan, 1, Payment::AllUpfront) => 5,
        (Offer::SavingsPlan, _, Payment::NoUpfront) => 18,
        (Offer::SavingsPlan, _, Payment::PartialUpfront) => 21,
        (Offer::SavingsPlan, _, Payment::AllUpfront) => 24,
        (Offer::Reserved, 1, Payment::NoUpfront) => 36,
        (Offer::Reserved, 1, Payment::PartialUpfront) => 39,
        (Offer::Reserved, 1, Payment::AllUpfront) => 41,
        (Offer::Reserved, _, Payment::NoUpfront) => 55,
        (Offer::Reserved, _, Payment::PartialUpfront) => 59,
        (Offer::Reserved, _, Payment::AllUpfront) => 62,
    };
    let points = Decimal::from(points) / Decimal::ONE_HUNDRED;
    match terms.offer {
        Offer::SavingsPlan => (pricing.savings_plan_discount() + points).min(Decimal::new(95, 2)),
        Offer::Reserved => points,
    }
}

/// The discount on one instance type in one region, and whether it was quoted in
/// `pricing: commitments:` (a regional quote wins over one for every region). A quoted
/// `usd_per_hour` is the effective rate (upfront spread over the term plus the hourly bill),
/// set against what the type costs on demand, `on_demand_rate`.
pub fn discount_for(
    pricing: &Pricing,
    terms: Terms,
    instance_type: &str,
    region: &str,
    on_demand_rate: Decimal,
) -> (Decimal, bool) {
    let matching = |c: &&CommitmentPrice| {
        c.instance_type == instance_type
            && c.offer == terms.offer
            && c.years == terms.years
            && c.payment == terms.payment
    };
    let quote = pricing
        .commitments
        .iter()
        .filter(matching)
        .find(|c| c.region.as_deref() == Some(region))
        .or_else(|| pricing.commitments.iter().filter(matching).find(|c| c.region.is_none()));
    match quote {
        Some(CommitmentPrice {
            usd_per_hour: Some(rate),
            ..
        }) if on_demand_rate > Decimal::ZERO => ((Decimal::ONE - *rate / on_demand_rate).max(Decimal::ZERO), true),
        Some(CommitmentPrice {
            discount_percent: Some(percent),
            ..
        }) => (*percent / Decimal::ONE_HUNDRED, true),
        _ => (default_discount(pricing, terms), false),
    }
}

/// `terms` at `discount`, on capacity that costs `on_demand_per_hour` on demand.
pub fn price(terms: Terms, discount: Decimal, on_demand_per_hour: Decimal, quoted: bool) -> PricedOption {
    let effective = on_demand_per_hour * (Decimal::ONE - discount);
    let term_hours = Decimal::from(HOURS_PER_YEAR * i64::from(terms.years));
    let upfront = effective * term_hours * terms.payment.upfront_share();
    let recurring_per_hour = effective * (Decimal::ONE - terms.payment.upfront_share());
    let year = Decimal::from(HOURS_PER_YEAR);
    PricedOption {
        terms,
        discount,
        upfront,
        recurring_per_hour,
        on_demand_per_year: on_demand_per_hour * year,
        committed_per_year: effective * year,
        saving_per_30_days: on_demand_per_hour * discount * Decimal::from(720),
        break_even_month: break_even_month(upfront, on_demand_per_hour, recurring_per_hour, terms.years),
        quoted,
    }
}

/// The first month by whose end the on-demand cost avoided covers the upfront payment and
/// the hourly bill so far: `upfront ÷ (730 × (on-demand $/h − recurring $/h))`, rounded up,
/// at least 1; `None` when that is never within the term.
fn break_even_month(upfront: Decimal, on_demand: Decimal, recurring: Decimal, years: u8) -> Option<u32> {
    let gain_per_month = (on_demand - recurring) * Decimal::from(HOURS_PER_MONTH);
    // With no discount, even an upfront payment only pays back on the term's last day.
    let term_hours = Decimal::from(HOURS_PER_YEAR * i64::from(years));
    if gain_per_month <= Decimal::ZERO || upfront + recurring * term_hours >= on_demand * term_hours {
        return None;
    }
    let months = (upfront / gain_per_month).ceil().max(Decimal::ONE);
    let term_months = Decimal::from(12 * u32::from(years));
    if months > term_months {
        return None;
    }
    months.to_u32()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(text: &str) -> Decimal {
        text.parse().expect("decimal")
    }

    fn terms(offer: Offer, years: u8, payment: Payment) -> Terms {
        Terms { offer, years, payment }
    }

    #[test]
    fn no_upfront_breaks_even_at_once_and_all_upfront_after_the_discounted_share_of_the_term() {
        // 1 instance at $3.06/h, 40 % off.
        let none = price(
            terms(Offer::Reserved, 1, Payment::NoUpfront),
            d("0.4"),
            d("3.06"),
            false,
        );
        assert_eq!(none.upfront, Decimal::ZERO);
        assert_eq!(none.break_even_month, Some(1));
        // All upfront: 3.06 × 0.6 × 8760 = 16,083.36 paid at once; each month avoids
        // 3.06 × 730 = 2,233.80; 16,083.36 ÷ 2,233.80 = 7.2 → month 8 (12 × 0.6).
        let all = price(
            terms(Offer::Reserved, 1, Payment::AllUpfront),
            d("0.4"),
            d("3.06"),
            false,
        );
        assert_eq!(all.upfront, d("16083.36"));
        assert_eq!(all.recurring_per_hour, Decimal::ZERO);
        assert_eq!(all.break_even_month, Some(8));
        // Partial: half upfront (8,041.68), recurring 0.918/h; gain a month
        // (3.06 − 0.918) × 730 = 1,563.66; 8,041.68 ÷ 1,563.66 = 5.14 → month 6.
        let partial = price(
            terms(Offer::Reserved, 1, Payment::PartialUpfront),
            d("0.4"),
            d("3.06"),
            false,
        );
        assert_eq!(partial.upfront, d("8041.68"));
        assert_eq!(partial.recurring_per_hour, d("0.918"));
        assert_eq!(partial.break_even_month, Some(6));
        // Three years all upfront at 60 % off: 12 × 3 × 0.4 = 14.4 → month 15.
        let long = price(terms(Offer::Reserved, 3, Payment::AllUpfront), d("0.6"), d("1"), false);
        assert_eq!(long.break_even_month, Some(15));
        // No discount: never, whatever is paid upfront.
        for payment in Payment::ALL {
            let flat = price(terms(Offer::SavingsPlan, 1, payment), Decimal::ZERO, d("1"), false);
            assert_eq!(flat.break_even_month, None, "{payment:?}");
            assert_eq!(flat.saving_per_30_days, Decimal::ZERO);
        }
    }

    #[test]
    fn a_regional_quote_wins_then_an_everywhere_quote_then_the_defaults() {
        let ri = terms(Offer::Reserved, 1, Payment::NoUpfront);
        let mut pricing = Pricing::default();
        assert_eq!(
            discount_for(&pricing, ri, "p3.2xlarge", "us-east-1", d("3.06")),
            (d("0.36"), false)
        );
        let sp3 = terms(Offer::SavingsPlan, 3, Payment::AllUpfront);
        // 28 % + 24 points.
        assert_eq!(default_discount(&pricing, sp3), d("0.52"));
        pricing.savings_plan_discount_percent = Some(d("30"));
        assert_eq!(default_discount(&pricing, sp3), d("0.54"));
        pricing.commitments = vec![
            CommitmentPrice {
                instance_type: "p3.2xlarge".into(),
                region: None,
                offer: Offer::Reserved,
                years: 1,
                payment: Payment::NoUpfront,
                usd_per_hour: Some(d("1.82")),
                discount_percent: None,
            },
            CommitmentPrice {
                instance_type: "p3.2xlarge".into(),
                region: Some("eu-west-1".into()),
                offer: Offer::Reserved,
                years: 1,
                payment: Payment::NoUpfront,
                usd_per_hour: None,
                discount_percent: Some(d("30")),
            },
        ];
        let (discount, quoted) = discount_for(&pricing, ri, "p3.2xlarge", "us-east-1", d("3.06"));
        assert!(quoted);
        // 1 − 1.82/3.06 = 0.40522875…
        assert_eq!(discount.round_dp(6), d("0.405229"));
        assert_eq!(
            discount_for(&pricing, ri, "p3.2xlarge", "eu-west-1", d("3.06")),
            (d("0.3"), true)
        );
        // Another option of the same type is not quoted.
        assert!(!discount_for(&pricing, sp3, "p3.2xlarge", "us-east-1", d("3.06")).1);
    }
}
