//! The savings ledger: what was proposed, what people accepted, and what accepting saved:
//! the measured spend in the 30 days after each group's first decision against the 30 days
//! before, each dollar booked once (`realised`).

use chrono::Days;
use rust_decimal::Decimal;
use sqlx::PgConnection;

use super::model::{Decision, LedgerEntry, LedgerTotals, Opportunity};
use super::realised::{self, BEFORE_DAYS};
use super::store;
use crate::period::DateRange;

/// Every accepted decision with its part of its group's realised saving so far.
pub async fn entries(conn: &mut PgConnection) -> Result<Vec<LedgerEntry>, sqlx::Error> {
    let groups = realised::groups(&mut *conn).await?;
    let settled_to = store::last_settled_day(&mut *conn).await?.map(|d| d + Days::new(1));
    let mut out = Vec::new();
    for group in groups {
        let after = DateRange {
            from: group.anchor,
            to: settled_to.map_or(group.anchor, |to| to.min(group.anchor + Days::new(BEFORE_DAYS))),
        };
        let measured = group.measure(&mut *conn, after).await?;
        let per_30 = |m: &realised::Measured| m.spent * Decimal::from(BEFORE_DAYS) / Decimal::from(m.days);
        let before = group.split(group.baseline);
        let after_per_30 = measured.map(|m| group.split(per_30(&m)));
        let saved = measured.map(|m| group.split((group.baseline - per_30(&m)).min(group.baseline)));
        let accepted = group.accepted();
        let others = group.decisions.len() - 1;
        for (i, decision) in group.decisions.iter().enumerate() {
            out.push(LedgerEntry {
                kind: decision.kind(),
                team: decision.team.clone(),
                project: decision.project.clone(),
                usage_type: decision.usage_type.clone(),
                decided_on: decision.decided_on,
                decided_by: decision.decided_by.clone(),
                reason: decision.reason.clone(),
                proposed_monthly_saving: decision.proposed_monthly_saving,
                accepted_monthly_saving: accepted[i],
                spend_before: before[i],
                spend_after_per_30_days: after_per_30.as_ref().map(|a| a[i]),
                days_after: measured.map_or(0, |m| m.days),
                realised_monthly_saving: saved.as_ref().map(|s| s[i]),
                measured_with: others,
            });
        }
    }
    out.sort_by(|a, b| b.decided_on.cmp(&a.decided_on).then_with(|| a.project.cmp(&b.project)));
    Ok(out)
}

/// Proposed is what is still open (rows resting on an inferred workload wait for a lead to
/// confirm it); accepted what people took on, each row at what it added after the others;
/// realised what the ledger measured so far, each dollar once.
pub fn totals(opportunities: &[Opportunity], ledger: &[LedgerEntry]) -> LedgerTotals {
    let open = |counted: bool| {
        opportunities
            .iter()
            .filter(move |o| o.decision == Decision::Open && o.recommendation.counts_in_totals() == counted)
    };
    LedgerTotals {
        proposed: open(true).map(|o| o.recommendation.compounded_saving).sum(),
        proposed_rows: open(true).count(),
        to_confirm: open(false).map(|o| o.recommendation.compounded_saving).sum(),
        to_confirm_rows: open(false).count(),
        accepted: ledger.iter().map(|e| e.accepted_monthly_saving).sum(),
        realised: ledger.iter().filter_map(|e| e.realised_monthly_saving).sum(),
    }
}
