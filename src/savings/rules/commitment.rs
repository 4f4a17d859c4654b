//! Commitments. Per instance family (EC2 and SageMaker apart, since each has its own Savings
//! Plan), the steady on-demand baseline is the 10th percentile of daily on-demand
//! instance-hours in the window ÷ 24: capacity that ran on at least nine days in ten.
//! Covering 60 % of it with a 1-year no-upfront Savings Plan saves
//! 0.6 × baseline × on-demand $/h × discount × 720 h a month, for a commitment of
//! 0.6 × baseline × on-demand $/h × (1 − discount) per hour. The plan bills every hour,
//! so it pays for itself while the committed capacity is used at least (1 − discount) of
//! the time.

use std::collections::BTreeMap;

use chrono::NaiveDate;
use rust_decimal::Decimal;
use rust_decimal::prelude::ToPrimitive;

use super::{Inputs, per_hour, percent};
use crate::savings::model::{Kind, Recommendation};
use crate::usage_type::PurchaseOption;

/// The share of the baseline to commit.
pub fn target_share() -> Decimal {
    Decimal::new(6, 1)
}

#[derive(Default)]
struct Family {
    on_demand_spend: Decimal,
    on_demand_hours: Decimal,
    covered_hours: Decimal,
    daily_on_demand: BTreeMap<NaiveDate, Decimal>,
}

/// The nearest-rank percentile (`percentile_disc`): the smallest value with at least `p` of
/// the values at or below it.
pub fn percentile(values: &mut [Decimal], p: Decimal) -> Option<Decimal> {
    if values.is_empty() {
        return None;
    }
    values.sort();
    let rank = (p * Decimal::from(values.len())).ceil();
    let index = rank.to_usize().unwrap_or(1).clamp(1, values.len()) - 1;
    values.get(index).copied()
}

pub fn recommend(inputs: &Inputs) -> Vec<Recommendation> {
    let mut families: BTreeMap<(bool, String), Family> = BTreeMap::new();
    for u in inputs.usage {
        let family = families.entry((!u.is_ec2(), u.family.clone())).or_default();
        match u.purchase {
            PurchaseOption::OnDemand => {
                family.on_demand_spend += u.spend;
                family.on_demand_hours += u.hours;
                for (day, hours) in &u.daily_hours {
                    *family.daily_on_demand.entry(*day).or_default() += hours;
                }
            }
            PurchaseOption::Reserved => family.covered_hours += u.hours,
            _ => {}
        }
    }
    let discount = inputs.pricing.savings_plan_discount();
    families
        .into_iter()
        .filter_map(|((sagemaker, name), f)| {
            let mut daily: Vec<Decimal> = inputs
                .window
                .each_day()
                .map(|d| f.daily_on_demand.get(&d).copied().unwrap_or_default())
                .collect();
            let p10 = percentile(&mut daily, Decimal::new(1, 1))?;
            if p10 <= Decimal::ZERO || f.on_demand_hours <= Decimal::ZERO {
                return None;
            }
            let baseline = p10 / Decimal::from(24);
            let rate = f.on_demand_spend / f.on_demand_hours;
            let covered = target_share() * baseline * rate;
            let commitment = covered * (Decimal::ONE - discount);
            let monthly = covered * discount * Decimal::from(720);
            let coverage = f.covered_hours / (f.covered_hours + f.on_demand_hours);
            let label = if sagemaker { format!("ml.{name}") } else { name.clone() };
            let plan = if sagemaker { "SageMaker" } else { "Compute" };
            let detail = format!(
                "steady on-demand baseline {} instances (10th percentile of daily {label} on-demand hours ÷ 24) at {}; \
                 covering 60% commits {} for {} off; coverage today {} (reserved hours of all on-demand and reserved hours); \
                 break-even: the commitment pays while at least {} of it is used",
                crate::format::quantity(baseline, 2),
                per_hour(rate),
                per_hour(commitment),
                percent(discount),
                percent(coverage),
                percent(Decimal::ONE - discount),
            );
            Some(Recommendation {
                kind: Kind::Commitment,
                team: String::new(),
                project: String::new(),
                usage_type: String::new(),
                instance_type: format!("{label}.*"),
                recommended: format!("1-year no-upfront {plan} Savings Plan, {}", per_hour(commitment)),
                from: inputs.window.from,
                to: inputs.window.to,
                basis_cost: None,
                monthly_saving: monthly,
                compounded_saving: Decimal::ZERO,
                detail,
                host: String::new(),
                inferred: None,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tenth_percentile_is_nearest_rank() {
        let mut days: Vec<Decimal> = (1..=30).map(Decimal::from).collect();
        assert_eq!(percentile(&mut days, Decimal::new(1, 1)), Some(Decimal::from(3)));
        let mut few = vec![Decimal::from(5), Decimal::ZERO];
        assert_eq!(percentile(&mut few, Decimal::new(1, 1)), Some(Decimal::ZERO));
        assert_eq!(percentile(&mut [], Decimal::new(1, 1)), None);
        let mut one = vec![Decimal::from(7)];
        assert_eq!(percentile(&mut one, Decimal::new(1, 1)), Some(Decimal::from(7)));
    }
}
