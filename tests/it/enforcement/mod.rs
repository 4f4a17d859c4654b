//! Enforcement: judging, the actions and their safety under faults.

mod actions;
mod credentials;
mod endpoint_safety;
mod evaluate;
mod exact_match;
mod locks;
mod resource_kinds;
mod resources;
mod safety;
mod shared_listing;
