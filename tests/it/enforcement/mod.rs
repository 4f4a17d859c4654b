//! Enforcement: judging, the actions and their safety under faults.

mod actions;
mod evaluate;
mod resources;
mod safety;
