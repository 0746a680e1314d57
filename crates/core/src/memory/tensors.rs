//! The single allocations of one stage: what one `Tried to allocate N` can be (the logits and their fp32 copy, one
//! layer's attention scores and saved activations, the MoE dispatch working set, a gradient or parameter bucket, a
//! layer's all-gathered parameters, the optimizer state, the CUDA-graph buffers), each sized by the same functions the
//! stage's terms are, with the phase it is allocated in and, where its size is linear in one plan value, that value.
//! `oom` matches a request against them.

use super::activations;
use super::shape::Shape;
use super::params::StageParams;
use super::run::Run;
use super::{StageMemory, TermKey};
use crate::derive::Derived;
use crate::model::Ffn;
use crate::plan::Plan;
use serde::{Deserialize, Serialize};

/// Which kind of tensor an allocation is: the culprit classes an out-of-memory explanation names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TensorKind {
    /// The loss's fp32 copy of the logits, kept as its softmax (and its gradient in place).
    LogitsFp32,
    /// The output layer's logits in the activation dtype, or their gradient.
    Logits,
    /// Unfused core attention's saved probabilities of one layer (b·heads/TP·s²).
    AttentionScores,
    /// One layer's saved activations for one microbatch.
    LayerActivations,
    MoeDispatch,
    /// One gradient bucket of the DDP buffer (reduce-scatter / all-reduce in backward).
    GradBucket,
    /// One parameter bucket all-gathered by the distributed optimizer, or a Megatron-FSDP unit's weights.
    ParamAllGather,
    OptimizerState,
    MasterWeights,
    GradCopies,
    CudaGraphs,
    /// A second copy of the stage's weights at once (all of them, or the routed experts'): a checkpoint's load or
    /// conversion, a LoRA merge, an export — an allocation the training step itself never makes.
    StageWeights,
}

/// A plan value the allocation's size is proportional to, for bounding it from a message's request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Lever {
    /// The plan value, in Megatron's name (`padded_vocab_size`, `micro_batch_size`).
    pub name: String,
    pub plan_value: u64,
    /// Bytes per unit of it (the allocation is `plan_value × bytes_per_unit`).
    pub bytes_per_unit: f64,
    /// What the size also rests on, in words ("micro-batch 4, seq 1,024, fp32").
    pub at: String,
    /// The step between values the plan can hold (a padded vocabulary: make_vocab_size_divisible_by · TP; else 1).
    pub step: u64,
}

/// One allocation a request can be.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tensor {
    pub kind: TensorKind,
    /// What it is, with its shape.
    pub label: String,
    pub bytes: u64,
    /// When it is allocated: forward, backward, optimizer step, first iteration.
    pub phase: String,
    /// The plan values its size is proportional to (each alone, the others held).
    pub levers: Vec<Lever>,
}

fn dtype(bytes: f64) -> &'static str {
    match bytes as u64 {
        4 => "fp32",
        1 => "1 B",
        _ => "16-bit",
    }
}

/// The allocations of stage `st` (its memory `sm`) under plan `p`.
pub fn tensors(p: &Plan, d: &Derived, st: &StageParams, sm: &StageMemory) -> Vec<Tensor> {
    let run = Run::of(p);
    let sh = Shape::of(p);
    let m = &p.model;
    let t = &p.training;
    let mbs = t.micro_batch_size.max(1);
    let seq = t.seq_length;
    let mb_lever = |bytes: f64, at: String| Lever { name: "micro_batch_size".into(), plan_value: mbs, bytes_per_unit: bytes / mbs as f64, at, step: 1 };
    let mut out = Vec::new();
    let mut push = |kind, label: String, bytes: f64, phase: &str, levers: Vec<Lever>| {
        if bytes >= 1.0 {
            out.push(Tensor { kind, label, bytes: bytes as u64, phase: phase.into(), levers });
        }
    };
    if st.output {
        let vocab = d.padded_vocab_size;
        let elements = activations::logits_elements(&sh, vocab);
        let tp = p.parallelism.tp().max(1);
        let step = m.make_vocab_size_divisible_by.max(1).saturating_mul(tp);
        for (kind, e, what, phase) in [
            (TensorKind::LogitsFp32, activations::logits_fp32_bytes(p), "the loss's fp32 copy of the logits (kept as the softmax, then the gradient)", "forward (loss)"),
            (TensorKind::Logits, run.act, "the logits in the activation dtype, or their gradient in backward", "forward (output layer) / backward"),
        ] {
            let bytes = elements * e;
            let levers = vec![
                Lever { name: "padded_vocab_size".into(), plan_value: vocab, bytes_per_unit: bytes / vocab.max(1) as f64, at: format!("micro-batch {mbs}, seq {seq}, {} logits", dtype(e)), step },
                mb_lever(bytes, format!("seq {seq}, padded vocabulary {vocab}, {} logits", dtype(e))),
            ];
            push(kind, format!("{what}: b·s·V/TP = {mbs}·{seq}·{vocab}/{tp} × {e} B"), bytes, phase, levers);
        }
    }
    let kinds = m.kinds();
    let table = kinds.totals.table.kinds();
    for (i, &kind) in table.iter().enumerate() {
        if st.counts.get(i) == 0 {
            continue;
        }
        if sh.scores_keys > 0.0 && kind.mixer.is_attention() {
            let heads = m.attention_shape(kind.mixer).num_attention_heads;
            let bytes = activations::score_elements(m, &sh, kind.mixer) * run.act;
            let lever = mb_lever(bytes, format!("seq {seq}, {heads} heads, {} scores", dtype(run.act)));
            let label = format!("one layer's attention scores (unfused): b·heads/TP·s² = {mbs}·{heads}/{}·{seq}² × {} B", p.parallelism.tp().max(1), run.act);
            push(TensorKind::AttentionScores, label, bytes, "forward (core attention)", vec![lever]);
        }
        let a = super::layer_activations(p, kind);
        let what = match kind.ffn {
            Ffn::Moe => "MoE layer",
            _ => "layer",
        };
        push(TensorKind::LayerActivations, format!("one {what}'s saved activations for one microbatch ({mbs}·{seq} tokens)"), a.full, "forward", Vec::new());
    }
    tensors_of_terms((p, d), &run, st, sm, &mut push);
    out
}

/// The allocations read off the stage's labelled terms (one formula each, in `memory`), and the buckets.
fn tensors_of_terms((p, d): (&Plan, &Derived), run: &Run, st: &StageParams, sm: &StageMemory, push: &mut impl FnMut(TensorKind, String, f64, &str, Vec<Lever>)) {
    let term = |k: TermKey| sm.terms.iter().find(|t| t.key == k);
    let s = &p.training.settings;
    // DDP buckets: bucket_size = max(4e7, 1e6 · DP) elements with overlap_grad_reduce, else one bucket of the whole
    // buffer (ML megatron/core/distributed/distributed_data_parallel.py l.130-137). First, so that where a bucket and a
    // stage total have one size (LoRA's fp32 grads and master weights of the same adapters) the bucket is named: the
    // grad buffer is one allocation (param_and_grad_buffer.py l.1184-1190, torch.zeros of the whole buffer), the
    // master weights and optimizer state one per parameter (optimizer/distrib_optimizer.py l.445).
    let trained = if run.peft { st.adapters } else { st.dense + st.experts };
    if trained > 0.0 {
        let dp = (d.data_parallel_size.max(1) * p.parallelism.cp().max(1)) as f64;
        let bucket = if s.overlap_grad_reduce { (4e7f64).max(1e6 * dp).min(trained) } else { trained };
        push(TensorKind::GradBucket, format!("one gradient bucket: {} elements × {} B", bucket as u64, run.grad), bucket * run.grad, "backward (gradient reduce)", Vec::new());
        if s.use_distributed_optimizer {
            push(TensorKind::ParamAllGather, format!("one parameter all-gather bucket: {} elements × {} B", bucket as u64, run.param), bucket * run.param, "forward (parameter all-gather)", Vec::new());
        }
    }
    largest_parameter_state((p, d), run, st, sm, push);
    for (key, kind, phase) in [
        (TermKey::OptimizerMoments, TensorKind::OptimizerState, "first optimizer step (state allocated lazily)"),
        (TermKey::MasterWeights, TensorKind::MasterWeights, "first iteration (optimizer set-up)"),
        (TermKey::Fp32GradCopies, TensorKind::GradCopies, "optimizer step"),
        (TermKey::CudaGraphBuffers, TensorKind::CudaGraphs, "first iteration (graph capture)"),
        (TermKey::AttentionScoresWorkingSet, TensorKind::AttentionScores, "forward (core attention)"),
    ] {
        if let Some(t) = term(key) {
            push(kind, t.label.to_string(), t.bytes as f64, phase, Vec::new());
        }
    }
    // The working sets are several allocations; a request is one of them. The MoE dispatcher's copies at one layer
    // (memory::moe::dispatcher_copies), and Megatron-FSDP's one unit (a layer) all-gathered, its weights and its grads
    // unsharded before the reduce-scatter (the term holds two units of each: memory/state.rs).
    if term(TermKey::MoeDispatchWorkingSet).is_some_and(|t| t.bytes > 0) {
        let (copy, gathered) = super::moe::dispatcher_copies(&p.model, p, run, &Shape::of(p));
        let phase = "forward / backward (token dispatch)";
        push(TensorKind::MoeDispatch, "one MoE layer's dispatched tokens, one copy (permuted, exchanged or sorted): T_r·h".into(), copy, phase, Vec::new());
        push(TensorKind::MoeDispatch, "one MoE layer's tokens gathered over the EP·ETP group (allgather dispatcher)".into(), gathered, phase, Vec::new());
    }
    // ms-swift #9403: 26.44 GiB asked on a Qwen3-235B LoRA stage, exactly its 47 layers' 16 local experts' bf16 weights
    // (47·16·3·4096·1536 × 2 B). In the parameter dtype, per GPU as the stage holds them.
    let copy = "a second copy at once (a checkpoint load or conversion, a LoRA merge, an export), not a training-step tensor";
    let outside = "outside the training step (load, conversion, merge, export)";
    if st.experts > 0.0 {
        push(TensorKind::StageWeights, format!("the stage's routed-expert weights: {:.2}B parameters × {} B — {copy}", st.experts / 1e9, run.param), st.experts * run.param, outside, Vec::new());
    }
    push(TensorKind::StageWeights, format!("the stage's weights: {:.2}B parameters × {} B — {copy}", (st.dense + st.experts) / 1e9, run.param), (st.dense + st.experts) * run.param, outside, Vec::new());
    if term(TermKey::FsdpUnshardedBuffers).is_some_and(|t| t.bytes > 0) {
        let unit = st.largest_layer;
        let phase = "forward / backward (unit all-gather)";
        if run.fsdp == Some(crate::settings::ShardingStrategy::OptimGradsParams) {
            push(TensorKind::ParamAllGather, format!("one Megatron-FSDP unit's all-gathered weights: {} parameters × {} B", unit as u64, run.param), unit * run.param, phase, Vec::new());
        }
        if run.param != run.grad || run.fsdp != Some(crate::settings::ShardingStrategy::OptimGradsParams) {
            push(TensorKind::GradBucket, format!("one Megatron-FSDP unit's unsharded gradients: {} × {} B", unit as u64, run.grad), unit * run.grad, "backward (before the reduce-scatter)", Vec::new());
        }
    }
}

/// The optimizer's largest single allocations on a stage holding the embedding (the first) or the output layer (the
/// last): that V/TP·h matrix's fp32 main copy and one of its moments. The optimizer allocates one tensor per parameter
/// (ML@d98e8a6 megatron/core/optimizer/distrib_optimizer.py l.417-451: each shard's clone().float();
/// optimizer/__init__.py init_state_fn l.591-600: zeros_like each main shard), so a request at the set-up or the first
/// step is one parameter's, not the stage's total. Under the distributed optimizer the shard is ⌈V/TP·h / DP·CP⌉ —
/// exact when the matrix fills its bucket, within a bucket's share when it shares one. Not under LoRA (frozen).
fn largest_parameter_state((p, d): (&Plan, &Derived), run: &Run, st: &StageParams, sm: &StageMemory, push: &mut impl FnMut(TensorKind, String, f64, &str, Vec<Lever>)) {
    // The last stage holds the output layer, or with tied embeddings and PP > 1 a copy of the word embedding.
    if run.peft || !(sm.pipeline_rank == 0 || st.output) {
        return;
    }
    let (master, _) = run.device_optimizer();
    let matrix = p.model.word_embedding_params(d.padded_vocab_size) as f64 / p.parallelism.tp().max(1) as f64;
    let shard = if run.sharded_optimizer { super::state::shards(run, d.data_parallel_size.max(1) * p.parallelism.cp().max(1), 1).0 } else { 1.0 };
    let elements = (matrix / shard).ceil();
    let what = if sm.pipeline_rank == 0 { "the word embedding" } else { "the output layer" };
    if master > 0.0 {
        push(TensorKind::MasterWeights, format!("{what}'s fp32 main copy: V/TP·h = {} elements × 4 B", elements as u64), elements * 4.0, "first iteration (optimizer set-up)", Vec::new());
    }
    if run.offload_path == super::run::OffloadPath::None {
        push(TensorKind::OptimizerState, format!("one optimizer moment of {what}: {} elements × {} B", elements as u64, run.moment), elements * run.moment, "first optimizer step (state allocated lazily)", Vec::new());
    }
}
