//! The pipeline's slowest stage: which pipeline rank holds the most work, and how much more than an even share.
//!
//! The breakdown's even terms are per-GPU averages (the batch's work over every GPU). A pipeline runs at the pace of
//! its slowest stage: in 1F1B each microbatch passes every stage, so the steady state takes m × the slowest stage's
//! time per microbatch and the fill and drain (PP − 1)/VPP of it. A stage's work is its decoder layers (routed-expert
//! GEMMs only on its MoE layers), plus the vision encoder where the embedding is built, the output layer where the loss
//! is, and the MTP layers and their output layers where the MTP block is.
// Source: Narayanan et al. 2021 §2.2 (pipeline step = (m + p − 1) · t of the slowest stage, t the per-microbatch stage
// time; interleaved: (p − 1)/v); megatron/core/models/gpt/gpt_model.py (embedding on pre_process, output layer on
// post_process, MTP where mtp_on_this_rank); pipeline::Placement.

use crate::derive::Derived;
use crate::model::Ffn;
use crate::plan::Plan;

/// The even breakdown's compute, split by where it runs, in seconds per GPU per step (averaged over every GPU).
pub(super) struct ComputeParts {
    /// Everything that runs per layer except the routed experts (dense GEMMs, attention core, state-space scans).
    pub layer_s: f64,
    /// Routed-expert GEMMs (MoE layers only).
    pub expert_s: f64,
    /// The vision encoder and projector (the embedding's chunk).
    pub vision_s: f64,
    /// Output-layer logits, the main head's and every MTP depth's.
    pub logits_s: f64,
}

/// The slowest pipeline rank's work over an even share: (compute scale, per-layer scale). Multiplying the even
/// compute by the first and the per-layer terms (communication inside layers, element-wise, routing, quantisation,
/// launches, recompute) by the second gives that rank's time. (1, 1) with PP = 1 or no split.
pub(super) fn slowest_stage(plan: &Plan, derived: &Derived, parts: &ComputeParts, layer_terms_s: f64) -> (f64, f64) {
    let pp = derived.layers_per_chunk.len();
    if pp <= 1 || plan.parallelism.pp() as usize != pp {
        return (1.0, 1.0);
    }
    let m = &plan.model;
    let t = m.kind_totals();
    let moe_kind = |i: usize| t.table.kinds().get(i).is_some_and(|k| k.ffn == Ffn::Moe);
    let depths = t.mtp.depths as f64;
    let mtp_layers = t.mtp.layers.total() as f64 * depths;
    let mtp_moe = (0..t.table.len()).filter(|&i| moe_kind(i)).map(|i| t.mtp.layers.get(i)).sum::<u64>() as f64 * depths;
    let placement = derived.pipeline_placement;
    let has_mtp = placement.mtp.is_some() && mtp_layers > 0.0;
    let run_layers = m.num_layers as f64 + if has_mtp { mtp_layers } else { 0.0 };
    let run_moe = t.decoder_where(|k| k.ffn == Ffn::Moe) as f64 + if has_mtp { mtp_moe } else { 0.0 };
    let compute_total = parts.layer_s + parts.expert_s + parts.vision_s + parts.logits_s;
    if run_layers <= 0.0 || compute_total <= 0.0 {
        return (1.0, 1.0);
    }
    // The output layers' logits are spread evenly, as the fitted constants were calibrated with them: charged to the
    // stage that builds them, Megatron Bridge's published runs (Llama 3 70B on PP 8 × VPP 5, Nemotron-4 340B on PP 8)
    // come out 10–12% slower than measured and the calibration guards fail (in-sample p90 21.1% against < 19%).
    let even_logits = parts.logits_s / pp as f64;
    let per_layer = parts.layer_s / run_layers;
    let per_moe = if run_moe > 0.0 { parts.expert_s / run_moe } else { 0.0 };
    let mut best = (f64::NEG_INFINITY, 1.0, 1.0);
    for rank in 0..pp {
        let (layers, moe) = rank_layers(plan, derived, rank);
        let rank = rank as u64;
        let (mut layers, mut moe) = (layers as f64, moe as f64);
        let mut compute = 0.0;
        if placement.embedding.pipeline_rank == rank {
            compute += parts.vision_s;
        }
        if has_mtp && placement.mtp.is_some_and(|c| c.pipeline_rank == rank) {
            (layers, moe) = (layers + mtp_layers, moe + mtp_moe);
        }
        compute += even_logits + per_layer * layers + per_moe * moe;
        // The even terms are a 1/PP share of the pipeline's work; this rank's is its own.
        let (compute_scale, layer_scale) = (pp as f64 * compute / compute_total, pp as f64 * layers / run_layers);
        let time = compute_total * compute_scale + layer_terms_s * layer_scale;
        if time > best.0 {
            best = (time, compute_scale, layer_scale);
        }
    }
    (best.1, best.2)
}

/// Pipeline rank `rank`'s decoder layers and the MoE layers among them, from the chunks' layer counts: chunks in model
/// order run over the virtual ranks, each over the pipeline ranks (Megatron's interleaved order). Allocation-free (the
/// layout search estimates every candidate): O(chunks) additions and O(runs) per chunk of the rank.
fn rank_layers(plan: &Plan, derived: &Derived, rank: usize) -> (u64, u64) {
    let chunks = &derived.layers_per_chunk;
    let vpp = chunks.iter().map(Vec::len).max().unwrap_or(0);
    let (mut layers, mut moe, mut start) = (0u64, 0u64, 0u64);
    for v in 0..vpp {
        for (r, own) in chunks.iter().enumerate() {
            let Some(&count) = own.get(v) else { continue };
            if r == rank {
                layers += count;
                moe += moe_layers_in(plan, start, count);
            }
            start = start.saturating_add(count);
        }
    }
    (layers, moe)
}

/// MoE layers among the `count` decoder layers from `start`, over the model's runs of one kind.
fn moe_layers_in(plan: &Plan, start: u64, count: u64) -> u64 {
    let end = start.saturating_add(count);
    let mut at = 0u64;
    let mut moe = 0u64;
    for (kind, n) in plan.model.layer_runs() {
        let run_end = at.saturating_add(n);
        if kind.ffn == Ffn::Moe {
            moe += run_end.min(end).saturating_sub(at.max(start));
        }
        at = run_end;
        if at >= end {
            break;
        }
    }
    moe
}
