//! Underused GPUs given back whole: a GPU cannot be returned in part, and the GPUs kept must
//! sit on an instance type that exists. `keep` = ⌈GPUs × active mean ÷ 60 %⌉ (at least one);
//! the configuration proposed is the cheapest in the catalogue of the same GPU (same vendor,
//! CPU architecture, and offered by SageMaker where the usage is SageMaker's) with at least
//! `keep` GPUs and at least the current vCPUs and memory per GPU, so a workload's host side
//! never shrinks: fewer instances of the same type, or more of a smaller one.

use rust_decimal::Decimal;

use super::Inputs;
use crate::catalogue::{Catalogue, InstanceType};

/// What giving back whole GPUs proposes: the configuration and its price ÷ today's.
#[derive(Debug, Clone, PartialEq)]
pub struct GiveBack {
    pub instances: i64,
    pub instance_type: String,
    pub gpus: i64,
    pub ratio: Decimal,
}

/// Whole GPUs per instance; `None` for a fractional GPU (g6f) or none.
fn whole(t: &InstanceType) -> Option<i64> {
    t.whole_accelerators().map(i64::from)
}

/// The cheapest configuration of `current`'s GPU that keeps `keep` of today's `gpus`, if it
/// costs less than today's; priced as this organisation pays in `region`.
pub fn give_back(
    inputs: &Inputs,
    current: &str,
    region: &str,
    sagemaker: bool,
    gpus: i64,
    keep: i64,
) -> Option<GiveBack> {
    let catalogue = Catalogue::built_in();
    let now = catalogue.get(current)?;
    let per_instance = whole(now)?;
    if keep >= gpus || keep < 1 {
        return None;
    }
    let instances_now = (gpus + per_instance - 1) / per_instance;
    let cost_now = inputs.pricing.price_of(now, region, sagemaker) * Decimal::from(instances_now);
    if cost_now <= Decimal::ZERO {
        return None;
    }
    let per_gpu = |t: &InstanceType, g: i64| {
        (
            Decimal::from(t.vcpu) / Decimal::from(g),
            Decimal::from(t.ram_gib) / Decimal::from(g),
        )
    };
    let (vcpu_now, ram_now) = per_gpu(now, per_instance);
    catalogue
        .iter()
        .filter(|t| t.accelerator == now.accelerator && t.vendor == now.vendor && t.arm64 == now.arm64)
        .filter(|t| !sagemaker || t.sagemaker_usd_hour.is_some())
        .filter_map(|t| {
            let g = whole(t)?;
            let (vcpu, ram) = per_gpu(t, g);
            (vcpu >= vcpu_now && ram >= ram_now).then_some((t, g))
        })
        .map(|(t, g)| {
            let instances = (keep + g - 1) / g;
            let cost = inputs.pricing.price_of(t, region, sagemaker) * Decimal::from(instances);
            (t, g, instances, cost)
        })
        .filter(|(_, g, instances, cost)| *cost < cost_now && g * instances < gpus)
        .min_by(|a, b| a.3.cmp(&b.3).then_with(|| a.0.name.cmp(&b.0.name)))
        .map(|(t, g, instances, cost)| GiveBack {
            instances,
            instance_type: t.name.clone(),
            gpus: g * instances,
            ratio: cost / cost_now,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::savings::facts::Window;
    use crate::savings::pricing::Pricing;

    fn with<T>(f: impl FnOnce(&Inputs) -> T) -> T {
        let day = chrono::NaiveDate::from_ymd_opt(2026, 11, 1).expect("day");
        let pricing = Pricing::default();
        let inputs = Inputs {
            window: Window {
                from: day,
                to: day + chrono::Days::new(30),
            },
            usage: &[],
            pricing: &pricing,
        };
        f(&inputs)
    }

    #[test]
    fn four_a10gs_at_a_quarter_keep_two_on_a_type_that_exists() {
        // ⌈4 × 24 / 60⌉ = 2 of a g5.12xlarge's 4 A10Gs (12 vCPU, 48 GiB each). No g5 has two
        // A10Gs; of the one-GPU types with at least 12 vCPU and 48 GiB, g5.4xlarge (16, 64) is
        // the cheapest: 2 × $1.624 = $3.248 against $5.672, a ratio of 0.57263…
        let found = with(|i| give_back(i, "g5.12xlarge", "us-east-1", false, 4, 2)).expect("a configuration");
        assert_eq!(found.instance_type, "g5.4xlarge");
        assert_eq!((found.instances, found.gpus), (2, 2));
        assert_eq!(found.ratio.round_dp(5), "0.57264".parse::<Decimal>().expect("decimal"));
        // Eight GPUs on two g5.12xlarge keeping four: one g5.12xlarge, half the price.
        let found = with(|i| give_back(i, "g5.12xlarge", "us-east-1", false, 8, 4)).expect("a configuration");
        assert_eq!((found.instance_type.as_str(), found.instances), ("g5.12xlarge", 1));
        assert_eq!(found.ratio, Decimal::new(5, 1));
        // Keeping them all, or a type the catalogue does not know, gives back nothing.
        assert_eq!(with(|i| give_back(i, "g5.12xlarge", "us-east-1", false, 4, 4)), None);
        assert_eq!(with(|i| give_back(i, "x9.huge", "us-east-1", false, 4, 1)), None);
    }
}
