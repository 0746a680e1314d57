//! `plan()`: a plan in, a report out — derived sizes, diagnostics, per-stage memory and rank groups.
//!
//! This module only assembles: the sizes come from [`crate::derive`], the findings from [`crate::rules`], the rank
//! groups from [`crate::layout`], memory and step time from [`crate::memory`] and [`crate::perf`]. Nothing below
//! imports it.

use crate::layout::{self, Layout, MeshSizes};
use crate::memory::{self, MemoryReport};
use crate::perf::{self, Performance};
use crate::pipeline::{self, SplitError, StageSplit};
use crate::plan::{self, InputError, Plan};
use crate::{Code, Diagnostic, Severity, rules};
pub use crate::derive::{Derived, KindRun, derive, derive_into};
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub valid: bool,
    pub diagnostics: Vec<Diagnostic>,
    pub derived: Derived,
    pub memory: MemoryReport,
    /// Rank groups; null when the mesh sizes do not divide the world size.
    pub layout: Option<Layout>,
    /// Step time, throughput and MFU; null when the mesh sizes do not divide the world size.
    #[serde(default)]
    pub performance: Option<Performance>,
    /// The plan as resolved, with every default filled in.
    pub plan: Plan,
}

/// Plans from plan-file text.
pub fn plan_str(text: &str) -> Result<Report, InputError> {
    let (p, diags) = plan::parse_plan_str(text)?;
    Ok(plan_resolved(&p, diags))
}

/// Plans from a plan-file JSON value.
pub fn plan_value(value: &Value) -> Result<Report, InputError> {
    let (p, diags) = plan::parse_plan(value)?;
    Ok(plan_resolved(&p, diags))
}

/// The memory of a plan alone: no rules, rank groups or step time. For callers that size many variants of one
/// plan (the page's memory sweep); the report's `memory` for the same plan is the same.
pub fn memory_value(value: &Value) -> Result<MemoryReport, InputError> {
    let (p, _) = plan::parse_plan(value)?;
    let split = split_of(&p);
    let derived = derive(&p, split.as_ref().ok());
    Ok(memory_of(&p, &derived, &split))
}

/// The plan's layer split over its pipeline stages and virtual chunks: a hybrid pattern's `|` segments, else its
/// `pipeline_model_parallel_layout`, else Megatron's even split (uneven first/last stages,
/// `account_for_*_in_pipeline_split`).
pub fn split_of(p: &Plan) -> Result<StageSplit, SplitError> {
    let par = &p.parallelism;
    let (first, last) = (par.num_layers_in_first_pipeline_stage, par.num_layers_in_last_pipeline_stage);
    if let Some(h) = &p.model.hybrid_layer_pattern {
        // The pattern's segments are the stages; a layout or account_for_* beside it is its own error
        // (rules::pipeline_layout::hybrid), as Megatron-LM asserts before it builds anything.
        return pipeline::split_from_segments(h.segments(), par.pp(), par.virtual_pipeline_model_parallel_size, first, last);
    }
    if let Some(spec) = &par.pipeline_model_parallel_layout {
        let explicit_vpp = par.virtual_pipeline_model_parallel_size;
        return pipeline::layout::split(spec, par.pp(), explicit_vpp, p.model.num_layers, p.model.mtp_num_layers)
            .map(|l| l.split)
            .map_err(SplitError::Layout);
    }
    pipeline::split_layers_accounting(
        p.model.num_layers,
        par.pp(),
        par.vpp(),
        first,
        last,
        par.account_for_embedding_in_pipeline_split,
        par.account_for_loss_in_pipeline_split,
    )
}

/// Memory over the plan's layer split; an invalid split still gets an estimate, over the nearest even split (its
/// error is reported by the rules).
fn memory_of(p: &Plan, derived: &Derived, split: &Result<StageSplit, SplitError>) -> MemoryReport {
    match split {
        Ok(s) => memory::estimate(p, derived, s),
        Err(_) => memory::estimate(p, derived, &pipeline::balanced_split(p.model.num_layers, p.parallelism.pp())),
    }
}

/// Plans an already resolved plan; `diags` are the findings of parsing it.
pub fn plan_resolved(p: &Plan, mut diags: Vec<Diagnostic>) -> Report {
    let par = &p.parallelism;
    let split = split_of(p);
    let derived = derive(p, split.as_ref().ok());
    rules::check(p, &derived, split.as_ref().err(), &mut diags);

    let sizes = MeshSizes { tp: par.tp(), pp: par.pp(), cp: par.cp(), ep: par.ep(), etp: par.etp() };
    let layout = match layout::build_layout(derived.world_size, &sizes, &par.order, p.cluster.nvlink_domain_size) {
        Ok(l) => {
            rules::check_topology(p, &l, &mut diags);
            Some(l)
        }
        Err(d) => {
            // The world-size rules already report divisibility; keep only what they do not say.
            if !diags.iter().any(|x| x.code == d.code) && !matches!(d.code, Code::WorldNotDivisibleDense | Code::WorldNotDivisibleExpert) {
                diags.push(d);
            }
            None
        }
    };
    let memory = memory_of(p, &derived, &split);
    rules::check_memory(p, &memory, &mut diags);
    let performance = (derived.data_parallel_size > 0 && derived.expert_data_parallel_size > 0 && derived.num_microbatches > 0)
        .then(|| perf::estimate(p, &derived));
    if let Some(perf) = &performance {
        rules::check_measured(p, &derived, perf, &mut diags);
    }
    diags.sort_by_key(|d| d.severity);
    let valid = !diags.iter().any(|d| d.severity == Severity::Error);
    Report { valid, diagnostics: diags, derived, memory, layout, performance, plan: p.clone() }
}
