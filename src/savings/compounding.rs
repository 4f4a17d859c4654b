//! Savings on the same spend compound, never add: what each recommendation saves after the
//! ones before it on the same project's GPU spend, all kinds together, so a project's savings
//! never sum above what it spends.
//!
//! Levers are counted by the GPU-hours they remove or reprice, from removing waste to buying
//! it cheaper:
//! 1. an idle endpoint deleted (its usage type's hours);
//! 2. idle GPUs released (the idle stretches, on the project's whole GPU spend);
//! 3. underused GPUs given back, or right-sized: alternatives on the same GPUs, so only the
//!    larger counts. Underused is a share of the hours idle leaves (it was measured outside
//!    idle stretches), a right-size a price ratio on its usage type;
//! 4. spot on its usage type;
//! 5. a business-hours schedule: only the off-hours that are not already idle stretches
//!    ([`Hours::schedule_after_idle`]), and nothing on a usage an idle endpoint's deletion
//!    already takes (the two are alternatives);
//! 6. last, a commitment on the on-demand spend the others leave of its instance family.
//!
//! Each row takes its share of what is left, never more than what is left; a row on a
//! project with no GPU spend in the window saves nothing here. Untagged spend is one more
//! such "project". Rows about an unmapped host (a GPU no project's billing names) are no
//! project's spend: they count as they are, together at most what the other rows leave of
//! the organisation's GPU spend. A commitment covers only what is left on demand: spot and a
//! right-size move their usage type's rest off its family's on-demand price.

use std::collections::BTreeMap;

use rust_decimal::Decimal;

use super::facts::{Usage, Window};
use super::model::{Kind, Recommendation};
use crate::usage_type::PurchaseOption;

/// One project's GPU usage type over the window, as the compounding needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spend {
    pub project: String,
    pub usage_type: String,
    /// The instance family, with `ml.` for SageMaker, as a commitment row names it.
    pub family: String,
    pub on_demand: bool,
    /// Per 30 days.
    pub monthly: Decimal,
}

impl Spend {
    pub fn of(usage: &[Usage], window: Window) -> Vec<Spend> {
        usage
            .iter()
            .map(|u| Spend {
                project: u.project.clone(),
                usage_type: u.usage_type.clone(),
                family: if u.is_ec2() {
                    u.family.clone()
                } else {
                    format!("ml.{}", u.family)
                },
                on_demand: u.purchase == PurchaseOption::OnDemand,
                monthly: window.per_30_days(u.spend),
            })
            .collect()
    }
}

/// What a project's observed GPU-hours show about the hours its levers remove: in all, in
/// idle stretches, and outside the business hours a schedule keeps (and idle there).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hours {
    pub observed: Decimal,
    pub idle: Decimal,
    pub off: Decimal,
    pub idle_off: Decimal,
}

impl Hours {
    fn add(&mut self, other: &Hours) {
        self.observed += other.observed;
        self.idle += other.idle;
        self.off += other.off;
        self.idle_off += other.idle_off;
    }

    /// Each usage type's observed hours, where the GPUs observed are known to be that usage
    /// type's: a SageMaker hosting usage's are its endpoints' (same project, region and
    /// type); any other usage's are its project's when the project has no other GPU usage
    /// type. Elsewhere a usage has none, and a schedule there counts by its own share.
    pub fn by_usage(
        usage: &[super::facts::Usage],
        by_project: &BTreeMap<String, Hours>,
        by_endpoint: &[(super::cloudwatch::Endpoint, Hours)],
    ) -> BTreeMap<(String, String), Hours> {
        let mut types: BTreeMap<&str, std::collections::BTreeSet<&str>> = BTreeMap::new();
        for u in usage {
            types.entry(&u.project).or_default().insert(&u.usage_type);
        }
        let mut out = BTreeMap::new();
        for u in usage {
            let found = if u.sagemaker == Some(crate::usage_type::SageMakerUse::Hosting) {
                let mine: Vec<&Hours> = by_endpoint
                    .iter()
                    .filter(|(e, _)| {
                        e.project.as_deref() == Some(u.project.as_str())
                            && e.region == u.region
                            && e.instance_type == format!("ml.{}", u.instance_type)
                    })
                    .map(|(_, h)| h)
                    .collect();
                (!mine.is_empty()).then(|| {
                    let mut sum = Hours::default();
                    mine.into_iter().for_each(|h| sum.add(h));
                    sum
                })
            } else if types.get(u.project.as_str()).is_some_and(|t| t.len() == 1) {
                by_project.get(&u.project).cloned()
            } else {
                None
            };
            if let Some(hours) = found {
                out.insert((u.project.clone(), u.usage_type.clone()), hours);
            }
        }
        out
    }

    /// The share of the hours idle GPUs leave that a schedule still switches off: off-hours
    /// not already idle, of the hours not idle. An endpoint quiet every night saves nothing
    /// more by a schedule once its idle stretches are counted.
    pub fn schedule_after_idle(&self) -> Decimal {
        let busy = self.observed - self.idle;
        if busy <= Decimal::ZERO {
            return Decimal::ZERO;
        }
        ((self.off - self.idle_off) / busy).clamp(Decimal::ZERO, Decimal::ONE)
    }
}

const ORDER: [Kind; 7] = [
    Kind::IdleEndpoint,
    Kind::IdleGpu,
    Kind::Underused,
    Kind::Rightsize,
    Kind::Spot,
    Kind::AlwaysOn,
    Kind::Commitment,
];

/// What is left of each (project, usage type)'s spend, in all and on demand, as rows take
/// their part.
#[derive(Debug, Clone, Default)]
struct Left {
    all: BTreeMap<(String, String), Decimal>,
    on_demand: BTreeMap<(String, String), Decimal>,
}

impl Left {
    fn project(&self, project: &str) -> Decimal {
        self.all
            .iter()
            .filter(|((p, _), _)| p == project)
            .map(|(_, v)| *v)
            .sum()
    }

    /// Takes `fraction` of one usage type's rest; `moved` when the rest leaves on-demand
    /// prices (spot, a right-size).
    fn take_usage(&mut self, key: &(String, String), fraction: Decimal, moved: bool) -> Decimal {
        let take = self.all.get(key).copied().unwrap_or_default() * fraction;
        if let Some(remaining) = self.all.get_mut(key) {
            *remaining -= take;
        }
        if let Some(on_demand) = self.on_demand.get_mut(key) {
            *on_demand = if moved {
                Decimal::ZERO
            } else {
                *on_demand * (Decimal::ONE - fraction)
            };
        }
        take
    }

    /// Takes `fraction` of every usage type of a project.
    fn take_project(&mut self, project: &str, fraction: Decimal) -> Decimal {
        let mut take = Decimal::ZERO;
        for remaining in self.all.iter_mut().filter(|((p, _), _)| p == project).map(|(_, v)| v) {
            let part = fraction * *remaining;
            *remaining -= part;
            take += part;
        }
        for on_demand in self
            .on_demand
            .iter_mut()
            .filter(|((p, _), _)| p == project)
            .map(|(_, v)| v)
        {
            *on_demand *= Decimal::ONE - fraction;
        }
        take
    }
}

/// Sets every row's `compounded_saving`: what it saves after the rows before it. Reads each
/// row's own `monthly_saving`, so it runs before anything rewrites those. `hours` is each
/// usage type's observed GPU-hours, where utilisation was read ([`Hours::by_usage`]).
pub fn compound_all(
    recommendations: &mut [Recommendation],
    spend: &[Spend],
    hours: &BTreeMap<(String, String), Hours>,
) {
    let mut left = Left::default();
    for s in spend {
        // A refund-only line is no spend to save on.
        let monthly = s.monthly.max(Decimal::ZERO);
        let key = (s.project.clone(), s.usage_type.clone());
        *left.all.entry(key.clone()).or_default() += monthly;
        if s.on_demand {
            *left.on_demand.entry(key).or_default() += monthly;
        }
    }
    let whole = left.clone();
    let mut order: Vec<usize> = (0..recommendations.len()).collect();
    order.sort_by_key(|i| ORDER.iter().position(|k| *k == recommendations[*i].kind));
    let mut compounded_of = vec![Decimal::ZERO; recommendations.len()];
    let mut alternatives_done: Vec<String> = Vec::new();
    let mut notes: Vec<Option<String>> = vec![None; recommendations.len()];
    for i in order {
        let r = &recommendations[i];
        let saving = r.monthly_saving.max(Decimal::ZERO);
        let key = (r.project.clone(), r.usage_type.clone());
        let unmapped = is_unmapped(r);
        compounded_of[i] = match r.kind {
            Kind::Commitment => commitment(r, saving, spend, &left.on_demand),
            // An unmapped host's GPUs: no project's spend to take it from.
            _ if unmapped => saving,
            Kind::Underused | Kind::Rightsize => {
                if !alternatives_done.contains(&r.project) {
                    alternatives_done.push(r.project.clone());
                    let project = r.project.clone();
                    shrink_alternatives(recommendations, &project, &whole, &mut left, &mut compounded_of);
                }
                continue;
            }
            Kind::AlwaysOn => {
                let deleted = recommendations
                    .iter()
                    .any(|e| e.kind == Kind::IdleEndpoint && e.project == r.project && e.usage_type == r.usage_type);
                let idle_counted = recommendations
                    .iter()
                    .any(|e| e.kind == Kind::IdleGpu && e.project == r.project);
                let own = whole.all.get(&key).map(|w| share(saving, *w)).unwrap_or_default();
                let fraction = match hours.get(&key) {
                    _ if deleted => {
                        notes[i] = Some(
                            "; the alternative to deleting the idle endpoint, which totals count instead: adds nothing"
                                .to_string(),
                        );
                        Decimal::ZERO
                    }
                    Some(h) if idle_counted => {
                        notes[i] = Some(format!(
                            "; counted only on off-hours not already idle: {} of {} off-hours GPU-hours were idle stretches",
                            crate::format::number(h.idle_off, 1),
                            crate::format::number(h.off, 1)
                        ));
                        // Never more than its own share: a schedule priced on one account's
                        // part of the usage saves no more of it.
                        h.schedule_after_idle().min(own)
                    }
                    _ => own,
                };
                left.take_usage(&key, fraction, false)
            }
            _ => match whole.all.get(&key) {
                Some(spent) => left.take_usage(&key, share(saving, *spent), r.kind == Kind::Spot),
                // On the project's whole GPU spend (the untagged spend's too): every usage type
                // gives up the same share.
                None => left.take_project(&r.project, share(saving, whole.project(&r.project))),
            },
        };
    }
    // An unmapped host's GPUs are no project's spend, but they are billed somewhere in the
    // organisation's: together such rows take at most what every other row leaves of it, so
    // the organisation's total never passes its GPU spend.
    let unmapped: Vec<bool> = recommendations.iter().map(is_unmapped).collect();
    let on = |host: bool| -> Decimal {
        compounded_of
            .iter()
            .zip(&unmapped)
            .filter(|(_, u)| **u == host)
            .map(|(c, _)| *c)
            .sum()
    };
    let room = (whole.all.values().copied().sum::<Decimal>() - on(false)).max(Decimal::ZERO);
    let hosts = on(true);
    if hosts > room {
        for (compounded, _) in compounded_of.iter_mut().zip(&unmapped).filter(|(_, u)| **u) {
            *compounded = *compounded * room / hosts;
        }
    }
    // Of underused and right-size on one project's GPUs, the one not counted says so.
    for (i, r) in recommendations.iter().enumerate() {
        if !matches!(r.kind, Kind::Underused | Kind::Rightsize) || is_unmapped(r) || !compounded_of[i].is_zero() {
            continue;
        }
        let counted = recommendations.iter().enumerate().find(|(j, o)| {
            o.project == r.project
                && o.kind != r.kind
                && !compounded_of[*j].is_zero()
                && !is_unmapped(o)
                && matches!(o.kind, Kind::Underused | Kind::Rightsize)
        });
        if let Some((_, o)) = counted {
            notes[i] = Some(format!(
                "; the alternative to {} on the same GPUs, which saves more and totals count instead: adds nothing",
                o.kind.label().to_lowercase()
            ));
        }
    }
    for ((r, compounded), note) in recommendations.iter_mut().zip(compounded_of).zip(notes) {
        r.compounded_saving = compounded;
        if let Some(note) = note {
            r.detail.push_str(&note);
        }
    }
}

/// A utilisation row about a GPU no project's billing names (an untagged endpoint's row
/// names the endpoint, and is the untagged spend's).
fn is_unmapped(r: &Recommendation) -> bool {
    r.project.is_empty() && !r.host.is_empty() && r.kind != Kind::IdleEndpoint
}

/// Underused GPUs given back and right-sizes on one project shrink the same under-used GPUs:
/// each is worked out on what the earlier levers leave, and only the larger counts.
/// Underused was measured outside idle stretches, so its share is of the spend idle leaves.
fn shrink_alternatives(
    recommendations: &[Recommendation],
    project: &str,
    whole: &Left,
    left: &mut Left,
    compounded_of: &mut [Decimal],
) {
    let rows: Vec<usize> = (0..recommendations.len())
        .filter(|i| {
            let r = &recommendations[*i];
            r.project == project && !is_unmapped(r) && matches!(r.kind, Kind::Underused | Kind::Rightsize)
        })
        .collect();
    let idle_own: Decimal = recommendations
        .iter()
        .filter(|r| r.kind == Kind::IdleGpu && r.project == project && !is_unmapped(r))
        .map(|r| r.monthly_saving.max(Decimal::ZERO))
        .sum();
    // The larger alternative: its total, what it leaves, and each of its rows' part.
    type Trial = (Decimal, Left, Vec<(usize, Decimal)>);
    let mut best: Option<Trial> = None;
    for kind in [Kind::Underused, Kind::Rightsize] {
        let mut trial = left.clone();
        let mut taken = Vec::new();
        for &i in rows.iter().filter(|i| recommendations[**i].kind == kind) {
            let r = &recommendations[i];
            let saving = r.monthly_saving.max(Decimal::ZERO);
            let key = (r.project.clone(), r.usage_type.clone());
            let take = match whole.all.get(&key) {
                Some(spent) => trial.take_usage(&key, share(saving, *spent), true),
                None => trial.take_project(project, share(saving, whole.project(project) - idle_own)),
            };
            taken.push((i, take));
        }
        let total: Decimal = taken.iter().map(|(_, t)| *t).sum();
        if !taken.is_empty() && best.as_ref().is_none_or(|(b, _, _)| total > *b) {
            best = Some((total, trial, taken));
        }
    }
    if let Some((_, chosen, taken)) = best {
        *left = chosen;
        for (i, take) in taken {
            compounded_of[i] = take;
        }
    }
}

/// A saving's share of the spend it was computed on, at most all of it.
fn share(saving: Decimal, spent: Decimal) -> Decimal {
    if spent <= Decimal::ZERO {
        return Decimal::ZERO;
    }
    (saving / spent).min(Decimal::ONE)
}

/// A commitment's saving on what the other rows leave on demand of its family's spend.
fn commitment(
    r: &Recommendation,
    saving: Decimal,
    spend: &[Spend],
    on_demand_left: &BTreeMap<(String, String), Decimal>,
) -> Decimal {
    let family = r.instance_type.strip_suffix(".*").unwrap_or(&r.instance_type);
    // `facts::usage` has one line per project and usage type.
    let covered: Vec<&Spend> = spend.iter().filter(|s| s.on_demand && s.family == family).collect();
    let before: Decimal = covered.iter().map(|s| s.monthly.max(Decimal::ZERO)).sum();
    let after: Decimal = covered
        .iter()
        .map(|s| {
            on_demand_left
                .get(&(s.project.clone(), s.usage_type.clone()))
                .copied()
                .unwrap_or_default()
        })
        .sum();
    (saving * share(after, before)).min(after)
}

#[cfg(test)]
mod tests {
    use chrono::NaiveDate;

    use super::*;

    fn d(text: &str) -> Decimal {
        text.parse().expect("decimal")
    }

    fn row(kind: Kind, project: &str, usage_type: &str, saving: &str) -> Recommendation {
        let day = NaiveDate::from_ymd_opt(2026, 11, 1).expect("day");
        Recommendation {
            kind,
            team: "ml".into(),
            project: project.into(),
            usage_type: usage_type.into(),
            instance_type: if kind == Kind::Commitment {
                "g5.*".into()
            } else {
                "g5.12xlarge".into()
            },
            recommended: String::new(),
            from: day,
            to: day,
            basis_cost: None,
            monthly_saving: d(saving),
            compounded_saving: Decimal::ZERO,
            detail: String::new(),
            host: String::new(),
            inferred: None,
        }
    }

    fn spend(project: &str, usage_type: &str, monthly: &str) -> Spend {
        Spend {
            project: project.into(),
            usage_type: usage_type.into(),
            family: "g5".into(),
            on_demand: true,
            monthly: d(monthly),
        }
    }

    #[test]
    fn every_kind_on_one_project_compounds_and_never_passes_its_spend() {
        // One project, $10,000 a month on two usage types; every kind proposes a saving that
        // alone looks fine, together nearly twice the spend.
        let spent = [
            spend("train", "BoxUsage:g5.12xlarge", "6000"),
            spend("train", "BoxUsage:g5.xlarge", "4000"),
        ];
        let mut rows = vec![
            row(Kind::Commitment, "", "", "3000"),
            row(Kind::AlwaysOn, "train", "BoxUsage:g5.xlarge", "2000"),
            row(Kind::Spot, "train", "BoxUsage:g5.12xlarge", "3900"),
            row(Kind::Rightsize, "train", "BoxUsage:g5.12xlarge", "3000"),
            row(Kind::Underused, "train", "", "2000"),
            row(Kind::IdleGpu, "train", "", "5000"),
            row(Kind::IdleEndpoint, "train", "BoxUsage:g5.xlarge", "1000"),
        ];
        compound_all(&mut rows, &spent, &BTreeMap::new());
        let by = |kind: Kind| rows.iter().find(|r| r.kind == kind).expect("row").compounded_saving;
        // Worked by hand. Idle endpoint first: 1000 of g5.xlarge's 4000 (25 %): leaves 3000.
        assert_eq!(by(Kind::IdleEndpoint), d("1000"));
        // Idle GPUs, 50 % of the project's 10,000: half of 6000 and of 3000 = 4500; leaves 3000
        // and 1500.
        assert_eq!(by(Kind::IdleGpu), d("4500"));
        // Underused and right-size are alternatives on the same GPUs. Underused was measured
        // outside idle stretches: 2000 of the 5000 idle leaves (40 %) of the 4500 left = 1800.
        // Right-size: 3000 of 6000 (50 %) of g5.12xlarge's 3000 left = 1500. Underused counts;
        // it leaves 1800 and 900.
        assert_eq!(by(Kind::Underused), d("1800"));
        assert_eq!(by(Kind::Rightsize), Decimal::ZERO);
        let rightsize = rows.iter().find(|r| r.kind == Kind::Rightsize).expect("row");
        assert!(
            rightsize.detail.contains("alternative to underused"),
            "{}",
            rightsize.detail
        );
        // Spot, 3900 of 6000 (65 %) of 1800: 1170; leaves 630.
        assert_eq!(by(Kind::Spot), d("1170"));
        // The schedule is on the usage the idle endpoint's deletion takes from: the two are
        // alternatives, and the deletion counts.
        assert_eq!(by(Kind::AlwaysOn), Decimal::ZERO);
        // Commitment: 3000 on 10,000 of g5 on-demand. g5.12xlarge went to spot, so none of it
        // is on demand; g5.xlarge's on-demand part is what the others leave: 4000 × 0.75 ×
        // 0.5 × 0.6 = 900. 3000 × 900/10,000 = 270.
        assert_eq!(by(Kind::Commitment), d("270"));
        let sum: Decimal = rows
            .iter()
            .filter(|r| r.project == "train")
            .map(|r| r.compounded_saving)
            .sum();
        assert_eq!(sum, d("8470"));
        assert!(sum <= d("10000"));
        // Each row's own saving is kept.
        assert_eq!(rows.iter().map(|r| r.monthly_saving).sum::<Decimal>(), d("19900"));
    }

    #[test]
    fn a_saving_larger_than_its_spend_takes_all_of_it_and_nothing_more() {
        let spent = [spend("p", "BoxUsage:g5.xlarge", "100")];
        let mut rows = vec![
            row(Kind::IdleGpu, "p", "", "250"),
            row(Kind::Spot, "p", "BoxUsage:g5.xlarge", "65"),
            // A project with no GPU spend in the window saves nothing here.
            row(Kind::IdleGpu, "ghost", "", "40"),
        ];
        compound_all(&mut rows, &spent, &BTreeMap::new());
        assert_eq!(rows[0].compounded_saving, d("100"));
        assert_eq!(rows[1].compounded_saving, Decimal::ZERO);
        assert_eq!(rows[2].compounded_saving, Decimal::ZERO);
    }

    #[test]
    fn untagged_spend_compounds_like_a_project_and_an_unmapped_host_takes_only_what_is_left() {
        // Untagged SageMaker hosting, $900 a month: an idle endpoint takes all of it, so the
        // business-hours schedule on the same usage adds nothing.
        let spent = [spend("", "Host:ml.g5.xlarge", "900")];
        let mut host = row(Kind::IdleGpu, "", "", "75");
        host.host = "10.0.3.7:9400".into();
        let mut rows = vec![
            row(Kind::AlwaysOn, "", "Host:ml.g5.xlarge", "578.57"),
            row(Kind::IdleEndpoint, "", "Host:ml.g5.xlarge", "900"),
            host,
        ];
        compound_all(&mut rows, &spent, &BTreeMap::new());
        assert_eq!(rows[1].compounded_saving, d("900"));
        assert_eq!(rows[0].compounded_saving, Decimal::ZERO);
        // A GPU no project's billing names is billed somewhere in the organisation's $900,
        // all of which the endpoint's deletion already takes: nothing is left for it.
        assert_eq!(rows[2].compounded_saving, Decimal::ZERO);
    }

    #[test]
    fn unmapped_hosts_share_what_the_projects_leave_of_the_organisations_gpu_spend() {
        // $1,000 of GPU spend; idle GPUs take $300 of it, leaving $700. Two unmapped hosts
        // propose $500 each ($1,000): together they are cut to the $700 left, $350 each.
        let spent = [spend("p", "BoxUsage:g5.xlarge", "1000")];
        let host = |address: &str| {
            let mut r = row(Kind::IdleGpu, "", "", "500");
            r.host = address.into();
            r
        };
        let mut rows = vec![
            row(Kind::IdleGpu, "p", "", "300"),
            host("10.0.0.1:9400"),
            host("10.0.0.2:9400"),
        ];
        compound_all(&mut rows, &spent, &BTreeMap::new());
        let figures: Vec<Decimal> = rows.iter().map(|r| r.compounded_saving).collect();
        assert_eq!(figures, [d("300"), d("350"), d("350")]);
        // With room to spare, a host keeps its own figure.
        let mut rows = vec![row(Kind::IdleGpu, "p", "", "300"), host("10.0.0.1:9400")];
        compound_all(&mut rows, &spent, &BTreeMap::new());
        assert_eq!(rows[1].compounded_saving, d("500"));
    }

    #[test]
    fn a_schedule_saves_only_off_hours_that_idle_stretches_have_not_taken() {
        // The worked case: an endpoint on one GPU billing $5,040 over four weeks (672 GPU-hours
        // observed). Quiet every off-hour (4 × 108 = 432) and 80 business hours: 512 idle.
        // Idle alone: 5040 × 512/672 = 3840. A schedule alone: 5040 × 108/168 = 3240. Compounded
        // as independent shares they claimed 3840 + 64.29 % of 1200 = 4611.43 (91.5 %); the
        // hours they remove overlap, and together they remove 512 of 672 (76.2 %).
        let spent = [spend("chat", "Host:ml.g5.2xlarge", "5040")];
        let compound = |idle_off: &str| {
            let hours = BTreeMap::from([(
                ("chat".to_string(), "Host:ml.g5.2xlarge".to_string()),
                Hours {
                    observed: d("672"),
                    idle: d("512"),
                    off: d("432"),
                    idle_off: d(idle_off),
                },
            )]);
            let mut rows = vec![
                row(Kind::AlwaysOn, "chat", "Host:ml.g5.2xlarge", "3240"),
                row(Kind::IdleGpu, "chat", "", "3840"),
            ];
            compound_all(&mut rows, &spent, &hours);
            rows
        };
        let rows = compound("432");
        assert_eq!(rows[1].compounded_saving, d("3840"));
        assert_eq!(rows[0].compounded_saving, Decimal::ZERO);
        assert!(
            rows[0].detail.contains("432.0 of 432.0 off-hours GPU-hours were idle"),
            "{}",
            rows[0].detail
        );
        // Busy 40 off-hours the idle stretches left: a schedule takes those 40 of the 160 busy
        // hours idle leaves (25 %) of the $1,200 left = 300.
        assert_eq!(compound("392")[0].compounded_saving, d("300"));
    }

    #[test]
    fn deleting_an_idle_endpoint_and_scheduling_it_are_alternatives() {
        // $2,000 of hosting; the idle endpoint is $500 of it. The schedule on the same usage
        // (64.29 % alone) adds nothing: it was once 64.29 % of the 1500 left, 964.29.
        let spent = [spend("chat", "Host:ml.g5.xlarge", "2000")];
        let mut rows = vec![
            row(Kind::AlwaysOn, "chat", "Host:ml.g5.xlarge", "1285.71"),
            row(Kind::IdleEndpoint, "chat", "Host:ml.g5.xlarge", "500"),
        ];
        compound_all(&mut rows, &spent, &BTreeMap::new());
        assert_eq!(rows[1].compounded_saving, d("500"));
        assert_eq!(rows[0].compounded_saving, Decimal::ZERO);
        assert!(rows[0].detail.contains("alternative to deleting"));
    }

    #[test]
    fn right_size_and_underused_count_the_larger_never_both() {
        // $10,000 on one usage type: giving back underused GPUs saves 5000, moving to a smaller
        // type 8000. As steps they claimed 5000 + 80 % of 5000 = 9000 (90 %); they shrink the
        // same GPUs, so 8000 (80 %) counts and underused adds nothing.
        let spent = [spend("serve", "BoxUsage:g5.12xlarge", "10000")];
        let mut rows = vec![
            row(Kind::Underused, "serve", "", "5000"),
            row(Kind::Rightsize, "serve", "BoxUsage:g5.12xlarge", "8000"),
        ];
        compound_all(&mut rows, &spent, &BTreeMap::new());
        assert_eq!(rows[1].compounded_saving, d("8000"));
        assert_eq!(rows[0].compounded_saving, Decimal::ZERO);
        assert!(
            rows[0].detail.contains("alternative to right-size"),
            "{}",
            rows[0].detail
        );
    }

    #[test]
    fn a_schedule_reads_its_own_usage_hours_not_the_projects() {
        // The worked endpoint ($5,040, 512 of 672 hours idle, every off-hour idle) beside an
        // EC2 GPU of the same project busy around the clock ($5,040). Idle GPUs take 3840 of
        // the project's 10,080 (38.1 %) from each type. The schedule is on the endpoint's
        // usage, whose own hours leave no busy off-hour: it adds nothing. Read from the
        // project's hours (1344 observed, 512 idle, 864 off, 432 idle off) it took 432/832 of
        // the 3120 left, 1620, for 5460 where 3840 is all there is.
        let spent = [
            spend("chat", "Host:ml.g5.2xlarge", "5040"),
            spend("chat", "BoxUsage:g5.2xlarge", "5040"),
        ];
        let hours = BTreeMap::from([(
            ("chat".to_string(), "Host:ml.g5.2xlarge".to_string()),
            Hours {
                observed: d("672"),
                idle: d("512"),
                off: d("432"),
                idle_off: d("432"),
            },
        )]);
        let mut rows = vec![
            row(Kind::AlwaysOn, "chat", "Host:ml.g5.2xlarge", "3240"),
            row(Kind::IdleGpu, "chat", "", "3840"),
        ];
        compound_all(&mut rows, &spent, &hours);
        // 3840/10,080 of each 5040 is not a finite decimal: exact to 27 places.
        assert_eq!(rows[1].compounded_saving.round_dp(20), d("3840"));
        assert_eq!(rows[0].compounded_saving, Decimal::ZERO);
    }
}
