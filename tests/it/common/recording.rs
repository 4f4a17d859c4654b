//! The one recording front every test's AWS calls pass through: moto (`moto::start` puts a
//! forwarding front before it), every fake (`LoopbackFake::serve`), the AWS-faithful proxy
//! and the CloudWatch rpcv2 front. Each signed exchange, the request the SDK sent and the
//! answer it got, becomes a line of `target/aws-recording/it-<pid>.jsonl` (or the folder
//! `BURNRATE_AWS_RECORDING` names), which `scripts/aws-contract/check.py` holds against
//! botocore's service models after the suite (a step of `scripts/test.sh`).
//!
//! Only requests signed with SigV4 are AWS calls: moto's own `/moto-api` and a Prometheus or
//! health check pass unrecorded. The service is not guessed here; the checker reads it from
//! the signature's credential scope, as AWS does.

use std::io::Write;
use std::net::SocketAddr;
use std::sync::{Mutex, OnceLock};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine;

/// Bodies larger than this are not AWS answers burnrate asks for (the largest, a 100-item
/// DescribeInstances page, is far below it).
const BODY_LIMIT: usize = 32 * 1024 * 1024;

fn recording() -> &'static Mutex<Option<std::fs::File>> {
    static FILE: OnceLock<Mutex<Option<std::fs::File>>> = OnceLock::new();
    FILE.get_or_init(|| {
        let folder = std::env::var("BURNRATE_AWS_RECORDING")
            .unwrap_or_else(|_| format!("{}/target/aws-recording", env!("CARGO_MANIFEST_DIR")));
        let file = std::fs::create_dir_all(&folder).and_then(|()| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(format!("{folder}/it-{}.jsonl", std::process::id()))
        });
        // A recording that cannot be written is a failed contract step later (it finds no
        // exchange), not a failed test now.
        Mutex::new(file.ok())
    })
}

fn header_text(headers: &HeaderMap, name: &str) -> Option<String> {
    headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string)
}

fn record(
    front: &str,
    method: &str,
    uri: &str,
    headers: &HeaderMap,
    request: &[u8],
    status: u16,
    answer: (&HeaderMap, &[u8]),
) {
    let b64 = base64::engine::general_purpose::STANDARD;
    let line = serde_json::json!({
        "front": front,
        "test": std::thread::current().name().unwrap_or("?"),
        "method": method,
        "uri": uri,
        "authorization": header_text(headers, "authorization"),
        "target": header_text(headers, "x-amz-target"),
        "content_type": header_text(headers, "content-type"),
        "smithy_protocol": header_text(headers, "smithy-protocol"),
        "request": b64.encode(request),
        "status": status,
        "answer_content_type": header_text(answer.0, "content-type"),
        "answer": b64.encode(answer.1),
    });
    // One write of the whole line, so a process that ends mid-test leaves whole lines.
    let line = format!("{line}\n");
    let mut file = recording().lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(file) = file.as_mut() {
        let _ = file.write_all(line.as_bytes());
    }
}

/// Records every signed exchange through a router: the request as sent, the answer as given.
async fn recorded(State(front): State<&'static str>, request: Request, next: Next) -> Response {
    let signed = request
        .headers()
        .get("authorization")
        .is_some_and(|v| v.as_bytes().starts_with(b"AWS4-HMAC-SHA256"));
    if !signed {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, BODY_LIMIT).await else {
        return (StatusCode::PAYLOAD_TOO_LARGE, "request body over the recording limit").into_response();
    };
    let (method, uri, headers) = (parts.method.to_string(), parts.uri.to_string(), parts.headers.clone());
    let answer = next.run(Request::from_parts(parts, Body::from(body.clone()))).await;
    let (answer_parts, answer_body) = answer.into_parts();
    let Ok(answer_body) = axum::body::to_bytes(answer_body, BODY_LIMIT).await else {
        return (StatusCode::BAD_GATEWAY, "answer body over the recording limit").into_response();
    };
    record(
        front,
        &method,
        &uri,
        &headers,
        &body,
        answer_parts.status.as_u16(),
        (&answer_parts.headers, &answer_body),
    );
    Response::from_parts(answer_parts, Body::from(answer_body))
}

/// Serves an AWS fake, proxy or front on 127.0.0.1:0, recording what passes.
pub async fn serve(front: &'static str, app: axum::Router) -> SocketAddr {
    super::serve_on_loopback(app.layer(axum::middleware::from_fn_with_state(front, recorded))).await
}

/// A recording front that passes every request to `upstream` as it came; its endpoint.
pub async fn front(front: &'static str, upstream: &str) -> String {
    front_by_service(front, upstream, &[]).await
}

/// The SigV4 signing name in a request's credential scope (`…/us-east-1/ce/aws4_request`).
fn signing_name(headers: &axum::http::HeaderMap) -> Option<String> {
    let authorization = headers.get("authorization")?.to_str().ok()?;
    let scope = authorization.split("Credential=").nth(1)?.split(',').next()?;
    scope.split('/').nth(3).map(str::to_string)
}

/// A recording front that passes each request to the upstream its service's signing name
/// is routed to (`("ce", url)`), or to `default`: one endpoint for a whole SDK configuration.
pub async fn front_by_service(front: &'static str, default: &str, routes: &[(&str, &str)]) -> String {
    #[derive(Clone)]
    struct Upstream {
        default: String,
        routes: Vec<(String, String)>,
        client: reqwest::Client,
    }
    async fn pass(State(up): State<Upstream>, request: Request) -> Response {
        let (parts, body) = request.into_parts();
        let Ok(body): Result<Bytes, _> = axum::body::to_bytes(body, BODY_LIMIT).await else {
            return (StatusCode::PAYLOAD_TOO_LARGE, "request body over the front's limit").into_response();
        };
        let service = signing_name(&parts.headers);
        let url = up
            .routes
            .iter()
            .find(|(name, _)| Some(name) == service.as_ref())
            .map_or(&up.default, |(_, url)| url);
        let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
        let mut call = up.client.request(parts.method, format!("{url}{path}")).body(body);
        for (name, value) in parts
            .headers
            .iter()
            .filter(|(n, _)| *n != "host" && *n != "content-length")
        {
            call = call.header(name, value);
        }
        let answer = match call.send().await {
            Ok(answer) => answer,
            Err(err) => return (StatusCode::BAD_GATEWAY, err.to_string()).into_response(),
        };
        let status = answer.status();
        let headers = answer.headers().clone();
        let body = answer.bytes().await.unwrap_or_default();
        let mut response = Response::new(Body::from(body));
        *response.status_mut() = status;
        for (name, value) in headers
            .iter()
            .filter(|(n, _)| *n != "transfer-encoding" && *n != "content-length")
        {
            response.headers_mut().append(name, value.clone());
        }
        response
    }
    let trim = |url: &str| url.trim_end_matches('/').to_string();
    let upstream = Upstream {
        default: trim(default),
        routes: routes.iter().map(|(name, url)| (name.to_string(), trim(url))).collect(),
        client: reqwest::Client::new(),
    };
    let app = axum::Router::new().fallback(pass).with_state(upstream);
    format!("http://{}", serve(front, app).await)
}
