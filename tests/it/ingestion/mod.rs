//! Ingestion from Cost Explorer: runs, the CLI, linked accounts and faults.

mod accounts;
mod cli;
mod faults;
mod run;
