//! Realised savings, each measured dollar booked once. Standing accepted decisions whose
//! measured spend overlaps (a project's usage type that both move) form one group; the
//! group's spend is measured once, on the union of what its decisions move, against its 30
//! days before the group's first decision, and the drop is split among the decisions by the
//! compounded figures they were accepted at. Decisions join only while their measured periods
//! overlap; a group is measured from its first decision to [`HORIZON_DAYS`] after its last,
//! and no longer (a fixed horizon, not re-based): later spend has other causes.

use chrono::{Days, NaiveDate};
use rust_decimal::Decimal;
use sqlx::PgConnection;

use super::store::{self, Accepted};
use crate::period::DateRange;

/// The baseline: the days before a group's first decision.
pub const BEFORE_DAYS: u64 = 30;
/// How long after its last decision a group's savings are measured (about 3 months); the
/// measuring starts at its first.
pub const HORIZON_DAYS: u64 = 90;

/// Decisions measured together.
#[derive(Debug, Clone)]
pub struct Group {
    pub decisions: Vec<Accepted>,
    /// Each decision's weight in what the group saves (its compounded figure, else its own,
    /// else one each); a decision's part is its weight over their sum.
    pub weights: Vec<Decimal>,
    cells: Vec<(String, String)>,
    /// A commitment moves amortized cost, so a group with one is measured amortized.
    amortized: bool,
    /// The first decision's day.
    pub anchor: NaiveDate,
    /// The last decision's day.
    last: NaiveDate,
    /// Spend on the group's cells in the [`BEFORE_DAYS`] before `anchor`.
    pub baseline: Decimal,
}

/// What a group's spend did over some days after its first decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Measured {
    pub days: i64,
    pub spent: Decimal,
    /// The baseline's daily rate over those days less what they cost, at most the former.
    pub realised: Decimal,
}

impl Group {
    /// The days measured: from the first decision to [`HORIZON_DAYS`] after the last (the
    /// decisions' periods overlap, so this is one stretch).
    pub fn horizon(&self) -> DateRange {
        DateRange {
            from: self.anchor,
            to: self.last + Days::new(HORIZON_DAYS),
        }
    }

    /// The group's drop over `range` clipped to its horizon, or `None` when no day is left.
    pub async fn measure(&self, conn: &mut PgConnection, range: DateRange) -> Result<Option<Measured>, sqlx::Error> {
        let horizon = self.horizon();
        let (from, to) = (range.from.max(horizon.from), range.to.min(horizon.to));
        if from >= to {
            return Ok(None);
        }
        let days = (to - from).num_days();
        let spent = store::cells_spend(conn, &self.cells, self.amortized, from, to).await?;
        let expected = self.baseline * Decimal::from(days) / Decimal::from(BEFORE_DAYS);
        Ok(Some(Measured {
            days,
            spent,
            // Never more than the baseline: a saving cannot pass the spend it comes from.
            realised: (expected - spent).min(expected.max(Decimal::ZERO)),
        }))
    }

    /// `amount` split by the weights, exactly: multiplied before divided, so a part that is
    /// a whole figure comes out whole, and the rounding rest goes to the largest weight.
    pub fn split(&self, amount: Decimal) -> Vec<Decimal> {
        let total: Decimal = self.weights.iter().copied().sum();
        let mut parts: Vec<Decimal> = self
            .weights
            .iter()
            .map(|w| match total.is_zero() {
                true => Decimal::ZERO,
                false => amount * w / total,
            })
            .collect();
        let rest = amount - parts.iter().copied().sum::<Decimal>();
        if let Some(largest) = (0..parts.len()).max_by_key(|i| self.weights[*i]) {
            parts[largest] += rest;
        }
        parts
    }

    /// The accepted figures, each the compounded saving it was accepted at, scaled down
    /// together so the group never claims more a month than its baseline spent.
    pub fn accepted(&self) -> Vec<Decimal> {
        let claimed: Decimal = self.decisions.iter().map(|d| d.compounded_monthly_saving).sum();
        let cap = self.baseline.max(Decimal::ZERO);
        // Spend that left no cell to measure (none in the window) caps nothing: the figure
        // stands as accepted.
        let capped = !self.cells.is_empty() && claimed > cap && claimed > Decimal::ZERO;
        self.decisions
            .iter()
            .map(|d| match capped {
                true => d.compounded_monthly_saving * cap / claimed,
                false => d.compounded_monthly_saving,
            })
            .collect()
    }
}

/// The standing accepted decisions in groups of overlapping measured spend.
pub async fn groups(conn: &mut PgConnection) -> Result<Vec<Group>, sqlx::Error> {
    let accepted = store::accepted(&mut *conn).await?;
    let mut cells = Vec::with_capacity(accepted.len());
    for decision in &accepted {
        let from = decision.decided_on - Days::new(BEFORE_DAYS);
        let to = decision.decided_on + Days::new(HORIZON_DAYS);
        cells.push(store::measured_cells(&mut *conn, decision, from, to).await?);
    }
    let mut groups = Vec::new();
    let days: Vec<NaiveDate> = accepted.iter().map(|d| d.decided_on).collect();
    for members in connected(&cells, &days) {
        let decisions: Vec<Accepted> = members.iter().map(|i| accepted[*i].clone()).collect();
        let mut union: Vec<(String, String)> = members.iter().flat_map(|i| cells[*i].clone()).collect();
        union.sort();
        union.dedup();
        let anchor = decisions.iter().map(|d| d.decided_on).min().unwrap_or_default();
        let last = decisions.iter().map(|d| d.decided_on).max().unwrap_or_default();
        let amortized = decisions.iter().any(|d| d.kind() == super::model::Kind::Commitment);
        let baseline =
            store::cells_spend(&mut *conn, &union, amortized, anchor - Days::new(BEFORE_DAYS), anchor).await?;
        let weights = weights(&decisions);
        groups.push(Group {
            decisions,
            weights,
            cells: union,
            amortized,
            anchor,
            last,
            baseline,
        });
    }
    Ok(groups)
}

/// Each decision's weight: its compounded figure where any in the group has one, else its
/// own figure, else one each.
fn weights(decisions: &[Accepted]) -> Vec<Decimal> {
    let by = |figure: fn(&Accepted) -> Decimal| -> Option<Vec<Decimal>> {
        let weights: Vec<Decimal> = decisions.iter().map(|d| figure(d).max(Decimal::ZERO)).collect();
        (weights.iter().any(|w| *w > Decimal::ZERO)).then_some(weights)
    };
    by(|d| d.compounded_monthly_saving)
        .or_else(|| by(|d| d.proposed_monthly_saving))
        .unwrap_or_else(|| vec![Decimal::ONE; decisions.len()])
}

/// The indices of the decisions in groups: two join when they share a cell and their
/// measured periods (each [`HORIZON_DAYS`] from its decision) overlap, directly or through
/// others; each group in index order. A decision whose spend has no cell stands alone.
fn connected(cells: &[Vec<(String, String)>], days: &[NaiveDate]) -> Vec<Vec<usize>> {
    let mut parent: Vec<usize> = (0..cells.len()).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    let horizon = i64::try_from(HORIZON_DAYS).unwrap_or(i64::MAX);
    for i in 0..cells.len() {
        for j in 0..i {
            let overlapping = (days[i] - days[j]).num_days().abs() < horizon;
            if overlapping && cells[i].iter().any(|cell| cells[j].contains(cell)) {
                let (a, b) = (root(&mut parent, i), root(&mut parent, j));
                parent[a.max(b)] = a.min(b);
            }
        }
    }
    let mut groups: std::collections::BTreeMap<usize, Vec<usize>> = std::collections::BTreeMap::new();
    for i in 0..cells.len() {
        let r = root(&mut parent, i);
        groups.entry(r).or_default().push(i);
    }
    groups.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(project: &str, usage_type: &str) -> (String, String) {
        (project.into(), usage_type.into())
    }

    #[test]
    fn decisions_sharing_a_cell_are_measured_together_even_through_a_third() {
        let cells = vec![
            vec![cell("a", "g5"), cell("a", "p4d")],
            vec![cell("b", "g5")],
            vec![cell("a", "p4d"), cell("b", "g5")],
            vec![cell("c", "g5")],
            vec![],
        ];
        let day = |n: u64| NaiveDate::from_ymd_opt(2026, 1, 1).expect("day") + Days::new(n);
        let together = [day(0), day(10), day(20), day(30), day(40)];
        assert_eq!(connected(&cells, &together), vec![vec![0, 1, 2], vec![3], vec![4]]);
        // The third decision, which links the first two, came 90 days after them: a group of
        // its own, measured against its own baseline, and the first two share no cell.
        let apart = [day(0), day(10), day(100), day(0), day(0)];
        assert_eq!(
            connected(&cells, &apart),
            vec![vec![0], vec![1], vec![2], vec![3], vec![4]]
        );
    }
}
