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
use crate::perf::{self, Breakdown, Performance};
use crate::pipeline::layout::{self as pipeline_layout, LayoutSpec};
use crate::pipeline::{self, StageSplit};
use crate::plan::{self, DEFAULT_ORDER, InputError, Parallelism, Plan, Recompute, RecomputeMethod};
use crate::settings::{DispatcherType, RecomputeModule};
use crate::report::{self, Derived};
use crate::{Code, rules};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::cmp::Ordering;
use crate::limits::{CANDIDATE_WORK, MAX_SEARCH_TOP, MAX_SEARCH_WORK, MAX_SEARCH_WORLD};
use std::collections::BTreeMap;

mod speed;
pub use speed::{SPEED_KEYS, Tuned};

/// What the search may choose beside the layout, as [`read_for_search`] reads it from the plan.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tuning {
    /// The search may switch Megatron-Core's default allgather dispatcher to alltoall at EP > 1: the plan names none.
    pub dispatcher_free: bool,
    /// The speed settings a tuned run would use (tuned defaults, `crate::tuned`), applied to each candidate where
    /// Megatron accepts them for its layout ([`speed`]); None: Megatron-Core's plain defaults throughout.
    pub tuned: Option<Tuned>,
}

/// Search settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchOptions {
    /// How many ranked candidates to return; at most [`MAX_SEARCH_TOP`] are (a larger value is clamped, with a note).
    pub top: usize,
    /// Largest tensor-parallel size tried (further capped by the NVLink domain). The default, 72, is the domain of an
    /// NVL72 rack (GB200, GB300), where TP beyond 8 stays on NVLink; an 8-GPU HGX domain caps it at 8.
    pub max_tp: u64,
    /// Largest context-parallel size tried.
    pub max_cp: u64,
    /// Micro-batch sizes tried.
    pub micro_batch_sizes: Vec<u64>,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions { top: 5, max_tp: 72, max_cp: 16, micro_batch_sizes: vec![1, 2, 4, 8] }
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
    /// Megatron's `pipeline_model_parallel_layout` (string form) where the layers do not split into PP·VPP equal
    /// chunks: the layers dealt as evenly as possible, the embedding in the first chunk, MTP and loss in the last
    /// ([`pipeline_layout::even_text`]), as Megatron Bridge's DeepSeek-V3 and Qwen3 recipes lay out their pipelines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline_model_parallel_layout: Option<String>,
}

impl CandidateParallelism {
    /// The plan's whole `parallelism` this candidate runs, as the search plans it: its sizes and split, ETP stated for
    /// a MoE model (Megatron-Core's default, TP, for a dense one), Megatron-Core's default order, no microbatch grouping
    /// and no accounted split; the rows the search does not choose ([`crate::parallelism::ParSetting::searched`]) at
    /// their defaults.
    pub fn parallelism(&self, moe: bool) -> Parallelism {
        let mut par = Parallelism::default();
        self.write_into(&mut par, moe, self.pipeline_model_parallel_layout.as_deref());
        par
    }

    /// Writes this candidate into `par` as [`Self::parallelism`] describes, with `layout` as its layout text: the one
    /// place the searched rows are written, by the search's hot path (which reuses the plan's strings: no allocation
    /// once they are held) and by the Advisor's Apply alike.
    pub fn write_into(&self, par: &mut Parallelism, moe: bool, layout: Option<&str>) {
        par.tensor_model_parallel_size = self.tensor_model_parallel_size;
        par.pipeline_model_parallel_size = self.pipeline_model_parallel_size;
        par.virtual_pipeline_model_parallel_size = self.virtual_pipeline_model_parallel_size;
        par.context_parallel_size = self.context_parallel_size;
        par.expert_model_parallel_size = self.expert_model_parallel_size;
        par.expert_tensor_parallel_size = self.expert_tensor_parallel_size;
        // Dense models keep megatron-core's default ETP = TP; MoE candidates state ETP explicitly.
        par.expert_tensor_parallel_size_defaulted = !moe;
        par.sequence_parallel = self.sequence_parallel;
        if par.order != DEFAULT_ORDER {
            par.order.clear();
            par.order.push_str(DEFAULT_ORDER);
        }
        par.num_layers_in_first_pipeline_stage = self.num_layers_in_first_pipeline_stage;
        par.num_layers_in_last_pipeline_stage = self.num_layers_in_last_pipeline_stage;
        // The search plans the split itself (even, one lighter edge stage, or an even layout): a layout or accounted
        // split of the base plan is written for the base plan's pipeline, not the candidate's.
        set_layout(&mut par.pipeline_model_parallel_layout, layout);
        par.account_for_embedding_in_pipeline_split = false;
        par.account_for_loss_in_pipeline_split = false;
        par.microbatch_group_size_per_vp_stage = None;
    }
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
    /// The MoE token dispatcher the candidate runs (MoE models): `alltoall` for EP > 1 where the plan left
    /// Megatron-Core's default `allgather` (Megatron's MoE guide recommends alltoall whenever expert parallelism is
    /// applied; Megatron Bridge's MoE recipes set it), else the plan's own. (Pareto points: set only when switched.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moe_token_dispatcher_type: Option<DispatcherType>,
    /// The selective recompute modules the candidate runs: a list the search chose (tried when no recompute does not
    /// fit), or the plan's own; absent with no or full recompute, or when the plan leaves Megatron's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recompute_modules: Option<Vec<RecomputeModule>>,
    /// Whether the candidate offloads the optimizer to the CPU (the search tries it when no recompute does not fit), and
    /// the fraction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optimizer_cpu_offload: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optimizer_offload_fraction: Option<f64>,
    /// The speed settings this candidate runs with that the plan left to tuned defaults ([`SPEED_KEYS`] but the
    /// dispatcher, which `moe_token_dispatcher_type` carries), by plan key: the nearest perf recipe's value where
    /// Megatron accepts it for this layout, else Megatron-Core's default. Empty with plain defaults.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub speed_settings: BTreeMap<String, Value>,
}

impl CandidateTraining {
    /// The speed settings a row runs, as "key value" parts (the dispatcher first, for a MoE model; then
    /// [`CandidateTraining::speed_settings`] in key order; a list as its entries joined by ","): what the CLI table and
    /// the Advisor row print. Empty with plain defaults and a dense model.
    pub fn speed_parts(&self) -> Vec<String> {
        let show = |v: &Value| match v {
            Value::String(s) => s.clone(),
            Value::Array(a) if a.is_empty() => "[]".to_string(),
            Value::Array(a) => a.iter().map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_string)).collect::<Vec<_>>().join(","),
            other => other.to_string(),
        };
        let dispatcher = self.moe_token_dispatcher_type.map(|d| format!("moe_token_dispatcher_type {}", d.key()));
        dispatcher.into_iter().chain(self.speed_settings.iter().map(|(k, v)| format!("{k} {}", show(v)))).collect()
    }
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
    /// Why this layout: how it compares (the `versus` line first), memory headroom, pipeline bubble, which groups
    /// stay inside NVLink.
    pub why: Vec<String>,
    /// This layout against the runner-up (the best pick) or against #1 (every other pick), term by term of the
    /// step-time breakdown. None when there is nothing to compare with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub versus: Option<Versus>,
    /// The step-time breakdown of this layout ([`Breakdown::terms`]: they sum to `step_time_s`).
    #[serde(default)]
    pub breakdown: Breakdown,
    /// Predicted within the step-time model's own error of #1 ([`perf::tie_band`]: its median error on how two runs
    /// compare): a tie the model cannot break; #1 is tied when its runner-up is. Its `why` says so after the
    /// comparison, with what would separate them.
    #[serde(default)]
    pub tied_with_best: bool,
    /// The resolved plan of this candidate (run it through [`report::plan_resolved`] for the full report).
    #[serde(skip)]
    pub plan: Option<Plan>,
}

/// A pick against another, by the step-time terms that differ.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Versus {
    /// The 1-based rank compared against: 2 for the best pick (its runner-up), 1 for every other pick.
    pub rank: usize,
    /// This layout's step time minus the other's, in seconds (negative: this one is faster).
    pub step_time_delta_s: f64,
    /// The breakdown terms that differ, largest difference first.
    pub terms: Vec<TermDelta>,
}

/// One breakdown term of a comparison.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TermDelta {
    /// The term's key, as [`Breakdown::terms`] names it.
    pub term: String,
    /// This layout's seconds of the term minus the other's.
    pub delta_s: f64,
    /// What differs between the two layouts that moves this term ("EP 8 vs 16, inside vs across NVLink").
    pub cause: String,
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
    /// What the search changed of what it was asked: a `top` above [`MAX_SEARCH_TOP`], clamped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
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
    /// The layers are laid out by Megatron's `pipeline_model_parallel_layout` ([`pipeline_layout::even_text`] over
    /// PP·VPP chunks) instead of `split_layers`.
    layout: bool,
    mbs: u64,
    /// 0 none, 1 selective (the plan's modules), 2 full, 3.. selective with [`MODULE_SUBSETS`]`[code − 3]`.
    recompute: u8,
    /// Optimizer CPU offload chosen by the search: 0 the plan's own setting, else [`OFFLOAD_FRACTIONS`]`[code − 1]`.
    offload: u8,
    distopt: bool,
    /// The MoE token dispatcher, an index into [`DispatcherType::ALL`]; `a2a`: the search switched it from the plan's
    /// default allgather to alltoall (EP > 1).
    dispatcher: u8,
    a2a: bool,
    /// The tuned speed settings withdrawn for this candidate (a mask of [`SPEED_KEYS`], [`speed::settle`]).
    speed: u16,
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
        2 => Recompute::Full,
        _ => Recompute::Selective,
    }
}

/// The selective recompute module lists the search tries when a layout does not fit without recompute, as Megatron
/// Bridge's recipes tune them (DeepSeek-V3: mla_up_proj, mlp; Qwen3: moe_act, layernorm; Llama: core_attn): each frees
/// the activations of its module for a third of its forward again (memory/activations.rs, perf.rs recompute_s). Dense
/// models take the first two, MoE models all but `mlp` (unless they have dense layers).
const MODULE_SUBSETS: [&[RecomputeModule]; 4] =
    [&[RecomputeModule::Mlp], &[RecomputeModule::Layernorm], &[RecomputeModule::MoeAct], &[RecomputeModule::Layernorm, RecomputeModule::MoeAct]];

/// Optimizer CPU offload fractions the search tries when a layout does not fit without recompute.
const OFFLOAD_FRACTIONS: [f64; 2] = [0.5, 1.0];

/// The module list of a recompute code ≥ 3.
fn subset_of(code: u8) -> Option<&'static [RecomputeModule]> {
    usize::from(code).checked_sub(3).and_then(|i| MODULE_SUBSETS.get(i)).copied()
}

/// The layout text of a `layout` key: [`pipeline_layout::even_text`] over PP·VPP chunks.
fn layout_text(m: &crate::model::ModelConfig, pp: u64, vpp: u64) -> String {
    pipeline_layout::even_text(m.num_layers, m.mtp_num_layers, pp.saturating_mul(vpp))
}

/// The layer split of a pipeline shape as [`report::split_of`] makes it for the candidate's plan: a hybrid pattern's
/// `|` segments (one segment: `split_layers` without VPP, which Megatron-Core refuses there), `split_layers`, or the
/// layout's split for a `layout` shape.
fn split_for(m: &crate::model::ModelConfig, pp: u64, vpp: u64, first: Option<u64>, last: Option<u64>, layout: bool) -> Result<StageSplit, pipeline::SplitError> {
    if let Some(h) = m.hybrid_layer_pattern.as_ref().filter(|_| !layout) {
        return pipeline::split_from_segments(h.segments(), pp, (vpp > 1).then_some(vpp), first, last);
    }
    if !layout {
        return pipeline::split_layers(m.num_layers, pp, vpp, first, last);
    }
    let spec = LayoutSpec::Text(layout_text(m, pp, vpp));
    pipeline_layout::split(&spec, pp, Some(vpp), m.num_layers, m.mtp_num_layers).map(|l| l.split).map_err(pipeline::SplitError::Layout)
}

/// Writes `text` as the plan's layout (None: no layout), reusing the plan's string: no allocation once it holds one.
fn set_layout(slot: &mut Option<LayoutSpec>, text: Option<&str>) {
    match (slot.as_mut(), text) {
        (Some(LayoutSpec::Text(s)), Some(t)) => {
            if s != t {
                s.clear();
                s.push_str(t);
            }
        }
        (_, Some(t)) => *slot = Some(LayoutSpec::Text(t.to_string())),
        (_, None) => *slot = None,
    }
}

/// Writes `k` into `p` (the rest of the plan is left as given); `layout` is the layout text of a `layout` key.
fn apply(p: &mut Plan, k: &Key, layout: Option<&str>) {
    let moe = p.model.is_moe();
    sizes_of(k).write_into(&mut p.parallelism, moe, layout.filter(|_| k.layout));
    p.training.micro_batch_size = k.mbs;
    p.training.settings.moe_token_dispatcher_type = dispatcher_of(k.dispatcher);
    apply_training(p, k);
}

fn dispatcher_of(code: u8) -> DispatcherType {
    DispatcherType::ALL.get(usize::from(code)).copied().unwrap_or(DispatcherType::Allgather)
}

fn dispatcher_code(d: DispatcherType) -> u8 {
    DispatcherType::ALL.iter().position(|&x| x == d).unwrap_or(0) as u8
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

fn parallelism_of(k: &Key, p: &Plan) -> CandidateParallelism {
    CandidateParallelism { pipeline_model_parallel_layout: k.layout.then(|| layout_text(&p.model, k.pp, k.vpp)), ..sizes_of(k) }
}

/// The candidate's sizes and split, its layout left out (the search writes the layout text it holds).
fn sizes_of(k: &Key) -> CandidateParallelism {
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
        pipeline_model_parallel_layout: None,
    }
}

/// [`training_of`] with the settings the pick ran with, from its sized plan: the dispatcher (MoE models), the module
/// list (the plan's own where the search did not choose one) and the optimizer offload — what applying it must write.
fn training_run(k: &Key, p: &Plan, tuned: Option<&Tuned>) -> CandidateTraining {
    let st = &p.training.settings;
    let speed_keys = tuned.map_or(0, |t| t.keys) & !speed::DISPATCHER;
    let speed_settings = speed::keys_of(speed_keys).filter_map(|key| Some((key.to_string(), st.resolved(key, &p.gpu)?))).collect();
    CandidateTraining {
        speed_settings,
        moe_token_dispatcher_type: p.model.is_moe().then_some(st.moe_token_dispatcher_type),
        recompute_modules: st.recompute_modules.clone().filter(|_| st.recompute_granularity == Recompute::Selective),
        optimizer_cpu_offload: Some(st.optimizer_cpu_offload),
        optimizer_offload_fraction: st.optimizer_offload_fraction.filter(|_| st.optimizer_cpu_offload),
        ..training_of(k)
    }
}

fn training_of(k: &Key) -> CandidateTraining {
    let full = k.recompute == 2;
    let offload = usize::from(k.offload).checked_sub(1).and_then(|i| OFFLOAD_FRACTIONS.get(i)).copied();
    CandidateTraining {
        recompute_modules: subset_of(k.recompute).map(<[RecomputeModule]>::to_vec),
        optimizer_cpu_offload: offload.map(|_| true),
        optimizer_offload_fraction: offload,
        micro_batch_size: k.mbs,
        recompute_granularity: recompute_of(k.recompute),
        use_distributed_optimizer: k.distopt,
        recompute_method: full.then_some(RecomputeMethod::Uniform),
        recompute_num_layers: full.then_some(1),
        moe_token_dispatcher_type: k.a2a.then_some(DispatcherType::Alltoall),
        speed_settings: BTreeMap::new(),
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
    /// What the step time reads of the layout alone: the same for every micro-batch and variant.
    step: &'a perf::StepLayout,
    derived: &'a Derived,
    /// The first rule error of this cell once [`rules::check`] has run, with the recompute variant it ran for. A
    /// variant that passes passes for the whole cell; an error is re-checked for another recompute variant, since some
    /// rules judge the recompute choice (full recompute beside CUDA graphs, `recompute_modules`): at most once per
    /// cell without errors, three times with.
    rules: Option<(u8, Option<Code>)>,
}

/// What every candidate shares: buffers and the model's layer parameters.
struct Scratch {
    /// The codes the rules find (no messages are built in the search).
    codes: rules::Codes,
    /// The candidate's memory, rewritten in place for each one.
    mem: memory::MemoryReport,
    /// The per-kind activations of the cell's candidates (cleared for each cell).
    activations: memory::ActivationMemo,
    kinds: LayerKinds,
    /// A module list swapped into the plan while the module subsets are tried (kept to reuse its buffer).
    spare: Option<Vec<RecomputeModule>>,
    /// The tuned speed settings withdrawn in the search's plan for the last candidate ([`speed::settle`]).
    withdrawn: u16,
    /// What [`speed::settle`] withdrew for each variant (recompute code, distributed optimizer, offload code) of the
    /// current layout shape: the same for each of its micro-batch sizes (cleared for each shape).
    settled: Vec<((u8, bool, u8), u16)>,
    /// Candidates out of memory by their estimate, not yet in `rejected_by` (most candidates: one lookup at the end).
    out_of_memory: u64,
}

/// The tuned speed settings of a search and what a withdrawn one goes back to.
#[derive(Clone, Copy)]
struct Tune<'a> {
    tuned: Option<&'a Tuned>,
    /// The base plan's settings: Megatron-Core's plain defaults where the plan is silent.
    plain: &'a crate::settings::Settings,
    dispatcher_free: bool,
}

impl Tune<'_> {
    /// Settles the tuned speed settings for the candidate `key` written in `p` ([`speed::settle`]), and records in the
    /// key what it withdrew and the dispatcher the candidate then runs.
    fn settle(&self, p: &mut Plan, key: &mut Key, s: &mut Scratch) {
        let Some(t) = self.tuned else { return };
        let fallback = self.fallback(key.ep);
        let before = s.withdrawn;
        let variant = (key.recompute, key.distopt, key.offload);
        s.withdrawn = match s.settled.iter().find(|(v, _)| *v == variant) {
            Some(&(_, mask)) => {
                speed::apply(p, t, self.plain, (dispatcher_of(key.dispatcher), fallback), before, mask);
                mask
            }
            None => {
                let mask = speed::settle(p, t, self.plain, dispatcher_of(key.dispatcher), fallback, before, &mut s.codes);
                s.settled.push((variant, mask));
                mask
            }
        };
        key.speed = s.withdrawn;
        // The memo keys its activations by the recompute and offload choices and these settings (CUDA graphs' buffers).
        s.activations.set_speed(s.withdrawn);
        if s.withdrawn & speed::DISPATCHER != 0 {
            key.dispatcher = dispatcher_code(fallback);
            key.a2a = fallback != self.plain.moe_token_dispatcher_type;
        }
    }

    /// The dispatcher a candidate runs without the tuned one: alltoall where the search switches Megatron-Core's
    /// default allgather at EP > 1 (as without tuned settings), else the plan's.
    fn fallback(&self, ep: u64) -> DispatcherType {
        let d = self.plain.moe_token_dispatcher_type;
        if self.dispatcher_free && ep > 1 && d == DispatcherType::Allgather { DispatcherType::Alltoall } else { d }
    }

    /// The tuned settings of a settled key written into `p` (its layout and dispatcher written by [`apply`]).
    fn restore(&self, p: &mut Plan, key: &Key) {
        if let Some(t) = self.tuned {
            speed::fix(&mut p.training.settings, t, self.plain, key.speed);
        }
    }
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
    evaluate_with(p, key, cell, s, result, rank, false)
}

/// [`evaluate`]; `fresh`: run the rules for this variant whatever the cell found (module lists and offload meet rules
/// of their own), without recording it for the cell.
fn evaluate_with(p: &Plan, key: &Key, cell: &mut Cell, s: &mut Scratch, result: &mut SearchResult, rank: bool, fresh: bool) -> Outcome {
    result.evaluated += 1;
    memory::estimate_peaks_memo(p, cell.derived, &s.kinds, cell.params, &mut s.activations, &mut s.mem, result.smallest_peak_bytes);
    let mem = &s.mem;
    let peak = mem.peak_bytes;
    result.smallest_peak_bytes = Some(result.smallest_peak_bytes.map_or(peak, |x| x.min(peak)));
    if !mem.fits {
        // rules::check_memory's out-of-memory error is exactly `!fits`; counted into `rejected_by` at the end.
        s.out_of_memory += 1;
        return Outcome::Rejected { out_of_memory: true };
    }
    let first_error = match cell.rules {
        _ if fresh => {
            s.codes.0.clear();
            rules::check(p, cell.derived, None, &mut s.codes);
            s.codes.first_error()
        }
        Some((_, None)) => None,
        Some((recompute, Some(code))) if recompute == key.recompute => Some(code),
        _ => {
            s.codes.0.clear();
            rules::check(p, cell.derived, None, &mut s.codes);
            let first = s.codes.first_error();
            cell.rules = Some((key.recompute, first));
            first
        }
    };
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
    let perf = perf::estimate_for(p, cell.derived, cell.step);
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
    layout: bool,
    dispatcher: u8,
    a2a: bool,
}

impl Shape {
    fn key(&self, mbs: u64, (recompute, distopt): (u8, bool)) -> Key {
        let s = *self;
        Key { tp: s.tp, pp: s.pp, vpp: s.vpp, cp: s.cp, ep: s.ep, etp: s.etp, sp: s.sp, first: s.first, last: s.last, layout: s.layout, mbs, recompute, distopt, offload: 0, dispatcher: s.dispatcher, a2a: s.a2a, speed: 0 }
    }
}

/// A scratch plan the search writes candidate layouts into to ask the rules about them, and the codes they find.
struct Probe {
    plan: Plan,
    codes: rules::Codes,
    /// The layout text of the last `layout` shape probed, and its (PP, VPP).
    layout: String,
    layout_of: (u64, u64),
}

impl Probe {
    /// Whether `check` finds no error in the plan with layout `sh` (micro-batch and recompute do not matter to the
    /// structural rules asked here).
    fn passes(&mut self, sh: &Shape, check: impl FnOnce(&Plan, &mut rules::Codes)) -> bool {
        if sh.layout && self.layout_of != (sh.pp, sh.vpp) {
            self.layout = layout_text(&self.plan.model, sh.pp, sh.vpp);
            self.layout_of = (sh.pp, sh.vpp);
        }
        apply(&mut self.plan, &sh.key(1, ORDER[0]), Some(&self.layout));
        self.codes.0.clear();
        check(&self.plan, &mut self.codes);
        self.codes.first_error().is_none()
    }
}

/// The layer split of a pipeline shape, computed once.
fn split_of<'a>(splits: &'a mut Splits, m: &crate::model::ModelConfig, pp: u64, vpp: u64, first: Option<u64>, last: Option<u64>, layout: bool) -> &'a Result<StageSplit, pipeline::SplitError> {
    splits.entry((pp, vpp, first, last, layout)).or_insert_with(|| split_for(m, pp, vpp, first, last, layout))
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
/// Or, as soon as sizing them all would cost more than `allowance` (at most [`MAX_SEARCH_WORK`]), that partial cost. A
/// candidate (a shape at one micro-batch size and one of the `ORDER` variants) costs [`CANDIDATE_WORK`] units for the
/// rules plus one per pipeline stage and virtual chunk its memory estimate walks; each rule probe of the enumeration
/// costs one unit.
fn shapes(p: &Plan, opts: &SearchOptions, splits: &mut Splits, dispatcher_free: bool, allowance: u64) -> Result<(Vec<Shape>, u64), u64> {
    let m = &p.model;
    let dispatcher = dispatcher_code(p.training.settings.moe_token_dispatcher_type);
    // EP > 1 with Megatron-Core's default allgather dispatcher: the search runs alltoall, as Megatron's MoE guide
    // recommends with expert parallelism (megatron/core/transformer/moe/README.md, --moe-token-dispatcher-type) and
    // Bridge's MoE recipes set, unless the plan names its dispatcher.
    let switch = dispatcher_free && p.training.settings.moe_token_dispatcher_type == DispatcherType::Allgather;
    let alltoall = dispatcher_code(DispatcherType::Alltoall);
    let w = p.world_size();
    let moe = m.is_moe();
    let layers = m.num_layers.max(1);
    let seq = p.training.seq_length;
    let tp_cap = opts.max_tp.min(p.cluster.nvlink_domain_size.max(1)).max(1);
    let ep_cap = m.num_experts().max(1);
    let world_divisors = divisors_upto(w, tp_cap.max(opts.max_cp).max(layers).max(ep_cap));
    let upto = |cap: u64| world_divisors.iter().copied().take_while(move |&d| d <= cap);
    let mut probe = Probe { plan: p.clone(), codes: rules::Codes(Vec::with_capacity(8)), layout: String::new(), layout_of: (0, 0) };
    let candidates_per_shape = (opts.micro_batch_sizes.len() * ORDER.len()) as u64;
    let mut work = 0u64;
    let mut out = Vec::new();
    for tp in upto(tp_cap) {
        for cp in upto(opts.max_cp.max(1)) {
            if cp > 1 && seq / cp < 1024 {
                continue;
            }
            for pp in upto(layers) {
                let base = Shape { tp, pp, vpp: 1, cp, ep: 1, etp: tp, sp: false, first: None, last: None, layout: false, dispatcher, a2a: false };
                if !probe.passes(&base, |p, c| rules::world::dense_mesh(p, c)) {
                    continue;
                }
                let etps: &[u64] = if !moe { &[tp] } else if tp > 1 { &[1, tp] } else { &[1] };
                for (first, last, vpp, layout) in pipeline_shapes(&mut probe, splits, base) {
                    for &etp in etps {
                        for ep in upto(ep_cap) {
                            for sp in [true, false] {
                                work = work.saturating_add(1);
                                let a2a = switch && moe && ep > 1;
                                let d = if a2a { alltoall } else { dispatcher };
                                let sh = Shape { tp, pp, vpp, cp, ep, etp, sp, first, last, layout, dispatcher: d, a2a };
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
                                if work > allowance {
                                    return Err(work);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    Ok((out, work))
}

/// The layer splits tried for `base.pp` stages, as (first, last, VPP, layout): the even split, or where the layers do
/// not divide, one lighter first or last stage so the other stages divide evenly; each with every VPP up to a stage's
/// layer count. Then, for a model without a hybrid pattern, the VPPs those splits cannot reach as an even
/// `pipeline_model_parallel_layout` ([`layout_vpps`]). Valid as [`pipeline::split_layers`], the layout's split and
/// [`rules::pipeline::stages`] say.
fn pipeline_shapes(probe: &mut Probe, splits: &mut Splits, base: Shape) -> Vec<(Option<u64>, Option<u64>, u64, bool)> {
    let pp = base.pp;
    let m = probe.plan.model.clone();
    let layers = m.num_layers;
    let mut edges = vec![(None, None)];
    if split_of(splits, &m, pp, 1, None, None, false).is_err() {
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
        let Ok(split) = split_of(splits, &m, pp, 1, first, last, false) else { continue };
        let smallest = split.layer_counts().min().unwrap_or(0).max(1);
        for vpp in divisors_upto(smallest, smallest) {
            let sh = Shape { vpp, first, last, ..base };
            if probe.passes(&sh, |p, c| rules::pipeline::stages(p, c)) && split_of(splits, &m, pp, vpp, first, last, false).is_ok() {
                out.push((first, last, vpp, false));
            }
        }
    }
    if pp > 1 && m.hybrid_layer_pattern.is_none() {
        for vpp in layout_vpps(layers, pp) {
            if out.iter().any(|o| o.2 == vpp) {
                continue;
            }
            let sh = Shape { vpp, layout: true, ..base };
            if probe.passes(&sh, |p, c| rules::pipeline::stages(p, c)) && split_of(splits, &m, pp, vpp, None, None, true).is_ok() {
                out.push((None, None, vpp, true));
            }
        }
    }
    out
}

/// The VPPs tried as an even layout on `pp` stages: for each largest chunk of [`LAYOUT_CHUNKS`] layers,
/// ⌈layers/(PP·VPP)⌉, the smallest VPP that reaches it (the slowest chunk paces the pipeline; fewer chunks of that
/// size pay fewer pipeline hand-offs). Megatron Bridge's tuned layouts are all of this kind: DeepSeek-V3's 61 layers
/// on PP 2 × VPP 4 (chunks of ≤ 8), PP 4 × VPP 4 (≤ 4), PP 8 × VPP 2 (≤ 4) and PP 8 × VPP 4 (≤ 2); Qwen3-235B's 94 on
/// PP 4 × VPP 12 (≤ 2), PP 8 × VPP 2, 3, 4 (≤ 6, 4, 3); Llama 3.1 405B's 126 on PP 8 × VPP 8 and PP 16 × VPP 4 (≤ 2).
/// Every chunk keeps at least one layer (PP·VPP ≤ layers).
fn layout_vpps(layers: u64, pp: u64) -> Vec<u64> {
    let pp = pp.max(1);
    let mut out: Vec<u64> = Vec::new();
    for c in LAYOUT_CHUNKS {
        let vpp = layers.div_ceil(pp.saturating_mul(c));
        if (2..=LAYOUT_MAX_VPP).contains(&vpp) && pp.saturating_mul(vpp) <= layers && !out.contains(&vpp) {
            out.push(vpp);
        }
    }
    out
}

/// The largest VPP the search lays out: Megatron Bridge's largest laid-out VPP (Qwen3-235B, PP 4 × VPP 12). Larger
/// ones come from the even split when the layers divide (Qwen3-30B-A3B's 48 on PP 2 × VPP 24).
const LAYOUT_MAX_VPP: u64 = 12;

/// Largest chunk sizes (layers) the search lays out. Megatron Bridge's tuned layouts have chunks of ≤ 8, 6, 4, 3 and 2
/// layers; only 8 and 4 are tried, for time: on DeepSeek-V3 (16,384 H100) chunks of ≤ 8 and 4 take the search from
/// 0.63 to 0.99 s of CPU per ten searches, adding 2 took it to 1.44 s (chunks of 2 mean PP·VPP ≈ layers/2 chunks for
/// every candidate's memory), past the browser's 100 ms budget. Of the layouts above, PP 8 × VPP 2 (chunks of ≤ 8) and
/// ≤ 4 ones are reached; those of chunks of 2 (DeepSeek-V3 PP 8 × VPP 4, Qwen3-235B PP 4 × VPP 12, Llama 3.1 405B
/// PP 8 × VPP 8 and PP 16 × VPP 4) and Qwen3-235B's PP 8 × VPP 4 are not.
/// Chunks of one layer come from the even split when the layers divide.
const LAYOUT_CHUNKS: [u64; 2] = [8, 4];

/// Reads a plan file for the search: `model`, `cluster`, `training.global_batch_size` and `training.seq_length`
/// are required; `parallelism` may be absent (it is searched).
pub fn search_str(text: &str, opts: &SearchOptions) -> Result<SearchResult, InputError> {
    search_value(&plan::read_json(text)?, opts)
}

/// As [`search_str`], from a JSON value.
pub fn search_value(value: &Value, opts: &SearchOptions) -> Result<SearchResult, InputError> {
    let (p, tuning) = read_for_search(value)?;
    let world = p.world_size();
    if world > MAX_SEARCH_WORLD {
        return Err(InputError::new(
            Code::SearchTooLarge,
            format!("the cluster has {world} GPUs; the search enumerates layouts of at most {MAX_SEARCH_WORLD} GPUs"),
            format!("search a cluster of at most {MAX_SEARCH_WORLD} GPUs (gpus_per_node × num_nodes)"),
        ));
    }
    search_counted(&p, opts, &tuning, MAX_SEARCH_WORK).map(|(r, _)| r).map_err(|_work| {
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

/// Reads a plan file as the search reads it: its Bridge recipe resolved (which may give the batch and sequence),
/// `training.global_batch_size` and `training.seq_length` required. The plan is read with Megatron-Core's plain
/// defaults; unless it asks for them (`"defaults": "megatron-core"`, or it names a recipe: `tuned::plain`), it is read
/// with tuned defaults too, and the speed settings those assume from a perf recipe ([`SPEED_KEYS`]) are the
/// [`Tuning`]'s, which the search applies per candidate where Megatron accepts them (a tuned value kept for every
/// layout would reject the layouts Megatron refuses it for, e.g. EP overlap at EP 1: docs/tuned.md). A recompute
/// module list assumed from the same model's recipe is the base plan's. Also whether the search may choose the MoE
/// dispatcher: a plan (or its recipe) that names one keeps it.
pub fn read_for_search(value: &Value) -> Result<(Plan, Tuning), InputError> {
    let original = value;
    // A plan naming a Bridge recipe takes its batch and sequence from it (crate::recipes).
    let (resolved, _) = crate::recipes::resolve(value, &mut Vec::new())?;
    let value = resolved.as_ref();
    for (field, example) in [("global_batch_size", "1024"), ("seq_length", "4096")] {
        let present = value.get("training").and_then(|t| t.get(field)).is_some_and(|v| !v.is_null());
        if !present && value.is_object() {
            return Err(InputError::new(
                Code::SearchNeedsBatch,
                format!("the search needs `training.{field}`"),
                format!("add \"training\": {{\"{field}\": {example}, ...}} to the plan file"),
            ));
        }
    }
    let tuned = if value.is_object() && !crate::tuned::plain(original) && !crate::tuned::plain(value) {
        let (t, _, assumptions) = plan::parse_plan_excluding(value, &[])?;
        let from_recipe = || assumptions.iter().filter(|a| !crate::tuned::is_default_source(&a.source)).map(|a| a.key.as_str());
        let modules = from_recipe().any(|k| k == "recompute_modules").then(|| t.training.settings.recompute_modules.clone());
        Some((Tuned::new(t.training.settings, from_recipe()), modules))
    } else {
        None
    };
    let mut plain;
    let value = if value.is_object() {
        plain = value.clone();
        plain[crate::tuned::DEFAULTS_KEY] = Value::from(crate::tuned::PLAIN);
        &plain
    } else {
        value
    };
    let (mut p, _) = plan::parse_plan(value)?;
    let named = value.get("training").and_then(|t| t.get("moe_token_dispatcher_type")).is_some_and(|v| !v.is_null());
    let tuned = tuned.map(|(t, modules)| {
        if let Some(m) = modules {
            p.training.settings.recompute_modules = m;
        }
        t
    });
    Ok((p, Tuning { dispatcher_free: !named, tuned: tuned.filter(|t| t.keys != 0) }))
}

/// Searches layouts for the model, cluster and training of `base` (its parallelism is ignored). A space too large to
/// size within the search's budget gives an empty result ([`search_value`] says why).
pub fn search(base: &Plan, opts: &SearchOptions) -> SearchResult {
    let tuning = Tuning { dispatcher_free: true, tuned: None };
    search_counted(base, opts, &tuning, MAX_SEARCH_WORK).map(|(r, _)| r).unwrap_or_else(|_work| empty_result(base))
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
        notes: Vec::new(),
    }
}

/// The search with the units of work it cost ([`MAX_SEARCH_WORK`]'s units), or, when its layouts would cost more
/// than `allowance`, that partial cost (nothing sized). `tuning`: whether the search may switch the plan's default
/// allgather dispatcher to alltoall, and the tuned speed settings it applies per candidate ([`read_for_search`]). The cluster sizing (`crate::size`) runs one search per GPU
/// count through this, each within what its own budget has left.
pub fn search_counted(base: &Plan, opts: &SearchOptions, tuning: &Tuning, allowance: u64) -> Result<(SearchResult, u64), u64> {
    let mut result = empty_result(base);
    // `search_value` says why it does not search above this; a caller of this function gets an empty result.
    if base.world_size() == 0 || base.world_size() > MAX_SEARCH_WORLD {
        return Ok((result, 0));
    }
    let mut p = base.clone();
    // Every candidate starts from the tuned speed settings; `Tune::settle` withdraws those its layout cannot run.
    let tune = Tune { tuned: tuning.tuned.as_ref(), plain: &base.training.settings, dispatcher_free: tuning.dispatcher_free };
    if let Some(t) = tune.tuned {
        t.write_into(&mut p.training.settings);
    }
    let mut scratch = Scratch {
        codes: rules::Codes(Vec::with_capacity(64)),
        mem: memory::MemoryReport::default(),
        activations: memory::ActivationMemo::default(),
        kinds: base.model.kinds(),
        spare: None,
        withdrawn: 0,
        settled: Vec::with_capacity(16),
        out_of_memory: 0,
    };
    let mut recs: Vec<Rec> = Vec::with_capacity(4096);
    let mut mbs_list: Vec<u64> = opts.micro_batch_sizes.iter().copied().filter(|&m| m >= 1).collect();
    crate::sort::stable_by(&mut mbs_list, Ord::cmp);
    mbs_list.dedup();
    let variants = ORDER.len() as u64;
    // Buffers the loop rewrites in place: the hot loop allocates per pipeline shape at most, never per candidate.
    let mut splits: Splits = BTreeMap::new();
    let mut params: Vec<memory::StageParams> = Vec::new();
    let mut derived = Derived::default();
    // Refreshed for each layout shape before its first cell.
    let mut step = perf::StepLayout::of(base, &derived);
    let mut known_links = perf::KnownLinks::default();
    // The model's parameter counts, for every layout's derived sizes (the model is the base plan's throughout).
    let model_counts = base.model.param_counts_of(&scratch.kinds.totals);
    let (shapes, work) = shapes(&p, opts, &mut splits, tuning.dispatcher_free, allowance.min(MAX_SEARCH_WORK))?;
    // The layout text of the last `layout` shape and its (PP, VPP): the shapes of one pipeline split come in a row (every
    // TP, EP, ETP and SP of it), and the plan's layout is rewritten in place for each of their cells.
    let (mut text, mut text_of) = (String::new(), (0, 0));
    // The pipeline split `params` was last built for.
    let mut params_split = None;
    for sh in shapes {
        scratch.settled.clear();
        if sh.layout && text_of != (sh.pp, sh.vpp) {
            text = layout_text(&base.model, sh.pp, sh.vpp);
            text_of = (sh.pp, sh.vpp);
        }
        let split = split_of(&mut splits, &base.model, sh.pp, sh.vpp, sh.first, sh.last, sh.layout);
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
            apply(&mut p, &key, Some(&text));
            crate::derive::derive_counted(&p, Some(split), (scratch.kinds.totals, &model_counts), &mut derived);
            if mi == 0 {
                // The stages' parameters depend on the layout only: once for every micro-batch and variant; their
                // layers per kind on the split only.
                let of = (sh.pp, sh.vpp, sh.first, sh.last, sh.layout);
                memory::stage_params_search(&p, &derived, split, &scratch.kinds, &mut params, params_split == Some(of));
                params_split = Some(of);
                step.refresh(&p, &derived, &mut known_links);
            }
            let mut cell = Cell { params: &params, step: &step, derived: &derived, rules: None };
            scratch.activations.clear();
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
                tune.settle(&mut p, &mut key, &mut scratch);
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
            if oom[2] {
                tight_variants(&mut p, sh.key(mbs, ORDER[2]), !oom[0], (&mut cell, &tune), &mut scratch, &mut result, &mut recs);
            }
        }
    }
    if scratch.out_of_memory > 0 {
        *result.rejected_by.entry(Code::OutOfMemory.as_str().to_string()).or_insert(0) += scratch.out_of_memory;
    }
    result.pareto = pareto(&recs, base);
    rank_and_explain(&mut result, &recs, (&mut p, base, &tune), opts);
    Ok((result, work))
}

/// The best `opts.top` of the valid records `recs`, sized in full and explained, into `result.candidates` (`p`: the
/// search's scratch plan, `base` its base plan).
fn rank_and_explain(result: &mut SearchResult, recs: &[Rec], (p, base, tune): (&mut Plan, &Plan, &Tune), opts: &SearchOptions) {
    // `better` ends on the layout key, unique per record: a total order, so the unstable sort is deterministic.
    // References are sorted, not the records: a tenth of the bytes to move.
    let mut ranked: Vec<&Rec> = recs.iter().collect();
    ranked.sort_unstable_by(|a, b| better(a, b));
    // The best `top`, leaving out layouts that differ from a better pick only in which edge stage is lighter; one
    // more when only one is asked for, so the best pick is still explained against its runner-up.
    let top = opts.top.min(MAX_SEARCH_TOP);
    if opts.top > MAX_SEARCH_TOP {
        result.notes.push(format!(
            "top {} was asked; the search returns at most {MAX_SEARCH_TOP} candidates (each is re-planned and explained), the best {MAX_SEARCH_TOP} are listed",
            opts.top
        ));
    }
    let want = top.max(2);
    let mut picked: Vec<Rec> = Vec::with_capacity(want.min(recs.len()));
    // The picks' keys without their edge stages: one lookup per ranked record, not a scan of the picks.
    let mut seen = std::collections::BTreeSet::new();
    for &rec in &ranked {
        if picked.len() >= want {
            break;
        }
        if seen.insert(Key { first: None, last: None, ..rec.key }) {
            picked.push(*rec);
        }
    }
    let sized: Vec<Sized> = picked.iter().map(|rec| sized(p, rec, base, tune)).collect();
    for rank in 0..picked.len().min(top) {
        let (rec, this) = (&picked[rank], &sized[rank]);
        let other = if rank == 0 { 1 } else { 0 };
        let versus = picked.get(other).map(|o| versus(rec, this, o, &sized[other], other + 1));
        let mut why: Vec<String> = versus.as_ref().map(|v| versus_line(v, rec, &picked[other])).into_iter().collect();
        why.extend(explain(&this.plan, rec, &this.derived, &this.perf));
        result.candidates.push(Candidate {
            parallelism: parallelism_of(&rec.key, &this.plan),
            training: training_run(&rec.key, &this.plan, tune.tuned),
            step_time_s: rec.step_time_s,
            tokens_per_s_per_gpu: rec.tokens_per_s_per_gpu,
            model_tflops_per_gpu: rec.model_tflops_per_gpu,
            mfu: rec.mfu,
            peak_bytes: rec.peak_bytes,
            pipeline_bubble_fraction: this.derived.pipeline_bubble_fraction,
            low_memory_headroom: rec.tight,
            why,
            versus,
            breakdown: this.perf.breakdown.clone(),
            tied_with_best: false,
            plan: Some(this.plan.clone()),
        });
    }
    mark_ties(&mut result.candidates);
    if picked.len() == 1 {
        if let Some(c) = result.candidates.first_mut() {
            c.why.push("the only layout that fits".into());
        }
    }
}

/// Marks the picks predicted within the model's own error of #1 as tied with it, and says in each what would separate
/// them: the step-time terms by which it differs from #1 (its `versus`, or #2's for #1), to be measured on the first
/// iterations of both.
fn mark_ties(candidates: &mut [Candidate]) {
    let Some(best) = candidates.first().map(|c| c.step_time_s) else { return };
    let band = perf::tie_band();
    let tied = |c: &Candidate| c.step_time_s <= best * (1.0 + band);
    let n = candidates.iter().skip(1).filter(|c| tied(c)).count();
    for (i, c) in candidates.iter_mut().enumerate() {
        if (i == 0 && n == 0) || !tied(c) {
            continue;
        }
        c.tied_with_best = true;
        let gap = 100.0 * (c.step_time_s / best.max(f64::MIN_POSITIVE) - 1.0);
        let head = if i == 0 {
            format!("tied: {n} other layout{} predicted within {:.1}% of this one", if n == 1 { "" } else { "s" }, 100.0 * band)
        } else {
            format!("tied with #1: {gap:.1}% slower, inside the step-time model's {:.1}% median error on how two runs compare", 100.0 * band)
        };
        let terms: Vec<String> = c.versus.iter().flat_map(|v| v.terms.iter().take(3)).map(|t| t.term.clone()).collect();
        let separate = if terms.is_empty() {
            "nothing in the model separates them: profile both".to_string()
        } else {
            format!("what would separate them: {}, measured on the first iterations of both", terms.join(", "))
        };
        // After the comparison sentence, which leads `why`.
        let at = usize::from(c.versus.is_some()).min(c.why.len());
        c.why.insert(at, format!("{head}; {separate}"));
    }
}

/// The optimizer offload of `k` into `p`: [`OFFLOAD_FRACTIONS`] for an offload code, else the base plan's own.
fn set_offload(p: &mut Plan, k: &Key, base: &Plan) {
    let st = &mut p.training.settings;
    match usize::from(k.offload).checked_sub(1).and_then(|i| OFFLOAD_FRACTIONS.get(i)) {
        Some(&f) => (st.optimizer_cpu_offload, st.optimizer_offload_fraction) = (true, Some(f)),
        None => (st.optimizer_cpu_offload, st.optimizer_offload_fraction) =
            (base.training.settings.optimizer_cpu_offload, base.training.settings.optimizer_offload_fraction),
    }
}

/// When a cell does not fit without recompute (`none` = its no-recompute key): the optimizer offloaded to the CPU
/// (each of [`OFFLOAD_FRACTIONS`], largest first: when it does not fit, a smaller share will not; no recompute), then,
/// when full recompute fits (`subsets`: a module list frees less than full recompute), selective recompute of each
/// [`MODULE_SUBSETS`] list the model has; all with the distributed optimizer, each checked by the rules afresh. The
/// plan is left as it was found.
fn tight_variants(p: &mut Plan, none: Key, subsets: bool, (cell, tune): (&mut Cell, &Tune), s: &mut Scratch, result: &mut SearchResult, recs: &mut Vec<Rec>) {
    let st = &p.training.settings;
    let saved = (st.optimizer_cpu_offload, st.optimizer_offload_fraction, st.recompute_granularity, st.recompute_method, st.recompute_num_layers);
    let keep = |outcome: Outcome, recs: &mut Vec<Rec>| {
        if let Outcome::Valid(rec) = outcome {
            recs.push(rec);
        }
    };
    if !st.optimizer_cpu_offload {
        for (i, &f) in OFFLOAD_FRACTIONS.iter().enumerate().rev() {
            let mut key = Key { offload: i as u8 + 1, ..none };
            apply_training(p, &key);
            (p.training.settings.optimizer_cpu_offload, p.training.settings.optimizer_offload_fraction) = (true, Some(f));
            tune.settle(p, &mut key, s);
            let outcome = evaluate_with(p, &key, cell, s, result, true, true);
            let out_of_memory = matches!(outcome, Outcome::Rejected { out_of_memory: true });
            keep(outcome, recs);
            if out_of_memory {
                break;
            }
        }
        (p.training.settings.optimizer_cpu_offload, p.training.settings.optimizer_offload_fraction) = (saved.0, saved.1);
    }
    if !subsets {
        return;
    }
    let moe = p.model.is_moe();
    let dense_layers = cell.derived.kinds(&p.model).run_where(|k| k.ffn == crate::model::Ffn::Dense) > 0;
    std::mem::swap(&mut p.training.settings.recompute_modules, &mut s.spare);
    for (i, subset) in MODULE_SUBSETS.iter().enumerate() {
        let has_moe_act = subset.contains(&RecomputeModule::MoeAct);
        let has_mlp = subset.contains(&RecomputeModule::Mlp);
        if (has_moe_act && !moe) || (has_mlp && moe && !dense_layers) {
            continue;
        }
        let mut key = Key { recompute: i as u8 + 3, ..none };
        apply_training(p, &key);
        let list = p.training.settings.recompute_modules.get_or_insert_with(Vec::new);
        list.clear();
        list.extend_from_slice(subset);
        tune.settle(p, &mut key, s);
        keep(evaluate_with(p, &key, cell, s, result, true, true), recs);
    }
    std::mem::swap(&mut p.training.settings.recompute_modules, &mut s.spare);
    let st = &mut p.training.settings;
    (st.recompute_granularity, st.recompute_method, st.recompute_num_layers) = (saved.2, saved.3, saved.4);
}

/// A pick sized in full: its plan, derived sizes, performance, and which of its groups cross NVLink domains.
struct Sized {
    plan: Plan,
    derived: Derived,
    perf: Performance,
    across: Across,
}

/// Which parallel groups of a layout cross NVLink domains.
#[derive(Clone, Copy, Default)]
struct Across {
    tp: bool,
    cp: bool,
    ep: bool,
    dp: bool,
    pp: bool,
}

fn sized(p: &mut Plan, rec: &Rec, base: &Plan, tune: &Tune) -> Sized {
    let text = if rec.key.layout { layout_text(&p.model, rec.key.pp, rec.key.vpp) } else { String::new() };
    apply(p, &rec.key, Some(&text));
    let st = &mut p.training.settings;
    st.recompute_modules = subset_of(rec.key.recompute).map_or_else(|| base.training.settings.recompute_modules.clone(), |m| Some(m.to_vec()));
    set_offload(p, &rec.key, base);
    tune.restore(p, &rec.key);
    let split = report::split_of(p);
    let derived = report::derive(p, split.as_ref().ok());
    let perf = perf::estimate(p, &derived);
    let par = &p.parallelism;
    let sizes = MeshSizes { tp: par.tp(), pp: par.pp(), cp: par.cp(), ep: par.ep(), etp: par.etp() };
    let dom = p.cluster.nvlink_domain_size;
    let across = match Meshes::resolve(derived.world_size, &sizes, &par.order) {
        Ok(m) => {
            let x = |kind: GroupKind| m.crossing(kind, dom).groups_crossing > 0;
            Across { tp: x(GroupKind::Tp), cp: x(GroupKind::Cp), ep: x(GroupKind::Ep), dp: x(GroupKind::Dp), pp: x(GroupKind::Pp) }
        }
        Err(_) => Across::default(),
    };
    Sized { plan: p.clone(), derived, perf, across }
}

/// Layer splits by pipeline shape (PP, VPP, first-stage layers, last-stage layers), computed once each.
type Splits = BTreeMap<(u64, u64, Option<u64>, Option<u64>, bool), Result<StageSplit, pipeline::SplitError>>;

/// Recompute / distributed-optimizer variants, least memory first (0 none, 1 selective, 2 full).
const ORDER: [(u8, bool); 6] = [(2, true), (1, true), (0, true), (2, false), (1, false), (0, false)];

/// The Pareto front of sorted records: ascending peak memory, each point faster than every point below it.
fn pareto(recs: &[Rec], p: &Plan) -> Vec<ParetoPoint> {
    let mut by_mem: Vec<&Rec> = recs.iter().collect();
    by_mem.sort_unstable_by(|a, b| a.peak_bytes.cmp(&b.peak_bytes).then(better(a, b)));
    let mut out = Vec::new();
    let mut best = f64::NEG_INFINITY;
    for r in by_mem {
        if r.tokens_per_s_per_gpu > best {
            best = r.tokens_per_s_per_gpu;
            out.push(ParetoPoint {
                parallelism: parallelism_of(&r.key, p),
                training: training_of(&r.key),
                peak_bytes: r.peak_bytes,
                tokens_per_s_per_gpu: r.tokens_per_s_per_gpu,
                step_time_s: r.step_time_s,
            });
        }
    }
    out
}

pub(crate) fn gib(b: u64) -> f64 {
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
    if k.layout {
        s += " (even layout)";
    }
    if k.a2a {
        s += " alltoall dispatcher";
    }
    let withdrawn: Vec<&str> = speed::keys_of(k.speed & !speed::DISPATCHER).collect();
    if !withdrawn.is_empty() {
        s += &format!(" without tuned {}", withdrawn.join(", "));
    }
    s += &format!(
        " mbs {} {} recompute{}",
        k.mbs,
        recompute_name(k.recompute),
        if k.distopt { "" } else { " without distributed optimizer" }
    );
    if let Some(f) = usize::from(k.offload).checked_sub(1).and_then(|i| OFFLOAD_FRACTIONS.get(i)) {
        s += &format!(" optimizer {:.0}% on CPU", 100.0 * f);
    }
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
        d.push(format!("recompute {} vs {}", recompute_name(a.recompute), recompute_name(b.recompute)));
    }
    if a.offload != b.offload {
        d.push(format!("optimizer offload {} vs {}", offload_name(a.offload), offload_name(b.offload)));
    }
    if a.sp != b.sp {
        d.push(format!("SP {} vs {}", a.sp, b.sp));
    }
    if a.distopt != b.distopt {
        d.push(format!("distributed optimizer {} vs {}", a.distopt, b.distopt));
    }
    if (a.first, a.last, a.layout) != (b.first, b.last, b.layout) {
        d.push("layer split differs".into());
    }
    if a.dispatcher != b.dispatcher {
        d.push(format!("dispatcher {} vs {}", dispatcher_of(a.dispatcher).key(), dispatcher_of(b.dispatcher).key()));
    }
    let (wa, wb) = (a.speed & !speed::DISPATCHER, b.speed & !speed::DISPATCHER);
    for key in speed::keys_of((wa ^ wb) & !(wa & wb)) {
        let tuned = |w: u16| if speed::keys_of(w).any(|k| k == key) { "Megatron-Core default (the tuned value is not valid here)" } else { "tuned" };
        d.push(format!("{key} {} vs {}", tuned(wa), tuned(wb)));
    }
    d
}

fn explain(p: &Plan, rec: &Rec, d: &Derived, perf: &Performance) -> Vec<String> {
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
    if let Some(m) = subset_of(rec.key.recompute) {
        let names: Vec<&str> = m.iter().map(|x| x.key()).collect();
        why.push(format!(
            "recompute_modules [{}]: without recompute this layout does not fit; recomputing only these modules frees their activations for a third of their forward again",
            names.join(", ")
        ));
    }
    if rec.key.offload > 0 {
        why.push(format!(
            "optimizer_cpu_offload with optimizer_offload_fraction {}: without recompute this layout does not fit; the offloaded optimizer state steps in host memory instead of recomputing activations",
            training_of(&rec.key).optimizer_offload_fraction.unwrap_or(1.0)
        ));
    }
    let withdrawn: Vec<&str> = speed::keys_of(rec.key.speed).collect();
    if !withdrawn.is_empty() {
        why.push(format!(
            "speed settings: {} at Megatron-Core's default here — the perf recipe's value is one Megatron rejects or turns off for this layout (the rules' own checks), the rest as the recipe sets them",
            withdrawn.join(", ")
        ));
    }
    if rec.key.a2a {
        why.push(format!(
            "dispatcher: alltoall for EP {} (the plan leaves Megatron-Core's default allgather, which gathers every EP rank's tokens; Megatron's MoE guide recommends alltoall with expert parallelism)",
            par.ep()
        ));
    }
    if let Some(pipeline_layout::LayoutSpec::Text(t)) = &par.pipeline_model_parallel_layout {
        why.push(format!("pipeline layout {t}: {} layers do not split into {}·{} equal chunks, so they are dealt as evenly as Megatron's layout allows", p.model.num_layers, par.pp(), par.vpp()));
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
    why
}

/// `this` against `other` (ranked `other_rank`), term by term: every breakdown term whose seconds differ by more than
/// 0.1% of the step, largest difference first, each with what differs between the two layouts that moves it.
fn versus(rec: &Rec, this: &Sized, other: &Rec, that: &Sized, other_rank: usize) -> Versus {
    let (ta, tb) = (this.perf.breakdown.terms(), that.perf.breakdown.terms());
    let floor = 1e-3 * rec.step_time_s.max(other.step_time_s);
    let mut terms: Vec<TermDelta> = ta
        .iter()
        .zip(tb.iter())
        .filter(|(a, b)| a.0 == b.0 && (a.1 - b.1).abs() > floor)
        .map(|(a, b)| TermDelta { term: a.0.to_string(), delta_s: a.1 - b.1, cause: cause(a.0, rec, this, other, that) })
        .collect();
    crate::sort::stable_by(&mut terms, |x, y| y.delta_s.abs().total_cmp(&x.delta_s.abs()).then(x.term.cmp(&y.term)));
    Versus { rank: other_rank, step_time_delta_s: rec.step_time_s - other.step_time_s, terms }
}

/// The comparison as a sentence: "ranked above the runner-up #2 (…) by 0.80 s (3.1%): 0.50 s less EP comm (EP 8 vs
/// 16, inside vs across NVLink), …; though 0.10 s more TP comm (TP 2 vs 1)".
fn versus_line(v: &Versus, rec: &Rec, other: &Rec) -> String {
    let gap = -v.step_time_delta_s;
    let pct = 100.0 * gap.abs() / other.step_time_s.max(f64::MIN_POSITIVE);
    let head = if v.rank == 2 {
        format!("ranked above the runner-up #2 ({})", describe(&other.key))
    } else {
        format!("ranked below #1 ({})", describe(&other.key))
    };
    let s = |x: f64| if x.abs() >= 0.995 { format!("{x:.2} s") } else { format!("{:.0} ms", 1e3 * x) };
    let part = |t: &TermDelta| format!("{} {} {} ({})", s(t.delta_s.abs()), if t.delta_s < 0.0 { "less" } else { "more" }, t.term, t.cause);
    // The terms that make the difference, then those that pull the other way.
    let winning = |t: &&TermDelta| (t.delta_s < 0.0) == (gap >= 0.0);
    let pro: Vec<String> = v.terms.iter().filter(winning).take(4).map(part).collect();
    let con: Vec<String> = v.terms.iter().filter(|t| !winning(t)).take(2).map(part).collect();
    let mut line = if gap.abs() <= 1e-9 * other.step_time_s.max(1.0) {
        format!("{head}: as fast (step {}), and ", s(rec.step_time_s))
    } else {
        format!("{head}: {} {} ({pct:.1}%)", if gap > 0.0 { "faster by" } else { "slower by" }, s(gap.abs()))
    };
    if rec.tight != other.tight {
        line += if rec.tight { "; ranked lower because under 10% of memory stays free" } else { "; ranked higher because it leaves over 10% of memory free" };
    } else if gap.abs() <= 1e-9 * other.step_time_s.max(1.0) {
        line += &format!("{:.1} GiB {} peak memory", gib(rec.peak_bytes.abs_diff(other.peak_bytes)), if rec.peak_bytes <= other.peak_bytes { "less" } else { "more" });
    }
    if !pro.is_empty() {
        line += &format!(": {}", pro.join(", "));
    }
    if !con.is_empty() {
        line += &format!("; though {}", con.join(", "));
    }
    if v.terms.is_empty() && !differences(&rec.key, &other.key).is_empty() {
        line += &format!(" ({})", differences(&rec.key, &other.key).join(", "));
    }
    line
}

/// What differs between two layouts that moves the breakdown term `term` (matched by its key's start: compute,
/// recompute, TP, CP, EP, PP, DP, bubble, optimizer, launch, and the memory-bound MoE routing / element-wise /
/// quantize terms; any other term gets every difference).
fn cause(term: &str, a: &Rec, sa: &Sized, b: &Rec, sb: &Sized) -> String {
    let (ka, kb) = (&a.key, &b.key);
    let (da, db) = (&sa.derived, &sb.derived);
    let mut parts: Vec<String> = Vec::new();
    let t = term.to_ascii_lowercase();
    let link = |x: bool, y: bool| if x == y { None } else { Some(format!("{} vs {} NVLink", inside(x), inside(y))) };
    let mut extra: Option<String> = None;
    if t.starts_with("recompute") {
        if ka.recompute != kb.recompute {
            parts.push(format!("{} vs {} recompute", recompute_name(ka.recompute), recompute_name(kb.recompute)));
        }
    } else if t.starts_with("compute") {
        num(&mut parts, "TP", ka.tp, kb.tp);
        num(&mut parts, "ETP", ka.etp, kb.etp);
        num(&mut parts, "micro-batch", ka.mbs, kb.mbs);
    } else if t.starts_with("tp") {
        num(&mut parts, "TP", ka.tp, kb.tp);
        if ka.sp != kb.sp {
            parts.push(format!("SP {} vs {}", on_off(ka.sp), on_off(kb.sp)));
        }
        extra = link(sa.across.tp, sb.across.tp);
    } else if t.starts_with("cp") {
        num(&mut parts, "CP", ka.cp, kb.cp);
        extra = link(sa.across.cp, sb.across.cp);
    } else if t.starts_with("ep") {
        num(&mut parts, "EP", ka.ep, kb.ep);
        num(&mut parts, "ETP", ka.etp, kb.etp);
        if ka.dispatcher != kb.dispatcher {
            parts.push(format!("{} vs {} dispatcher", dispatcher_of(ka.dispatcher).key(), dispatcher_of(kb.dispatcher).key()));
        }
        extra = link(sa.across.ep, sb.across.ep);
    } else if t.starts_with("pp") {
        num(&mut parts, "PP", ka.pp, kb.pp);
        num(&mut parts, "VPP", ka.vpp, kb.vpp);
        num(&mut parts, "microbatches", da.num_microbatches, db.num_microbatches);
        extra = link(sa.across.pp, sb.across.pp);
    } else if t.starts_with("dp") {
        num(&mut parts, "DP", da.data_parallel_size, db.data_parallel_size);
        if ka.distopt != kb.distopt {
            parts.push(format!("distributed optimizer {} vs {}", on_off(ka.distopt), on_off(kb.distopt)));
        }
        extra = link(sa.across.dp, sb.across.dp);
    } else if t.starts_with("bubble") {
        if da.pipeline_bubble_fraction != db.pipeline_bubble_fraction {
            parts.push(format!(
                "(PP−1)/(VPP·m) = {}/({}·{}) vs {}/({}·{})",
                ka.pp.saturating_sub(1),
                ka.vpp,
                da.num_microbatches,
                kb.pp.saturating_sub(1),
                kb.vpp,
                db.num_microbatches
            ));
        } else {
            parts.push(format!("the same {:.1}% of a longer or shorter pipelined step", 100.0 * da.pipeline_bubble_fraction));
        }
    } else if t.starts_with("optimizer") {
        if ka.offload != kb.offload {
            parts.push(format!("optimizer offload {} vs {}", offload_name(ka.offload), offload_name(kb.offload)));
        }
        if ka.distopt != kb.distopt {
            parts.push(format!("distributed optimizer {} vs {}", on_off(ka.distopt), on_off(kb.distopt)));
        }
        num(&mut parts, "DP", da.data_parallel_size, db.data_parallel_size);
        num(&mut parts, "TP", ka.tp, kb.tp);
        num(&mut parts, "PP", ka.pp, kb.pp);
    } else if t.starts_with("launch") {
        // Kernel launches per block per microbatch on each stage.
        num(&mut parts, "PP", ka.pp, kb.pp);
        num(&mut parts, "microbatches", da.num_microbatches, db.num_microbatches);
    } else if t.starts_with("moe") || t.starts_with("memory") || t.starts_with("quantize") {
        // Memory-bound work per local token of the stage's layers: tokens split over CP (and TP), layers over PP.
        num(&mut parts, "TP", ka.tp, kb.tp);
        num(&mut parts, "CP", ka.cp, kb.cp);
        num(&mut parts, "PP", ka.pp, kb.pp);
        num(&mut parts, "DP", da.data_parallel_size, db.data_parallel_size);
        if ka.sp != kb.sp {
            parts.push(format!("SP {} vs {}", on_off(ka.sp), on_off(kb.sp)));
        }
        if ka.recompute != kb.recompute {
            parts.push(format!("{} vs {} recompute", recompute_name(ka.recompute), recompute_name(kb.recompute)));
        }
    } else {
        parts = differences(ka, kb);
    }
    parts.extend(extra);
    if parts.is_empty() {
        // The term moved only with the rest of the layout (e.g. more microbatches of the same size).
        parts = differences(ka, kb);
    }
    parts.join(", ")
}

/// "label x vs y" when x and y differ.
fn num(parts: &mut Vec<String>, label: &str, x: u64, y: u64) {
    if x != y {
        parts.push(format!("{label} {x} vs {y}"));
    }
}

fn inside(across: bool) -> &'static str {
    if across { "across" } else { "inside" }
}

fn on_off(b: bool) -> &'static str {
    if b { "on" } else { "off" }
}

fn recompute_name(code: u8) -> &'static str {
    match code {
        0 => "no",
        1 => "selective",
        2 => "full",
        3 => "selective [mlp]",
        4 => "selective [layernorm]",
        5 => "selective [moe_act]",
        _ => "selective [layernorm, moe_act]",
    }
}

fn offload_name(code: u8) -> &'static str {
    match code {
        0 => "none",
        1 => "50% on CPU",
        _ => "100% on CPU",
    }
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
    crate::sort::stable_by(&mut parts, |a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    let pct = |x: f64| 100.0 * x / step;
    let mut line = format!("step {:.2} s: compute {:.0}%", step, pct(b.compute_s));
    for (name, t) in parts.iter().filter(|p| p.1 > 0.0).take(3) {
        line += &format!(", {name} {:.1}%", pct(*t));
    }
    Some(line)
}
