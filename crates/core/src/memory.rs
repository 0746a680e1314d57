//! Memory per GPU for every pipeline stage: parameters, gradients, optimizer states, activations, overheads.

use crate::model::{LayerKinds, ModelConfig};
use crate::pipeline::{self, StageSplit};
use crate::plan::{Plan, Precision, Recompute, RecomputeMethod};
use crate::derive::Derived;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StageMemory {
    pub pipeline_rank: u64,
    pub num_layers: u64,
    pub parameters_bytes: u64,
    pub gradients_bytes: u64,
    pub optimizer_bytes: u64,
    pub activations_bytes: u64,
    pub overhead_bytes: u64,
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
    /// The labelled parts of `overhead_bytes`.
    pub overhead: Overhead,
}

/// Memory that is neither model state nor saved activations, with the defaults stated.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Overhead {
    /// CUDA context, cuBLAS / cuDNN / Transformer Engine workspaces: a fixed 1 GiB.
    pub cuda_context_bytes: u64,
    /// NCCL communicator buffers: 128 MiB for each group kind of size > 1 the rank belongs to.
    pub nccl_bytes: u64,
    /// PyTorch caching-allocator fragmentation: 10% of the activations.
    pub allocator_bytes: u64,
    /// The recompute working set: one recomputed layer group's full activations during backward.
    pub recompute_transient_bytes: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryReport {
    pub stages: Vec<StageMemory>,
    pub peak_bytes: u64,
    pub gpu_memory_bytes: u64,
    pub fits: bool,
}

/// Per-parameter bytes (weight, gradient, optimizer state) under Megatron's Adam.
// Source: Megatron-LM docs/user-guide/features/dist_optimizer.md (bytes-per-parameter table) and
// megatron/training/theoretical_memory_usage.py: bf16 params with fp32 main grads: 18 B/param (2 weight + 4 grad +
// 4 fp32 main weight + 8 Adam moments), or 6 + 12/shard with the distributed optimizer; fp32 params and grads:
// 16 B/param (4 weight + 4 grad + 8 moments; the weights are the main weights), or 8 + 8/shard; fp16 params and
// grads: 20 B/param (2 weight + 2 grad + 4 fp32 main grad + 4 main weight + 8 moments), or 4 + 16/shard. FP8/FP4
// recipes keep bf16 weights and fp32 main grads and weights like bf16.
pub fn bytes_per_param(precision: Precision, distributed: bool, shard: u64) -> (f64, f64, f64) {
    let (weight, grad, state) = match precision {
        Precision::Fp32 => (4.0, 4.0, 8.0),
        Precision::Fp16 => (2.0, 2.0, 16.0),
        Precision::Bf16 | Precision::Fp8 | Precision::Fp4 => (2.0, 4.0, 12.0),
    };
    let optim = if distributed { state / shard.max(1) as f64 } else { state };
    (weight, grad, optim)
}

// Stated defaults of the overhead line (see [`Overhead`]).
const CUDA_CONTEXT_BYTES: f64 = (1u64 << 30) as f64;
// NCCL_BUFFSIZE is 4 MiB per channel and direction; 16 channels × 2 directions ≈ 128 MiB per communicator.
const NCCL_BYTES_PER_GROUP: f64 = (128u64 << 20) as f64;
const ALLOCATOR_FRACTION: f64 = 0.10;

/// Activation bytes per microbatch, split by where they live. All sizes are per GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LayerActivations {
    /// Everything one transformer layer saves for backward.
    pub full: f64,
    /// What a layer saves when full recompute checkpoints it: its input only.
    pub checkpointed: f64,
}

/// The shapes that set activation sizes on one GPU.
#[derive(Clone, Copy, Debug)]
struct Shape {
    /// Tokens of one microbatch on this CP rank: micro_batch_size · seq_length / CP.
    tokens: f64,
    tp: f64,
    /// Divisor of the tensors SP shards along the sequence (TP with sequence_parallel, else 1).
    sp: f64,
    etp: f64,
    /// Bytes per saved activation element (bf16 / fp16; fp32 training keeps 4).
    elem: f64,
    selective: bool,
}

impl Shape {
    fn of(p: &Plan) -> Shape {
        let par = &p.parallelism;
        let tp = par.tp().max(1) as f64;
        Shape {
            tokens: p.training.micro_batch_size as f64 * p.training.seq_length as f64 / par.cp().max(1) as f64,
            tp,
            sp: if par.sequence_parallel { tp } else { 1.0 },
            etp: par.etp().max(1) as f64,
            // FP8/FP4 recipes keep bf16 activations for backward; TE's extra low-precision copies are not counted.
            elem: if p.training.settings.precision == Precision::Fp32 { 4.0 } else { 2.0 },
            selective: p.training.settings.recompute_granularity == Recompute::Selective,
        }
    }
}

/// Saved activations of the attention block for one microbatch, in elements × bytes.
// Per-tensor accounting after Korthikanti et al. 2022 §4.1 (eq. 1), with flash attention (no s² scores saved,
// megatron/core/extensions/transformer_engine.py TEDotProductAttention) and hidden/attention dropout 0, as
// Megatron Bridge's recipes set it. GQA: K and V have num_query_groups heads.
fn attention_activations(m: &ModelConfig, sh: &Shape) -> f64 {
    let (t, h) = (sh.tokens, m.hidden_size as f64);
    let heads = m.num_attention_heads as f64;
    // Norm input and QKV input (the norm's output): sequence-sharded under SP.
    let mut elems = 2.0 * t * h / sh.sp;
    let (qk_dim, v_dim, kv_heads) = if m.multi_latent_attention {
        // MLA (multi_latent_attention.py): down-projection outputs, their norms' outputs (the up-projections' inputs).
        let q_latent = m.q_lora_rank.map_or(0.0, |r| 2.0 * r as f64);
        let kv_latent = 2.0 * m.kv_lora_rank as f64 + m.qk_pos_emb_head_dim as f64;
        elems += t * (q_latent + kv_latent) / sh.sp;
        ((m.qk_head_dim + m.qk_pos_emb_head_dim) as f64, m.v_head_dim as f64, heads)
    } else {
        (m.kv_channels as f64, m.kv_channels as f64, m.num_query_groups.max(1) as f64)
    };
    // Q, K, V saved by flash attention for its backward, split over TP by heads; with fewer KV heads than TP
    // ranks each rank keeps one (attention.py: num_query_groups_per_partition = 1 when groups < TP).
    let kv_per_rank = (kv_heads / sh.tp).max(1.0);
    elems += t * (heads * qk_dim / sh.tp + kv_per_rank * (qk_dim + v_dim));
    // Attention output O: saved by flash attention and as the output projection's input.
    elems += t * heads * v_dim / sh.tp;
    let mut bytes = elems * sh.elem;
    if !sh.selective {
        // Softmax log-sum-exp per head and token, fp32 (flash attention's backward); selective recompute of
        // core_attn (transformer_config.py recompute_modules default ["core_attn"]) recomputes it instead.
        bytes += t * heads / sh.tp * 4.0;
    }
    bytes
}

/// Saved activations of a dense (or shared-expert) MLP of width `ffn` for `tokens_factor` × the tokens.
// Korthikanti et al. 2022 eq. 1 MLP terms: fc1 input, fc1 output (2·ffn when gated: SwiGLU's gate and up halves),
// activation output (fc2 input); the fc1 input is the norm output, counted by the caller.
fn mlp_activations(m: &ModelConfig, sh: &Shape, ffn: u64) -> f64 {
    let ffn = ffn as f64;
    let fc1_out = if m.gated_linear_unit { 2.0 * ffn } else { ffn };
    sh.tokens * (fc1_out + ffn) / sh.tp * sh.elem
}

/// Saved activations of one layer and of its checkpointed form.
pub fn layer_activations(m: &ModelConfig, p: &Plan, moe: bool) -> LayerActivations {
    let sh = Shape::of(p);
    let (t, h) = (sh.tokens, m.hidden_size as f64);
    // The MLP block's norm input and norm output (fc1 / router input), sequence-sharded under SP.
    let mlp_norm = 2.0 * t * h / sh.sp * sh.elem;
    let mlp = if moe {
        let topk = m.moe_router_topk.max(1) as f64;
        let experts = m.num_experts().max(1) as f64;
        // Router logits and probabilities, fp32 (moe/router.py TopKRouter): per local token.
        let router = 2.0 * t / sh.sp * experts * 4.0;
        // Tokens reaching this rank's experts, balanced: each local token goes to topk experts, and the
        // dispatcher all-gathers them over the expert-TP group (moe/token_dispatcher.py MoEAlltoAllTokenDispatcher).
        let routed = t / sh.sp * topk * sh.etp;
        let ffn = m.moe_ffn() as f64;
        let fc1_out = if m.gated_linear_unit { 2.0 * ffn } else { ffn };
        // Permuted expert input, fc1 output and activation (split over ETP), and the expert output kept to
        // weight it by the router probabilities on unpermute (moe/moe_utils.py unpermute).
        let experts_saved = routed * (h + (fc1_out + ffn) / sh.etp) + t / sh.sp * topk * h;
        let shared = m.moe_shared_expert_intermediate_size.map_or(0.0, |f| mlp_activations(m, &sh, f));
        router + experts_saved * sh.elem + shared
    } else {
        mlp_activations(m, &sh, m.ffn_hidden_size)
    };
    LayerActivations {
        full: attention_activations(m, &sh) + mlp_norm + mlp,
        // Full recompute keeps only the layer's input (transformer_block.py _checkpointed_forward).
        checkpointed: t * h / sh.sp * sh.elem,
    }
}

/// Activations of the output side of the last stage for one microbatch: final norm, logits and cross-entropy.
// Final norm input and output (the output layer's input), bf16 logits and the fp32 softmax that
// tensor_parallel/cross_entropy.py _VocabParallelCrossEntropy saves, each split over TP by vocabulary.
fn output_activations(p: &Plan, vocab: u64) -> f64 {
    let sh = Shape::of(p);
    let (t, h) = (sh.tokens, p.model.hidden_size as f64);
    2.0 * t * h / sh.sp * sh.elem + t * vocab as f64 / sh.tp * (sh.elem + 4.0)
}

/// Activations one stage saves per microbatch, and the recompute working set, for `layers` (dense, moe) per chunk.
fn stage_activations(p: &Plan, dense: LayerActivations, moe: LayerActivations, chunks: &[(u64, u64)]) -> (f64, f64) {
    let t = &p.training;
    let mut saved = 0.0;
    let mut transient: f64 = 0.0;
    let largest = dense.full.max(moe.full);
    for &(n_dense, n_moe) in chunks {
        let layers = n_dense + n_moe;
        let full = n_dense as f64 * dense.full + n_moe as f64 * moe.full;
        if t.settings.recompute_granularity != Recompute::Full || layers == 0 {
            saved += full;
            continue;
        }
        let per_layer_full = full / layers as f64;
        let per_layer_ckpt = (n_dense as f64 * dense.checkpointed + n_moe as f64 * moe.checkpointed) / layers as f64;
        let n = t.settings.recompute_num_layers.unwrap_or(1).min(layers);
        match t.settings.recompute_method {
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
    (saved, transient)
}

/// Group kinds of size > 1 a rank belongs to: each holds an NCCL communicator.
fn communicators(p: &Plan, d: &Derived) -> u64 {
    let par = &p.parallelism;
    let moe = p.model.is_moe();
    let sizes = [
        par.tp(),
        par.cp(),
        d.data_parallel_size.saturating_mul(par.cp()),
        par.pp(),
        if moe { par.ep() } else { 1 },
        if moe { par.etp() } else { 1 },
        if moe { d.expert_data_parallel_size } else { 1 },
    ];
    sizes.iter().filter(|&&n| n > 1).count() as u64
}

/// Estimates memory for every stage.
pub fn estimate(p: &Plan, d: &Derived, split: &StageSplit) -> MemoryReport {
    let mut report = MemoryReport::default();
    estimate_into(p, d, &stage_params(p, d, split, &p.model.kinds()), &mut report);
    report
}

/// What one pipeline stage holds that the layout alone decides: its layers by kind in each virtual chunk and its
/// parameters per GPU. The same for every micro-batch size, recompute and optimizer choice of that layout.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StageParams {
    pub layers: u64,
    /// Parameters per GPU of the dense part (sharded over TP, or replicated) and of the routed experts (over EP·ETP).
    pub dense: f64,
    pub experts: f64,
    /// (dense layers, MoE layers) of each virtual chunk, in order.
    pub chunks: Vec<(u64, u64)>,
}

/// The parameters every stage of `split` holds under `p`'s layout; `kinds` is `p.model.kinds()`, counted once by
/// callers that size many layouts of one model.
pub fn stage_params(p: &Plan, d: &Derived, split: &StageSplit, kinds: &LayerKinds) -> Vec<StageParams> {
    let mut out = Vec::new();
    stage_params_into(p, d, split, kinds, &mut out);
    out
}

/// As [`stage_params`], into `out`, reusing its buffers (the layout search sizes thousands of layouts).
pub fn stage_params_into(p: &Plan, d: &Derived, split: &StageSplit, kinds: &LayerKinds, out: &mut Vec<StageParams>) {
    let par = &p.parallelism;
    let m = &p.model;
    let tp = par.tp().max(1) as f64;
    let expert_shard = (par.ep().max(1) * par.etp().max(1)) as f64;
    let vocab = d.padded_vocab_size;
    let last = split.stages.len().saturating_sub(1);
    // Rows of a learned position table: Megatron-LM builds max_position_embeddings (required, ≥ seq_length, in
    // megatron/training/arguments.py); Megatron Bridge's gpt_provider.py provide() passes max_sequence_length = seq_length.
    let position_rows = m.max_position_embeddings.unwrap_or(p.training.seq_length);
    // Layers of one kind have identical parameters (model.rs kind_params): per GPU, the TP-sharded part over TP plus
    // the replicated part, and the routed experts over EP·ETP.
    let per_gpu = |lp: &crate::model::LayerParams| (lp.tp_sharded as f64 / tp + lp.replicated as f64, lp.routed_experts as f64 / expert_shard);
    let per_kind = [per_gpu(&kinds.dense), per_gpu(&kinds.moe)];
    out.resize_with(split.stages.len(), StageParams::default);
    for ((rank, chunks), st) in split.stages.iter().enumerate().zip(out.iter_mut()) {
        st.chunks.clear();
        (st.layers, st.dense, st.experts) = (0, 0.0, 0.0);
        for c in chunks {
            let moe_layers = m.moe_layers_in(c.start, c.count).min(c.count);
            st.chunks.push((c.count - moe_layers, moe_layers));
            st.layers += c.count;
        }
        let n_moe: u64 = st.chunks.iter().map(|k| k.1).sum();
        for ((dense_per_layer, experts_per_layer), count) in [(per_kind[0], st.layers - n_moe), (per_kind[1], n_moe)] {
            st.dense += count as f64 * dense_per_layer;
            st.experts += count as f64 * experts_per_layer;
        }
        if rank == 0 {
            // Word embeddings split over TP by vocabulary; a learned position table is replicated on every TP rank.
            st.dense += m.word_embedding_params(vocab) as f64 / tp + m.position_embedding_params(position_rows) as f64;
        }
        if rank == last {
            // The final norm sits with the last decoder layer, on the last stage without a custom pipeline layout
            // (megatron/core/transformer/transformer_block.py has_final_layernorm_in_this_stage); replicated over TP.
            st.dense += m.final_norm_params() as f64;
            // The output layer; with tied embeddings and PP > 1 the last stage keeps its own copy
            // (megatron/core/models/common/language_module/language_module.py setup_embeddings_and_output_layer).
            if !m.share_embeddings_and_output_weights || par.pp() > 1 {
                st.dense += vocab as f64 * m.hidden_size as f64 / tp;
            }
            // With MTP the last stage builds its own LanguageModelEmbedding for the MTP inputs (gpt_model.py: built
            // when pre_process or mtp_process; language_module.py keeps it in sync with the first stage's). With
            // PP = 1 it is the first stage's. With tied weights its output_layer weight is still allocated
            // (skip_weight_param_allocation only when pre_process), so both copies are counted.
            if m.mtp_num_layers > 0 && par.pp() > 1 {
                st.dense += m.word_embedding_params(vocab) as f64 / tp + m.position_embedding_params(position_rows) as f64;
            }
            // MTP layers sit on the last stage (multi_token_prediction.py), each a full layer plus its projections.
            let (mtp_dense, mtp_experts) = per_gpu(&kinds.mtp);
            st.dense += m.mtp_num_layers as f64 * mtp_dense;
            st.experts += m.mtp_num_layers as f64 * mtp_experts;
        }
    }
}

/// As [`estimate`], from the stages' parameters ([`stage_params`] of the same layout), into `out`, reusing its
/// buffer (the layout search sizes thousands of candidates).
pub fn estimate_into(p: &Plan, d: &Derived, params: &[StageParams], out: &mut MemoryReport) {
    let par = &p.parallelism;
    let m = &p.model;
    let vocab = d.padded_vocab_size;
    let dense_act = layer_activations(m, p, false);
    let moe_act = if m.is_moe() { layer_activations(m, p, true) } else { dense_act };
    let dense_shard = d.data_parallel_size.max(1) * par.cp().max(1);
    let (precision, distributed) = (p.training.settings.precision, p.training.settings.use_distributed_optimizer);
    let (w, g, o_dense) = bytes_per_param(precision, distributed, dense_shard);
    let (_, _, o_expert) = bytes_per_param(precision, distributed, d.expert_data_parallel_size.max(1));
    let nccl = communicators(p, d) as f64 * NCCL_BYTES_PER_GROUP;
    let last = params.len().saturating_sub(1);
    // microbatch_group_size_per_vp_stage defaults to PP (megatron/core/model_parallel_config.py __post_init__).
    let group = par.microbatch_group_size_per_vp_stage.unwrap_or(par.pp());
    let mut stages = std::mem::take(&mut out.stages);
    stages.clear();
    for (rank, st) in params.iter().enumerate() {
        let (dense, experts) = (st.dense, st.experts);
        let (act, transient) = stage_activations(p, dense_act, moe_act, &st.chunks);
        let mut output_act = 0.0;
        if rank == last {
            let output = output_activations(p, vocab);
            // Each MTP module runs a layer like the last decoder layer (gpt_layer_specs.py get_gpt_mtp_block_spec:
            // spec.layer_specs[-1]), dense or MoE, then its own final norm and the shared output layer.
            let mtp_layer = if m.layer_is_moe(m.num_layers.saturating_sub(1)) { moe_act } else { dense_act };
            output_act = output + m.mtp_num_layers as f64 * (mtp_layer.full + output);
        }
        let in_flight = pipeline::microbatches_in_flight(par.pp(), par.vpp(), group, rank as u64, d.num_microbatches);
        // The output side lives in the last chunk only, whose forward the schedule follows with its backward.
        let output_flight = pipeline::last_chunk_in_flight(par.pp(), par.vpp(), group, d.num_microbatches) as f64;
        let activations = act * in_flight + output_act * output_flight;
        let act = act + output_act;
        let params = dense + experts;
        let overhead = Overhead {
            cuda_context_bytes: CUDA_CONTEXT_BYTES as u64,
            nccl_bytes: nccl as u64,
            allocator_bytes: (activations * ALLOCATOR_FRACTION) as u64,
            recompute_transient_bytes: transient as u64,
        };
        let overhead_bytes = overhead
            .cuda_context_bytes
            .saturating_add(overhead.nccl_bytes)
            .saturating_add(overhead.allocator_bytes)
            .saturating_add(overhead.recompute_transient_bytes);
        stages.push(StageMemory {
            pipeline_rank: rank as u64,
            num_layers: st.layers,
            parameters_bytes: (params * w) as u64,
            gradients_bytes: (params * g) as u64,
            optimizer_bytes: (dense * o_dense + experts * o_expert) as u64,
            activations_bytes: activations as u64,
            overhead_bytes,
            total_bytes: 0,
            dense_parameters: dense as u64,
            expert_parameters: experts as u64,
            activations_per_microbatch_bytes: act as u64,
            microbatches_in_flight: in_flight,
            output_activations_bytes: output_act as u64,
            overhead,
        });
    }
    for s in &mut stages {
        s.total_bytes = [s.parameters_bytes, s.gradients_bytes, s.optimizer_bytes, s.activations_bytes, s.overhead_bytes]
            .into_iter()
            .fold(0u64, u64::saturating_add);
    }
    let peak_bytes = stages.iter().map(|s| s.total_bytes).max().unwrap_or(0);
    let gpu_memory_bytes = p.gpu.memory_bytes();
    *out = MemoryReport { stages, peak_bytes, gpu_memory_bytes, fits: peak_bytes <= gpu_memory_bytes };
}
