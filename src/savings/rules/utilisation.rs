//! Idle and underused GPUs, from DCGM utilisation. Utilisation is
//! `DCGM_FI_PROF_GR_ENGINE_ACTIVE` × 100 where a project's GPUs publish it (it counts only
//! time the graphics engine did work), else `DCGM_FI_DEV_GPU_UTIL`.
//!
//! - Bands (the seeds'): p95 below 40 % is overprovisioned, 60–80 % healthy for serving,
//!   p50 above 85 % means scale out.
//! - **idle_gpu**: a GPU below 1 % for the last 30 minutes. Saving = the project's GPU $ per
//!   GPU-hour × its idle GPU-hours in the range (stretches of 30 minutes or more below 1 %),
//!   scaled to 30 days.
//! - **underused**: p95 below 40 % over the range. Consolidating so that p95 reaches 60 %
//!   needs p95/60 of the GPUs: saving = GPU spend × (1 − p95/60).

use std::collections::BTreeMap;

use rust_decimal::Decimal;

use super::Inputs;
use super::commitment::percentile;
use crate::format::{count, number, percent_value, usd_precise};
use crate::savings::model::{Kind, Recommendation, Utilisation};
use crate::savings::prometheus::{Dcgm, Gpu, RECENT_SECONDS, RECENT_STEP_SECONDS, STEP_SECONDS, Series};

const IDLE_BELOW: i64 = 1;
const IDLE_SECONDS: i64 = 30 * 60;
const UNDERUSED_P95: i64 = 40;
const HEALTHY_FLOOR: i64 = 60;

/// A GPU's utilisation samples in percent, from engine activity when it has any.
fn percent_series(util: &Series, engine_active: &Series) -> BTreeMap<Gpu, (bool, Vec<(i64, Decimal)>)> {
    let mut out: BTreeMap<Gpu, (bool, Vec<(i64, Decimal)>)> = util
        .iter()
        .map(|(gpu, samples)| (gpu.clone(), (false, samples.clone())))
        .collect();
    for (gpu, samples) in engine_active {
        if !samples.is_empty() {
            let scaled = samples.iter().map(|(t, v)| (*t, v * Decimal::ONE_HUNDRED)).collect();
            out.insert(gpu.clone(), (true, scaled));
        }
    }
    out
}

/// Whether the GPU stayed below 1 % for the half hour before `now`, read every minute (with
/// samples for at least 25 of those minutes: a GPU that stopped reporting is not idle).
fn idle_now(samples: &[(i64, Decimal)], now: i64) -> bool {
    let recent: Vec<&Decimal> = samples
        .iter()
        .filter(|(t, _)| *t > now - RECENT_SECONDS && *t <= now)
        .map(|(_, v)| v)
        .collect();
    recent.len() as i64 >= 25 * 60 / RECENT_STEP_SECONDS && recent.iter().all(|v| **v < Decimal::from(IDLE_BELOW))
}

/// Hours spent in stretches of at least half an hour below 1 %, in five-minute samples.
fn idle_hours(samples: &[(i64, Decimal)]) -> Decimal {
    let needed = IDLE_SECONDS / STEP_SECONDS;
    let (mut total, mut run, mut last) = (0i64, 0i64, None::<i64>);
    for (time, value) in samples {
        let contiguous = last.is_some_and(|l| time - l <= STEP_SECONDS);
        if *value < Decimal::from(IDLE_BELOW) && (contiguous || run == 0) {
            run += 1;
        } else {
            if run >= needed {
                total += run;
            }
            run = i64::from(*value < Decimal::from(IDLE_BELOW));
        }
        last = Some(*time);
    }
    if run >= needed {
        total += run;
    }
    Decimal::from(total * STEP_SECONDS) / Decimal::from(3600)
}

fn band(p50: Decimal, p95: Decimal) -> &'static str {
    if p95 < Decimal::from(UNDERUSED_P95) {
        "overprovisioned (p95 below 40 %)"
    } else if p50 > Decimal::from(85) {
        "scale out (p50 above 85 %)"
    } else if p95 >= Decimal::from(HEALTHY_FLOOR) && p95 <= Decimal::from(80) {
        "healthy for serving (60–80 %)"
    } else {
        "between bands"
    }
}

/// One GPU's samples in percent, and whether they are engine activity.
type GpuSamples<'a> = (&'a Gpu, bool, &'a Vec<(i64, Decimal)>);

/// Per project (or unmapped host): utilisation, the band, memory, idle GPUs now and idle
/// GPU-hours over the range.
pub fn summarise(dcgm: &Dcgm, now: i64) -> Vec<(Utilisation, Decimal)> {
    let mut groups: BTreeMap<String, Vec<GpuSamples>> = BTreeMap::new();
    let series = percent_series(&dcgm.util, &dcgm.engine_active);
    let recent = percent_series(&dcgm.recent_util, &dcgm.recent_engine_active);
    for (gpu, (engine, samples)) in &series {
        groups.entry(gpu.group()).or_default().push((gpu, *engine, samples));
    }
    let peak = |s: &Series, gpus: &[&Gpu]| {
        gpus.iter()
            .filter_map(|g| s.get(*g))
            .flat_map(|v| v.iter().map(|(_, x)| *x))
            .max()
    };
    groups
        .into_iter()
        .filter_map(|(group, gpus)| {
            let mut values: Vec<Decimal> = gpus.iter().flat_map(|(_, _, s)| s.iter().map(|(_, v)| *v)).collect();
            let p50 = percentile(&mut values, Decimal::new(5, 1))?;
            let p95 = percentile(&mut values, Decimal::new(95, 2))?;
            let keys: Vec<&Gpu> = gpus.iter().map(|(g, _, _)| *g).collect();
            let total_memory = keys
                .iter()
                .filter_map(|g| {
                    let used = dcgm.fb_used.get(*g)?.last()?.1;
                    let free = dcgm.fb_free.get(*g)?.last()?.1;
                    Some(used + free)
                })
                .max();
            let idle: Decimal = gpus.iter().map(|(_, _, s)| idle_hours(s)).sum();
            Some((
                Utilisation {
                    project: group,
                    gpus: gpus.len(),
                    p50: p50.round_dp(1),
                    p95: p95.round_dp(1),
                    engine_active: gpus.iter().any(|(_, engine, _)| *engine),
                    peak_memory_used_mib: peak(&dcgm.fb_used, &keys),
                    memory_total_mib: total_memory,
                    band: band(p50, p95).to_string(),
                    idle_gpus_now: gpus
                        .iter()
                        .filter(|(gpu, _, _)| recent.get(*gpu).is_some_and(|(_, s)| idle_now(s, now)))
                        .count(),
                },
                idle,
            ))
        })
        .collect()
}

/// One project's GPU billing in the window.
#[derive(Default)]
struct Billed {
    team: String,
    spend: Decimal,
    gpu_hours: Decimal,
    /// The instance type it spent most on, and that spend.
    main_type: (String, Decimal),
}

/// Each project's GPU billing in the window (one pass over the usage), and the
/// organisation's GPU $ per GPU-hour.
fn billed(inputs: &Inputs) -> (BTreeMap<String, Billed>, Option<Decimal>) {
    let mut per_project: BTreeMap<String, Billed> = BTreeMap::new();
    let (mut spend, mut gpu_hours) = (Decimal::ZERO, Decimal::ZERO);
    for u in inputs.usage {
        let entry = per_project.entry(u.project.clone()).or_default();
        entry.team = u.team.clone().unwrap_or_default();
        entry.spend += u.spend;
        entry.gpu_hours += u.hours * u.gpus_per_instance;
        if u.spend > entry.main_type.1 {
            entry.main_type = (u.instance_type.clone(), u.spend);
        }
        spend += u.spend;
        gpu_hours += u.hours * u.gpus_per_instance;
    }
    (per_project, (gpu_hours > Decimal::ZERO).then(|| spend / gpu_hours))
}

/// Idle and underused recommendations from the summary. `range_days` is how many days of
/// samples the summary covers.
pub fn recommend(inputs: &Inputs, summary: &[(Utilisation, Decimal)], range_days: i64) -> Vec<Recommendation> {
    let (billing, org_rate) = billed(inputs);
    let per_30 = |amount: Decimal| amount * Decimal::from(30) / Decimal::from(range_days.max(1));
    let mut out = Vec::new();
    for (u, idle_hours) in summary {
        let mapped = !u.project.starts_with("host:");
        let project = if mapped { u.project.clone() } else { String::new() };
        let billed = billing.get(&u.project);
        let (spend, rate) = match billed {
            Some(b) if b.gpu_hours > Decimal::ZERO => (Some(b.spend), Some(b.spend / b.gpu_hours)),
            // An unmapped host, or a label no billed project carries: the organisation's rate.
            _ => (None, org_rate),
        };
        let whose = if mapped {
            format!("project {}", u.project)
        } else {
            format!("unmapped host {} (series without the project label)", &u.project[5..])
        };
        let base = |kind, recommended: String, saving: Decimal, detail: String| Recommendation {
            kind,
            team: billed.filter(|_| mapped).map(|b| b.team.clone()).unwrap_or_default(),
            project: project.clone(),
            usage_type: String::new(),
            instance_type: billed.map(|b| b.main_type.0.clone()).unwrap_or_default(),
            recommended,
            from: inputs.window.from,
            to: inputs.window.to,
            basis_cost: None,
            monthly_saving: saving,
            detail,
            host: if mapped {
                String::new()
            } else {
                u.project[5..].to_string()
            },
        };
        if u.idle_gpus_now > 0
            && let Some(rate) = rate
        {
            out.push(base(
                Kind::IdleGpu,
                format!("stop or release {} idle GPU(s)", count(u.idle_gpus_now)),
                per_30(idle_hours * rate),
                format!(
                    "{} GPU(s) of {whose} below 1% for the last 30 minutes; {} idle GPU-hours in {} days at {}/GPU-hour",
                    count(u.idle_gpus_now),
                    number(*idle_hours, 1),
                    count(range_days),
                    usd_precise(rate, 4)
                ),
            ));
        }
        if u.p95 < Decimal::from(UNDERUSED_P95) {
            let share = Decimal::ONE - u.p95 / Decimal::from(HEALTHY_FLOOR);
            let gpu_spend = spend.or_else(|| {
                // No GPU spend of its own (an unmapped host, or a label no billed project
                // carries): its GPUs for the whole range at the organisation's rate.
                org_rate.map(|r| r * Decimal::from(u.gpus as i64 * 24 * range_days))
            });
            if let Some(gpu_spend) = gpu_spend {
                let keep = (Decimal::from(u.gpus as i64) * u.p95 / Decimal::from(HEALTHY_FLOOR))
                    .ceil()
                    .max(Decimal::ONE);
                out.push(base(
                    Kind::Underused,
                    format!("consolidate {} GPUs to about {}", count(u.gpus), number(keep, 0)),
                    per_30(gpu_spend * share),
                    format!(
                        "{whose}: p50 {}, p95 {} over {} days ({}); consolidating to a 60% p95 saves {} of GPU spend",
                        percent_value(u.p50),
                        percent_value(u.p95),
                        count(range_days),
                        if u.engine_active {
                            "graphics engine activity"
                        } else {
                            "GPU utilisation"
                        },
                        super::percent(share)
                    ),
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flat(values: &[i64], start: i64, step: i64) -> Vec<(i64, Decimal)> {
        values
            .iter()
            .enumerate()
            .map(|(i, v)| (start + i as i64 * step, Decimal::from(*v)))
            .collect()
    }

    #[test]
    fn idle_stretches_count_from_thirty_minutes() {
        // 25 idle minutes, a busy sample, then 30 idle minutes (five-minute samples): only
        // the second stretch counts.
        let mut values = vec![0; 5];
        values.push(50);
        values.extend(vec![0; 6]);
        assert_eq!(idle_hours(&flat(&values, 0, STEP_SECONDS)), Decimal::new(5, 1));
        assert_eq!(idle_hours(&flat(&[0; 5], 0, STEP_SECONDS)), Decimal::ZERO);
    }

    #[test]
    fn a_gpu_is_idle_now_only_below_one_percent_for_the_last_half_hour() {
        let step = RECENT_STEP_SECONDS;
        let now = 10_000 * step;
        let start = now - 29 * step;
        assert!(idle_now(&flat(&[0; 30], start, step), now));
        let mut one_busy = vec![0; 30];
        one_busy[20] = 1;
        assert!(!idle_now(&flat(&one_busy, start, step), now), "1 % is not below 1 %");
        assert!(!idle_now(&flat(&[0; 10], now - 9 * step, step), now), "too few samples");
    }

    #[test]
    fn bands_follow_the_seeds() {
        assert!(band(Decimal::from(20), Decimal::from(39)).starts_with("overprovisioned"));
        assert!(band(Decimal::from(50), Decimal::from(70)).starts_with("healthy"));
        assert!(band(Decimal::from(90), Decimal::from(99)).starts_with("scale out"));
    }
}
