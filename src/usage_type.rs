//! What an AWS usage type says: purchase option and instance type, and from the instance
//! type the GPU model, count and memory. `USE1-SpotUsage:g5.xlarge` is one spot A10G. And
//! the workload a usage-type fact is counted under, as SQL every reader shares.

use rust_decimal::Decimal;

use crate::catalogue::Catalogue;

/// The workload of a usage-type fact `c` with its usage type `u` and project `p`: what a
/// SageMaker usage type says, else what the project declares.
pub const WORKLOAD_SQL: &str = "coalesce(u.workload, nullif(p.workload, 'unknown'), 'unknown')";

/// How the capacity behind a usage type was bought.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PurchaseOption {
    OnDemand,
    Spot,
    Reserved,
    Other,
}

impl PurchaseOption {
    /// Reads back [`PurchaseOption::key`]; anything else is `Other`.
    pub fn parse(key: &str) -> PurchaseOption {
        [PurchaseOption::OnDemand, PurchaseOption::Spot, PurchaseOption::Reserved]
            .into_iter()
            .find(|p| p.key() == key)
            .unwrap_or(PurchaseOption::Other)
    }

    /// The value stored in `usage_types.purchase_option`.
    pub fn key(self) -> &'static str {
        match self {
            PurchaseOption::OnDemand => "on_demand",
            PurchaseOption::Spot => "spot",
            PurchaseOption::Reserved => "reserved",
            PurchaseOption::Other => "other",
        }
    }
}

/// The accelerators in one instance, from the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GpuSpec {
    pub model: &'static str,
    /// A fraction for g6f's partial L4.
    pub count: Decimal,
    pub memory_gib_each: Decimal,
}

/// A usage type, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageType {
    pub purchase_option: PurchaseOption,
    pub instance_type: Option<String>,
    pub gpu: Option<GpuSpec>,
}

impl UsageType {
    pub fn instance_family(&self) -> Option<&str> {
        self.instance_type.as_deref().and_then(|t| t.split('.').next())
    }
}

/// Parses an EC2 or SageMaker usage type. Unknown shapes parse as `Other` without an
/// instance type rather than failing: usage types are AWS's to extend.
pub fn parse(usage_type: &str) -> UsageType {
    // Drop the region prefix (`USE1-`, `EUC1-`); global usage types have none.
    let body = strip_region(usage_type);
    let (operation, resource) = body.split_once(':').unwrap_or((body, ""));
    let purchase_option = match operation {
        "BoxUsage" | "DedicatedUsage" | "HostBoxUsage" => PurchaseOption::OnDemand,
        "SpotUsage" => PurchaseOption::Spot,
        "HeavyUsage" | "ReservedHostUsage" | "SavingsPlanCoveredUsage" => PurchaseOption::Reserved,
        // SageMaker: `Train:ml.p4d.24xlarge`, `Host:ml.g5.xlarge`, spot training `Train-Spot:…`
        op if op.ends_with("-Spot") => PurchaseOption::Spot,
        "Train" | "Host" | "Notebk" | "Processing" | "Studio" => PurchaseOption::OnDemand,
        _ => PurchaseOption::Other,
    };
    let instance_type = if purchase_option == PurchaseOption::Other {
        None
    } else {
        let name = resource.strip_prefix("ml.").unwrap_or(resource);
        is_instance_type(name).then(|| name.to_string())
    };
    let gpu = instance_type.as_deref().and_then(gpu_spec);
    UsageType {
        purchase_option,
        instance_type,
        gpu,
    }
}

/// What runs, in words, for people who do not read usage types:
/// `USE1-BoxUsage:p4d.24xlarge` is "p4d.24xlarge, on-demand, 8 GPUs" and
/// `Notebk:ml.g5.12xlarge` is "ml.g5.12xlarge notebook, on-demand, 4 GPUs". Without a usage
/// type, the instance type and its GPUs; empty when neither says anything.
pub fn describe(usage_type: &str, instance_type: &str) -> String {
    let parsed = parse(usage_type);
    // A project-wide row names only an instance type, SageMaker's with its `ml.` prefix.
    let named = instance_type.strip_prefix("ml.").unwrap_or(instance_type);
    let Some(instance) = parsed
        .instance_type
        .clone()
        .or_else(|| is_instance_type(named).then(|| named.to_string()))
    else {
        return if usage_type.is_empty() {
            instance_type
        } else {
            usage_type
        }
        .to_string();
    };
    let mut words = match sagemaker_use(usage_type) {
        Some(SageMakerUse::Training) => vec![format!("ml.{instance} training")],
        Some(SageMakerUse::Hosting) => vec![format!("ml.{instance} endpoint")],
        Some(SageMakerUse::Notebook) => vec![format!("ml.{instance} notebook")],
        Some(SageMakerUse::Other) => vec![format!("ml.{instance}")],
        None if usage_type.is_empty() => vec![instance_type.to_string()],
        None => vec![instance.clone()],
    };
    match parsed.purchase_option {
        PurchaseOption::OnDemand => words.push("on-demand".into()),
        PurchaseOption::Spot => words.push("spot".into()),
        PurchaseOption::Reserved => words.push("reserved".into()),
        PurchaseOption::Other => {}
    }
    if let Some(gpu) = gpu_spec(&instance) {
        let count = gpu.count.normalize();
        words.push(match count {
            c if c < Decimal::ONE => format!("{c} of a GPU"),
            c if c == Decimal::ONE => "1 GPU".to_string(),
            c => format!("{c} GPUs"),
        });
    }
    words.join(", ")
}

fn is_region_code(text: &str) -> bool {
    (3..=5).contains(&text.len()) && text.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
}

fn is_instance_type(name: &str) -> bool {
    match name.split_once('.') {
        Some((family, size)) => {
            !family.is_empty()
                && !size.is_empty()
                && family.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && size.chars().all(|c| c.is_ascii_alphanumeric())
        }
        None => false,
    }
}

/// The accelerators of an instance type in the catalogue (GPUs and Neuron chips alike).
pub fn gpu_spec(instance_type: &str) -> Option<GpuSpec> {
    Catalogue::built_in().get(instance_type).map(|t| GpuSpec {
        model: t.accelerator.as_str(),
        count: t.accelerator_count,
        memory_gib_each: t.accelerator_memory_gib,
    })
}

/// How SageMaker bills an instance: `Train:` (training jobs), `Host:` (endpoints),
/// `Notebk:` (notebooks); `None` for EC2 and everything else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SageMakerUse {
    Training,
    Hosting,
    Notebook,
    Other,
}

impl SageMakerUse {
    /// The workload this use is, whatever the project declares (`projects.workload` keys).
    pub fn workload_key(self) -> Option<&'static str> {
        match self {
            SageMakerUse::Training => Some("training"),
            SageMakerUse::Hosting => Some("serving"),
            SageMakerUse::Notebook => Some("dev"),
            SageMakerUse::Other => None,
        }
    }
}

/// The SageMaker use of a usage type, if it is one.
pub fn sagemaker_use(usage_type: &str) -> Option<SageMakerUse> {
    let (operation, resource) = strip_region(usage_type).split_once(':')?;
    if !resource.starts_with("ml.") {
        return None;
    }
    Some(match operation.trim_end_matches("-Spot") {
        "Train" => SageMakerUse::Training,
        "Host" => SageMakerUse::Hosting,
        "Notebk" => SageMakerUse::Notebook,
        _ => SageMakerUse::Other,
    })
}

/// The AWS region a usage type's prefix names (`USW2-` is us-west-2); no prefix is us-east-1,
/// as Cost Explorer writes it. Unknown prefixes are returned as they are.
pub fn region(usage_type: &str) -> String {
    let prefix = match usage_type.split_once('-') {
        Some((region, _)) if is_region_code(region) => region,
        _ => return "us-east-1".into(),
    };
    let known = [
        ("USE1", "us-east-1"),
        ("USE2", "us-east-2"),
        ("USW1", "us-west-1"),
        ("USW2", "us-west-2"),
        ("CAN1", "ca-central-1"),
        ("EUC1", "eu-central-1"),
        ("EU", "eu-west-1"),
        ("EUW1", "eu-west-1"),
        ("EUW2", "eu-west-2"),
        ("EUW3", "eu-west-3"),
        ("EUN1", "eu-north-1"),
        ("APN1", "ap-northeast-1"),
        ("APN2", "ap-northeast-2"),
        ("APS1", "ap-southeast-1"),
        ("APS2", "ap-southeast-2"),
        ("APS3", "ap-south-1"),
        ("SAE1", "sa-east-1"),
    ];
    known
        .iter()
        .find(|(code, _)| *code == prefix)
        .map_or_else(|| prefix.to_string(), |(_, name)| (*name).to_string())
}

fn strip_region(usage_type: &str) -> &str {
    match usage_type.split_once('-') {
        Some((region, rest)) if is_region_code(region) => rest,
        _ => usage_type,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_demand_box_usage_carries_the_instance_and_its_gpus() {
        let u = parse("USE1-BoxUsage:p4d.24xlarge");
        assert_eq!(u.purchase_option, PurchaseOption::OnDemand);
        assert_eq!(u.instance_type.as_deref(), Some("p4d.24xlarge"));
        assert_eq!(u.instance_family(), Some("p4d"));
        assert_eq!(
            u.gpu,
            Some(GpuSpec {
                model: "A100",
                count: Decimal::from(8),
                memory_gib_each: Decimal::from(40)
            })
        );
    }

    #[test]
    fn spot_usage_is_spot() {
        let u = parse("USE1-SpotUsage:g5.xlarge");
        assert_eq!(u.purchase_option, PurchaseOption::Spot);
        assert_eq!(
            u.gpu.map(|g| (g.model, g.count, g.memory_gib_each)),
            Some(("A10G", Decimal::ONE, Decimal::from(24)))
        );
        assert_eq!(parse("USW2-SpotUsage:g6.xlarge").gpu.map(|g| g.model), Some("L4"));
        assert_eq!(
            parse("USE1-SpotUsage:p5.48xlarge").gpu.map(|g| g.count),
            Some(Decimal::from(8))
        );
    }

    #[test]
    fn usage_without_a_region_prefix_still_parses() {
        assert_eq!(
            parse("BoxUsage:g6.12xlarge").gpu.map(|g| g.count),
            Some(Decimal::from(4))
        );
    }

    #[test]
    fn sagemaker_usage_types_name_their_ml_instance() {
        let u = parse("USE1-Train:ml.p4d.24xlarge");
        assert_eq!(u.purchase_option, PurchaseOption::OnDemand);
        assert_eq!(u.instance_type.as_deref(), Some("p4d.24xlarge"));
        assert_eq!(
            parse("USE1-Train-Spot:ml.g5.2xlarge").purchase_option,
            PurchaseOption::Spot
        );
    }

    #[test]
    fn storage_and_unknown_usage_types_have_no_instance() {
        for text in [
            "USE1-EBS:VolumeUsage.gp3",
            "USE1-TimedStorage-ByteHrs",
            "",
            "<script>",
            "USE1-BoxUsage:",
        ] {
            let u = parse(text);
            assert_eq!(u.gpu, None, "{text}");
            assert!(u.instance_type.is_none(), "{text}");
        }
        assert_eq!(parse("USE1-EBS:VolumeUsage.gp3").purchase_option, PurchaseOption::Other);
    }

    #[test]
    fn reserved_heavy_usage_is_reserved() {
        assert_eq!(
            parse("USE1-HeavyUsage:p4d.24xlarge").purchase_option,
            PurchaseOption::Reserved
        );
    }

    #[test]
    fn sagemaker_uses_and_regions_are_read_from_the_usage_type() {
        assert_eq!(
            sagemaker_use("USE1-Train:ml.p4d.24xlarge"),
            Some(SageMakerUse::Training)
        );
        assert_eq!(
            sagemaker_use("USE1-Train-Spot:ml.g5.2xlarge"),
            Some(SageMakerUse::Training)
        );
        assert_eq!(sagemaker_use("USE1-Host:ml.g5.xlarge"), Some(SageMakerUse::Hosting));
        assert_eq!(sagemaker_use("Notebk:ml.g5.2xlarge"), Some(SageMakerUse::Notebook));
        assert_eq!(sagemaker_use("USE1-BoxUsage:g5.xlarge"), None);
        assert_eq!(region("USW2-BoxUsage:g5.xlarge"), "us-west-2");
        assert_eq!(region("BoxUsage:g5.xlarge"), "us-east-1");
        assert_eq!(region("MEC1-BoxUsage:g5.xlarge"), "MEC1");
    }

    #[test]
    fn the_newer_families_come_from_the_catalogue() {
        assert_eq!(parse("USE1-BoxUsage:p5en.48xlarge").gpu.map(|g| g.model), Some("H200"));
        assert_eq!(
            parse("USE1-BoxUsage:inf2.xlarge").gpu.map(|g| g.model),
            Some("Inferentia2")
        );
        assert!(
            parse("USE1-BoxUsage:g6f.xlarge")
                .gpu
                .is_some_and(|g| g.count < Decimal::ONE)
        );
    }

    #[test]
    fn cpu_instances_have_no_gpu() {
        let u = parse("USE1-BoxUsage:m5.large");
        assert_eq!(u.instance_type.as_deref(), Some("m5.large"));
        assert_eq!(u.gpu, None);
    }

    #[test]
    fn usage_types_read_in_words() {
        assert_eq!(
            describe("USE1-BoxUsage:p4d.24xlarge", ""),
            "p4d.24xlarge, on-demand, 8 GPUs"
        );
        assert_eq!(describe("USW2-SpotUsage:g5.xlarge", ""), "g5.xlarge, spot, 1 GPU");
        assert_eq!(
            describe("Notebk:ml.g5.12xlarge", ""),
            "ml.g5.12xlarge notebook, on-demand, 4 GPUs"
        );
        assert_eq!(
            describe("USE1-Host:ml.g5.xlarge", ""),
            "ml.g5.xlarge endpoint, on-demand, 1 GPU"
        );
        assert_eq!(
            describe("USE1-Train-Spot:ml.p4d.24xlarge", ""),
            "ml.p4d.24xlarge training, spot, 8 GPUs"
        );
        // A project-wide row names only its instance type.
        assert_eq!(describe("", "g5.12xlarge"), "g5.12xlarge, 4 GPUs");
        assert_eq!(describe("", "ml.g5.xlarge"), "ml.g5.xlarge, 1 GPU");
        assert_eq!(describe("", "Neuron-something"), "Neuron-something");
        assert_eq!(
            describe("USE1-BoxUsage:g6f.large", ""),
            "g6f.large, on-demand, 0.125 of a GPU"
        );
        // Shapes it cannot read stay as they are.
        assert_eq!(
            describe("USE1-DataTransfer-Out-Bytes", ""),
            "USE1-DataTransfer-Out-Bytes"
        );
        assert_eq!(describe("", ""), "");
    }
}
