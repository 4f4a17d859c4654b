//! The shared UI: page header and scaffolds, tables, charts, forms, filters and links.
//! Used by every feature's pages in both builds; imports no feature (only `error`,
//! `format`, `codec` and `period` below it), which `scripts/check-layers.py` checks.

pub mod aws_account_picker;
pub mod chart;
pub mod filters;
pub mod forms;
pub mod links;
pub mod page;
pub mod table;
pub mod table_rows;
