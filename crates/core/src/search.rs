//! Layout search: enumerate parallel layouts for a model, cluster and batch, prune them by the rules and by
//! per-stage memory, rank the rest by predicted throughput, and explain the winners.
//!
//! The hot loop is a fast path of [`report::plan_resolved`]: the layer split, [`report::derive`],
//! [`rules::check`], [`memory::estimate`], [`rules::check_memory`] and the performance estimate, without building
//! rank groups. Rule logic is never restated here: the enumeration proposes sizes within the search's bounds and
//! asks the rules' per-topic entry points and [`pipeline::split_layers`] which layouts are valid (see [`shapes`]);
//! a candidate is valid exactly when those functions report no error, as in [`report::plan_resolved`] (whose only
//! extra errors come from the layout builder, which cannot fail for the default order once the world-size rules
//! pass). The explanations' NVLink crossings come from [`Meshes::crossing`], counted from the mesh for any order
//! without building the groups.
//!
//! Deterministic: the enumeration order is fixed, ties are broken by peak memory and then by the layout key.

use crate::layout::{GroupKind, MeshSizes, Meshes};
use crate::memory;
use crate::model::LayerKinds;
use crate::perf::{self, Performance};
use crate::pipeline::{self, StageSplit};
use crate::plan::{self, DEFAULT_ORDER, InputError, Plan, Recompute, RecomputeMethod};
use crate::report::{self, Derived};
use crate::{Code, rules};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::cmp::Ordering;
use crate::limits::{CANDIDATE_WORK, MAX_SEARCH_WORK, MAX_SEARCH_WORLD};
use std::collections::BTreeMap;

/// Search settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchOptions {
    /// How many ranked candidates to return.
    pub top: usize,
    /// Largest tensor-parallel size tried (further capped by the NVLink domain).
    pub max_tp: u64,
    /// Largest context-parallel size tried.
    pub max_cp: u64,
    /// Micro-batch sizes tried.
    pub micro_batch_sizes: Vec<u64>,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions { top: 5, max_tp: 16, max_cp: 16, micro_batch_sizes: vec![1, 2, 4, 8] }
    }
}

/// Parallel sizes of one candidate, with Megatron's names.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CandidateParallelism {
    pub tensor_model_parallel_size: u64,
    pub pipeline_model_parallel_size: u64,
    pub virtual_pipeline_model_parallel_size: Option<u64>,
    pub context_parallel_size: u64,
    pub expert_model_parallel_size: u64,
    pub expert_tensor_parallel_size: u64,
    pub sequence_parallel: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_layers_in_first_pipeline_stage: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_layers_in_last_pipeline_stage: Option<u64>,
}

/// Training settings of one candidate, with Megatron's names.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CandidateTraining {
    pub micro_batch_size: u64,
    pub recompute_granularity: Recompute,
    pub use_distributed_optimizer: bool,
    /// Set with full recompute (uniform, one layer per group), which Megatron requires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recompute_method: Option<RecomputeMethod>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recompute_num_layers: Option<u64>,
}

/// One ranked layout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub parallelism: CandidateParallelism,
    pub training: CandidateTraining,
    pub step_time_s: f64,
    pub tokens_per_s_per_gpu: f64,
    pub model_tflops_per_gpu: f64,
    pub mfu: f64,
    pub peak_bytes: u64,
    pub pipeline_bubble_fraction: f64,
    /// Under 10% of GPU memory free (the rules' `low-memory-headroom` warning): ranked after roomier layouts.
    pub low_memory_headroom: bool,
    /// Why this layout: memory headroom, pipeline bubble, which groups stay inside NVLink, how it compares.
    pub why: Vec<String>,
    /// The resolved plan of this candidate (run it through [`report::plan_resolved`] for the full report).
    #[serde(skip)]
    pub plan: Option<Plan>,
}

/// One point of the Pareto front: no other valid layout has both lower peak memory and higher throughput.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParetoPoint {
    pub parallelism: CandidateParallelism,
    pub training: CandidateTraining,
    pub peak_bytes: u64,
    pub tokens_per_s_per_gpu: f64,
    pub step_time_s: f64,
}

/// What the search did and found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchResult {
    /// Candidates run through the rules.
    pub evaluated: u64,
    /// Candidates without any error (rules and memory).
    pub valid: u64,
    /// The best `top` valid candidates, best first.
    pub candidates: Vec<Candidate>,
    /// Peak memory against throughput, ascending peak memory.
    pub pareto: Vec<ParetoPoint>,
    pub world_size: u64,
    pub gpu_memory_bytes: u64,
    /// Smallest peak memory of any candidate that passed the rules (fitting or not).
    pub smallest_peak_bytes: Option<u64>,
    /// Layouts skipped without evaluation because a smaller-memory variant of the same layout did not fit.
    pub pruned_by_memory: u64,
    /// How many evaluated candidates each error code rejected (first error per candidate).
    pub rejected_by: BTreeMap<String, u64>,
    /// Valid layouts without the distributed optimizer that are not ranked: the same layout with it holds less
    /// optimizer state and is no slower (Megatron's reduce-scatter + all-gather moves no more than the all-reduce),
    /// so it is never worse on either axis. Counted in `valid`.
    pub dominated: u64,
}

/// The layout key of a candidate: everything the search varies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct Key {
    tp: u64,
    pp: u64,
    vpp: u64,
    cp: u64,
    ep: u64,
    etp: u64,
    sp: bool,
    first: Option<u64>,
    last: Option<u64>,
    mbs: u64,
    /// 0 none, 1 selective, 2 full.
    recompute: u8,
    distopt: bool,
}

/// A valid candidate as kept during the search: no heap data.
#[derive(Clone, Copy, Debug)]
struct Rec {
    key: Key,
    step_time_s: f64,
    tokens_per_s_per_gpu: f64,
    model_tflops_per_gpu: f64,
    mfu: f64,
    peak_bytes: u64,
    /// The rules warned `low-memory-headroom`: ranked after every layout with room to spare.
    tight: bool,
}

fn recompute_of(code: u8) -> Recompute {
    match code {
        0 => Recompute::None,
        1 => Recompute::Selective,
        _ => Recompute::Full,
    }
}

/// Writes `k` into `p` (the rest of the plan is left as given).
fn apply(p: &mut Plan, k: &Key) {
    let moe = p.model.is_moe();
    let par = &mut p.parallelism;
    par.tensor_model_parallel_size = k.tp;
    par.pipeline_model_parallel_size = k.pp;
    par.virtual_pipeline_model_parallel_size = (k.vpp > 1).then_some(k.vpp);
    par.context_parallel_size = k.cp;
    par.expert_model_parallel_size = k.ep;
    par.expert_tensor_parallel_size = k.etp;
    // Dense models keep megatron-core's default ETP = TP; MoE candidates state ETP explicitly.
    par.expert_tensor_parallel_size_defaulted = !moe;
    par.sequence_parallel = k.sp;
    if par.order != DEFAULT_ORDER {
        par.order.clear();
        par.order.push_str(DEFAULT_ORDER);
    }
    par.num_layers_in_first_pipeline_stage = k.first;
    par.num_layers_in_last_pipeline_stage = k.last;
    // The search plans the split itself (even, or one lighter edge stage): a layout or accounted split of the base
    // plan is written for the base plan's pipeline, not the candidate's.
    par.pipeline_model_parallel_layout = None;
    par.account_for_embedding_in_pipeline_split = false;
    par.account_for_loss_in_pipeline_split = false;
    par.microbatch_group_size_per_vp_stage = None;
    p.training.micro_batch_size = k.mbs;
    apply_training(p, k);
}

/// Writes the recompute and optimizer choice of `k` into `p`.
fn apply_training(p: &mut Plan, k: &Key) {
    let t = &mut p.training;
    t.settings.recompute_granularity = recompute_of(k.recompute);
    let full = k.recompute == 2;
    t.settings.recompute_method = full.then_some(RecomputeMethod::Uniform);
    t.settings.recompute_num_layers = full.then_some(1);
    t.settings.use_distributed_optimizer = k.distopt;
}

fn parallelism_of(k: &Key) -> CandidateParallelism {
    CandidateParallelism {
        tensor_model_parallel_size: k.tp,
        pipeline_model_parallel_size: k.pp,
        virtual_pipeline_model_parallel_size: (k.vpp > 1).then_some(k.vpp),
        context_parallel_size: k.cp,
        expert_model_parallel_size: k.ep,
        expert_tensor_parallel_size: k.etp,
        sequence_parallel: k.sp,
        num_layers_in_first_pipeline_stage: k.first,
        num_layers_in_last_pipeline_stage: k.last,
    }
}

fn training_of(k: &Key) -> CandidateTraining {
    let full = k.recompute == 2;
    CandidateTraining {
        micro_batch_size: k.mbs,
        recompute_granularity: recompute_of(k.recompute),
        use_distributed_optimizer: k.distopt,
        recompute_method: full.then_some(RecomputeMethod::Uniform),
        recompute_num_layers: full.then_some(1),
    }
}

/// Divisors of `n` (ascending) that are at most `cap`.
fn divisors_upto(n: u64, cap: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut i = 1u64;
    while i <= cap && i <= n && i <= (1 << 24) {
        if n % i == 0 {
            out.push(i);
        }
        i += 1;
    }
    out
}

/// One structural layout at one micro-batch size, with what every recompute / optimizer variant of it shares.
struct Cell<'a> {
    /// The parameters each stage holds: the layout's, the same for every micro-batch and variant.
    params: &'a [memory::StageParams],
    derived: &'a Derived,
    /// The first rule error of this cell, once [`rules::check`] has run (at most once per cell).
    rules: Option<Option<Code>>,
}

/// What every candidate shares: buffers and the model's layer parameters.
struct Scratch {
    /// The codes the rules find (no messages are built in the search).
    codes: rules::Codes,
    /// The candidate's memory, rewritten in place for each one.
    mem: memory::MemoryReport,
    kinds: LayerKinds,
}

enum Outcome {
    /// A rule error or out of memory (already counted in `rejected_by`).
    Rejected { out_of_memory: bool },
    Valid(Rec),
    /// Valid, not ranked (see [`SearchResult::dominated`]).
    Dominated,
}

/// Evaluates the plan in `p` (the cell's layout with one recompute / optimizer variant) on the fast path:
/// memory first (an out-of-memory layout is invalid whatever the rules say), then the rules once per cell, then
/// the memory rules and the performance estimate.
fn evaluate(p: &Plan, key: &Key, cell: &mut Cell, s: &mut Scratch, result: &mut SearchResult, rank: bool) -> Outcome {
    result.evaluated += 1;
    memory::estimate_peaks_into(p, cell.derived, &s.kinds, cell.params, &mut s.mem);
    let mem = &s.mem;
    let peak = mem.peak_bytes;
    result.smallest_peak_bytes = Some(result.smallest_peak_bytes.map_or(peak, |x| x.min(peak)));
    if !mem.fits {
        // rules::check_memory's out-of-memory error is exactly `!fits`.
        reject(result, Code::OutOfMemory);
        return Outcome::Rejected { out_of_memory: true };
    }
    let first_error = *cell.rules.get_or_insert_with(|| {
        s.codes.0.clear();
        rules::check(p, cell.derived, None, &mut s.codes);
        s.codes.first_error()
    });
    if let Some(code) = first_error {
        reject(result, code);
        return Outcome::Rejected { out_of_memory: false };
    }
    s.codes.0.clear();
    rules::check_memory(p, mem, &mut s.codes);
    if let Some(code) = s.codes.first_error() {
        reject(result, code);
        return Outcome::Rejected { out_of_memory: code == Code::OutOfMemory };
    }
    result.valid += 1;
    if !rank {
        result.dominated += 1;
        return Outcome::Dominated;
    }
    let tight = s.codes.0.contains(&Code::LowMemoryHeadroom);
    let perf = perf::estimate(p, cell.derived);
    Outcome::Valid(Rec {
        key: *key,
        step_time_s: perf.step_time_s,
        tokens_per_s_per_gpu: perf.tokens_per_s_per_gpu,
        model_tflops_per_gpu: perf.model_tflops_per_gpu,
        mfu: perf.mfu,
        peak_bytes: peak,
        tight,
    })
}

fn reject(result: &mut SearchResult, code: Code) {
    match result.rejected_by.get_mut(code.as_str()) {
        Some(n) => *n += 1,
        None => {
            result.rejected_by.insert(code.as_str().to_string(), 1);
        }
    }
}

/// Best first: layouts the rules do not warn about for memory headroom, then higher throughput, then lower peak
/// memory, then the smaller layout key.
fn better(a: &Rec, b: &Rec) -> Ordering {
    a.tight
        .cmp(&b.tight)
        .then(b.tokens_per_s_per_gpu.total_cmp(&a.tokens_per_s_per_gpu))
        .then(a.peak_bytes.cmp(&b.peak_bytes))
        .then(a.key.cmp(&b.key))
}

/// The structural part of a key: everything but micro-batch, recompute and the optimizer.
#[derive(Clone, Copy)]
struct Shape {
    tp: u64,
    pp: u64,
    vpp: u64,
    cp: u64,
    ep: u64,
    etp: u64,
    sp: bool,
    first: Option<u64>,
    last: Option<u64>,
}

impl Shape {
    fn key(&self, mbs: u64, (recompute, distopt): (u8, bool)) -> Key {
        let s = *self;
        Key { tp: s.tp, pp: s.pp, vpp: s.vpp, cp: s.cp, ep: s.ep, etp: s.etp, sp: s.sp, first: s.first, last: s.last, mbs, recompute, distopt }
    }
}

/// A scratch plan the search writes candidate layouts into to ask the rules about them, and the codes they find.
struct Probe {
    plan: Plan,
    codes: rules::Codes,
}

impl Probe {
    /// Whether `check` finds no error in the plan with layout `sh` (micro-batch and recompute do not matter to the
    /// structural rules asked here).
    fn passes(&mut self, sh: &Shape, check: impl FnOnce(&Plan, &mut rules::Codes)) -> bool {
        apply(&mut self.plan, &sh.key(1, ORDER[0]));
        self.codes.0.clear();
        check(&self.plan, &mut self.codes);
        self.codes.first_error().is_none()
    }
}

/// The layer split of a pipeline shape, computed once.
fn split_of(splits: &mut Splits, layers: u64, pp: u64, vpp: u64, first: Option<u64>, last: Option<u64>) -> &Result<StageSplit, pipeline::SplitError> {
    splits.entry((pp, vpp, first, last)).or_insert_with(|| pipeline::split_layers(layers, pp, vpp, first, last))
}

/// Every structural layout the search tries, in a fixed order; their layer splits are left in `splits`.
///
/// The candidates: each parallel size from the divisors of the world size within the search's bounds (TP inside the
/// NVLink domain and `max_tp`; CP up to `max_cp` where each rank keeps at least 1,024 tokens; PP up to the layer
/// count; EP up to the expert count; ETP at megatron-core's default, TP, or Megatron Bridge's, 1), the layer splits
/// of [`pipeline_shapes`], and SP on and off. The rules decide which are valid, asked as they are for a plan:
/// [`rules::world`] for both meshes, [`rules::moe::expert_parallel`] for EP against the experts and
/// [`rules::sequence::sequence_parallel`] for SP against TP. Every other rule judges each candidate in [`evaluate`].
///
/// Or, as soon as sizing them all would cost more than [`MAX_SEARCH_WORK`], that partial cost. A candidate (a shape
/// at one micro-batch size and one of the `ORDER` variants) costs [`CANDIDATE_WORK`] units for the rules plus one per
/// pipeline stage and virtual chunk its memory estimate walks; each rule probe of the enumeration costs one unit.
fn shapes(p: &Plan, opts: &SearchOptions, splits: &mut Splits) -> Result<Vec<Shape>, u64> {
    let m = &p.model;
    let w = p.world_size();
    let moe = m.is_moe();
    let layers = m.num_layers.max(1);
    let seq = p.training.seq_length;
    let tp_cap = opts.max_tp.min(p.cluster.nvlink_domain_size.max(1)).max(1);
    let ep_cap = m.num_experts().max(1);
    let world_divisors = divisors_upto(w, tp_cap.max(opts.max_cp).max(layers).max(ep_cap));
    let upto = |cap: u64| world_divisors.iter().copied().take_while(move |&d| d <= cap);
    let mut probe = Probe { plan: p.clone(), codes: rules::Codes(Vec::with_capacity(8)) };
    let candidates_per_shape = (opts.micro_batch_sizes.len() * ORDER.len()) as u64;
    let mut work = 0u64;
    let mut out = Vec::new();
    for tp in upto(tp_cap) {
        for cp in upto(opts.max_cp.max(1)) {
            if cp > 1 && seq / cp < 1024 {
                continue;
            }
            for pp in upto(layers) {
                let base = Shape { tp, pp, vpp: 1, cp, ep: 1, etp: tp, sp: false, first: None, last: None };
                if !probe.passes(&base, |p, c| rules::world::dense_mesh(p, c)) {
                    continue;
                }
                let etps: &[u64] = if !moe { &[tp] } else if tp > 1 { &[1, tp] } else { &[1] };
                for (first, last, vpp) in pipeline_shapes(&mut probe, splits, m.num_layers, base) {
                    for &etp in etps {
                        for ep in upto(ep_cap) {
                            for sp in [true, false] {
                                work = work.saturating_add(1);
                                let sh = Shape { tp, pp, vpp, cp, ep, etp, sp, first, last };
                                let valid = probe.passes(&sh, |p, c| {
                                    rules::world::expert_mesh(p, c);
                                    rules::moe::expert_parallel(p, c);
                                    rules::sequence::sequence_parallel(p, c);
                                });
                                if valid {
                                    let per_candidate = CANDIDATE_WORK.saturating_add(pp).saturating_add(pp.saturating_mul(vpp));
                                    work = work.saturating_add(candidates_per_shape.saturating_mul(per_candidate));
                                    out.push(sh);
                                }
                                if work > MAX_SEARCH_WORK {
                                    return Err(work);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(out)
}

/// The layer splits tried for `base.pp` stages, as (first, last, VPP): the even split, or where the layers do not
/// divide, one lighter first or last stage so the other stages divide evenly; each with every VPP up to a stage's
/// layer count. Valid as [`pipeline::split_layers`] and [`rules::pipeline::stages`] say.
fn pipeline_shapes(probe: &mut Probe, splits: &mut Splits, layers: u64, base: Shape) -> Vec<(Option<u64>, Option<u64>, u64)> {
    let pp = base.pp;
    let mut edges = vec![(None, None)];
    if split_of(splits, layers, pp, 1, None, None).is_err() {
        // The other stages hold ⌈layers/PP⌉ each; the edge stage takes the rest.
        let per = layers.div_ceil(pp.max(1));
        edges = match layers.checked_sub(pp.saturating_sub(1).saturating_mul(per)) {
            Some(edge) => vec![(Some(edge), None), (None, Some(edge))],
            None => Vec::new(),
        };
    }
    let mut out = Vec::new();
    for (first, last) in edges {
        if !probe.passes(&Shape { first, last, ..base }, |p, c| rules::pipeline::stages(p, c)) {
            continue;
        }
        let Ok(split) = split_of(splits, layers, pp, 1, first, last) else { continue };
        let smallest = split.layer_counts().min().unwrap_or(0).max(1);
        for vpp in divisors_upto(smallest, smallest) {
            let sh = Shape { vpp, first, last, ..base };
            if probe.passes(&sh, |p, c| rules::pipeline::stages(p, c)) && split_of(splits, layers, pp, vpp, first, last).is_ok() {
                out.push((first, last, vpp));
            }
        }
    }
    out
}

/// Reads a plan file for the search: `model`, `cluster`, `training.global_batch_size` and `training.seq_length`
/// are required; `parallelism` may be absent (it is searched).
pub fn search_str(text: &str, opts: &SearchOptions) -> Result<SearchResult, InputError> {
    search_value(&plan::read_json(text)?, opts)
}

/// As [`search_str`], from a JSON value.
pub fn search_value(value: &Value, opts: &SearchOptions) -> Result<SearchResult, InputError> {
    // A plan naming a Bridge recipe takes its batch and sequence from it (crate::recipes).
    let (resolved, _) = crate::recipes::resolve(value, &mut Vec::new())?;
    let value = resolved.as_ref();
    for (field, example) in [("global_batch_size", "1024"), ("seq_length", "4096")] {
        let present = value.get("training").and_then(|t| t.get(field)).is_some_and(|v| !v.is_null());
        if !present && value.is_object() {
            return Err(InputError::new(
                Code::InvalidPlan,
                format!("the search needs `training.{field}`"),
                format!("add \"training\": {{\"{field}\": {example}, ...}} to the plan file"),
            ));
        }
    }
    let (p, _) = plan::parse_plan(value)?;
    let world = p.world_size();
    if world > MAX_SEARCH_WORLD {
        return Err(InputError::new(
            Code::SearchTooLarge,
            format!("the cluster has {world} GPUs; the search enumerates layouts of at most {MAX_SEARCH_WORLD} GPUs"),
            format!("search a cluster of at most {MAX_SEARCH_WORLD} GPUs (gpus_per_node × num_nodes)"),
        ));
    }
    search_within_budget(&p, opts).map_err(|_work| {
        let experts = if p.model.is_moe() { format!(", {} experts", p.model.num_experts()) } else { String::new() };
        InputError::new(
            Code::SearchTooLarge,
            format!(
                "sizing every layout of {} ({} layers{experts}) on {world} GPUs would take more than the {MAX_SEARCH_WORK} units of work the search does in about a second (a unit: one pipeline stage or virtual chunk of one candidate)",
                p.model_name, p.model.num_layers
            ),
            "search fewer GPUs (a count with fewer divisors: a power of two has few), or plan this cluster's layout with `meshplan plan`",
        )
    })
}

/// Searches layouts for the model, cluster and training of `base` (its parallelism is ignored). A space too large to
/// size within the search's budget gives an empty result ([`search_value`] says why).
pub fn search(base: &Plan, opts: &SearchOptions) -> SearchResult {
    search_within_budget(base, opts).unwrap_or_else(|_work| empty_result(base))
}

fn empty_result(base: &Plan) -> SearchResult {
    SearchResult {
        evaluated: 0,
        valid: 0,
        candidates: Vec::new(),
        pareto: Vec::new(),
        world_size: base.world_size(),
        gpu_memory_bytes: base.gpu.memory_bytes(),
        smallest_peak_bytes: None,
        pruned_by_memory: 0,
        rejected_by: BTreeMap::new(),
        dominated: 0,
    }
}

/// The search, or the work its layouts would cost when that is over [`MAX_SEARCH_WORK`].
fn search_within_budget(base: &Plan, opts: &SearchOptions) -> Result<SearchResult, u64> {
    let mut result = empty_result(base);
    // `search_value` says why it does not search above this; a caller of this function gets an empty result.
    if base.world_size() == 0 || base.world_size() > MAX_SEARCH_WORLD {
        return Ok(result);
    }
    let mut p = base.clone();
    let mut scratch = Scratch { codes: rules::Codes(Vec::with_capacity(64)), mem: memory::MemoryReport::default(), kinds: base.model.kinds() };
    let mut recs: Vec<Rec> = Vec::with_capacity(4096);
    let mut mbs_list: Vec<u64> = opts.micro_batch_sizes.iter().copied().filter(|&m| m >= 1).collect();
    mbs_list.sort_unstable();
    mbs_list.dedup();
    let variants = ORDER.len() as u64;
    // Buffers the loop rewrites in place: the hot loop allocates per pipeline shape at most, never per candidate.
    let mut splits: Splits = BTreeMap::new();
    let mut params: Vec<memory::StageParams> = Vec::new();
    let mut derived = Derived::default();
    let shapes = shapes(base, opts, &mut splits)?;
    for sh in shapes {
        let split = splits
            .entry((sh.pp, sh.vpp, sh.first, sh.last))
            .or_insert_with(|| pipeline::split_layers(base.model.num_layers, sh.pp, sh.vpp, sh.first, sh.last));
        let split = match split {
            Ok(split) => &*split,
            Err(e) => {
                // Not produced by `shapes`; counted as the rules would report it.
                result.evaluated += variants * mbs_list.len() as u64;
                for _ in 0..variants * mbs_list.len() as u64 {
                    reject(&mut result, rules::split_code(e));
                }
                continue;
            }
        };
        for (mi, &mbs) in mbs_list.iter().enumerate() {
            let mut key = sh.key(mbs, ORDER[0]);
            apply(&mut p, &key);
            report::derive_into(&p, Some(split), &mut derived);
            if mi == 0 {
                // The stages' parameters depend on the layout only: once for every micro-batch and variant.
                memory::stage_params_into(&p, &derived, split, &scratch.kinds, &mut params);
            }
            let mut cell = Cell { params: &params, derived: &derived, rules: None };
            // Least memory first: if neither full nor selective recompute with the distributed optimizer fits, no
            // variant of this cell does, nor any larger micro-batch (the memory model is monotone in these).
            // Without the distributed optimizer a layout needs more memory than with it: skipped when that one does
            // not fit, and never ranked (it is dominated) when it does.
            let mut oom = [false; ORDER.len()];
            let mut exhausted = false;
            for (i, &variant) in ORDER.iter().enumerate() {
                if i == 2 && oom[0] && oom[1] {
                    exhausted = true;
                    result.pruned_by_memory += variants - 2;
                    break;
                }
                let distributed = i.checked_sub(3).map(|j| ORDER[j]);
                if distributed.is_some_and(|_| oom[i - 3]) {
                    oom[i] = true;
                    result.pruned_by_memory += 1;
                    continue;
                }
                key = sh.key(mbs, variant);
                apply_training(&mut p, &key);
                match evaluate(&p, &key, &mut cell, &mut scratch, &mut result, distributed.is_none()) {
                    Outcome::Valid(rec) => recs.push(rec),
                    Outcome::Dominated => {}
                    Outcome::Rejected { out_of_memory } => oom[i] = out_of_memory,
                }
            }
            if exhausted {
                result.pruned_by_memory += variants * (mbs_list.len() - mi - 1) as u64;
                break;
            }
        }
    }
    result.pareto = pareto(&recs);
    // `better` ends on the layout key, unique per record: a total order, so the unstable sort is deterministic.
    // References are sorted, not the records: a tenth of the bytes to move.
    let mut ranked: Vec<&Rec> = recs.iter().collect();
    ranked.sort_unstable_by(|a, b| better(a, b));
    // The best `top`, leaving out layouts that differ from a better pick only in which edge stage is lighter.
    let mut picked: Vec<Rec> = Vec::with_capacity(opts.top.min(recs.len()));
    for &rec in &ranked {
        if picked.len() >= opts.top {
            break;
        }
        if picked.iter().any(|q| Key { first: None, last: None, ..q.key } == Key { first: None, last: None, ..rec.key }) {
            continue;
        }
        picked.push(*rec);
    }
    for rank in 0..picked.len() {
        let rec = picked[rank];
        apply(&mut p, &rec.key);
        let split = pipeline::split_layers(p.model.num_layers, rec.key.pp, rec.key.vpp, rec.key.first, rec.key.last);
        let derived = report::derive(&p, split.as_ref().ok());
        let perf = perf::estimate(&p, &derived);
        let why = explain(&p, &rec, &picked, rank, &derived, &perf);
        result.candidates.push(Candidate {
            parallelism: parallelism_of(&rec.key),
            training: training_of(&rec.key),
            step_time_s: rec.step_time_s,
            tokens_per_s_per_gpu: rec.tokens_per_s_per_gpu,
            model_tflops_per_gpu: rec.model_tflops_per_gpu,
            mfu: rec.mfu,
            peak_bytes: rec.peak_bytes,
            pipeline_bubble_fraction: derived.pipeline_bubble_fraction,
            low_memory_headroom: rec.tight,
            why,
            plan: Some(p.clone()),
        });
    }
    Ok(result)
}

/// Layer splits by pipeline shape (PP, VPP, first-stage layers, last-stage layers), computed once each.
type Splits = BTreeMap<(u64, u64, Option<u64>, Option<u64>), Result<StageSplit, pipeline::SplitError>>;

/// Recompute / distributed-optimizer variants, least memory first (0 none, 1 selective, 2 full).
const ORDER: [(u8, bool); 6] = [(2, true), (1, true), (0, true), (2, false), (1, false), (0, false)];

/// The Pareto front of sorted records: ascending peak memory, each point faster than every point below it.
fn pareto(recs: &[Rec]) -> Vec<ParetoPoint> {
    let mut by_mem: Vec<&Rec> = recs.iter().collect();
    by_mem.sort_unstable_by(|a, b| a.peak_bytes.cmp(&b.peak_bytes).then(better(a, b)));
    let mut out = Vec::new();
    let mut best = f64::NEG_INFINITY;
    for r in by_mem {
        if r.tokens_per_s_per_gpu > best {
            best = r.tokens_per_s_per_gpu;
            out.push(ParetoPoint {
                parallelism: parallelism_of(&r.key),
                training: training_of(&r.key),
                peak_bytes: r.peak_bytes,
                tokens_per_s_per_gpu: r.tokens_per_s_per_gpu,
                step_time_s: r.step_time_s,
            });
        }
    }
    out
}

fn gib(b: u64) -> f64 {
    b as f64 / (1u64 << 30) as f64
}

fn describe(k: &Key) -> String {
    let mut s = format!("TP {} PP {}", k.tp, k.pp);
    if k.vpp > 1 {
        s += &format!(" VPP {}", k.vpp);
    }
    if k.cp > 1 {
        s += &format!(" CP {}", k.cp);
    }
    if k.ep > 1 || k.etp != k.tp {
        s += &format!(" EP {} ETP {}", k.ep, k.etp);
    }
    s += &format!(
        " mbs {} {} recompute{}",
        k.mbs,
        match k.recompute {
            0 => "no",
            1 => "selective",
            _ => "full",
        },
        if k.distopt { "" } else { " without distributed optimizer" }
    );
    s
}

/// The fields where `a` and `b` differ, as "name a vs b".
fn differences(a: &Key, b: &Key) -> Vec<String> {
    let mut d = Vec::new();
    let mut num = |name: &str, x: u64, y: u64| {
        if x != y {
            d.push(format!("{name} {x} vs {y}"));
        }
    };
    num("TP", a.tp, b.tp);
    num("PP", a.pp, b.pp);
    num("VPP", a.vpp, b.vpp);
    num("CP", a.cp, b.cp);
    num("EP", a.ep, b.ep);
    num("ETP", a.etp, b.etp);
    num("micro batch", a.mbs, b.mbs);
    if a.recompute != b.recompute {
        let r = |c: u8| match c {
            0 => "none",
            1 => "selective",
            _ => "full",
        };
        d.push(format!("recompute {} vs {}", r(a.recompute), r(b.recompute)));
    }
    if a.sp != b.sp {
        d.push(format!("SP {} vs {}", a.sp, b.sp));
    }
    if a.distopt != b.distopt {
        d.push(format!("distributed optimizer {} vs {}", a.distopt, b.distopt));
    }
    if (a.first, a.last) != (b.first, b.last) {
        d.push("layer split differs".into());
    }
    d
}

fn explain(p: &Plan, rec: &Rec, recs: &[Rec], rank: usize, d: &Derived, perf: &Performance) -> Vec<String> {
    let mut why = Vec::new();
    let cap = p.gpu.memory_bytes();
    let free = cap.saturating_sub(rec.peak_bytes);
    why.push(format!(
        "headroom: peak {:.1} GiB of {:.1} GiB per GPU, {:.1} GiB ({:.0}%) free",
        gib(rec.peak_bytes),
        gib(cap),
        gib(free),
        100.0 * free as f64 / cap.max(1) as f64
    ));
    if rec.tight {
        why.push("low-memory-headroom: under 10% free, so ranked after every layout with more room".into());
    }
    let par = &p.parallelism;
    if par.pp() > 1 {
        why.push(format!(
            "bubble: (PP−1)/(VPP·m) = {}/({}·{}) = {:.1}% of the step",
            par.pp() - 1,
            par.vpp(),
            d.num_microbatches,
            100.0 * d.pipeline_bubble_fraction
        ));
    } else {
        why.push(format!("bubble: none (PP 1), {} microbatches per step, DP {}", d.num_microbatches, d.data_parallel_size));
    }
    let dom = p.cluster.nvlink_domain_size;
    let sizes = MeshSizes { tp: par.tp(), pp: par.pp(), cp: par.cp(), ep: par.ep(), etp: par.etp() };
    let meshes = Meshes::resolve(d.world_size, &sizes, &par.order).ok();
    let crosses = |kind: GroupKind| meshes.is_some_and(|m| m.crossing(kind, dom).groups_crossing > 0);
    let mut inside = Vec::new();
    let mut outside = Vec::new();
    let moe = p.model.is_moe();
    for (kind, label, size) in [
        (GroupKind::Tp, "TP", par.tp()),
        (GroupKind::Cp, "CP", par.cp()),
        (GroupKind::Ep, "EP", if moe { par.ep() } else { 1 }),
        (GroupKind::Dp, "DP", d.data_parallel_size),
        (GroupKind::Pp, "PP", par.pp()),
    ] {
        if size <= 1 {
            continue;
        }
        if crosses(kind) { outside.push(format!("{label} {size}")) } else { inside.push(format!("{label} {size}")) }
    }
    let mut nv = format!("NVLink (domain {dom}): ");
    if inside.is_empty() {
        nv += "no parallel group of size > 1 stays inside one domain";
    } else {
        nv += &format!("{} inside one domain", inside.join(", "));
    }
    if !outside.is_empty() {
        nv += &format!("; {} across domains", outside.join(", "));
    }
    why.push(nv);
    if let Some(line) = breakdown_line(perf) {
        why.push(line);
    }
    if rank == 0 {
        if let Some(second) = recs.get(1) {
            let gain = 100.0 * (rec.tokens_per_s_per_gpu / second.tokens_per_s_per_gpu.max(f64::MIN_POSITIVE) - 1.0);
            let diff = differences(&rec.key, &second.key);
            why.push(format!(
                "runner-up ({}) is {:.1}% slower ({:.0} vs {:.0} tokens/s/GPU){}",
                describe(&second.key),
                gain,
                rec.tokens_per_s_per_gpu,
                second.tokens_per_s_per_gpu,
                if diff.is_empty() { String::new() } else { format!(": {}", diff.join(", ")) }
            ));
            if second.peak_bytes < rec.peak_bytes {
                why.push(format!("the runner-up needs {:.1} GiB less memory", gib(rec.peak_bytes - second.peak_bytes)));
            }
        } else {
            why.push("the only layout that fits".into());
        }
    } else if let Some(best) = recs.first() {
        let loss = 100.0 * (1.0 - rec.tokens_per_s_per_gpu / best.tokens_per_s_per_gpu.max(f64::MIN_POSITIVE));
        let diff = differences(&rec.key, &best.key);
        why.push(format!(
            "{:.1}% slower than #1{}",
            loss,
            if diff.is_empty() { String::new() } else { format!(" ({})", diff.join(", ")) }
        ));
        if rec.peak_bytes < best.peak_bytes {
            why.push(format!("needs {:.1} GiB less memory than #1", gib(best.peak_bytes - rec.peak_bytes)));
        }
    }
    why
}

/// Where the step time goes: compute, and the largest overheads of the performance breakdown.
fn breakdown_line(perf: &Performance) -> Option<String> {
    let b = &perf.breakdown;
    let step = perf.step_time_s;
    if !(step > 0.0) {
        return None;
    }
    let mut parts = b.terms();
    // Compute leads the line; the rest are ranked by size.
    parts[0].1 = 0.0;
    parts.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    let pct = |x: f64| 100.0 * x / step;
    let mut line = format!("step {:.2} s: compute {:.0}%", step, pct(b.compute_s));
    for (name, t) in parts.iter().filter(|p| p.1 > 0.0).take(3) {
        line += &format!(", {name} {:.1}%", pct(*t));
    }
    Some(line)
}
