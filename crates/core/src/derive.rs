//! Sizes that follow from a plan: data-parallel sizes, minimum GPUs, microbatches, bubble, parameters.
//! Pure arithmetic with no checks; the rules judge these numbers, memory and perf build on them.

use crate::model::{KindTotals, ParamCounts};
use crate::pipeline::{self, Placement, StageSplit};
use std::borrow::Cow;
use crate::plan::Plan;
use serde::{Deserialize, Serialize};

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
    /// Parameters of the vision encoder and its projector (in `total_parameters`, not in `active_parameters`).
    #[serde(default)]
    pub vision_encoder_parameters: u64,
    pub layers_per_stage: Vec<u64>,
    pub tokens_per_step: u64,
    /// Decoder layers of each virtual chunk of each pipeline stage, `layers_per_chunk[pp][vpp]` (a stage the split
    /// leaves without layers has no chunks listed, unless a layout names its empty chunks).
    #[serde(default)]
    pub layers_per_chunk: Vec<Vec<u64>>,
    /// The chunks that build the embedding, the output layer and loss, and the MTP layers (None without MTP).
    #[serde(default)]
    pub pipeline_placement: Placement,
    /// The decoder layers of each virtual chunk of each pipeline stage by kind, `layer_runs_per_chunk[pp][vpp]`: runs
    /// of consecutive layers of one kind in model order, each kind written as Megatron-Core's hybrid layer pattern
    /// writes it (see [`KindRun`]). Filled by [`derive`] (the report), not by [`derive_into`] (the search); left out of
    /// the JSON when the split could not be made.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layer_runs_per_chunk: Vec<Vec<Vec<KindRun>>>,
    /// The model's layer kinds and totals (not in the report's JSON): read through [`Derived::kinds`].
    #[serde(skip)]
    pub kinds: KindsMemo,
}

/// Consecutive decoder layers of one kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindRun {
    /// The kind in hybrid-pattern symbols: a hybrid pattern's own symbol (`M` Mamba-2, `G` Gated DeltaNet, `*`
    /// attention, `D` DSA attention, `+` MLA, `-` dense MLP, `E` MoE); a GPT layer's mixer and MLP together (`*-`
    /// attention + dense MLP, `*E` attention + MoE, `+E` MLA + MoE, `GE` Gated DeltaNet + MoE).
    pub symbols: String,
    pub count: u64,
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

/// Sizes, without any checks, and the layer kinds of every chunk.
pub fn derive(p: &Plan, split: Option<&StageSplit>) -> Derived {
    let mut d = Derived::default();
    derive_into(p, split, &mut d);
    d.layer_runs_per_chunk = split.map(|s| layer_runs_per_chunk(p, s)).unwrap_or_default();
    d
}

/// The model's decoder layers as runs of one kind in model order: (exclusive end, symbols), adjacent equal kinds
/// merged. O(runs): a hybrid pattern's runs, or the GPT layer runs of `moe_layer_freq` / `linear_attention_freq`.
fn model_runs(p: &Plan) -> Vec<(u64, String)> {
    let m = &p.model;
    let mut out: Vec<(u64, String)> = Vec::new();
    let mut end = 0u64;
    let mut push = |n: u64, symbols: String| {
        end = end.saturating_add(n);
        match out.last_mut() {
            Some(last) if last.1 == symbols => last.0 = end,
            _ => out.push((end, symbols)),
        }
    };
    match &m.hybrid_layer_pattern {
        Some(h) => h.main_runs().iter().for_each(|&(c, n)| push(n, char::from(c).to_string())),
        None => m.layer_runs().for_each(|(kind, n)| push(n, kind.symbols(m.multi_latent_attention))),
    }
    out
}

/// [`Derived::layer_runs_per_chunk`]: each chunk's layers [start, start + count) cut out of the model's runs, found by
/// binary search, so the work is O(chunks · log runs + the runs the chunks cover).
pub fn layer_runs_per_chunk(p: &Plan, split: &StageSplit) -> Vec<Vec<Vec<KindRun>>> {
    let runs = model_runs(p);
    let of_chunk = |start: u64, count: u64| {
        let end = start.saturating_add(count);
        let first = runs.partition_point(|r| r.0 <= start);
        let mut from = start;
        let mut out = Vec::new();
        for (run_end, symbols) in runs.get(first..).unwrap_or_default() {
            if from >= end {
                break;
            }
            let to = (*run_end).min(end);
            out.push(KindRun { symbols: symbols.clone(), count: to - from });
            from = to;
        }
        out
    };
    split.stages.iter().map(|chunks| chunks.iter().map(|c| of_chunk(c.start, c.count)).collect()).collect()
}

/// As [`derive`], into `out`, reusing its buffer (the layout search derives thousands of layouts); it leaves
/// `layer_runs_per_chunk` empty.
pub fn derive_into(p: &Plan, split: Option<&StageSplit>, out: &mut Derived) {
    let kinds = p.model.kind_totals();
    let counts = p.model.param_counts_of(&kinds);
    derive_counted(p, split, (kinds, &counts), out);
}

/// As [`derive_into`], with the model's kind totals and parameter counts given (`p.model.kind_totals()` and
/// `p.model.param_counts_of` of them): they depend on the model alone, and the layout search counts them once.
pub fn derive_counted(p: &Plan, split: Option<&StageSplit>, (kinds, counts): (KindTotals, &ParamCounts), out: &mut Derived) {
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
    let mut layers_per_stage = std::mem::take(&mut out.layers_per_stage);
    layers_per_stage.clear();
    // Inner lists are kept and refilled, so a search deriving many layouts of one pipeline shape allocates once.
    let mut layers_per_chunk = std::mem::take(&mut out.layers_per_chunk);
    let stages = split.map_or(0, |s| s.stages.len());
    layers_per_chunk.truncate(stages);
    layers_per_chunk.resize_with(stages, Vec::new);
    let mut pipeline_placement = Placement::default_for(par.pp(), par.vpp());
    if let Some(split) = split {
        layers_per_stage.extend(split.layer_counts());
        for (rank, chunks) in layers_per_chunk.iter_mut().enumerate() {
            chunks.clear();
            chunks.extend(split.chunk_counts(rank));
        }
        pipeline_placement = split.placement;
    }
    if p.model.mtp_num_layers == 0 {
        pipeline_placement.mtp = None;
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
        vision_encoder_parameters: sat(counts.vision_encoder),
        layers_per_stage,
        tokens_per_step: sat(gbs as u128 * p.training.seq_length as u128),
        layers_per_chunk,
        pipeline_placement,
        layer_runs_per_chunk: Vec::new(),
        kinds: KindsMemo(Some(kinds)),
    };
}

/// A memo of the model's kind totals: values that follow from the model alone, so two `Derived` of one plan are equal
/// whether or not they carry it (a report read back from JSON has none).
#[derive(Clone, Copy, Debug, Default)]
pub struct KindsMemo(Option<KindTotals>);

impl PartialEq for KindsMemo {
    fn eq(&self, _: &KindsMemo) -> bool {
        true
    }
}

impl Derived {
    /// The model's layer kinds and their totals, as [`derive_into`] counted them for this plan; counted afresh for a
    /// `Derived` built any other way. The step-time and rule code read them several times per candidate, and they
    /// depend on the model alone: a search counting them once per layout shape spends a fifth less time.
    pub fn kinds<'a>(&'a self, m: &crate::model::ModelConfig) -> Cow<'a, KindTotals> {
        match &self.kinds.0 {
            Some(k) => Cow::Borrowed(k),
            None => Cow::Owned(m.kind_totals()),
        }
    }
}

