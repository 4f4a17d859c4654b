//! Savings on the same spend compound, never add: what each recommendation saves after the
//! ones before it on the same project's GPU spend, all kinds together, so a project's savings
//! never sum above what it spends.
//!
//! Order, from removing waste to buying it cheaper: an idle endpoint deleted, idle GPUs
//! released, underused GPUs consolidated (these three on the project's whole GPU spend, or
//! an endpoint on its hosting usage), then right-size, spot and a business-hours schedule on
//! their usage type, and last a commitment on the on-demand spend the others leave of its
//! instance family. Each row keeps its share of the spend it was computed on (its own
//! saving ÷ that spend, per 30 days) and takes that share of what is left, never more than
//! what is left; a row on a project with no GPU spend in the window saves nothing here.
//! Untagged spend is one more such "project". Rows about an unmapped host (a GPU no
//! project's billing names) are no project's spend: they count as they are, together at most
//! what the other rows leave of the organisation's GPU spend. A commitment
//! covers only what is left on demand: spot and a right-size move their usage type's rest
//! off its family's on-demand price.

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

const ORDER: [Kind; 7] = [
    Kind::IdleEndpoint,
    Kind::IdleGpu,
    Kind::Underused,
    Kind::Rightsize,
    Kind::Spot,
    Kind::AlwaysOn,
    Kind::Commitment,
];

/// Sets every row's `compounded_saving`: what it saves after the rows before it. Reads each
/// row's own `monthly_saving`, so it runs before anything rewrites those.
pub fn compound_all(recommendations: &mut [Recommendation], spend: &[Spend]) {
    // What is left of each usage type's spend, per 30 days, as rows take their part; and
    // what is left of it on demand, which is all a commitment can cover: spot moves the
    // rest to spot prices, and a right-size to another type.
    let mut left: BTreeMap<(String, String), Decimal> = BTreeMap::new();
    let mut on_demand_left: BTreeMap<(String, String), Decimal> = BTreeMap::new();
    for s in spend {
        // A refund-only line is no spend to save on.
        let monthly = s.monthly.max(Decimal::ZERO);
        let key = (s.project.clone(), s.usage_type.clone());
        *left.entry(key.clone()).or_default() += monthly;
        if s.on_demand {
            *on_demand_left.entry(key).or_default() += monthly;
        }
    }
    let whole = left.clone();
    let project_whole =
        |project: &str| -> Decimal { whole.iter().filter(|((p, _), _)| p == project).map(|(_, v)| *v).sum() };
    let mut order: Vec<usize> = (0..recommendations.len()).collect();
    order.sort_by_key(|i| ORDER.iter().position(|k| *k == recommendations[*i].kind));
    let mut compounded_of = vec![Decimal::ZERO; recommendations.len()];
    for i in order {
        let r = &recommendations[i];
        let saving = r.monthly_saving.max(Decimal::ZERO);
        let key = (r.project.clone(), r.usage_type.clone());
        compounded_of[i] = if r.kind == Kind::Commitment {
            commitment(r, saving, spend, &on_demand_left)
        } else if r.project.is_empty() && !r.host.is_empty() {
            // An unmapped host's GPUs: no project's spend to take it from.
            saving
        } else if let Some(spent) = whole.get(&key) {
            let fraction = share(saving, *spent);
            let take = left.get(&key).copied().unwrap_or_default() * fraction;
            if let Some(remaining) = left.get_mut(&key) {
                *remaining -= take;
            }
            if let Some(on_demand) = on_demand_left.get_mut(&key) {
                *on_demand = match r.kind {
                    Kind::Spot | Kind::Rightsize => Decimal::ZERO,
                    _ => *on_demand * (Decimal::ONE - fraction),
                };
            }
            take
        } else {
            // On the project's whole GPU spend (the untagged spend's too): every usage type
            // gives up the same share.
            let fraction = share(saving, project_whole(&r.project));
            let mut take = Decimal::ZERO;
            for remaining in left.iter_mut().filter(|((p, _), _)| *p == r.project).map(|(_, v)| v) {
                let part = fraction * *remaining;
                *remaining -= part;
                take += part;
            }
            for on_demand in on_demand_left
                .iter_mut()
                .filter(|((p, _), _)| *p == r.project)
                .map(|(_, v)| v)
            {
                *on_demand *= Decimal::ONE - fraction;
            }
            take
        };
    }
    // An unmapped host's GPUs are no project's spend, but they are billed somewhere in the
    // organisation's: together such rows take at most what every other row leaves of it, so
    // the organisation's total never passes its GPU spend.
    let unmapped: Vec<bool> = recommendations
        .iter()
        .map(|r| r.project.is_empty() && !r.host.is_empty())
        .collect();
    let on = |host: bool| -> Decimal {
        compounded_of
            .iter()
            .zip(&unmapped)
            .filter(|(_, u)| **u == host)
            .map(|(c, _)| *c)
            .sum()
    };
    let room = (whole.values().copied().sum::<Decimal>() - on(false)).max(Decimal::ZERO);
    let hosts = on(true);
    if hosts > room {
        for (compounded, _) in compounded_of.iter_mut().zip(&unmapped).filter(|(_, u)| **u) {
            *compounded = *compounded * room / hosts;
        }
    }
    for (r, compounded) in recommendations.iter_mut().zip(compounded_of) {
        r.compounded_saving = compounded;
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
        compound_all(&mut rows, &spent);
        let by = |kind: Kind| rows.iter().find(|r| r.kind == kind).expect("row").compounded_saving;
        // Worked by hand. Idle endpoint first: 1000 of g5.xlarge's 4000 (25 %): leaves 3000.
        assert_eq!(by(Kind::IdleEndpoint), d("1000"));
        // Idle GPUs, 50 % of the project's 10,000: half of 6000 and of 3000 = 4500; leaves 3000
        // and 1500.
        assert_eq!(by(Kind::IdleGpu), d("4500"));
        // Underused, 20 %: 600 + 300 = 900; leaves 2400 and 1200.
        assert_eq!(by(Kind::Underused), d("900"));
        // Right-size, 3000 of 6000 (50 %) of the 2400 left: 1200; leaves 1200.
        assert_eq!(by(Kind::Rightsize), d("1200"));
        // Spot, 3900 of 6000 (65 %) of 1200: 780; leaves 420.
        assert_eq!(by(Kind::Spot), d("780"));
        // Schedule, 2000 of 4000 (50 %) of g5.xlarge's 1200 left: 600; leaves 600.
        assert_eq!(by(Kind::AlwaysOn), d("600"));
        // Commitment: 3000 on 10,000 of g5 on-demand. g5.12xlarge went to spot after its
        // right-size, so none of it is on demand; g5.xlarge's on-demand part is what idle
        // (25 %, 50 %), underused (20 %) and the schedule (50 %) leave: 4000 × 0.75 × 0.5 ×
        // 0.8 × 0.5 = 600. 3000 × 600/10,000 = 180.
        assert_eq!(by(Kind::Commitment), d("180"));
        let sum: Decimal = rows
            .iter()
            .filter(|r| r.project == "train")
            .map(|r| r.compounded_saving)
            .sum();
        assert_eq!(sum, d("8980"));
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
        compound_all(&mut rows, &spent);
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
        compound_all(&mut rows, &spent);
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
        compound_all(&mut rows, &spent);
        let figures: Vec<Decimal> = rows.iter().map(|r| r.compounded_saving).collect();
        assert_eq!(figures, [d("300"), d("350"), d("350")]);
        // With room to spare, a host keeps its own figure.
        let mut rows = vec![row(Kind::IdleGpu, "p", "", "300"), host("10.0.0.1:9400")];
        compound_all(&mut rows, &spent);
        assert_eq!(rows[1].compounded_saving, d("500"));
    }
}
