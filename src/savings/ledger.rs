//! The savings ledger: what was proposed, what people accepted, and what accepting saved:
//! the measured spend in the 30 days after each decision against the 30 days before.

use chrono::Days;
use rust_decimal::Decimal;
use sqlx::PgConnection;

use super::model::{Decision, LedgerEntry, LedgerTotals, Opportunity};
use super::store;

const DAYS: u64 = 30;

/// Every accepted decision with its realised saving so far.
pub async fn entries(conn: &mut PgConnection) -> Result<Vec<LedgerEntry>, sqlx::Error> {
    let accepted = store::accepted(&mut *conn).await?;
    let settled_to = store::last_settled_day(&mut *conn).await?.map(|d| d + Days::new(1));
    let mut out = Vec::with_capacity(accepted.len());
    for decision in accepted {
        let day = decision.decided_on;
        let before = store::measured_spend(&mut *conn, &decision, day - Days::new(DAYS), day).await?;
        let after_to = settled_to.map_or(day, |to| to.min(day + Days::new(DAYS)));
        let days_after = (after_to - day).num_days().max(0);
        let (after, realised) = if days_after > 0 {
            let spent = store::measured_spend(&mut *conn, &decision, day, after_to).await?;
            let per_30 = spent * Decimal::from(DAYS) / Decimal::from(days_after);
            (Some(per_30), Some(before - per_30))
        } else {
            (None, None)
        };
        out.push(LedgerEntry {
            kind: decision.kind(),
            team: decision.team,
            project: decision.project,
            usage_type: decision.usage_type,
            decided_on: day,
            decided_by: decision.decided_by,
            reason: decision.reason,
            proposed_monthly_saving: decision.proposed_monthly_saving,
            spend_before: before,
            spend_after_per_30_days: after,
            days_after,
            realised_monthly_saving: realised,
        });
    }
    Ok(out)
}

/// Proposed is what is still open (rows resting on an inferred workload wait for a lead to
/// confirm it); accepted what people took on; realised what the ledger measured so far.
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
        accepted: ledger.iter().map(|e| e.proposed_monthly_saving).sum(),
        realised: ledger.iter().filter_map(|e| e.realised_monthly_saving).sum(),
    }
}
