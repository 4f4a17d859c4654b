//! The what-if calculator, computed on the server from the catalogue, this organisation's
//! prices and the spot discounts seen in its own data: a model size and workload, instances
//! × hours × days, and tokens per day, priced on-demand, on spot and under a commitment,
//! and an always-on endpoint against managed per-token prices.

use std::str::FromStr;

use rust_decimal::Decimal;

use super::insights::Insights;
use super::model::{ManagedRow, Model, Precision, WhatIf, WhatIfQuery, WhatIfRow, Workload};
use super::rules::rightsize::memory_needed_gib;
use crate::catalogue::{Catalogue, InstanceType, Vendor};

const REGION: &str = "us-east-1";
/// Rows shown per table.
const ROWS: usize = 8;

pub fn compute(query: WhatIfQuery, insights: &Insights) -> WhatIf {
    let mut errors = Vec::new();
    let mut number = |field: &str, value: &Option<String>, default: Decimal, max: Decimal| -> Decimal {
        match value.as_deref().map(str::trim).filter(|v| !v.is_empty()) {
            None => default,
            Some(text) => match Decimal::from_str(text) {
                Ok(n) if n > Decimal::ZERO && n <= max => n,
                _ => {
                    errors.push((
                        field.to_string(),
                        format!("expected a number above 0 and at most {max}"),
                    ));
                    default
                }
            },
        }
    };
    let params_b = number("params_b", &query.params_b, Decimal::ZERO, Decimal::from(100_000));
    let instances = number("instances", &query.instances, Decimal::ONE, Decimal::from(10_000));
    let hours_per_day = number(
        "hours_per_day",
        &query.hours_per_day,
        Decimal::from(24),
        Decimal::from(24),
    );
    let days = number("days", &query.days, Decimal::from(30), Decimal::from(3_650));
    let tokens_per_day = number(
        "tokens_per_day",
        &query.tokens_per_day,
        Decimal::ZERO,
        Decimal::from(10u64.pow(13)),
    );
    let workload = match query.workload.as_deref().filter(|w| !w.is_empty()) {
        None => Workload::Serving,
        Some(text) => Workload::parse(text).unwrap_or_else(|| {
            errors.push(("workload".into(), "expected training, batch, serving or dev".into()));
            Workload::Serving
        }),
    };
    let precision = match query.precision.as_deref().filter(|p| !p.is_empty()) {
        None => Precision::Bf16,
        Some(text) => Precision::parse(text).unwrap_or_else(|| {
            errors.push(("precision".into(), "expected fp32, bf16, fp16, int8 or int4".into()));
            Precision::Bf16
        }),
    };
    let need = (params_b > Decimal::ZERO)
        .then(|| memory_needed_gib(Model { params_b, precision }, workload))
        .flatten();
    let hours = instances * hours_per_day * days;
    let pricing = &insights.pricing;
    let sp_discount = pricing.savings_plan_discount();
    let row = |t: &InstanceType| {
        let hourly = pricing.price_of(t, REGION, false);
        let (spot_discount, observed) = match insights.observed_spot.get(&(false, t.name.clone())) {
            Some(d) if *d > Decimal::ZERO => (*d, true),
            _ => (pricing.spot_discount(), false),
        };
        let on_demand = hourly * hours;
        WhatIfRow {
            instance_type: t.name.clone(),
            accelerators: format!("{} × {}", t.accelerator_count.normalize(), t.accelerator),
            total_memory_gib: t.total_memory_gib(),
            hourly,
            on_demand,
            spot: (workload != Workload::Serving).then(|| on_demand * (Decimal::ONE - spot_discount)),
            spot_discount,
            spot_observed: observed,
            commitment: on_demand * (Decimal::ONE - sp_discount),
        }
    };
    let fitting = |vendor: Vendor| {
        let mut rows: Vec<WhatIfRow> = Catalogue::built_in()
            .iter()
            .filter(|t| t.vendor == vendor && !t.arm64)
            .filter(|t| need.is_none_or(|n| t.total_memory_gib() >= n))
            .filter(|t| precision != Precision::Bf16 || t.bf16)
            .map(row)
            .collect();
        rows.sort_by(|a, b| {
            a.hourly
                .cmp(&b.hourly)
                .then_with(|| a.instance_type.cmp(&b.instance_type))
        });
        rows.truncate(ROWS);
        rows
    };
    let fits = fitting(Vendor::Nvidia);
    let endpoint_monthly = fits.first().map(|r| r.hourly * instances * Decimal::from(24 * 30));
    let managed = pricing
        .token_prices()
        .into_iter()
        .map(|p| {
            let monthly = tokens_per_day * Decimal::from(30) * p.usd_per_million_tokens / Decimal::from(1_000_000);
            let break_even = endpoint_monthly
                .filter(|_| p.usd_per_million_tokens > Decimal::ZERO)
                .map(|endpoint| {
                    (endpoint * Decimal::from(1_000_000) / (p.usd_per_million_tokens * Decimal::from(30))).round()
                });
            ManagedRow {
                name: p.name,
                usd_per_million_tokens: p.usd_per_million_tokens,
                monthly,
                break_even_tokens_per_day: break_even,
            }
        })
        .collect();
    WhatIf {
        errors,
        memory_needed_gib: need.map(|n| n.round_dp(1)),
        hours,
        neuron: fitting(Vendor::Neuron),
        fits,
        endpoint_monthly,
        managed,
        savings_plan_discount: sp_discount,
        query,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::savings::pricing::Pricing;

    fn insights() -> Insights {
        Insights {
            observed_spot: [((false, "g6.xlarge".to_string()), Decimal::new(7, 1))].into(),
            ..Insights::without_data(Pricing::default())
        }
    }

    fn q(params_b: &str, workload: &str) -> WhatIfQuery {
        WhatIfQuery {
            params_b: Some(params_b.into()),
            precision: Some("bf16".into()),
            workload: Some(workload.into()),
            tokens_per_day: Some("20000000".into()),
            ..Default::default()
        }
    }

    #[test]
    fn a_7b_model_serves_from_one_24_gib_gpu_and_never_on_spot() {
        let answer = compute(q("7", "serving"), &insights());
        assert_eq!(answer.errors, Vec::<(String, String)>::new());
        assert_eq!(answer.memory_needed_gib, Some(Decimal::new(156, 1)));
        let cheapest = &answer.fits[0];
        assert_eq!(cheapest.instance_type, "g6.xlarge");
        assert_eq!(cheapest.on_demand, cheapest.hourly * Decimal::from(720));
        assert!(answer.fits.iter().all(|r| r.spot.is_none()));
        assert!(
            answer.fits.iter().all(|r| r.instance_type != "g4dn.xlarge"),
            "T4 has no bf16"
        );
    }

    #[test]
    fn seed_000s_endpoint_against_per_token_prices() {
        let mut query = q("70", "serving");
        query.instances = Some("1".into());
        let answer = compute(query, &insights());
        // 70B bf16 × 1.2 = 156.5 GiB: the cheapest fit is 4 × L40S (192 GiB) at $10.49264/h,
        // billed 24 × 30 hours; seed 000's g5.48xlarge would be $16.288 × 720 = $11,727.36.
        assert_eq!(answer.fits[0].instance_type, "g6e.12xlarge");
        assert_eq!(answer.endpoint_monthly, Some("7554.7008".parse().expect("decimal")));
        let g5 = answer
            .fits
            .iter()
            .find(|r| r.instance_type == "g5.48xlarge")
            .expect("g5.48xlarge fits too");
        assert_eq!(g5.on_demand, "11727.36".parse().expect("decimal"));
        let managed = &answer.managed[0];
        // 20M tokens a day × 30 × $3 per million.
        assert_eq!(managed.monthly, Decimal::from(1800));
        assert!(
            managed
                .break_even_tokens_per_day
                .is_some_and(|t| t > Decimal::from(20_000_000))
        );
    }

    #[test]
    fn training_uses_the_observed_spot_discount_and_bad_input_is_named() {
        let mut query = q("1", "training");
        query.days = Some("-3".into());
        let answer = compute(query, &insights());
        assert_eq!(
            answer.errors,
            vec![(
                "days".to_string(),
                "expected a number above 0 and at most 3650".to_string()
            )]
        );
        let g6 = answer
            .fits
            .iter()
            .find(|r| r.instance_type == "g6.xlarge")
            .expect("g6.xlarge fits 1B training");
        assert!(g6.spot_observed);
        assert_eq!(g6.spot, Some(g6.on_demand * Decimal::new(3, 1)));
    }
}
