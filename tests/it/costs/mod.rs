//! Cost facts: their store and rollup, which days are settled, and the export.

mod export;
mod settlement;
mod store;
