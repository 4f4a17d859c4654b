//! The monthly savings report finance forwards (`/savings/report`, its CSV and printable
//! HTML). For one UTC calendar month:
//! - **GPU spend**: the month's GPU spend (unblended, accelerator usage types) up to today,
//!   by the team owning each project now; no team is "Unassigned".
//! - **Proposed**: the recommendations open now that count in the totals, compounded (what
//!   "Savings available" sums), by lever and team: what is on the table as the report is made.
//! - **Accepted**: decisions accepted in the month and still standing, each at what it added
//!   after the other rows it was proposed with (the compounded figure; the ledger's Accepted
//!   before the cap below), a group of decisions on the same spend never more than that
//!   spend's baseline month.
//! - **Realised**: dollars saved in the month's settled days by the standing accepted
//!   decisions, measured once per group of decisions on overlapping spend (`realised`): the
//!   group's daily rate in the 30 days before its first decision × the days on and after it
//!   (for 90 days) − what they cost, at most the former, split by compounded shares.
//! - **Each at most the month's GPU spend**, by construction: where the month's Accepted or
//!   Realised would pass the organisation's GPU spend in the month (so far, for this month),
//!   every team's and lever's positive figures are lowered in one proportion to fit, and the
//!   report states what that held back (`held_back`). A cut deeper than half the spend saves
//!   more than is left to spend; the report books the smaller and says by how much. The cap
//!   is the organisation's, not each team's: a Savings Plan saves on a family's spend across
//!   teams (its decisions carry no team), and decisions keep the team they were taken for,
//!   which a project's move or a team's rename would set against another team's spend.
//! - **Before and after, per lever**: each decision's share of its group's 30 days before and
//!   of the month's days after scaled to 30 days: −58 % reads as seed 002's.

use std::collections::BTreeMap;

use chrono::{Days, NaiveDate};
use rust_decimal::{Decimal, RoundingStrategy};
use sqlx::PgPool;

use super::insights::Insights;
use super::model::{HeldBack, Kind, LeverRow, SavingsReport, TeamRow};
use super::realised::{self, BEFORE_DAYS};
use super::store;
use crate::period::DateRange;

#[derive(Default)]
struct Sums {
    proposed: Decimal,
    accepted: Decimal,
    realised: Decimal,
}

/// A lever's before and after per 30 days: rates, not savings, so never capped.
#[derive(Default)]
struct Rates {
    before: Option<Decimal>,
    after: Option<Decimal>,
}

/// Lowers `values` so that they sum to at most `cap` (below 0 counts as 0), taking only
/// from the positive ones, in proportion, and returns what it took. A negative value (a
/// change that cost more) is left as measured.
fn keep_within(values: &mut [Decimal], cap: Decimal) -> Decimal {
    let cap = cap.max(Decimal::ZERO);
    let total: Decimal = values.iter().copied().sum();
    if total <= cap {
        return Decimal::ZERO;
    }
    let positive: Decimal = values.iter().filter(|v| **v > Decimal::ZERO).copied().sum();
    // What the positive values may keep: cap − the negatives, at least 0 and (as total >
    // cap) less than `positive`.
    let keep = cap - (total - positive);
    let largest = (0..values.len()).max_by_key(|i| values[*i]).unwrap_or_default();
    let mut kept = Decimal::ZERO;
    for (i, value) in values.iter_mut().enumerate() {
        if i != largest && *value > Decimal::ZERO {
            // Down to a millionth of a dollar, so that the rest left to the largest is at
            // least its own share and the sum lands on the cap.
            *value = (keep * *value / positive).round_dp_with_strategy(6, RoundingStrategy::ToZero);
            kept += *value;
        }
    }
    // Never above what it was, so the sum never passes the cap.
    values[largest] = (keep - kept).min(values[largest]);
    total - values.iter().copied().sum::<Decimal>()
}

pub async fn compute(
    pool: &PgPool,
    insights: &Insights,
    month: DateRange,
    today: NaiveDate,
) -> Result<SavingsReport, sqlx::Error> {
    let mut conn = pool.acquire().await?;
    let spend_to = month.to.min(today).max(month.from);
    let settled_to = store::last_settled_day(&mut conn)
        .await?
        .map_or(month.from, |day| (day + Days::new(1)).clamp(month.from, month.to));
    let spend: Vec<(String, Decimal)> = sqlx::query_as(
        "select coalesce(t.name, ''), coalesce(sum(d.gpu_unblended), 0)
         from daily_project_costs d
         left join projects p on p.name = d.project
         left join teams t on t.id = p.team_id
         where d.day >= $1 and d.day < $2
         group by 1",
    )
    .bind(month.from)
    .bind(spend_to)
    .fetch_all(&mut *conn)
    .await?;
    // Each team's figures by lever, so that a team's cap lowers its levers' figures too.
    let mut cells: BTreeMap<(String, Kind), Sums> = BTreeMap::new();
    let mut rates: BTreeMap<Kind, Rates> = BTreeMap::new();
    let decided = store::current_decisions(&mut conn).await?;
    for r in insights
        .recommendations
        .iter()
        .filter(|r| r.counts_in_totals() && !decided.contains_key(&r.key()))
    {
        cells.entry((r.team.clone(), r.kind)).or_default().proposed += r.compounded_saving;
    }
    // Decisions whose measured spend overlaps are measured once, together, and their drop
    // split by the compounded figures they were accepted at (`realised`).
    for group in realised::groups(&mut conn).await? {
        let accepted = group.accepted();
        for (decision, figure) in group.decisions.iter().zip(&accepted) {
            if decision.decided_on >= month.from && decision.decided_on < month.to {
                cells
                    .entry((decision.team.clone(), decision.kind()))
                    .or_default()
                    .accepted += *figure;
            }
        }
        let after = DateRange {
            from: month.from,
            to: settled_to,
        };
        let Some(measured) = group.measure(&mut conn, after).await? else {
            continue;
        };
        let days = Decimal::from(measured.days);
        let saved = group.split(measured.realised);
        let before = group.split(group.baseline);
        let spent = group.split(measured.spent * Decimal::from(BEFORE_DAYS) / days);
        for (i, decision) in group.decisions.iter().enumerate() {
            cells
                .entry((decision.team.clone(), decision.kind()))
                .or_default()
                .realised += saved[i];
            let rate = rates.entry(decision.kind()).or_default();
            rate.before = Some(rate.before.unwrap_or_default() + before[i]);
            rate.after = Some(rate.after.unwrap_or_default() + spent[i]);
        }
    }
    let spend: BTreeMap<String, Decimal> = spend.into_iter().collect();
    let held_back = hold_to_spend(&mut cells, spend.values().copied().sum());
    let mut levers: BTreeMap<Kind, Sums> = BTreeMap::new();
    let mut teams: BTreeMap<String, Sums> = spend.keys().map(|t| (t.clone(), Sums::default())).collect();
    for ((team, kind), cell) in &cells {
        for sums in [levers.entry(*kind).or_default(), teams.entry(team.clone()).or_default()] {
            sums.proposed += cell.proposed;
            sums.accepted += cell.accepted;
            sums.realised += cell.realised;
        }
    }
    let mut team_rows: Vec<TeamRow> = teams
        .into_iter()
        .map(|(team, s)| TeamRow {
            gpu_spend: spend.get(&team).copied().unwrap_or_default(),
            team,
            proposed: s.proposed,
            accepted: s.accepted,
            realised: s.realised,
        })
        .collect();
    team_rows.sort_by(|a, b| b.gpu_spend.cmp(&a.gpu_spend).then_with(|| a.team.cmp(&b.team)));
    let lever_rows: Vec<LeverRow> = levers
        .into_iter()
        .map(|(kind, s)| {
            let rate = rates.remove(&kind).unwrap_or_default();
            LeverRow {
                kind,
                proposed: s.proposed,
                accepted: s.accepted,
                realised: s.realised,
                before: rate.before,
                after: rate.after,
            }
        })
        .collect();
    Ok(SavingsReport {
        month: month.from,
        spend_to,
        settled_to,
        gpu_spend: spend.values().copied().sum(),
        proposed: lever_rows.iter().map(|l| l.proposed).sum(),
        accepted: lever_rows.iter().map(|l| l.accepted).sum(),
        realised: lever_rows.iter().map(|l| l.realised).sum(),
        levers: lever_rows,
        teams: team_rows,
        held_back,
    })
}

/// Holds the month's Accepted and Realised each to the organisation's GPU spend in the
/// month, lowering every team's and lever's positive figures in one proportion; returns what
/// that held back.
fn hold_to_spend(cells: &mut BTreeMap<(String, Kind), Sums>, spend: Decimal) -> HeldBack {
    let mut accepted: Vec<Decimal> = cells.values().map(|s| s.accepted).collect();
    let mut realised: Vec<Decimal> = cells.values().map(|s| s.realised).collect();
    let held = HeldBack {
        accepted: keep_within(&mut accepted, spend),
        realised: keep_within(&mut realised, spend),
    };
    for (sums, (accepted, realised)) in cells.values_mut().zip(accepted.into_iter().zip(realised)) {
        sums.accepted = accepted;
        sums.realised = realised;
    }
    held
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::{Kind, Sums, hold_to_spend, keep_within};
    use rust_decimal::Decimal;

    fn d(s: &str) -> Decimal {
        s.parse().expect("decimal")
    }

    #[test]
    fn figures_within_the_cap_are_left_as_they_are() {
        let mut values = vec![d("100"), d("-20"), d("50")];
        assert_eq!(keep_within(&mut values, d("130")), Decimal::ZERO);
        assert_eq!(values, vec![d("100"), d("-20"), d("50")]);
    }

    #[test]
    fn positive_figures_are_scaled_to_the_cap_and_the_rest_is_exact() {
        // 300 + 100 = 400 against 200 of spend: each keeps half, 200 held back.
        let mut values = vec![d("100"), d("300")];
        assert_eq!(keep_within(&mut values, d("200")), d("200"));
        assert_eq!(values, vec![d("50"), d("150")]);
        // Thirds: 10 of spend over 1 + 1 + 1 ×10; the sum is exactly the cap.
        let mut thirds = vec![d("10"), d("10"), d("10")];
        assert_eq!(keep_within(&mut thirds, d("10")), d("20"));
        // 10 × 10 / 30 to the millionth, twice, and the rest on the last of the largest.
        assert_eq!(thirds, vec![d("3.333333"), d("3.333333"), d("3.333334")]);
    }

    #[test]
    fn a_negative_figure_stays_as_measured_and_the_positive_ones_make_room() {
        // 500 − 100 = 400 against 300: the 500 keeps 400, so 400 − 100 = 300.
        let mut values = vec![d("500"), d("-100")];
        assert_eq!(keep_within(&mut values, d("300")), d("100"));
        assert_eq!(values, vec![d("400"), d("-100")]);
    }

    #[test]
    fn the_organisations_spend_holds_every_team_and_lever_in_one_proportion() {
        let cell = |accepted: &str, realised: &str| Sums {
            proposed: d("1"),
            accepted: d(accepted),
            realised: d(realised),
        };
        let mut cells: BTreeMap<(String, Kind), Sums> = BTreeMap::from([
            (("ml".into(), Kind::Spot), cell("0", "150")),
            (("ml".into(), Kind::AlwaysOn), cell("30", "50")),
            (("vision".into(), Kind::Spot), cell("80", "10")),
            // A Savings Plan's decision carries no team: the organisation's spend holds it.
            ((String::new(), Kind::Commitment), cell("40", "0")),
        ]);
        // 105 of GPU spend. Realised 210: each keeps half, 75, 25 and 5 (105 held back).
        // Accepted 150: each keeps 105/150 = 0.7, 21, 56 and 28 (45 held back).
        let held = hold_to_spend(&mut cells, d("105"));
        assert_eq!((held.accepted, held.realised), (d("45"), d("105")));
        let at = |team: &str, kind: Kind| {
            let s = &cells[&(team.to_string(), kind)];
            (s.proposed, s.accepted, s.realised)
        };
        assert_eq!(at("ml", Kind::Spot), (d("1"), d("0"), d("75")));
        assert_eq!(at("ml", Kind::AlwaysOn), (d("1"), d("21"), d("25")));
        assert_eq!(at("vision", Kind::Spot), (d("1"), d("56"), d("5")));
        assert_eq!(at("", Kind::Commitment), (d("1"), d("28"), d("0")));
    }

    #[test]
    fn within_the_spend_nothing_moves() {
        let mut cells: BTreeMap<(String, Kind), Sums> = BTreeMap::from([(
            ("ml".into(), Kind::Spot),
            Sums {
                proposed: d("500"),
                accepted: d("100"),
                realised: d("100"),
            },
        )]);
        let held = hold_to_spend(&mut cells, d("100"));
        assert_eq!((held.accepted, held.realised), (Decimal::ZERO, Decimal::ZERO));
        let s = &cells[&("ml".to_string(), Kind::Spot)];
        assert_eq!((s.proposed, s.accepted, s.realised), (d("500"), d("100"), d("100")));
    }

    #[test]
    fn no_spend_keeps_nothing() {
        let mut values = vec![d("12.5"), d("7.5")];
        assert_eq!(keep_within(&mut values, Decimal::ZERO), d("20"));
        assert_eq!(values, vec![Decimal::ZERO, Decimal::ZERO]);
    }
}
