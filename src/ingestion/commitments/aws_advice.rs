//! AWS's own Savings Plans purchase recommendation, shown beside burnrate's advice, never
//! relied on.

use aws_sdk_costexplorer::types::{
    AccountScope, LookbackPeriodInDays, PaymentOption, SupportedSavingsPlansType, TermInYears,
};
use rust_decimal::Decimal;

use super::figure;
use crate::ingestion::IngestError;
use crate::ingestion::cost_explorer::{Backoff, CostExplorer, RequestMeter};
use crate::savings::commitments::AwsPlan;

/// AWS's 1-year no-upfront recommendation over the last 30 days for the whole organisation.
/// The summary is on the first page; the per-account details the later pages hold are not read.
pub(super) async fn aws_recommendation(
    ce: &CostExplorer,
    plan_type: &str,
    backoff: Backoff,
    meter: &mut RequestMeter,
) -> Result<Option<AwsPlan>, IngestError> {
    let output = ce
        .counted(backoff, meter, || {
            ce.client
                .get_savings_plans_purchase_recommendation()
                .savings_plans_type(SupportedSavingsPlansType::from(plan_type))
                .term_in_years(TermInYears::OneYear)
                .payment_option(PaymentOption::NoUpfront)
                .lookback_period_in_days(LookbackPeriodInDays::ThirtyDays)
                .account_scope(AccountScope::Payer)
                .send()
        })
        .await?;
    let Some(summary) = output
        .savings_plans_purchase_recommendation()
        .and_then(|r| r.savings_plans_purchase_recommendation_summary())
    else {
        return Ok(None);
    };
    let hourly = figure(summary.hourly_commitment_to_purchase(), "HourlyCommitmentToPurchase")?;
    if hourly <= Decimal::ZERO {
        return Ok(None);
    }
    let share = match summary.estimated_savings_percentage() {
        Some(p) => Some(figure(Some(p), "EstimatedSavingsPercentage")? / Decimal::ONE_HUNDRED),
        None => None,
    };
    Ok(Some(AwsPlan {
        plan_type: plan_type.to_string(),
        hourly_commitment: hourly,
        monthly_saving: figure(
            summary.estimated_monthly_savings_amount(),
            "EstimatedMonthlySavingsAmount",
        )?,
        saving_share: share,
        lookback_days: 30,
    }))
}
