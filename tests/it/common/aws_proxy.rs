//! A loopback proxy in front of moto that brings real AWS's faults to the real SDK:
//! throttling on every other call it is told to throttle, and a `kill -9` of a burnrate
//! process right after AWS has carried out a call, before its answer reaches burnrate. Where
//! moto answers unlike AWS, a test names AWS's documented answer (`refuse`, `rewrite`) and
//! cites its source.
//!
//! The errors are AWS's own, as documented: EC2 answers throttling with HTTP 503 and the
//! code `RequestLimitExceeded` in its XML error response
//! (<https://docs.aws.amazon.com/AWSEC2/latest/APIReference/throttling.html>,
//! <https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html>); SageMaker
//! (awsJson1_1) with HTTP 400 and `__type` `ThrottlingException`
//! (<https://docs.aws.amazon.com/sagemaker/latest/APIReference/CommonErrors.html>).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

#[derive(Debug, Default)]
pub struct ProxyState {
    /// Every call forwarded to moto: its action (EC2 `Action=`, SageMaker target) and body.
    pub forwarded: Vec<(String, String)>,
    /// Calls whose action is listed here are throttled every other time (each action
    /// alternating on its own: its first call is refused, its second served, …).
    pub throttle: Vec<String>,
    throttle_toggle: std::collections::HashMap<String, bool>,
    /// How many calls were answered with throttling.
    pub throttled: usize,
    /// After forwarding the first call of this action, SIGKILL this process before answering.
    pub kill_after: Option<(String, u32)>,
    /// Where moto is not faithful, AWS's documented answer instead: a call of this action
    /// naming this text in its body is refused with this EC2 error code and message.
    pub refuse: Vec<Refusal>,
    /// Where moto is not faithful, AWS's documented field instead: in an answer to this
    /// action, the first `from` after `after` becomes `to`.
    pub rewrite: Vec<Rewrite>,
    /// After forwarding the first call of this action (AWS has acted), tell `reached` and
    /// hold the answer until `release` is told: a decision can then commit between two calls.
    pub hold_after: Option<Hold>,
    /// Where moto answers a JSON protocol unlike AWS: each answer to this action (and its
    /// request body) is reshaped by the function, which cites AWS's page.
    pub reshape: Vec<(String, Reshape)>,
    /// AWS's asynchronous states, which moto skips. EC2: `StopInstances` answers `stopping` (64)
    /// and `StartInstances` `pending` (0), as AWS's examples show
    /// (<https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_StopInstances.html>,
    /// <https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_StartInstances.html>), and
    /// `DescribeInstances` shows those instances so until [`AwsProxy::settle`]: "the
    /// instance state changes to stopping, and then stopped"
    /// (<https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-instance-lifecycle.html>).
    /// SageMaker notebooks: after `StopNotebookInstance` `DescribeNotebookInstance` says
    /// `Stopping`, after `StartNotebookInstance` `Pending`, until settled (the status values,
    /// <https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_DescribeNotebookInstance.html>).
    pub transitions: bool,
    /// The rewrites that show instances in transition, kept apart from the tests' own.
    in_transition: Vec<Rewrite>,
    /// Notebooks in transition and the status AWS shows meanwhile.
    notebooks_in_transition: std::collections::HashMap<String, &'static str>,
}

/// Notes a notebook's stop or start; its describes show the intermediate status until settled.
fn begin_notebook_transition(state: &mut ProxyState, action: &str, body: &str) {
    let shown = match action {
        "StopNotebookInstance" => "Stopping",
        "StartNotebookInstance" => "Pending",
        _ => return,
    };
    let name = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v["NotebookInstanceName"].as_str().map(str::to_string));
    if let Some(name) = name {
        state.notebooks_in_transition.insert(name, shown);
    }
}

/// The `InstanceId.N` values of an EC2 query-protocol request body.
fn instance_ids(body: &str) -> Vec<String> {
    body.split('&')
        .filter_map(|pair| pair.split_once('='))
        .filter(|(key, _)| key.starts_with("InstanceId."))
        .map(|(_, value)| value.to_string())
        .collect()
}

/// Shows the instances a stop or start names in their intermediate state, in its answer and
/// in every `DescribeInstances` until settled; a start replaces a stop's and vice versa.
fn begin_transitions(state: &mut ProxyState, action: &str, body: &str) {
    let (done, shown) = match action {
        "StopInstances" => (
            ["<code>80</code>", "<name>stopped</name>"],
            ["<code>64</code>", "<name>stopping</name>"],
        ),
        "StartInstances" => (
            ["<code>16</code>", "<name>running</name>"],
            ["<code>0</code>", "<name>pending</name>"],
        ),
        _ => return,
    };
    for id in instance_ids(body) {
        let marker = format!("<instanceId>{id}</instanceId>");
        state.in_transition.retain(|r| r.in_item_with != marker);
        for described in [action, "DescribeInstances"] {
            for (from, to) in done.iter().zip(shown) {
                state.in_transition.push(Rewrite {
                    action: described.to_string(),
                    in_item_with: marker.clone(),
                    from: from.to_string(),
                    to: to.to_string(),
                });
            }
        }
    }
}

/// Changes a JSON answer, given the request's body, as AWS documents the answer.
pub type Reshape = fn(&str, &mut serde_json::Value);

#[derive(Debug, Clone)]
pub struct Hold {
    pub action: String,
    pub reached: Arc<tokio::sync::Notify>,
    pub release: Arc<tokio::sync::Notify>,
}

#[derive(Debug, Clone)]
pub struct Refusal {
    pub action: String,
    pub naming: String,
    pub code: String,
    pub message: String,
}

#[derive(Debug, Clone)]
pub struct Rewrite {
    pub action: String,
    /// Text that marks the XML `<item>` to change (an `<instanceId>…</instanceId>`).
    pub in_item_with: String,
    pub from: String,
    pub to: String,
}

/// EC2's XML error answer (<https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html>).
fn ec2_error(status: StatusCode, code: &str, message: &str) -> Response {
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response><Errors><Error><Code>{code}</Code>\
         <Message>{message}</Message></Error></Errors><RequestID>proxy-refusal</RequestID></Response>"
    );
    (status, [("content-type", "text/xml")], body).into_response()
}

fn status_ok(answer: &reqwest::Response) -> bool {
    answer.status().is_success()
}

/// The `<item>` and `</item>` tags of an XML body, in order: (offset, opens).
fn item_tags(body: &str) -> impl Iterator<Item = (usize, bool)> + '_ {
    body.match_indices('<').filter_map(|(i, _)| {
        let rest = &body[i..];
        if rest.starts_with("<item>") {
            Some((i, true))
        } else if rest.starts_with("</item>") {
            Some((i, false))
        } else {
            None
        }
    })
}

/// The bounds of the innermost `<item>…</item>` around `at`.
fn item_around(body: &str, at: usize) -> Option<(usize, usize)> {
    let mut open: Vec<usize> = Vec::new();
    // The innermost item open at `at`: its start, and how many items are open there.
    let mut around: Option<(usize, usize)> = None;
    for (i, opens) in item_tags(body) {
        if around.is_none() && i >= at {
            around = Some((*open.last()?, open.len()));
        }
        if opens {
            open.push(i);
            continue;
        }
        if let Some((start, depth)) = around
            && open.len() == depth
        {
            return Some((start, i + "</item>".len()));
        }
        open.pop();
    }
    None
}

fn rewritten(body: String, rewrites: &[Rewrite]) -> String {
    let mut body = body;
    for r in rewrites {
        let Some((start, end)) = body.find(&r.in_item_with).and_then(|at| item_around(&body, at)) else {
            continue;
        };
        if let Some(at) = body[start..end].find(&r.from) {
            body.replace_range(start + at..start + at + r.from.len(), &r.to);
        }
    }
    body
}

#[derive(Clone)]
pub struct AwsProxy {
    pub addr: SocketAddr,
    pub state: Arc<Mutex<ProxyState>>,
    upstream: String,
}

struct Shared {
    state: Arc<Mutex<ProxyState>>,
    upstream: String,
    client: reqwest::Client,
}

impl AwsProxy {
    pub async fn start(upstream: &str) -> AwsProxy {
        let state = Arc::new(Mutex::new(ProxyState::default()));
        let shared = Arc::new(Shared {
            state: state.clone(),
            upstream: upstream.to_string(),
            client: reqwest::Client::new(),
        });
        let app = axum::Router::new().fallback(forward).with_state(shared);
        let addr = super::recording::serve("proxy", app).await;
        AwsProxy {
            addr,
            state,
            upstream: upstream.to_string(),
        }
    }

    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn upstream(&self) -> &str {
        &self.upstream
    }

    pub fn with<T>(&self, f: impl FnOnce(&mut ProxyState) -> T) -> T {
        f(&mut self.state.lock().expect("proxy state"))
    }

    /// AWS finishes every stop and start under way: instances and notebooks show their
    /// final state.
    pub fn settle(&self) {
        self.with(|s| {
            s.in_transition.clear();
            s.notebooks_in_transition.clear();
        });
    }

    /// Holds the answer to the next call of `action` (AWS has acted): returns `reached`,
    /// told when it is held, and `release`, to tell to let it go.
    pub fn hold(&self, action: &str) -> (Arc<tokio::sync::Notify>, Arc<tokio::sync::Notify>) {
        let (reached, release) = (
            Arc::new(tokio::sync::Notify::new()),
            Arc::new(tokio::sync::Notify::new()),
        );
        self.with(|s| {
            s.hold_after = Some(Hold {
                action: action.to_string(),
                reached: reached.clone(),
                release: release.clone(),
            })
        });
        (reached, release)
    }

    /// How many forwarded calls of `action` named `needle` in their body.
    pub fn calls_naming(&self, action: &str, needle: &str) -> usize {
        self.with(|s| {
            s.forwarded
                .iter()
                .filter(|(a, body)| a == action && body.contains(needle))
                .count()
        })
    }
}

/// The call's action: EC2's `Action=` form field, or SageMaker's `X-Amz-Target` operation.
fn action_of(headers: &HeaderMap, body: &str) -> String {
    if let Some(target) = headers.get("x-amz-target").and_then(|v| v.to_str().ok()) {
        return target.rsplit('.').next().unwrap_or(target).to_string();
    }
    body.split('&')
        .find_map(|pair| pair.strip_prefix("Action="))
        .unwrap_or_default()
        .to_string()
}

/// AWS's throttling answer for the service `target` names: the Resource Groups Tagging API
/// spells it `ThrottledException`
/// (<https://docs.aws.amazon.com/resourcegroupstagging/latest/APIReference/API_GetResources.html>),
/// SageMaker `ThrottlingException`, EC2 `RequestLimitExceeded`.
fn throttled(target: Option<&str>) -> Response {
    if let Some(target) = target {
        let body = if target.starts_with("ResourceGroupsTaggingAPI_20170126.") {
            r#"{"__type":"ThrottledException","Message":"Rate exceeded"}"#
        } else {
            r#"{"__type":"ThrottlingException","message":"Rate exceeded"}"#
        };
        (
            StatusCode::BAD_REQUEST,
            [
                ("content-type", "application/x-amz-json-1.1"),
                ("x-amzn-requestid", "proxy-throttle"),
            ],
            body,
        )
            .into_response()
    } else {
        ec2_error(
            StatusCode::SERVICE_UNAVAILABLE,
            "RequestLimitExceeded",
            "Request limit exceeded.",
        )
    }
}

async fn forward(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let text = String::from_utf8_lossy(&body).into_owned();
    let action = action_of(&headers, &text);
    let throttle = {
        let mut state = shared.state.lock().expect("proxy state");
        if state.throttle.contains(&action) {
            let toggle = state.throttle_toggle.entry(action.clone()).or_insert(false);
            *toggle = !*toggle;
            let refuse = *toggle;
            state.throttled += usize::from(refuse);
            refuse
        } else {
            false
        }
    };
    if throttle {
        return throttled(headers.get("x-amz-target").and_then(|v| v.to_str().ok()));
    }
    let refusal = shared
        .state
        .lock()
        .expect("proxy state")
        .refuse
        .iter()
        .find(|r| r.action == action && text.contains(&r.naming))
        .cloned();
    if let Some(r) = refusal {
        return ec2_error(StatusCode::BAD_REQUEST, &r.code, &r.message);
    }
    let mut request = shared
        .client
        .request(
            method,
            format!(
                "{}{}",
                shared.upstream,
                uri.path_and_query().map_or("/", |p| p.as_str())
            ),
        )
        .body(body);
    for (name, value) in headers.iter().filter(|(n, _)| *n != "host" && *n != "content-length") {
        request = request.header(name, value);
    }
    let answer = match request.send().await {
        Ok(answer) => answer,
        Err(err) => return (StatusCode::BAD_GATEWAY, err.to_string()).into_response(),
    };
    let (kill, rewrites, hold, reshapes, notebooks) = {
        let mut state = shared.state.lock().expect("proxy state");
        if state.transitions && status_ok(&answer) {
            begin_transitions(&mut state, &action, &text);
            begin_notebook_transition(&mut state, &action, &text);
        }
        let rewrites: Vec<Rewrite> = state
            .rewrite
            .iter()
            .chain(&state.in_transition)
            .filter(|r| r.action == action)
            .cloned()
            .collect();
        state.forwarded.push((action.clone(), text.clone()));
        let kill = match &state.kill_after {
            Some((after, pid)) if *after == action => {
                let pid = *pid;
                state.kill_after = None;
                Some(pid)
            }
            _ => None,
        };
        let hold = match &state.hold_after {
            Some(h) if h.action == action => state.hold_after.take(),
            _ => None,
        };
        let reshapes: Vec<Reshape> = state
            .reshape
            .iter()
            .filter(|(a, _)| *a == action)
            .map(|(_, f)| *f)
            .collect();
        let notebooks = match action.as_str() {
            "DescribeNotebookInstance" => state.notebooks_in_transition.clone(),
            _ => Default::default(),
        };
        (kill, rewrites, hold, reshapes, notebooks)
    };
    if let Some(hold) = hold {
        hold.reached.notify_one();
        hold.release.notified().await;
    }
    if let Some(pid) = kill {
        // AWS has acted; the caller dies before it hears so.
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status();
        return (StatusCode::SERVICE_UNAVAILABLE, "killed").into_response();
    }
    let status = answer.status();
    let mut response = Response::builder().status(status.as_u16());
    for (name, value) in answer.headers() {
        if name != "content-length" && name != "transfer-encoding" {
            response = response.header(name.as_str(), value.as_bytes());
        }
    }
    let bytes = answer.bytes().await.unwrap_or_default();
    let bytes = if rewrites.is_empty() {
        bytes
    } else {
        Bytes::from(rewritten(String::from_utf8_lossy(&bytes).into_owned(), &rewrites))
    };
    let bytes = match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Ok(mut json) if !reshapes.is_empty() && status.is_success() => {
            for reshape in reshapes {
                reshape(&text, &mut json);
            }
            Bytes::from(json.to_string())
        }
        _ => bytes,
    };
    let bytes = match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Ok(mut json) if !notebooks.is_empty() && status.is_success() => {
            let shown = json["NotebookInstanceName"]
                .as_str()
                .and_then(|n| notebooks.get(n))
                .copied();
            if let Some(shown) = shown {
                json["NotebookInstanceStatus"] = serde_json::json!(shown);
            }
            Bytes::from(json.to_string())
        }
        _ => bytes,
    };
    response
        .body(axum::body::Body::from(bytes))
        .unwrap_or_else(|_| StatusCode::BAD_GATEWAY.into_response())
}
