//! Enforcement: judging, the actions and their safety under faults.

mod actions;
mod evaluate;
mod locks;
mod resource_kinds;
mod resources;
mod safety;
