//! Spot: on-demand GPU usage of interruptible work (EC2 `BoxUsage` of training, batch or dev
//! projects; SageMaker `Train:`) could run on spot. Saving = spend × spot discount, where the
//! discount is the one this organisation saw for the same instance type in the window
//! (1 − spot $/h ÷ on-demand $/h), else the default (65 %, `pricing.spot_discount_percent`).
//! Serving is never sent to spot.

use std::collections::BTreeMap;

use rust_decimal::Decimal;

use super::{Inputs, per_hour, percent};
use crate::savings::facts::Usage;
use crate::savings::model::{Kind, Recommendation, Workload};
use crate::usage_type::{PurchaseOption, SageMakerUse};

/// Spot and on-demand $/h seen for one instance type through one channel (EC2 or SageMaker).
#[derive(Default, Clone, Copy)]
struct Seen {
    spot: (Decimal, Decimal),
    on_demand: (Decimal, Decimal),
}

/// The discount spot gave in the organisation's own data, per (SageMaker?, instance type).
pub fn observed_discounts(usage: &[Usage]) -> BTreeMap<(bool, String), Decimal> {
    let mut seen: BTreeMap<(bool, String), Seen> = BTreeMap::new();
    for u in usage {
        let entry = seen.entry((!u.is_ec2(), u.instance_type.clone())).or_default();
        let side = match u.purchase {
            PurchaseOption::Spot => &mut entry.spot,
            PurchaseOption::OnDemand => &mut entry.on_demand,
            _ => continue,
        };
        side.0 += u.spend;
        side.1 += u.hours;
    }
    seen.into_iter()
        .filter_map(|(key, s)| {
            let positive = |(spend, hours): (Decimal, Decimal)| {
                (spend > Decimal::ZERO && hours > Decimal::ZERO).then(|| spend / hours)
            };
            let (spot, on_demand) = (positive(s.spot)?, positive(s.on_demand)?);
            Some((key, Decimal::ONE - spot / on_demand))
        })
        .collect()
}

pub fn recommend(inputs: &Inputs) -> Vec<Recommendation> {
    let observed = observed_discounts(inputs.usage);
    inputs
        .usage
        .iter()
        .filter(|u| u.purchase == PurchaseOption::OnDemand && u.spend > Decimal::ZERO)
        .filter(|u| match u.sagemaker {
            None => matches!(u.workload(), Workload::Training | Workload::Batch | Workload::Dev),
            Some(use_) => use_ == SageMakerUse::Training,
        })
        .filter_map(|u| {
            let (discount, source) = match observed.get(&(!u.is_ec2(), u.instance_type.clone())) {
                Some(d) => (
                    *d,
                    format!("observed in your spot usage of {} in this window", u.instance_type),
                ),
                None => (
                    inputs.pricing.spot_discount(),
                    "the default discount (no spot usage of this type in the window)".to_string(),
                ),
            };
            // Spot that cost more than on-demand is no saving.
            if discount <= Decimal::ZERO {
                return None;
            }
            let rate = u.hourly_rate().map(per_hour).unwrap_or_default();
            let detail = format!(
                "{} on-demand {} hours ({rate}) for a {} workload; spot at {} off, {source}",
                crate::format::number(u.hours, 1),
                u.instance_type,
                u.workload().key(),
                percent(discount),
            );
            Some(inputs.for_usage(Kind::Spot, u, "spot".into(), u.spend * discount, detail))
        })
        .collect()
}
