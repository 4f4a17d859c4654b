//! GPU utilisation from the NVIDIA DCGM exporter, read through Prometheus's HTTP API.
//!
//! - Each five-minute step is the **mean of the samples inside it** (`avg_over_time(m[5m])`):
//!   a point sample of bursty serving is either 0 or about 99 %, so only the step mean says
//!   how busy the GPU was (docs/SAVINGS.md gives the measured figures).
//! - The activity series takes, per GPU and step, the best counter it publishes: SM activity,
//!   else graphics-engine activity, else `GPU_UTIL`.
//! - Whole-window means of every counter are computed by Prometheus (`avg_over_time` over the
//!   window), so the raw series of counters that only inform are never transferred.
//! - Range reads go one day per request (288 steps), so an answer for hundreds of GPUs stays
//!   a few megabytes; steps are stored as `f32` per GPU (utilisation, not money).
//!
//! Series are grouped by the project label (`BURNRATE_PROMETHEUS_PROJECT_LABEL`); series
//! without it are grouped by `Hostname` as unmapped hosts.

use std::collections::HashMap;

use serde::Deserialize;

use crate::config::PrometheusSettings;
use crate::savings::gpu_series::{Gpu, GpuSeries, Grid, Means};

/// Seconds per step: five minutes keeps a month at 8,640 steps per GPU.
pub const STEP_SECONDS: i64 = 300;
/// Steps per range request: one day.
pub const STEPS_PER_REQUEST: i64 = 288;

pub const GPU_UTIL: &str = "DCGM_FI_DEV_GPU_UTIL";
pub const ENGINE_ACTIVE: &str = "DCGM_FI_PROF_GR_ENGINE_ACTIVE";
pub const SM_ACTIVE: &str = "DCGM_FI_PROF_SM_ACTIVE";
pub const SM_OCCUPANCY: &str = "DCGM_FI_PROF_SM_OCCUPANCY";
pub const TENSOR_ACTIVE: &str = "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE";
pub const FB_USED: &str = "DCGM_FI_DEV_FB_USED";
pub const FB_FREE: &str = "DCGM_FI_DEV_FB_FREE";

#[derive(Debug, thiserror::Error)]
pub enum PrometheusError {
    #[error("Prometheus could not be reached: {0}")]
    Unreachable(String),
    #[error("Prometheus answered HTTP {status}: {message}")]
    Refused { status: u16, message: String },
    #[error("Prometheus's answer could not be read: {0}")]
    Malformed(String),
}

/// The PromQL for one GPU's value of `inner`, one series per GPU even when two exporters
/// scrape the same device.
fn per_gpu(label: &str, inner: &str) -> String {
    format!("max by ({label}, Hostname, gpu) ({inner})")
}

/// Where an instant query's value goes in a GPU's [`Means`].
type MeanField = fn(&mut Means) -> &mut Option<f64>;

/// Step means of the best activity counter, in percent.
pub fn activity_query(label: &str) -> String {
    let step = format!("[{STEP_SECONDS}s]");
    format!(
        "({} * 100) or ({} * 100) or {}",
        per_gpu(label, &format!("avg_over_time({SM_ACTIVE}{step})")),
        per_gpu(label, &format!("avg_over_time({ENGINE_ACTIVE}{step})")),
        per_gpu(label, &format!("avg_over_time({GPU_UTIL}{step})")),
    )
}

/// Step means of the time any kernel ran, in percent.
pub fn kernel_query(label: &str) -> String {
    let step = format!("[{STEP_SECONDS}s]");
    format!(
        "({} * 100) or {}",
        per_gpu(label, &format!("avg_over_time({ENGINE_ACTIVE}{step})")),
        per_gpu(label, &format!("avg_over_time({GPU_UTIL}{step})")),
    )
}

/// Which per-step series a range answer fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Steps {
    Activity,
    Kernel,
    Memory,
}

/// What a DCGM GPU's peak memory is: `max_over_time` reads every sample in the window.
pub const PEAK_MEMORY_SOURCE: &str = "DCGM FB_USED, the largest sample (100th percentile)";

/// Step means of memory used ÷ the card's memory.
pub fn memory_query(label: &str) -> String {
    let step = format!("[{STEP_SECONDS}s]");
    per_gpu(
        label,
        &format!("avg_over_time({FB_USED}{step}) / (avg_over_time({FB_USED}{step}) + avg_over_time({FB_FREE}{step}))"),
    )
}

/// Reads every GPU's step means over `grid`.
pub async fn read_dcgm(settings: &PrometheusSettings, grid: Grid) -> Result<GpuSeries, PrometheusError> {
    let client = reqwest::Client::builder()
        .timeout(settings.timeout)
        .connect_timeout(settings.timeout.min(std::time::Duration::from_secs(10)))
        .build()
        .map_err(|e| PrometheusError::Unreachable(e.to_string()))?;
    let (start, end) = (grid.start, grid.end());
    let label = settings.project_label.as_str();
    let mut dcgm = GpuSeries::new(grid);
    let window = format!("[{}s]", end - start + STEP_SECONDS);
    let mean = |metric: &str, scale: &str| per_gpu(label, &format!("avg_over_time({metric}{window}){scale}"));
    let means: [(String, MeanField); 7] = [
        (mean(GPU_UTIL, ""), |m| &mut m.gpu_util),
        (mean(ENGINE_ACTIVE, " * 100"), |m| &mut m.engine_active),
        (mean(SM_ACTIVE, " * 100"), |m| &mut m.sm_active),
        (mean(TENSOR_ACTIVE, " * 100"), |m| &mut m.tensor_active),
        (mean(SM_OCCUPANCY, " * 100"), |m| &mut m.sm_occupancy),
        (per_gpu(label, &format!("max_over_time({FB_USED}{window})")), |m| {
            &mut m.peak_memory_used_mib
        }),
        (
            per_gpu(
                label,
                &format!("last_over_time({FB_USED}{window}) + last_over_time({FB_FREE}{window})"),
            ),
            |m| &mut m.memory_total_mib,
        ),
    ];
    for (query, field) in means {
        let answer = get(
            &client,
            settings,
            "query",
            &[("query", query), ("time", end.to_string())],
        )
        .await?;
        for (gpu, value) in parse_vector(&answer, label)? {
            let reading = dcgm.gpus.entry(gpu).or_default();
            *field(&mut reading.means) = Some(value);
        }
    }
    for reading in dcgm
        .gpus
        .values_mut()
        .filter(|r| r.means.peak_memory_used_mib.is_some())
    {
        reading.means.peak_memory_source = Some(PEAK_MEMORY_SOURCE);
    }
    let series = [
        (activity_query(label), Steps::Activity),
        (kernel_query(label), Steps::Kernel),
        (memory_query(label), Steps::Memory),
    ];
    for (query, which) in series {
        for (from, to) in chunks(start, end, grid.step) {
            let params = [
                ("query", query.clone()),
                ("start", from.to_string()),
                ("end", to.to_string()),
                ("step", grid.step.to_string()),
            ];
            let answer = get(&client, settings, "query_range", &params).await?;
            add_matrix(&answer, label, &mut dcgm, which)?;
        }
    }
    Ok(dcgm)
}

/// The `[start, end]` ranges, each at most [`STEPS_PER_REQUEST`] steps.
pub fn chunks(start: i64, end: i64, step: i64) -> Vec<(i64, i64)> {
    let span = step * (STEPS_PER_REQUEST - 1);
    let mut out = Vec::new();
    let mut from = start;
    while from <= end {
        let to = (from + span).min(end);
        out.push((from, to));
        from = to + step;
    }
    out
}

/// Prometheus's answer envelope (`/api/v1/query` and `/api/v1/query_range`).
#[derive(Deserialize)]
pub struct Answer {
    status: String,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    data: Option<AnswerData>,
    #[serde(skip)]
    http_status: u16,
}

#[derive(Deserialize)]
struct AnswerData {
    result: Vec<SeriesResult>,
}

#[derive(Deserialize)]
struct SeriesResult {
    metric: HashMap<String, String>,
    #[serde(default)]
    values: Vec<(f64, String)>,
    #[serde(default)]
    value: Option<(f64, String)>,
}

async fn get(
    client: &reqwest::Client,
    settings: &PrometheusSettings,
    path: &str,
    params: &[(&str, String)],
) -> Result<Answer, PrometheusError> {
    let response = client
        .get(format!("{}/api/v1/{path}", settings.url))
        .query(params)
        .send()
        .await
        .map_err(|e| PrometheusError::Unreachable(e.without_url().to_string()))?;
    let status = response.status().as_u16();
    let body = response
        .bytes()
        .await
        .map_err(|e| PrometheusError::Unreachable(e.without_url().to_string()))?;
    parse_answer(&body, status)
}

/// Reads an answer's JSON; a non-success status is a refusal with Prometheus's message.
pub fn parse_answer(body: &[u8], http_status: u16) -> Result<Answer, PrometheusError> {
    let mut answer: Answer =
        serde_json::from_slice(body).map_err(|e| PrometheusError::Malformed(format!("not JSON ({e})")))?;
    answer.http_status = http_status;
    if answer.status != "success" {
        let message = answer
            .error
            .as_deref()
            .unwrap_or("no error message")
            .chars()
            .take(300)
            .collect();
        return Err(PrometheusError::Refused {
            status: http_status,
            message,
        });
    }
    Ok(answer)
}

fn gpu_of(metric: &HashMap<String, String>, label: &str) -> Gpu {
    let text = |name: &str| metric.get(name).cloned().unwrap_or_default();
    Gpu {
        project: metric.get(label).filter(|p| !p.is_empty()).cloned(),
        host: text("Hostname"),
        gpu: text("gpu"),
    }
}

/// A finite reading; NaN and ±Inf are gaps, not readings.
fn finite(text: &str) -> Option<f64> {
    text.parse::<f64>().ok().filter(|v| v.is_finite())
}

fn results(answer: &Answer) -> Result<&[SeriesResult], PrometheusError> {
    answer
        .data
        .as_ref()
        .map(|d| d.result.as_slice())
        .ok_or_else(|| PrometheusError::Malformed(format!("HTTP {}: no data in a success", answer.http_status)))
}

/// An instant query's value per GPU.
pub fn parse_vector(answer: &Answer, label: &str) -> Result<Vec<(Gpu, f64)>, PrometheusError> {
    Ok(results(answer)?
        .iter()
        .filter_map(|r| {
            let (_, value) = r.value.as_ref()?;
            Some((gpu_of(&r.metric, label), finite(value)?))
        })
        .collect())
}

/// Adds a range answer's steps to the GPUs' series of that kind.
pub fn add_matrix(answer: &Answer, label: &str, dcgm: &mut GpuSeries, which: Steps) -> Result<(), PrometheusError> {
    for result in results(answer)? {
        let reading = dcgm.gpus.entry(gpu_of(&result.metric, label)).or_default();
        let series = match which {
            Steps::Activity => &mut reading.activity,
            Steps::Kernel => &mut reading.kernel,
            Steps::Memory => &mut reading.memory,
        };
        let grid = dcgm.grid;
        if series.len() != grid.steps {
            *series = vec![f32::NAN; grid.steps];
        }
        for (time, value) in &result.values {
            if let (Some(index), Some(value)) = (grid.index(*time as i64), finite(value)) {
                series[index] = value as f32;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_month_is_read_a_day_per_request_without_gaps_or_overlaps() {
        let start = 1_700_000_000;
        let end = start + 30 * 86_400;
        let parts = chunks(start, end, STEP_SECONDS);
        assert_eq!(parts.len(), 31, "8,641 steps in requests of 288");
        assert_eq!(parts[0].0, start);
        assert_eq!(parts.last().map(|p| p.1), Some(end));
        for (from, to) in &parts {
            assert!((to - from) / STEP_SECONDS < STEPS_PER_REQUEST);
        }
        for pair in parts.windows(2) {
            assert_eq!(pair[1].0, pair[0].1 + STEP_SECONDS, "no step is read twice or skipped");
        }
    }

    #[test]
    fn steps_are_the_mean_of_the_samples_inside_them() {
        let query = activity_query("project");
        assert!(
            query.starts_with("(max by (project, Hostname, gpu) (avg_over_time(DCGM_FI_PROF_SM_ACTIVE[300s])) * 100)")
        );
        assert!(query.ends_with("or max by (project, Hostname, gpu) (avg_over_time(DCGM_FI_DEV_GPU_UTIL[300s]))"));
        assert!(memory_query("team").contains("avg_over_time(DCGM_FI_DEV_FB_FREE[300s])"));
    }

    #[test]
    fn answers_are_read_and_errors_named() {
        let mut dcgm = GpuSeries::new(Grid {
            start: 1_700_000_000,
            step: 60,
            steps: 3,
        });
        let body = br#"{"status":"success","data":{"resultType":"matrix","result":[
            {"metric":{"project":"chat","Hostname":"h1","gpu":"0"},"values":[[1700000000,"12"],[1700000060,"NaN"],[1700000120,"7.5"]]},
            {"metric":{"Hostname":"h2","gpu":"1"},"values":[[1700000000,"0"]]}]}}"#;
        let answer = parse_answer(body, 200).expect("parsed");
        add_matrix(&answer, "project", &mut dcgm, Steps::Activity).expect("added");
        let chat = Gpu {
            project: Some("chat".into()),
            host: "h1".into(),
            gpu: "0".into(),
        };
        let steps = &dcgm.gpus[&chat].activity;
        assert_eq!((steps[0], steps[2]), (12.0, 7.5));
        assert!(steps[1].is_nan(), "NaN is a gap");
        assert!(dcgm.gpus.keys().any(|g| g.group() == "host:h2"));
        let err = parse_answer(
            br#"{"status":"error","errorType":"bad_data","error":"exceeded maximum resolution of 11,000 points per timeseries"}"#,
            400,
        );
        assert!(matches!(err, Err(PrometheusError::Refused { status: 400, message }) if message.contains("11,000")));
        assert!(matches!(
            parse_answer(b"<html>", 502),
            Err(PrometheusError::Malformed(_))
        ));
        let vector = parse_answer(
            br#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{"project":"a","Hostname":"h","gpu":"0"},"value":[1700000000,"0.75"]}]}}"#,
            200,
        )
        .expect("vector");
        assert_eq!(parse_vector(&vector, "project").expect("values")[0].1, 0.75);
    }
}
