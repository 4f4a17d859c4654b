//! Right-sizing from model size. A model needs parameters × bytes per parameter × 1.2 of GPU
//! memory to serve (weights plus about 20 % for the KV cache and activations). To train with
//! Adam in mixed precision it needs 16 bytes per parameter (bf16/fp16 weights 2 and gradients
//! 2, an fp32 master copy 4, two fp32 moments 4 + 4), plus at least 20 % for activations.
//! The recommended type is the cheapest NVIDIA instance type in the catalogue whose total GPU
//! memory holds that (same CPU architecture; bf16 models only on GPUs with native bf16), so
//! a run is never moved where it would not fit. Saving = spend × (1 − price ratio), only
//! when cheaper. Neuron types (inf2, trn) are named, never recommended.

use rust_decimal::Decimal;

use super::{Inputs, offered, per_hour};
use crate::catalogue::{Catalogue, InstanceType, Vendor};
use crate::format::quantity;
use crate::savings::facts::Usage;
use crate::savings::model::{Kind, Model, Precision, Recommendation, Workload};
use crate::usage_type::PurchaseOption;

const GIB: u64 = 1 << 30;

/// Bytes per parameter to train with Adam in mixed precision, whatever the weights' own
/// precision: weights and gradients in 16 bits (2 + 2), an fp32 master copy (4) and Adam's two
/// fp32 moments (4 + 4). Full-precision training needs the same 16 (4 × 4).
const TRAINING_BYTES_PER_PARAMETER: u64 = 16;

/// Bytes each parameter takes for the workload: the weights' precision to serve, 16 to
/// train; `None` for work with no sizing rule (dev, unknown).
fn bytes_per_parameter(model: Model, workload: Workload) -> Option<Decimal> {
    match workload {
        Workload::Serving | Workload::Batch => Some(model.precision.bytes()),
        Workload::Training => Some(Decimal::from(TRAINING_BYTES_PER_PARAMETER)),
        Workload::Dev | Workload::Unknown => None,
    }
}

/// The least share activations add on top (they grow with batch size and sequence length).
const ACTIVATIONS: Decimal = Decimal::from_parts(12, 0, 0, false, 1);

/// GPU memory the model needs for the workload, in GiB; `None` for work with no sizing rule
/// (dev, unknown). A type that holds this may still be too small for a large batch, never
/// for the weights, gradients and optimiser state.
pub fn memory_needed_gib(model: Model, workload: Workload) -> Option<Decimal> {
    let bytes = model.params_b * Decimal::from(1_000_000_000u64) * bytes_per_parameter(model, workload)? * ACTIVATIONS;
    Some(bytes / Decimal::from(GIB))
}

/// The cheapest instance type of `vendor` that holds `need_gib`, priced as this organisation
/// pays in `region`.
pub fn cheapest_fit<'a>(
    inputs: &Inputs,
    need_gib: Decimal,
    precision: Precision,
    vendor: Vendor,
    arm64: bool,
    region: &str,
    sagemaker: bool,
) -> Option<(&'a InstanceType, Decimal)> {
    Catalogue::built_in()
        .iter()
        .filter(|t| t.vendor == vendor && t.arm64 == arm64 && t.total_memory_gib() >= need_gib)
        .filter(|t| precision != Precision::Bf16 || t.bf16)
        .filter(|t| !sagemaker || t.sagemaker_usd_hour.is_some())
        .map(|t| (t, inputs.pricing.price_of(t, region, sagemaker)))
        .min_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.name.cmp(&b.0.name)))
}

pub fn recommend(inputs: &Inputs) -> Vec<Recommendation> {
    inputs
        .usage
        .iter()
        .filter(|u| u.purchase != PurchaseOption::Reserved && u.spend > Decimal::ZERO)
        .filter_map(|u| rightsize(inputs, u))
        .collect()
}

fn rightsize(inputs: &Inputs, u: &Usage) -> Option<Recommendation> {
    let model = u.facts.model?;
    let workload = u.workload();
    let need = memory_needed_gib(model, workload)?;
    let current = Catalogue::built_in().get(&u.instance_type)?;
    // A model larger than the instance is sharded across several; its size says nothing
    // about a smaller type.
    if current.total_memory_gib() < need || current.vendor != Vendor::Nvidia {
        return None;
    }
    let sagemaker = !u.is_ec2();
    let current_price = inputs.pricing.price_of(current, &u.region, sagemaker);
    let (best, best_price) = cheapest_fit(
        inputs,
        need,
        model.precision,
        Vendor::Nvidia,
        current.arm64,
        &u.region,
        sagemaker,
    )?;
    if best.name == current.name || best_price >= current_price || current_price <= Decimal::ZERO {
        return None;
    }
    let ratio = best_price / current_price;
    let neuron = cheapest_fit(
        inputs,
        need,
        model.precision,
        Vendor::Neuron,
        false,
        &u.region,
        sagemaker,
    )
    .map(|(t, price)| {
        format!(
            "; Neuron alternative {} ({} GiB, {}) needs the Neuron SDK",
            t.name,
            quantity(t.total_memory_gib(), 1),
            per_hour(price)
        )
    })
    .unwrap_or_default();
    let detail = format!(
        "{}B {} {} needs {} GiB ({}B × {} B × {}); {}; {}{neuron}",
        quantity(model.params_b, 3),
        model.precision.key(),
        workload.key(),
        quantity(need, 1),
        quantity(model.params_b, 3),
        bytes_per_parameter(model, workload).unwrap_or_default().normalize(),
        ACTIVATIONS,
        offered(current, current_price),
        offered(best, best_price),
    );
    Some(inputs.for_usage(
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

    fn model(params_b: &str, precision: Precision) -> Model {
        Model {
            params_b: params_b.parse().expect("decimal"),
            precision,
        }
    }

    #[test]
    fn training_needs_16_bytes_a_parameter_and_a_fifth_more_for_activations() {
        // 7 × 10⁹ × 16 × 1.2 ÷ 2³⁰ = 125.169754… GiB, whether the weights are bf16 or fp32.
        let need = memory_needed_gib(model("7", Precision::Bf16), Workload::Training).expect("sized");
        assert_eq!(need.round_dp(4), "125.1698".parse::<Decimal>().expect("decimal"));
        assert_eq!(
            memory_needed_gib(model("7", Precision::Fp32), Workload::Training),
            Some(need)
        );
        // Serving keeps params × bytes × 1.2: 7 × 10⁹ × 2 × 1.2 ÷ 2³⁰ = 15.6462… GiB.
        let serve = memory_needed_gib(model("7", Precision::Bf16), Workload::Serving).expect("sized");
        assert_eq!(serve.round_dp(4), "15.6462".parse::<Decimal>().expect("decimal"));
        assert_eq!(memory_needed_gib(model("7", Precision::Bf16), Workload::Dev), None);
    }
}
