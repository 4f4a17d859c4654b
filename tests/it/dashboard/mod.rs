//! The Overview, Teams, Team and Project pages, the credits switch and the next steps.

mod breakdown;
mod credits;
mod first_steps;
mod overview;
