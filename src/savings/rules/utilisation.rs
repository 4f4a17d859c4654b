//! Idle and underused GPUs, from DCGM step means (docs/SAVINGS.md states each rule).
//!
//! - A GPU is judged by the best counter it publishes: SM activity, else engine activity,
//!   else `GPU_UTIL`. A GPU whose `GPU_UTIL` reads busy while under 10 % of its SMs work is
//!   flagged "busy but ineffective".
//! - **Idle**: stretches of 30 minutes or more in which kernels ran below 1 % of the time
//!   (engine activity, else `GPU_UTIL`), over the whole window and whatever memory is
//!   resident. Saving = idle GPU-hours × the project's $ per GPU-hour.
//! - **Underused**: the mean outside idle stretches below 40 %. Enough whole GPUs are kept
//!   for the mean to reach 60 % (⌈GPUs × mean ÷ 60⌉, at least one) on an instance type that
//!   exists (`whole_gpus`): saving = active GPU-hours × $ per GPU-hour × (1 − the kept
//!   configuration's catalogue price ÷ today's). One GPU gives nothing back (right-size it).
//!   Idle hours are counted once, as idle.
//! - Savings rest on the GPU-hours the metrics observed, never on more than the project's GPU
//!   spend in the window.
//! - Memory above 85 % of the card for 30 minutes or more is a risk, not a saving.

use std::collections::BTreeMap;

use rust_decimal::Decimal;

use super::Inputs;
use super::judge::{HEALTHY_FLOOR, Judged, UNDERUSED_BELOW, band, judge, nearest_rank, pct, verdict};
use super::sized_by_use::Shown;
use crate::format::{count, number, percent_value, usd_precise};
use crate::savings::cloudwatch::{Endpoint, IDLE_ENDPOINT_DAYS, hourly_cost};
use crate::savings::compounding::Hours;
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
    /// Where that type ran, and whether as SageMaker's.
    main_place: (String, bool),
    /// The instance types of its GPU usage: only with one are its GPUs that type's, to price
    /// a configuration of.
    types: std::collections::BTreeSet<String>,
}

/// Each project's GPU billing in the window (one pass over the usage), and the
/// organisation's GPU $ per GPU-hour.
fn billed(inputs: &Inputs) -> (BTreeMap<String, Billed>, Option<Decimal>) {
    let mut per_project: BTreeMap<String, Billed> = BTreeMap::new();
    let (mut spend, mut gpu_hours) = (Decimal::ZERO, Decimal::ZERO);
    for u in inputs.usage {
        let entry = per_project.entry(u.project.clone()).or_default();
        entry.types.insert(u.instance_type.clone());
        entry.team = u.team.clone().unwrap_or_default();
        entry.spend += u.spend;
        entry.gpu_hours += u.hours * u.gpus_per_instance;
        entry.training |= u.workload() == Workload::Training;
        if u.spend > entry.main_type.1 {
            entry.main_type = (u.instance_type.clone(), u.spend);
            entry.main_place = (u.region.clone(), !u.is_ec2());
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
    /// Each project's (or unmapped host's) observed GPU-hours, for compounding by hours, and
    /// each endpoint variant's (by its resource).
    pub hours: BTreeMap<String, Hours>,
    pub endpoint_hours: BTreeMap<String, Hours>,
    /// What each project's GPUs showed, where every one published its peak memory.
    pub shown: BTreeMap<String, Shown>,
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
        for g in gpus.iter().filter(|g| g.public.resource.starts_with("endpoint/")) {
            out.endpoint_hours.insert(
                g.public.resource.clone(),
                Hours {
                    observed: g.public.observed_hours,
                    idle: g.public.idle_hours,
                    off: g.off_hours,
                    idle_off: g.idle_off_hours,
                },
            );
        }
        out.hours.insert(
            group.clone(),
            Hours {
                observed,
                idle,
                off: gpus.iter().map(|g| g.off_hours).sum(),
                idle_off: gpus.iter().map(|g| g.idle_off_hours).sum(),
            },
        );
        if let Some(shown) = shown(gpus, mean, active_mean, &judged_by_text(&refs)) {
            out.shown.insert(group.clone(), shown);
        }
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
                let left = ceiling.map(|c| c - idle_saving).unwrap_or(Decimal::MAX);
                if let Some((recommended, fraction, how)) = context.give_back(summary.gpus, active_mean) {
                    let saving = per_30(active * rate * fraction).min(left);
                    if saving > Decimal::ZERO {
                        out.recommendations.push(context.row(
                            Kind::Underused,
                            recommended,
                            saving,
                            format!(
                                "{}: mean {} ({}) over {} active GPU-hours outside idle stretches, p50 {}, p95 {} of five-minute step means over {} days; {how}, {} of those GPU-hours' cost at {}/GPU-hour",
                                context.whose(),
                                percent_value(active_mean),
                                summary.judged_by,
                                number(active, 1),
                                percent_value(summary.p50),
                                percent_value(summary.p95),
                                count(range_days),
                                super::percent(fraction),
                                usd_precise(rate, 4)
                            ),
                        ));
                    }
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

/// What a group's GPUs showed, when every one published its peak memory.
fn shown(gpus: &[Judged], mean: Decimal, active_mean: Decimal, judged_by: &str) -> Option<Shown> {
    let mib = Decimal::from(1024);
    let mut peaks = Vec::new();
    for g in gpus {
        peaks.push((g.public.peak_memory_used_mib?, g.public.gpus, g.peak_source?));
    }
    let (peak, _, source) = peaks.iter().copied().max_by(|a, b| a.0.cmp(&b.0))?;
    Some(Shown {
        gpus: peaks.iter().map(|(_, n, _)| i64::from(*n)).sum(),
        peak_gib: peak / mib,
        peaks_gib: peaks.iter().map(|(p, n, _)| *p * Decimal::from(*n)).sum::<Decimal>() / mib,
        source,
        mean,
        active_mean,
        judged_by: judged_by.to_string(),
    })
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
                    "no request in the last {} days (CloudWatch {}, {}); {} × {} at {} bills {} a month at zero traffic",
                    IDLE_ENDPOINT_DAYS,
                    if endpoint.asynchronous {
                        "InvocationsProcessed and ApproximateBacklogSize, both zero"
                    } else {
                        "Invocations, zero every minute"
                    },
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
    /// Whole GPUs given back so the active mean reaches 60 %: the configuration, the share of
    /// the active hours' cost it saves, and how. On a type the catalogue knows, the cheapest
    /// configuration of that GPU (`whole_gpus`); elsewhere (an unmapped host, or a project of
    /// several types, whose GPUs' own types are not known) the GPUs given back ÷ today's. Nothing when every GPU is needed, or one GPU is all there is.
    fn give_back(&self, gpus: usize, active_mean: Decimal) -> Option<(String, Decimal, String)> {
        let now = i64::try_from(gpus).ok()?;
        let keep = (Decimal::from(now) * active_mean / Decimal::from(HEALTHY_FLOOR))
            .ceil()
            .max(Decimal::ONE);
        let keep = i64::try_from(keep.trunc().mantissa()).ok()?;
        if keep >= now {
            return None;
        }
        let reach = format!("{} of {} GPUs reach a 60 % mean", count(keep), count(now));
        match self.billed.filter(|b| self.mapped && b.types.len() == 1) {
            Some(b) => {
                let (region, sagemaker) = &b.main_place;
                let found = super::whole_gpus::give_back(self.inputs, &b.main_type.0, region, *sagemaker, now, keep)?;
                Some((
                    format!(
                        "give back {} of {} GPUs: {} × {}",
                        count(now - found.gpus),
                        count(now),
                        count(found.instances),
                        found.instance_type
                    ),
                    Decimal::ONE - found.ratio,
                    format!(
                        "{reach}: {} × {} ({} GPUs) costs {} of today's {} (catalogue prices, same GPU, no fewer vCPUs or memory per GPU)",
                        count(found.instances),
                        found.instance_type,
                        count(found.gpus),
                        super::percent(found.ratio),
                        b.main_type.0
                    ),
                ))
            }
            None => {
                let fraction = Decimal::from(now - keep) / Decimal::from(now);
                Some((
                    format!("give back {} of {} GPUs", count(now - keep), count(now)),
                    fraction,
                    format!("{reach}: giving back {} whole GPUs saves", count(now - keep)),
                ))
            }
        }
    }

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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use rust_decimal::Decimal;

    use super::*;
    use crate::savings::facts::{Usage, Window};
    use crate::savings::gpu_series::{Gpu, Grid, Reading};
    use crate::savings::model::ProjectFacts;
    use crate::savings::pricing::Pricing;
    use crate::usage_type::PurchaseOption;

    #[test]
    fn four_gpus_at_a_quarter_give_back_two_whole_ones_on_a_type_that_exists() {
        // A day of a g5.12xlarge (4 A10G) at $5.672/h: $136.128, 96 GPU-hours, $1.418 a
        // GPU-hour. Each GPU 24 % busy every step, never idle. ⌈4 × 24 / 60⌉ = 2 GPUs keep the
        // work at 60 %; the cheapest two A10Gs with the same host side per GPU are 2 ×
        // g5.4xlarge at $3.248 (`whole_gpus`), 57.26 % of the price. Per 30 days: 30 × 24 h ×
        // ($5.672 − $3.248) = $1,745.28. A fractional consolidation claimed 60 % of the
        // active hours' cost, $2,450.304, giving back 2.4 GPUs.
        let day = chrono::NaiveDate::from_ymd_opt(2026, 11, 1).expect("day");
        let usage = [Usage {
            project: "serve".into(),
            team: Some("ml".into()),
            usage_type: "USE1-BoxUsage:g5.12xlarge".into(),
            purchase: PurchaseOption::OnDemand,
            instance_type: "g5.12xlarge".into(),
            family: "g5".into(),
            gpus_per_instance: Decimal::from(4),
            sagemaker: None,
            region: "us-east-1".into(),
            facts: ProjectFacts::default(),
            spend: "136.128".parse().expect("decimal"),
            hours: Decimal::from(24),
            daily_hours: BTreeMap::new(),
            inferred: None,
            accounts: BTreeMap::new(),
        }];
        let pricing = Pricing::default();
        let inputs = Inputs {
            window: Window {
                from: day,
                to: day + chrono::Days::new(1),
            },
            usage: &usage,
            pricing: &pricing,
        };
        // 288 five-minute steps: 24 hours of each GPU observed.
        let grid = Grid {
            start: 1_764_547_200,
            step: 300,
            steps: 288,
        };
        let mut series = GpuSeries::new(grid);
        for gpu in 0..4 {
            series.gpus.insert(
                Gpu {
                    project: Some("serve".into()),
                    host: "10.0.0.1:9400".into(),
                    gpu: gpu.to_string(),
                },
                Reading {
                    activity: vec![24.0; grid.steps],
                    kernel: vec![24.0; grid.steps],
                    ..Reading::default()
                },
            );
        }
        let found = assess(&inputs, &series, 1);
        let underused: Vec<&Recommendation> = found
            .recommendations
            .iter()
            .filter(|r| r.kind == Kind::Underused)
            .collect();
        assert_eq!(underused.len(), 1, "{:?}", found.recommendations);
        assert_eq!(underused[0].recommended, "give back 2 of 4 GPUs: 2 × g5.4xlarge");
        assert_eq!(
            underused[0].monthly_saving.round_dp(6),
            "1745.28".parse().expect("decimal")
        );
    }
}
