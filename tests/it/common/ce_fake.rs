//! A Cost Explorer fake on loopback, faithful to the AWS documentation where moto is not:
//! at most two GroupBy, TAG keys as `key$value` (`key$` when untagged), DAILY results with
//! `End` exclusive and one `ResultsByTime` per day, Estimated days, NextPageToken pagination
//! bound to the request (RequestChangedException / InvalidNextTokenException), the 13-months-
//! plus-current-month limit (ValidationException), throttling (LimitExceededException) and
//! expired credentials; linked accounts with their names (GetDimensionValues for
//! LINKED_ACCOUNT, its `description` attribute) and a LINKED_ACCOUNT filter, alone or under
//! `And` with RECORD_TYPE. Each group's amounts are rounded on their own to 10 decimals, as AWS
//! rounds them, so the same day's sums over different group-bys differ in the last digits.
//! Errors use the awsJson1_1 shape: HTTP 400 and `__type`.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::{Datelike, Months, NaiveDate};
use rust_decimal::Decimal;
use serde_json::{Value, json};

/// One line of spend; `None` tags are untagged.
#[derive(Debug, Clone)]
pub struct LineItem {
    pub day: NaiveDate,
    /// LINKED_ACCOUNT: the 12-digit account the spend is in.
    pub account: String,
    pub project: Option<String>,
    pub user: Option<String>,
    pub usage_type: String,
    pub service: String,
    /// Cost Explorer's RECORD_TYPE: `Usage`, `Credit`, `Refund`, `Tax`, `RIFee`, …
    pub record_type: String,
    pub unblended: Decimal,
    pub amortized: Decimal,
    pub quantity: Decimal,
}

/// What a request asked for, as the fake saw it.
#[derive(Debug, Clone)]
pub struct SeenRequest {
    /// `GetCostAndUsage` or `GetDimensionValues`.
    pub operation: &'static str,
    pub group_by: Vec<String>,
    /// The LINKED_ACCOUNT values of the request's filter, if it had one.
    pub accounts: Option<Vec<String>>,
    /// The RECORD_TYPE values of the request's filter, if it had one.
    pub record_types: Option<Vec<String>>,
    /// The USAGE_TYPE values of the request's filter, if it had one.
    pub usage_types: Option<Vec<String>>,
    pub start: String,
    pub end: String,
    pub paged: bool,
}

#[derive(Debug, Default)]
pub struct FakeState {
    pub items: Vec<LineItem>,
    /// Account names, as the management account's Cost Explorer gives them.
    pub account_names: BTreeMap<String, String>,
    /// Accounts `GetDimensionValues` leaves out although they have spend in the period: a
    /// fault a run must catch from its account views, which group all spend by account.
    pub unlisted: BTreeSet<String>,
    /// Days flagged Estimated besides the open bill's (the old shape: only recent days).
    pub estimated: BTreeSet<NaiveDate>,
    /// Flag every day of the bill still open on `today` Estimated, as AWS does: the whole
    /// current month from its 1st, and the previous month until its bill closes a few days
    /// into this one (modelled as through the 5th). "Estimated" in ResultByTime,
    /// https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_ResultByTime.html;
    /// "your data for the current month is estimated",
    /// https://docs.aws.amazon.com/cost-management/latest/userguide/ce-exploring-data.html.
    pub open_bill: bool,
    /// Groups per page; AWS does not document its page size.
    pub page_size: usize,
    /// The fake's notion of today, for the history limit.
    pub today: Option<NaiveDate>,
    /// The next N requests are throttled.
    pub throttle_next: u32,
    /// The next request fails with this `__type` and message.
    pub fail_next: Option<(String, String)>,
    /// Every successful response carries this Amount for its first group.
    pub corrupt_amount: Option<String>,
    /// Each day's first group is answered twice (a faulty answer the run must name).
    pub duplicate_first_group: bool,
    /// Applied once, after the first successful response: AWS restating figures mid-run.
    pub restate_after_first: Option<Vec<LineItem>>,
    /// Each request waits this long before answering.
    pub delay: Duration,
    /// Added to the first group of every day in answers grouped by the named second key
    /// (`USAGE_TYPE`, `SERVICE` or the user tag), or by `LINKED_ACCOUNT` alone (the account
    /// view): answers that disagree with the others.
    pub skew: Vec<(String, Decimal)>,
    pub requests: Vec<SeenRequest>,
    /// Requests that reached the fake, counted before any delay (so also those the client
    /// gave up on).
    pub arrivals: usize,
    /// Owned Savings Plans and reservations, and the commitment operations' requests
    /// (kept apart from `requests`, which are the cost queries).
    pub commitments: super::ce_commitments::Book,
}

pub type CostExplorerFake = super::LoopbackFake<FakeState>;

impl CostExplorerFake {
    pub async fn start(items: Vec<LineItem>) -> CostExplorerFake {
        super::LoopbackFake::serve(
            FakeState {
                items,
                page_size: 1000,
                open_bill: true,
                ..FakeState::default()
            },
            handle,
        )
        .await
    }

    pub fn request_count(&self) -> usize {
        self.with(|s| s.requests.len())
    }

    /// Each account's unblended spend over [from, to) as Cost Explorer answers it grouped by
    /// `group_by` (`LINKED_ACCOUNT`, or `LINKED_ACCOUNT` and `RECORD_TYPE`), keyed by the groups'
    /// keys: the sum of the rounded daily groups.
    pub fn account_totals(&self, from: NaiveDate, to: NaiveDate, group_by: &[&str]) -> BTreeMap<Vec<String>, Decimal> {
        let group_by: Vec<(String, String)> = group_by
            .iter()
            .map(|key| ("DIMENSION".to_string(), key.to_string()))
            .collect();
        self.with(|s| {
            let mut totals: BTreeMap<Vec<String>, Decimal> = BTreeMap::new();
            for day in from.iter_days().take_while(|d| *d < to) {
                for (keys, sums) in groups_of_day(s, day, &group_by, &Filter::default()) {
                    *totals.entry(keys).or_default() += sums[0];
                }
            }
            totals
        })
    }

    /// Unblended spend of the days in [from, to) as Cost Explorer answers it grouped by the
    /// project tag and `second` (`USAGE_TYPE`, `SERVICE`, `RECORD_TYPE` or `user`): the sum of its rounded
    /// groups. Each stored grain must equal its own query's total to the last digit.
    pub fn total(&self, from: NaiveDate, to: NaiveDate, second: &str) -> Decimal {
        self.with(|s| grouped_total(s, from, to, second))
    }

    /// The largest difference between the daily totals (unblended or amortized) of the four
    /// project grains and the two account views over [from, to), as the fake answers them.
    pub fn largest_grain_difference(&self, from: NaiveDate, to: NaiveDate) -> Decimal {
        let dimension = |key: &str| ("DIMENSION".to_string(), key.to_string());
        let mut grains: Vec<Vec<(String, String)>> = ["user", "USAGE_TYPE", "SERVICE", "RECORD_TYPE"]
            .map(|second| {
                let kind = if second == "user" { "TAG" } else { "DIMENSION" };
                vec![
                    ("TAG".to_string(), "project".to_string()),
                    (kind.to_string(), second.to_string()),
                ]
            })
            .to_vec();
        grains.push(vec![dimension("LINKED_ACCOUNT")]);
        grains.push(vec![dimension("LINKED_ACCOUNT"), dimension("RECORD_TYPE")]);
        self.with(|s| {
            let mut largest = Decimal::ZERO;
            for day in from.iter_days().take_while(|d| *d < to) {
                let totals: Vec<[Decimal; 2]> = grains
                    .iter()
                    .map(|g| {
                        groups_of_day(s, day, g, &Filter::default())
                            .values()
                            .fold([Decimal::ZERO; 2], |t, v| [t[0] + v[0], t[1] + v[1]])
                    })
                    .collect();
                // Every pair of grains, per metric.
                for (i, a) in totals.iter().enumerate() {
                    for b in &totals[i + 1..] {
                        largest = largest.max((a[0] - b[0]).abs()).max((a[1] - b[1]).abs());
                    }
                }
            }
            largest
        })
    }
}

/// [`CostExplorerFake::total`] over `items` alone: what one account's query answers.
pub fn total_of(items: &[LineItem], from: NaiveDate, to: NaiveDate, second: &str) -> Decimal {
    let state = FakeState {
        items: items.to_vec(),
        ..FakeState::default()
    };
    grouped_total(&state, from, to, second)
}

fn grouped_total(state: &FakeState, from: NaiveDate, to: NaiveDate, second: &str) -> Decimal {
    let kind = if second == "user" { "TAG" } else { "DIMENSION" };
    let group_by = [
        ("TAG".to_string(), "project".to_string()),
        (kind.to_string(), second.to_string()),
    ];
    from.iter_days()
        .take_while(|d| *d < to)
        .flat_map(|day| groups_of_day(state, day, &group_by, &Filter::default()).into_values())
        .map(|sums| sums[0])
        .sum()
}

fn error(kind: &str, message: &str) -> Response {
    (
        StatusCode::BAD_REQUEST,
        [("content-type", "application/x-amz-json-1.1")],
        json!({ "__type": kind, "message": message }).to_string(),
    )
        .into_response()
}

async fn handle(State(state): State<Arc<Mutex<FakeState>>>, headers: HeaderMap, body: String) -> Response {
    let delay = {
        let mut state = state.lock().expect("state");
        state.arrivals += 1;
        state.delay
    };
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let target = headers.get("x-amz-target").and_then(|v| v.to_str().ok()).unwrap_or("");
    let operation = match target {
        "AWSInsightsIndexService.GetCostAndUsage" => "GetCostAndUsage",
        "AWSInsightsIndexService.GetDimensionValues" => "GetDimensionValues",
        _ => match super::ce_commitments::OPERATIONS
            .iter()
            .find(|op| target.strip_prefix("AWSInsightsIndexService.") == Some(**op))
        {
            Some(op) => op,
            None => return error("UnknownOperationException", &format!("unknown operation {target}")),
        },
    };
    let authorization = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("");
    if !authorization.starts_with("AWS4-HMAC-SHA256 Credential=") {
        return error(
            "MissingAuthenticationTokenException",
            "Request is missing Authentication Token",
        );
    }
    if authorization.contains("Credential=EXPIRED/") {
        return error(
            "ExpiredTokenException",
            "The security token included in the request is expired",
        );
    }
    let Ok(request) = serde_json::from_str::<Value>(&body) else {
        return error("SerializationException", "body is not JSON");
    };
    let mut state = state.lock().expect("state");
    let commitments = super::ce_commitments::OPERATIONS.contains(&operation)
        || (operation == "GetDimensionValues" && request["Context"] == "SAVINGS_PLANS");
    if commitments {
        // Throttling and queued failures reach these operations too.
        if state.throttle_next > 0 {
            state.throttle_next -= 1;
            return error(
                "LimitExceededException",
                "You have exceeded the rate limit for this operation.",
            );
        }
        if let Some((kind, message)) = state.fail_next.take() {
            return error(&kind, &message);
        }
        return match super::ce_commitments::answer(&mut state, operation, &request) {
            Ok(body) => (
                StatusCode::OK,
                [("content-type", "application/x-amz-json-1.1")],
                body.to_string(),
            )
                .into_response(),
            Err((kind, message)) => error(kind, &message),
        };
    }
    let group_by: Vec<(String, String)> = request["GroupBy"]
        .as_array()
        .map(|groups| {
            groups
                .iter()
                .map(|g| {
                    (
                        g["Type"].as_str().unwrap_or("").to_string(),
                        g["Key"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    if operation == "GetDimensionValues" {
        return dimension_values(&mut state, &request);
    }
    // Filter: the forms ingestion sends, Dimensions RECORD_TYPE, USAGE_TYPE and LINKED_ACCOUNT
    // equal to values, alone or under And (Expression,
    // https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_Expression.html).
    let filter = match parse_filter(&request["Filter"]) {
        Ok(filter) => filter,
        Err(message) => return error("ValidationException", &message),
    };
    let start = request["TimePeriod"]["Start"].as_str().unwrap_or("").to_string();
    let end = request["TimePeriod"]["End"].as_str().unwrap_or("").to_string();
    let token = request["NextPageToken"].as_str().map(str::to_string);
    let seen = SeenRequest {
        operation,
        group_by: group_by.iter().map(|(t, k)| format!("{t}:{k}")).collect(),
        accounts: filter.accounts.clone(),
        record_types: filter.record_types.clone(),
        usage_types: filter.usage_types.clone(),
        start: start.clone(),
        end: end.clone(),
        paged: token.is_some(),
    };
    if let Some(failure) = record_and_fail(&mut state, seen) {
        return failure;
    }
    if group_by.len() > 2 {
        return error(
            "ValidationException",
            "You can only group by up to two different groups.",
        );
    }
    if request["Granularity"].as_str() != Some("DAILY") || request["Metrics"].as_array().is_none_or(|m| m.is_empty()) {
        return error(
            "ValidationException",
            "Granularity DAILY and at least one metric are required by this fake.",
        );
    }
    let parse = |s: &str| NaiveDate::parse_from_str(s, "%Y-%m-%d").ok();
    let (Some(from), Some(to)) = (parse(&start), parse(&end)) else {
        return error("ValidationException", "Start and End must be YYYY-MM-DD.");
    };
    if from >= to {
        return error("ValidationException", "Start date must be before end date.");
    }
    let today = state.today.unwrap_or_else(|| chrono::Utc::now().date_naive());
    let earliest = today
        .with_day(1)
        .and_then(|d| d.checked_sub_months(Months::new(13)))
        .expect("earliest");
    if from < earliest {
        return error(
            "ValidationException",
            &format!("start date {from} is too old: daily data is available from {earliest}"),
        );
    }

    let fingerprint = {
        let mut without_token = request.clone();
        if let Some(object) = without_token.as_object_mut() {
            object.remove("NextPageToken");
        }
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        without_token.to_string().hash(&mut hasher);
        format!("{:016x}", hasher.finish())
    };
    let offset = match &token {
        None => 0,
        Some(token) => match token.split_once(':') {
            Some((print, offset)) if print == fingerprint => match offset.parse::<usize>() {
                Ok(offset) => offset,
                Err(_) => return error("InvalidNextTokenException", "The pagination token is invalid."),
            },
            Some((print, _)) if print.len() == 16 => {
                return error(
                    "RequestChangedException",
                    "Your request parameters changed between pages. Try again with the old parameters or without a pagination token.",
                );
            }
            _ => return error("InvalidNextTokenException", "The pagination token is invalid."),
        },
    };

    // One entry per (day, group), or one empty entry for a day with no spend.
    let mut entries: Vec<(NaiveDate, Option<Sums>)> = Vec::new();
    for day in from.iter_days().take_while(|d| *d < to) {
        let groups = groups_of_day(&state, day, &group_by, &filter);
        if groups.is_empty() {
            entries.push((day, None));
        }
        entries.extend(groups.into_iter().map(|g| (day, Some(g))));
    }
    let page: Vec<_> = entries
        .iter()
        .skip(offset)
        .take(state.page_size.max(1))
        .cloned()
        .collect();
    let next = offset + page.len();
    let mut results: Vec<Value> = Vec::new();
    for (day, group) in page {
        let same_day = results
            .last()
            .is_some_and(|r| r["TimePeriod"]["Start"] == day.to_string());
        if !same_day {
            results.push(json!({
                "TimePeriod": { "Start": day.to_string(), "End": day.succ_opt().expect("day").to_string() },
                "Total": {},
                "Groups": [],
                "Estimated": state.estimated.contains(&day) || on_open_bill(&state, day),
            }));
        }
        if let (Some((keys, [unblended, amortized, quantity])), Some(last)) = (group, results.last_mut()) {
            let corrupt = state.corrupt_amount.clone();
            let shown = |amount: Decimal| corrupt.clone().unwrap_or_else(|| amount.to_string());
            if let Some(groups) = last["Groups"].as_array_mut() {
                let group = json!({
                    "Keys": keys,
                    "Metrics": {
                        "UnblendedCost": { "Amount": shown(unblended), "Unit": "USD" },
                        "AmortizedCost": { "Amount": amortized.to_string(), "Unit": "USD" },
                        "UsageQuantity": { "Amount": quantity.to_string(), "Unit": "N/A" },
                    }
                });
                if state.duplicate_first_group && groups.is_empty() {
                    groups.push(group.clone());
                }
                groups.push(group);
            }
        }
    }
    let mut response = json!({
        "GroupDefinitions": group_by.iter().map(|(t, k)| json!({ "Type": t, "Key": k })).collect::<Vec<_>>(),
        "ResultsByTime": results,
        "DimensionValueAttributes": [],
    });
    if next < entries.len() {
        response["NextPageToken"] = json!(format!("{fingerprint}:{next}"));
    }
    if let Some(restated) = state.restate_after_first.take() {
        state.items = restated;
    }
    (
        StatusCode::OK,
        [("content-type", "application/x-amz-json-1.1")],
        response.to_string(),
    )
        .into_response()
}

/// One day's groups with their unblended, amortized and quantity sums, each rounded on its
/// own to 10 decimals as AWS does, and the skew applied when it names this grouping.
fn groups_of_day(
    state: &FakeState,
    day: NaiveDate,
    group_by: &[(String, String)],
    filter: &Filter,
) -> BTreeMap<Vec<String>, [Decimal; 3]> {
    let mut groups: BTreeMap<Vec<String>, [Decimal; 3]> = BTreeMap::new();
    let keeps = |values: &Option<Vec<String>>, value: &String| values.as_ref().is_none_or(|v| v.contains(value));
    let kept = |item: &&LineItem| {
        keeps(&filter.record_types, &item.record_type)
            && keeps(&filter.accounts, &item.account)
            && keeps(&filter.usage_types, &item.usage_type)
    };
    for item in state.items.iter().filter(|i| i.day == day).filter(kept) {
        let keys = group_by.iter().map(|(kind, key)| group_key(item, kind, key)).collect();
        let sums = groups.entry(keys).or_default();
        sums[0] += item.unblended;
        sums[1] += item.amortized;
        sums[2] += item.quantity;
    }
    for sums in groups.values_mut() {
        for amount in sums.iter_mut() {
            *amount = amount.round_dp(10);
        }
    }
    for (second, amount) in &state.skew {
        // The second key names a grain; `LINKED_ACCOUNT` alone names the account view.
        let named = match group_by {
            [(_, only)] => only == second,
            _ => group_by.get(1).is_some_and(|(_, key)| key == second),
        };
        if named && let Some(first) = groups.values_mut().next() {
            first[0] += *amount;
        }
    }
    groups
}

/// Records the request, then answers it with the failure a test queued, if any: throttling
/// (LimitExceededException) first, then `fail_next`.
fn record_and_fail(state: &mut FakeState, seen: SeenRequest) -> Option<Response> {
    state.requests.push(seen);
    if state.throttle_next > 0 {
        state.throttle_next -= 1;
        return Some(error(
            "LimitExceededException",
            "You have exceeded the rate limit for this operation.",
        ));
    }
    state.fail_next.take().map(|(kind, message)| error(&kind, &message))
}

/// The RECORD_TYPE, LINKED_ACCOUNT and USAGE_TYPE values a filter keeps (any of a
/// dimension's values): a `Dimensions` expression with `EQUALS` (or no MatchOptions), or `And`
/// of two or more of them (AWS requires at least two).
#[derive(Debug, Default)]
pub struct Filter {
    record_types: Option<Vec<String>>,
    accounts: Option<Vec<String>>,
    usage_types: Option<Vec<String>>,
}

fn parse_filter(filter: &Value) -> Result<Filter, String> {
    let dimension = |expression: &Value| -> Result<(String, Vec<String>), String> {
        let dimensions = &expression["Dimensions"];
        let only_dimensions = expression.as_object().is_some_and(|o| o.len() == 1);
        let equals = dimensions["MatchOptions"]
            .as_array()
            .is_none_or(|m| m.iter().all(|o| o == "EQUALS"));
        let key = dimensions["Key"].as_str().unwrap_or("");
        if !only_dimensions || !equals || !["RECORD_TYPE", "LINKED_ACCOUNT", "USAGE_TYPE"].contains(&key) {
            return Err(format!(
                "this fake supports only RECORD_TYPE, LINKED_ACCOUNT and USAGE_TYPE Dimensions filters, not {expression}"
            ));
        }
        let values = dimensions["Values"]
            .as_array()
            .map(|v| v.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
            .unwrap_or_default();
        Ok((key.to_string(), values))
    };
    let parts = match filter {
        Value::Null => return Ok(Filter::default()),
        Value::Object(object) if object.len() == 1 && object.contains_key("And") => {
            let parts = object["And"].as_array().cloned().unwrap_or_default();
            if parts.len() < 2 {
                return Err("And needs at least two expressions".into());
            }
            parts.iter().map(dimension).collect::<Result<Vec<_>, _>>()?
        }
        other => vec![dimension(other)?],
    };
    let values_of = |key: &str| parts.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
    Ok(Filter {
        record_types: values_of("RECORD_TYPE"),
        accounts: values_of("LINKED_ACCOUNT"),
        usage_types: values_of("USAGE_TYPE"),
    })
}

/// GetDimensionValues for LINKED_ACCOUNT: the accounts with spend in the period, each with
/// its name as the `description` attribute, paged like GetCostAndUsage
/// (https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_GetDimensionValues.html).
fn dimension_values(state: &mut FakeState, request: &Value) -> Response {
    let start = request["TimePeriod"]["Start"].as_str().unwrap_or("").to_string();
    let end = request["TimePeriod"]["End"].as_str().unwrap_or("").to_string();
    let token = request["NextPageToken"].as_str().map(str::to_string);
    let seen = SeenRequest {
        operation: "GetDimensionValues",
        group_by: Vec::new(),
        accounts: None,
        record_types: None,
        usage_types: None,
        start: start.clone(),
        end: end.clone(),
        paged: token.is_some(),
    };
    if let Some(failure) = record_and_fail(state, seen) {
        return failure;
    }
    if request["Dimension"] != "LINKED_ACCOUNT" {
        return error(
            "ValidationException",
            "this fake answers GetDimensionValues for LINKED_ACCOUNT only",
        );
    }
    let parse = |s: &str| NaiveDate::parse_from_str(s, "%Y-%m-%d").ok();
    let (Some(from), Some(to)) = (parse(&start), parse(&end)) else {
        return error("ValidationException", "Start and End must be YYYY-MM-DD.");
    };
    let accounts: BTreeSet<String> = state
        .items
        .iter()
        .filter(|i| i.day >= from && i.day < to && !state.unlisted.contains(&i.account))
        .map(|i| i.account.clone())
        .collect();
    let offset = match token.as_deref().map(str::parse::<usize>) {
        None => 0,
        Some(Ok(offset)) => offset,
        Some(Err(_)) => return error("InvalidNextTokenException", "The pagination token is invalid."),
    };
    let page: Vec<Value> = accounts
        .iter()
        .skip(offset)
        .take(state.page_size.max(1))
        .map(|id| {
            let name = state.account_names.get(id).cloned().unwrap_or_default();
            json!({ "Value": id, "Attributes": { "description": name } })
        })
        .collect();
    let next = offset + page.len();
    let mut response = json!({
        "DimensionValues": page,
        "ReturnSize": page.len(),
        "TotalSize": accounts.len(),
    });
    if next < accounts.len() {
        response["NextPageToken"] = json!(next.to_string());
    }
    (
        StatusCode::OK,
        [("content-type", "application/x-amz-json-1.1")],
        response.to_string(),
    )
        .into_response()
}

/// A group's keys and its unblended, amortized and quantity sums.
type Sums = (Vec<String>, [Decimal; 3]);

fn group_key(item: &LineItem, kind: &str, key: &str) -> String {
    match (kind, key) {
        ("TAG", "project") => format!("project${}", item.project.clone().unwrap_or_default()),
        ("TAG", "user") => format!("user${}", item.user.clone().unwrap_or_default()),
        ("TAG", other) => format!("{other}$"),
        ("DIMENSION", "USAGE_TYPE") => item.usage_type.clone(),
        ("DIMENSION", "SERVICE") => item.service.clone(),
        ("DIMENSION", "RECORD_TYPE") => item.record_type.clone(),
        ("DIMENSION", "LINKED_ACCOUNT") => item.account.clone(),
        (_, other) => format!("unsupported:{other}"),
    }
}

/// The one linked account [`sample_items`] bills to (a standalone account names itself).
pub const SAMPLE_ACCOUNT: &str = "111122223333";

/// A deterministic spread of spend over `days` days from `from`, in [`SAMPLE_ACCOUNT`]: three tagged projects (one
/// with a hostile name), untagged spend, several users and usage types, amounts with many
/// decimal places.
pub fn sample_items(from: NaiveDate, days: u32) -> Vec<LineItem> {
    let projects = [
        Some("llm-finetune"),
        Some("<img src=x onerror=alert(1)>"),
        Some("rlhf-eval"),
        None,
    ];
    let users = [Some("alice"), Some("bob"), None];
    let usage = [
        ("USE1-BoxUsage:p4d.24xlarge", "Amazon Elastic Compute Cloud - Compute"),
        ("USE1-SpotUsage:g5.xlarge", "Amazon Elastic Compute Cloud - Compute"),
        ("USE1-TimedStorage-ByteHrs", "Amazon Simple Storage Service"),
    ];
    let mut items = Vec::new();
    for (d, day) in from.iter_days().take(days as usize).enumerate() {
        for (p, project) in projects.iter().enumerate() {
            for (u, user) in users.iter().enumerate() {
                let (usage_type, service) = usage[(d + p + u) % usage.len()];
                let cents = 1000 + (d * 37 + p * 101 + u * 13) as i64;
                items.push(LineItem {
                    day,
                    account: SAMPLE_ACCOUNT.into(),
                    project: project.map(str::to_string),
                    user: user.map(str::to_string),
                    usage_type: usage_type.to_string(),
                    service: service.to_string(),
                    record_type: "Usage".into(),
                    // Line items carry more digits than the 10 decimals AWS rounds each
                    // group to, so different group-bys' sums differ in the last digits.
                    unblended: Decimal::new(
                        cents * 1_000_000_000_000 + 123_456_789 + (d * 7_919 + p * 104_729 + u * 1_299_709) as i64,
                        14,
                    ),
                    amortized: Decimal::new(
                        cents * 900_000_000_000 + 670_001 + (d * 15_485_863 + u * 32_452_843) as i64,
                        14,
                    ),
                    quantity: Decimal::new(24 + (d % 3) as i64, 0),
                });
            }
        }
        // What a real bill adds to usage: a promotional credit on the first project, a
        // refund on untagged spend every third day, and sales tax on untagged spend.
        let extra = |project: Option<&str>, usage_type: &str, service: &str, record_type: &str, amount: i64| LineItem {
            day,
            account: SAMPLE_ACCOUNT.into(),
            project: project.map(str::to_string),
            user: None,
            usage_type: usage_type.to_string(),
            service: service.to_string(),
            record_type: record_type.to_string(),
            unblended: Decimal::new(amount, 14),
            amortized: Decimal::new(amount, 14),
            quantity: Decimal::ZERO,
        };
        items.push(extra(
            Some("llm-finetune"),
            "USE1-BoxUsage:p4d.24xlarge",
            "Amazon Elastic Compute Cloud - Compute",
            "Credit",
            -(250 * 1_000_000_000_000 + 987_654_321),
        ));
        if d % 3 == 0 {
            items.push(extra(
                None,
                "USE1-TimedStorage-ByteHrs",
                "Amazon Simple Storage Service",
                "Refund",
                -3_333_333_333_333,
            ));
        }
        items.push(extra(None, "NoUsageType", "Tax", "Tax", 812_345_678_901_234));
    }
    items
}

/// Whether `day` is on a bill still open on the fake's today (see [`FakeState::open_bill`]).
fn on_open_bill(state: &FakeState, day: NaiveDate) -> bool {
    let Some(today) = state.today.filter(|_| state.open_bill) else {
        return false;
    };
    let this_month = today.with_day(1).expect("first of the month");
    let open_from = if today.day() <= 5 {
        this_month - Months::new(1)
    } else {
        this_month
    };
    day >= open_from && day < today
}
