//! The pipeline's slowest stage: which pipeline rank holds the most work, and how much more than an even share.
//!
//! The breakdown's even terms are per-GPU averages (the batch's work over every GPU). A pipeline runs at the pace of
//! its slowest stage: in 1F1B each microbatch passes every stage, so the steady state takes m × the slowest stage's
//! time per microbatch. A stage's work is its decoder layers (routed-expert GEMMs only on its MoE layers), plus the
//! vision encoder where the embedding is built, the output layer's logits where the loss is (the last chunk unless a
//! layout or the MTP placement says otherwise), and the MTP layers and their output layers where the MTP block is.
//!
//! The fill and drain are not the slowest stage's: the first microbatch reaches the slowest rank through one chunk of
//! each rank before it, and the last gradient leaves through one chunk of each rank after it, so the bubble is one
//! chunk (1/VPP of a rank's per-microbatch work) of every *other* rank: Σ_{r ≠ slowest} T_r / VPP. The last rank's
//! logits sit in its last virtual chunk, which is on the steady-state path (m times) but on neither end's path: with
//! VPP the bubble scales with the other ranks' chunks, neither with the slowest chunk nor with the slowest rank. With
//! even stages this is the familiar (PP − 1)/VPP of a stage's per-microbatch time.
// Source: Narayanan et al. 2021 §2.2 (1F1B: (m + p − 1)·t of equal stages; interleaved: bubble (p − 1)·(t_f + t_b)/v,
// i.e. p − 1 chunk times); megatron/core/pipeline_parallel/schedules.py forward_backward_pipelining_with_interleaving
// (rank r runs (p − r − 1)·2 + (v − 1)·N warm-up chunk forwards: the last rank's first forward waits for chunk 0 of the
// p − 1 ranks before it, and rank 0's last backward for chunk 0 of the p − 1 after it); megatron/core/models/gpt/
// gpt_model.py (embedding on pre_process, output layer and loss on post_process, MTP where mtp_on_this_rank);
// pipeline::Placement.

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

/// Scales on the even terms: the slowest rank's compute and per-layer terms (communication inside layers,
/// element-wise, routing, quantisation, launches, recompute), and the mean of the other ranks' (the bubble's base).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct StageScales {
    pub compute: f64,
    pub layer: f64,
    pub bubble_compute: f64,
    pub bubble_layer: f64,
}

impl StageScales {
    /// An even split (PP = 1, or nothing to place): every rank an even share.
    pub const EVEN: StageScales = StageScales { compute: 1.0, layer: 1.0, bubble_compute: 1.0, bubble_layer: 1.0 };
}

/// The slowest pipeline rank's work over an even share, and the other ranks' mean (see the module comment).
/// `ranks`: [`rank_layers_into`] of the same plan and derived sizes.
pub(super) fn slowest_stage(plan: &Plan, derived: &Derived, ranks: &[(u64, u64)], parts: &ComputeParts, layer_terms_s: f64) -> StageScales {
    let pp = derived.layers_per_chunk.len();
    if pp <= 1 || plan.parallelism.pp() as usize != pp {
        return StageScales::EVEN;
    }
    let m = &plan.model;
    let t = derived.kinds(m);
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
        return StageScales::EVEN;
    }
    // The logits: the main head (1 of the 1 + depths output layers flop_split counts) where the loss is, each MTP
    // depth's where the MTP block is.
    let main_logits = if has_mtp { parts.logits_s / (1.0 + depths) } else { parts.logits_s };
    let mtp_logits = parts.logits_s - main_logits;
    let per_layer = parts.layer_s / run_layers;
    let per_moe = if run_moe > 0.0 { parts.expert_s / run_moe } else { 0.0 };
    // (time, compute scale, layer scale) of each rank; the even terms are a 1/PP share of the pipeline's work.
    let rank_scales = |rank: usize| {
        let (layers, moe) = ranks.get(rank).copied().unwrap_or((0, 0));
        let rank = rank as u64;
        let (mut layers, mut moe) = (layers as f64, moe as f64);
        let mut compute = 0.0;
        if placement.embedding.pipeline_rank == rank {
            compute += parts.vision_s;
        }
        if placement.loss.pipeline_rank == rank {
            compute += main_logits;
        }
        if has_mtp && placement.mtp.is_some_and(|c| c.pipeline_rank == rank) {
            (layers, moe) = (layers + mtp_layers, moe + mtp_moe);
            compute += mtp_logits;
        }
        compute += per_layer * layers + per_moe * moe;
        let (cs, ls) = (pp as f64 * compute / compute_total, pp as f64 * layers / run_layers);
        (compute_total * cs + layer_terms_s * ls, cs, ls)
    };
    let mut slowest = (f64::NEG_INFINITY, 1.0, 1.0);
    let mut sum = (0.0, 0.0);
    for rank in 0..pp {
        let r = rank_scales(rank);
        sum = (sum.0 + r.1, sum.1 + r.2);
        if r.0 > slowest.0 {
            slowest = r;
        }
    }
    let others = (pp - 1) as f64;
    StageScales {
        compute: slowest.1,
        layer: slowest.2,
        bubble_compute: ((sum.0 - slowest.1) / others).max(0.0),
        bubble_layer: ((sum.1 - slowest.2) / others).max(0.0),
    }
}

/// Each pipeline rank's decoder layers and the MoE layers among them, `out[rank]`, from the chunks' layer counts:
/// chunks in model order run over the virtual ranks, each over the pipeline ranks (Megatron's interleaved order). One
/// pass over the chunks in that order beside one pass over the model's runs of one kind (both ascend): O(chunks + runs),
/// reusing `out`'s buffer (the layout search counts once per layout).
pub(super) fn rank_layers_into(plan: &Plan, derived: &Derived, out: &mut Vec<(u64, u64)>) {
    let chunks = &derived.layers_per_chunk;
    out.clear();
    out.resize(chunks.len(), (0, 0));
    let vpp = chunks.iter().map(Vec::len).max().unwrap_or(0);
    let mut runs = plan.model.layer_runs();
    // The run under the cursor and its first layer.
    let (mut run, mut at) = (runs.next(), 0u64);
    let mut start = 0u64;
    for v in 0..vpp {
        for (own, slot) in chunks.iter().zip(out.iter_mut()) {
            let Some(&count) = own.get(v) else { continue };
            let end = start.saturating_add(count);
            let mut moe = 0u64;
            // The runs that overlap [start, end): a run reaching past `end` stays under the cursor for the next chunk.
            while let Some((kind, n)) = run {
                let run_end = at.saturating_add(n);
                if kind.ffn == Ffn::Moe {
                    moe += run_end.min(end).saturating_sub(at.max(start));
                }
                if run_end > end {
                    break;
                }
                (run, at) = (runs.next(), run_end);
            }
            slot.0 += count;
            slot.1 += moe;
            start = end;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::rank_layers_into;
    use crate::model::Ffn;
    use serde_json::json;

    #[test]
    fn one_pass_rank_layers_match_a_layer_by_layer_count() {
        // Each rank's layers counted one layer at a time: walk the chunks in Megatron's interleaved order (virtual rank,
        // then pipeline rank) and ask the model for each layer's kind; the one-pass count over runs must agree.
        // DeepSeek-V3: 3 dense then 58 MoE layers (a 0/1 moe_layer_freq list), a lighter first stage; Llama 4 Maverick:
        // every other layer MoE (moe_layer_freq 2) under VPP; Qwen3-30B-A3B: all MoE, an even layout.
        for (model, nodes, par) in [
            ("deepseek-v3", 32, json!({"pipeline_model_parallel_size": 8, "num_layers_in_first_pipeline_stage": 5,
                                        "expert_model_parallel_size": 32, "expert_tensor_parallel_size": 1})),
            ("deepseek-v3", 32, json!({"pipeline_model_parallel_size": 4, "virtual_pipeline_model_parallel_size": 2,
                                        "pipeline_model_parallel_layout": "Et*8|t*8|t*8|t*8|t*8|t*8|t*8|t*5mL",
                                        "expert_model_parallel_size": 32, "expert_tensor_parallel_size": 1})),
            ("llama-4-maverick-17b-128e", 64, json!({"tensor_model_parallel_size": 8, "pipeline_model_parallel_size": 4,
                                                       "virtual_pipeline_model_parallel_size": 3, "expert_model_parallel_size": 16})),
            ("qwen3-30b-a3b", 4, json!({"pipeline_model_parallel_size": 4, "virtual_pipeline_model_parallel_size": 3,
                                         "expert_model_parallel_size": 8})),
        ] {
            let v = json!({"model": model, "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": nodes},
                           "training": {"seq_length": 4096, "global_batch_size": 1024}, "parallelism": par});
            let r = crate::plan_value(&v).expect("plan parses");
            let chunks = &r.derived.layers_per_chunk;
            assert!(chunks.len() > 1, "{model}: a pipeline to count");
            let mut want = vec![(0u64, 0u64); chunks.len()];
            let mut layer = 0u64;
            for v in 0..chunks.iter().map(Vec::len).max().unwrap_or(0) {
                for (rank, own) in chunks.iter().enumerate() {
                    for _ in 0..own.get(v).copied().unwrap_or(0) {
                        want[rank].0 += 1;
                        want[rank].1 += u64::from(r.plan.model.layer_kind(layer).ffn == Ffn::Moe);
                        layer += 1;
                    }
                }
            }
            let mut got = vec![(7, 7)];
            rank_layers_into(&r.plan, &r.derived, &mut got);
            assert_eq!(got, want, "{model} {par}");
            assert!(want.iter().any(|w| w.1 > 0) && want.iter().all(|w| w.0 > 0), "{model}: MoE layers on some rank, layers on every rank");
        }
    }
}
