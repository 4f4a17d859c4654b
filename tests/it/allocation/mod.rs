//! The allocation: its steps, mapping moves and the page rollups.

mod moves;
mod rollups;
mod steps;
