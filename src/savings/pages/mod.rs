//! `/savings` (ranked opportunities, decisions, the ledger and utilisation), `/what-if`,
//! and the pieces other pages show: "savings available" and a project's workload form.

mod commitments;
mod inferred;
mod report;
mod savings;
mod what_if;
mod widgets;

pub use report::SavingsReportPage;
pub use savings::SavingsPage;
pub use what_if::WhatIfPage;
pub use widgets::{ProjectFactsForm, SavingsAvailableNote};
