//! meshplan-core: the pure sizing engine behind meshplan.
//!
//! No web, DOM or I/O dependencies; deterministic; never panics on any input.

pub mod diag;
pub mod layout;

pub use diag::{Diagnostic, FieldValue, Severity};
