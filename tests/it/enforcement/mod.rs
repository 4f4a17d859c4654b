//! Enforcement: judging, the actions and their safety under faults.

mod actions;
mod endpoint_safety;
mod evaluate;
mod credentials;
mod exact_match;
mod locks;
mod resource_kinds;
mod resources;
mod safety;
mod shared_listing;
