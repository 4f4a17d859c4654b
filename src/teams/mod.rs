//! Teams: which projects and tagged users each team owns, and who owns each team.
//! Unmapped spend is shown as "Unassigned". Edited in the UI (`/admin/teams`) or as code.

#[cfg(feature = "ssr")]
pub mod config_file;
#[cfg(feature = "ssr")]
pub mod store;
