//! The monthly savings report finance forwards: proposed, accepted and realised savings by
//! lever and by team, against the month's GPU spend (`savings::report` computes it).

use chrono::NaiveDate;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use super::Kind;

/// One lever (a kind of recommendation) in the month.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeverRow {
    pub kind: Kind,
    /// Open now and counted (compounded), a month's worth.
    pub proposed: Decimal,
    /// Accepted in the month, a month's worth each: what it added after the others when accepted.
    pub accepted: Decimal,
    /// Dollars saved in the month's settled days by everything accepted before them.
    pub realised: Decimal,
    /// What the accepted changes' spend was per 30 days before each decision, and in the
    /// month's days after it, per 30 days; `None` when no accepted change has a settled day
    /// in the month.
    pub before: Option<Decimal>,
    pub after: Option<Decimal>,
}

impl LeverRow {
    /// `after ÷ before − 1`: −0.58 for seed 002's "−58 %".
    pub fn change(&self) -> Option<Decimal> {
        match (self.before, self.after) {
            (Some(before), Some(after)) if before > Decimal::ZERO => Some(after / before - Decimal::ONE),
            _ => None,
        }
    }
}

/// One team (empty: no team) in the month.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamRow {
    pub team: String,
    pub gpu_spend: Decimal,
    pub proposed: Decimal,
    pub accepted: Decimal,
    pub realised: Decimal,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavingsReport {
    /// The month's first day.
    pub month: NaiveDate,
    /// The days the spend covers (the month up to today) and the settled days realised
    /// savings rest on (`to` exclusive; empty when none has settled).
    pub spend_to: NaiveDate,
    pub settled_to: NaiveDate,
    pub gpu_spend: Decimal,
    pub levers: Vec<LeverRow>,
    pub teams: Vec<TeamRow>,
    pub proposed: Decimal,
    pub accepted: Decimal,
    pub realised: Decimal,
    /// What holding Accepted and Realised to the month's GPU spend took off them.
    pub held_back: HeldBack,
}

/// Dollars the month's GPU spend held back from Accepted and Realised (`savings::report`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldBack {
    pub accepted: Decimal,
    pub realised: Decimal,
}

impl SavingsReport {
    /// Says what holding Accepted and Realised to the month's GPU spend took off them, when
    /// it took anything.
    pub fn held_back_note(&self) -> Option<String> {
        let month_over = self
            .month
            .checked_add_months(chrono::Months::new(1))
            .is_some_and(|end| self.spend_to >= end);
        let spend = if month_over {
            "the month's GPU spend"
        } else {
            "the month's GPU spend so far"
        };
        let mut parts = Vec::new();
        if self.held_back.accepted > Decimal::ZERO {
            parts.push(format!(
                "Accepted is {} below the figures accepted (each a month's worth{})",
                crate::format::usd(self.held_back.accepted),
                if month_over {
                    ""
                } else {
                    ", against the days spent so far"
                }
            ));
        }
        if self.held_back.realised > Decimal::ZERO {
            parts.push(format!(
                "Realised is {} below the measured drop (a cut deeper than half the spend saves more than is left to spend)",
                crate::format::usd(self.held_back.realised)
            ));
        }
        (!parts.is_empty()).then(|| {
            format!(
                "Held to {spend}: {}. Every team and lever is lowered in the same proportion; before and after per lever are as measured.",
                parts.join("; ")
            )
        })
    }

    /// `2026-11-01 to 2026-11-26`, or that no day of the month has begun.
    pub fn spend_days(&self) -> String {
        match self.spend_to.pred_opt().filter(|last| *last >= self.month) {
            Some(last) => format!("{} to {last}", self.month),
            None => format!("no day of {} yet", crate::period::month_label(self.month)),
        }
    }

    /// The last settled day the realised figures rest on, or that none of the month has settled.
    pub fn settled_days(&self) -> String {
        match self.settled_to.pred_opt().filter(|last| *last >= self.month) {
            Some(last) => format!("settled to {last}"),
            None => "no settled day yet".to_string(),
        }
    }

    /// A share of the month's GPU spend, when there was any.
    pub fn share_of_spend(&self, amount: Decimal) -> Option<Decimal> {
        (self.gpu_spend > Decimal::ZERO).then(|| amount / self.gpu_spend)
    }
}
