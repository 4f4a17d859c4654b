//! The account-wide reads burnrate makes (Cost Explorer, Budgets), each once, each answer held
//! to what burnrate reads of it, and the read-back of one budget burnrate made.

use aws_config::SdkConfig;
use aws_sdk_costexplorer::types::{
    Context, DateInterval, Dimension, Granularity, GroupDefinition, GroupDefinitionType, LookbackPeriodInDays,
    PaymentOption, SupportedSavingsPlansType,
};
use chrono::{Days, NaiveDate, Utc};
use rust_decimal::Decimal;

use super::{Finding, How, judged};
use crate::budgets::aws_sync::NAME_PREFIX;

fn interval(from: NaiveDate, to: NaiveDate) -> Option<DateInterval> {
    DateInterval::builder()
        .start(from.to_string())
        .end(to.to_string())
        .build()
        .ok()
}

fn dimension(key: &str) -> GroupDefinition {
    GroupDefinition::builder()
        .r#type(GroupDefinitionType::Dimension)
        .key(key)
        .build()
}

fn only(dimension: Dimension, value: &str) -> aws_sdk_costexplorer::types::Expression {
    aws_sdk_costexplorer::types::Expression::builder()
        .dimensions(
            aws_sdk_costexplorer::types::DimensionValues::builder()
                .key(dimension)
                .values(value)
                .build(),
        )
        .build()
}

fn usd(amount: Option<&str>) -> Result<Decimal, String> {
    let text = amount.ok_or("a group without an amount")?;
    text.parse::<Decimal>()
        .or_else(|_| Decimal::from_scientific(text))
        .map_err(|_| format!("the amount {text:?} is not a decimal"))
}

/// Nine Cost Explorer requests (USD 0.09): yesterday's spend by project tag and usage type
/// (one of the grains ingestion reads) and by account and record type (its account view),
/// the accounts, the Savings Plans types, and the commitments reads.
pub(super) async fn cost_explorer(sdk: &SdkConfig, tag_key: &str) -> Vec<Finding> {
    let ce = aws_sdk_costexplorer::Client::new(sdk);
    let today = Utc::now().date_naive();
    let yesterday = today - Days::new(1);
    // The commitments reads' window, as ingestion asks it: the 30 days before yesterday.
    let month_ago = yesterday - Days::new(30);
    let mut findings = Vec::new();

    let groups = [
        GroupDefinition::builder()
            .r#type(GroupDefinitionType::Tag)
            .key(tag_key)
            .build(),
        GroupDefinition::builder()
            .r#type(GroupDefinitionType::Dimension)
            .key("USAGE_TYPE")
            .build(),
    ];
    let usage = ce
        .get_cost_and_usage()
        .set_time_period(interval(yesterday, today))
        .granularity(Granularity::Daily)
        .metrics("UnblendedCost")
        .set_group_by(Some(groups.to_vec()))
        .send()
        .await;
    findings.push(judged("ce:GetCostAndUsage", usage, |answer| {
        let day = answer
            .results_by_time()
            .first()
            .ok_or("no ResultsByTime for yesterday")?;
        let mut tagged = 0;
        for group in day.groups() {
            let cost = group
                .metrics()
                .and_then(|m| m.get("UnblendedCost"))
                .ok_or("a group without UnblendedCost")?;
            usd(cost.amount())?;
            // Cost Explorer names a tag group `key$value` (`key$` when untagged).
            tagged += usize::from(
                group
                    .keys()
                    .iter()
                    .any(|k| k.starts_with(&format!("{tag_key}$")) && !k.ends_with('$')),
            );
        }
        Ok(format!(
            "{} groups on {yesterday}, {tagged} carrying the tag {tag_key:?}",
            day.groups().len()
        ))
    }));

    // The account view ingestion asks first, unfiltered: by account and record type.
    let view = ce
        .get_cost_and_usage()
        .set_time_period(interval(yesterday, today))
        .granularity(Granularity::Daily)
        .metrics("UnblendedCost")
        .set_group_by(Some(
            ["LINKED_ACCOUNT", "RECORD_TYPE"]
                .map(|key| {
                    GroupDefinition::builder()
                        .r#type(GroupDefinitionType::Dimension)
                        .key(key)
                        .build()
                })
                .to_vec(),
        ))
        .send()
        .await;
    findings.push(judged("ce:GetCostAndUsage", view, |answer| {
        let day = answer
            .results_by_time()
            .first()
            .ok_or("no ResultsByTime for yesterday")?;
        for group in day.groups() {
            let [account, _record_type] = group.keys() else {
                return Err(format!(
                    "a group with {} keys where 2 were expected",
                    group.keys().len()
                ));
            };
            if !crate::ingestion::response::is_account_id(account) {
                return Err(format!("LINKED_ACCOUNT value {account:?} is not 12 digits"));
            }
            usd(group
                .metrics()
                .and_then(|m| m.get("UnblendedCost"))
                .ok_or("a group without UnblendedCost")?
                .amount())?;
        }
        Ok(format!(
            "{} account and record type groups on {yesterday}",
            day.groups().len()
        ))
    }));

    let accounts = ce
        .get_dimension_values()
        .set_time_period(interval(month_ago, yesterday))
        .dimension(Dimension::LinkedAccount)
        .send()
        .await;
    findings.push(judged("ce:GetDimensionValues", accounts, |answer| {
        let values = answer.dimension_values();
        if let Some(odd) = values.iter().find(|v| {
            v.value()
                .is_none_or(|a| a.len() != 12 || !a.bytes().all(|b| b.is_ascii_digit()))
        }) {
            return Err(format!("LINKED_ACCOUNT value {:?} is not 12 digits", odd.value()));
        }
        Ok(format!("{} linked accounts in the last 30 days", values.len()))
    }));

    let plan_types = ce
        .get_dimension_values()
        .set_time_period(interval(month_ago, yesterday))
        .dimension(Dimension::SavingsPlansType)
        .context(Context::SavingsPlans)
        .send()
        .await;
    findings.push(judged("ce:GetDimensionValues", plan_types, |answer| {
        let names: Vec<&str> = answer.dimension_values().iter().filter_map(|v| v.value()).collect();
        Ok(format!(
            "Savings Plans types with spend: {}",
            if names.is_empty() {
                "none".into()
            } else {
                names.join(", ")
            }
        ))
    }));

    let period = interval(month_ago, yesterday);
    let sp_use = ce
        .get_savings_plans_utilization()
        .set_time_period(period.clone())
        .granularity(Granularity::Monthly)
        .send()
        .await;
    findings.push(judged("ce:GetSavingsPlansUtilization", sp_use, |answer| {
        Ok(format!("{} periods", answer.savings_plans_utilizations_by_time().len()))
    }));
    let sp_cover = ce
        .get_savings_plans_coverage()
        .set_time_period(period.clone())
        .group_by(dimension("INSTANCE_FAMILY"))
        .filter(only(Dimension::Service, "Amazon Elastic Compute Cloud - Compute"))
        .metrics("SpendCoveredBySavingsPlans")
        .send()
        .await;
    findings.push(judged("ce:GetSavingsPlansCoverage", sp_cover, |answer| {
        Ok(format!("{} coverage rows", answer.savings_plans_coverages().len()))
    }));
    let ri_cover = ce
        .get_reservation_coverage()
        .set_time_period(period.clone())
        .group_by(dimension("INSTANCE_TYPE"))
        .metrics("Hour")
        .metrics("Cost")
        .send()
        .await;
    findings.push(judged("ce:GetReservationCoverage", ri_cover, |answer| {
        Ok(format!("{} coverage periods", answer.coverages_by_time().len()))
    }));
    let ri_use = ce
        .get_reservation_utilization()
        .set_time_period(period)
        .group_by(dimension("SUBSCRIPTION_ID"))
        .send()
        .await;
    findings.push(judged("ce:GetReservationUtilization", ri_use, |answer| {
        Ok(format!("{} utilisation periods", answer.utilizations_by_time().len()))
    }));
    let advice = ce
        .get_savings_plans_purchase_recommendation()
        .savings_plans_type(SupportedSavingsPlansType::ComputeSp)
        .term_in_years(aws_sdk_costexplorer::types::TermInYears::OneYear)
        .payment_option(PaymentOption::NoUpfront)
        .lookback_period_in_days(LookbackPeriodInDays::ThirtyDays)
        .send()
        .await;
    findings.push(judged("ce:GetSavingsPlansPurchaseRecommendation", advice, |answer| {
        Ok(match answer.savings_plans_purchase_recommendation() {
            Some(r) => format!(
                "{} recommended plans",
                r.savings_plans_purchase_recommendation_details().len()
            ),
            None => "no recommendation".into(),
        })
    }));
    findings
}

/// The tag keys an expression filters on, at any depth (a team budget before credits nests
/// its tag filter in an `And` with the record types).
fn tag_keys(expression: &aws_sdk_budgets::types::Expression) -> Vec<String> {
    let mut keys: Vec<String> = expression
        .tags()
        .and_then(|t| t.key())
        .map(str::to_string)
        .into_iter()
        .collect();
    for nested in expression.and().iter().chain(expression.or()) {
        keys.extend(tag_keys(nested));
    }
    if let Some(not) = expression.not() {
        keys.extend(tag_keys(not));
    }
    keys
}

/// `DescribeBudgets` with `ShowFilterExpression`, and one burnrate team or project budget
/// read back: does its filter name the tag key burnrate is configured with?
pub(super) async fn budgets(sdk: &SdkConfig, account: &str, tag_key: &str) -> Vec<Finding> {
    let answer = aws_sdk_budgets::Client::new(sdk)
        .describe_budgets()
        .account_id(account)
        .max_results(100)
        .show_filter_expression(true)
        .send()
        .await;
    let mut read_back = None;
    let listed = judged("budgets:ViewBudget", answer, |answer| {
        let ours: Vec<_> = answer
            .budgets()
            .iter()
            .filter(|b| b.budget_name().starts_with(NAME_PREFIX))
            .collect();
        read_back = Some(
            match ours.iter().find_map(|b| {
                b.filter_expression()
                    .map(|f| (b.budget_name(), tag_keys(f)))
                    .filter(|(_, k)| !k.is_empty())
            }) {
                None if ours.is_empty() => Finding::pass(
                    "budgets:ViewBudget",
                    How::ReadBack,
                    "no budget of burnrate's yet: `burnrate budgets sync` makes them",
                ),
                None => Finding::pass(
                    "budgets:ViewBudget",
                    How::ReadBack,
                    "burnrate's budgets here are organisation or account budgets: no tag filter to read back",
                ),
                Some((name, keys)) if keys.iter().all(|k| k == tag_key) => Finding::pass(
                    "budgets:ViewBudget",
                    How::ReadBack,
                    format!("{name} filters on the tag {tag_key:?}, as BURNRATE_TAG_PROJECT says"),
                ),
                Some((name, keys)) => Finding::fail(
                    "budgets:ViewBudget",
                    How::ReadBack,
                    format!(
                        "{name} filters on the tag {:?}, but BURNRATE_TAG_PROJECT is {tag_key:?}: \
                         its alerts follow other spend than burnrate's; run `burnrate budgets sync`",
                        keys.join(", ")
                    ),
                ),
            },
        );
        Ok(format!(
            "{} budgets, {} of them burnrate's",
            answer.budgets().len(),
            ours.len()
        ))
    });
    std::iter::once(listed).chain(read_back).collect()
}
