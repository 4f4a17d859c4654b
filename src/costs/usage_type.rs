//! What an AWS usage type says: purchase option and instance type, and from the instance
//! type the GPU model, count and memory. `USE1-SpotUsage:g5.xlarge` is one spot A10G.

/// How the capacity behind a usage type was bought.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PurchaseOption {
    OnDemand,
    Spot,
    Reserved,
    Other,
}

impl PurchaseOption {
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

/// The GPUs in one instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GpuSpec {
    pub model: &'static str,
    pub count: i32,
    pub memory_gib_each: i32,
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
    let body = match usage_type.split_once('-') {
        Some((region, rest)) if is_region_code(region) => rest,
        _ => usage_type,
    };
    let (operation, resource) = body.split_once(':').unwrap_or((body, ""));
    let purchase_option = match operation {
        "BoxUsage" | "DedicatedUsage" | "HostBoxUsage" => PurchaseOption::OnDemand,
        "SpotUsage" => PurchaseOption::Spot,
        "HeavyUsage" | "ReservedHostUsage" => PurchaseOption::Reserved,
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

/// GPUs per instance for the GPU families burnrate reports on.
pub fn gpu_spec(instance_type: &str) -> Option<GpuSpec> {
    let (family, size) = instance_type.split_once('.')?;
    let gpu = |model, count, memory_gib_each| {
        Some(GpuSpec {
            model,
            count,
            memory_gib_each,
        })
    };
    match (family, size) {
        ("p5" | "p5e" | "p5en", "48xlarge") => gpu("H100", 8, if family == "p5" { 80 } else { 141 }),
        ("p4d", "24xlarge") => gpu("A100", 8, 40),
        ("p4de", "24xlarge") => gpu("A100", 8, 80),
        ("p3", "2xlarge") => gpu("V100", 1, 16),
        ("p3", "8xlarge") => gpu("V100", 4, 16),
        ("p3", "16xlarge") => gpu("V100", 8, 16),
        ("p3dn", "24xlarge") => gpu("V100", 8, 32),
        ("g5", "xlarge" | "2xlarge" | "4xlarge" | "8xlarge" | "16xlarge") => gpu("A10G", 1, 24),
        ("g5", "12xlarge" | "24xlarge") => gpu("A10G", 4, 24),
        ("g5", "48xlarge") => gpu("A10G", 8, 24),
        ("g6", "xlarge" | "2xlarge" | "4xlarge" | "8xlarge" | "16xlarge") => gpu("L4", 1, 24),
        ("g6", "12xlarge" | "24xlarge") => gpu("L4", 4, 24),
        ("g6", "48xlarge") => gpu("L4", 8, 24),
        ("g6e", "xlarge" | "2xlarge" | "4xlarge" | "8xlarge" | "16xlarge") => gpu("L40S", 1, 48),
        ("g6e", "12xlarge" | "24xlarge") => gpu("L40S", 4, 48),
        ("g6e", "48xlarge") => gpu("L40S", 8, 48),
        ("g4dn", "12xlarge") => gpu("T4", 4, 16),
        ("g4dn", "metal") => gpu("T4", 8, 16),
        ("g4dn", _) => gpu("T4", 1, 16),
        _ => None,
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
                count: 8,
                memory_gib_each: 40
            })
        );
    }

    #[test]
    fn spot_usage_is_spot() {
        let u = parse("USE1-SpotUsage:g5.xlarge");
        assert_eq!(u.purchase_option, PurchaseOption::Spot);
        assert_eq!(
            u.gpu.map(|g| (g.model, g.count, g.memory_gib_each)),
            Some(("A10G", 1, 24))
        );
        assert_eq!(parse("USW2-SpotUsage:g6.xlarge").gpu.map(|g| g.model), Some("L4"));
        assert_eq!(parse("USE1-SpotUsage:p5.48xlarge").gpu.map(|g| g.count), Some(8));
    }

    #[test]
    fn usage_without_a_region_prefix_still_parses() {
        assert_eq!(parse("BoxUsage:g6.12xlarge").gpu.map(|g| g.count), Some(4));
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
    fn cpu_instances_have_no_gpu() {
        let u = parse("USE1-BoxUsage:m5.large");
        assert_eq!(u.instance_type.as_deref(), Some("m5.large"));
        assert_eq!(u.gpu, None);
    }
}
