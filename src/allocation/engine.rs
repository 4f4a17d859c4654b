//! The allocation of one day's spend to teams, with no I/O. The precedence, applied in this
//! order to each project's daily total (the daily totals', so every view reconciles with it):
//!
//! 1. a project a team owns is that team's (`Direct`);
//! 2. an unowned or untagged project's spend is divided among its user tag values: its
//!    usage by their gross usage, and its credits, refunds and tax each by the users' own
//!    amounts of that record type (by gross usage where the user grains have none), its GPU
//!    spend as each user's own GPU spend (by gross usage on days fetched before that grain);
//!    the parts of users mapped to a team are that team's (`UserTag`);
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

/// One project's day in one linked account: its daily total, and for an unowned
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
    /// The user's own spend on GPU usage types (credits on them included), unblended and
    /// amortized; `None` where the GPU grain has no row for the user (no GPU spend, or a day
    /// fetched before the grain).
    pub gpu: Option<(Decimal, Decimal)>,
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
/// zero keeps both, and no other team receives their credit. The GPU figures are each
/// user's own GPU spend (`OwnGpu`), so a GPU credit stays with whose GPU it credited and no
/// user who ran no GPU is given any. `None` when some part has nothing to split by.
fn user_parts(amounts: &Amounts, users: &[UserShare]) -> Option<Vec<Amounts>> {
    let gross: Vec<Decimal> = users.iter().map(UserShare::gross).collect();
    let a = amounts;
    let own_gpu = OwnGpu::of(a, users);
    let usage = Amounts {
        unblended: a.unblended - a.credit_unblended - a.refund_unblended - a.tax_unblended,
        amortized: a.amortized - a.credit_amortized - a.refund_amortized - a.tax_amortized,
        // Each user's own GPU spend where the GPU grain gives it; else (days fetched before
        // it) the GPU spend goes with usage. Each metric on its own: under a Savings Plan the
        // unblended GPU spend can be nothing while the amortized is the whole.
        gpu_unblended: if own_gpu.unblended.is_some() {
            Decimal::ZERO
        } else {
            a.gpu_unblended
        },
        gpu_amortized: if own_gpu.amortized.is_some() {
            Decimal::ZERO
        } else {
            a.gpu_amortized
        },
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
    for (sum, unblended) in parts.iter_mut().zip(own_gpu.unblended.unwrap_or_default()) {
        sum.gpu_unblended += unblended;
    }
    for (sum, amortized) in parts.iter_mut().zip(own_gpu.amortized.unwrap_or_default()) {
        sum.gpu_amortized += amortized;
    }
    Some(parts)
}

/// Each user's own GPU spend, adding up to the project's, per metric: the GPU grain's
/// figures (none for a user it has no row for), with the difference Cost Explorer's rounding
/// of each group leaves put on the largest. `None` for a metric the grain does not give.
struct OwnGpu {
    unblended: Option<Vec<Decimal>>,
    amortized: Option<Vec<Decimal>>,
}

/// Users' GPU figures further than this from the project's are not the same spend (a usage
/// type the catalogue has since read as a GPU, say): the GPU spend then goes with usage.
const OWN_GPU_TOLERANCE: Decimal = Decimal::from_parts(1, 0, 0, false, 2);

impl OwnGpu {
    fn of(amounts: &Amounts, users: &[UserShare]) -> OwnGpu {
        // Whether the grain was asked for this day at all: some user has a row.
        let known = users.iter().any(|u| u.gpu.is_some());
        let whole = |project: Decimal, own: fn((Decimal, Decimal)) -> Decimal| -> Option<Vec<Decimal>> {
            let mut parts: Vec<Decimal> = users.iter().map(|u| u.gpu.map_or(Decimal::ZERO, own)).collect();
            let rest = project - parts.iter().copied().sum::<Decimal>();
            if !known || rest.abs() > OWN_GPU_TOLERANCE {
                return None;
            }
            let largest = (0..parts.len()).max_by_key(|i| parts[*i].abs())?;
            parts[largest] += rest;
            Some(parts)
        };
        OwnGpu {
            unblended: whole(amounts.gpu_unblended, |g| g.0),
            amortized: whole(amounts.gpu_amortized, |g| g.1),
        }
    }
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
mod tests {
    use std::str::FromStr;

    use super::*;

    fn d(text: &str) -> Decimal {
        Decimal::from_str(text).expect("decimal")
    }

    /// Unblended `u`, amortized `a`, no GPU.
    fn amounts(u: &str, a: &str) -> Amounts {
        Amounts {
            unblended: d(u),
            amortized: d(a),
            ..Amounts::default()
        }
    }

    const ML: i64 = 1;
    const PLATFORM: i64 = 2;
    const WEB: i64 = 3;

    fn owned(project: &str, team: i64, u: &str) -> ProjectDay {
        ProjectDay {
            project: project.into(),
            team: Some(team),
            amounts: amounts(u, u),
            ..ProjectDay::default()
        }
    }

    /// A user's share of an unowned project's day: net spend and own credit.
    fn user(name: &str, team: Option<i64>, net: &str, credit: &str) -> UserShare {
        UserShare {
            user: name.into(),
            team,
            net: d(net),
            credit: d(credit),
            ..UserShare::default()
        }
    }

    fn unowned(project: &str, u: &str, users: &[(&str, Option<i64>, &str)], services: &[(&str, &str)]) -> ProjectDay {
        ProjectDay {
            project: project.into(),
            team: None,
            amounts: amounts(u, u),
            users: users.iter().map(|(n, t, c)| user(n, *t, c, "0")).collect(),
            services: services.iter().map(|(n, c)| (n.to_string(), d(c))).collect(),
            ..ProjectDay::default()
        }
    }

    fn rule(id: i64, split: SplitKind) -> Rule {
        Rule {
            id,
            untagged: false,
            projects: vec![],
            services: vec![],
            split,
            teams: vec![],
        }
    }

    /// (team, source, rule, project, user, unblended) of one row.
    type Summary = (Option<i64>, &'static str, Option<i64>, String, String, Decimal);

    /// Each row's summary, sorted.
    fn summary(rows: &[Allocated]) -> Vec<Summary> {
        let mut out: Vec<_> = rows
            .iter()
            .map(|r| {
                (
                    r.team,
                    r.source.key(),
                    r.rule,
                    r.project.clone(),
                    r.user.clone(),
                    r.amounts.unblended,
                )
            })
            .collect();
        out.sort();
        out
    }

    fn total(rows: &[Allocated]) -> Amounts {
        let mut sum = Amounts::default();
        for row in rows {
            sum.add(&row.amounts);
        }
        sum
    }

    #[test]
    fn each_precedence_step_claims_only_what_the_steps_before_it_left() {
        let projects = [
            owned("train", ML, "100.00"),
            // An unowned project: alice (ml) spent 30 of 60 in the user grain, bob (no team) 20,
            // and 10 had no user tag.
            unowned(
                "sandbox",
                "60.00",
                &[("alice", Some(ML), "30"), ("bob", None, "20"), ("", None, "10")],
                &[],
            ),
            // Untagged spend with nobody's user tag, and a project no rule names.
            unowned("", "9.00", &[("", None, "9")], &[]),
            unowned("orphan", "5.00", &[], &[]),
        ];
        let mut untagged = rule(7, SplitKind::Even);
        untagged.untagged = true;
        untagged.teams = vec![(ML, Decimal::ZERO), (PLATFORM, Decimal::ZERO)];
        let rows = allocate_day(&projects, &[untagged], &[ML, PLATFORM, WEB]);
        let s = |t: Option<i64>, src: &'static str, r: Option<i64>, p: &str, u: &str, v: &str| {
            (t, src, r, p.to_string(), u.to_string(), d(v))
        };
        assert_eq!(
            summary(&rows),
            [
                s(None, "unassigned", None, "orphan", "", "5.00"),
                s(None, "unassigned", None, "sandbox", "", "30.00"),
                s(Some(ML), "direct", None, "train", "", "100.00"),
                s(Some(ML), "shared", Some(7), "", "", "4.50"),
                s(Some(ML), "user", None, "sandbox", "alice", "30.00"),
                s(Some(PLATFORM), "shared", Some(7), "", "", "4.50"),
            ]
        );
        assert_eq!(total(&rows).unblended, d("174.00"));
    }

    #[test]
    fn a_project_rule_takes_an_unowned_projects_leftover_and_an_owned_project_stays_direct() {
        let projects = [
            owned("k8s", PLATFORM, "50.00"),
            unowned("shared-cluster", "100.00", &[], &[]),
        ];
        let mut by_name = rule(3, SplitKind::Fixed);
        by_name.projects = vec!["shared-cluster".into(), "k8s".into()];
        by_name.teams = vec![(ML, d("60")), (PLATFORM, d("30")), (WEB, d("10"))];
        let rows = allocate_day(&projects, &[by_name], &[ML, PLATFORM, WEB]);
        let shared: Vec<(Option<i64>, Decimal)> = rows
            .iter()
            .filter(|r| r.source == Source::Shared)
            .map(|r| (r.team, r.amounts.unblended))
            .collect();
        assert_eq!(
            shared,
            [
                (Some(ML), d("60.00")),
                (Some(PLATFORM), d("30.00")),
                (Some(WEB), d("10.00"))
            ]
        );
        assert!(rows.iter().any(|r| r.project == "k8s" && r.source == Source::Direct));
    }

    #[test]
    fn proportional_follows_each_teams_own_spend_that_day_and_falls_back_to_even() {
        let projects = [
            owned("a", ML, "300.00"),
            owned("b", PLATFORM, "100.00"),
            unowned("", "10.00", &[], &[]),
        ];
        let mut untagged = rule(1, SplitKind::Proportional);
        untagged.untagged = true;
        let rows = allocate_day(&projects, &[untagged.clone()], &[ML, PLATFORM, WEB]);
        let shared: Vec<(Option<i64>, Decimal)> = rows
            .iter()
            .filter(|r| r.source == Source::Shared)
            .map(|r| (r.team, r.amounts.unblended))
            .collect();
        // 3 : 1 : 0; web spent nothing, so it takes nothing.
        assert_eq!(shared, [(Some(ML), d("7.50")), (Some(PLATFORM), d("2.50"))]);

        let quiet_day = [unowned("", "10.00", &[], &[])];
        let rows = allocate_day(&quiet_day, &[untagged], &[ML, PLATFORM, WEB]);
        let shared: Vec<Decimal> = rows.iter().map(|r| r.amounts.unblended).collect();
        assert_eq!(shared, [d("3.34"), d("3.33"), d("3.33")]);
    }

    #[test]
    fn a_service_rule_takes_its_services_share_of_what_is_left() {
        // 80 of the untagged 100 is NAT gateway (EC2 - Other) and CloudWatch by the service grain.
        let projects = [
            owned("a", ML, "10.00"),
            unowned(
                "",
                "100.00",
                &[],
                &[
                    ("EC2 - Other", "60"),
                    ("AmazonCloudWatch", "20"),
                    ("Amazon Elastic Compute Cloud - Compute", "20"),
                ],
            ),
        ];
        let mut network = rule(4, SplitKind::Even);
        network.services = vec!["EC2 - Other".into(), "AmazonCloudWatch".into()];
        network.teams = vec![(ML, Decimal::ZERO), (WEB, Decimal::ZERO)];
        let rows = allocate_day(&projects, &[network], &[ML, PLATFORM, WEB]);
        assert_eq!(
            summary(&rows)
                .into_iter()
                .filter(|r| r.1 != "direct")
                .map(|r| (r.0, r.1, r.5))
                .collect::<Vec<_>>(),
            [
                (None, "unassigned", d("20.00")),
                (Some(ML), "shared", d("40.00")),
                (Some(WEB), "shared", d("40.00"))
            ]
        );
    }

    #[test]
    fn every_metric_reconciles_to_the_last_digit_with_credits_and_odd_amounts() {
        let mut projects = vec![
            owned("a", ML, "1234.5678901"),
            unowned(
                "",
                "-33.33",
                &[("carol", Some(WEB), "1"), ("", None, "2")],
                &[("Tax", "1"), ("EC2 - Other", "2")],
            ),
            unowned(
                "lab",
                "0.07",
                &[("dave", Some(PLATFORM), "5"), ("erin", None, "5")],
                &[],
            ),
        ];
        projects[0].amounts.gpu_unblended = d("1000.0000001");
        projects[2].amounts.gpu_amortized = d("0.05");
        let mut fixed = rule(1, SplitKind::Fixed);
        fixed.services = vec!["EC2 - Other".into()];
        fixed.teams = vec![(ML, d("33.33")), (PLATFORM, d("33.33")), (WEB, d("33.34"))];
        let mut rest = rule(2, SplitKind::Proportional);
        rest.untagged = true;
        rest.projects = vec!["lab".into()];
        let rows = allocate_day(&projects, &[fixed, rest], &[ML, PLATFORM, WEB]);
        let mut expected = Amounts::default();
        for project in &projects {
            expected.add(&project.amounts);
        }
        assert_eq!(total(&rows), expected);
        assert!(rows.iter().all(|r| r.source != Source::Unassigned), "{rows:#?}");
    }

    #[test]
    fn credits_refunds_and_tax_travel_with_the_spend_they_belong_to() {
        // Untagged 100.00 of which -20.00 is a credit and 8.00 tax; a quarter is alice's (ml).
        let mut untagged = unowned("", "100.00", &[("alice", Some(ML), "1"), ("", None, "3")], &[]);
        untagged.amounts.credit_unblended = d("-20.00");
        untagged.amounts.tax_unblended = d("8.00");
        let mut even = rule(1, SplitKind::Even);
        even.untagged = true;
        even.teams = vec![(PLATFORM, Decimal::ZERO), (WEB, Decimal::ZERO)];
        let rows = allocate_day(&[untagged], &[even], &[ML, PLATFORM, WEB]);
        let parts: Vec<(Option<i64>, Decimal, Decimal, Decimal)> = rows
            .iter()
            .map(|r| {
                (
                    r.team,
                    r.amounts.unblended,
                    r.amounts.credit_unblended,
                    r.amounts.tax_unblended,
                )
            })
            .collect();
        assert_eq!(
            parts,
            [
                (Some(ML), d("25.00"), d("-5.00"), d("2.00")),
                (Some(PLATFORM), d("37.50"), d("-7.50"), d("3.00")),
                (Some(WEB), d("37.50"), d("-7.50"), d("3.00")),
            ]
        );
        assert_eq!(total(&rows).credit_unblended, d("-20.00"));
    }

    #[test]
    fn a_second_service_rule_takes_its_share_of_what_the_first_left() {
        // 100 untagged: NAT gateway 60, CloudWatch 20, compute 20. The first rule takes the 60;
        // the second takes CloudWatch's 20 of the 40 left, not 20 % of it.
        let projects = [unowned(
            "",
            "100.00",
            &[],
            &[
                ("EC2 - Other", "60"),
                ("AmazonCloudWatch", "20"),
                ("Amazon Elastic Compute Cloud - Compute", "20"),
            ],
        )];
        let mut network = rule(1, SplitKind::Even);
        network.services = vec!["EC2 - Other".into()];
        network.teams = vec![(ML, Decimal::ZERO)];
        let mut monitoring = rule(2, SplitKind::Even);
        monitoring.services = vec!["AmazonCloudWatch".into()];
        monitoring.teams = vec![(WEB, Decimal::ZERO)];
        let rows = allocate_day(&projects, &[network, monitoring], &[ML, WEB]);
        let got: Vec<(Option<i64>, Option<i64>, Decimal)> =
            rows.iter().map(|r| (r.team, r.rule, r.amounts.unblended)).collect();
        assert_eq!(
            got,
            [
                (Some(ML), Some(1), d("60.00")),
                (Some(WEB), Some(2), d("20.00")),
                (None, None, d("20.00"))
            ]
        );
    }

    #[test]
    fn a_credit_on_one_users_tag_stays_with_that_users_team() {
        // An unowned project: alice (ml) used 100 and has a credit of -100 on her tag, so her net
        // is zero; bob (web) used 100. Split by net spend, bob's team would get alice's credit.
        let mut shared = unowned("sandbox", "100.00", &[], &[]);
        shared.amounts.credit_unblended = d("-100.00");
        shared.amounts.credit_amortized = d("-100.00");
        shared.users = vec![
            user("alice", Some(ML), "0.00", "-100.00"),
            user("bob", Some(WEB), "100.00", "0"),
        ];
        let rows = allocate_day(&[shared], &[], &[ML, PLATFORM, WEB]);
        let parts: Vec<(Option<i64>, Decimal, Decimal)> = rows
            .iter()
            .map(|r| (r.team, r.amounts.unblended, r.amounts.credit_unblended))
            .collect();
        // Each used 100 (before credits); the credit is alice's alone.
        assert_eq!(
            parts,
            [(Some(ML), d("0.00"), d("-100.00")), (Some(WEB), d("100.00"), d("0.00"))]
        );
        assert_eq!(total(&rows).amortized, d("100.00"));
    }

    /// A user with their own GPU spend (both metrics the same).
    fn gpu_user(name: &str, team: Option<i64>, net: &str, credit: &str, gpu: &str) -> UserShare {
        UserShare {
            gpu: Some((d(gpu), d(gpu))),
            ..user(name, team, net, credit)
        }
    }

    fn gpu_by_team(rows: &[Allocated]) -> Vec<(Option<i64>, Decimal, Decimal)> {
        rows.iter()
            .map(|r| (r.team, r.amounts.gpu_unblended, r.amounts.gpu_amortized))
            .collect()
    }

    #[test]
    fn a_gpu_credit_on_one_users_tag_leaves_the_other_teams_gpu_spend_whole() {
        // Both used 100 of GPU; AWS applied alice's -100 credit to her GPU usage, so the
        // project's GPU spend is 100 net, all bob's. Divided by gross usage, as before the
        // GPU grain, each team got 50: half of alice's credit moved to web.
        let mut shared = unowned("sandbox", "100.00", &[], &[]);
        shared.amounts.gpu_unblended = d("100.00");
        shared.amounts.gpu_amortized = d("100.00");
        shared.amounts.credit_unblended = d("-100.00");
        shared.amounts.credit_amortized = d("-100.00");
        shared.users = vec![
            gpu_user("alice", Some(ML), "0.00", "-100.00", "0.00"),
            gpu_user("bob", Some(WEB), "100.00", "0", "100.00"),
        ];
        let rows = allocate_day(&[shared], &[], &[ML, PLATFORM, WEB]);
        assert_eq!(
            gpu_by_team(&rows),
            [(Some(ML), d("0.00"), d("0.00")), (Some(WEB), d("100.00"), d("100.00"))]
        );
    }

    #[test]
    fn gpu_spend_goes_to_whoever_ran_the_gpus_not_by_whole_usage() {
        // alice ran 100 of GPU (less a -50 credit on it) and 100 of storage; bob ran 200 of
        // storage and no GPU. By whole usage (200 each) bob's team got 25 of GPU spend it never
        // ran; each has its own: 50 and 0. The 0.000000001 Cost Explorer's rounding of each
        // group leaves goes to the largest.
        let mut shared = unowned("sandbox", "350.00", &[], &[]);
        shared.amounts.gpu_unblended = d("50.000000001");
        shared.amounts.gpu_amortized = d("50.000000001");
        shared.amounts.credit_unblended = d("-50.00");
        shared.amounts.credit_amortized = d("-50.00");
        shared.users = vec![
            gpu_user("alice", Some(ML), "150.00", "-50.00", "50.00"),
            gpu_user("bob", Some(WEB), "200.00", "0", "0"),
        ];
        let rows = allocate_day(&[shared], &[], &[ML, PLATFORM, WEB]);
        assert_eq!(
            gpu_by_team(&rows),
            [
                (Some(ML), d("50.000000001"), d("50.000000001")),
                (Some(WEB), d("0"), d("0"))
            ]
        );
        assert_eq!(total(&rows).unblended, d("350.00"));
    }

    #[test]
    fn a_user_the_gpu_grain_has_no_row_for_ran_no_gpu() {
        // bob has no GPU row (he ran none): alice's row is the project's whole GPU spend, so
        // bob gets none of it (by usage he got 75).
        let mut shared = unowned("sandbox", "400.00", &[], &[]);
        shared.amounts.gpu_unblended = d("100.00");
        shared.amounts.gpu_amortized = d("100.00");
        shared.users = vec![
            gpu_user("alice", Some(ML), "100.00", "0", "100.00"),
            user("bob", Some(WEB), "300.00", "0"),
        ];
        let rows = allocate_day(&[shared], &[], &[ML, PLATFORM, WEB]);
        assert_eq!(
            gpu_by_team(&rows),
            [(Some(ML), d("100.00"), d("100.00")), (Some(WEB), d("0"), d("0"))]
        );
    }

    #[test]
    fn days_before_the_gpu_grain_divide_gpu_spend_by_usage_as_before() {
        // No user has a GPU row (the day was fetched before the grain), or the rows are not the
        // project's GPU spend (0.02 off): the GPU spend goes with usage, 1:3.
        let before = vec![
            user("alice", Some(ML), "100.00", "0"),
            user("bob", Some(WEB), "300.00", "0"),
        ];
        let off = vec![
            gpu_user("alice", Some(ML), "100.00", "0", "40.00"),
            gpu_user("bob", Some(WEB), "300.00", "0", "59.98"),
        ];
        for users in [before, off] {
            let mut shared = unowned("sandbox", "400.00", &[], &[]);
            shared.amounts.gpu_unblended = d("100.00");
            shared.amounts.gpu_amortized = d("100.00");
            shared.users = users;
            let rows = allocate_day(&[shared], &[], &[ML, PLATFORM, WEB]);
            assert_eq!(
                gpu_by_team(&rows),
                [(Some(ML), d("25.00"), d("25.00")), (Some(WEB), d("75.00"), d("75.00"))]
            );
        }
    }

    #[test]
    fn under_a_savings_plan_each_metric_is_each_users_own() {
        // A Savings Plan covers the GPUs: unblended, the usage and its negation net to 0 for
        // every user; amortized, alice's GPUs cost 60 and bob's 40. Every unblended figure being
        // 0 is an answer, not a missing one: the amortized GPU spend is still each user's own
        // (it was divided 1:3 by usage, 25 and 75).
        let mut shared = unowned("sandbox", "400.00", &[], &[]);
        shared.amounts.amortized = d("400.00");
        shared.amounts.gpu_amortized = d("100.00");
        shared.users = vec![
            UserShare {
                gpu: Some((d("0"), d("60.00"))),
                ..user("alice", Some(ML), "100.00", "0")
            },
            UserShare {
                gpu: Some((d("0"), d("40.00"))),
                ..user("bob", Some(WEB), "300.00", "0")
            },
        ];
        let rows = allocate_day(&[shared], &[], &[ML, PLATFORM, WEB]);
        assert_eq!(
            gpu_by_team(&rows),
            [(Some(ML), d("0"), d("60.00")), (Some(WEB), d("0"), d("40.00"))]
        );
    }

    #[test]
    fn a_record_type_no_user_carries_is_split_by_gross_usage() {
        // Tax with no user amounts: split by usage before credits (alice 100, bob 300), not by
        // net spend (alice's credit makes hers 50).
        let mut shared = unowned("sandbox", "358.00", &[], &[]);
        shared.amounts.credit_unblended = d("-50.00");
        shared.amounts.tax_unblended = d("8.00");
        shared.users = vec![
            user("alice", Some(ML), "50.00", "-50.00"),
            user("bob", Some(WEB), "300.00", "0"),
        ];
        let rows = allocate_day(&[shared], &[], &[ML, PLATFORM, WEB]);
        let tax: Vec<(Option<i64>, Decimal)> = rows.iter().map(|r| (r.team, r.amounts.tax_unblended)).collect();
        assert_eq!(tax, [(Some(ML), d("2.00")), (Some(WEB), d("6.00"))]);
        assert_eq!(total(&rows).unblended, d("358.00"));
    }

    #[test]
    fn an_accounts_team_takes_what_users_leave_of_unowned_spend_in_it_before_any_rule() {
        // The same untagged project in two accounts: in ML's account, bob (web) keeps his part
        // and the rest is ML's; in the unmapped account, the rule shares it.
        let in_account = |account: &str, team: Option<i64>, u: &str, users: &[(&str, Option<i64>, &str)]| ProjectDay {
            account: account.into(),
            account_team: team,
            ..unowned("", u, users, &[])
        };
        let projects = [
            in_account(
                "111122223333",
                Some(ML),
                "100",
                &[("bob", Some(WEB), "30"), ("", None, "70")],
            ),
            in_account("444455556666", None, "50", &[]),
            // An owned project in ML's account stays its owner's.
            ProjectDay {
                account: "111122223333".into(),
                account_team: Some(ML),
                ..owned("site", PLATFORM, "20")
            },
        ];
        let untagged = Rule {
            untagged: true,
            ..rule(9, SplitKind::Even)
        };
        let rows = allocate_day(&projects, &[untagged], &[PLATFORM, WEB]);
        assert_eq!(
            summary(&rows),
            [
                (Some(ML), "account", None, "".into(), "".into(), d("70")),
                (Some(PLATFORM), "direct", None, "site".into(), "".into(), d("20")),
                (Some(PLATFORM), "shared", Some(9), "".into(), "".into(), d("25")),
                (Some(WEB), "shared", Some(9), "".into(), "".into(), d("25")),
                (Some(WEB), "user", None, "".into(), "bob".into(), d("30")),
            ]
        );
        let accounts: Vec<(&str, &str)> = rows.iter().map(|r| (r.source.key(), r.account.as_str())).collect();
        assert!(accounts.contains(&("account", "111122223333")));
        assert!(accounts.contains(&("shared", "444455556666")));
        assert!(accounts.contains(&("direct", "111122223333")));
    }
}
