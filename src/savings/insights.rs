//! Every recommendation for a window, in one pass: billing rules from the cost facts, and
//! utilisation rules when Prometheus is configured and answers.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use sqlx::PgPool;

use super::cloudwatch::{self, Endpoint};
use super::facts::{self, Window};
use super::gpu_series::{GpuSeries, Grid};
use super::inference;
use super::model::commitments::Commitments;
use super::model::{GpuUse, IdleNow, Inferred, Recommendation, Utilisation};
use super::pricing::{self, Pricing};
use super::prometheus;
use super::rules::{self, Inputs};
use crate::config::{CloudWatchSettings, PrometheusSettings, SavingsSettings};

/// What `burnrate insights` and the Savings page show.
#[derive(Debug, Clone)]
pub struct Insights {
    /// `None` when no settled day has data.
    pub window: Option<Window>,
    /// Sorted by monthly saving, largest first.
    pub recommendations: Vec<Recommendation>,
    pub utilisation: Vec<Utilisation>,
    /// Every reporting GPU's judgement, flagged ones first.
    pub gpus: Vec<GpuUse>,
    /// GPUs and endpoints idle now, longest first.
    pub idle_now: Vec<IdleNow>,
    /// Why utilisation is missing, when it is.
    pub utilisation_note: Option<String>,
    pub pricing: Pricing,
    /// The spot discount seen per (SageMaker?, instance type) in the window.
    pub observed_spot: BTreeMap<(bool, String), Decimal>,
    /// What each project that declares nothing most likely runs, by its bill.
    pub inferred: BTreeMap<String, Inferred>,
    /// Owned commitments, the options on the uncovered baseline, and AWS's recommendation.
    pub commitments: Commitments,
    /// The data version read as the computation began: what a decision taken on this set
    /// records. `None` before any settled day has data.
    pub data_version: Option<i64>,
}

impl Insights {
    /// Before any settled day has data: the prices, and nothing judged.
    pub fn without_data(pricing: Pricing) -> Insights {
        Insights {
            window: None,
            recommendations: Vec::new(),
            utilisation: Vec::new(),
            gpus: Vec::new(),
            idle_now: Vec::new(),
            utilisation_note: None,
            pricing,
            observed_spot: BTreeMap::new(),
            inferred: BTreeMap::new(),
            commitments: Commitments::default(),
            data_version: None,
        }
    }
}

/// What utilisation would add, shown when no source is configured.
pub const WITHOUT_UTILISATION: &str = "Set BURNRATE_PROMETHEUS_URL to a Prometheus holding NVIDIA DCGM exporter series, or BURNRATE_CLOUDWATCH=on for SageMaker endpoints and the CloudWatch agent's NVIDIA metrics, to add \
     utilisation per GPU and project (the mean of five-minute step means, by SM activity where published), idle \
     GPU-hours (stretches below 1 % for 30 minutes or more) and underused GPUs (mean below 40 %), each priced from \
     this organisation's GPU spend per GPU-hour.";

/// Where utilisation comes from: DCGM through Prometheus, CloudWatch, both or neither.
#[derive(Debug, Default, Clone, Copy)]
pub struct Sources<'a> {
    pub prometheus: Option<&'a PrometheusSettings>,
    pub cloudwatch: Option<&'a CloudWatchSettings>,
    /// The AWS configuration CloudWatch is read with. `None`: the environment's, and the read
    /// is reused for an hour; given, it is read afresh.
    pub aws: Option<&'a aws_config::SdkConfig>,
}

impl<'a> From<&'a SavingsSettings> for Sources<'a> {
    fn from(settings: &'a SavingsSettings) -> Sources<'a> {
        Sources {
            prometheus: settings.prometheus.as_ref(),
            cloudwatch: settings.cloudwatch.as_ref(),
            aws: None,
        }
    }
}

/// Every configured source's GPUs on one grid, the SageMaker endpoints, and what the page
/// should say about sources that are missing or failed.
async fn read_utilisation(sources: Sources<'_>, grid: Grid) -> (GpuSeries, Vec<Endpoint>, Vec<String>) {
    let mut series = GpuSeries::new(grid);
    let mut endpoints = Vec::new();
    let mut notes = Vec::new();
    if sources.prometheus.is_none() && sources.cloudwatch.is_none() {
        notes.push(WITHOUT_UTILISATION.to_string());
    }
    if let Some(settings) = sources.prometheus {
        // One bound for the whole read, so a slow Prometheus cannot hold the page.
        let read = tokio::time::timeout(settings.timeout, prometheus::read_dcgm(settings, grid)).await;
        let read = read.unwrap_or_else(|_| {
            Err(prometheus::PrometheusError::Unreachable(format!(
                "no complete answer within {} s",
                settings.timeout.as_secs()
            )))
        });
        match read {
            Ok(found) if found.gpus.is_empty() => notes.push(
                "Prometheus answered, but holds no DCGM activity series (SM_ACTIVE, GR_ENGINE_ACTIVE or GPU_UTIL) for this range."
                    .to_string(),
            ),
            Ok(found) => series.gpus.extend(found.gpus),
            Err(err) => {
                tracing::warn!(error = %err, "GPU utilisation could not be read from Prometheus");
                notes.push(format!("Utilisation is missing this time: {err}"));
            }
        }
    }
    if let Some(settings) = sources.cloudwatch {
        let read = match sources.aws {
            Some(sdk) => cloudwatch::read(sdk, settings, grid).await.map(std::sync::Arc::new),
            None => cloudwatch::read_hourly(settings, grid).await,
        };
        match read {
            Ok(read) => {
                series.gpus.extend(read.series.regrid(grid).gpus);
                endpoints = read.endpoints.clone();
                for (resource, why) in &read.skipped {
                    notes.push(format!("{resource} is not judged: {why}."));
                }
                for err in &read.failed_regions {
                    tracing::warn!(error = %err, "GPU utilisation could not be read from CloudWatch in one region");
                    notes.push(format!("CloudWatch utilisation is missing this time: {err}"));
                }
            }
            Err(err) => {
                tracing::warn!(error = %err, "GPU utilisation could not be read from CloudWatch");
                notes.push(format!("CloudWatch utilisation is missing this time: {err}"));
            }
        }
    }
    (series, endpoints, notes)
}

/// Computes the recommendations over the last `days` settled days as of `now`.
pub async fn compute(
    pool: &PgPool,
    days: u32,
    sources: Sources<'_>,
    now: DateTime<Utc>,
) -> Result<Insights, sqlx::Error> {
    let mut conn = pool.acquire().await?;
    let data_version = crate::page_data::current_version(pool).await?;
    let pricing = pricing::load(&mut conn).await?;
    let Some(window) = facts::window(&mut conn, days).await? else {
        return Ok(Insights::without_data(pricing));
    };
    let mut usage = facts::usage(&mut conn, window).await?;
    drop(conn);
    // What projects that declare nothing most likely run, from their bill; utilisation
    // (below) then confirms or weakens it.
    let mut inferred = inference::infer(&usage, window);
    inference::attach(&mut usage, &inferred);
    let range_days = window.days();
    let grid = Grid::ending(now.timestamp(), range_days, prometheus::STEP_SECONDS);
    let (series, endpoints, notes) = read_utilisation(sources, grid).await;
    let inputs = Inputs {
        window,
        usage: &usage,
        pricing: &pricing,
    };
    // An endpoint without an invocation for two weeks: its whole cost is the saving, and its
    // GPUs are not judged again as idle or underused.
    let idle_endpoints = rules::utilisation::idle_endpoints(&inputs, &endpoints, now.timestamp());
    let mut series = series;
    series.gpus.retain(|_, r| {
        r.resource
            .as_ref()
            .is_none_or(|res| !idle_endpoints.iter().any(|(e, _)| e.resource() == *res))
    });
    let assessment = rules::utilisation::assess(&inputs, &series, range_days);
    let idle_now = rules::utilisation::idle_now(&inputs, &assessment, &endpoints);
    let rules::utilisation::Assessment {
        gpus,
        projects: utilisation,
        recommendations: utilisation_rows,
        hours,
        endpoint_hours,
        shown,
    } = assessment;
    let by_endpoint: Vec<(Endpoint, super::compounding::Hours)> = endpoints
        .iter()
        .filter_map(|e| Some((e.clone(), endpoint_hours.get(&e.resource())?.clone())))
        .collect();
    let hours = super::compounding::Hours::by_usage(&usage, &hours, &by_endpoint);
    inference::corroborate(&mut inferred, &utilisation);
    inference::attach(&mut usage, &inferred);
    let inputs = Inputs {
        window,
        usage: &usage,
        pricing: &pricing,
    };
    let mut recommendations = Vec::new();
    recommendations.extend(rules::spot::recommend(&inputs));
    recommendations.extend(rules::rightsize::recommend(&inputs));
    recommendations.extend(rules::sized_by_use::recommend(&inputs, &shown));
    recommendations.extend(rules::always_on::recommend(&inputs, &endpoints));
    let owned = super::commitments::store::load(pool).await?;
    let (commitment_rows, mut commitments) = rules::commitment::recommend(&inputs, &owned.read);
    commitments.read_problem = owned.problem;
    commitments.skipped = owned.read.skipped.clone();
    recommendations.extend(commitment_rows);
    recommendations.extend(utilisation_rows);
    recommendations.extend(idle_endpoints.into_iter().map(|(_, r)| r));
    let utilisation_note = (!notes.is_empty()).then(|| notes.join(" "));
    // Across kinds first, from each row's own saving; then the per-usage-type figures.
    super::compounding::compound_all(
        &mut recommendations,
        &super::compounding::Spend::of(&usage, window),
        &hours,
    );
    compound(&mut recommendations, window);
    // Never more than the row's figure on its usage type (the two compound the same rows
    // there; this keeps recurring shares from differing in the last digit).
    for r in &mut recommendations {
        r.compounded_saving = r.compounded_saving.min(r.monthly_saving.max(Decimal::ZERO));
    }
    recommendations.retain(|r| r.monthly_saving > Decimal::ZERO);
    sort(&mut recommendations);
    Ok(Insights {
        window: Some(window),
        recommendations,
        utilisation,
        gpus,
        idle_now,
        utilisation_note,
        observed_spot: rules::spot::observed_discounts(&usage),
        pricing,
        inferred,
        commitments,
        data_version: Some(data_version),
    })
}

/// Savings on one usage type compound rather than add: deleting an idle endpoint first, then
/// right-size, then spot on what the smaller type costs, then a schedule on what is left.
/// Each later row is cut to its share of what the earlier ones leave, so a usage type's rows
/// never sum above its spend.
pub fn compound(recommendations: &mut [Recommendation], window: Window) {
    use super::model::Kind;
    const ORDER: [Kind; 4] = [Kind::IdleEndpoint, Kind::Rightsize, Kind::Spot, Kind::AlwaysOn];
    let mut groups: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
    for (index, r) in recommendations.iter().enumerate() {
        if ORDER.contains(&r.kind) && !r.usage_type.is_empty() {
            groups
                .entry((r.project.clone(), r.usage_type.clone()))
                .or_default()
                .push(index);
        }
    }
    for indexes in groups.values_mut().filter(|g| g.len() > 1) {
        indexes.sort_by_key(|i| ORDER.iter().position(|k| *k == recommendations[*i].kind));
        let mut left = Decimal::ONE;
        let mut before: Vec<&'static str> = Vec::new();
        for &i in indexes.iter() {
            let r = &mut recommendations[i];
            let whole = window.per_30_days(r.basis_cost.unwrap_or_default());
            if whole <= Decimal::ZERO {
                continue;
            }
            let share = r.monthly_saving / whole;
            if !before.is_empty() {
                r.monthly_saving *= left;
                r.detail.push_str(&format!(
                    "; counted after {}, which leave {} of today's spend",
                    before.join(" and "),
                    super::rules::percent(left)
                ));
            }
            left *= Decimal::ONE - share;
            before.push(r.kind.key());
        }
    }
}

/// Largest monthly saving first; ties in a stable order (kind, team, project, usage type).
pub fn sort(recommendations: &mut [Recommendation]) {
    recommendations.sort_by(|a, b| {
        b.monthly_saving
            .cmp(&a.monthly_saving)
            .then_with(|| a.kind.cmp(&b.kind))
            .then_with(|| a.team.cmp(&b.team))
            .then_with(|| a.project.cmp(&b.project))
            .then_with(|| a.usage_type.cmp(&b.usage_type))
    });
}
