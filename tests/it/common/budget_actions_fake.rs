//! An AWS Budgets fake on loopback for budget actions, which moto does not implement. It
//! follows the AWS API reference for the calls burnrate makes: CreateBudget, DeleteBudget,
//! DescribeBudgets, CreateBudgetAction, DescribeBudgetAction, DescribeBudgetActionsForBudget,
//! ExecuteBudgetAction, DescribeBudgetActionHistories and DeleteBudgetAction (awsJson1_1, target prefix
//! `AWSBudgetServiceGateway`, errors as HTTP 400 with `__type`, `x-amzn-RequestId` on every
//! answer).
//!
//! The action lifecycle is AWS's: an action starts in STANDBY; when AWS's own evaluation
//! finds the budget over the action's threshold (`breach` here, a few times a day in AWS)
//! a MANUAL action becomes PENDING and an AUTOMATIC one runs. APPROVE_BUDGET_ACTION runs a
//! PENDING action, REVERSE_BUDGET_ACTION undoes an executed one, RETRY_BUDGET_ACTION re-runs
//! a failed one, RESET_BUDGET_ACTION returns a reversed or failed one to STANDBY; anything
//! else is refused with ResourceLockedException. As in AWS, execution is asynchronous: an
//! accepted APPROVE or RETRY leaves the action EXECUTION_IN_PROGRESS and a REVERSE leaves it
//! REVERSE_IN_PROGRESS, until `finish` (AWS's own worker) ends them in SUCCESS, or in
//! FAILURE with a reason in the action's history.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

#[derive(Debug, Clone)]
pub struct FakeAction {
    pub budget: String,
    pub id: String,
    pub request: Value,
    pub status: String,
    pub history: Vec<(String, String)>,
}

#[derive(Debug, Default)]
pub struct ActionsState {
    pub budgets: BTreeMap<String, Value>,
    pub actions: Vec<FakeAction>,
    /// The next call fails with this `__type` and message.
    pub fail_next: Option<(String, String)>,
    /// The next call of this operation fails with this `__type` and message.
    pub fail_next_of: Option<(String, String, String)>,
    /// The next execution to finish (approve, retry or reverse) ends in *_FAILURE with this
    /// reason, as when the execution role lacks a permission.
    pub fail_next_execution: Option<String>,
    pub calls: Vec<String>,
    /// The next ExecuteBudgetAction is carried out, but answered only after this long.
    pub execute_delay: Option<std::time::Duration>,
    next_id: u64,
}

pub type BudgetActionsFake = super::LoopbackFake<ActionsState>;

impl BudgetActionsFake {
    pub async fn start() -> BudgetActionsFake {
        super::LoopbackFake::serve(ActionsState::default(), handle).await
    }

    /// AWS's periodic evaluation finding `budget` over its actions' thresholds.
    pub fn breach(&self, budget: &str) {
        self.with(|s| {
            for action in s
                .actions
                .iter_mut()
                .filter(|a| a.budget == budget && a.status == "STANDBY")
            {
                if action.request["ApprovalModel"] == "AUTOMATIC" {
                    transition(action, "EXECUTION_IN_PROGRESS", "EXECUTE_ACTION");
                } else {
                    transition(action, "PENDING", "SYSTEM");
                }
            }
        })
    }

    /// AWS's worker finishing every execution and reversal in progress; returns how many.
    pub fn finish(&self) -> usize {
        self.with(|s| {
            let mut finished = 0;
            for action in s.actions.iter_mut() {
                let (ok, failed) = match action.status.as_str() {
                    "EXECUTION_IN_PROGRESS" => ("EXECUTION_SUCCESS", "EXECUTION_FAILURE"),
                    "REVERSE_IN_PROGRESS" => ("REVERSE_SUCCESS", "REVERSE_FAILURE"),
                    _ => continue,
                };
                finished += 1;
                match s.fail_next_execution.take() {
                    Some(reason) => {
                        action.status = failed.to_string();
                        action.history.push((failed.to_string(), reason));
                    }
                    None => transition(action, ok, "EXECUTE_ACTION"),
                }
            }
            finished
        })
    }

    pub fn statuses(&self) -> Vec<(String, String)> {
        self.with(|s| s.actions.iter().map(|a| (a.budget.clone(), a.status.clone())).collect())
    }
}

fn transition(action: &mut FakeAction, status: &str, event: &str) {
    action.status = status.to_string();
    action.history.push((status.to_string(), event.to_string()));
}

fn answer(request_id: &str, status: StatusCode, body: Value) -> Response {
    (
        status,
        [
            ("content-type", "application/x-amz-json-1.1"),
            ("x-amzn-requestid", request_id),
        ],
        body.to_string(),
    )
        .into_response()
}

fn error(request_id: &str, kind: &str, message: &str) -> Response {
    answer(
        request_id,
        StatusCode::BAD_REQUEST,
        json!({ "__type": kind, "Message": message }),
    )
}

fn action_json(action: &FakeAction) -> Value {
    let r = &action.request;
    json!({
        "ActionId": action.id,
        "BudgetName": action.budget,
        "NotificationType": r["NotificationType"],
        "ActionType": r["ActionType"],
        "ActionThreshold": r["ActionThreshold"],
        "Definition": r["Definition"],
        "ExecutionRoleArn": r["ExecutionRoleArn"],
        "ApprovalModel": r["ApprovalModel"],
        "Status": action.status,
        "Subscribers": r["Subscribers"],
    })
}

/// The checks AWS documents for CreateBudgetAction.
fn invalid_action(request: &Value) -> Option<String> {
    let role = request["ExecutionRoleArn"].as_str().unwrap_or("");
    let role_ok = role.starts_with("arn:aws:iam::")
        && role
            .split(':')
            .nth(4)
            .is_some_and(|a| a.len() == 12 && a.bytes().all(|b| b.is_ascii_digit()))
        && role.contains(":role/");
    if !role_ok {
        return Some(format!("ExecutionRoleArn is not a valid IAM role ARN: {role:?}"));
    }
    if !matches!(request["ApprovalModel"].as_str(), Some("AUTOMATIC" | "MANUAL")) {
        return Some("ApprovalModel must be AUTOMATIC or MANUAL".into());
    }
    if !matches!(request["NotificationType"].as_str(), Some("ACTUAL" | "FORECASTED")) {
        return Some("NotificationType must be ACTUAL or FORECASTED".into());
    }
    let threshold = &request["ActionThreshold"];
    if threshold["ActionThresholdValue"].as_f64().is_none_or(|v| v <= 0.0)
        || !matches!(
            threshold["ActionThresholdType"].as_str(),
            Some("PERCENTAGE" | "ABSOLUTE_VALUE")
        )
    {
        return Some("ActionThreshold needs a positive value and PERCENTAGE or ABSOLUTE_VALUE".into());
    }
    let subscribers = request["Subscribers"].as_array().map_or(0, Vec::len);
    if !(1..=11).contains(&subscribers) {
        return Some(format!("Subscribers must hold 1 to 11 entries, not {subscribers}"));
    }
    let definition = &request["Definition"];
    match request["ActionType"].as_str() {
        Some("APPLY_IAM_POLICY") => {
            let iam = &definition["IamActionDefinition"];
            if !iam["PolicyArn"]
                .as_str()
                .is_some_and(|a| a.starts_with("arn:aws:iam::"))
            {
                return Some("IamActionDefinition.PolicyArn is required".into());
            }
            let targets: usize = ["Roles", "Groups", "Users"]
                .iter()
                .map(|k| iam[k].as_array().map_or(0, Vec::len))
                .sum();
            if targets == 0 {
                return Some("IamActionDefinition needs at least one of Roles, Groups or Users".into());
            }
        }
        Some("RUN_SSM_DOCUMENTS") => {
            let ssm = &definition["SsmActionDefinition"];
            if !matches!(
                ssm["ActionSubType"].as_str(),
                Some("STOP_EC2_INSTANCES" | "STOP_RDS_INSTANCES")
            ) {
                return Some(
                    "SsmActionDefinition.ActionSubType must be STOP_EC2_INSTANCES or STOP_RDS_INSTANCES".into(),
                );
            }
            let ids = ssm["InstanceIds"].as_array().map_or(0, Vec::len);
            if !(1..=100).contains(&ids) || ssm["Region"].as_str().is_none_or(str::is_empty) {
                return Some("SsmActionDefinition needs a Region and 1 to 100 InstanceIds".into());
            }
        }
        Some("APPLY_SCP_POLICY") => {}
        other => return Some(format!("ActionType {other:?} is not valid")),
    }
    None
}

async fn handle(State(state): State<Arc<Mutex<ActionsState>>>, headers: HeaderMap, body: String) -> Response {
    let executing = headers
        .get("x-amz-target")
        .is_some_and(|v| v.as_bytes().ends_with(b".ExecuteBudgetAction"));
    let (response, delay) = {
        let mut state = state.lock().expect("state");
        let delay = if executing { state.execute_delay.take() } else { None };
        (respond(&mut state, &headers, &body), delay)
    };
    // AWS acted, but its answer is late: the client may give up first.
    if let Some(delay) = delay {
        tokio::time::sleep(delay).await;
    }
    response
}

fn respond(state: &mut ActionsState, headers: &HeaderMap, body: &str) -> Response {
    state.next_id += 1;
    let request_id = format!("fake-{:08}-0000-4000-8000-000000000000", state.next_id);
    let target = headers.get("x-amz-target").and_then(|v| v.to_str().ok()).unwrap_or("");
    let Some(operation) = target.strip_prefix("AWSBudgetServiceGateway.") else {
        return error(
            &request_id,
            "UnknownOperationException",
            &format!("unknown target {target}"),
        );
    };
    state.calls.push(operation.to_string());
    if !headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.starts_with("AWS4-HMAC-SHA256 Credential="))
    {
        return error(&request_id, "AccessDeniedException", "Request is not signed");
    }
    if let Some((kind, message)) = state.fail_next.take() {
        return error(&request_id, &kind, &message);
    }
    if state.fail_next_of.as_ref().is_some_and(|(op, _, _)| op == operation)
        && let Some((_, kind, message)) = state.fail_next_of.take()
    {
        return error(&request_id, &kind, &message);
    }
    let Ok(request) = serde_json::from_str::<Value>(body) else {
        return error(&request_id, "InvalidParameterException", "body is not JSON");
    };
    if request["AccountId"].as_str().is_none_or(|a| a.len() != 12) {
        return error(&request_id, "InvalidParameterException", "AccountId must be 12 digits");
    }
    let budget = request["BudgetName"]
        .as_str()
        .or_else(|| request["Budget"]["BudgetName"].as_str())
        .unwrap_or("")
        .to_string();
    let ok = |body: Value| answer(&request_id, StatusCode::OK, body);
    match operation {
        "CreateBudget" => {
            if state.budgets.contains_key(&budget) {
                return error(
                    &request_id,
                    "DuplicateRecordException",
                    &format!("budget {budget} exists"),
                );
            }
            state.budgets.insert(budget, request["Budget"].clone());
            ok(json!({}))
        }
        "DescribeBudgets" => {
            let budgets: Vec<Value> = state.budgets.values().cloned().collect();
            ok(json!({ "Budgets": budgets }))
        }
        "DescribeBudgetActionsForBudget" => {
            if !state.budgets.contains_key(&budget) {
                return error(&request_id, "NotFoundException", &format!("budget {budget} not found"));
            }
            let actions: Vec<Value> = state
                .actions
                .iter()
                .filter(|a| a.budget == budget)
                .map(action_json)
                .collect();
            ok(json!({ "Actions": actions }))
        }
        "DeleteBudget" => {
            if state.budgets.remove(&budget).is_none() {
                return error(&request_id, "NotFoundException", &format!("budget {budget} not found"));
            }
            state.actions.retain(|a| a.budget != budget);
            ok(json!({}))
        }
        "CreateBudgetAction" => {
            if !state.budgets.contains_key(&budget) {
                return error(&request_id, "NotFoundException", &format!("budget {budget} not found"));
            }
            if let Some(why) = invalid_action(&request) {
                return error(&request_id, "InvalidParameterException", &why);
            }
            let id = format!("{:08x}-1111-4222-8333-{:012x}", state.next_id, state.actions.len());
            let mut action = FakeAction {
                budget: budget.clone(),
                id: id.clone(),
                request: request.clone(),
                status: String::new(),
                history: Vec::new(),
            };
            transition(&mut action, "STANDBY", "CREATE_ACTION");
            state.actions.push(action);
            ok(json!({ "AccountId": request["AccountId"], "BudgetName": budget, "ActionId": id }))
        }
        "DescribeBudgetAction" | "DescribeBudgetActionHistories" | "ExecuteBudgetAction" | "DeleteBudgetAction" => {
            let id = request["ActionId"].as_str().unwrap_or("").to_string();
            let Some(action) = state.actions.iter_mut().find(|a| a.budget == budget && a.id == id) else {
                return error(
                    &request_id,
                    "NotFoundException",
                    &format!("action {id} not found on {budget}"),
                );
            };
            match operation {
                "DescribeBudgetAction" => ok(json!({
                    "AccountId": request["AccountId"], "BudgetName": budget, "Action": action_json(action),
                })),
                "DescribeBudgetActionHistories" => {
                    let histories: Vec<Value> = action
                        .history
                        .iter()
                        .enumerate()
                        .map(|(n, (status, event))| {
                            // A failure's entry carries AWS's reason as its message. An
                            // execution of any type is an EXECUTE_ACTION event: AWS's EventType
                            // is SYSTEM, CREATE_ACTION, DELETE_ACTION, UPDATE_ACTION or
                            // EXECUTE_ACTION (<https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_budgets_ActionHistory.html>).
                            let kind = if event.ends_with("_BUDGET_ACTION") || status.ends_with("_FAILURE") {
                                "EXECUTE_ACTION"
                            } else {
                                event.as_str()
                            };
                            let message = if status.ends_with("_FAILURE") {
                                event.clone()
                            } else {
                                format!("{event} -> {status}")
                            };
                            json!({
                                "Timestamp": 1.7e9 + n as f64, "Status": status, "EventType": kind,
                                "ActionHistoryDetails": { "Message": message, "Action": action_json(action) },
                            })
                        })
                        .collect();
                    ok(json!({ "ActionHistories": histories }))
                }
                "DeleteBudgetAction" => {
                    let body = json!({ "AccountId": request["AccountId"], "BudgetName": budget, "Action": action_json(action) });
                    state.actions.retain(|a| a.id != id);
                    ok(body)
                }
                _ => {
                    let execution = request["ExecutionType"].as_str().unwrap_or("");
                    let next = match (execution, action.status.as_str()) {
                        ("APPROVE_BUDGET_ACTION", "PENDING") | ("RETRY_BUDGET_ACTION", "EXECUTION_FAILURE") => {
                            "EXECUTION_IN_PROGRESS"
                        }
                        ("REVERSE_BUDGET_ACTION", "EXECUTION_SUCCESS") => "REVERSE_IN_PROGRESS",
                        ("RESET_BUDGET_ACTION", "REVERSE_SUCCESS" | "EXECUTION_FAILURE" | "REVERSE_FAILURE") => {
                            "STANDBY"
                        }
                        (
                            "APPROVE_BUDGET_ACTION"
                            | "RETRY_BUDGET_ACTION"
                            | "REVERSE_BUDGET_ACTION"
                            | "RESET_BUDGET_ACTION",
                            status,
                        ) => {
                            let message = format!("{execution} is not allowed while the action is {status}");
                            return error(&request_id, "ResourceLockedException", &message);
                        }
                        _ => return error(&request_id, "InvalidParameterException", "unknown ExecutionType"),
                    };
                    transition(action, next, execution);
                    let body = json!({
                        "AccountId": request["AccountId"], "BudgetName": budget, "ActionId": id, "ExecutionType": execution,
                    });
                    ok(body)
                }
            }
        }
        other => error(
            &request_id,
            "InvalidActionException",
            &format!("{other} is not implemented by this fake"),
        ),
    }
}
