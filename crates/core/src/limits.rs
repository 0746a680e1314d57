//! The sizes meshplan accepts, in one place. Every input answers within about a second and 256 MB: work that grows
//! with a size (pipeline stages, layers, ranks, list entries, text) runs only after that size has passed one of
//! these limits; a value beyond one is a diagnostic naming the value and the largest accepted.
//!
//! This module is at the bottom of the core's module graph with `codes`: it imports nothing from the crate.

/// The largest integer any field accepts; keeps every product of a few fields inside u128 and f64.
pub const MAX_FIELD: u64 = 1 << 40;

/// Largest parallel size, GPU count per node, or node count accepted (2^24).
pub const MAX_PARALLEL: u64 = 1 << 24;

/// Most layers a model may have.
pub const MAX_LAYERS: u64 = 1 << 20;

/// Most routed experts a model may have.
pub const MAX_EXPERTS: u64 = 1 << 20;
