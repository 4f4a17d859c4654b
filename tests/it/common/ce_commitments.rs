//! The Cost Explorer fake's commitment operations, modelled on the AWS API Reference
//! (https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/, written REF/ below)
//! and on how Savings Plans and Reserved Instances apply to the fake's own line items:
//!
//! - Reserved Instances apply first, then Savings Plans ("Savings Plans apply to your usage
//!   after Reserved Instances", https://docs.aws.amazon.com/savingsplans/latest/userguide/sp-applying.html).
//!   A reservation covers up to its instance count of its type each hour; a plan's hourly
//!   commitment buys on-demand-equivalent usage at its discount. The fake applies both per day
//!   (usage spread evenly over the day), which is exact for usage that runs around the clock.
//! - Compute Savings Plans cover EC2 (not SageMaker), SageMaker Savings Plans only SageMaker
//!   (https://docs.aws.amazon.com/savingsplans/latest/userguide/what-is-savings-plans.html).
//! - Every figure is a JSON string (REF/API_CoverageHours.html: "Type: String").
//! - GetSavingsPlansCoverage pages on `NextToken` with `MaxResults` defaulting to 20, and
//!   "Granularity can't be set if GroupBy is set" (REF/API_GetSavingsPlansCoverage.html); it has
//!   no top-level Total.
//! - GetReservationCoverage and GetReservationUtilization page on `NextPageToken`; with no
//!   SERVICE filter they are EC2's (REF/API_GetReservationCoverage.html,
//!   REF/API_GetReservationUtilization.html); utilization groups only by SUBSCRIPTION_ID.
//! - GetSavingsPlansUtilization is neither paged nor grouped, takes DAILY or MONTHLY, and
//!   has a required Total (REF/API_GetSavingsPlansUtilization.html).
//! - GetSavingsPlansPurchaseRecommendation has no TimePeriod and requires SavingsPlansType,
//!   TermInYears, PaymentOption and LookbackPeriodInDays
//!   (REF/API_GetSavingsPlansPurchaseRecommendation.html).
//! - End may not be after the current date (REF/API_GetSavingsPlansCoverage.html: "Future
//!   dates can't be used as an End date").
//! - Where there is nothing to report, the fake answers DataUnavailableException, which AWS
//!   models for these operations ("The requested data is unavailable").
//!
//! - GetDimensionValues in context SAVINGS_PLANS lists the `SAVINGS_PLANS_TYPE` values of the
//!   plans owned (REF/API_GetDimensionValues.html); GetSavingsPlansUtilization's filter
//!   matches those values only. AWS does not document the values' spelling: the fake answers
//!   the dimension's (`ComputeSavingsPlans`) or, with `enum_spelling`, the recommendation
//!   enum's (`COMPUTE_SP`), and burnrate must find owned plans under either.
//!
//! Assumption, marked: AWS does not document the `Attributes` key names of grouped rows. The
//! fake names Savings Plans families `INSTANCE_FAMILY` and reservation types `instanceType`, so
//! burnrate must accept either spelling.

use std::collections::BTreeMap;

use chrono::NaiveDate;
use rust_decimal::Decimal;
use serde_json::{Value, json};

use super::ce_fake::{FakeState, LineItem};

/// A Savings Plan the fake's account owns.
#[derive(Debug, Clone)]
pub struct OwnedPlan {
    /// `COMPUTE_SP` (EC2 here) or `SAGEMAKER_SP`.
    pub plan_type: &'static str,
    pub hourly_commitment: Decimal,
    /// Off on-demand, as a share.
    pub discount: Decimal,
}

/// A reservation the fake's account owns.
#[derive(Debug, Clone)]
pub struct OwnedReservation {
    pub subscription_id: String,
    pub instance_type: String,
    pub count: u32,
    /// Amortized fee per instance-hour.
    pub hourly_fee: Decimal,
}

/// AWS's purchase recommendation summary, as the fake answers it.
#[derive(Debug, Clone)]
pub struct Recommendation {
    pub plan_type: &'static str,
    pub hourly_commitment: Decimal,
    pub monthly_saving: Decimal,
    pub saving_percent: Decimal,
}

#[derive(Debug, Default)]
pub struct Book {
    pub plans: Vec<OwnedPlan>,
    pub reservations: Vec<OwnedReservation>,
    pub recommendations: Vec<Recommendation>,
    /// Operations answered, in order.
    pub requests: Vec<String>,
    /// Rows per page where the caller sets no size (Savings Plans coverage: AWS's 20).
    pub page_size: Option<usize>,
    /// How the `SAVINGS_PLANS_TYPE` dimension spells the plan types, in `GetDimensionValues`
    /// and in the utilisation filter; `false`: the dimension's own values
    /// (`ComputeSavingsPlans`), `true`: the recommendation enum's (`COMPUTE_SP`).
    pub enum_spelling: bool,
    /// A Savings Plans coverage family whose rows carry this attribute key instead of
    /// `INSTANCE_FAMILY` (AWS does not document the keys): (family, key).
    pub odd_attribute: Option<(String, String)>,
}

/// A plan type as the fake's `SAVINGS_PLANS_TYPE` dimension spells it.
fn spelled(plan_type: &str, enum_spelling: bool) -> String {
    if enum_spelling {
        return plan_type.to_string();
    }
    match plan_type {
        "COMPUTE_SP" => "ComputeSavingsPlans",
        "EC2_INSTANCE_SP" => "EC2InstanceSavingsPlans",
        "SAGEMAKER_SP" => "SageMakerSavingsPlans",
        other => other,
    }
    .to_string()
}

pub const OPERATIONS: [&str; 5] = [
    "GetSavingsPlansCoverage",
    "GetSavingsPlansUtilization",
    "GetReservationCoverage",
    "GetReservationUtilization",
    "GetSavingsPlansPurchaseRecommendation",
];

/// An error in the awsJson1_1 shape.
pub type Failure = (&'static str, String);

/// What one day's eligible usage came to after reservations and plans applied.
#[derive(Default, Clone)]
struct Applied {
    /// Per instance type: hours run, hours reserved, on-demand cost of the hours left.
    hours: BTreeMap<String, Decimal>,
    reserved_hours: BTreeMap<String, Decimal>,
    /// Per (SageMaker?, family): spend covered by plans (on-demand equivalent) and left on demand.
    covered: BTreeMap<(bool, String), Decimal>,
    on_demand: BTreeMap<(bool, String), Decimal>,
    /// Per plan index: commitment used (its own dollars).
    plan_used: BTreeMap<usize, Decimal>,
    /// On-demand spend per instance type left after reservations (EC2).
    type_on_demand_cost: BTreeMap<String, Decimal>,
}

/// `(SageMaker?, instance type)` of a usage type the plans can cover: EC2 `BoxUsage:` or
/// SageMaker hosting, training and notebooks on `ml.` types.
fn eligible(item: &LineItem) -> Option<(bool, String)> {
    let (_, after) = item.usage_type.split_once(':')?;
    if item.usage_type.contains("BoxUsage:") {
        return Some((false, after.to_string()));
    }
    after.strip_prefix("ml.").map(|t| (true, t.to_string()))
}

fn family(instance_type: &str) -> String {
    instance_type.split('.').next().unwrap_or(instance_type).to_string()
}

fn apply(state: &FakeState, day: NaiveDate) -> Applied {
    let book = &state.commitments;
    let mut applied = Applied::default();
    let mut cost: BTreeMap<(bool, String), Decimal> = BTreeMap::new();
    for item in state.items.iter().filter(|i| i.day == day && i.record_type == "Usage") {
        let Some((sagemaker, instance_type)) = eligible(item) else {
            continue;
        };
        if !sagemaker {
            *applied.hours.entry(instance_type.clone()).or_default() += item.quantity;
        }
        *cost.entry((sagemaker, instance_type)).or_default() += item.unblended;
    }
    // Reservations first: EC2 hours of their type, up to their count each hour.
    for r in &book.reservations {
        let ran = applied.hours.get(&r.instance_type).copied().unwrap_or_default();
        let already = applied
            .reserved_hours
            .get(&r.instance_type)
            .copied()
            .unwrap_or_default();
        let covered = (Decimal::from(r.count * 24)).min(ran - already).max(Decimal::ZERO);
        *applied.reserved_hours.entry(r.instance_type.clone()).or_default() += covered;
    }
    for ((sagemaker, instance_type), spent) in &cost {
        let mut left = *spent;
        if !sagemaker {
            let ran = applied.hours.get(instance_type).copied().unwrap_or_default();
            let reserved = applied.reserved_hours.get(instance_type).copied().unwrap_or_default();
            if ran > Decimal::ZERO {
                left = *spent * (ran - reserved) / ran;
            }
            applied.type_on_demand_cost.insert(instance_type.clone(), left);
        }
        *applied
            .on_demand
            .entry((*sagemaker, family(instance_type)))
            .or_default() += left;
    }
    // Then plans, each on what is left on demand of the usage it may cover, families in order.
    let before = applied.on_demand.clone();
    for (index, plan) in book.plans.iter().enumerate() {
        let sagemaker = plan.plan_type == "SAGEMAKER_SP";
        let rate = Decimal::ONE - plan.discount;
        let mut budget = plan.hourly_commitment * Decimal::from(24);
        for ((is_sagemaker, _), left) in applied.on_demand.iter_mut() {
            if *is_sagemaker != sagemaker || budget <= Decimal::ZERO {
                continue;
            }
            let bought = (*left).min(budget / rate);
            *left -= bought;
            budget -= bought * rate;
            *applied.plan_used.entry(index).or_default() += bought * rate;
        }
    }
    for (key, was) in before {
        let now = applied.on_demand.get(&key).copied().unwrap_or_default();
        applied.covered.insert(key, was - now);
    }
    applied
}

fn days(from: NaiveDate, to: NaiveDate) -> impl Iterator<Item = NaiveDate> {
    from.iter_days().take_while(move |d| *d < to)
}

fn period(request: &Value, today: NaiveDate) -> Result<(NaiveDate, NaiveDate), Failure> {
    let parse = |field: &str| {
        request["TimePeriod"][field]
            .as_str()
            .and_then(|s| NaiveDate::parse_from_str(s, "%Y-%m-%d").ok())
    };
    let (Some(from), Some(to)) = (parse("Start"), parse("End")) else {
        return Err((
            "ValidationException",
            "TimePeriod Start and End must be YYYY-MM-DD.".into(),
        ));
    };
    if from >= to {
        return Err(("ValidationException", "Start date must be before end date.".into()));
    }
    // "The End date must be after the Start date, and before the current date."
    if to >= today {
        return Err((
            "ValidationException",
            "The End date must be before the current date.".into(),
        ));
    }
    Ok((from, to))
}

fn grouped(request: &Value) -> Vec<String> {
    request["GroupBy"]
        .as_array()
        .map(|g| g.iter().filter_map(|d| d["Key"].as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// The one value a `Dimensions` filter on `key` keeps, if the filter is that.
fn filtered(request: &Value, key: &str) -> Option<String> {
    let d = &request["Filter"]["Dimensions"];
    (d["Key"].as_str() == Some(key))
        .then(|| d["Values"][0].as_str().map(str::to_string))
        .flatten()
}

fn money(d: Decimal) -> String {
    d.round_dp(10).normalize().to_string()
}

fn percent(part: Decimal, whole: Decimal) -> String {
    if whole <= Decimal::ZERO {
        return "0".into();
    }
    money(part * Decimal::ONE_HUNDRED / whole)
}

/// Pages `rows` on the offset token the caller sent back.
fn page(rows: Vec<Value>, token: Option<&str>, size: usize) -> Result<(Vec<Value>, Option<String>), Failure> {
    let offset = match token {
        None => 0,
        Some(t) => t.parse::<usize>().map_err(|_| {
            (
                "InvalidNextTokenException",
                "The pagination token is invalid.".to_string(),
            )
        })?,
    };
    let next = offset + size.max(1);
    let more = (next < rows.len()).then(|| next.to_string());
    Ok((rows.into_iter().skip(offset).take(size.max(1)).collect(), more))
}

pub fn answer(state: &mut FakeState, operation: &str, request: &Value) -> Result<Value, Failure> {
    state.commitments.requests.push(operation.to_string());
    let today = state.today.unwrap_or_else(|| chrono::Utc::now().date_naive());
    if operation == "GetSavingsPlansPurchaseRecommendation" {
        return recommendation(state, request);
    }
    let (from, to) = period(request, today)?;
    let group_by = grouped(request);
    if !group_by.is_empty() && request.get("Granularity").is_some() {
        return Err((
            "ValidationException",
            "Granularity can't be set if GroupBy is set.".into(),
        ));
    }
    let applied: Vec<Applied> = days(from, to).map(|d| apply(state, d)).collect();
    let time = json!({ "Start": from.to_string(), "End": to.to_string() });
    match operation {
        // The Savings Plans types owned in the period; with none, an empty list
        // (REF/API_GetDimensionValues.html: context SAVINGS_PLANS takes SAVINGS_PLANS_TYPE).
        "GetDimensionValues" => {
            if request["Dimension"] != "SAVINGS_PLANS_TYPE" {
                return Err((
                    "ValidationException",
                    "This fake answers the SAVINGS_PLANS context for SAVINGS_PLANS_TYPE only.".into(),
                ));
            }
            let mut types: Vec<String> = state
                .commitments
                .plans
                .iter()
                .map(|p| spelled(p.plan_type, state.commitments.enum_spelling))
                .collect();
            types.sort();
            types.dedup();
            let values: Vec<Value> = types.iter().map(|t| json!({ "Value": t, "Attributes": {} })).collect();
            Ok(json!({ "DimensionValues": values, "ReturnSize": types.len(), "TotalSize": types.len() }))
        }
        "GetSavingsPlansCoverage" => {
            if group_by != ["INSTANCE_FAMILY"] {
                return Err((
                    "ValidationException",
                    "This fake groups Savings Plans coverage by INSTANCE_FAMILY only.".into(),
                ));
            }
            let sagemaker = match filtered(request, "SERVICE").as_deref() {
                Some("Amazon SageMaker") => true,
                Some("Amazon Elastic Compute Cloud - Compute") => false,
                other => {
                    return Err((
                        "ValidationException",
                        format!("This fake needs a SERVICE filter, got {other:?}."),
                    ));
                }
            };
            let mut sums: BTreeMap<String, (Decimal, Decimal)> = BTreeMap::new();
            for a in &applied {
                for ((is_sagemaker, family), covered) in &a.covered {
                    if *is_sagemaker == sagemaker {
                        sums.entry(family.clone()).or_default().0 += covered;
                    }
                }
                for ((is_sagemaker, family), left) in &a.on_demand {
                    if *is_sagemaker == sagemaker {
                        sums.entry(family.clone()).or_default().1 += left;
                    }
                }
            }
            let rows: Vec<Value> = sums
                .into_iter()
                .map(|(family, (covered, left))| {
                    let key = match &state.commitments.odd_attribute {
                        Some((odd, key)) if *odd == family => key.clone(),
                        _ => "INSTANCE_FAMILY".to_string(),
                    };
                    json!({
                        "Attributes": { key: family },
                        "Coverage": {
                            "SpendCoveredBySavingsPlans": money(covered),
                            "OnDemandCost": money(left),
                            "TotalCost": money(covered + left),
                            "CoveragePercentage": percent(covered, covered + left),
                        },
                        "TimePeriod": time,
                    })
                })
                .collect();
            let size = request["MaxResults"]
                .as_u64()
                .map(|n| n as usize)
                .unwrap_or(state.commitments.page_size.unwrap_or(20));
            let (rows, next) = page(rows, request["NextToken"].as_str(), size)?;
            let mut out = json!({ "SavingsPlansCoverages": rows });
            if let Some(next) = next {
                out["NextToken"] = json!(next);
            }
            Ok(out)
        }
        "GetReservationCoverage" => {
            if group_by != ["INSTANCE_TYPE"] {
                return Err((
                    "ValidationException",
                    "This fake groups reservation coverage by INSTANCE_TYPE only.".into(),
                ));
            }
            let mut sums: BTreeMap<String, (Decimal, Decimal, Decimal)> = BTreeMap::new();
            for a in &applied {
                for (instance_type, ran) in &a.hours {
                    let reserved = a.reserved_hours.get(instance_type).copied().unwrap_or_default();
                    let cost = a.type_on_demand_cost.get(instance_type).copied().unwrap_or_default();
                    let s = sums.entry(instance_type.clone()).or_default();
                    s.0 += reserved;
                    s.1 += *ran - reserved;
                    s.2 += cost;
                }
            }
            let groups: Vec<Value> = sums
                .iter()
                .map(|(instance_type, (reserved, on_demand, cost))| {
                    json!({
                        "Attributes": { "instanceType": instance_type },
                        "Coverage": {
                            "CoverageHours": {
                                "OnDemandHours": money(*on_demand),
                                "ReservedHours": money(*reserved),
                                "TotalRunningHours": money(*reserved + *on_demand),
                                "CoverageHoursPercentage": percent(*reserved, *reserved + *on_demand),
                            },
                            "CoverageCost": { "OnDemandCost": money(*cost) },
                        },
                    })
                })
                .collect();
            let size = request["MaxResults"]
                .as_u64()
                .map(|n| n as usize)
                .unwrap_or(state.commitments.page_size.unwrap_or(100));
            let (groups, next) = page(groups, request["NextPageToken"].as_str(), size)?;
            let mut out = json!({ "CoveragesByTime": [ { "TimePeriod": time, "Groups": groups } ] });
            if let Some(next) = next {
                out["NextPageToken"] = json!(next);
            }
            Ok(out)
        }
        "GetSavingsPlansUtilization" => {
            if !matches!(request["Granularity"].as_str(), Some("DAILY" | "MONTHLY")) {
                return Err((
                    "ValidationException",
                    "Granularity supports only DAILY and MONTHLY.".into(),
                ));
            }
            let plan_type = filtered(request, "SAVINGS_PLANS_TYPE");
            let chosen: Vec<usize> = state
                .commitments
                .plans
                .iter()
                .enumerate()
                .filter(|(_, p)| {
                    plan_type
                        .as_deref()
                        .is_none_or(|t| t == spelled(p.plan_type, state.commitments.enum_spelling))
                })
                .map(|(i, _)| i)
                .collect();
            if chosen.is_empty() {
                return Err(("DataUnavailableException", "The requested data is unavailable.".into()));
            }
            let hours = Decimal::from((to - from).num_days() * 24);
            let (mut total, mut used, mut equivalent) = (Decimal::ZERO, Decimal::ZERO, Decimal::ZERO);
            for &i in &chosen {
                let plan = &state.commitments.plans[i];
                let spent: Decimal = applied.iter().filter_map(|a| a.plan_used.get(&i)).sum();
                total += plan.hourly_commitment * hours;
                used += spent;
                equivalent += spent / (Decimal::ONE - plan.discount);
            }
            Ok(json!({
                "SavingsPlansUtilizationsByTime": [],
                "Total": {
                    "Utilization": {
                        "TotalCommitment": money(total),
                        "UsedCommitment": money(used),
                        "UnusedCommitment": money(total - used),
                        "UtilizationPercentage": percent(used, total),
                    },
                    "Savings": { "NetSavings": money(equivalent - total), "OnDemandCostEquivalent": money(equivalent) },
                    "AmortizedCommitment": { "TotalAmortizedCommitment": money(total) },
                }
            }))
        }
        "GetReservationUtilization" => {
            if !group_by.is_empty() && group_by != ["SUBSCRIPTION_ID"] {
                return Err((
                    "ValidationException",
                    "GetReservationUtilization groups only by SUBSCRIPTION_ID.".into(),
                ));
            }
            let ndays = Decimal::from((to - from).num_days());
            let mut groups = Vec::new();
            for r in &state.commitments.reservations {
                let purchased = Decimal::from(r.count * 24) * ndays;
                // This reservation's share of its type's reserved hours, in purchase order.
                let mut used = Decimal::ZERO;
                for a in &applied {
                    let ran = a.hours.get(&r.instance_type).copied().unwrap_or_default();
                    let earlier: Decimal = state
                        .commitments
                        .reservations
                        .iter()
                        .take_while(|o| o.subscription_id != r.subscription_id)
                        .filter(|o| o.instance_type == r.instance_type)
                        .map(|o| Decimal::from(o.count * 24))
                        .sum();
                    used += (ran - earlier).clamp(Decimal::ZERO, Decimal::from(r.count * 24));
                }
                let fee = purchased * r.hourly_fee;
                // NetRISavings = OnDemandCostOfRIHoursUsed − TotalAmortizedFee
                // (REF/API_ReservationAggregates.html), at the type's billed on-demand rate.
                let (spent, ran) = state
                    .items
                    .iter()
                    .filter(|i| i.day >= from && i.day < to && eligible(i) == Some((false, r.instance_type.clone())))
                    .fold((Decimal::ZERO, Decimal::ZERO), |(c, h), i| {
                        (c + i.unblended, h + i.quantity)
                    });
                let rate = if ran > Decimal::ZERO {
                    spent / ran
                } else {
                    Decimal::ZERO
                };
                let net = used * rate - fee;
                let unused_cost = (purchased - used) * r.hourly_fee;
                groups.push(json!({
                    "Key": "SUBSCRIPTION_ID",
                    "Value": r.subscription_id,
                    "Attributes": { "instanceType": r.instance_type, "numberOfInstances": r.count.to_string() },
                    "Utilization": {
                        "UtilizationPercentage": percent(used, purchased),
                        "PurchasedHours": money(purchased),
                        "TotalActualHours": money(used),
                        "UnusedHours": money(purchased - used),
                        "TotalAmortizedFee": money(fee),
                        "RICostForUnusedHours": money(unused_cost),
                        "OnDemandCostOfRIHoursUsed": money(used * rate),
                        "NetRISavings": money(net),
                    },
                }));
            }
            let size = request["MaxResults"]
                .as_u64()
                .map(|n| n as usize)
                .unwrap_or(state.commitments.page_size.unwrap_or(100));
            let (groups, next) = page(groups, request["NextPageToken"].as_str(), size)?;
            let mut out = json!({ "UtilizationsByTime": [ { "TimePeriod": time, "Groups": groups } ], "Total": {} });
            if let Some(next) = next {
                out["NextPageToken"] = json!(next);
            }
            Ok(out)
        }
        other => Err(("UnknownOperationException", format!("unknown operation {other}"))),
    }
}

fn recommendation(state: &FakeState, request: &Value) -> Result<Value, Failure> {
    for field in [
        "SavingsPlansType",
        "TermInYears",
        "PaymentOption",
        "LookbackPeriodInDays",
    ] {
        if request[field].as_str().is_none() {
            return Err(("ValidationException", format!("{field} is required.")));
        }
    }
    let plan_type = request["SavingsPlansType"].as_str().unwrap_or_default();
    let found = state
        .commitments
        .recommendations
        .iter()
        .find(|r| r.plan_type == plan_type);
    let mut out = json!({ "Metadata": { "RecommendationId": "fake", "GenerationTimestamp": "2026-11-01T00:00:00Z" } });
    if let Some(r) = found {
        out["SavingsPlansPurchaseRecommendation"] = json!({
            "SavingsPlansType": plan_type,
            "TermInYears": request["TermInYears"],
            "PaymentOption": request["PaymentOption"],
            "LookbackPeriodInDays": request["LookbackPeriodInDays"],
            "SavingsPlansPurchaseRecommendationDetails": [],
            "SavingsPlansPurchaseRecommendationSummary": {
                "HourlyCommitmentToPurchase": money(r.hourly_commitment),
                "EstimatedMonthlySavingsAmount": money(r.monthly_saving),
                "EstimatedSavingsPercentage": money(r.saving_percent),
                "CurrencyCode": "USD",
                "TotalRecommendationCount": "1",
            },
        });
    }
    Ok(out)
}
