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

/// The Savings Plans types that apply to every family of EC2 or of SageMaker, whose unused
/// commitment would absorb any family's baseline. An EC2 Instance Savings Plan is tied to one
/// family that its utilisation does not name, so it holds nothing back.
pub fn plan_types_for(sagemaker: bool) -> &'static [&'static str] {
    if sagemaker { &["SAGEMAKER_SP"] } else { &["COMPUTE_SP"] }
}
