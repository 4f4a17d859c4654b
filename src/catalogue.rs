//! The GPU catalogue: every AWS GPU and accelerator instance type burnrate knows, with its
//! accelerators, CPU, memory and us-east-1 on-demand prices (EC2 and the SageMaker `ml.`
//! counterpart). Shipped as data (`catalogue/gpu_catalogue.csv`, compiled in) with the source and
//! date of each price, so an update is a reviewed CSV change rather than code.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use rust_decimal::Decimal;

const CSV: &str = include_str!("../catalogue/gpu_catalogue.csv");
const HEADER: &str = "instance_type,family,accelerator,vendor,accelerator_count,accelerator_memory_gib,vcpu,ram_gib,cpu_arch,bf16,on_demand_usd_hour,sagemaker_usd_hour,price_source,price_date";

/// Who makes the accelerator. Neuron chips (Inferentia, Trainium) need the Neuron SDK, so
/// they are named as alternatives, never recommended as drop-in replacements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vendor {
    Nvidia,
    Neuron,
}

/// One instance type.
#[derive(Debug, Clone, PartialEq)]
pub struct InstanceType {
    pub name: String,
    pub family: String,
    pub accelerator: String,
    pub vendor: Vendor,
    /// Accelerators per instance; a fraction for g6f's partial L4.
    pub accelerator_count: Decimal,
    pub accelerator_memory_gib: Decimal,
    pub vcpu: u32,
    pub ram_gib: u32,
    pub arm64: bool,
    /// Native bf16 (Ampere and newer, Neuron); T4 has none.
    pub bf16: bool,
    /// us-east-1 Linux on-demand USD per hour.
    pub on_demand_usd_hour: Decimal,
    /// us-east-1 SageMaker USD per hour for `ml.<name>`, when SageMaker offers the type.
    pub sagemaker_usd_hour: Option<Decimal>,
    pub price_source: String,
    pub price_date: chrono::NaiveDate,
}

impl InstanceType {
    /// Whole accelerators per instance; `None` for a fraction of one (g6f).
    pub fn whole_accelerators(&self) -> Option<u32> {
        let n = self.accelerator_count;
        (n >= Decimal::ONE && n.fract().is_zero())
            .then(|| u32::try_from(n.trunc().mantissa()).ok())
            .flatten()
    }

    /// Accelerator memory across the instance.
    pub fn total_memory_gib(&self) -> Decimal {
        self.accelerator_count * self.accelerator_memory_gib
    }

    /// The list price for EC2 or, for SageMaker usage, the `ml.` price (EC2's when SageMaker
    /// does not list the type).
    pub fn list_price(&self, sagemaker: bool) -> Decimal {
        match (sagemaker, self.sagemaker_usd_hour) {
            (true, Some(price)) => price,
            _ => self.on_demand_usd_hour,
        }
    }
}

/// Default share saved by spot when the organisation's own data shows none for a type.
pub const DEFAULT_SPOT_DISCOUNT_PERCENT: u32 = 65;
/// Default discount of a 1-year no-upfront Savings Plan against on-demand, for GPU instances
/// (Compute and SageMaker Savings Plans list 25–35 % for these families at one year).
pub const DEFAULT_SAVINGS_PLAN_DISCOUNT_PERCENT: u32 = 28;

static BUILT_IN: LazyLock<Result<Catalogue, String>> = LazyLock::new(|| Catalogue::parse(CSV));

/// The catalogue, by instance type name.
#[derive(Debug, Clone)]
pub struct Catalogue {
    types: BTreeMap<String, InstanceType>,
}

impl Catalogue {
    /// The catalogue shipped with this build. A malformed CSV fails the unit tests, so this
    /// only returns an empty catalogue if someone ships one without running them.
    pub fn built_in() -> &'static Catalogue {
        static EMPTY: LazyLock<Catalogue> = LazyLock::new(|| Catalogue { types: BTreeMap::new() });
        BUILT_IN.as_ref().unwrap_or(&EMPTY)
    }

    pub fn get(&self, instance_type: &str) -> Option<&InstanceType> {
        self.types.get(instance_type)
    }

    pub fn iter(&self) -> impl Iterator<Item = &InstanceType> {
        self.types.values()
    }

    pub fn len(&self) -> usize {
        self.types.len()
    }

    pub fn is_empty(&self) -> bool {
        self.types.is_empty()
    }

    pub fn parse(text: &str) -> Result<Catalogue, String> {
        let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
        match lines.next() {
            Some((_, header)) if header.trim_end() == HEADER => {}
            _ => return Err(format!("the catalogue must start with the header {HEADER}")),
        }
        let mut types = BTreeMap::new();
        for (index, line) in lines {
            let row = parse_row(line).map_err(|e| format!("line {}: {e}", index + 1))?;
            if types.insert(row.name.clone(), row).is_some() {
                return Err(format!("line {}: the instance type is listed twice", index + 1));
            }
        }
        Ok(Catalogue { types })
    }
}

/// An accelerator family burnrate should know: a usage type naming one of these outside the
/// catalogue is reported on the Ingestion page instead of being left out of GPU figures.
pub fn looks_like_accelerator(instance_type: &str) -> bool {
    let family = instance_type.split('.').next().unwrap_or_default();
    let starts = |prefix: &str| {
        family
            .strip_prefix(prefix)
            .and_then(|rest| rest.chars().next())
            .is_some_and(|c| c.is_ascii_digit())
    };
    ["p", "g", "gr", "inf", "trn", "dl", "vt"].into_iter().any(starts)
}

fn parse_row(line: &str) -> Result<InstanceType, String> {
    let cells = split_csv(line)?;
    let [
        name,
        family,
        accelerator,
        vendor,
        count,
        memory,
        vcpu,
        ram,
        arch,
        bf16,
        on_demand,
        sagemaker,
        source,
        date,
    ] = <[String; 14]>::try_from(cells).map_err(|cells| format!("expected 14 cells, found {}", cells.len()))?;
    let decimal = |field: &str, text: &str| {
        text.parse::<Decimal>()
            .ok()
            .filter(|d| *d > Decimal::ZERO)
            .ok_or_else(|| format!("{field} must be a positive number, not {text:?}"))
    };
    let whole = |field: &str, text: &str| {
        text.parse::<u32>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| format!("{field} must be a positive whole number, not {text:?}"))
    };
    if !name.starts_with(&format!("{family}.")) {
        return Err(format!("{name} is not in family {family}"));
    }
    Ok(InstanceType {
        vendor: match vendor.as_str() {
            "nvidia" => Vendor::Nvidia,
            "neuron" => Vendor::Neuron,
            other => return Err(format!("vendor must be nvidia or neuron, not {other:?}")),
        },
        accelerator_count: decimal("accelerator_count", &count)?,
        accelerator_memory_gib: decimal("accelerator_memory_gib", &memory)?,
        vcpu: whole("vcpu", &vcpu)?,
        ram_gib: whole("ram_gib", &ram)?,
        arm64: match arch.as_str() {
            "x86_64" => false,
            "arm64" => true,
            other => return Err(format!("cpu_arch must be x86_64 or arm64, not {other:?}")),
        },
        bf16: match bf16.as_str() {
            "true" => true,
            "false" => false,
            other => return Err(format!("bf16 must be true or false, not {other:?}")),
        },
        on_demand_usd_hour: decimal("on_demand_usd_hour", &on_demand)?,
        sagemaker_usd_hour: if sagemaker.is_empty() {
            None
        } else {
            Some(decimal("sagemaker_usd_hour", &sagemaker)?)
        },
        price_date: date
            .parse()
            .map_err(|_| format!("price_date must be YYYY-MM-DD, not {date:?}"))?,
        price_source: if source.is_empty() {
            return Err("every price needs its source".into());
        } else {
            source
        },
        name,
        family,
        accelerator,
    })
}

/// One RFC 4180 line: cells split at commas, double quotes around a cell that holds commas
/// or quotes (a quote inside is doubled).
fn split_csv(line: &str) -> Result<Vec<String>, String> {
    let mut cells = Vec::new();
    let mut cell = String::new();
    let mut chars = line.trim_end_matches('\r').chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (false, ',') => cells.push(std::mem::take(&mut cell)),
            (false, '"') if cell.is_empty() => quoted = true,
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                cell.push('"');
            }
            (true, '"') => quoted = false,
            (_, c) => cell.push(c),
        }
    }
    if quoted {
        return Err("a quoted cell is not closed".into());
    }
    cells.push(cell);
    Ok(cells.into_iter().map(|c| c.trim().to_string()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn built_in() -> &'static Catalogue {
        match BUILT_IN.as_ref() {
            Ok(catalogue) => catalogue,
            Err(e) => panic!("catalogue/gpu_catalogue.csv: {e}"),
        }
    }

    #[test]
    fn every_family_the_issue_names_is_in_the_shipped_catalogue() {
        let catalogue = built_in();
        for family in [
            "g4dn", "g5", "g5g", "g6", "g6e", "g6f", "gr6", "p4d", "p4de", "p5", "p5e", "p5en", "p6-b200", "trn1",
            "trn2", "inf2",
        ] {
            assert!(catalogue.iter().any(|t| t.family == family), "{family} is missing");
        }
    }

    #[test]
    fn the_accelerators_are_the_ones_aws_ships() {
        let c = built_in();
        let spec = |name: &str| {
            let t = c.get(name).unwrap_or_else(|| panic!("{name} missing"));
            (t.accelerator.as_str(), t.accelerator_count, t.accelerator_memory_gib)
        };
        assert_eq!(spec("p5e.48xlarge"), ("H200", Decimal::from(8), Decimal::from(141)));
        assert_eq!(spec("p5en.48xlarge"), ("H200", Decimal::from(8), Decimal::from(141)));
        assert_eq!(spec("p5.48xlarge"), ("H100", Decimal::from(8), Decimal::from(80)));
        assert_eq!(spec("p4d.24xlarge"), ("A100", Decimal::from(8), Decimal::from(40)));
        assert_eq!(spec("p4de.24xlarge"), ("A100", Decimal::from(8), Decimal::from(80)));
        assert_eq!(spec("g5.xlarge"), ("A10G", Decimal::from(1), Decimal::from(24)));
        assert_eq!(spec("g6.xlarge"), ("L4", Decimal::from(1), Decimal::from(24)));
        assert_eq!(spec("g6e.xlarge"), ("L40S", Decimal::from(1), Decimal::from(48)));
        assert!(spec("g6f.xlarge").1 < Decimal::ONE, "g6f is a fraction of an L4");
        assert_eq!(c.get("inf2.xlarge").map(|t| t.vendor), Some(Vendor::Neuron));
        assert_eq!(c.get("trn2.48xlarge").map(|t| t.vendor), Some(Vendor::Neuron));
        assert_eq!(c.get("g5g.xlarge").map(|t| t.arm64), Some(true));
        assert_eq!(c.get("g4dn.xlarge").map(|t| t.bf16), Some(false));
    }

    #[test]
    fn every_row_has_a_price_source_and_date() {
        for t in built_in().iter() {
            assert!(!t.price_source.is_empty(), "{}", t.name);
            assert!(t.price_date.to_string().starts_with("20"), "{}", t.name);
        }
    }

    #[test]
    fn bad_rows_are_refused_with_their_line() {
        let bad = format!("{HEADER}\ng5.xlarge,g5,A10G,amd,1,24,4,16,x86_64,true,1.006,,src,2026-11-23\n");
        assert_eq!(
            Catalogue::parse(&bad).err().as_deref(),
            Some("line 2: vendor must be nvidia or neuron, not \"amd\"")
        );
        let bad = format!("{HEADER}\ng5.xlarge,g5,A10G,nvidia,1,24,4,16,x86_64,true,-1,,src,2026-11-23\n");
        assert!(Catalogue::parse(&bad).is_err_and(|e| e.contains("on_demand_usd_hour")));
        let quoted =
            format!("{HEADER}\ng5.xlarge,g5,A10G,nvidia,1,24,4,16,x86_64,true,1.006,1.408,\"AWS, page\",2026-11-23\n");
        assert_eq!(
            Catalogue::parse(&quoted).map(|c| c.get("g5.xlarge").map(|t| t.price_source.clone())),
            Ok(Some("AWS, page".to_string()))
        );
    }

    #[test]
    fn accelerator_families_outside_the_catalogue_are_recognised() {
        for name in [
            "p3.2xlarge",
            "g4ad.xlarge",
            "dl1.24xlarge",
            "inf1.xlarge",
            "p6e-gb200.36xlarge",
        ] {
            assert!(looks_like_accelerator(name), "{name}");
        }
        for name in ["m5.large", "r5.8xlarge", "c7g.xlarge", "gp3"] {
            assert!(!looks_like_accelerator(name), "{name}");
        }
    }
}
