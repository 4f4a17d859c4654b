//! Teams: which projects and tagged users each team owns, and who owns each team.
//! Unmapped spend is shown as "Unassigned". Edited on `/admin/teams` or as code
//! (`burnrate config import/export`); both apply a whole-state diff (`mapping::diff`) through `store`.

#[cfg(feature = "ssr")]
pub mod edit;
#[cfg(feature = "ssr")]
pub mod mapping;
pub mod model;
pub mod pages;
pub mod server_fns;
#[cfg(feature = "ssr")]
pub mod store;
