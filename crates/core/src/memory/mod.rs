//! Memory per GPU for every pipeline stage, term by term, as Megatron-Core, Megatron Bridge and Transformer Engine
//! allocate it under the plan's settings: model state (`state`, with the element sizes `run` resolves), saved
//! activations and their working sets (`activations`, `moe`), what lives outside the allocator (`overhead`) and on
//! the host. Each stage's peak is the larger of its forward/backward peak and its optimizer-step peak; the report
//! gives the allocator's peak (Megatron's "max allocated") and the device peak (plus fragmentation, the CUDA context
//! and communication buffers), each term labelled.
//!
//! Two phases share work with the layout search: what the layout alone fixes ([`stage_params`]), then what
//! micro-batch, recompute and optimizer add ([`estimate_into`], into a reused report, allocating nothing once the
//! report's buffers have grown).

mod activations;
mod dsa;
#[cfg(test)]
mod memo_tests;
mod moe;
mod overhead;
mod params;
mod peft;
mod run;
mod shape;
mod state;
mod tensors;
mod vision;

pub use activations::LayerActivations;
pub use overhead::{CUDA_CONTEXT_BYTES, FRAGMENTATION, NCCL_BYTES_PER_GROUP};
pub use params::{StageParams, stage_params, stage_params_into, stage_params_search};
pub use tensors::{Lever, Tensor, TensorKind, tensors};

use crate::derive::Derived;
use crate::limits::MAX_KEPT_LAYERS;
use crate::model::{KindCounts, LayerKinds, MAX_LAYER_KINDS};
use crate::pipeline::{self, StageSplit};
use crate::plan::{Plan, Recompute, RecomputeMethod};
use shape::Shape;
use run::{OffloadPath, Run, WeightStore};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StageMemory {
    pub pipeline_rank: u64,
    pub num_layers: u64,
    /// Weights as stored, with Transformer Engine's cached quantized copies.
    pub parameters_bytes: u64,
    /// The main-gradient buffer (sharded under Megatron-FSDP optim_grads / optim_grads_params).
    pub gradients_bytes: u64,
    /// Master weights and optimizer moments left on the GPU.
    pub optimizer_bytes: u64,
    /// Saved activations of the microbatches in flight (after recompute and offloading).
    pub activations_bytes: u64,
    /// The rest of the device peak: `total_bytes` − the four above (working sets of the bounding phase, step
    /// transients beyond the activations they outlive, and `overhead`'s parts outside the allocator).
    pub overhead_bytes: u64,
    /// The device peak: the allocator's peak, its fragmentation, the CUDA context and communication buffers.
    pub total_bytes: u64,
    /// Parameters held by one GPU of this stage: dense part (sharded over TP) and routed experts (over EP·ETP).
    pub dense_parameters: u64,
    pub expert_parameters: u64,
    /// Activations one microbatch leaves saved for the backward pass on this stage.
    pub activations_per_microbatch_bytes: u64,
    /// Microbatches whose activations the stage holds at its peak (whole-stage units; fractional when interleaved).
    pub microbatches_in_flight: f64,
    /// The part of `activations_per_microbatch_bytes` only the last model chunk saves (final norm, logits,
    /// cross-entropy, MTP), held for one microbatch at a time rather than `microbatches_in_flight`:
    /// `activations_bytes` = (per microbatch − this) · in flight + this · the last chunk's microbatches in flight.
    #[serde(default)]
    pub output_activations_bytes: u64,
    /// The labelled parts of `overhead_bytes` outside the allocator, and the recompute working set.
    pub overhead: Overhead,
    /// The allocator's peak: what Megatron-LM prints as "max allocated" (in MiB) and Megatron Bridge as
    /// mem-max-allocated-gigabytes (GB = 1e9 B).
    #[serde(default)]
    pub allocated_bytes: u64,
    /// The allocator's reserved peak: allocated + fragmentation.
    #[serde(default)]
    pub reserved_bytes: u64,
    /// Allocated bytes at the forward/backward peak and at the optimizer step.
    #[serde(default)]
    pub forward_backward_bytes: u64,
    #[serde(default)]
    pub optimizer_step_bytes: u64,
    /// The phase whose peak is the stage's peak.
    #[serde(default)]
    pub bound_by: Phase,
    /// Host memory one GPU of this stage uses (optimizer and activation offloading).
    #[serde(default)]
    pub host_bytes: u64,
    /// Host memory a node of this stage's GPUs uses: `host_bytes` × `cluster.gpus_per_node` (a node's GPUs hold one
    /// stage each the same way; the report's `host_bytes_per_node` is the largest stage's).
    #[serde(default)]
    pub host_bytes_per_node: u64,
    /// Every term of this stage, labelled: device terms add up to `total_bytes` in the bounding phase.
    #[serde(default)]
    pub terms: Vec<MemoryTerm>,
}

/// Memory that is neither model state nor saved activations, with the defaults stated.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Overhead {
    /// CUDA context, cuBLAS / cuDNN / Transformer Engine workspaces: a fixed 1 GiB (outside the allocator).
    pub cuda_context_bytes: u64,
    /// Communication-library buffers outside the allocator: 128 MiB of NCCL buffers for each group kind of size > 1
    /// the rank belongs to, plus DeepEP / HybridEP buffers with the flex dispatcher.
    pub nccl_bytes: u64,
    /// PyTorch caching-allocator fragmentation, reserved − allocated: [`FRAGMENTATION`] of the allocated peak.
    pub allocator_bytes: u64,
    /// The recompute working set: what recompute re-creates for one layer (selective) or one recomputed group of
    /// layers (full) during backward. Allocated.
    pub recompute_transient_bytes: u64,
}

/// When a term is held.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// For the whole step (model state, CUDA graph buffers, everything outside the allocator).
    Persistent,
    /// During forward and backward only (activations and their working sets).
    #[default]
    ForwardBackward,
    /// During the optimizer step only.
    OptimizerStep,
}

impl Phase {
    pub fn label(self) -> &'static str {
        match self {
            Phase::Persistent => "persistent",
            Phase::ForwardBackward => "forward/backward",
            Phase::OptimizerStep => "optimizer step",
        }
    }
}

/// Where a term lives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Location {
    #[default]
    Device,
    Host,
}

/// Which term it is: a stable key (snake_case in JSON).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TermKey {
    #[default]
    Weights,
    WeightCache,
    QuantizedWeightCopies,
    Gradients,
    MasterWeights,
    OptimizerMoments,
    Fp32GradCopies,
    Activations,
    RecomputeWorkingSet,
    MoeDispatchWorkingSet,
    CudaGraphBuffers,
    DeferredWgradBuffers,
    FsdpUnshardedBuffers,
    CudaContext,
    NcclBuffers,
    MoeCommBuffers,
    AllocatorFragmentation,
    HostOptimizerState,
    HostActivations,
    VisionEncoderWeights,
    VisionEncoderActivations,
    DsaIndexerActivations,
    AttentionScoresWorkingSet,
}

/// One labelled term of a stage's memory.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryTerm {
    pub key: TermKey,
    /// What it is and, where the tools differ, whose behaviour it follows.
    pub label: Cow<'static, str>,
    pub bytes: u64,
    pub location: Location,
    pub phase: Phase,
    /// Whether PyTorch's caching allocator hands it out (counted in "max allocated").
    pub allocated: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryReport {
    pub stages: Vec<StageMemory>,
    /// The largest stage device peak (`total_bytes`).
    pub peak_bytes: u64,
    pub gpu_memory_bytes: u64,
    pub fits: bool,
    /// The largest stage allocator peak (`allocated_bytes`): compare with Megatron's max allocated.
    #[serde(default)]
    pub allocated_peak_bytes: u64,
    /// Host memory of the busiest node: the largest stage's host bytes per GPU × GPUs per node (a node whose GPUs all
    /// sit in that stage, as Megatron's default order places a node inside one stage when TP·CP·DP ≥ GPUs per node).
    #[serde(default)]
    pub host_bytes_per_node: u64,
    /// The cluster's host memory per node (`cluster.host_memory_per_node_gb`, GiB), if known.
    #[serde(default)]
    pub host_memory_per_node_bytes: Option<u64>,
    /// Whether `host_bytes_per_node` fits it; null when the host memory is unknown.
    #[serde(default)]
    pub host_fits: Option<bool>,
}

/// Estimates memory for every stage.
pub fn estimate(p: &Plan, d: &Derived, split: &StageSplit) -> MemoryReport {
    let mut report = MemoryReport::default();
    let kinds = p.model.kinds();
    estimate_into(p, d, &kinds, &stage_params(p, d, split, &kinds), &mut report);
    report
}

/// Saved activations of one layer of `kind` for one microbatch under the plan's settings (what the stages sum).
pub fn layer_activations(p: &Plan, kind: crate::model::LayerKind) -> LayerActivations {
    let run = Run::of(p);
    activations::layer(&p.model, p, &run, &Shape::of(p), &activations::Choices::of(p), kind, run.low())
}

/// Per-layer activations of each kind of the model's table (in table order) and precision, for the whole plan.
#[derive(Clone, Copy, PartialEq)]
struct Layers {
    kinds: [LayerActivations; MAX_LAYER_KINDS],
    /// The same in BF16, for layers kept in BF16 under FP8/FP4.
    bf16: [LayerActivations; MAX_LAYER_KINDS],
    /// CUDA-graph static buffers per layer of each kind and microbatch in flight.
    graphs: [f64; MAX_LAYER_KINDS],
    n: usize,
}

impl Layers {
    fn of(p: &Plan, run: &Run, sh: &Shape, kinds: &LayerKinds) -> Layers {
        let m = &p.model;
        let c = activations::Choices::of(p);
        let table = kinds.totals.table.kinds();
        let mut l = Layers {
            kinds: [LayerActivations::default(); MAX_LAYER_KINDS],
            bf16: [LayerActivations::default(); MAX_LAYER_KINDS],
            graphs: [0.0; MAX_LAYER_KINDS],
            n: table.len().min(MAX_LAYER_KINDS),
        };
        // BF16 variants only for layers first_last_layers_bf16 keeps in BF16 under FP8/FP4.
        let bf16_variants = run.low() && run.bf16_first + run.bf16_last > 0;
        for (i, &kind) in table.iter().enumerate().take(l.n) {
            l.kinds[i] = activations::layer(m, p, run, sh, &c, kind, run.low());
            l.bf16[i] = if bf16_variants { activations::layer(m, p, run, sh, &c, kind, false) } else { l.kinds[i] };
            l.graphs[i] = activations::graph_buffers(p, run, sh, kind);
        }
        l
    }

    fn active(&self) -> &[LayerActivations] {
        &self.kinds[..self.n]
    }

    /// Σ over kinds of `counts` × `per(layer)`, summed in table order.
    fn weigh(&self, counts: &KindCounts, per: impl Fn(&LayerActivations) -> f64) -> f64 {
        self.active().iter().zip(counts.0).fold(0.0, |s, (a, n)| s + n as f64 * per(a))
    }
}

/// Saved activations of one stage per microbatch (layers only), its recompute working set, and what it offloads per
/// microbatch (with one layer's worth that stays on the GPU); the stage's layers are `st.chunks` (of each kind).
fn stage_activations(p: &Plan, w: &PlanWide, st: &StageParams) -> StageActivations {
    let l = &w.layers;
    let t = &p.training.settings;
    let mut saved = 0.0;
    let mut transient: f64 = 0.0;
    let mut offloaded = 0.0;
    let largest = w.largest_full + w.largest_working_set;
    let full = t.recompute_granularity == Recompute::Full;
    for c in &st.chunks {
        if !full {
            saved += l.weigh(c, |a| a.full);
            // Σ n·0 is +0 to the bit: skipped when no kind of layer offloads.
            if w.offloads {
                offloaded += l.weigh(c, |a| a.offloaded);
            }
            continue;
        }
        let layers = c.total();
        let all = l.weigh(c, |a| a.full);
        if layers == 0 {
            saved += all;
            offloaded += l.weigh(c, |a| a.offloaded);
            continue;
        }
        let per_layer_full = all / layers as f64;
        let per_layer_ckpt = l.weigh(c, |a| a.checkpointed) / layers as f64;
        let n = t.recompute_num_layers.unwrap_or(1).min(layers);
        match t.recompute_method {
            // Block: the first n layers of each chunk keep only their input; the rest keep everything, all of them
            // when n = 0 (megatron/core/recompute.py checkpointed_forward, recompute_method == "block": layer_idx < n).
            Some(RecomputeMethod::Block) => {
                saved += n as f64 * per_layer_ckpt + (layers - n) as f64 * per_layer_full;
                if n > 0 {
                    transient = transient.max(largest);
                }
            }
            // Uniform: groups of n layers keep one input each, the last group clipped to the chunk (min()); backward
            // re-runs one group at a time. n = 0 never advances (an error rule); counted as 1.
            _ => {
                let n = n.max(1);
                saved += layers.div_ceil(n) as f64 * per_layer_ckpt;
                transient = transient.max(n as f64 * largest);
            }
        }
    }
    if !full {
        // Layers kept in BF16 under FP8/FP4 save their GEMM inputs at 2 B.
        saved += l.active().iter().zip(&l.bf16).zip(st.bf16_layers.0).fold(0.0, |s, ((a, b), n)| s + n as f64 * (b.full - a.full));
        for (a, n) in l.active().iter().zip(st.counts.0) {
            if n > 0 {
                transient = transient.max(a.recompute_working_set);
            }
        }
    }
    // The last offloaded group of each module stays on the GPU (fine_grained_activation_offload.py l.497-660).
    let mut kept = w.largest_offloaded.min(offloaded);
    // Layer-level CPU offloading (PP 1, no recompute: error rules otherwise): Transformer Engine offloads the saved
    // activations of n of the stage's L layers, freeing each group once its copy is done, with one group's copy in
    // flight; so the GPU keeps the other L − n layers' and one offloaded layer's (the mean layer's, over kinds).
    // Source: TE cpu_offload_v1.py AsyncDoubleBufferGroupOffloadHandler (num_offload_group = n of num_model_group = L;
    // a group freed at its window, the next one's copy started); ML transformer_block.py l.306.
    let n = t.cpu_offloading_num_layers.min(st.layers);
    if !full && t.cpu_offloading && n > 0 && st.layers > 0 {
        let per_layer = saved / st.layers as f64;
        let moved = n as f64 * per_layer;
        saved -= moved;
        offloaded += moved;
        kept = kept.max(per_layer);
    }
    StageActivations { saved, transient, offloaded, kept }
}

/// [`stage_activations`]' result: bytes per microbatch saved, the recompute working set, bytes offloaded, and the
/// offloaded bytes kept on the GPU.
#[derive(Clone, Copy, Default)]
struct StageActivations {
    saved: f64,
    transient: f64,
    offloaded: f64,
    kept: f64,
}

/// Everything [`estimate_into`] resolves once per plan.
struct PlanWide<'a> {
    run: Run,
    layers: &'a Layers,
    output: f64,
    dispatch: (f64, &'static str),
    library: (f64, &'static str),
    nccl: f64,
    shards: (f64, f64),
    deferred: f64,
    /// Bytes outside the allocator: the CUDA context, NCCL and the MoE communication libraries' buffers.
    outside: u64,
    /// The vision encoder's saved activations per microbatch, and its weights' label (trained or frozen).
    vision_act: f64,
    vision_label: &'static str,
    /// The DSA indexer's saved tensors per attention layer and microbatch.
    dsa_act: f64,
    /// Unfused attention's raw scores of one layer (0 with flash or fused attention).
    scores: f64,
    /// The largest per-layer saved activations, recompute working set and offloaded bytes over the model's kinds
    /// (each stage's recompute working set and kept offload group).
    largest_full: f64,
    largest_working_set: f64,
    largest_offloaded: f64,
    /// Whether any kind of layer offloads activations (a per-layer `offloaded` other than 0).
    offloads: bool,
}

/// The per-kind activations the layout search keeps between its candidates ([`estimate_peaks_memo`]). Of what differs
/// between the candidates of one layout and micro-batch (recompute granularity, method and layers, the module lists,
/// the distributed optimizer, optimizer offload), [`Layers::of`] reads only the selective-recompute module list,
/// through `activations::Choices`, and the speed settings the search withdraws per candidate (CUDA graphs' buffers
/// among them), which it names by a mask ([`ActivationMemo::set_speed`]): the run's activation and GEMM-input sizes and
/// its BF16 edge layers follow the precision settings, the shape the layout and micro-batch, the routed tokens the MoE
/// settings. So the memo keeps the last [`MEMO_SLOTS`] `Layers` of the cell by their `Choices` and speed mask (full
/// and no recompute share one; selective and each module list another); the search clears them for each layout and
/// micro-batch. Of the layout, `Layers::of` reads only the sizes of [`LayersKey`] (not PP, VPP, the split, EP or the
/// dispatcher: `memory/memo_tests.rs`), so the memo also keeps what it computed by those sizes, `Choices` and mask, for
/// the later layouts of the same sizes (the search tries every PP and split of a TP and CP, each with every EP): up to
/// [`MAX_KEPT_LAYERS`] entries, then it starts again. The same figures to the bit; for one model and base plan (a
/// search starts a new memo).
#[derive(Clone, Default)]
pub struct ActivationMemo {
    slots: [Option<((activations::Choices, u16), Layers)>; MEMO_SLOTS],
    /// The speed mask of the candidates estimated next.
    speed: u16,
    next: usize,
    /// The pipeline rank of the last full estimate's peak stage: [`estimate_peaks_memo`] sizes it first.
    peak_stage: usize,
    /// Every `Layers` computed (`kept`), and its index by the layout's sizes, `Choices` and speed mask: both allocated
    /// once, for [`MAX_KEPT_LAYERS`] entries (the search allocates per pipeline shape at most).
    kept: Vec<Layers>,
    index: HashMap<LayersKey, usize, BuildHasherDefault<KeyHasher>>,
}

/// The `Layers` an [`ActivationMemo`] keeps for one cell: the recompute choices of one layout's cell (none and full,
/// selective, the search's four module lists, optimizer offload's) under one or two speed masks.
const MEMO_SLOTS: usize = 8;

/// What [`Layers::of`] reads of a search's candidate: of the layout, TP, SP and ETP (through [`Shape::of`]) and CP (there
/// and in `activations::layer`'s split of the SSM tensors); the micro-batch size (a microbatch's tokens); the recompute
/// and offload choices (`activations::Choices::bits`) and the withdrawn speed settings' mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct LayersKey {
    micro_batch_size: u64,
    tp: u64,
    cp: u64,
    etp: u64,
    choices: u32,
    speed: u16,
    sp: bool,
}

/// The memo index's hasher: FxHash's multiply-rotate step (rustc-hash) over the key's integers. std's SipHash cost
/// more in the browser's search than the lookups saved.
#[derive(Default)]
struct KeyHasher(u64);

impl KeyHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.add(u64::from(b));
        }
    }
    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }
    fn write_u16(&mut self, n: u16) {
        self.add(u64::from(n));
    }
    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }
    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
}

impl LayersKey {
    fn of(p: &Plan, choices: &activations::Choices, speed: u16) -> LayersKey {
        let par = &p.parallelism;
        LayersKey {
            micro_batch_size: p.training.micro_batch_size,
            tp: par.tp(),
            cp: par.cp(),
            etp: par.etp(),
            choices: choices.bits(),
            speed,
            sp: par.sequence_parallel,
        }
    }
}

impl ActivationMemo {
    /// Forgets the cell's entries: for another layout or micro-batch (those kept by the layout's sizes stay).
    pub fn clear(&mut self) {
        self.slots = Default::default();
    }

    /// Names the speed settings in force for the candidates estimated next (the search's mask of withdrawn keys): the
    /// entries of another mask are kept, not used.
    pub fn set_speed(&mut self, mask: u16) {
        self.speed = mask;
    }

    fn layers(&mut self, p: &Plan, run: &Run, sh: &Shape, kinds: &LayerKinds) -> &Layers {
        let key = (activations::Choices::of(p), self.speed);
        if let Some(i) = self.slots.iter().position(|s| s.as_ref().is_some_and(|(k, _)| *k == key)) {
            return &self.slots[i].get_or_insert_with(|| (key, Layers::of(p, run, sh, kinds))).1;
        }
        // The oldest entry makes way.
        let i = self.next % MEMO_SLOTS;
        self.next = i + 1;
        let wide = LayersKey::of(p, &key.0, key.1);
        let layers = match self.index.get(&wide).and_then(|&at| self.kept.get(at)) {
            Some(l) => *l,
            None => {
                let l = Layers::of(p, run, sh, kinds);
                if self.kept.len() >= MAX_KEPT_LAYERS {
                    self.kept.clear();
                    self.index.clear();
                }
                if self.kept.capacity() == 0 {
                    self.kept.reserve_exact(MAX_KEPT_LAYERS);
                    self.index.reserve(MAX_KEPT_LAYERS);
                }
                self.index.insert(wide, self.kept.len());
                self.kept.push(l);
                l
            }
        };
        &self.slots[i].insert((key, layers)).1
    }
}

impl<'a> PlanWide<'a> {
    /// `layers`: the model's per-kind activations, where [`PlanWide::layers`] found them.
    fn of(p: &Plan, d: &Derived, kinds: &LayerKinds, run: Run, sh: &Shape, layers: &'a Layers) -> PlanWide<'a> {
        let m = &p.model;
        let par = &p.parallelism;
        let vocab = d.padded_vocab_size;
        let nccl = overhead::communicators(p, d) as f64 * NCCL_BYTES_PER_GROUP;
        let library = moe::library_buffers(m, p, sh);
        let max_of = |per: fn(&LayerActivations) -> f64| layers.active().iter().map(per).fold(0.0, f64::max);
        PlanWide {
            largest_full: max_of(|a| a.full),
            largest_working_set: max_of(|a| a.recompute_working_set),
            largest_offloaded: max_of(|a| a.offloaded),
            offloads: layers.active().iter().any(|a| a.offloaded != 0.0),
            layers,
            output: activations::output(p, &run, sh, vocab),
            dispatch: if m.is_moe() { moe::dispatcher_working_set(m, p, &run, sh) } else { (0.0, "") },
            library,
            nccl,
            outside: CUDA_CONTEXT_BYTES as u64 + nccl as u64 + library.0 as u64,
            shards: state::shards(&run, d.data_parallel_size.max(1) * par.cp().max(1), d.expert_data_parallel_size.max(1)),
            deferred: activations::deferred_wgrad(p, &run, sh, vocab, d.num_microbatches),
            vision_act: m.vision_config.as_ref().map_or(0.0, |e| vision::activations_per_microbatch(p, e)),
            vision_label: vision_label(p),
            dsa_act: dsa::bytes_per_layer(p, sh),
            scores: kinds.totals.table.kinds().iter().filter(|k| k.mixer.is_attention()).map(|k| activations::score_elements(m, sh, k.mixer)).fold(0.0, f64::max) * run.act,
            run,
        }
    }
}

/// As [`estimate`], from the stages' parameters ([`stage_params`] of the same layout and `kinds`, `p.model.kinds()`),
/// into `out`, reusing its buffers (the layout search sizes thousands of candidates).
pub fn estimate_into(p: &Plan, d: &Derived, kinds: &LayerKinds, params: &[StageParams], out: &mut MemoryReport) {
    estimate_with::<false>(p, d, kinds, params, out, true, None);
}

/// As [`estimate_into`] with only what the layout search reads: each stage's `pipeline_rank`, `num_layers`,
/// `total_bytes`, `allocated_bytes`, `bound_by` and `host_bytes`, and the report's totals, the same as
/// [`estimate_into`]'s; the breakdown and the terms are left empty or stale.
pub fn estimate_peaks_into(p: &Plan, d: &Derived, kinds: &LayerKinds, params: &[StageParams], out: &mut MemoryReport) {
    estimate_with::<false>(p, d, kinds, params, out, false, None);
}

/// As [`estimate_peaks_into`], with the per-kind activations taken from `memo` where a candidate of the same layout and
/// micro-batch computed them (see [`ActivationMemo`]): the same figures to the bit.
///
/// `floor`: the smallest peak the caller has seen. The stage that peaked in the memo's last full estimate is sized
/// first; when its device peak is over the GPU's memory and not under `floor`, the estimate stops there with `fits`
/// false and `peak_bytes` that stage's peak — a lower bound of the true peak (the largest stage's), so the verdict
/// (out of memory) and the smallest peak the caller keeps are the full estimate's; the stages are then stale. Most
/// candidates of the layout search do not fit, and their peak stage is the previous candidate's.
pub fn estimate_peaks_memo(p: &Plan, d: &Derived, kinds: &LayerKinds, params: &[StageParams], memo: &mut ActivationMemo, out: &mut MemoryReport, floor: Option<u64>) {
    estimate_with::<true>(p, d, kinds, params, out, false, Some((memo, floor)));
}

/// `SEARCH`: the layout search's estimate, with its memo and floor ([`estimate_peaks_memo`]); a constant, so that the
/// page's estimate links none of the search's shortcuts.
fn estimate_with<const SEARCH: bool>(p: &Plan, d: &Derived, kinds: &LayerKinds, params: &[StageParams], out: &mut MemoryReport, detail: bool, memo: Option<(&mut ActivationMemo, Option<u64>)>) {
    let (mut memo, floor) = match memo.filter(|_| SEARCH) {
        Some((m, floor)) => (Some(m), floor),
        None => (None, None),
    };
    let peak_stage = memo.as_deref().map(|m| m.peak_stage);
    let search = SEARCH && peak_stage.is_some();
    let (run, sh) = (Run::of(p), Shape::of(p));
    let owned;
    let layers = match memo.as_deref_mut() {
        Some(memo) => memo.layers(p, &run, &sh, kinds),
        None => {
            owned = Layers::of(p, &run, &sh, kinds);
            &owned
        }
    };
    let wide = PlanWide::of(p, d, kinds, run, &sh, layers);
    let mut stages = std::mem::take(&mut out.stages);
    stages.truncate(params.len());
    stages.resize_with(params.len(), StageMemory::default);
    let gpu_memory_bytes = p.gpu.memory_bytes();
    // The last peak stage first: out of memory and not under the floor, the candidate's verdict is known.
    if let (Some(rank), Some(floor)) = (peak_stage, floor) {
        if let (Some(st), Some(sm)) = (params.get(rank), stages.get_mut(rank)) {
            stage::<SEARCH>(p, &wide, kinds, (rank, stage_activations(p, &wide, st), flights(p, d, rank)), st, sm);
            let peak = sm.total_bytes;
            if peak > gpu_memory_bytes && peak >= floor {
                out.stages = stages;
                (out.peak_bytes, out.gpu_memory_bytes, out.fits) = (peak, gpu_memory_bytes, false);
                return;
            }
        }
    }
    // A stage with the previous stage's layers saves the same activations per microbatch: counted once.
    let mut act = StageActivations::default();
    // For the search (the peaks alone): the last stage sized in full and its microbatches in flight. A stage that holds
    // the same (`same_as_previous`, back to it) with no more in flight peaks no higher, its host memory no higher: it
    // takes that stage's figures, which leaves every maximum over the stages as it was.
    let mut sized: Option<(usize, (f64, f64))> = None;
    for rank in 0..params.len() {
        let st = &params[rank];
        let (in_flight, output_flight) = flights(p, d, rank);
        if let Some((at, (a, b))) = sized.filter(|_| search && st.same_as_previous) {
            if in_flight <= a && output_flight <= b {
                let (before, after) = stages.split_at_mut(rank);
                let (from, sm) = (&before[at], &mut after[0]);
                (sm.pipeline_rank, sm.num_layers) = (rank as u64, st.layers);
                (sm.total_bytes, sm.allocated_bytes, sm.bound_by) = (from.total_bytes, from.allocated_bytes, from.bound_by);
                (sm.host_bytes, sm.host_bytes_per_node) = (from.host_bytes, from.host_bytes_per_node);
                continue;
            }
        }
        if rank == 0 || !st.like_previous {
            act = stage_activations(p, &wide, st);
        }
        let sm = &mut stages[rank];
        let parts = stage::<SEARCH>(p, &wide, kinds, (rank, act, (in_flight, output_flight)), st, sm);
        sized = (search && parts.grows_with_flight).then_some((rank, (in_flight, output_flight)));
        sm.terms.clear();
        if detail {
            stage_breakdown(&wide, st, &parts, sm);
            stage_terms(&wide, &parts, sm);
        }
    }
    if let Some(memo) = memo {
        // The first of the largest, as `max_by_key` would not: any one will do.
        memo.peak_stage = stages.iter().enumerate().fold((0, 0), |best, (i, s)| if s.total_bytes > best.1 { (i, s.total_bytes) } else { best }).0;
    }
    let peak_bytes = stages.iter().map(|s| s.total_bytes).max().unwrap_or(0);
    let allocated_peak_bytes = stages.iter().map(|s| s.allocated_bytes).max().unwrap_or(0);
    let host_bytes_per_node = stages.iter().map(|s| s.host_bytes_per_node).max().unwrap_or(0);
    // GiB, as GPU memory is (settings.rs HOST_MEMORY).
    let host_memory_per_node_bytes = p.cluster.host_memory_per_node_gb.map(|g| (g * (1u64 << 30) as f64) as u64);
    *out = MemoryReport {
        stages,
        peak_bytes,
        gpu_memory_bytes,
        fits: peak_bytes <= gpu_memory_bytes,
        allocated_peak_bytes,
        host_bytes_per_node,
        host_memory_per_node_bytes,
        host_fits: host_memory_per_node_bytes.map(|cap| host_bytes_per_node <= cap),
    };
}

/// The DSA indexer's saved tensors on one stage: per attention layer of its decoder chunks (microbatches in flight)
/// and of the MTP block where it is built (each depth; the last chunk's microbatches in flight).
fn dsa_on_stage(w: &PlanWide, kinds: &LayerKinds, counts: &KindCounts, mtp: bool, (in_flight, output_flight): (f64, f64)) -> f64 {
    if w.dsa_act <= 0.0 {
        return 0.0;
    }
    let t = &kinds.totals;
    let attention = |c: &KindCounts| -> f64 {
        t.table.kinds().iter().zip(c.0).filter(|(k, _)| k.mixer.is_attention()).map(|(_, n)| n as f64).sum()
    };
    let mtp_layers = if mtp { t.mtp.depths as f64 * attention(&t.mtp.layers) } else { 0.0 };
    w.dsa_act * (attention(counts) * in_flight + mtp_layers * output_flight)
}

fn vision_label(p: &Plan) -> &'static str {
    let s = &p.training.settings;
    match (s.freeze_vision_model, s.freeze_vision_projection) {
        (true, true) => "vision encoder and projector weights (frozen: no gradients or optimizer state)",
        (true, false) => "vision encoder weights (frozen) and projector weights (trained: gradients and optimizer state counted with the rest)",
        (false, true) => "vision encoder weights (trained: gradients and optimizer state counted with the rest) and projector weights (frozen)",
        (false, false) => "vision encoder and projector weights (trained: gradients and optimizer state counted with the rest)",
    }
}

fn weights_label(run: &Run) -> &'static str {
    use crate::settings::{Fp8Recipe, Precision};
    if run.peft {
        return "weights: the frozen base (no gradients, master weights or optimizer state) and the LoRA adapters, at the parameter dtype";
    }
    match (run.store, run.precision, run.fp8_recipe) {
        (WeightStore::Primary, Precision::Fp4, _) => "weights: NVFP4 primary weights (packed data + transpose, E4M3 scales); the rest bf16",
        (WeightStore::Primary, _, Some(Fp8Recipe::Mxfp8)) => "weights: MXFP8 primary weights (data + columnwise, E8M0 scales); the rest bf16",
        (WeightStore::Primary, _, Some(Fp8Recipe::Blockwise)) => "weights: FP8 blockwise primary weights (data + columnwise); the rest bf16",
        (WeightStore::Primary, _, _) if run.non_tn_fp8_gemm => "weights: FP8 primary weights (Blackwell: no transpose); the rest bf16",
        (WeightStore::Primary, _, _) => "weights: FP8 primary weights (data + transpose); the rest bf16",
        (_, Precision::Fp32, _) => "weights: fp32 parameters",
        (_, Precision::Fp16, _) => "weights: fp16 parameters",
        _ => "weights: bf16 parameters",
    }
}

fn optimizer_labels(run: &Run) -> (&'static str, &'static str) {
    let master = match run.offload_path {
        OffloadPath::Bridge => "fp32 master weights, all on the GPU under optimizer offload (Bridge: precision-aware optimizer off)",
        OffloadPath::MegatronLm => "fp32 master weights of the on-GPU share (Megatron-LM offload: HybridDeviceOptimizer)",
        OffloadPath::None if run.te_master && run.master == 2.0 => "master weights in TE FusedAdam (16-bit remainders or fp16)",
        OffloadPath::None if run.te_master => "fp32 master weights in TE FusedAdam",
        OffloadPath::None if run.sharded_optimizer => "fp32 master weights (Megatron-Core distributed optimizer)",
        // Without the distributed optimizer every GPU keeps a full fp32 copy (optimizer.py Float16OptimizerWithFloat16Params).
        OffloadPath::None => "fp32 master weights (Megatron-Core mixed-precision optimizer: a full copy on every GPU)",
    };
    let moments = match (run.offload_path, run.moments) {
        (OffloadPath::None, m) if m == 4.0 && !run.precision_aware => "SGD momentum (fp32)",
        (OffloadPath::None, _) if run.precision_aware => "Adam moments in TE FusedAdam (exp_avg_dtype, exp_avg_sq_dtype)",
        (OffloadPath::None, _) => "Adam moments (fp32 exp_avg, exp_avg_sq)",
        _ => "optimizer moments of the on-GPU share (fp32)",
    };
    (master, moments)
}

/// The parts of one stage's memory, in bytes, before they are rounded into [`StageMemory`].
struct Parts {
    state: state::State,
    graphs: f64,
    /// Saved activations on the GPU, the kept offload groups included.
    activations: f64,
    copies: f64,
    recompute: f64,
    dispatch: f64,
    deferred: f64,
    fragmentation: f64,
    host_activations: f64,
    /// The vision encoder's saved activations of the microbatches in flight (the stage that builds it).
    vision_act: f64,
    /// The DSA indexer's saved tensors of the stage's attention layers (microbatches in flight).
    dsa_act: f64,
    /// Unfused attention's raw scores of one layer, a working set of the forward and the recompute.
    scores: f64,
    in_flight: f64,
    /// Saved activations of one microbatch: the layers', and the output side's (last stage).
    layer_act: f64,
    output_act: f64,
    /// Allocated bytes at the forward/backward peak and at the optimizer step.
    fwd: f64,
    step: f64,
    /// Whether every term that scales with the microbatches in flight does so by a factor ≥ 0: the stage's figures
    /// then grow with them (each a sum, product, maximum or rounding of terms that do).
    grows_with_flight: bool,
}

/// Microbatches whose activations a stage holds at its peak, and those of its last chunk (where the output side and
/// MTP live, whose forward the schedule follows with its backward soonest).
fn flights(p: &Plan, d: &Derived, rank: usize) -> (f64, f64) {
    let par = &p.parallelism;
    // microbatch_group_size_per_vp_stage defaults to PP (megatron/core/model_parallel_config.py __post_init__).
    let group = par.microbatch_group_size_per_vp_stage.unwrap_or(par.pp());
    let in_flight = pipeline::microbatches_in_flight(par.pp(), par.vpp(), group, rank as u64, d.num_microbatches);
    (in_flight, pipeline::last_chunk_in_flight_at(par.pp(), par.vpp(), group, rank as u64, d.num_microbatches) as f64)
}

/// One stage's memory into `sm` (all but its terms), and its parts for [`stage_terms`].
#[allow(clippy::too_many_arguments)]
/// `flights`: the stage's microbatches in flight ([`flights`]).
/// `SEARCH`: whether `grows_with_flight` is asked (the search's estimate).
fn stage<const SEARCH: bool>(p: &Plan, w: &PlanWide, kinds: &LayerKinds, (rank, act, flights): (usize, StageActivations, (f64, f64)), st: &StageParams, sm: &mut StageMemory) -> Parts {
    let (in_flight, output_flight) = flights;
    let s = state::of(&w.run, st, w.shards);
    let counts = st.counts;
    let StageActivations { saved: layer_act, transient: recompute, offloaded, kept } = act;
    // The output side on the stage that builds the output layer and loss, the MTP block's where the split puts it: each
    // MTP depth runs its layers (GPT: a layer like the last decoder layer, gpt_layer_specs.py get_gpt_mtp_block_spec:
    // spec.layer_specs[-1]; hybrid: the MTP pattern), then its own final norm and the shared output layer.
    let mtp = &kinds.totals.mtp;
    let mtp_act = if st.mtp { mtp.depths as f64 * (w.layers.weigh(&mtp.layers, |a| a.full) + w.output) } else { 0.0 };
    let output_act = if st.output { w.output } else { 0.0 } + mtp_act;
    let last = st.output;
    let moe_layers = st.moe_layers;
    let graphs_per_microbatch = w.layers.graphs[..w.layers.n].iter().zip(counts.0).fold(0.0, |s, (g, n)| s + n as f64 * g);
    let parts = Parts {
        state: s,
        graphs: graphs_per_microbatch * in_flight,
        activations: layer_act * in_flight + output_act * output_flight + kept,
        copies: s.weight_copy_per_microbatch * in_flight,
        recompute,
        dispatch: if moe_layers > 0 { w.dispatch.0 } else { 0.0 },
        deferred: if last { w.deferred } else { 0.0 },
        fragmentation: 0.0,
        host_activations: (offloaded * in_flight - kept).max(0.0),
        vision_act: if st.vision > 0.0 { w.vision_act * in_flight } else { 0.0 },
        dsa_act: dsa_on_stage(w, kinds, &counts, st.mtp, (in_flight, output_flight)),
        scores: if st.layers > 0 { w.scores } else { 0.0 },
        in_flight: 0.0,
        layer_act: 0.0,
        output_act: 0.0,
        fwd: 0.0,
        step: 0.0,
        grows_with_flight: SEARCH && [layer_act, output_act, graphs_per_microbatch, s.weight_copy_per_microbatch, offloaded, w.vision_act, w.dsa_act].iter().all(|&x| x >= 0.0),
    };
    let persistent = s.weights + s.weight_cache + s.grads + s.master + s.moments + parts.graphs;
    let fwd = persistent + parts.activations + parts.vision_act + parts.dsa_act + parts.copies + parts.deferred + parts.recompute + parts.dispatch + s.fsdp_unsharded + parts.scores;
    let step = persistent + s.step_grad_copy;
    let (allocated, bound_by) = if step > fwd { (step, Phase::OptimizerStep) } else { (fwd, Phase::ForwardBackward) };
    let parts = Parts { fragmentation: FRAGMENTATION * allocated, in_flight, layer_act, output_act, fwd, step, ..parts };
    let allocated_b = allocated as u64;
    sm.pipeline_rank = rank as u64;
    sm.num_layers = st.layers;
    sm.total_bytes = allocated_b.saturating_add(parts.fragmentation as u64).saturating_add(w.outside);
    sm.allocated_bytes = allocated_b;
    sm.bound_by = bound_by;
    sm.host_bytes = (s.host + parts.host_activations) as u64;
    sm.host_bytes_per_node = sm.host_bytes.saturating_mul(p.cluster.gpus_per_node);
    parts
}

/// The rest of one stage's fields: the breakdown [`stage`] leaves out for the search.
fn stage_breakdown(w: &PlanWide, st: &StageParams, x: &Parts, sm: &mut StageMemory) {
    let s = &x.state;
    let overhead = Overhead {
        cuda_context_bytes: CUDA_CONTEXT_BYTES as u64,
        nccl_bytes: w.outside - CUDA_CONTEXT_BYTES as u64,
        allocator_bytes: x.fragmentation as u64,
        recompute_transient_bytes: x.recompute as u64,
    };
    let (params_b, grads_b, optim_b, act_b) =
        ((s.weights + s.weight_cache) as u64, s.grads as u64, (s.master + s.moments) as u64, (x.activations + x.vision_act + x.dsa_act) as u64);
    sm.parameters_bytes = params_b;
    sm.gradients_bytes = grads_b;
    sm.optimizer_bytes = optim_b;
    sm.activations_bytes = act_b;
    sm.overhead_bytes = sm.total_bytes.saturating_sub(params_b).saturating_sub(grads_b).saturating_sub(optim_b).saturating_sub(act_b);
    sm.dense_parameters = st.dense as u64;
    sm.expert_parameters = st.experts as u64;
    let per_mb = if x.in_flight > 0.0 { (x.vision_act + x.dsa_act) / x.in_flight } else { 0.0 };
    sm.activations_per_microbatch_bytes = (x.layer_act + x.output_act + per_mb) as u64;
    sm.microbatches_in_flight = x.in_flight;
    sm.output_activations_bytes = x.output_act as u64;
    sm.reserved_bytes = sm.allocated_bytes.saturating_add(overhead.allocator_bytes);
    sm.overhead = overhead;
    sm.forward_backward_bytes = x.fwd as u64;
    sm.optimizer_step_bytes = x.step as u64;
}

/// One stage's labelled terms into `sm.terms` (cleared by the caller).
fn stage_terms(w: &PlanWide, x: &Parts, sm: &mut StageMemory) {
    let run = &w.run;
    let s = &x.state;
    let (master_label, moments_label) = optimizer_labels(run);
    let terms = &mut sm.terms;
    let mut push = |key, label: &'static str, bytes: f64, location, phase, allocated| {
        if bytes > 0.0 {
            terms.push(MemoryTerm { key, label: Cow::Borrowed(label), bytes: bytes as u64, location, phase, allocated });
        }
    };
    use Location::{Device, Host};
    use Phase::{ForwardBackward, OptimizerStep, Persistent};
    push(TermKey::Weights, weights_label(run), s.weights - s.vision_weights, Device, Persistent, true);
    push(TermKey::VisionEncoderWeights, w.vision_label, s.vision_weights, Device, Persistent, true);
    push(TermKey::WeightCache, "TE quantized weight cache (one per module, bf16 weights under FP8/FP4)", s.weight_cache, Device, Persistent, true);
    push(TermKey::Gradients, if run.peft { "main-gradient buffer (LoRA adapters only)" } else { "main-gradient buffer" }, s.grads, Device, Persistent, true);
    push(TermKey::MasterWeights, master_label, s.master, Device, Persistent, true);
    push(TermKey::OptimizerMoments, moments_label, s.moments, Device, Persistent, true);
    push(TermKey::CudaGraphBuffers, "CUDA graph static input buffers (per graphed layer and microbatch in flight)", x.graphs, Device, Persistent, true);
    push(TermKey::Activations, "saved activations (microbatches in flight)", x.activations, Device, ForwardBackward, true);
    push(TermKey::VisionEncoderActivations, "vision encoder: saved activations of the image tokens (microbatches in flight)", x.vision_act, Device, ForwardBackward, true);
    push(TermKey::DsaIndexerActivations, "DSA indexer: saved top-k indices (and, with dsa_indexer_loss_coeff, its q, k, weights and inputs) per attention layer (microbatches in flight)", x.dsa_act, Device, ForwardBackward, true);
    push(TermKey::QuantizedWeightCopies, "quantized weight copies per microbatch in flight (disable_parameter_transpose_cache)", x.copies, Device, ForwardBackward, true);
    push(TermKey::RecomputeWorkingSet, "recompute working set (one recomputed layer or group in backward)", x.recompute, Device, ForwardBackward, true);
    push(TermKey::MoeDispatchWorkingSet, w.dispatch.1, x.dispatch, Device, ForwardBackward, true);
    push(TermKey::AttentionScoresWorkingSet, "unfused attention: one layer's raw b·heads·s² scores (Megatron-Core's global buffer; a transient under TE's unfused backend)", x.scores, Device, ForwardBackward, true);
    push(TermKey::DeferredWgradBuffers, "deferred output-layer wgrad inputs and grads (defer_embedding_wgrad_compute)", x.deferred, Device, ForwardBackward, true);
    push(TermKey::FsdpUnshardedBuffers, "Megatron-FSDP unsharded weights/grads of two units in flight", s.fsdp_unsharded, Device, ForwardBackward, true);
    push(TermKey::Fp32GradCopies, "fp32 copies of the grad shard at the optimizer step (bf16 grad buffer)", s.step_grad_copy, Device, OptimizerStep, true);
    push(TermKey::AllocatorFragmentation, "allocator fragmentation: reserved − allocated", x.fragmentation, Device, Persistent, false);
    push(TermKey::CudaContext, "CUDA context and library workspaces (outside the allocator)", CUDA_CONTEXT_BYTES, Device, Persistent, false);
    push(TermKey::NcclBuffers, "NCCL communicator buffers (outside the allocator)", w.nccl, Device, Persistent, false);
    push(TermKey::MoeCommBuffers, w.library.1, w.library.0, Device, Persistent, false);
    push(TermKey::HostOptimizerState, "offloaded optimizer state on the host (fp32 master, moments, fp32 grads)", s.host, Host, Persistent, false);
    push(TermKey::HostActivations, "offloaded activations on the host (pinned)", x.host_activations, Host, ForwardBackward, false);
}
