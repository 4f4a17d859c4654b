//! Idle and underused GPUs, from DCGM step means (docs/SAVINGS.md states each rule).
//!
//! - A GPU is judged by the best counter it publishes: SM activity, else engine activity,
//!   else `GPU_UTIL`. A GPU whose `GPU_UTIL` reads busy while under 10 % of its SMs work is
//!   flagged "busy but ineffective".
//! - **Idle**: stretches of 30 minutes or more in which kernels ran below 1 % of the time
//!   (engine activity, else `GPU_UTIL`), over the whole window and whatever memory is
//!   resident. Saving = idle GPU-hours × the project's $ per GPU-hour.
//! - **Underused**: the mean outside idle stretches below 40 %. Consolidating so the mean
//!   reaches 60 % needs mean/60 of those GPU-hours: saving = active GPU-hours × $ per
//!   GPU-hour × (1 − mean/60). Idle hours are counted once, as idle.
//! - Savings rest on the GPU-hours the metrics observed, never on more than the project's GPU
//!   spend in the window.
//! - Memory above 85 % of the card for 30 minutes or more is a risk, not a saving.

use std::collections::BTreeMap;

use rust_decimal::Decimal;

use super::Inputs;
use super::judge::{HEALTHY_FLOOR, Judged, UNDERUSED_BELOW, band, judge, nearest_rank, pct, verdict};
use crate::format::{count, number, percent_value, usd_precise};
use crate::savings::cloudwatch::{Endpoint, IDLE_ENDPOINT_DAYS, hourly_cost};
use crate::savings::gpu_series::GpuSeries;
use crate::savings::model::{ActivityMetric, GpuUse, IdleNow, Kind, Recommendation, Utilisation, Workload};
use crate::usage_type::SageMakerUse;

/// One project's GPU billing in the window.
#[derive(Default)]
struct Billed {
    team: String,
    spend: Decimal,
    gpu_hours: Decimal,
    training: bool,
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
        entry.training |= u.workload() == Workload::Training;
        if u.spend > entry.main_type.1 {
            entry.main_type = (u.instance_type.clone(), u.spend);
        }
        spend += u.spend;
        gpu_hours += u.hours * u.gpus_per_instance;
    }
    (per_project, (gpu_hours > Decimal::ZERO).then(|| spend / gpu_hours))
}

/// What the utilisation rules find: the GPUs, the projects and their recommendations.
#[derive(Debug, Default)]
pub struct Assessment {
    pub gpus: Vec<GpuUse>,
    pub projects: Vec<Utilisation>,
    pub recommendations: Vec<Recommendation>,
}

/// "SM activity", or each counter with its GPU count when a project's GPUs differ.
fn judged_by_text(gpus: &[&Judged]) -> String {
    let mut counts: BTreeMap<ActivityMetric, usize> = BTreeMap::new();
    for g in gpus {
        *counts.entry(g.public.judged_by).or_default() += 1;
    }
    if counts.len() == 1 {
        return counts.keys().map(|m| m.label().to_string()).collect();
    }
    counts
        .iter()
        .map(|(m, n)| format!("{} ({})", m.label(), count(*n)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Judges every GPU and prices idle and underused GPU-hours. `range_days` is how many days
/// of steps `dcgm` covers.
pub fn assess(inputs: &Inputs, series: &GpuSeries, range_days: i64) -> Assessment {
    let (billing, org_rate) = billed(inputs);
    let mut groups: BTreeMap<String, Vec<Judged>> = BTreeMap::new();
    for (gpu, reading) in &series.gpus {
        if let Some(mut judged) = judge(gpu, reading, series) {
            judged.public.verdict = verdict(&judged.public);
            groups.entry(gpu.group()).or_default().push(judged);
        }
    }
    let per_30 = |amount: Decimal| amount * Decimal::from(30) / Decimal::from(range_days.max(1));
    let mut out = Assessment::default();
    for (group, gpus) in &groups {
        let refs: Vec<&Judged> = gpus.iter().collect();
        let mapped = !group.starts_with("host:");
        let billed = billing.get(group).filter(|b| b.gpu_hours > Decimal::ZERO);
        let rate = billed.map(|b| b.spend / b.gpu_hours).or(org_rate);
        let steps: usize = gpus.iter().map(|g| g.all_steps).sum();
        let mut all: Vec<f32> = gpus.iter().flat_map(|g| g.sorted.iter().copied()).collect();
        all.sort_by(f32::total_cmp);
        let mean = pct(gpus.iter().map(|g| g.all_sum).sum::<f64>() / steps.max(1) as f64);
        let active_steps: usize = gpus.iter().map(|g| g.active_steps).sum();
        let active_mean = pct(gpus.iter().map(|g| g.active_sum).sum::<f64>() / active_steps.max(1) as f64);
        let observed: Decimal = gpus.iter().map(|g| g.public.observed_hours).sum();
        let idle: Decimal = gpus.iter().map(|g| g.public.idle_hours).sum();
        let training = billed.is_some_and(|b| b.training);
        let summary = Utilisation {
            project: group.clone(),
            gpus: gpus.iter().map(|g| g.public.gpus as usize).sum(),
            mean,
            p50: pct(nearest_rank(&all, 0.5)),
            p95: pct(nearest_rank(&all, 0.95)),
            active_mean,
            judged_by: judged_by_text(&refs),
            observed_gpu_hours: observed,
            billed_gpu_hours: billed.map(|b| b.gpu_hours),
            coverage: billed.map(|b| (observed / b.gpu_hours * Decimal::ONE_HUNDRED).round_dp(1)),
            idle_gpu_hours: idle,
            idle_gpus_now: gpus.iter().filter(|g| g.public.idle_since.is_some()).count(),
            busy_but_ineffective: gpus.iter().filter(|g| g.public.busy_but_ineffective).count(),
            memory_pressure: gpus
                .iter()
                .filter(|g| g.public.memory_pressure_hours > Decimal::ZERO)
                .count(),
            peak_memory_used_mib: gpus.iter().filter_map(|g| g.public.peak_memory_used_mib).max(),
            memory_total_mib: gpus.iter().filter_map(|g| g.public.memory_total_mib).max(),
            band: band(mean, training),
            usd_per_gpu_hour: rate,
        };
        if let Some(rate) = rate {
            // Never more than the project's GPU spend in the window.
            let ceiling = billed.map(|b| per_30(b.spend));
            let context = Context {
                inputs,
                billed,
                mapped,
                group,
            };
            let idle_saving = per_30(idle * rate).min(ceiling.unwrap_or(Decimal::MAX));
            if idle > Decimal::ZERO && idle_saving > Decimal::ZERO {
                out.recommendations.push(context.row(
                    Kind::IdleGpu,
                    format!("stop or release idle GPUs ({} GPU-hours)", number(idle, 1)),
                    idle_saving,
                    format!(
                        "{}: {} GPU-hours in stretches of 30 minutes or more below 1 % (memory resident or not), of {} observed GPU-hours ({} coverage of billed GPU-hours) over {} days, at {}/GPU-hour; {} GPU(s) idle now",
                        context.whose(),
                        number(idle, 1),
                        number(observed, 1),
                        summary.coverage.map(percent_value).unwrap_or_else(|| "unknown".into()),
                        count(range_days),
                        usd_precise(rate, 4),
                        count(summary.idle_gpus_now)
                    ),
                ));
            }
            let active = observed - idle;
            if active_steps > 0 && active_mean < Decimal::from(UNDERUSED_BELOW) {
                let share = Decimal::ONE - active_mean / Decimal::from(HEALTHY_FLOOR);
                let left = ceiling.map(|c| c - idle_saving).unwrap_or(Decimal::MAX);
                let saving = per_30(active * rate * share).min(left);
                let count_now = Decimal::from(summary.gpus as i64);
                let keep = (count_now * active_mean / Decimal::from(HEALTHY_FLOOR))
                    .ceil()
                    .max(Decimal::ONE);
                // One GPU cannot be consolidated onto fewer: its share is freed by packing
                // more work onto it (MIG, more replicas per GPU) or a smaller type.
                let recommended = if keep < count_now {
                    format!("consolidate {} GPUs to about {}", count(summary.gpus), number(keep, 0))
                } else {
                    format!(
                        "share the GPU{} (MIG, more work per GPU) or use a smaller type",
                        if summary.gpus == 1 { "" } else { "s" }
                    )
                };
                if saving > Decimal::ZERO {
                    out.recommendations.push(context.row(
                        Kind::Underused,
                        recommended,
                        saving,
                        format!(
                            "{}: mean {} ({}) over {} active GPU-hours outside idle stretches, p50 {}, p95 {} of five-minute step means over {} days; consolidating to a 60 % mean saves {} of those GPU-hours at {}/GPU-hour",
                            context.whose(),
                            percent_value(active_mean),
                            summary.judged_by,
                            number(active, 1),
                            percent_value(summary.p50),
                            percent_value(summary.p95),
                            count(range_days),
                            super::percent(share),
                            usd_precise(rate, 4)
                        ),
                    ));
                }
            }
        }
        out.gpus.extend(gpus.iter().map(|g| g.public.clone()));
        out.projects.push(summary);
    }
    // Flagged GPUs first, then by project.
    out.gpus.sort_by_key(|g| {
        (
            !g.busy_but_ineffective,
            g.idle_hours.is_zero(),
            g.memory_pressure_hours.is_zero(),
            g.project.clone(),
            g.host.clone(),
            g.gpu.clone(),
        )
    });
    out
}

/// SageMaker endpoints without an invocation for 14 days: an always-on endpoint bills at
/// zero traffic (seed 000), so its whole cost is the saving: instances × the `ml.` price
/// (catalogue and `pricing:`) × 720 hours, at most the project's GPU spend in the window.
pub fn idle_endpoints(inputs: &Inputs, endpoints: &[Endpoint], now: i64) -> Vec<(Endpoint, Recommendation)> {
    let (billing, _) = billed(inputs);
    let mut out = Vec::new();
    // What each project's idle endpoints have claimed so far: together at most its spend.
    let mut claimed: BTreeMap<String, Decimal> = BTreeMap::new();
    for endpoint in endpoints.iter().filter(|e| e.idle_for_two_weeks(now)) {
        let Some(hourly) = hourly_cost(endpoint, inputs.pricing) else {
            continue;
        };
        let project = endpoint.project.clone().unwrap_or_default();
        let billed = billing.get(&project);
        // The project's hosting on that type in that region, so rows on the same spend compound.
        let hosting = inputs.usage.iter().find(|u| {
            u.project == project
                && u.sagemaker == Some(SageMakerUse::Hosting)
                && u.region == endpoint.region
                && format!("ml.{}", u.instance_type) == endpoint.instance_type
        });
        let whole = hourly * Decimal::from(720);
        // A saving comes from spend: an endpoint whose project billed no GPU spend in the
        // window (its tag not yet a cost-allocation tag, say) is not priced.
        let Some(b) = billed else {
            continue;
        };
        let so_far = claimed.entry(project.clone()).or_default();
        let saving = whole
            .min(inputs.window.per_30_days(b.spend) - *so_far)
            .max(Decimal::ZERO);
        *so_far += saving;
        if saving.is_zero() {
            continue;
        }
        out.push((
            endpoint.clone(),
            Recommendation {
                kind: Kind::IdleEndpoint,
                team: b.team.clone(),
                project: project.clone(),
                usage_type: hosting.map(|u| u.usage_type.clone()).unwrap_or_default(),
                instance_type: endpoint.instance_type.clone(),
                recommended: format!("delete endpoint {} (variant {})", endpoint.name, endpoint.variant),
                from: inputs.window.from,
                to: inputs.window.to,
                basis_cost: hosting.map(|u| u.spend),
                monthly_saving: saving,
                compounded_saving: Decimal::ZERO,
                detail: format!(
                    "no invocation in the last {} days (CloudWatch Invocations, {}); {} × {} at {} bills {} a month at zero traffic",
                    IDLE_ENDPOINT_DAYS,
                    endpoint.region,
                    count(endpoint.instances as usize),
                    endpoint.instance_type,
                    usd_precise(hourly, 4),
                    usd_precise(whole, 2)
                ),
                host: endpoint.resource(),
                inferred: None,
            },
        ));
    }
    out
}

/// GPUs whose idle stretch runs to now, and endpoints without an invocation since some time,
/// longest idle first: what idle alerts are about.
pub fn idle_now(inputs: &Inputs, assessment: &Assessment, endpoints: &[Endpoint]) -> Vec<IdleNow> {
    let (billing, _) = billed(inputs);
    let team = |project: &str| billing.get(project).map(|b| b.team.clone()).unwrap_or_default();
    let rate = |project: &str| {
        assessment
            .projects
            .iter()
            .find(|u| u.project == project)
            .and_then(|u| u.usd_per_gpu_hour)
    };
    let mut out: Vec<IdleNow> = assessment
        .gpus
        .iter()
        .filter_map(|g| {
            Some(IdleNow {
                resource: g.resource.clone(),
                project: g.project.clone(),
                team: team(&g.project),
                since: g.idle_since?,
                seen_at: g.seen_until?,
                gpus: g.gpus,
                usd_per_hour: rate(&g.project).map(|r| r * Decimal::from(g.gpus)),
            })
        })
        .collect();
    for endpoint in endpoints {
        let resource = endpoint.resource();
        if out.iter().any(|i| i.resource == resource) {
            continue;
        }
        let Some(since) = endpoint.quiet_since else {
            continue;
        };
        let project = endpoint.project.clone().unwrap_or_default();
        out.push(IdleNow {
            resource,
            team: team(&project),
            project,
            since,
            seen_at: endpoint.read_at,
            gpus: endpoint.instances * endpoint.gpus_per_instance,
            usd_per_hour: hourly_cost(endpoint, inputs.pricing),
        });
    }
    out.sort_by(|a, b| a.since.cmp(&b.since).then_with(|| a.resource.cmp(&b.resource)));
    out
}

/// What a utilisation row is about.
struct Context<'a> {
    inputs: &'a Inputs<'a>,
    billed: Option<&'a Billed>,
    mapped: bool,
    group: &'a str,
}

impl Context<'_> {
    fn whose(&self) -> String {
        if self.mapped {
            format!("project {}", self.group)
        } else {
            format!(
                "unmapped host {} (series without the project label)",
                &self.group["host:".len()..]
            )
        }
    }

    fn row(&self, kind: Kind, recommended: String, saving: Decimal, detail: String) -> Recommendation {
        Recommendation {
            kind,
            team: self
                .billed
                .filter(|_| self.mapped)
                .map(|b| b.team.clone())
                .unwrap_or_default(),
            project: if self.mapped {
                self.group.to_string()
            } else {
                String::new()
            },
            usage_type: String::new(),
            instance_type: self.billed.map(|b| b.main_type.0.clone()).unwrap_or_default(),
            recommended,
            from: self.inputs.window.from,
            to: self.inputs.window.to,
            basis_cost: None,
            monthly_saving: saving,
            compounded_saving: Decimal::ZERO,
            detail,
            host: if self.mapped {
                String::new()
            } else {
                self.group["host:".len()..].to_string()
            },
            inferred: None,
        }
    }
}
