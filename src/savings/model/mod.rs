//! GPU savings types both builds use: what a project runs, the recommendations, the Savings
//! page and the what-if calculator.

pub mod commitments;
mod report;
mod utilisation;

use chrono::NaiveDate;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

pub use report::{HeldBack, LeverRow, SavingsReport, TeamRow};
pub use utilisation::{ActivityMetric, GpuUse, IdleNow, IdleRow, Utilisation};

/// What a project runs. The field values are a contract of the config file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum Workload {
    Training,
    Batch,
    Serving,
    Dev,
    #[default]
    Unknown,
}

impl Workload {
    pub const ALL: [Workload; 5] = [
        Workload::Training,
        Workload::Batch,
        Workload::Serving,
        Workload::Dev,
        Workload::Unknown,
    ];

    pub fn key(self) -> &'static str {
        match self {
            Workload::Training => "training",
            Workload::Batch => "batch",
            Workload::Serving => "serving",
            Workload::Dev => "dev",
            Workload::Unknown => "unknown",
        }
    }

    pub fn parse(text: &str) -> Option<Workload> {
        Workload::ALL.into_iter().find(|w| w.key() == text)
    }
}

/// How sure an inferred workload is (`savings::inference` says what each level rests on).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum Confidence {
    Low,
    Medium,
    High,
}

impl Confidence {
    pub fn key(self) -> &'static str {
        match self {
            Confidence::Low => "low",
            Confidence::Medium => "medium",
            Confidence::High => "high",
        }
    }
}

/// A workload read from billing (and utilisation) for a project that declares none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Inferred {
    pub workload: Workload,
    /// What it rests on, in words: "bursty runs of 6–40 h (3 runs)".
    pub basis: String,
    pub confidence: Confidence,
}

/// Numeric precision of a model's weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    Fp32,
    Bf16,
    Fp16,
    Int8,
    Int4,
}

impl Precision {
    pub const ALL: [Precision; 5] = [
        Precision::Fp32,
        Precision::Bf16,
        Precision::Fp16,
        Precision::Int8,
        Precision::Int4,
    ];

    pub fn key(self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Bf16 => "bf16",
            Precision::Fp16 => "fp16",
            Precision::Int8 => "int8",
            Precision::Int4 => "int4",
        }
    }

    pub fn parse(text: &str) -> Option<Precision> {
        Precision::ALL.into_iter().find(|p| p.key() == text)
    }

    /// Bytes per parameter.
    pub fn bytes(self) -> Decimal {
        match self {
            Precision::Fp32 => Decimal::from(4),
            Precision::Bf16 | Precision::Fp16 => Decimal::from(2),
            Precision::Int8 => Decimal::ONE,
            Precision::Int4 => Decimal::new(5, 1),
        }
    }
}

/// A model a project declares: billions of parameters and the precision it runs at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Model {
    pub params_b: Decimal,
    pub precision: Precision,
}

/// What a project declares about itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProjectFacts {
    pub workload: Workload,
    pub model: Option<Model>,
}

/// What the Project page says a project runs, and what the caller may do about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectWorkload {
    pub facts: ProjectFacts,
    /// Admins declare the workload and model.
    pub may_edit: bool,
    /// Admins and the team's leads confirm an inferred workload.
    pub may_confirm: bool,
}

/// The kinds of recommendation, in the CSV's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum Kind {
    Spot,
    Rightsize,
    AlwaysOn,
    Commitment,
    IdleGpu,
    Underused,
    IdleEndpoint,
}

impl Kind {
    pub const ALL: [Kind; 7] = [
        Kind::Spot,
        Kind::Rightsize,
        Kind::AlwaysOn,
        Kind::Commitment,
        Kind::IdleGpu,
        Kind::Underused,
        Kind::IdleEndpoint,
    ];

    pub fn key(self) -> &'static str {
        match self {
            Kind::Spot => "spot",
            Kind::Rightsize => "rightsize",
            Kind::AlwaysOn => "always_on",
            Kind::Commitment => "commitment",
            Kind::IdleGpu => "idle_gpu",
            Kind::Underused => "underused",
            Kind::IdleEndpoint => "idle_endpoint",
        }
    }

    pub fn parse(text: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.key() == text)
    }

    /// A `?kind=` filter: empty is every kind.
    pub fn filter(text: Option<&str>) -> Result<Option<Kind>, &'static str> {
        match text.filter(|k| !k.is_empty()) {
            None => Ok(None),
            Some(k) => Kind::parse(k)
                .map(Some)
                .ok_or("expected spot, rightsize, always_on, commitment, idle_gpu, underused or idle_endpoint"),
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Kind::Spot => "Spot",
            Kind::Rightsize => "Right-size",
            Kind::AlwaysOn => "Always on",
            Kind::Commitment => "Commitment",
            Kind::IdleGpu => "Idle GPU",
            Kind::Underused => "Underused",
            Kind::IdleEndpoint => "Idle endpoint",
        }
    }
}

/// One recommendation: what to change, what it saves per 30 days and what it rests on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Recommendation {
    pub kind: Kind,
    /// Empty for organisation-wide rows (commitments) and unmapped projects.
    pub team: String,
    pub project: String,
    pub usage_type: String,
    pub instance_type: String,
    pub recommended: String,
    pub from: NaiveDate,
    /// Exclusive.
    pub to: NaiveDate,
    /// Exact unblended spend of the project and usage type in the window; `None` for rows
    /// not tied to one usage type.
    pub basis_cost: Option<Decimal>,
    /// Exact, per 30 days, this change on its own; rounded to cents only where shown or
    /// written. Rows on one usage type count after the earlier ones on it (`insights::compound`).
    pub monthly_saving: Decimal,
    /// What it saves after every earlier recommendation on the same project's GPU spend, all
    /// kinds together (`compounding`): a project's sum never passes its spend. What totals add.
    #[serde(default)]
    pub compounded_saving: Decimal,
    pub detail: String,
    /// For utilisation rows: the unmapped host they are about (empty for a project); for an
    /// idle endpoint, `endpoint/<region>/<name>/<variant>`.
    #[serde(default)]
    pub host: String,
    /// The workload this row assumed, when it was inferred rather than declared.
    #[serde(default)]
    pub inferred: Option<Inferred>,
}

impl Recommendation {
    /// The identity decisions are recorded against: the same change proposed again on a
    /// later day is the same recommendation. Utilisation rows are one per project or
    /// unmapped host (their instance type is only the project's costliest, which may change).
    pub fn key(&self) -> String {
        match self.kind {
            Kind::IdleGpu | Kind::Underused | Kind::IdleEndpoint => {
                [self.kind.key(), &self.project, &self.host].join("\u{1f}")
            }
            _ => [self.kind.key(), &self.project, &self.usage_type, &self.instance_type].join("\u{1f}"),
        }
    }

    /// Whether totals count it: not while it rests on an inferred workload nobody confirmed
    /// (the row is listed, with its basis and confidence, and summed apart as "to confirm").
    pub fn counts_in_totals(&self) -> bool {
        self.inferred.is_none()
    }
}

/// Where a recommendation stands with the people who own it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum Decision {
    Open,
    Accepted,
    Dismissed,
}

/// A recommendation as the Savings page lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Opportunity {
    pub recommendation: Recommendation,
    /// What runs now, in words ("p4d.24xlarge, on-demand, 8 GPUs"); the usage type itself is
    /// in the evidence.
    pub now: String,
    pub key: String,
    pub decision: Decision,
    pub reason: String,
    /// Whether the caller may accept or dismiss it (admins, and leads of its team).
    pub can_decide: bool,
}

/// An accepted recommendation and what it has saved so far.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerEntry {
    pub kind: Kind,
    pub team: String,
    pub project: String,
    pub usage_type: String,
    pub decided_on: NaiveDate,
    pub decided_by: String,
    pub reason: String,
    /// The row's own saving when it was accepted.
    pub proposed_monthly_saving: Decimal,
    /// What Accepted counts: what the row added after the others it was proposed with (at
    /// most its group's baseline, shared).
    #[serde(default)]
    pub accepted_monthly_saving: Decimal,
    /// This decision's share of its group's spend in the 30 days before the group's first
    /// decision (decisions whose measured spend overlaps are measured together, once).
    pub spend_before: Decimal,
    /// Its share of the group's spend in the days after (at most 30), scaled to 30 days.
    pub spend_after_per_30_days: Option<Decimal>,
    /// How many settled days after the group's first decision the figure rests on (0 to 30).
    pub days_after: i64,
    /// `spend_before − spend_after_per_30_days`, at most `spend_before`; `None` until a day
    /// after the decision is settled.
    pub realised_monthly_saving: Option<Decimal>,
    /// The other standing decisions measured on the same spend.
    #[serde(default)]
    pub measured_with: usize,
}

/// The ledger's totals.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct LedgerTotals {
    pub proposed: Decimal,
    /// How many open recommendations `proposed` sums.
    pub proposed_rows: usize,
    /// Open recommendations resting on an inferred workload, and what they would add once
    /// a lead confirms it: apart from `proposed`.
    #[serde(default)]
    pub to_confirm: Decimal,
    #[serde(default)]
    pub to_confirm_rows: usize,
    pub accepted: Decimal,
    pub realised: Decimal,
}

/// Rows the Savings page lists: rendering 1,600 rows with their forms took 140 ms of a
/// render at 10M facts (docs/PERFORMANCE.md); nobody reads past the top few hundred.
pub const PAGE_ROWS: usize = 200;

/// The Savings page's data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavingsData {
    pub from: Option<NaiveDate>,
    pub to: Option<NaiveDate>,
    /// The largest [`PAGE_ROWS`] opportunities after the filters; the CSV has them all.
    pub opportunities: Vec<Opportunity>,
    /// How many opportunities the filters match.
    pub opportunities_total: usize,
    pub ledger: Vec<LedgerEntry>,
    pub totals: LedgerTotals,
    pub utilisation: Vec<Utilisation>,
    /// The GPUs' own judgements, flagged ones first, at most [`PAGE_ROWS`].
    pub gpus: Vec<GpuUse>,
    /// How many GPUs report in all.
    pub gpus_total: usize,
    /// GPUs and endpoints idle now, longest first.
    pub idle_now: Vec<IdleRow>,
    /// `BURNRATE_IDLE_ALERT_HOURS`.
    pub idle_alert_hours: u32,
    /// `None` when Prometheus is configured and answered; else why utilisation is missing.
    pub utilisation_note: Option<String>,
    pub teams: Vec<String>,
    /// Every linked account Cost Explorer named (ID, name), for the account filter.
    pub accounts: Vec<(String, String)>,
    pub spot_discount_percent: Decimal,
    /// Owned commitments, the options on the uncovered baseline, and AWS's recommendation.
    #[serde(default)]
    pub commitments: commitments::Commitments,
    /// When the recommendations shown were computed, and whether newer ones are being
    /// computed (the data moved since).
    #[serde(default)]
    pub computed_at: Option<chrono::DateTime<chrono::Utc>>,
    #[serde(default)]
    pub refreshing: bool,
}

/// What the Overview, Team and Project pages show: open opportunities and their sum.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct SavingsAvailable {
    pub count: usize,
    pub monthly_saving: Decimal,
    /// Open rows left out of the sum because they rest on an inferred workload, and what they
    /// would add once a lead confirms it.
    #[serde(default)]
    pub to_confirm: usize,
    #[serde(default)]
    pub to_confirm_saving: Decimal,
}

/// The what-if calculator's inputs, as the URL carries them (all optional text, so any
/// link opens; bad values are reported beside their field).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct WhatIfQuery {
    pub params_b: Option<String>,
    pub precision: Option<String>,
    pub workload: Option<String>,
    /// Instances running at once.
    pub instances: Option<String>,
    /// Hours a day they run (24 for an always-on endpoint).
    pub hours_per_day: Option<String>,
    /// Days: a month (30) or a training run's length.
    pub days: Option<String>,
    /// Tokens served per day, for the managed per-token comparison.
    pub tokens_per_day: Option<String>,
}

/// One instance type priced for the what-if run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WhatIfRow {
    pub instance_type: String,
    pub accelerators: String,
    pub total_memory_gib: Decimal,
    pub hourly: Decimal,
    pub on_demand: Decimal,
    /// `None` for serving, which stays on-demand.
    pub spot: Option<Decimal>,
    pub spot_discount: Decimal,
    /// Whether the discount was observed in this organisation's data.
    pub spot_observed: bool,
    pub commitment: Decimal,
}

/// A managed model priced per token for the same volume, against an always-on endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManagedRow {
    pub name: String,
    pub usd_per_million_tokens: Decimal,
    pub monthly: Decimal,
    /// Tokens per day above which the self-hosted endpoint is cheaper.
    pub break_even_tokens_per_day: Option<Decimal>,
}

/// The what-if answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct WhatIf {
    pub query: WhatIfQuery,
    /// (field, message) for each input that could not be used.
    pub errors: Vec<(String, String)>,
    pub memory_needed_gib: Option<Decimal>,
    pub hours: Decimal,
    /// NVIDIA types that fit, cheapest first.
    pub fits: Vec<WhatIfRow>,
    /// Neuron types that fit: cheaper sometimes, but they need the Neuron SDK.
    pub neuron: Vec<WhatIfRow>,
    /// An always-on endpoint on the cheapest fit for 30 days.
    pub endpoint_monthly: Option<Decimal>,
    pub managed: Vec<ManagedRow>,
    pub savings_plan_discount: Decimal,
}
