//! The recommendation rules, one file each. Every rule reads the same window of usage and
//! the same prices, and states its formula in `docs/SAVINGS.md`.

pub mod always_on;
pub mod commitment;
pub mod judge;
pub mod rightsize;
pub mod sized_by_use;
pub mod spot;
pub mod utilisation;
pub mod whole_gpus;

use rust_decimal::Decimal;

use super::facts::{Usage, Window};
use super::model::{Kind, Recommendation};
use super::pricing::Pricing;

/// What every rule reads.
pub struct Inputs<'a> {
    pub window: Window,
    pub usage: &'a [Usage],
    pub pricing: &'a Pricing,
}

impl Inputs<'_> {
    /// A recommendation about one project's usage type; `saving_in_window` is scaled to 30 days.
    /// When the workload it assumed was inferred, the row says so and stays out of totals.
    pub fn for_usage(
        &self,
        kind: Kind,
        usage: &Usage,
        recommended: String,
        saving_in_window: Decimal,
        detail: String,
    ) -> Recommendation {
        let inferred = usage.inference().cloned();
        let detail = match &inferred {
            Some(i) => format!(
                "{detail}; {} ({} confidence): not in the totals until a lead confirms the workload",
                i.basis,
                i.confidence.key()
            ),
            None => detail,
        };
        Recommendation {
            inferred,
            ..self.measured(kind, usage, recommended, saving_in_window, detail)
        }
    }

    /// A recommendation resting on what was measured, whatever the workload: no inference
    /// holds it back.
    pub fn measured(
        &self,
        kind: Kind,
        usage: &Usage,
        recommended: String,
        saving_in_window: Decimal,
        detail: String,
    ) -> Recommendation {
        Recommendation {
            kind,
            team: usage.team.clone().unwrap_or_default(),
            project: usage.project.clone(),
            usage_type: usage.usage_type.clone(),
            instance_type: usage.instance_type.clone(),
            recommended,
            from: self.window.from,
            to: self.window.to,
            basis_cost: Some(usage.spend),
            monthly_saving: self.window.per_30_days(saving_in_window),
            compounded_saving: Decimal::ZERO,
            detail,
            host: String::new(),
            inferred: None,
        }
    }
}

/// `0.65` as `65.0%`, `0.6429` as `64.3%`: a share as every page writes percentages.
pub fn percent(share: Decimal) -> String {
    crate::format::percent_value(share * Decimal::ONE_HUNDRED)
}

/// `g5.xlarge has 1 × A10G (24 GiB) at $1.006/h`: a type as the right-size details name it.
pub fn offered(t: &crate::catalogue::InstanceType, price: Decimal) -> String {
    format!(
        "{} has {} × {} ({} GiB) at {}",
        t.name,
        t.accelerator_count.normalize(),
        t.accelerator,
        crate::format::quantity(t.total_memory_gib(), 1),
        per_hour(price)
    )
}

/// `$1,234.56/h`-style hourly price with up to four decimals.
pub fn per_hour(price: Decimal) -> String {
    format!("{}/h", crate::format::usd_precise(price, 4))
}
