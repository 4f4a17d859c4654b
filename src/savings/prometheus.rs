//! GPU utilisation from the NVIDIA DCGM exporter, read through Prometheus's
//! `/api/v1/query_range` in chunks under its 11,000-points-per-series limit. Series are
//! grouped by the project label (`BURNRATE_PROMETHEUS_PROJECT_LABEL`); series without it
//! are grouped by `Hostname` as unmapped hosts.

use std::collections::BTreeMap;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;

use crate::config::PrometheusSettings;

/// Seconds between samples over the window: five minutes keeps a month to 8,640 points per
/// GPU and metric (memory grows with GPUs × window ÷ step).
pub const STEP_SECONDS: i64 = 300;
/// Seconds between samples of the last half hour, which decides whether a GPU is idle now.
pub const RECENT_STEP_SECONDS: i64 = 60;
/// The span that decides "idle now".
pub const RECENT_SECONDS: i64 = 30 * 60;
/// Points per series per request: under Prometheus's limit of 11,000.
pub const MAX_POINTS: i64 = 10_000;

pub const GPU_UTIL: &str = "DCGM_FI_DEV_GPU_UTIL";
pub const ENGINE_ACTIVE: &str = "DCGM_FI_PROF_GR_ENGINE_ACTIVE";
pub const FB_USED: &str = "DCGM_FI_DEV_FB_USED";
pub const FB_FREE: &str = "DCGM_FI_DEV_FB_FREE";

/// One GPU: its project (or none), host and index.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Gpu {
    pub project: Option<String>,
    pub host: String,
    pub gpu: String,
}

impl Gpu {
    /// The group the GPU counts in: its project, or `host:<Hostname>` when unlabelled.
    pub fn group(&self) -> String {
        match &self.project {
            Some(project) => project.clone(),
            None => format!("host:{}", self.host),
        }
    }
}

/// Samples per GPU, (unix seconds, value), in time order.
pub type Series = BTreeMap<Gpu, Vec<(i64, Decimal)>>;

#[derive(Debug, thiserror::Error)]
pub enum PrometheusError {
    #[error("Prometheus could not be reached: {0}")]
    Unreachable(String),
    #[error("Prometheus answered HTTP {status}: {message}")]
    Refused { status: u16, message: String },
    #[error("Prometheus's answer could not be read: {0}")]
    Malformed(String),
}

/// The four DCGM metrics over `[start, end]` every five minutes, and utilisation over the
/// last half hour every minute.
#[derive(Debug, Default)]
pub struct Dcgm {
    pub util: Series,
    pub engine_active: Series,
    pub fb_used: Series,
    pub fb_free: Series,
    pub recent_util: Series,
    pub recent_engine_active: Series,
}

pub async fn read_dcgm(
    settings: &PrometheusSettings,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
) -> Result<Dcgm, PrometheusError> {
    let client = reqwest::Client::builder()
        .timeout(settings.timeout)
        .connect_timeout(settings.timeout.min(std::time::Duration::from_secs(10)))
        .build()
        .map_err(|e| PrometheusError::Unreachable(e.to_string()))?;
    let (start, end) = (start.timestamp(), end.timestamp());
    let recent = end - RECENT_SECONDS;
    let range = |metric| query_range(&client, settings, metric, (start, end), STEP_SECONDS);
    Ok(Dcgm {
        util: range(GPU_UTIL).await?,
        engine_active: range(ENGINE_ACTIVE).await?,
        fb_used: range(FB_USED).await?,
        fb_free: range(FB_FREE).await?,
        recent_util: query_range(&client, settings, GPU_UTIL, (recent, end), RECENT_STEP_SECONDS).await?,
        recent_engine_active: query_range(&client, settings, ENGINE_ACTIVE, (recent, end), RECENT_STEP_SECONDS).await?,
    })
}

/// The `[start, end]` ranges, each at most [`MAX_POINTS`] samples `step` seconds apart.
pub fn chunks(start: i64, end: i64, step: i64) -> Vec<(i64, i64)> {
    let span = step * (MAX_POINTS - 1);
    let mut out = Vec::new();
    let mut from = start;
    while from <= end {
        let to = (from + span).min(end);
        out.push((from, to));
        from = to + step;
    }
    out
}

async fn query_range(
    client: &reqwest::Client,
    settings: &PrometheusSettings,
    metric: &str,
    (start, end): (i64, i64),
    step: i64,
) -> Result<Series, PrometheusError> {
    let label = &settings.project_label;
    // One series per GPU even when two exporters scrape the same device.
    let query = format!("max by ({label}, Hostname, gpu) ({metric})");
    let mut series = Series::new();
    for (from, to) in chunks(start, end, step) {
        let response = client
            .get(format!("{}/api/v1/query_range", settings.url))
            .query(&[
                ("query", query.as_str()),
                ("start", &from.to_string()),
                ("end", &to.to_string()),
                ("step", &step.to_string()),
            ])
            .send()
            .await
            .map_err(|e| PrometheusError::Unreachable(e.without_url().to_string()))?;
        let status = response.status().as_u16();
        let body = response
            .bytes()
            .await
            .map_err(|e| PrometheusError::Unreachable(e.without_url().to_string()))?;
        parse_matrix(&body, label, status, &mut series)?;
    }
    Ok(series)
}

/// Adds a query_range answer's samples to `series`.
pub fn parse_matrix(body: &[u8], label: &str, status: u16, series: &mut Series) -> Result<(), PrometheusError> {
    let json: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| PrometheusError::Malformed(format!("not JSON ({e})")))?;
    if json["status"] != "success" {
        let message = json["error"]
            .as_str()
            .unwrap_or("no error message")
            .chars()
            .take(300)
            .collect();
        return Err(PrometheusError::Refused { status, message });
    }
    let results = json["data"]["result"]
        .as_array()
        .ok_or_else(|| PrometheusError::Malformed("data.result is not a list".into()))?;
    for result in results {
        let metric = &result["metric"];
        let text = |name: &str| metric[name].as_str().map(str::to_string);
        let gpu = Gpu {
            project: text(label).filter(|p| !p.is_empty()),
            host: text("Hostname").unwrap_or_default(),
            gpu: text("gpu").unwrap_or_default(),
        };
        let values = result["values"]
            .as_array()
            .ok_or_else(|| PrometheusError::Malformed("a series has no values".into()))?;
        let samples = series.entry(gpu).or_default();
        for pair in values {
            let time = pair[0].as_f64().map(|t| t as i64);
            // NaN and ±Inf are gaps, not readings.
            let value = pair[1].as_str().and_then(|v| Decimal::from_str(v).ok());
            if let (Some(time), Some(value)) = (time, value) {
                samples.push((time, value));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_month_is_read_in_chunks_each_under_the_point_limit() {
        let start = 1_700_000_000;
        let end = start + 30 * 86_400;
        assert_eq!(
            chunks(start, end, STEP_SECONDS).len(),
            1,
            "8,641 points at five minutes"
        );
        let minute = RECENT_STEP_SECONDS;
        let parts = chunks(start, end, minute);
        assert_eq!(parts.len(), 5);
        assert_eq!(parts[0].0, start);
        assert_eq!(parts.last().map(|p| p.1), Some(end));
        for (from, to) in &parts {
            let points = (to - from) / minute + 1;
            assert!(points <= MAX_POINTS, "{from}..{to}: {points} points");
        }
        for pair in parts.windows(2) {
            assert_eq!(pair[1].0, pair[0].1 + minute, "no sample is read twice or skipped");
        }
    }

    #[test]
    fn answers_are_read_and_errors_named() {
        let mut series = Series::new();
        let body = br#"{"status":"success","data":{"resultType":"matrix","result":[
            {"metric":{"project":"chat","Hostname":"h1","gpu":"0"},"values":[[1700000000,"12"],[1700000060,"NaN"]]},
            {"metric":{"Hostname":"h2","gpu":"1"},"values":[[1700000000,"0"]]}]}}"#;
        parse_matrix(body, "project", 200, &mut series).expect("parsed");
        let chat = Gpu {
            project: Some("chat".into()),
            host: "h1".into(),
            gpu: "0".into(),
        };
        assert_eq!(series[&chat], vec![(1_700_000_000, Decimal::from(12))]);
        assert!(series.keys().any(|g| g.group() == "host:h2"));
        let err = parse_matrix(
            br#"{"status":"error","errorType":"bad_data","error":"exceeded maximum resolution of 11,000 points per timeseries"}"#,
            "project",
            400,
            &mut series,
        );
        assert!(matches!(err, Err(PrometheusError::Refused { status: 400, message }) if message.contains("11,000")));
        assert!(matches!(
            parse_matrix(b"<html>", "project", 502, &mut series),
            Err(PrometheusError::Malformed(_))
        ));
    }
}
