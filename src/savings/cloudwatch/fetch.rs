//! Reading the wanted series: `GetMetricData` in batches whose points fit one call, every
//! page followed, each point placed on the grid; then units made the grid's.

use std::collections::BTreeMap;

use aws_sdk_cloudwatch::types::ScanBy;

use super::discover::{Target, Wanted};
use super::traffic::{self, Step};
use super::{CloudWatchError, CloudWatchRead, IDLE_ENDPOINT_DAYS, POINTS_PER_CALL, QUERIES_PER_CALL, failed};

/// Why an endpoint whose traffic CloudWatch never showed is not judged.
fn unknown_traffic(asynchronous: bool) -> String {
    let metrics = if asynchronous {
        "InvocationsProcessed or ApproximateBacklogSize"
    } else {
        "Invocations"
    };
    format!("CloudWatch shows no {metrics} for it in the window: its traffic is unknown, so it is not judged idle")
}
use crate::catalogue::Catalogue;
use crate::savings::gpu_series::Grid;

/// What an agent GPU's and an endpoint's peak memory are.
const AGENT_PEAK_SOURCE: &str = "CloudWatch agent nvidia_smi_memory_used, the largest five-minute average";
const ENDPOINT_PEAK_SOURCE: &str = "CloudWatch GPUMemoryUtilization, the largest five-minute average (per GPU, over an instance's GPUs) × the card's memory";

/// Seconds CloudWatch keeps one-minute points: a query starting earlier than this gets
/// nothing at a 60-second period
/// (<https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_GetMetricData.html>,
/// `StartTime`).
pub(super) const MINUTE_POINTS_KEPT: i64 = 15 * 86_400;

/// Where the by-minute reads begin: 15 days before the grid's end, less an hour, or the
/// grid's start if that is later. The start must lie inside the 15 days CloudWatch keeps
/// one-minute points as of each request, and the grid ends up to a step before the read
/// starts, which may then take many pages: the hour keeps a slow read inside. That first
/// hour goes by its five-minute sums.
pub(super) fn minutes_start(grid: Grid) -> i64 {
    let earliest = grid.end() - MINUTE_POINTS_KEPT + 3600;
    let from = (grid.start - grid.step).max(earliest);
    from + (60 - from.rem_euclid(60)) % 60
}

/// Runs the queries in batches whose points fit one call, following every page: the
/// by-minute ones over the last 15 days, the others over the whole grid.
pub(super) async fn fetch(
    cloudwatch: &aws_sdk_cloudwatch::Client,
    region: &str,
    grid: Grid,
    wanted: Vec<Wanted>,
    out: &mut CloudWatchRead,
) -> Result<(), CloudWatchError> {
    let (by_minute, whole): (Vec<Wanted>, Vec<Wanted>) = wanted.into_iter().partition(|w| w.by_minute);
    let end = grid.end() + 1;
    fetch_range(
        cloudwatch,
        region,
        grid,
        grid.start - grid.step,
        end,
        grid.step,
        whole,
        out,
    )
    .await?;
    let from = minutes_start(grid);
    fetch_range(cloudwatch, region, grid, from, end, 60, by_minute, out).await
}

#[allow(clippy::too_many_arguments)]
async fn fetch_range(
    cloudwatch: &aws_sdk_cloudwatch::Client,
    region: &str,
    grid: Grid,
    from: i64,
    to: i64,
    period: i64,
    wanted: Vec<Wanted>,
    out: &mut CloudWatchRead,
) -> Result<(), CloudWatchError> {
    let per_query = ((to - from) / period) as usize + 1;
    let batch = (POINTS_PER_CALL / per_query).clamp(1, QUERIES_PER_CALL);
    let start = aws_sdk_cloudwatch::primitives::DateTime::from_secs(from);
    let end = aws_sdk_cloudwatch::primitives::DateTime::from_secs(to);
    for chunk in wanted.chunks(batch) {
        let targets: BTreeMap<String, Target> = chunk
            .iter()
            .filter_map(|w| Some((w.query.id()?.to_string(), w.target.clone())))
            .collect();
        let mut pages = cloudwatch
            .get_metric_data()
            .set_metric_data_queries(Some(chunk.iter().map(|w| w.query.clone()).collect()))
            .start_time(start)
            .end_time(end)
            .scan_by(ScanBy::TimestampAscending)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| failed(region, e))?;
            out.get_metric_data_calls += 1;
            out.metrics_requested += chunk.len() as u64;
            for result in page.metric_data_results() {
                let Some(target) = result.id().and_then(|id| targets.get(id)) else {
                    continue;
                };
                let points = result
                    .timestamps()
                    .iter()
                    .map(|t| t.secs())
                    .zip(result.values().iter().copied());
                place(out, grid, from, target, points);
            }
        }
    }
    Ok(())
}

/// Puts a page's points on the grid. CloudWatch labels a period by its start; the grid's
/// step by its end. By-minute points go to the endpoint's minutes from `from`.
fn place(out: &mut CloudWatchRead, grid: Grid, from: i64, target: &Target, points: impl Iterator<Item = (i64, f64)>) {
    let blank = || vec![f32::NAN; grid.steps];
    match target {
        Target::InvocationsByMinute(index) => {
            let minutes = ((grid.end() - from) / 60).max(0) as usize;
            let (_, values) = out
                .minutes
                .entry(*index)
                .or_insert_with(|| (from, vec![f32::NAN; minutes]));
            for (time, value) in points {
                let minute = (time - from).div_euclid(60);
                if let Some(slot) = usize::try_from(minute).ok().and_then(|m| values.get_mut(m)) {
                    *slot = value as f32;
                }
            }
        }
        Target::Backlog(index) => {
            let values = out.backlog.entry(*index).or_insert_with(blank);
            for (time, value) in points {
                if let Some(i) = grid.index(time + grid.step) {
                    values[i] = value as f32;
                }
            }
        }
        Target::Invocations(index) | Target::Processed(index) => {
            let Some(endpoint) = out.endpoints.get(*index) else {
                return;
            };
            let resource = endpoint.resource();
            let series = out
                .series
                .gpus
                .values_mut()
                .find(|r| r.resource.as_deref() == Some(resource.as_str()));
            let Some(reading) = series else { return };
            if reading.kernel.len() != grid.steps {
                reading.kernel = blank();
            }
            for (time, value) in points {
                if let Some(i) = grid.index(time + grid.step) {
                    reading.kernel[i] = value as f32;
                }
            }
        }
        Target::Util(gpu) | Target::MemoryUsed(gpu) | Target::MemoryTotal(gpu) => {
            let Some(reading) = out.series.gpus.get_mut(gpu) else {
                return;
            };
            if let Target::MemoryTotal(_) = target {
                // A page may hold none of this query's points: keep what earlier pages gave.
                let total = points
                    .map(|(_, v)| v)
                    .chain(reading.means.memory_total_mib)
                    .reduce(f64::max);
                reading.means.memory_total_mib = total;
                return;
            }
            let series = if matches!(target, Target::Util(_)) {
                &mut reading.activity
            } else {
                &mut reading.memory
            };
            if series.len() != grid.steps {
                *series = blank();
            }
            for (time, value) in points {
                if let Some(i) = grid.index(time + grid.step) {
                    series[i] = value as f32;
                }
            }
        }
    }
}

/// Turns raw CloudWatch units into the grid's: percent per GPU, memory as a share of the
/// card, "any kernel ran" from utilisation (agent) or from invocations (endpoints).
pub(super) fn finish(out: &mut CloudWatchRead, grid: Grid) {
    let minutes = std::mem::take(&mut out.minutes);
    let backlog = std::mem::take(&mut out.backlog);
    let mut skipped = Vec::new();
    for (index, endpoint) in out.endpoints.iter_mut().enumerate() {
        let resource = endpoint.resource();
        let Some(reading) = out
            .series
            .gpus
            .values_mut()
            .find(|r| r.resource.as_deref() == Some(resource.as_str()))
        else {
            continue;
        };
        let per_instance = (reading.gpus / endpoint.instances.max(1)).max(1) as f32;
        // 0–100 × the instance's GPUs: per GPU in percent, memory as a share.
        reading.activity.iter_mut().for_each(|v| *v /= per_instance);
        reading.memory.iter_mut().for_each(|v| *v /= per_instance * 100.0);
        // The card's size is the catalogue's: SageMaker publishes only the share used.
        if let Some(listed) = Catalogue::built_in().get(endpoint.instance_type.trim_start_matches("ml.")) {
            let card_mib = f64::try_from(listed.accelerator_memory_gib).unwrap_or_default() * 1024.0;
            let peak = reading
                .memory
                .iter()
                .filter(|v| !v.is_nan())
                .map(|v| f64::from(*v))
                .reduce(f64::max);
            reading.means.memory_total_mib = Some(card_mib);
            reading.means.peak_memory_used_mib = peak.map(|share| share * card_mib);
            // On an instance of several GPUs the metric sums them: no one GPU's peak is known.
            reading.means.peak_memory_source = peak.filter(|_| per_instance <= 1.0).map(|_| ENDPOINT_PEAK_SOURCE);
        }
        let first_data = reading
            .activity
            .iter()
            .position(|v| !v.is_nan())
            .map(|i| grid.time(i) - grid.step);
        endpoint.running_since = match (endpoint.running_since, first_data) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if reading.kernel.len() != grid.steps {
            reading.kernel = vec![f32::NAN; grid.steps];
        }
        let shown = if endpoint.asynchronous {
            traffic::asynchronous(&reading.kernel, backlog.get(&index))
        } else {
            traffic::real_time(&reading.kernel, minutes.get(&index), |i| grid.time(i), grid.step)
        };
        // Only steps after the endpoint came up count.
        let since = endpoint.running_since.unwrap_or(i64::MAX);
        let running = |i: usize| grid.time(i) > since;
        let recent = grid.end() - IDLE_ENDPOINT_DAYS * 86_400;
        endpoint.recent_invocations = (0..grid.steps)
            .filter(|i| grid.time(*i) > recent && !reading.kernel[*i].is_nan())
            .map(|i| f64::from(reading.kernel[i]))
            .sum();
        let (mut off_busy, mut off_seen) = (0i64, 0i64);
        for i in (0..grid.steps).filter(|i| running(*i)) {
            if !super::in_business_hours(grid.time(i) - grid.step) && shown[i] != Step::Unknown {
                off_seen += 1;
                off_busy += i64::from(shown[i] == Step::Busy);
            }
        }
        endpoint.off_hours_busy = off_busy;
        endpoint.off_hours_seen = off_seen * grid.step / 3600;
        let quiet: Vec<bool> = (0..grid.steps).map(|i| running(i) && shown[i] == Step::Quiet).collect();
        // CloudWatch's newest minutes arrive late: steps at the end it shows nothing of yet are
        // not the stretch's end, as long as it showed one of the last three steps
        // (`judge`'s rule for a GPU's idle stretch that runs to now).
        let shown_last = (0..grid.steps).rev().find(|i| shown[*i] != Step::Unknown);
        endpoint.quiet_since = match shown_last {
            Some(last) if last + 2 >= grid.steps - 1 && quiet[last] => match quiet[..=last].iter().rposition(|q| !q) {
                Some(i) => Some(grid.time(i)),
                None => Some(grid.start - grid.step),
            },
            _ => None,
        };
        if !shown.iter().any(|s| *s != Step::Unknown) {
            skipped.push((endpoint.resource(), unknown_traffic(endpoint.asynchronous)));
        }
        // Idle for the utilisation rules means CloudWatch shows no request served; a step it
        // shows nothing of is not idle, whatever the GPU reads.
        reading.kernel = quiet
            .iter()
            .zip(&reading.activity)
            .map(|(q, a)| {
                if a.is_nan() {
                    f32::NAN
                } else if *q {
                    0.0
                } else {
                    100.0
                }
            })
            .collect();
    }
    out.skipped.extend(skipped);
    for reading in out.series.gpus.values_mut() {
        if reading.activity.len() != grid.steps {
            reading.activity = vec![f32::NAN; grid.steps];
        }
        let observed: Vec<f64> = reading
            .activity
            .iter()
            .filter(|v| !v.is_nan())
            .map(|v| f64::from(*v))
            .collect();
        reading.means.gpu_util = (!observed.is_empty()).then(|| observed.iter().sum::<f64>() / observed.len() as f64);
        if reading.resource.as_deref().is_some_and(|r| r.starts_with("endpoint/")) {
            continue;
        }
        // Agent memory is MiB: its peak, and each step as a share of the card when the card's
        // size is published; without it no step can be judged for pressure.
        reading.means.peak_memory_used_mib = reading
            .memory
            .iter()
            .filter(|v| !v.is_nan())
            .map(|v| f64::from(*v))
            .reduce(f64::max);
        reading.means.peak_memory_source = reading.means.peak_memory_used_mib.map(|_| AGENT_PEAK_SOURCE);
        match reading.means.memory_total_mib.filter(|t| *t > 0.0) {
            Some(total) => reading.memory.iter_mut().for_each(|v| *v /= total as f32),
            None => reading.memory.clear(),
        }
    }
}
