//! `plan()`: a plan in, a report out — derived sizes, diagnostics, per-stage memory and rank groups.

use crate::layout::{self, Layout, MeshSizes};
use crate::memory::{self, MemoryReport};
use crate::perf::{self, Performance};
use crate::pipeline::{self, SplitError, StageSplit};
use crate::plan::{self, InputError, Plan};
use crate::{Code, Diagnostic, Severity, rules};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Sizes that follow from the plan.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Derived {
    pub world_size: u64,
    /// Dense data-parallel size W / (TP·PP·CP); 0 when it does not divide.
    pub data_parallel_size: u64,
    /// Expert data-parallel size W / (PP·EP·ETP); 0 when it does not divide.
    pub expert_data_parallel_size: u64,
    /// The source guide's minimum: PP · max(TP·CP, EP·ETP).
    pub min_gpus: u64,
    /// The world sizes Megatron accepts are multiples of PP · lcm(TP·CP, EP·ETP).
    pub min_gpus_lcm: u64,
    pub nodes_needed: u64,
    pub num_microbatches: u64,
    pub global_batch_size: u64,
    pub pipeline_bubble_fraction: f64,
    pub padded_vocab_size: u64,
    pub total_parameters: u64,
    pub active_parameters: u64,
    /// Parameters of the MTP modules, reported apart from the published totals.
    pub mtp_parameters: u64,
    pub layers_per_stage: Vec<u64>,
    pub tokens_per_step: u64,
}

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

fn div_exact(a: u64, b: u64) -> u64 {
    if b != 0 && a % b == 0 { a / b } else { 0 }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

fn sat(x: u128) -> u64 {
    u64::try_from(x).unwrap_or(u64::MAX)
}

/// Sizes, without any checks.
pub fn derive(p: &Plan, split: Option<&StageSplit>) -> Derived {
    let mut d = Derived::default();
    derive_into(p, split, &mut d);
    d
}

/// As [`derive`], into `out`, reusing its buffer (the layout search derives thousands of layouts).
pub fn derive_into(p: &Plan, split: Option<&StageSplit>, out: &mut Derived) {
    let par = &p.parallelism;
    let world = p.world_size();
    let (tp, pp, cp, ep, etp) = (par.tp() as u128, par.pp() as u128, par.cp() as u128, par.ep() as u128, par.etp() as u128);
    let dense = tp * pp * cp;
    let expert = pp * ep * etp;
    let dp = if dense <= u64::MAX as u128 { div_exact(world, dense as u64) } else { 0 };
    let edp = if expert <= u64::MAX as u128 { div_exact(world, expert as u64) } else { 0 };
    let (a, b) = (tp * cp, ep * etp);
    // Source: ../shared/seed/parallelism-strategies.md "Minimum GPU Count": PP · max(TP·CP, EP·ETP).
    let min_gpus = sat(pp * a.max(b));
    // Megatron needs W divisible by both meshes, so the true minimum is PP · lcm(TP·CP, EP·ETP).
    let g = gcd(sat(a), sat(b)).max(1) as u128;
    let min_gpus_lcm = sat(pp * (a / g) * b);
    let mbs = p.training.micro_batch_size;
    // Source: megatron/training/arguments.py: global_batch_size defaults to micro_batch_size · data_parallel_size.
    let gbs = p.training.global_batch_size.unwrap_or_else(|| mbs.saturating_mul(dp.max(1)));
    // Source: megatron/core/num_microbatches_calculator.py: GBS / (MBS · DP).
    let per_step = (mbs as u128) * (dp.max(1) as u128);
    let num_microbatches = if dp > 0 { sat(gbs as u128 / per_step) } else { 0 };
    let counts = p.model.param_counts();
    let mut layers_per_stage = std::mem::take(&mut out.layers_per_stage);
    layers_per_stage.clear();
    if let Some(split) = split {
        layers_per_stage.extend(split.layer_counts());
    }
    *out = Derived {
        world_size: world,
        data_parallel_size: dp,
        expert_data_parallel_size: edp,
        min_gpus,
        min_gpus_lcm,
        nodes_needed: min_gpus.div_ceil(p.cluster.gpus_per_node.max(1)),
        num_microbatches,
        global_batch_size: gbs,
        pipeline_bubble_fraction: pipeline::bubble_fraction(par.pp(), par.vpp(), num_microbatches),
        padded_vocab_size: p.model.padded_vocab_size(par.tp()),
        total_parameters: sat(counts.total),
        active_parameters: sat(counts.active),
        mtp_parameters: sat(counts.mtp),
        layers_per_stage,
        tokens_per_step: sat(gbs as u128 * p.training.seq_length as u128),
    };
}

/// The memory of a plan alone: no rules, rank groups or step time. For callers that size many variants of one
/// plan (the page's memory sweep); the report's `memory` for the same plan is the same.
pub fn memory_value(value: &Value) -> Result<MemoryReport, InputError> {
    let (p, _) = plan::parse_plan(value)?;
    let split = split_of(&p);
    let derived = derive(&p, split.as_ref().ok());
    Ok(memory_of(&p, &derived, &split))
}

/// The plan's layer split over its pipeline stages and virtual chunks.
fn split_of(p: &Plan) -> Result<StageSplit, SplitError> {
    let par = &p.parallelism;
    pipeline::split_layers(p.model.num_layers, par.pp(), par.vpp(), par.num_layers_in_first_pipeline_stage, par.num_layers_in_last_pipeline_stage)
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
    diags.sort_by_key(|d| d.severity);
    let valid = !diags.iter().any(|d| d.severity == Severity::Error);
    Report { valid, diagnostics: diags, derived, memory, layout, performance, plan: p.clone() }
}

impl From<&SplitError> for Diagnostic {
    fn from(e: &SplitError) -> Self {
        rules::split_diagnostic(e)
    }
}
