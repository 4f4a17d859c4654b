//! The audit log: who changed what and when. Admins read it at `/admin/audit`. Entries
//! are written by every feature through `audit_log`, in the change's own transaction.

pub mod model;
pub mod pages;
pub mod server_fns;
#[cfg(feature = "ssr")]
mod store;
