//! Commitments as a finance lead weighs them: what the organisation already owns (Savings
//! Plans and Reserved Instances, their coverage and use, as Cost Explorer reports them), what
//! each purchase option would cost and save on the uncovered steady baseline, and AWS's own
//! Savings Plans recommendation beside burnrate's.

use chrono::NaiveDate;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

/// A Savings Plan or a Reserved Instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Offer {
    SavingsPlan,
    Reserved,
}

impl Offer {
    pub const ALL: [Offer; 2] = [Offer::SavingsPlan, Offer::Reserved];

    /// The word the config file and the database use.
    pub fn key(self) -> &'static str {
        match self {
            Offer::SavingsPlan => "savings_plan",
            Offer::Reserved => "reserved",
        }
    }

    pub fn parse(text: &str) -> Option<Offer> {
        Offer::ALL.into_iter().find(|o| o.key() == text)
    }

    pub fn label(self) -> &'static str {
        match self {
            Offer::SavingsPlan => "Savings Plan",
            Offer::Reserved => "Reserved Instances",
        }
    }
}

/// How a commitment is paid: nothing, about half, or all of the term's cost at purchase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Payment {
    NoUpfront,
    PartialUpfront,
    AllUpfront,
}

impl Payment {
    pub const ALL: [Payment; 3] = [Payment::NoUpfront, Payment::PartialUpfront, Payment::AllUpfront];

    pub fn key(self) -> &'static str {
        match self {
            Payment::NoUpfront => "no_upfront",
            Payment::PartialUpfront => "partial_upfront",
            Payment::AllUpfront => "all_upfront",
        }
    }

    pub fn parse(text: &str) -> Option<Payment> {
        Payment::ALL.into_iter().find(|p| p.key() == text)
    }

    pub fn label(self) -> &'static str {
        match self {
            Payment::NoUpfront => "no upfront",
            Payment::PartialUpfront => "partial upfront",
            Payment::AllUpfront => "all upfront",
        }
    }

    /// The share of the term's cost paid at purchase. AWS's partial-upfront offers put about
    /// half of it upfront and bill the rest hourly.
    pub fn upfront_share(self) -> Decimal {
        match self {
            Payment::NoUpfront => Decimal::ZERO,
            Payment::PartialUpfront => Decimal::new(5, 1),
            Payment::AllUpfront => Decimal::ONE,
        }
    }
}

/// One purchase option: offer, term and payment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Terms {
    pub offer: Offer,
    /// 1 or 3.
    pub years: u8,
    pub payment: Payment,
}

impl Terms {
    /// Every option AWS sells for EC2 (Savings Plans and Reserved Instances) or, with
    /// `reserved` false, for SageMaker (Savings Plans only).
    pub fn every(reserved: bool) -> Vec<Terms> {
        let mut all = Vec::new();
        for offer in Offer::ALL.into_iter().filter(|o| reserved || *o == Offer::SavingsPlan) {
            for years in [1, 3] {
                for payment in Payment::ALL {
                    all.push(Terms { offer, years, payment });
                }
            }
        }
        all
    }

    pub fn label(self) -> String {
        format!("{}-year {} {}", self.years, self.payment.label(), self.offer.label())
    }
}

/// One option priced for the capacity burnrate would commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PricedOption {
    pub terms: Terms,
    /// Off the on-demand price, as a share (0.405 for 40.5 %).
    pub discount: Decimal,
    /// Paid at purchase.
    pub upfront: Decimal,
    /// Billed every hour of the term, used or not.
    pub recurring_per_hour: Decimal,
    /// The committed capacity's on-demand cost over a year, and its cost committed.
    pub on_demand_per_year: Decimal,
    pub committed_per_year: Decimal,
    pub saving_per_30_days: Decimal,
    /// The first month (1-based) by whose end the on-demand cost avoided has paid back
    /// everything paid so far: 1 with nothing upfront ("immediate"); `None` when it never
    /// does within the term (no discount).
    pub break_even_month: Option<u32>,
    /// Whether the price came from the `pricing: commitments:` section, not the defaults.
    pub quoted: bool,
}

/// One instance family's commitment advice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FamilyCommitment {
    /// `g5`, or `ml.g5` for SageMaker.
    pub family: String,
    /// Instances that ran on nine days in ten (the 10th percentile of daily on-demand
    /// instance-hours ÷ 24), as billing shows them, owned coverage included.
    pub baseline: Decimal,
    /// Instances already covered by owned Savings Plans and Reserved Instances.
    pub covered: Decimal,
    /// What burnrate would commit: 60 % of the baseline left uncovered, in instances.
    pub to_commit: Decimal,
    /// The family's on-demand $/h per instance in the window.
    pub on_demand_rate: Decimal,
    /// The options in [`Terms::every`]'s order.
    pub options: Vec<PricedOption>,
    /// Why burnrate advises no purchase for this family now, when it does not.
    pub held_back: Option<String>,
}

/// An owned commitment's use over the period Cost Explorer reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnedCommitment {
    pub offer: Offer,
    /// The Savings Plans type (`COMPUTE_SP`, `SAGEMAKER_SP`…) or the reservation's
    /// subscription ID.
    pub id: String,
    /// The reservation's instance type; empty for Savings Plans.
    pub instance_type: String,
    /// What it cost in the period, and what of that was used.
    pub commitment: Decimal,
    pub used: Decimal,
    /// Unused commitment scaled to 30 days.
    pub unused_per_30_days: Decimal,
    /// What it saved against on-demand in the period (AWS's net savings).
    pub net_savings: Decimal,
    pub underused: bool,
}

impl OwnedCommitment {
    pub fn utilisation(&self) -> Option<Decimal> {
        (self.commitment > Decimal::ZERO).then(|| self.used / self.commitment)
    }
}

/// AWS's own Savings Plans purchase recommendation (`GetSavingsPlansPurchaseRecommendation`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AwsRecommendation {
    /// `COMPUTE_SP` or `SAGEMAKER_SP`.
    pub plan_type: String,
    pub hourly_commitment: Decimal,
    pub monthly_saving: Decimal,
    /// Of the on-demand spend it covers, as AWS computes it (a share).
    pub saving_share: Option<Decimal>,
    pub lookback_days: u32,
    /// burnrate's own hourly commitment for the same plan type, and why the two differ.
    pub burnrate_hourly: Decimal,
    pub difference: String,
}

/// The commitments section of the Savings page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Commitments {
    /// The period Cost Explorer's coverage and utilisation cover, when they were read.
    pub read: Option<(NaiveDate, NaiveDate)>,
    /// Why the last read failed or was never made; the figures shown are the last good ones.
    pub read_problem: Option<String>,
    /// Rows of the last read that were skipped, each with why; the rest stand.
    #[serde(default)]
    pub skipped: Vec<String>,
    pub families: Vec<FamilyCommitment>,
    pub owned: Vec<OwnedCommitment>,
    pub aws: Vec<AwsRecommendation>,
}
