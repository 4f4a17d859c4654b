//! Enforcement: judging, the actions and their safety under faults.

mod actions;
mod endpoint_safety;
mod evaluate;
mod exact_match;
mod locks;
mod resource_kinds;
mod resources;
mod safety;
