//! Right-sizing from what the GPUs showed, for projects that declare no model size: the
//! smallest catalogue GPU, and count, whose memory holds the peak the GPUs reached with 20 %
//! headroom. Where the GPUs were mostly idle while they ran (mean below 40 % over active
//! hours, by the best counter they publish) fewer of them are proposed: enough to do the
//! work of their active hours at a 60 % mean (idle stretches are the idle rule's, counted
//! first). Memory still bounds the count: every GPU's peak together, with headroom, must fit
//! the GPUs proposed.
//!
//! A proposal has GPUs with less memory than today's, or fewer of them; another card of the
//! same size is no right-size. Only where all of a project's GPU usage is one instance type (the GPUs observed are that
//! type's), on NVIDIA types the catalogue knows; the proposal keeps the CPU architecture,
//! native bf16 where the current GPU has it, and SageMaker's offer for SageMaker usage.
//! Saving = spend × (1 − price ratio), only when cheaper. A declared model size wins
//! (`rightsize`).

use std::collections::BTreeMap;

use rust_decimal::Decimal;

use super::{Inputs, offered, percent};
use crate::catalogue::{Catalogue, InstanceType, Vendor};
use crate::format::{count, quantity};
use crate::savings::facts::Usage;
use crate::savings::model::{Kind, Recommendation};

/// Memory kept free above the peak: the and the seeds' 20 %.
const HEADROOM: Decimal = Decimal::from_parts(12, 0, 0, false, 1);
/// Below this mean over active hours, GPUs are mostly idle while they run.
const MOSTLY_IDLE_BELOW: i64 = 40;
/// The mean the work is packed to when fewer GPUs are proposed.
const PACKED_TO: i64 = 60;

/// What a project's GPUs showed over the window.
#[derive(Debug, Clone, PartialEq)]
pub struct Shown {
    pub gpus: i64,
    /// The largest one GPU's peak, and every GPU's peak together, in GiB.
    pub peak_gib: Decimal,
    pub peaks_gib: Decimal,
    /// Where the peak comes from and which statistic it is.
    pub source: &'static str,
    /// Percent busy over every observed step, and over steps outside idle stretches.
    pub mean: Decimal,
    pub active_mean: Decimal,
    pub judged_by: String,
}

fn whole(t: &InstanceType) -> Option<Decimal> {
    t.whole_accelerators().map(Decimal::from)
}

pub fn recommend(inputs: &Inputs, shown: &BTreeMap<String, Shown>) -> Vec<Recommendation> {
    // The GPUs observed are a type's only when the project runs no other.
    let mut types: BTreeMap<&str, std::collections::BTreeSet<&str>> = BTreeMap::new();
    for u in inputs.usage {
        types.entry(&u.project).or_default().insert(&u.instance_type);
    }
    inputs
        .usage
        .iter()
        .filter(|u| u.facts.model.is_none() && u.purchase != crate::usage_type::PurchaseOption::Reserved)
        .filter(|u| u.spend > Decimal::ZERO)
        .filter(|u| types.get(u.project.as_str()).is_some_and(|t| t.len() == 1))
        .filter_map(|u| sized(inputs, u, shown.get(&u.project)?))
        .collect()
}

fn sized(inputs: &Inputs, u: &Usage, shown: &Shown) -> Option<Recommendation> {
    let current = Catalogue::built_in().get(&u.instance_type)?;
    let per_instance = whole(current)?;
    if current.vendor != Vendor::Nvidia || shown.gpus < 1 || u.project.is_empty() {
        return None;
    }
    let instances = (Decimal::from(shown.gpus) / per_instance).ceil().max(Decimal::ONE);
    let per_gpu_need = shown.peak_gib * HEADROOM;
    let instance_need = shown.peaks_gib * HEADROOM / instances;
    let mostly_idle = shown.active_mean < Decimal::from(MOSTLY_IDLE_BELOW);
    // The work done while they ran, packed to a 60 % mean, per instance. Idle stretches are
    // the idle rule's hours, which compound first: counting them here too would remove them
    // twice.
    let for_work = if mostly_idle {
        (Decimal::from(shown.gpus) * shown.active_mean / Decimal::from(PACKED_TO) / instances)
            .ceil()
            .max(Decimal::ONE)
    } else {
        per_instance
    };
    let sagemaker = !u.is_ec2();
    let current_price = inputs.pricing.price_of(current, &u.region, sagemaker);
    let (best, best_price) = Catalogue::built_in()
        .iter()
        .filter(|t| t.vendor == Vendor::Nvidia && t.arm64 == current.arm64 && (!current.bf16 || t.bf16))
        .filter(|t| !sagemaker || t.sagemaker_usd_hour.is_some())
        .filter(|t| t.accelerator_memory_gib >= per_gpu_need && t.total_memory_gib() >= instance_need)
        .filter(|t| whole(t).is_some_and(|n| n >= for_work))
        // Smaller GPUs, or fewer: a move to another card of the same memory is no right-size.
        .filter(|t| {
            t.accelerator_memory_gib < current.accelerator_memory_gib || whole(t).is_some_and(|n| n < per_instance)
        })
        .map(|t| (t, inputs.pricing.price_of(t, &u.region, sagemaker)))
        .min_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.name.cmp(&b.0.name)))?;
    if best_price >= current_price || current_price <= Decimal::ZERO {
        return None;
    }
    let ratio = best_price / current_price;
    let work = if mostly_idle {
        format!(
            "; {} {} over active hours (below 40 %): the work fits {} GPU(s) an instance at a 60 % mean",
            shown.judged_by,
            crate::format::percent_value(shown.active_mean),
            quantity(for_work, 0)
        )
    } else {
        String::new()
    };
    let detail = format!(
        "peak GPU memory {} GiB on a {} GiB {} ({}); with 20 % headroom a GPU needs {} GiB and {} GPU(s)' peaks together {} GiB an instance{work}; {}; {}, {} of the price; no model size is declared (a declared one sizes by the model instead)",
        quantity(shown.peak_gib, 1),
        quantity(current.accelerator_memory_gib, 0),
        current.accelerator,
        shown.source,
        quantity(per_gpu_need, 1),
        count(shown.gpus),
        quantity(instance_need, 1),
        offered(current, current_price),
        offered(best, best_price),
        percent(ratio),
    );
    Some(inputs.measured(
        Kind::Rightsize,
        u,
        best.name.clone(),
        u.spend * (Decimal::ONE - ratio),
        detail,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::savings::facts::Window;
    use crate::savings::model::{Model, Precision, ProjectFacts, Workload};
    use crate::savings::pricing::Pricing;
    use crate::usage_type::PurchaseOption;

    fn d(text: &str) -> Decimal {
        text.parse().expect("decimal")
    }

    fn usage(instance_type: &str, spend: &str) -> Usage {
        Usage {
            project: "fraud".into(),
            team: Some("risk".into()),
            usage_type: format!("USE1-BoxUsage:{instance_type}"),
            purchase: PurchaseOption::OnDemand,
            instance_type: instance_type.into(),
            family: instance_type.split('.').next().unwrap_or_default().into(),
            gpus_per_instance: Decimal::ONE,
            sagemaker: None,
            region: "us-east-1".into(),
            facts: ProjectFacts {
                workload: Workload::Serving,
                model: None,
            },
            spend: d(spend),
            hours: d("720"),
            daily_hours: BTreeMap::new(),
            inferred: None,
            accounts: BTreeMap::new(),
        }
    }

    fn shown(gpus: i64, peak_gib: &str, peaks_gib: &str, mean: &str, active_mean: &str) -> BTreeMap<String, Shown> {
        BTreeMap::from([(
            "fraud".to_string(),
            Shown {
                gpus,
                peak_gib: d(peak_gib),
                peaks_gib: d(peaks_gib),
                source: "DCGM FB_USED, the largest sample (100th percentile)",
                mean: d(mean),
                active_mean: d(active_mean),
                judged_by: "SM activity".into(),
            },
        )])
    }

    fn run(usage: &[Usage], shown: &BTreeMap<String, Shown>) -> Vec<Recommendation> {
        let day = chrono::NaiveDate::from_ymd_opt(2026, 10, 1).expect("day");
        let pricing = Pricing::default();
        let inputs = Inputs {
            window: Window {
                from: day,
                to: day + chrono::Days::new(30),
            },
            usage,
            pricing: &pricing,
        };
        recommend(&inputs, shown)
    }

    #[test]
    fn a_gpu_peaking_at_14_gib_of_80_moves_to_a_24_gib_card_without_a_declaration() {
        // One H100 (p5.4xlarge, $6.88/h) whose memory peaked at 14 GiB, busy 70 % while it ran.
        // 14 × 1.2 = 16.8 GiB: T4s (16) are too small; the cheapest bf16 GPU of at least 16.8
        // GiB is g6.xlarge's L4 (24 GiB, $0.8048/h). $4,953.60 is 720 hours at $6.88; at
        // $0.8048 they cost $579.456, so the saving is $4,374.144.
        let rows = run(&[usage("p5.4xlarge", "4953.60")], &shown(1, "14", "14", "70", "70"));
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].recommended, "g6.xlarge");
        assert_eq!(rows[0].monthly_saving.round_dp(6), d("4374.144"));
        for evidence in ["peak GPU memory 14 GiB", "DCGM FB_USED, the largest sample", "16.8 GiB"] {
            assert!(rows[0].detail.contains(evidence), "{evidence}: {}", rows[0].detail);
        }
    }

    #[test]
    fn mostly_idle_gpus_are_proposed_fewer_and_memory_still_bounds_the_count() {
        // A p4d.24xlarge (8 A100 40 GiB, $21.957642/h) whose GPUs each peaked at 14 GiB (112
        // together), 20 % busy over active hours. The work fits ⌈8 × 20 / 60⌉ = 3 GPUs; each
        // needs 16.8 GiB and together 134.4. The cheapest with at least 3 such GPUs holding
        // 134.4 GiB, smaller or fewer than today's: g6e.12xlarge (4 L40S, 192 GiB,
        // $10.49264/h). Over 720 hours: $15,809.50224 today, $7,554.7008 there, saving
        // $8,254.80144.
        let rows = run(
            &[usage("p4d.24xlarge", "15809.50224")],
            &shown(8, "14", "112", "15", "20"),
        );
        assert_eq!(rows[0].recommended, "g6e.12xlarge");
        assert_eq!(rows[0].monthly_saving.round_dp(6), d("8254.80144"));
        assert!(rows[0].detail.contains("the work fits 3 GPU(s)"), "{}", rows[0].detail);
        // Seed 000's fraud model on a g5.12xlarge: one GPU working (30 % while it ran, 14 GiB),
        // three idle. The work of the active hours needs ⌈4 × 30 / 60⌉ = 2 GPUs of 16.8 GiB:
        // no type has two smaller GPUs or fewer than four of 24 GiB, so no right-size; the
        // three idle GPUs are the idle rule's row.
        assert!(run(&[usage("g5.12xlarge", "4083.84")], &shown(4, "14", "15.5", "7.5", "30")).is_empty());
        // Four GPUs each near 20 GiB (80 together) need four cards' memory however idle they
        // are: 80 × 1.2 = 96 GiB an instance. Only other 4 × 24 GiB types hold it (g6.12xlarge
        // is cheaper), and another card of the same size is no right-size: no row.
        assert!(run(&[usage("g5.12xlarge", "4083.84")], &shown(4, "20", "80", "7.5", "10")).is_empty());
    }

    #[test]
    fn a_declared_model_or_a_second_instance_type_leaves_it_to_others() {
        let mut declared = usage("p5.4xlarge", "4953.60");
        declared.facts.model = Some(Model {
            params_b: d("7"),
            precision: Precision::Bf16,
        });
        assert!(run(&[declared], &shown(1, "14", "14", "70", "70")).is_empty());
        // Two types: the GPUs observed are not one type's.
        let two = [usage("p5.4xlarge", "4953.60"), usage("g5.xlarge", "700")];
        assert!(run(&two, &shown(1, "14", "14", "70", "70")).is_empty());
        // Memory unknown: no row.
        assert!(run(&[usage("p5.4xlarge", "4953.60")], &BTreeMap::new()).is_empty());
    }
}
