//! Adjustments for frozen months whose figures changed since: an AWS restatement, or a
//! mapping or rule change reallocating them. For each frozen month and team, what statements
//! have charged (the month's own frozen spend plus the adjustments later frozen statements
//! booked for it) is compared with what the allocation says now, and the difference is
//! booked once: on the next statement to be frozen, as a `direct` line included in the
//! team's total. Teams are matched by id, so a renamed team keeps its history.

use std::collections::{BTreeMap, BTreeSet};

use rust_decimal::Decimal;

use super::compute::sort;
use super::model::{Section, StatementLine};

/// How an adjustment line's item begins: `adjustment: 2026-09 changed since frozen`.
pub const ADJUSTMENT: &str = "adjustment: ";

/// A month's lines: a frozen statement's, or the allocation's totals per team now.
pub struct MonthLines {
    /// `2026-09`.
    pub month: String,
    pub lines: Vec<StatementLine>,
}

/// Who a line charges. A team by id; Unassigned, a deleted team, or a line frozen before
/// statements kept ids (resolved to today's team of that name when there is one) by name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Payer {
    Team(i64),
    Named(String),
}

fn payer(line: &StatementLine, ids: &BTreeMap<String, i64>) -> Payer {
    match line.team_id.or_else(|| ids.get(&line.team).copied()) {
        Some(id) => Payer::Team(id),
        None => Payer::Named(line.team.clone()),
    }
}

/// A team's amounts in one month, with the name to write on its adjustment.
#[derive(Default)]
struct Charged {
    team: String,
    unblended: Decimal,
    amortized: Decimal,
}

impl Charged {
    fn add(&mut self, line: &StatementLine, sign: Decimal) {
        self.team.clone_from(&line.team);
        self.unblended += sign * line.unblended;
        self.amortized += sign * line.amortized;
    }
}

type Ledger = BTreeMap<(String, Payer), Charged>;

/// The adjustment lines the next statement after `frozen` (oldest first) carries: one per
/// frozen month and team whose total `now` differs from what has been charged for it. `ids`
/// maps today's team names to their ids.
pub fn adjustments(frozen: &[MonthLines], now: &[MonthLines], ids: &BTreeMap<String, i64>) -> Vec<StatementLine> {
    let mut charged = Ledger::new();
    for statement in frozen {
        for line in &statement.lines {
            let key = |month: &str| (month.to_string(), payer(line, ids));
            match (line.section, line.adjusts.as_deref()) {
                (Section::Total, _) => charged
                    .entry(key(&statement.month))
                    .or_default()
                    .add(line, Decimal::ONE),
                (Section::Direct, Some(month)) => {
                    // Booked for an earlier month, so not this month's own spend.
                    charged
                        .entry(key(&statement.month))
                        .or_default()
                        .add(line, -Decimal::ONE);
                    charged.entry(key(month)).or_default().add(line, Decimal::ONE);
                }
                _ => {}
            }
        }
    }
    let mut current = Ledger::new();
    for month in now {
        for line in month.lines.iter().filter(|l| l.section == Section::Total) {
            current
                .entry((month.month.clone(), payer(line, ids)))
                .or_default()
                .add(line, Decimal::ONE);
        }
    }
    let months: BTreeSet<&str> = frozen.iter().map(|m| m.month.as_str()).collect();
    let names: BTreeMap<i64, &String> = ids.iter().map(|(name, id)| (*id, name)).collect();
    let keys: BTreeSet<&(String, Payer)> = charged.keys().chain(current.keys()).collect();
    let mut lines = Vec::new();
    for key in keys.into_iter().filter(|(month, _)| months.contains(month.as_str())) {
        let (was, is) = (charged.get(key), current.get(key));
        let amount = |f: fn(&Charged) -> Decimal| is.map_or(Decimal::ZERO, f) - was.map_or(Decimal::ZERO, f);
        let (unblended, amortized) = (amount(|c| c.unblended), amount(|c| c.amortized));
        if unblended.is_zero() && amortized.is_zero() {
            continue;
        }
        // Today's name for a team that still exists, else the one it was charged under.
        let Some(named) = is.or(was) else { continue };
        let (team, team_id) = match &key.1 {
            Payer::Team(id) => (names.get(id).map_or(&named.team, |n| *n).clone(), Some(*id)),
            Payer::Named(_) => (named.team.clone(), None),
        };
        lines.push(StatementLine {
            team,
            team_id,
            section: Section::Direct,
            item: format!("{ADJUSTMENT}{} changed since frozen", key.0),
            untagged: false,
            adjusts: Some(key.0.clone()),
            unblended,
            amortized,
        });
    }
    lines
}

/// `lines` with `adjustments` added, each also counted in its team's total (a team with no
/// line this month gets a total of its adjustments), sorted.
pub fn apply(mut lines: Vec<StatementLine>, adjustments: Vec<StatementLine>) -> Vec<StatementLine> {
    for adjustment in adjustments {
        let same_team = |l: &StatementLine| match adjustment.team_id {
            Some(id) => l.team_id == Some(id),
            None => l.team_id.is_none() && l.team == adjustment.team,
        };
        match lines.iter_mut().find(|l| l.section == Section::Total && same_team(l)) {
            Some(total) => {
                total.unblended += adjustment.unblended;
                total.amortized += adjustment.amortized;
            }
            None => lines.push(StatementLine {
                section: Section::Total,
                item: "Total".into(),
                untagged: false,
                adjusts: None,
                ..adjustment.clone()
            }),
        }
        lines.push(adjustment);
    }
    sort(&mut lines);
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(team: (&str, Option<i64>), section: Section, item: &str, cents: i64) -> StatementLine {
        StatementLine {
            team: team.0.into(),
            team_id: team.1,
            section,
            item: item.into(),
            untagged: false,
            adjusts: item
                .strip_prefix(ADJUSTMENT)
                .and_then(|rest| rest.get(..7))
                .map(str::to_string),
            unblended: Decimal::new(cents, 2),
            amortized: Decimal::new(cents, 2),
        }
    }

    fn total(team: (&str, Option<i64>), cents: i64) -> StatementLine {
        line(team, Section::Total, "Total", cents)
    }

    fn month(label: &str, lines: Vec<StatementLine>) -> MonthLines {
        MonthLines {
            month: label.into(),
            lines,
        }
    }

    const ML: (&str, Option<i64>) = ("ml", Some(1));
    const WEB: (&str, Option<i64>) = ("web", Some(2));
    const UNASSIGNED: (&str, Option<i64>) = ("Unassigned", None);

    #[test]
    fn a_restated_month_adds_one_line_and_moves_that_teams_total() {
        let frozen = [month(
            "2026-10",
            vec![
                line(ML, Section::Direct, "train", 10000),
                total(ML, 10000),
                total(WEB, 5000),
            ],
        )];
        let now = [month("2026-10", vec![total(ML, 10050), total(WEB, 5000)])];
        let november = vec![line(ML, Section::Direct, "train", 2000), total(ML, 2000)];
        let adjusted = apply(november, adjustments(&frozen, &now, &BTreeMap::new()));
        assert_eq!(
            adjusted,
            [
                line(ML, Section::Direct, "adjustment: 2026-10 changed since frozen", 50),
                line(ML, Section::Direct, "train", 2000),
                total(ML, 2050),
            ]
        );
    }

    #[test]
    fn a_month_restated_again_after_an_adjustment_is_booked_for_the_difference_only() {
        // September froze at 100; October's statement booked +5 for it; September now reads
        // 107: November books the 2 still missing, and nothing for October's own spend.
        let frozen = [
            month("2026-09", vec![total(ML, 10000)]),
            month(
                "2026-10",
                vec![
                    line(ML, Section::Direct, "adjustment: 2026-09 changed since frozen", 500),
                    line(ML, Section::Direct, "train", 3000),
                    total(ML, 3500),
                ],
            ),
        ];
        let now = [
            month("2026-09", vec![total(ML, 10700)]),
            month("2026-10", vec![total(ML, 3000)]),
        ];
        assert_eq!(
            adjustments(&frozen, &now, &BTreeMap::new()),
            [line(
                ML,
                Section::Direct,
                "adjustment: 2026-09 changed since frozen",
                200
            )]
        );
    }

    #[test]
    fn a_renamed_team_and_lines_frozen_without_ids_are_the_same_team() {
        let renamed = ("ml-research", Some(1));
        let ids = BTreeMap::from([("ml-research".to_string(), 1), ("web".to_string(), 2)]);
        let frozen = [month("2026-10", vec![total(ML, 10000), total(("web", None), 5000)])];
        let now = [month("2026-10", vec![total(renamed, 10000), total(WEB, 5000)])];
        assert_eq!(adjustments(&frozen, &now, &ids), []);
        // Spend that moved from a team to Unassigned is one line each, under today's name.
        let moved = [month(
            "2026-10",
            vec![total(renamed, 9000), total(WEB, 5000), total(UNASSIGNED, 1000)],
        )];
        let lines = adjustments(&frozen, &moved, &ids);
        assert_eq!(
            lines,
            [
                line(
                    renamed,
                    Section::Direct,
                    "adjustment: 2026-10 changed since frozen",
                    -1000
                ),
                line(
                    UNASSIGNED,
                    Section::Direct,
                    "adjustment: 2026-10 changed since frozen",
                    1000
                ),
            ]
        );
        // Unassigned had no line this month: it gets a total of its adjustment.
        let november = vec![total(renamed, 100)];
        let adjusted = apply(november, lines);
        assert!(adjusted.contains(&total(renamed, -900)), "{adjusted:?}");
        assert!(adjusted.contains(&total(UNASSIGNED, 1000)), "{adjusted:?}");
    }
}
