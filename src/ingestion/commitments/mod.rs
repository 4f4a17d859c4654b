//! Owned commitments from Cost Explorer: Savings Plans and Reserved Instance coverage and
//! utilisation over the last 30 complete days, and AWS's Savings Plans purchase
//! recommendation. Read at most every 20 hours (the figures are daily, and each request costs
//! USD 0.01), after a successful ingestion; a failed read keeps the last good figures, says why
//! on the Savings page, and is tried again after the first ingestion 3 hours on.
//!
//! Shapes and limits are AWS's (<https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/>):
//! every figure is a string; Savings Plans coverage pages on `NextToken`, Reserved Instance
//! coverage and utilisation on `NextPageToken`; Savings Plans utilisation is not paged and
//! cannot be grouped; GroupBy and Granularity exclude each other. The names of the grouped
//! rows' `Attributes` keys are not documented, so the family and type are found by their key
//! in either spelling (`INSTANCE_FAMILY` or `instanceFamily`); a row with neither is skipped
//! and named on the Savings page, and the rest of the read kept. The Savings Plans types are
//! the values AWS lists for its `SAVINGS_PLANS_TYPE` dimension (`GetDimensionValues`), never
//! a list typed in here.

use std::collections::HashMap;

use aws_sdk_costexplorer::types::{
    Context, DateInterval, Dimension, DimensionValues, Expression, Granularity, GroupDefinition, GroupDefinitionType,
};
use chrono::{DateTime, Days, NaiveDate, Utc};
use rust_decimal::Decimal;
use sqlx::PgPool;

mod aws_advice;

use super::IngestError;
use super::cost_explorer::{Backoff, CostExplorer, RequestMeter, interval};
use super::response::parse_amount;
use crate::period::DateRange;
use crate::savings::commitments::{CommitmentUse, Coverage, OwnedRead, store};
use crate::savings::model::commitments::Offer;

/// Hours between reads.
pub const EVERY_HOURS: i64 = 20;
/// Hours before a failed read is tried again.
pub const RETRY_HOURS: i64 = 3;
/// Days read, ending the day before yesterday: AWS takes no End after the current date.
pub const DAYS: u64 = 30;

const EC2: &str = "Amazon Elastic Compute Cloud - Compute";
const SAGEMAKER: &str = "Amazon SageMaker";

/// What a refresh did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refresh {
    /// A read in the last [`EVERY_HOURS`] stands.
    NotDue,
    Read {
        requests: u32,
    },
    /// Recorded for the Savings page; the last good figures stay.
    Failed {
        requests: u32,
        problem: String,
    },
}

impl std::fmt::Display for Refresh {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cost = |r: &u32| crate::format::usd_precise(super::run::api_cost(*r), 2);
        match self {
            Refresh::NotDue => write!(f, "commitments: read within the last {EVERY_HOURS} hours"),
            Refresh::Read { requests } => write!(
                f,
                "commitments: Savings Plans and Reserved Instances read ({requests} requests, {})",
                cost(requests)
            ),
            Refresh::Failed { requests, problem } => write!(
                f,
                "commitments: not read ({requests} requests, {}): {problem}",
                cost(requests)
            ),
        }
    }
}

/// Reads and stores the owned commitments when due.
pub async fn refresh(
    pool: &PgPool,
    cost_explorer: &CostExplorer,
    now: DateTime<Utc>,
    backoff: Backoff,
) -> Result<Refresh, sqlx::Error> {
    if !store::due(&mut *pool.acquire().await?, now, EVERY_HOURS, RETRY_HOURS).await? {
        return Ok(Refresh::NotDue);
    }
    // No connection is held across the requests; the read is stored in one transaction after.
    let mut meter = RequestMeter::default();
    let result = read(cost_explorer, now.date_naive(), backoff, &mut meter).await;
    let mut conn = pool.acquire().await?;
    match result {
        Ok(owned) => {
            store::replace(&mut conn, &owned).await?;
            record_requests(&mut conn, meter.requests).await;
            Ok(Refresh::Read {
                requests: meter.requests,
            })
        }
        Err(error) => {
            let problem = error.to_string();
            tracing::warn!(requests = meter.requests, %problem, "owned commitments could not be read");
            store::record_problem(&mut conn, &problem).await?;
            record_requests(&mut conn, meter.requests).await;
            Ok(Refresh::Failed {
                requests: meter.requests,
                problem,
            })
        }
    }
}

/// Notes the read's request count for the Ingestion page's projected bill. The read itself
/// is stored already: a failure here is only logged, never reported as the read's.
async fn record_requests(conn: &mut sqlx::PgConnection, requests: u32) {
    if let Err(error) = store::record_requests(conn, requests).await {
        tracing::warn!(%error, "the commitments read's request count could not be recorded");
    }
}

/// Every figure the commitments advice reads, over the [`DAYS`] days ending the day before
/// `today`'s yesterday.
pub async fn read(
    ce: &CostExplorer,
    today: NaiveDate,
    backoff: Backoff,
    meter: &mut RequestMeter,
) -> Result<OwnedRead, IngestError> {
    let to = today.checked_sub_days(Days::new(1)).unwrap_or(today);
    let from = to.checked_sub_days(Days::new(DAYS)).unwrap_or(to);
    let period = interval(DateRange { from, to })?;
    let mut owned = OwnedRead {
        period: Some((from, to)),
        ..OwnedRead::default()
    };
    let mut unavailable = Vec::new();
    for (service, sagemaker) in [(EC2, false), (SAGEMAKER, true)] {
        match savings_plans_coverage(ce, &period, service, sagemaker, backoff, meter).await? {
            Some((rows, skipped)) => {
                owned.coverage.extend(rows);
                owned.skipped.extend(skipped);
            }
            None => unavailable.push("Savings Plans coverage"),
        }
    }
    match reservation_coverage(ce, &period, backoff, meter).await? {
        Some((rows, skipped)) => {
            owned.coverage.extend(rows);
            owned.skipped.extend(skipped);
        }
        None => unavailable.push("Reserved Instance coverage"),
    }
    // The plan types AWS itself lists for the period, in its own spelling: a filter value
    // typed in by hand that AWS does not use would report nothing, and advise buying a plan
    // while an owned one sits unused.
    for plan_type in savings_plans_types(ce, &period, backoff, meter).await? {
        owned
            .uses
            .extend(savings_plans_use(ce, &period, &plan_type, backoff, meter).await?);
    }
    owned.uses.extend(reservations_use(ce, &period, backoff, meter).await?);
    // AWS answers DataUnavailableException while its figures are not ready, too: owned
    // commitments without their coverage would be advised again, so the read fails instead.
    if !owned.uses.is_empty() && !unavailable.is_empty() {
        return Err(IngestError::CostExplorer(format!(
            "Cost Explorer reports owned commitments but not yet their {} (DataUnavailableException); \
             the last good figures stand and the read is tried again",
            unavailable.join(" or ")
        )));
    }
    // AWS's own advice is shown beside burnrate's, not relied on: without it (no
    // ce:GetSavingsPlansPurchaseRecommendation, say) the rest of the read stands.
    for plan_type in ["COMPUTE_SP", "SAGEMAKER_SP"] {
        match aws_advice::aws_recommendation(ce, plan_type, backoff, meter).await {
            Ok(found) => owned.aws.extend(found),
            Err(error) => {
                tracing::warn!(plan_type, %error, "AWS's Savings Plans recommendation could not be read");
            }
        }
    }
    Ok(owned)
}

fn dimension(key: &str) -> GroupDefinition {
    GroupDefinition::builder()
        .r#type(GroupDefinitionType::Dimension)
        .key(key)
        .build()
}

fn only(dimension: Dimension, value: &str) -> Expression {
    Expression::builder()
        .dimensions(DimensionValues::builder().key(dimension).values(value).build())
        .build()
}

/// AWS answers `DataUnavailableException` ("the requested data is unavailable") where an
/// account has nothing to report, such as no plan of a type: nothing, not a failure.
fn none_when_unavailable<T>(result: Result<T, IngestError>) -> Result<Option<T>, IngestError> {
    match result {
        Ok(output) => Ok(Some(output)),
        Err(IngestError::DataUnavailable(_)) => Ok(None),
        Err(error) => Err(error),
    }
}

/// A figure AWS sent as text; absent counts as zero, unreadable is an error naming it.
fn figure(text: Option<&str>, what: &str) -> Result<Decimal, IngestError> {
    match text.map(str::trim).filter(|t| !t.is_empty()) {
        None => Ok(Decimal::ZERO),
        Some(t) => parse_amount(t)
            .ok_or_else(|| IngestError::malformed(format!("Cost Explorer sent {what} {t:?}, which is not a number"))),
    }
}

/// The attribute whose key is `wanted` in either spelling: `INSTANCE_TYPE` or `instanceType`.
fn attribute<'a>(attributes: Option<&'a HashMap<String, String>>, wanted: &str) -> Option<&'a str> {
    let squash = |k: &str| k.replace('_', "").to_ascii_lowercase();
    let wanted = squash(wanted);
    attributes?
        .iter()
        .find(|(k, _)| squash(k) == wanted)
        .map(|(_, v)| v.as_str())
}

/// Why a coverage row was skipped: it names none of the attributes burnrate reads, so it
/// cannot be put on a family or type. The keys it has are named (sorted), never its values.
fn unknown_row(what: &str, wanted: &str, attributes: Option<&HashMap<String, String>>) -> String {
    let mut keys: Vec<&str> = attributes
        .map(|a| a.keys().map(String::as_str).collect())
        .unwrap_or_default();
    keys.sort_unstable();
    let keys = if keys.is_empty() {
        "none".to_string()
    } else {
        keys.join(", ")
    };
    format!("a {what} row named no {wanted} (its attributes: {keys}), so it was skipped and the rest kept")
}

/// The Savings Plans types the organisation had in `period`, as AWS spells them: the
/// `SAVINGS_PLANS_TYPE` dimension's values in context `SAVINGS_PLANS`
/// (<https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_GetDimensionValues.html>),
/// paged by `NextPageToken`.
async fn savings_plans_types(
    ce: &CostExplorer,
    period: &DateInterval,
    backoff: Backoff,
    meter: &mut RequestMeter,
) -> Result<Vec<String>, IngestError> {
    let mut types = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let output = ce
            .counted(backoff, meter, || {
                ce.client
                    .get_dimension_values()
                    .time_period(period.clone())
                    .dimension(Dimension::SavingsPlansType)
                    .context(Context::SavingsPlans)
                    .set_next_page_token(token.clone())
                    .send()
            })
            .await?;
        // No `DataUnavailableException` is read as "no plans": owned plans would then be
        // advised again, so it fails the read like any other error.
        types.extend(
            output
                .dimension_values()
                .iter()
                .filter_map(|v| v.value())
                .filter(|v| !v.is_empty())
                .map(str::to_string),
        );
        token = output.next_page_token().filter(|t| !t.is_empty()).map(str::to_string);
        if token.is_none() {
            types.sort();
            types.dedup();
            return Ok(types);
        }
    }
}

async fn savings_plans_coverage(
    ce: &CostExplorer,
    period: &DateInterval,
    service: &str,
    sagemaker: bool,
    backoff: Backoff,
    meter: &mut RequestMeter,
) -> Result<Option<(Vec<Coverage>, Vec<String>)>, IngestError> {
    let (mut rows, mut skipped) = (Vec::new(), Vec::new());
    let mut token: Option<String> = None;
    loop {
        let output = ce
            .counted(backoff, meter, || {
                ce.client
                    .get_savings_plans_coverage()
                    .time_period(period.clone())
                    .group_by(dimension("INSTANCE_FAMILY"))
                    .filter(only(Dimension::Service, service))
                    .metrics("SpendCoveredBySavingsPlans")
                    .set_next_token(token.clone())
                    .send()
            })
            .await;
        let Some(output) = none_when_unavailable(output)? else {
            return Ok(None);
        };
        for c in output.savings_plans_coverages() {
            let Some(family) = attribute(c.attributes(), "INSTANCE_FAMILY") else {
                skipped.push(unknown_row("Savings Plans coverage", "instance family", c.attributes()));
                continue;
            };
            let data = c.coverage();
            rows.push(Coverage {
                offer: Offer::SavingsPlan,
                sagemaker,
                scope: family.to_string(),
                covered_usd: figure(
                    data.and_then(|d| d.spend_covered_by_savings_plans()),
                    "SpendCoveredBySavingsPlans",
                )?,
                on_demand_usd: figure(data.and_then(|d| d.on_demand_cost()), "OnDemandCost")?,
                covered_hours: Decimal::ZERO,
                on_demand_hours: Decimal::ZERO,
            });
        }
        token = output.next_token().filter(|t| !t.is_empty()).map(str::to_string);
        if token.is_none() {
            return Ok(Some((rows, skipped)));
        }
    }
}

async fn reservation_coverage(
    ce: &CostExplorer,
    period: &DateInterval,
    backoff: Backoff,
    meter: &mut RequestMeter,
) -> Result<Option<(Vec<Coverage>, Vec<String>)>, IngestError> {
    let (mut rows, mut skipped) = (Vec::new(), Vec::new());
    let mut token: Option<String> = None;
    loop {
        // Without a SERVICE filter, reservation coverage is EC2's.
        let output = ce
            .counted(backoff, meter, || {
                ce.client
                    .get_reservation_coverage()
                    .time_period(period.clone())
                    .group_by(dimension("INSTANCE_TYPE"))
                    .metrics("Hour")
                    .metrics("Cost")
                    .set_next_page_token(token.clone())
                    .send()
            })
            .await;
        let Some(output) = none_when_unavailable(output)? else {
            return Ok(None);
        };
        for by_time in output.coverages_by_time() {
            for group in by_time.groups() {
                let Some(instance_type) = attribute(group.attributes(), "INSTANCE_TYPE") else {
                    skipped.push(unknown_row(
                        "Reserved Instance coverage",
                        "instance type",
                        group.attributes(),
                    ));
                    continue;
                };
                let coverage = group.coverage();
                let hours = coverage.and_then(|c| c.coverage_hours());
                rows.push(Coverage {
                    offer: Offer::Reserved,
                    sagemaker: false,
                    scope: instance_type.to_string(),
                    covered_usd: Decimal::ZERO,
                    on_demand_usd: figure(
                        coverage
                            .and_then(|c| c.coverage_cost())
                            .and_then(|c| c.on_demand_cost()),
                        "OnDemandCost",
                    )?,
                    covered_hours: figure(hours.and_then(|h| h.reserved_hours()), "ReservedHours")?,
                    on_demand_hours: figure(hours.and_then(|h| h.on_demand_hours()), "OnDemandHours")?,
                });
            }
        }
        token = output.next_page_token().filter(|t| !t.is_empty()).map(str::to_string);
        if token.is_none() {
            return Ok(Some((rows, skipped)));
        }
    }
}

/// One Savings Plans type's use as a whole (the operation can be filtered, never grouped).
async fn savings_plans_use(
    ce: &CostExplorer,
    period: &DateInterval,
    plan_type: &str,
    backoff: Backoff,
    meter: &mut RequestMeter,
) -> Result<Option<CommitmentUse>, IngestError> {
    let output = ce
        .counted(backoff, meter, || {
            ce.client
                .get_savings_plans_utilization()
                .time_period(period.clone())
                .granularity(Granularity::Monthly)
                .filter(only(Dimension::SavingsPlansType, plan_type))
                .send()
        })
        .await;
    let Some(output) = none_when_unavailable(output)? else {
        return Ok(None);
    };
    let total = output.total();
    let utilisation = total.and_then(|t| t.utilization());
    let commitment = figure(utilisation.and_then(|u| u.total_commitment()), "TotalCommitment")?;
    if commitment <= Decimal::ZERO {
        return Ok(None);
    }
    let used = figure(utilisation.and_then(|u| u.used_commitment()), "UsedCommitment")?;
    Ok(Some(CommitmentUse {
        offer: Offer::SavingsPlan,
        id: plan_type.to_string(),
        instance_type: String::new(),
        commitment_usd: commitment,
        used_usd: used.clamp(Decimal::ZERO, commitment),
        net_savings_usd: figure(
            total.and_then(|t| t.savings()).and_then(|s| s.net_savings()),
            "NetSavings",
        )?,
    }))
}

/// Each reservation's use (grouped by subscription, the only grouping AWS offers).
async fn reservations_use(
    ce: &CostExplorer,
    period: &DateInterval,
    backoff: Backoff,
    meter: &mut RequestMeter,
) -> Result<Vec<CommitmentUse>, IngestError> {
    let mut by_id: std::collections::BTreeMap<String, CommitmentUse> = std::collections::BTreeMap::new();
    let mut token: Option<String> = None;
    loop {
        let output = ce
            .counted(backoff, meter, || {
                ce.client
                    .get_reservation_utilization()
                    .time_period(period.clone())
                    .group_by(dimension("SUBSCRIPTION_ID"))
                    .set_next_page_token(token.clone())
                    .send()
            })
            .await;
        let Some(output) = none_when_unavailable(output)? else {
            break;
        };
        for by_time in output.utilizations_by_time() {
            for group in by_time.groups() {
                let Some(id) = group.value().filter(|v| !v.is_empty()) else {
                    return Err(IngestError::malformed(
                        "a Reserved Instance utilization group has no subscription ID",
                    ));
                };
                let u = group.utilization();
                let fee = figure(u.and_then(|u| u.total_amortized_fee()), "TotalAmortizedFee")?;
                let unused = figure(u.and_then(|u| u.ri_cost_for_unused_hours()), "RICostForUnusedHours")?;
                let entry = by_id.entry(id.to_string()).or_insert_with(|| CommitmentUse {
                    offer: Offer::Reserved,
                    id: id.to_string(),
                    instance_type: attribute(group.attributes(), "INSTANCE_TYPE")
                        .unwrap_or_default()
                        .to_string(),
                    commitment_usd: Decimal::ZERO,
                    used_usd: Decimal::ZERO,
                    net_savings_usd: Decimal::ZERO,
                });
                entry.commitment_usd += fee;
                entry.used_usd += (fee - unused).clamp(Decimal::ZERO, fee);
                entry.net_savings_usd += figure(u.and_then(|u| u.net_ri_savings()), "NetRISavings")?;
            }
        }
        token = output.next_page_token().filter(|t| !t.is_empty()).map(str::to_string);
        if token.is_none() {
            break;
        }
    }
    Ok(by_id
        .into_values()
        .filter(|u| u.commitment_usd > Decimal::ZERO)
        .collect())
}
