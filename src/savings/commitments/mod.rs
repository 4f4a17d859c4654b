//! Commitments that see what is owned: Cost Explorer's Savings Plans and Reserved Instance
//! coverage and utilisation (read by ingestion, stored here), the purchase options priced on
//! the uncovered baseline (`offers`), and the Savings page's commitments section. The rule
//! itself is `rules::commitment`; its formulas are in `docs/SAVINGS.md`.

pub mod offers;
pub mod store;

use chrono::NaiveDate;
use rust_decimal::Decimal;

use super::model::commitments::Offer;

/// Below this share used, an owned commitment is flagged underused, and no more of the same
/// kind is advised until it is used.
pub fn underused_below() -> Decimal {
    Decimal::new(9, 1)
}

/// What one Cost Explorer read found, over `[from, to)`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OwnedRead {
    pub period: Option<(NaiveDate, NaiveDate)>,
    pub coverage: Vec<Coverage>,
    pub uses: Vec<CommitmentUse>,
    pub aws: Vec<AwsPlan>,
    /// Rows Cost Explorer answered that burnrate could not read, each saying why (an
    /// attribute it does not know): skipped, the rest of the read kept.
    pub skipped: Vec<String>,
}

impl OwnedRead {
    /// Hours in the period read (0 before any read).
    pub fn hours(&self) -> Decimal {
        self.period
            .map(|(from, to)| Decimal::from((to - from).num_days() * 24))
            .unwrap_or_default()
    }
}

/// Coverage of one instance family (Savings Plans) or instance type (Reserved Instances).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Coverage {
    pub offer: Offer,
    pub sagemaker: bool,
    pub scope: String,
    /// Savings Plans: the on-demand-equivalent spend the plans covered.
    pub covered_usd: Decimal,
    /// What ran on demand, uncovered.
    pub on_demand_usd: Decimal,
    /// Reserved Instances: the hours reservations covered, and those on demand.
    pub covered_hours: Decimal,
    pub on_demand_hours: Decimal,
}

/// One owned commitment's cost and use in the period: a Savings Plans type as a whole, or one
/// reservation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitmentUse {
    pub offer: Offer,
    pub id: String,
    pub instance_type: String,
    pub commitment_usd: Decimal,
    pub used_usd: Decimal,
    pub net_savings_usd: Decimal,
}

/// AWS's Savings Plans purchase recommendation for one plan type (1 year, no upfront).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AwsPlan {
    pub plan_type: String,
    pub hourly_commitment: Decimal,
    pub monthly_saving: Decimal,
    pub saving_share: Option<Decimal>,
    pub lookback_days: u32,
}

/// What a Savings Plans type covers. AWS spells a type two ways: the `SAVINGS_PLANS_TYPE`
/// dimension's values, as `GetDimensionValues` lists them (`ComputeSavingsPlans`,
/// `EC2InstanceSavingsPlans`, `SageMakerSavingsPlans`), and the purchase recommendation's
/// enum (`COMPUTE_SP`, `EC2_INSTANCE_SP`, `SAGEMAKER_SP`,
/// <https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_GetSavingsPlansPurchaseRecommendation.html>).
/// burnrate never sends either from a list of its own: it asks with the values AWS listed,
/// and reads which kind each is here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanKind {
    /// EC2 (and Fargate, Lambda), any family.
    Compute,
    /// One EC2 instance family in one region.
    Ec2Instance,
    /// SageMaker, any family.
    SageMaker,
}

impl PlanKind {
    /// The kind of AWS's value in either spelling; `None` for one burnrate does not know.
    pub fn of(plan_type: &str) -> Option<PlanKind> {
        let squashed: String = plan_type
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .collect::<String>()
            .to_ascii_lowercase();
        match squashed.strip_suffix("savingsplans").or(squashed.strip_suffix("sp")) {
            Some("compute") => Some(PlanKind::Compute),
            Some("ec2instance") => Some(PlanKind::Ec2Instance),
            Some("sagemaker") => Some(PlanKind::SageMaker),
            _ => None,
        }
    }
}

/// True for a Savings Plans type that applies to every family of EC2 (`sagemaker` false) or
/// of SageMaker, whose unused commitment would absorb any family's baseline. An EC2 Instance
/// Savings Plan is tied to one family that its utilisation does not name, so it holds
/// nothing back.
pub fn covers_every_family(plan_type: &str, sagemaker: bool) -> bool {
    PlanKind::of(plan_type)
        == Some(if sagemaker {
            PlanKind::SageMaker
        } else {
            PlanKind::Compute
        })
}
