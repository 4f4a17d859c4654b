//! The allocation of one day's spend to teams, with no I/O. The precedence, applied in this
//! order to each project's daily total (the rollup's, so every view reconciles with it):
//!
//! 1. a project a team owns is that team's (`Direct`);
//! 2. an unowned or untagged project's spend is divided among its user tag values: its
//!    usage by their gross usage, and its credits, refunds and tax each by the users' own
//!    amounts of that record type (by gross usage where the user grains have none); the
//!    parts of users mapped to a team are that team's (`UserTag`);
//! 3. what is left of it in an AWS account mapped to a team is that team's (`Account`);
//! 4. what is left passes the shared-cost rules in order; each takes what it selects and
//!    divides it among its teams evenly, in proportion to their own spend that day
//!    (steps 1 to 3), or by fixed percentages (`Shared`);
//! 5. the rest is `Unassigned`.
//!
//! A project's spend in each linked account is its own `ProjectDay`, so every step sees
//! one account's spend, and every row keeps its account.
//!
//! The user and service grains only give shares: the amounts always come from the project's
//! total, and every division is `split_exact`, so a day's rows add up to the day's total to
//! the last digit. Shares are taken from unblended cost and applied to both metrics; a shared
//! rule's share applies to every figure (the cost, its GPU part, and its credit, refund and
//! tax parts from the record-type grain), so a team's part is the same fraction of each.

use std::collections::BTreeMap;

use chrono::NaiveDate;
use rust_decimal::Decimal;

use super::model::{Source, SplitKind};
use super::split::split_exact;

/// The figures every allocated row carries: its cost, the GPU part of it, and the parts of
/// it that are credits, refunds and tax (Cost Explorer's record types; negative for credits
/// and refunds), each unblended and amortized.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Amounts {
    pub unblended: Decimal,
    pub amortized: Decimal,
    pub gpu_unblended: Decimal,
    pub gpu_amortized: Decimal,
    pub credit_unblended: Decimal,
    pub credit_amortized: Decimal,
    pub refund_unblended: Decimal,
    pub refund_amortized: Decimal,
    pub tax_unblended: Decimal,
    pub tax_amortized: Decimal,
}

const FIGURES: usize = 10;

impl Amounts {
    fn figures(&self) -> [Decimal; FIGURES] {
        [
            self.unblended,
            self.amortized,
            self.gpu_unblended,
            self.gpu_amortized,
            self.credit_unblended,
            self.credit_amortized,
            self.refund_unblended,
            self.refund_amortized,
            self.tax_unblended,
            self.tax_amortized,
        ]
    }

    fn from_figures(f: [Decimal; FIGURES]) -> Amounts {
        Amounts {
            unblended: f[0],
            amortized: f[1],
            gpu_unblended: f[2],
            gpu_amortized: f[3],
            credit_unblended: f[4],
            credit_amortized: f[5],
            refund_unblended: f[6],
            refund_amortized: f[7],
            tax_unblended: f[8],
            tax_amortized: f[9],
        }
    }

    fn add(&mut self, other: &Amounts) {
        let mut sum = self.figures();
        for (a, b) in sum.iter_mut().zip(other.figures()) {
            *a += b;
        }
        *self = Amounts::from_figures(sum);
    }

    fn is_zero(&self) -> bool {
        self.figures().iter().all(Decimal::is_zero)
    }

    /// Each figure split by the same weights; `None` without a positive weight.
    fn split(&self, weights: &[Decimal]) -> Option<Vec<Amounts>> {
        let columns: Vec<Vec<Decimal>> = self
            .figures()
            .iter()
            .map(|figure| split_exact(*figure, weights))
            .collect::<Option<_>>()?;
        Some(
            (0..weights.len())
                .map(|i| Amounts::from_figures(std::array::from_fn(|k| columns[k][i])))
                .collect(),
        )
    }
}

/// One project's day in one linked account: its total from the rollup, and for an unowned
/// project the shares the user and service grains give in that account.
#[derive(Debug, Clone, Default)]
pub struct ProjectDay {
    pub project: String,
    pub team: Option<i64>,
    /// The linked account ('' for facts stored before accounts were), and the team it is
    /// mapped to.
    pub account: String,
    pub account_team: Option<i64>,
    pub amounts: Amounts,
    /// Unowned projects only: each user tag value's share of the day.
    pub users: Vec<UserShare>,
    /// Unowned projects only: each service and its unblended cost.
    pub services: Vec<(String, Decimal)>,
}

/// One user tag value of an unowned project's day, from the user grains (unblended): its net
/// cost, and its own credits, refunds and tax (zero where the grain has none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserShare {
    pub user: String,
    pub team: Option<i64>,
    pub net: Decimal,
    pub credit: Decimal,
    pub refund: Decimal,
    pub tax: Decimal,
}

impl UserShare {
    /// Usage before credits, refunds and tax: what the user's usage weighs.
    fn gross(&self) -> Decimal {
        self.net - self.credit - self.refund - self.tax
    }
}

/// One of a user's own amounts (credits, refunds or tax).
type UserAmount = fn(&UserShare) -> Decimal;

/// Each user's part of an unowned project's day: usage by the users' gross usage, and
/// credits, refunds and tax each by the users' own amounts of that record type, or by gross
/// usage where the user grain has none of it. So a user whose credit nets their spend to
/// zero keeps both, and no other team receives their credit. `None` when some part has
/// nothing to split by.
fn user_parts(amounts: &Amounts, users: &[UserShare]) -> Option<Vec<Amounts>> {
    let gross: Vec<Decimal> = users.iter().map(UserShare::gross).collect();
    let a = amounts;
    let usage = Amounts {
        unblended: a.unblended - a.credit_unblended - a.refund_unblended - a.tax_unblended,
        amortized: a.amortized - a.credit_amortized - a.refund_amortized - a.tax_amortized,
        gpu_unblended: a.gpu_unblended,
        gpu_amortized: a.gpu_amortized,
        ..Amounts::default()
    };
    // Each record type's figures alone (they are also its cost), and each user's own amount.
    let record_types: [(Amounts, UserAmount); 3] = [
        (
            Amounts {
                credit_unblended: a.credit_unblended,
                credit_amortized: a.credit_amortized,
                ..Amounts::default()
            },
            |u| u.credit,
        ),
        (
            Amounts {
                refund_unblended: a.refund_unblended,
                refund_amortized: a.refund_amortized,
                ..Amounts::default()
            },
            |u| u.refund,
        ),
        (
            Amounts {
                tax_unblended: a.tax_unblended,
                tax_amortized: a.tax_amortized,
                ..Amounts::default()
            },
            |u| u.tax,
        ),
    ];
    let mut parts = vec![Amounts::default(); users.len()];
    let by_own_amounts = record_types.into_iter().map(|(only, own)| {
        let part = Amounts {
            unblended: only.credit_unblended + only.refund_unblended + only.tax_unblended,
            amortized: only.credit_amortized + only.refund_amortized + only.tax_amortized,
            ..only
        };
        // Users whose amount has the part's sign weigh by it (a credit by how much they were
        // credited); a reversal of the other sign weighs nothing.
        let sign = if part.unblended.is_sign_negative() {
            -Decimal::ONE
        } else {
            Decimal::ONE
        };
        (part, users.iter().map(|u| own(u) * sign).collect::<Vec<_>>())
    });
    for (part, weights) in std::iter::once((usage, gross.clone())).chain(by_own_amounts) {
        if part.is_zero() {
            continue;
        }
        let split = part.split(&weights).or_else(|| part.split(&gross))?;
        for (sum, piece) in parts.iter_mut().zip(split) {
            sum.add(&piece);
        }
    }
    Some(parts)
}

/// A checked rule with team ids: what the engine applies.
#[derive(Debug, Clone)]
pub struct Rule {
    pub id: i64,
    pub untagged: bool,
    pub projects: Vec<String>,
    pub services: Vec<String>,
    pub split: SplitKind,
    /// Team ids with their percentages (fixed splits); empty means every team.
    pub teams: Vec<(i64, Decimal)>,
}

/// One row of the allocation: a team's (or Unassigned's) part of a project's day.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allocated {
    pub team: Option<i64>,
    pub source: Source,
    pub rule: Option<i64>,
    pub project: String,
    /// The user tag value for `UserTag` rows; empty otherwise.
    pub user: String,
    pub account: String,
    pub amounts: Amounts,
}

/// Allocates one day's projects. `teams` lists every team id (the default participants).
pub fn allocate_day(projects: &[ProjectDay], rules: &[Rule], teams: &[i64]) -> Vec<Allocated> {
    let mut rows: Vec<Allocated> = Vec::new();
    // Each unowned project's leftover after step 2, in input order.
    let mut leftovers: Vec<(&ProjectDay, Amounts)> = Vec::new();
    for project in projects {
        if let Some(team) = project.team {
            rows.push(row(Some(team), Source::Direct, None, project, "", project.amounts));
            continue;
        }
        let left = match user_parts(&project.amounts, &project.users) {
            Some(parts) => {
                let mut left = Amounts::default();
                for (user, part) in project.users.iter().zip(parts) {
                    match user.team {
                        Some(team) => rows.push(row(Some(team), Source::UserTag, None, project, &user.user, part)),
                        None => left.add(&part),
                    }
                }
                left
            }
            None => project.amounts,
        };
        match project.account_team {
            Some(team) => rows.push(row(Some(team), Source::Account, None, project, "", left)),
            None => leftovers.push((project, left)),
        }
    }
    // Each team's own unblended spend today: the weights of proportional splits.
    let mut own: BTreeMap<i64, Decimal> = BTreeMap::new();
    for row in &rows {
        if let Some(team) = row.team {
            *own.entry(team).or_default() += row.amounts.unblended;
        }
    }
    for (project, mut left) in leftovers {
        // Services earlier rules took: a later rule's share is of the services still left.
        let mut gone: Vec<&str> = Vec::new();
        for rule in rules {
            if left.is_zero() {
                break;
            }
            let taken = take(rule, project, &mut left, &mut gone);
            if let Some(taken) = taken {
                share(rule, project, taken, teams, &own, &mut rows);
            }
        }
        if !left.is_zero() {
            rows.push(row(None, Source::Unassigned, None, project, "", left));
        }
    }
    rows.retain(|r| !r.amounts.is_zero());
    rows
}

fn row(
    team: Option<i64>,
    source: Source,
    rule: Option<i64>,
    project: &ProjectDay,
    user: &str,
    amounts: Amounts,
) -> Allocated {
    Allocated {
        team,
        source,
        rule,
        project: project.project.clone(),
        user: user.to_string(),
        account: project.account.clone(),
        amounts,
    }
}

/// What `rule` takes of `left`, which keeps the rest. `gone` lists the services earlier
/// rules took; this rule's own are added to it.
fn take<'a>(rule: &'a Rule, project: &ProjectDay, left: &mut Amounts, gone: &mut Vec<&'a str>) -> Option<Amounts> {
    let whole = (rule.untagged && project.project.is_empty()) || rule.projects.contains(&project.project);
    if whole {
        return Some(std::mem::take(left));
    }
    if rule.services.is_empty() {
        return None;
    }
    // The listed services' share of the project's spend, applied to what is left of it.
    let (mut listed, mut other) = (Decimal::ZERO, Decimal::ZERO);
    for (service, cost) in &project.services {
        if gone.contains(&service.as_str()) {
            continue;
        }
        if rule.services.contains(service) {
            listed += (*cost).max(Decimal::ZERO);
        } else {
            other += (*cost).max(Decimal::ZERO);
        }
    }
    gone.extend(rule.services.iter().map(String::as_str));
    if listed.is_zero() {
        return None;
    }
    let parts = left.split(&[listed, other])?;
    *left = parts[1];
    Some(parts[0])
}

/// Divides what `rule` took among its teams.
fn share(
    rule: &Rule,
    project: &ProjectDay,
    taken: Amounts,
    teams: &[i64],
    own: &BTreeMap<i64, Decimal>,
    rows: &mut Vec<Allocated>,
) {
    let members: Vec<i64> = if rule.teams.is_empty() {
        teams.to_vec()
    } else {
        rule.teams.iter().map(|t| t.0).collect()
    };
    if members.is_empty() {
        rows.push(row(None, Source::Unassigned, Some(rule.id), project, "", taken));
        return;
    }
    let weights: Vec<Decimal> = match rule.split {
        SplitKind::Even => vec![Decimal::ONE; members.len()],
        SplitKind::Fixed => rule.teams.iter().map(|t| t.1).collect(),
        SplitKind::Proportional => members
            .iter()
            .map(|t| own.get(t).copied().unwrap_or_default())
            .collect(),
    };
    // A proportional rule on a day none of its teams spent anything falls back to even.
    let parts = taken
        .split(&weights)
        .or_else(|| taken.split(&vec![Decimal::ONE; members.len()]))
        .unwrap_or_default();
    for (team, part) in members.into_iter().zip(parts) {
        rows.push(row(Some(team), Source::Shared, Some(rule.id), project, "", part));
    }
}

/// A day's rows for storage.
pub struct AllocatedDay {
    pub day: NaiveDate,
    pub estimated: bool,
    pub rows: Vec<Allocated>,
}

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;
