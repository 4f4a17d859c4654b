//! Utilisation types both builds use: each GPU's judgement, each project's summary, and
//! what is idle now.

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

/// The counter a GPU's activity is judged by, best first: SM activity says how much of the
/// GPU worked; engine activity and `GPU_UTIL` only that some kernel ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActivityMetric {
    SmActive,
    EngineActive,
    GpuUtil,
}

impl ActivityMetric {
    /// The DCGM field, as the page names it.
    pub fn field(self) -> &'static str {
        match self {
            ActivityMetric::SmActive => "DCGM_FI_PROF_SM_ACTIVE",
            ActivityMetric::EngineActive => "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
            ActivityMetric::GpuUtil => "DCGM_FI_DEV_GPU_UTIL",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            ActivityMetric::SmActive => "SM activity",
            ActivityMetric::EngineActive => "engine activity",
            ActivityMetric::GpuUtil => "GPU util",
        }
    }
}

/// One GPU's judgement over the window. Percentages are of five-minute step means.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuUse {
    /// The project, or `host:<Hostname>` for series without the project label.
    pub project: String,
    /// What idle alerts and their snoozes name: `<host>/gpu<index>`, or
    /// `endpoint/<region>/<name>/<variant>` for a SageMaker endpoint variant.
    pub resource: String,
    /// GPUs the row stands for (an endpoint variant's instances × GPUs).
    pub gpus: u32,
    pub host: String,
    pub gpu: String,
    pub judged_by: ActivityMetric,
    /// Mean, median and 95th percentile of the step means, by `judged_by`.
    pub mean: Decimal,
    pub p50: Decimal,
    pub p95: Decimal,
    /// Whole-window means of the other counters, where published.
    pub gpu_util_mean: Option<Decimal>,
    pub sm_active_mean: Option<Decimal>,
    pub tensor_active_mean: Option<Decimal>,
    pub sm_occupancy_mean: Option<Decimal>,
    pub observed_hours: Decimal,
    /// Hours in stretches of 30 minutes or more below 1 %, whatever memory is resident.
    pub idle_hours: Decimal,
    /// The start (unix seconds) of the idle stretch that runs to now, if any.
    pub idle_since: Option<i64>,
    /// Outside idle stretches, kernels run 40 % of the time or more (engine activity, else
    /// `GPU_UTIL`) while under 10 % of the SMs work.
    pub busy_but_ineffective: bool,
    /// Those two means (kernels running, SM activity), in percent, when flagged.
    pub busy_but_ineffective_figures: Option<(Decimal, Decimal)>,
    /// The time (unix seconds) of its newest step with data.
    pub seen_until: Option<i64>,
    /// Hours in stretches of 30 minutes or more with memory above 85 % of the card.
    pub memory_pressure_hours: Decimal,
    pub peak_memory_used_mib: Option<Decimal>,
    pub memory_total_mib: Option<Decimal>,
    pub verdict: String,
}

/// Per-project GPU utilisation from DCGM through Prometheus.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Utilisation {
    /// The project, or `host:<Hostname>` for series without the project label.
    pub project: String,
    pub gpus: usize,
    /// Mean, median and 95th percentile of every step mean of its GPUs.
    pub mean: Decimal,
    pub p50: Decimal,
    pub p95: Decimal,
    /// The mean over the steps outside idle stretches (what "underused" reads).
    pub active_mean: Decimal,
    /// "SM activity", or each counter with its GPU count when they differ.
    pub judged_by: String,
    pub observed_gpu_hours: Decimal,
    /// GPU-hours billed in the billing window; `None` for unmapped hosts.
    pub billed_gpu_hours: Option<Decimal>,
    /// Observed ÷ billed GPU-hours, in percent.
    pub coverage: Option<Decimal>,
    pub idle_gpu_hours: Decimal,
    pub idle_gpus_now: usize,
    pub busy_but_ineffective: usize,
    pub memory_pressure: usize,
    pub peak_memory_used_mib: Option<Decimal>,
    pub memory_total_mib: Option<Decimal>,
    pub band: String,
    /// The project's GPU spend ÷ its billed GPU-hours (the organisation's for unmapped hosts).
    pub usd_per_gpu_hour: Option<Decimal>,
}

/// A GPU or endpoint idle now: what idle alerts are about, and what the page lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdleNow {
    pub resource: String,
    /// The project, or `host:<Hostname>` for series without the project label.
    pub project: String,
    /// The project's team; empty when no team owns it.
    pub team: String,
    /// Unix seconds the idle stretch began.
    pub since: i64,
    /// Unix seconds of the newest data that shows it idle (the read's time, for an hourly
    /// CloudWatch read): what a stretch is remembered as idle until.
    pub seen_at: i64,
    /// GPUs it stands for.
    pub gpus: u32,
    /// What it costs an hour: GPUs × the project's $ per GPU-hour, or an endpoint's instances
    /// at the catalogue's `ml.` price.
    pub usd_per_hour: Option<Decimal>,
}

/// An idle resource as the Savings page shows it, with its snooze.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdleRow {
    pub idle: IdleNow,
    pub hours: Decimal,
    pub usd_so_far: Option<Decimal>,
    /// RFC 3339 (UTC) end of a snooze in force, and its reason.
    pub snoozed_until: Option<String>,
    pub snooze_reason: String,
    /// Admins, and leads of the project's team.
    pub can_snooze: bool,
}
