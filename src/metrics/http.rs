//! Request latency as a Prometheus histogram, kept in this process. Each series is one
//! (method, route, status class): the route is the router's matched template (`/budgets/{id}`,
//! never the path asked for) or `unmatched`, the method one of the standard nine or `other`,
//! and the status `2xx`…`5xx`. So the series are bounded by the routes the binary has, whatever
//! a client sends.

use std::collections::BTreeMap;
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;

use super::text::Exposition;

/// Upper bounds in seconds: a page in milliseconds, an export or a slow query in seconds.
const BUCKETS: [f64; 12] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

#[derive(Debug, Clone, Default)]
struct Histogram {
    /// Requests at or under each bound (not yet cumulative).
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

type Key = (&'static str, String, &'static str);

static REQUESTS: LazyLock<Mutex<BTreeMap<Key, Histogram>>> = LazyLock::new(Default::default);

fn method(method: &http::Method) -> &'static str {
    match method.as_str() {
        "GET" => "GET",
        "HEAD" => "HEAD",
        "POST" => "POST",
        "PUT" => "PUT",
        "PATCH" => "PATCH",
        "DELETE" => "DELETE",
        "OPTIONS" => "OPTIONS",
        "CONNECT" => "CONNECT",
        "TRACE" => "TRACE",
        _ => "other",
    }
}

fn class(status: http::StatusCode) -> &'static str {
    match status.as_u16() {
        100..=199 => "1xx",
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        _ => "5xx",
    }
}

/// Adds one request.
fn observe(key: Key, elapsed: Duration) {
    let seconds = elapsed.as_secs_f64();
    // A poisoned lock only means another request panicked mid-update: the counts stand.
    let mut requests = REQUESTS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let histogram = requests.entry(key).or_default();
    if let Some(i) = BUCKETS.iter().position(|bound| seconds <= *bound) {
        histogram.counts[i] += 1;
    }
    histogram.count += 1;
    histogram.sum += seconds;
}

/// The middleware: times every request the router matched (or did not).
pub async fn record(request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |m| m.as_str().to_string());
    let method = method(request.method());
    let started = Instant::now();
    let response = next.run(request).await;
    observe((method, route, class(response.status())), started.elapsed());
    response
}

/// `burnrate_http_request_duration_seconds`, cumulative buckets as the format wants.
pub fn write(out: &mut Exposition) {
    const NAME: &str = "burnrate_http_request_duration_seconds";
    out.family(
        NAME,
        "histogram",
        "Time from a request's arrival to its response's headers, by method, matched route and status class.",
    );
    let requests = REQUESTS.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone();
    for ((method, route, status), histogram) in &requests {
        let labels = [("method", *method), ("route", route.as_str()), ("status", *status)];
        let mut cumulative = 0;
        for (bound, count) in BUCKETS.iter().zip(histogram.counts) {
            cumulative += count;
            let le = bound.to_string();
            out.sample(
                &format!("{NAME}_bucket"),
                &[&labels[..], &[("le", le.as_str())]].concat(),
                cumulative,
            );
        }
        out.sample(
            &format!("{NAME}_bucket"),
            &[&labels[..], &[("le", "+Inf")]].concat(),
            histogram.count,
        );
        out.sample(&format!("{NAME}_sum"), &labels, histogram.sum);
        out.sample(&format!("{NAME}_count"), &labels, histogram.count);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_cumulative_and_end_with_every_request() {
        let key = ("GET", "/test/{id}".to_string(), "2xx");
        observe(key.clone(), Duration::from_millis(3));
        observe(key.clone(), Duration::from_millis(300));
        observe(key, Duration::from_secs(60));
        let mut out = Exposition::default();
        write(&mut out);
        let text = out.into_text();
        let line = |le: &str| {
            format!(
                "burnrate_http_request_duration_seconds_bucket{{method=\"GET\",route=\"/test/{{id}}\",status=\"2xx\",le=\"{le}\"}}"
            )
        };
        assert!(text.contains(&format!("{} 1\n", line("0.005"))), "{text}");
        assert!(text.contains(&format!("{} 2\n", line("0.5"))), "{text}");
        assert!(
            text.contains(&format!("{} 2\n", line("30"))),
            "over every bound: {text}"
        );
        assert!(text.contains(&format!("{} 3\n", line("+Inf"))), "{text}");
        assert_eq!(class(http::StatusCode::IM_A_TEAPOT), "4xx");
        assert_eq!(method(&http::Method::from_bytes(b"BREW").expect("method")), "other");
    }
}
