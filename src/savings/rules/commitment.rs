//! Commitments that see what is owned. Per instance family (EC2 and SageMaker apart, since
//! each has its own Savings Plan), the steady on-demand baseline is the 10th percentile of
//! daily on-demand instance-hours in the window ÷ 24: capacity that ran on at least nine days
//! in ten. Usage a Savings Plan or a reservation covers still bills as `BoxUsage`, so Cost
//! Explorer's coverage (read by ingestion) says how much of that baseline is already covered;
//! burnrate commits 60 % of what is left, priced under every option AWS sells
//! (`commitments::offers`), and headlines the 1-year no-upfront Savings Plan: no cash upfront,
//! and it follows the workload across types and regions. While an owned plan of the same kind
//! is underused, it advises none: the unused commitment would cover the baseline first.

use std::collections::BTreeMap;

use chrono::NaiveDate;
use rust_decimal::Decimal;
use rust_decimal::prelude::ToPrimitive;

use super::{Inputs, per_hour, percent};
use crate::savings::commitments::offers;
use crate::savings::commitments::{OwnedRead, covers_every_family, underused_below};
use crate::savings::model::commitments::{
    AwsRecommendation, Commitments, FamilyCommitment, Offer, OwnedCommitment, Payment, Terms,
};
use crate::savings::model::{Kind, Recommendation};
use crate::usage_type::PurchaseOption;

/// The share of the uncovered baseline to commit.
pub fn target_share() -> Decimal {
    Decimal::new(6, 1)
}

/// The headline option: no cash upfront, and a plan follows the workload.
pub const HEADLINE: Terms = Terms {
    offer: Offer::SavingsPlan,
    years: 1,
    payment: Payment::NoUpfront,
};

#[derive(Default)]
struct Family {
    daily_on_demand: BTreeMap<NaiveDate, Decimal>,
    /// Hours and their on-demand price per (instance type, region).
    by_type: BTreeMap<(String, String), (Decimal, Decimal)>,
}

impl Family {
    fn on_demand_hours(&self) -> Decimal {
        self.by_type.values().map(|(hours, _)| *hours).sum()
    }

    /// What the family's hours cost at on-demand prices.
    fn on_demand_value(&self) -> Decimal {
        self.by_type.values().map(|(hours, rate)| *hours * *rate).sum()
    }
}

/// The on-demand price of an hour of `u`'s type: the catalogue's (with `pricing:`), because
/// the bill understates it wherever commitments already apply (a reservation's hours bill at
/// $0, a plan's are negated); the billed rate for a type the catalogue lacks.
fn on_demand_rate(inputs: &Inputs, u: &crate::savings::facts::Usage) -> Decimal {
    let billed = || {
        if u.hours > Decimal::ZERO {
            u.spend / u.hours
        } else {
            Decimal::ZERO
        }
    };
    inputs
        .pricing
        .hourly(&u.instance_type, &u.region, !u.is_ec2())
        .unwrap_or_else(billed)
}

/// The nearest-rank percentile (`percentile_disc`): the smallest value with at least `p` of
/// the values at or below it.
pub fn percentile(values: &mut [Decimal], p: Decimal) -> Option<Decimal> {
    if values.is_empty() {
        return None;
    }
    values.sort();
    let rank = (p * Decimal::from(values.len())).ceil();
    let index = rank.to_usize().unwrap_or(1).clamp(1, values.len()) - 1;
    values.get(index).copied()
}

/// The recommendations (one per family with an uncovered baseline) and the commitments
/// section: every option per family, the owned commitments' use, AWS's recommendation.
pub fn recommend(inputs: &Inputs, owned: &OwnedRead) -> (Vec<Recommendation>, Commitments) {
    let mut families: BTreeMap<(bool, String), Family> = BTreeMap::new();
    for u in inputs.usage.iter().filter(|u| u.purchase == PurchaseOption::OnDemand) {
        let rate = on_demand_rate(inputs, u);
        let family = families.entry((!u.is_ec2(), u.family.clone())).or_default();
        for (day, hours) in &u.daily_hours {
            *family.daily_on_demand.entry(*day).or_default() += hours;
        }
        let by_type = family
            .by_type
            .entry((u.instance_type.clone(), u.region.clone()))
            .or_insert((Decimal::ZERO, rate));
        by_type.0 += u.hours;
    }
    let owned_rows = owned_commitments(owned);
    let mut recommendations = Vec::new();
    let mut advice = Vec::new();
    for ((sagemaker, name), f) in families {
        let Some(family) = advise(inputs, owned, &owned_rows, sagemaker, &name, &f) else {
            continue;
        };
        if let Some(r) = headline(inputs, &family) {
            recommendations.push(r);
        }
        advice.push(family);
    }
    let aws = beside_aws(owned, &advice);
    let commitments = Commitments {
        read: owned.period,
        read_problem: None,
        skipped: Vec::new(),
        families: advice,
        owned: owned_rows,
        aws,
    };
    (recommendations, commitments)
}

fn advise(
    inputs: &Inputs,
    owned: &OwnedRead,
    owned_rows: &[OwnedCommitment],
    sagemaker: bool,
    name: &str,
    f: &Family,
) -> Option<FamilyCommitment> {
    let mut daily: Vec<Decimal> = inputs
        .window
        .each_day()
        .map(|d| f.daily_on_demand.get(&d).copied().unwrap_or_default())
        .collect();
    let p10 = percentile(&mut daily, Decimal::new(1, 1))?;
    if p10 <= Decimal::ZERO || f.on_demand_hours() <= Decimal::ZERO {
        return None;
    }
    let baseline = p10 / Decimal::from(24);
    let rate = f.on_demand_value() / f.on_demand_hours();
    let covered = covered_instances(owned, sagemaker, name, rate);
    let to_commit = target_share() * (baseline - covered).max(Decimal::ZERO);
    let on_demand_per_hour = to_commit * rate;
    let options = Terms::every(!sagemaker)
        .into_iter()
        .map(|terms| {
            let (discount, quoted) = family_discount(inputs, terms, f);
            offers::price(terms, discount, on_demand_per_hour, quoted)
        })
        .collect();
    let held_back = owned_rows
        .iter()
        .filter(|o| o.offer == Offer::SavingsPlan && covers_every_family(&o.id, sagemaker))
        .find(|o| o.underused)
        .map(|o| {
            format!(
                "no new commitment while the owned {} plans are {} used: plans apply by themselves, so an unused {} a month means hours with no eligible usage; buy more once they are used",
                o.id,
                o.utilisation().map(percent).unwrap_or_default(),
                crate::format::usd(o.unused_per_30_days)
            )
        });
    Some(FamilyCommitment {
        family: if sagemaker {
            format!("ml.{name}")
        } else {
            name.to_string()
        },
        baseline,
        covered,
        to_commit,
        on_demand_rate: rate,
        options,
        held_back,
    })
}

/// Instances of the family the owned commitments covered on average over the period read: a
/// Savings Plan's covered spend at the family's on-demand rate, a reservation's hours.
fn covered_instances(owned: &OwnedRead, sagemaker: bool, family: &str, rate: Decimal) -> Decimal {
    let hours = owned.hours();
    if hours <= Decimal::ZERO || rate <= Decimal::ZERO {
        return Decimal::ZERO;
    }
    let family_of = |scope: &str| -> String {
        let scope = scope.strip_prefix("ml.").unwrap_or(scope);
        scope.split('.').next().unwrap_or(scope).to_string()
    };
    let mut covered = Decimal::ZERO;
    for c in owned
        .coverage
        .iter()
        .filter(|c| c.sagemaker == sagemaker && family_of(&c.scope) == family)
    {
        covered += match c.offer {
            Offer::SavingsPlan => c.covered_usd / rate / hours,
            Offer::Reserved => c.covered_hours / hours,
        };
    }
    covered
}

/// The family's discount under `terms`: each instance type's (quoted or default) weighted by
/// what its hours cost on demand.
fn family_discount(inputs: &Inputs, terms: Terms, f: &Family) -> (Decimal, bool) {
    let mut paid = Decimal::ZERO;
    let mut quoted = false;
    for ((instance_type, region), (hours, rate)) in &f.by_type {
        let (discount, q) = offers::discount_for(inputs.pricing, terms, instance_type, region, *rate);
        paid += *hours * *rate * (Decimal::ONE - discount);
        quoted |= q;
    }
    let value = f.on_demand_value();
    if value <= Decimal::ZERO {
        return (offers::default_discount(inputs.pricing, terms), false);
    }
    (Decimal::ONE - paid / value, quoted)
}

fn headline(inputs: &Inputs, family: &FamilyCommitment) -> Option<Recommendation> {
    if family.to_commit <= Decimal::ZERO || family.held_back.is_some() {
        return None;
    }
    let option = family.options.iter().find(|o| o.terms == HEADLINE)?;
    let best = family
        .options
        .iter()
        .max_by(|a, b| a.saving_per_30_days.cmp(&b.saving_per_30_days))
        .filter(|b| b.terms != HEADLINE);
    let plan = if family.family.starts_with("ml.") {
        "SageMaker"
    } else {
        "Compute"
    };
    let mut detail = format!(
        "steady on-demand baseline {} instances (10th percentile of daily {} on-demand hours ÷ 24) at {}; \
         owned commitments cover {} of them; committing 60% of the {} left costs {} for {} off; \
         break-even: {}, and the plan pays while at least {} of it is used",
        crate::format::quantity(family.baseline, 2),
        family.family,
        per_hour(family.on_demand_rate),
        crate::format::quantity(family.covered, 2),
        crate::format::quantity(family.baseline - family.covered, 2),
        per_hour(option.recurring_per_hour),
        percent(option.discount),
        option
            .break_even_month
            .map_or("never within the term".to_string(), |m| format!("month {m}")),
        percent(Decimal::ONE - option.discount),
    );
    if let Some(best) = best {
        detail.push_str(&format!(
            "; the {} would save {} a month, with {} upfront",
            best.terms.label(),
            crate::format::usd(best.saving_per_30_days),
            crate::format::usd(best.upfront)
        ));
    }
    Some(Recommendation {
        kind: Kind::Commitment,
        team: String::new(),
        project: String::new(),
        usage_type: String::new(),
        instance_type: format!("{}.*", family.family),
        recommended: format!(
            "1-year no-upfront {plan} Savings Plan, {}",
            per_hour(option.recurring_per_hour)
        ),
        from: inputs.window.from,
        to: inputs.window.to,
        basis_cost: None,
        monthly_saving: option.saving_per_30_days,
        compounded_saving: Decimal::ZERO,
        detail,
        host: String::new(),
        inferred: None,
    })
}

fn owned_commitments(owned: &OwnedRead) -> Vec<OwnedCommitment> {
    let hours = owned.hours();
    owned
        .uses
        .iter()
        .map(|u| {
            let unused = (u.commitment_usd - u.used_usd).max(Decimal::ZERO);
            let per_30_days = if hours > Decimal::ZERO {
                unused * Decimal::from(720) / hours
            } else {
                Decimal::ZERO
            };
            OwnedCommitment {
                offer: u.offer,
                id: u.id.clone(),
                instance_type: u.instance_type.clone(),
                commitment: u.commitment_usd,
                used: u.used_usd,
                unused_per_30_days: per_30_days,
                net_savings: u.net_savings_usd,
                underused: u.commitment_usd > Decimal::ZERO && u.used_usd / u.commitment_usd < underused_below(),
            }
        })
        .collect()
}

/// AWS's recommendation per plan type beside burnrate's hourly commitment for the same
/// type, and why they differ.
fn beside_aws(owned: &OwnedRead, families: &[FamilyCommitment]) -> Vec<AwsRecommendation> {
    owned
        .aws
        .iter()
        .map(|a| {
            let sagemaker = a.plan_type == "SAGEMAKER_SP";
            let ours: Decimal = families
                .iter()
                .filter(|f| f.family.starts_with("ml.") == sagemaker && f.held_back.is_none())
                .filter_map(|f| f.options.iter().find(|o| o.terms == HEADLINE))
                .map(|o| o.recurring_per_hour)
                .sum();
            let gap = a.hourly_commitment - ours;
            let scope = if sagemaker {
                "all SageMaker usage, CPU instances included"
            } else {
                "all EC2, Fargate and Lambda usage, CPU instances included"
            };
            let mut difference = format!(
                "AWS sizes its plan on {scope}, hour by hour over the last {} days; burnrate commits 60% of the GPU families' \
                 uncovered steady baseline (capacity that ran on nine days in ten) over its window",
                a.lookback_days
            );
            if gap > Decimal::ZERO {
                difference.push_str(&format!(
                    ". AWS's commits {} more: non-GPU usage and the hours above the steady floor",
                    per_hour(gap)
                ));
            } else if gap < Decimal::ZERO {
                difference.push_str(&format!(
                    ". AWS's commits {} less: its lookback saw less steady usage than burnrate's window",
                    per_hour(-gap)
                ));
            }
            AwsRecommendation {
                plan_type: a.plan_type.clone(),
                hourly_commitment: a.hourly_commitment,
                monthly_saving: a.monthly_saving,
                saving_share: a.saving_share,
                lookback_days: a.lookback_days,
                burnrate_hourly: ours,
                difference,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tenth_percentile_is_nearest_rank() {
        let mut days: Vec<Decimal> = (1..=30).map(Decimal::from).collect();
        assert_eq!(percentile(&mut days, Decimal::new(1, 1)), Some(Decimal::from(3)));
        let mut few = vec![Decimal::from(5), Decimal::ZERO];
        assert_eq!(percentile(&mut few, Decimal::new(1, 1)), Some(Decimal::ZERO));
        assert_eq!(percentile(&mut [], Decimal::new(1, 1)), None);
        let mut one = vec![Decimal::from(7)];
        assert_eq!(percentile(&mut one, Decimal::new(1, 1)), Some(Decimal::from(7)));
    }
}
