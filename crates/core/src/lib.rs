//! meshplan-core: the pure sizing engine behind meshplan.
//!
//! No web, DOM or I/O dependencies; deterministic; never panics on any input. A plan (model, cluster,
//! training, parallelism) goes in; a [`Report`] comes out: derived sizes, diagnostics, memory per
//! pipeline stage, and the rank groups Megatron-Core builds.

pub mod codes;
pub mod derive;
pub mod diag;
pub mod diff;
pub mod export;
pub mod fields;
pub mod hf;
pub mod imports;
pub mod layout;
pub mod limits;
pub mod memory;
pub mod model;
pub mod model_fields;
pub mod names;
pub mod oom;
pub mod perf;
pub mod parallelism;
pub mod pipeline;
pub mod plan;
pub mod presets;
pub mod recipes;
pub mod remedy;
pub mod report;
pub mod schedule;
pub mod rules;
pub mod search;
pub mod size;
pub mod sort;
pub mod settings;
pub mod share;
pub mod tuned;

pub use codes::Code;
pub use diag::{Diagnostic, FieldValue, InputError, Severity};
pub use export::{ExportKind, export};
pub use perf::{Breakdown, Performance};
pub use plan::{Plan, parse_plan, parse_plan_str};
pub use report::{Derived, Report, plan_resolved, plan_str, plan_value};

/// Plans from plan-file text: the function behind `meshplan plan` and the JS API.
pub fn plan_json(input: &str) -> Result<Report, InputError> {
    plan_str(input)
}
