//! One GPU's steps judged: its mean, p50 and p95 by the best counter it publishes, idle
//! stretches (30 minutes or more in which kernels ran below 1 % of the time), memory
//! pressure, "busy but ineffective", and the seeds' bands on the mean.

use rust_decimal::Decimal;

use crate::format::{number, percent_value};
use crate::savings::gpu_series::{Gpu, GpuSeries, Reading};
use crate::savings::model::{ActivityMetric, GpuUse};

/// Below this percent a step is idle.
const IDLE_BELOW: f32 = 1.0;
/// A stretch counts from this many consecutive steps (30 minutes of five-minute steps).
const STRETCH_STEPS: usize = 6;
pub(super) const UNDERUSED_BELOW: i64 = 40;
pub(super) const HEALTHY_FLOOR: i64 = 60;
const SERVING_CEILING: i64 = 80;
const SCALE_OUT_ABOVE: i64 = 85;
/// Seed 003's KPI: training GPUs above 70 %.
const TRAINING_TARGET: i64 = 70;
/// Kernels running at least this share of the time read as busy (`GPU_UTIL` or engine
/// activity would not call the GPU underused).
const READS_BUSY: f64 = 40.0;
const INEFFECTIVE_SM_BELOW: f64 = 10.0;
const MEMORY_PRESSURE_ABOVE: f32 = 0.85;

/// A share in percent as an exact decimal to one place (utilisation is measured, not money).
pub(super) fn pct(value: f64) -> Decimal {
    Decimal::from_f64_retain(value).unwrap_or_default().round_dp(1)
}

/// GPU-hours in `steps` steps of a series standing for `gpus` GPUs.
pub(super) fn hours(steps: usize, step_seconds: i64, gpus: u32) -> Decimal {
    Decimal::from(steps as i64 * step_seconds * i64::from(gpus)) / Decimal::from(3600)
}

/// The runs of at least [`STRETCH_STEPS`] consecutive steps for which `inside` holds, as
/// (first index, length). A step without samples ends a run.
fn stretches(steps: &[f32], inside: impl Fn(f32) -> bool) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut run: Option<usize> = None;
    for (i, v) in steps.iter().enumerate() {
        match (run, !v.is_nan() && inside(*v)) {
            (None, true) => run = Some(i),
            (Some(first), false) => {
                if i - first >= STRETCH_STEPS {
                    out.push((first, i - first));
                }
                run = None;
            }
            _ => {}
        }
    }
    if let Some(first) = run
        && steps.len() - first >= STRETCH_STEPS
    {
        out.push((first, steps.len() - first));
    }
    out
}

/// Nearest-rank percentile of sorted values.
pub(super) fn nearest_rank(sorted: &[f32], share: f64) -> f64 {
    let rank = ((share * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    f64::from(sorted[rank - 1])
}

/// What one GPU's steps add up to.
pub(super) struct Judged {
    pub public: GpuUse,
    /// Sums and counts of step means (each weighted by the GPUs the series stands for),
    /// outside idle stretches and in all.
    pub active_sum: f64,
    pub active_steps: usize,
    pub all_sum: f64,
    pub all_steps: usize,
    pub sorted: Vec<f32>,
    /// GPU-hours observed outside the business hours a schedule keeps, and idle there: what
    /// a schedule adds after idle stretches (`compounding::Hours`).
    pub off_hours: Decimal,
    pub idle_off_hours: Decimal,
    /// What the peak memory is, when the GPU published it.
    pub peak_source: Option<&'static str>,
}

pub(super) fn judge(gpu: &Gpu, reading: &Reading, series: &GpuSeries) -> Option<Judged> {
    let grid = series.grid;
    let weight = reading.gpus.max(1);
    let observed: Vec<f32> = reading.activity.iter().copied().filter(|v| !v.is_nan()).collect();
    if observed.is_empty() {
        return None;
    }
    // Idle is "no kernel ran": by engine activity or GPU_UTIL where published, so a GPU
    // whose one busy SM reads near 0 % SM activity is judged ineffective, not idle.
    let nothing_ran: Vec<f32> = (0..reading.activity.len())
        .map(|i| match reading.kernel.get(i) {
            Some(k) if !k.is_nan() => *k,
            _ => reading.activity[i],
        })
        .collect();
    let idle = stretches(&nothing_ran, |v| v < IDLE_BELOW);
    let mut in_idle = vec![false; reading.activity.len()];
    for (first, len) in &idle {
        in_idle[*first..first + len].iter_mut().for_each(|s| *s = true);
    }
    let (mut active_sum, mut active_steps) = (0f64, 0usize);
    for (v, idle) in reading.activity.iter().zip(&in_idle) {
        if !v.is_nan() && !idle {
            active_sum += f64::from(*v) * f64::from(weight);
            active_steps += weight as usize;
        }
    }
    let last_with_data = reading.activity.iter().rposition(|v| !v.is_nan());
    // The stretch that runs to the newest step (a step may still be filling at the end).
    let idle_since = idle
        .last()
        .filter(|(first, len)| {
            let newest = reading.read_at.and_then(|t| grid.index(t)).unwrap_or(grid.steps - 1);
            last_with_data.is_some_and(|l| first + len > l && l + 2 >= newest)
        })
        .map(|(first, _)| grid.time(*first) - grid.step);
    let all_sum: f64 = observed.iter().map(|v| f64::from(*v)).sum();
    let mean = all_sum / observed.len() as f64;
    let mut sorted = observed;
    sorted.sort_by(f32::total_cmp);
    let means = &reading.means;
    let judged_by = means.judged_by();
    // Busy but ineffective is judged outside idle stretches, so a kernel stuck for part of
    // each day is not averaged away by the hours nothing ran.
    let (mut kernel_sum, mut sm_sum, mut steps) = (0f64, 0f64, 0usize);
    for (i, (activity, idle)) in reading.activity.iter().zip(&in_idle).enumerate() {
        let kernel = reading.kernel.get(i).copied().unwrap_or(f32::NAN);
        if !idle && !kernel.is_nan() && !activity.is_nan() {
            kernel_sum += f64::from(kernel);
            sm_sum += f64::from(*activity);
            steps += 1;
        }
    }
    let working = (steps > 0).then(|| (kernel_sum / steps as f64, sm_sum / steps as f64));
    let ineffective = working.filter(|(kernel, sm)| {
        judged_by == ActivityMetric::SmActive && *kernel >= READS_BUSY && *sm < INEFFECTIVE_SM_BELOW
    });
    let pressure = stretches(&reading.memory, |v| v > MEMORY_PRESSURE_ABOVE);
    let idle_steps: usize = idle.iter().map(|(_, len)| len).sum();
    // A step's period starts a step before the time the grid labels it with.
    let (mut off_steps, mut idle_off_steps) = (0usize, 0usize);
    for (i, (v, idle)) in reading.activity.iter().zip(&in_idle).enumerate() {
        if !v.is_nan() && !crate::savings::cloudwatch::in_business_hours(grid.time(i) - grid.step) {
            off_steps += 1;
            idle_off_steps += usize::from(*idle);
        }
    }
    let public = GpuUse {
        project: gpu.group(),
        gpus: weight,
        resource: reading
            .resource
            .clone()
            .unwrap_or_else(|| format!("{}/gpu{}", gpu.host, gpu.gpu)),
        host: gpu.host.clone(),
        gpu: gpu.gpu.clone(),
        judged_by,
        mean: pct(mean),
        p50: pct(nearest_rank(&sorted, 0.5)),
        p95: pct(nearest_rank(&sorted, 0.95)),
        gpu_util_mean: means.gpu_util.map(pct),
        sm_active_mean: means.sm_active.map(pct),
        tensor_active_mean: means.tensor_active.map(pct),
        sm_occupancy_mean: means.sm_occupancy.map(pct),
        observed_hours: hours(sorted.len(), grid.step, weight),
        idle_hours: hours(idle_steps, grid.step, weight),
        idle_since,
        busy_but_ineffective: ineffective.is_some(),
        busy_but_ineffective_figures: ineffective.map(|(kernel, sm)| (pct(kernel), pct(sm))),
        seen_until: last_with_data.map(|l| grid.time(l)),
        memory_pressure_hours: hours(pressure.iter().map(|(_, len)| len).sum(), grid.step, weight),
        peak_memory_used_mib: means.peak_memory_used_mib.map(pct),
        memory_total_mib: means.memory_total_mib.map(pct),
        verdict: String::new(),
    };
    Some(Judged {
        public,
        active_sum,
        active_steps,
        all_sum: all_sum * f64::from(weight),
        all_steps: sorted.len() * weight as usize,
        sorted,
        off_hours: hours(off_steps, grid.step, weight),
        idle_off_hours: hours(idle_off_steps, grid.step, weight),
        peak_source: means.peak_memory_source,
    })
}

/// One GPU's verdict, most pressing first.
pub(super) fn verdict(g: &GpuUse) -> String {
    let mut parts = Vec::new();
    if let Some((kernel, sm)) = g.busy_but_ineffective_figures {
        parts.push(format!(
            "busy but ineffective: kernels running {} of the time, SM activity {}",
            percent_value(kernel),
            percent_value(sm)
        ));
    }
    if g.idle_hours > Decimal::ZERO {
        parts.push(format!(
            "idle {} of {} h",
            number(g.idle_hours, 1),
            number(g.observed_hours, 1)
        ));
    }
    if g.memory_pressure_hours > Decimal::ZERO {
        parts.push(format!(
            "memory above 85 % for {} h (risk of running out)",
            number(g.memory_pressure_hours, 1)
        ));
    }
    if parts.is_empty() {
        parts.push(format!("mean {}", percent_value(g.mean)));
    }
    parts.join("; ")
}

/// The band of a mean over the window (the seeds'); training has its own target.
pub fn band(mean: Decimal, training: bool) -> String {
    let at = |n: i64| Decimal::from(n);
    let text = if mean < at(UNDERUSED_BELOW) {
        "overprovisioned (mean below 40 %)"
    } else if training && mean < at(TRAINING_TARGET) {
        "training below the 70 % target"
    } else if training {
        "healthy for training (70 % or more)"
    } else if mean > at(SCALE_OUT_ABOVE) {
        "scale out (mean above 85 %)"
    } else if mean >= at(HEALTHY_FLOOR) && mean <= at(SERVING_CEILING) {
        "healthy for serving (60–80 %)"
    } else {
        "between bands"
    };
    text.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stretches_count_from_thirty_minutes_and_gaps_end_them() {
        let idle = |v: f32| v < IDLE_BELOW;
        // 25 idle minutes, a busy step, then 30 idle minutes: only the second counts.
        let mut steps = vec![0.0; 5];
        steps.push(50.0);
        steps.extend(vec![0.0; 6]);
        assert_eq!(stretches(&steps, idle), vec![(6, 6)]);
        // A step without samples is not idle.
        let gap = [0.0, 0.0, 0.0, f32::NAN, 0.0, 0.0, 0.0];
        assert!(stretches(&gap, idle).is_empty());
        assert!(stretches(&[1.0; 10], idle).is_empty(), "1 % is not below 1 %");
    }

    #[test]
    fn bands_follow_the_seeds_on_the_mean() {
        let d = Decimal::from;
        assert!(band(d(18), false).starts_with("overprovisioned"));
        assert!(band(d(70), false).starts_with("healthy for serving"));
        assert!(band(d(90), false).starts_with("scale out"));
        assert!(band(d(50), false).starts_with("between"));
        assert!(band(d(65), true).starts_with("training below"));
        assert!(band(d(95), true).starts_with("healthy for training"));
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let sorted: Vec<f32> = (1..=20).map(|v| v as f32).collect();
        assert_eq!(nearest_rank(&sorted, 0.5), 10.0);
        assert_eq!(nearest_rank(&sorted, 0.95), 19.0);
        assert_eq!(nearest_rank(&[7.0], 0.95), 7.0);
    }
}
