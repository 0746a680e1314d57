//! Step-time and MFU estimate: model FLOPs as Megatron counts them, an achieved GEMM rate, the exposed part of each
//! parallel group's communication, the pipeline bubble and the optimizer step.
//!
//! Pure, deterministic, allocation-free and panic-free. The few free constants are fitted by
//! `cargo run --release -p meshplan-core --example calibrate` on published runs and embedded from
//! `data/perf_constants.json` (see docs/calibration.md).
//!
//! Conventions: `model_tflops_per_gpu` counts model FLOPs only (no recompute), as Megatron's reported TFLOP/s does;
//! `mfu` is that rate over the dense (no-sparsity) peak of the precision trained in (BF16 peak for bf16/fp16, FP8
//! peak for fp8, FP4 peak for fp4). Breakdown terms are the time each adds to the step (communication: the exposed,
//! non-overlapped part), so they sum to `step_time_s`.

use crate::layout::{GroupKind, MeshSizes, Meshes};
use crate::model::{Ffn, KindTotals, Mixer};
use crate::plan::{Plan, Precision, Recompute, RecomputeMethod};
use crate::derive::Derived;
use serde::{Deserialize, Serialize};

mod stages;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Breakdown {
    pub compute_s: f64,
    pub recompute_s: f64,
    pub tp_comm_s: f64,
    pub cp_comm_s: f64,
    pub ep_comm_s: f64,
    pub pp_comm_s: f64,
    pub dp_comm_s: f64,
    pub bubble_s: f64,
    pub optimizer_s: f64,
    /// MoE token permutation / unpermutation, router and routing imbalance (memory-bound work around the experts).
    #[serde(default)]
    pub moe_routing_s: f64,
    /// Element-wise, memory-bound kernels of every block (norms, residuals, activations, RoPE).
    #[serde(default)]
    pub memory_bound_s: f64,
    /// FP8 / NVFP4 quantisation, scaling and transposes of GEMM inputs.
    #[serde(default)]
    pub quantize_s: f64,
    /// Kernel-launch overhead not hidden by CUDA graphs.
    #[serde(default)]
    pub launch_s: f64,
}

/// The breakdown's terms in display order; communication terms are the exposed share.
pub const BREAKDOWN_TERMS: [&str; 13] = [
    "compute", "recompute", "TP comm", "CP comm", "EP comm", "PP comm", "DP comm", "bubble", "optimizer", "MoE routing",
    "memory-bound", "quantize", "launch",
];

impl Breakdown {
    /// Every term with its label from [`BREAKDOWN_TERMS`], in seconds; they sum to the step time.
    pub fn terms(&self) -> [(&'static str, f64); 13] {
        let t = [
            self.compute_s,
            self.recompute_s,
            self.tp_comm_s,
            self.cp_comm_s,
            self.ep_comm_s,
            self.pp_comm_s,
            self.dp_comm_s,
            self.bubble_s,
            self.optimizer_s,
            self.moe_routing_s,
            self.memory_bound_s,
            self.quantize_s,
            self.launch_s,
        ];
        std::array::from_fn(|i| (BREAKDOWN_TERMS[i], t[i]))
    }

    /// The sum of every term: the step time.
    pub fn total(&self) -> f64 {
        self.terms().iter().map(|t| t.1).sum()
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Performance {
    pub step_time_s: f64,
    pub tokens_per_s_per_gpu: f64,
    pub model_tflops_per_gpu: f64,
    pub mfu: f64,
    pub breakdown: Breakdown,
    pub model_flops_per_step: f64,
    pub gpu_hours_per_trillion_tokens: f64,
}

/// The fitted constants (data/perf_constants.json).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Constants {
    /// Achieved fraction of the dense BF16 peak for large GEMMs.
    pub bf16_efficiency: f64,
    /// Achieved fraction of the dense FP8/FP4 peak for large GEMMs (scaling, casts and amax reduce cost more).
    pub fp8_efficiency: f64,
    /// Per-GPU GEMM width (hidden / TP) at which the efficiency halves: eff · w / (w + w0).
    pub gemm_width_half: f64,
    /// Extra efficiency factor for MoE expert GEMMs. Fixed at 1, not fitted: the grouped-GEMM, routing, permutation
    /// and launch terms carry the MoE costs, and a free factor here trades off against the dense GEMM rate.
    pub moe_efficiency: f64,
    /// Fraction of link bandwidth collectives achieve.
    pub bandwidth_efficiency: f64,
    /// Exposed fraction of TP/SP collectives inside the NVLink domain (tp-comm-overlap hides the rest; across it: 1).
    pub tp_exposed: f64,
    /// Exposed fraction of the CP ring KV exchange (overlapped with attention of the previous chunk).
    pub cp_exposed: f64,
    /// Exposed fraction of EP dispatch/combine without overlap_moe_expert_parallel_comm. Fixed at 1, not fitted: the
    /// dispatchers run on the compute stream (token_dispatcher.py); the overlap setting and its bound price the rest.
    pub ep_exposed: f64,
    /// Exposed fraction of DP gradient reduce-scatter / param all-gather (overlap-grad-reduce/param-gather).
    pub dp_exposed: f64,
    /// Fixed per-step overhead in seconds (data loading, logging, launch latency).
    pub step_overhead_s: f64,
    /// HBM bytes moved per hidden element per local token per block by element-wise kernels, fwd + bwd. Fixed, not
    /// fitted: 75, from a kernel-by-kernel count (see `memory_bound_s`).
    #[serde(default)]
    pub elementwise_bytes: f64,
    /// HBM bytes moved per routed hidden element (token × top-k × h) by permute, unpermute and combine, fwd + bwd.
    #[serde(default)]
    pub permute_bytes: f64,
    /// Tokens per expert per micro-batch at which grouped-GEMM efficiency halves: m / (m + m0).
    #[serde(default)]
    pub expert_tokens_half: f64,
    /// Scale on the recipe's quantisation bytes per GEMM-input element (perf_assumptions.json).
    #[serde(default)]
    pub quantize_scale: f64,
    /// Seconds of un-graphed kernel launches per block per micro-batch, fwd + bwd.
    #[serde(default)]
    pub launch_s_per_block: f64,
    /// Launch cost of an MoE layer relative to a block.
    #[serde(default)]
    pub moe_launch_factor: f64,
    /// Exposed fraction of the steady-state pipeline send/receive under overlap_p2p_comm (the interleaved schedule
    /// posts them asynchronously beside the next chunk's compute; the fill and drain transfers stay exposed).
    #[serde(default)]
    pub pp_exposed: f64,
}

/// Values used when the embedded file cannot be read (tests check it can), and the fit's starting point: a fold of
/// the leave-one-group-out fit without any MoE run keeps the MoE values here, so they are physical first guesses.
pub const DEFAULT_CONSTANTS: Constants = Constants {
    bf16_efficiency: 0.65,
    fp8_efficiency: 0.45,
    gemm_width_half: 256.0,
    moe_efficiency: 1.0,
    bandwidth_efficiency: 0.7,
    tp_exposed: 0.3,
    cp_exposed: 0.2,
    // No overlap assumed for the EP dispatch/combine.
    ep_exposed: 1.0,
    dp_exposed: 0.1,
    step_overhead_s: 0.0,
    elementwise_bytes: 75.0,
    // The kernel count (perf_assumptions.json `moe_permute_bytes_full_iteration_graph`, 12 per activation byte), which a
    // full-iteration graph is charged; the fit starts from it.
    permute_bytes: COMPILED_ASSUMPTIONS.moe_permute_bytes_full_iteration_graph.value,
    // A grouped GEMM of m0 rows per expert reaches half the rate of a large one. DeepGEMM's first README (H800, FP8,
    // N 4096 / 7168, K 7168 / 2048): masked grouped layout 1233, 1040, 932 TFLOP/s at 1024, 512, 256 rows per group
    // against 1297 contiguous, i.e. m0 = m·(1297/rate − 1) ≈ 53, 128, 100; single GEMMs of 64-128 rows give 130-265.
    expert_tokens_half: 128.0,
    quantize_scale: 1.0,
    // ~100 kernels per block forward and backward at ~5 µs of host time each (assumption).
    launch_s_per_block: 0.0005,
    moe_launch_factor: 1.0,
    pp_exposed: 0.0,
};

// COMPILED_CONSTANTS and COMPILED_ASSUMPTIONS: data/perf_constants.json's `constants` and data/perf_assumptions.json's
// values as Rust constants, written by build.rs (tests/data_minified.rs checks them against serde's reading of the files).
include!(concat!(env!("OUT_DIR"), "/perf_data.rs"));

/// The embedded, fitted constants (data/perf_constants.json, compiled in by build.rs).
pub fn constants() -> &'static Constants {
    &COMPILED_CONSTANTS
}

/// The step-time model's median error on how two runs compare (data/perf_constants.json `median_abs_ratio_error`:
/// |predicted ratio / measured ratio − 1| over the calibration's pairs of runs of one model, GPU, precision, GPU count
/// and sequence length that differ in layout or batch): the band inside which the Advisor calls two layouts a tie.
pub fn tie_band() -> f64 {
    COMPILED_MEDIAN_ABS_RATIO_ERROR
}

/// FLOPs by kind, per global batch.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FlopSplit {
    /// Dense transformer GEMMs: attention projections, dense MLPs, shared experts, MTP projections.
    pub dense_gemm: f64,
    /// Routed-expert GEMMs.
    pub expert_gemm: f64,
    /// Attention scores and values (S² term); run in BF16 by FlashAttention / cuDNN even under FP8.
    pub attention_core: f64,
    /// Output-layer logits (kept in BF16 by Transformer Engine recipes).
    pub logits: f64,
    /// State-space work that is not a GEMM: Mamba-2's SSD scan, Gated DeltaNet's convolution and recurrence.
    pub ssm_scan: f64,
    /// Of `dense_gemm` and `attention_core`: the vision encoder's and its projector's share (image tokens).
    pub vision_encoder: f64,
}

impl FlopSplit {
    pub fn total(&self) -> f64 {
        self.dense_gemm + self.expert_gemm + self.attention_core + self.logits + self.ssm_scan
    }
}

/// Dense MLP widths summed over the layers run, decoder and MTP depths: each kind at its own width (heterogeneous
/// layers, Gemma 4's double-wide MLPs).
fn dense_width_sum(m: &crate::model::ModelConfig, kinds: &KindTotals) -> f64 {
    (kinds.table.kinds().iter().enumerate())
        .filter(|(_, k)| k.ffn == Ffn::Dense)
        .map(|(i, k)| m.dense_width(*k) as f64 * kinds.decoder.get(i).saturating_add(kinds.mtp.layers.get(i).saturating_mul(kinds.mtp.depths)) as f64)
        .sum()
}

/// Model FLOPs of one global batch, split by kind.
// Source: megatron/training/training.py `num_floating_point_operations` / `transformer_flops()`
// (research notes megatron-rules.md §3.1): T = B·s tokens, S₂ = B·s², factor 6 = 3 (fwd+bwd) × 2 (FMA).
pub fn flop_split(plan: &Plan, derived: &Derived) -> FlopSplit {
    let m = &plan.model;
    let s = plan.training.seq_length as f64;
    let b = derived.global_batch_size as f64;
    let t = b * s; // total_real_tokens_in_batch default
    let s2 = b * s * s; // seqlen_squared_sum_in_batch default
    let h = m.hidden_size as f64;
    let d = m.mtp_num_layers as f64;
    // Layers run per step by kind: the decoder's and each MTP depth's (GPT: a layer like the last decoder layer).
    let kinds = derived.kinds(m);
    let n_attn = kinds.run_where(|k| k.mixer.is_attention()) as f64;
    // Chunked attention (Llama 4) takes precedence over a window, as Megatron-LM's FLOPs count has it.
    let n_chunk = (m.chunked_attention_layers() as f64).min(n_attn);
    // MTP layers of the window kind (mtp_layer: Step-3.5's, whose layer_types entries are "sliding_attention") attend
    // through the window too (Megatron Bridge step35_provider.py Step35DecoderLayer, is_mtp_layer: layer_types[num_layers + i]).
    let mtp_window = (kinds.run_where(|k| k.mixer == Mixer::WindowAttention) - kinds.decoder_where(|k| k.mixer == Mixer::WindowAttention)) as f64;
    let n_window = if n_chunk > 0.0 { 0.0 } else { (m.window_attention_layers() as f64 + mtp_window).min(n_attn) };
    let chunk_pairs = m.chunk_attention_size.map_or(0.0, |c| b * crate::model::ModelConfig::chunk_pairs(s, c as f64));
    let n_mamba = kinds.run_where(|k| k.mixer == Mixer::Mamba) as f64;
    let n_gdn = kinds.run_where(|k| k.mixer == Mixer::GatedDeltaNet) as f64;
    let (_, v4_core) = dsv4_flops(m, &kinds, t, s);
    let (_, a_core) = attention_flops_per_token(m);
    let n_alt = kinds.run_where(|k| k.mixer == Mixer::WindowAttention) as f64;
    let alt_core = if n_alt > 0.0 { m.gqa_flops_per_token(Mixer::WindowAttention).1 - a_core } else { 0.0 };
    let v = derived.padded_vocab_size as f64;
    // Mamba-2 and Gated DeltaNet per token, forward (model.rs mamba_flops / gdn_flops); ×3 for forward and backward.
    let (_, mamba_scan) = m.mamba_flops();
    let (_, gdn_scan) = m.gdn_flops();
    let (vision_gemm, vision_core) = vision_flops(plan, derived);
    // DSA: the MLA attention of each layer attends to the indexer's top-k keys; the indexer's own GEMMs and scores.
    let (_, dsa_core) = dsa_indexer_flops(m, b, s);
    let full_pairs = match m.dsa() {
        Some((_, _, k)) => b * crate::model::keys_within(s, k as f64),
        None => s2,
    };
    let (layer_dense, layer_expert) = layer_gemm_flops(m, &kinds, b, s);
    FlopSplit {
        // The layers' GEMMs, MTP's projection (eh_proj, 2h → h) and norms, and Gemma 4's per-layer embeddings.
        dense_gemm: vision_gemm + layer_dense + t * (6.0 * d * (3.0 * h + 2.0 * h * h) + 6.0 * m.per_layer_embedding_macs()),
        expert_gemm: layer_expert,
        // Sliding-window layers attend to window_pairs(s) (query, key) pairs per sequence instead of s².
        attention_core: vision_core + v4_core + dsa_core * n_attn + a_core * (full_pairs * (n_attn - n_window - n_chunk) + b * m.window_pairs(s) * n_window + chunk_pairs * n_chunk)
            + alt_core * n_alt * b * m.window_pairs(s),
        // logits: the final head plus one per MTP depth.
        logits: t * 6.0 * h * v * (d + 1.0),
        ssm_scan: t * 3.0 * (mamba_scan * n_mamba + gdn_scan * n_gdn),
        vision_encoder: vision_gemm + vision_core,
    }
}

/// Attention FLOPs per token of the model's attention layers: (token-linear projections, per-token² core factor).
/// A_lin: the projections; A_core: per-token² scores, /2 causal, ×2 for QKᵀ and PV. DeepSeek-V4's hybrid attention is
/// counted per compress ratio instead (dsv4_flops): none here.
// Source: megatron/training/training.py transformer_flops (MLA: q_term, kv_lora_rank terms; GQA: model.rs).
fn attention_flops_per_token(m: &crate::model::ModelConfig) -> (f64, f64) {
    let h = m.hidden_size as f64;
    let a = m.num_attention_heads as f64;
    if m.is_dsv4() {
        (0.0, 0.0)
    } else if m.multi_latent_attention {
        let qk = (m.qk_head_dim + m.qk_pos_emb_head_dim) as f64;
        let q_term = match m.q_lora_rank {
            None => h * a * qk,
            Some(ql) => ql as f64 * (h + a * qk + 1.0),
        };
        let kvl = m.kv_lora_rank as f64;
        let lin = 6.0
            * (q_term
                + kvl * (h + a * (m.qk_head_dim + m.v_head_dim) as f64 + 1.0)
                + h * m.qk_pos_emb_head_dim as f64
                + a * m.v_head_dim as f64 * h);
        let core = 6.0 * (a * qk / 2.0 + a * m.v_head_dim as f64 / 2.0);
        (lin, core)
    } else {
        m.gqa_flops_per_token(Mixer::Attention)
    }
}

/// GEMM FLOPs of one global batch (`b` sequences of `s`) of the layers `kinds` counts: (dense, routed experts). Every
/// layer's projections, MLPs, shared experts, latent projections and Mamba / Gated DeltaNet GEMMs; the model's
/// embedding-side GEMMs (MTP's projection, per-layer embeddings, vision) are not layers' and are added by the caller.
// Source: megatron/training/training.py transformer_flops (as `flop_split`), per layer kind.
fn layer_gemm_flops(m: &crate::model::ModelConfig, kinds: &KindTotals, b: f64, s: f64) -> (f64, f64) {
    let t = b * s;
    let h = m.hidden_size as f64;
    // r = 3 for SwiGLU (gate, up, down), 2 otherwise.
    let r = if m.gated_linear_unit { 3.0 } else { 2.0 };
    let n_moe = kinds.run_where(|k| k.ffn == Ffn::Moe) as f64;
    let dense_widths = dense_width_sum(m, kinds);
    let n_attn = kinds.run_where(|k| k.mixer.is_attention()) as f64;
    let n_mamba = kinds.run_where(|k| k.mixer == Mixer::Mamba) as f64;
    let n_gdn = kinds.run_where(|k| k.mixer == Mixer::GatedDeltaNet) as f64;
    let fe = m.moe_ffn() as f64;
    let k = if m.is_moe() { m.moe_router_topk as f64 } else { 0.0 };
    let fs = m.moe_shared_expert_intermediate_size.unwrap_or(0) as f64;
    let (v4_gemm, _) = dsv4_flops(m, kinds, t, s);
    let (a_lin, _) = attention_flops_per_token(m);
    // Window layers with an attention shape of their own (sliding_attention_setting): their terms less the model's.
    let n_alt = kinds.run_where(|k| k.mixer == Mixer::WindowAttention) as f64;
    let (alt_lin, _) = m.gqa_flops_per_token(Mixer::WindowAttention);
    let alt_lin = if n_alt > 0.0 { (alt_lin - a_lin) * n_alt } else { 0.0 };
    let (mamba_gemm, _) = m.mamba_flops();
    let (gdn_gemm, _) = m.gdn_flops();
    let latent = m.moe_latent_size.unwrap_or(0) as f64;
    let (dsa_gemm, _) = dsa_indexer_flops(m, b, s);
    let dense = v4_gemm
        + dsa_gemm * n_attn
        + t * (6.0 * h * (dense_widths * r + fs * r * n_moe) + a_lin * n_attn + alt_lin + 3.0 * (mamba_gemm * n_mamba + gdn_gemm * n_gdn) + 6.0 * 2.0 * h * latent * n_moe);
    // Routed experts at the expert width: h, or ℓ for a latent MoE (training.py moe_layer_flops: 4·T·ℓ·f·k·(1.5
    // for SwiGLU) routed, + 4·T·h·ℓ for the latent projections, forward).
    (dense, t * 6.0 * m.expert_width() as f64 * fe * k * r * n_moe)
}

/// The decoder layers Megatron runs in BF16 under FP8 / FP4 (`first_last_layers_bf16`: the first
/// `num_layers_at_start_in_bf16` and the last `num_layers_at_end_in_bf16`), by kind; None when every layer is quantized.
// Source: megatron/core/fp8_utils.py:711 is_first_last_bf16_layer and fp4_utils.py:247 get_fp4_context (the same test
// on the global layer number; hybrid_block.py:347-352 numbers every hybrid layer).
fn bf16_layers(plan: &Plan) -> Option<KindTotals> {
    let st = &plan.training.settings;
    let edges = st.low_precision(&plan.gpu).bf16_edge_layers(st.precision.is_low());
    if edges == (0, 0) {
        return None;
    }
    let (m, kinds) = (&plan.model, plan.model.kinds());
    let decoder = kinds.edge_counts_in(0, m.num_layers, m.num_layers, edges);
    Some(KindTotals { table: kinds.totals.table, decoder, mtp: crate::model::Mtp::default() })
}

/// DeepSeek-V4's attention FLOPs per global batch of `t` tokens in sequences of `s`: (GEMMs, core attention with the
/// CSA indexer's scores), each hybrid-attention kind's layers run (decoder and MTP) at its per-token cost.
// Source: model/dsv4.rs dsv4_flops_per_token (training.py transformer_flops' terms for V4's projections, the keys each
// query attends to per compress ratio, and the indexer's scores).
fn dsv4_flops(m: &crate::model::ModelConfig, kinds: &KindTotals, t: f64, s: f64) -> (f64, f64) {
    if !m.is_dsv4() {
        return (0.0, 0.0);
    }
    let (mut gemm, mut core) = (0.0, 0.0);
    for (i, k) in kinds.table.kinds().iter().enumerate().filter(|(_, k)| k.mixer.is_dsv4()) {
        let n = kinds.decoder.get(i).saturating_add(kinds.mtp.layers.get(i).saturating_mul(kinds.mtp.depths)) as f64;
        let (g, c, scores) = m.dsv4_flops_per_token(k.mixer, s);
        gemm += t * g * n;
        core += t * (c + scores) * n;
    }
    (gemm, core)
}

/// The DSA indexer's FLOPs per attention layer and global batch of `b` sequences of `s` tokens, forward and backward
/// (×3): (GEMMs: linear_wq_b, linear_wk and linear_weights_proj per token; scores: per causal (query, key) pair each
/// head's q·k (heads·dim multiply-adds) and its weighting (heads), over s²/2 pairs a sequence).
// Source: megatron/core/transformer/experimental_attention_variant/dsa.py DSAIndexer.forward_before_topk and
// fused_qk_topk_naive (index scores [b, s, s] from q [s, b, heads, dim], k [s, b, dim] and weights [s, b, heads]);
// 2 FLOPs per multiply-add.
fn dsa_indexer_flops(m: &crate::model::ModelConfig, b: f64, s: f64) -> (f64, f64) {
    let Some((heads, dim, _)) = m.dsa() else { return (0.0, 0.0) };
    let (h, heads, dim) = (m.hidden_size as f64, heads as f64, dim as f64);
    let q_in = m.q_lora_rank.unwrap_or(m.hidden_size) as f64;
    let gemm = 3.0 * 2.0 * b * s * (q_in * heads * dim + h * dim + h * heads);
    let scores = 3.0 * 2.0 * (heads * dim + heads) * b * s * s / 2.0;
    (gemm, scores)
}

/// The vision encoder's FLOPs per global batch: (GEMMs, attention core), for `image_tokens_per_sample` image tokens of
/// `images_per_sample` images per sequence. A trained part runs forward and backward (×3); a frozen encoder forward only
/// (×1: its input needs no gradient); the projector forward, plus its input gradient when the encoder trains and its
/// weight gradient when it trains itself.
// Source: model/encoder.rs gemm_flops / attention_flops (2 FLOPs per multiply-add, bidirectional attention within an
// image); the ×3 of Megatron's transformer_flops for a trained block.
pub fn vision_flops(plan: &Plan, derived: &Derived) -> (f64, f64) {
    let Some(e) = &plan.model.vision_config else { return (0.0, 0.0) };
    let st = &plan.training.settings;
    let tokens = derived.global_batch_size as f64 * st.image_tokens_per_sample as f64;
    let patches = tokens * e.patches_per_token as f64;
    let per_image = st.image_tokens_per_sample as f64 * e.patches_per_token as f64 / st.images_per_sample.max(1) as f64;
    let (per_patch, per_token) = e.gemm_flops();
    let encoder = if st.freeze_vision_model { 1.0 } else { 3.0 };
    let projector = 1.0 + f64::from(u8::from(!st.freeze_vision_model)) + f64::from(u8::from(!st.freeze_vision_projection));
    (encoder * patches * per_patch + projector * tokens * per_token, encoder * patches * e.attention_flops(per_image))
}

/// Model FLOPs per step (one global batch) as Megatron's reported TFLOP/s counts them.
pub fn model_flops_per_step(plan: &Plan, derived: &Derived) -> f64 {
    flop_split(plan, derived).total()
}

/// What the model assumes where the GPU catalogue has no figure (data/perf_assumptions.json); not fitted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Assumptions {
    /// Dense TF32 tensor-core rate as a fraction of the dense BF16 rate (FP32 training runs its GEMMs in TF32).
    pub tf32_per_bf16: Assumed,
    /// Scale-up (NVLink) bandwidth in GB/s per GPU per direction for a GPU whose catalogue entry has none.
    pub scale_up_bw_gbps_when_unknown: Assumed,
    /// Scale-out (NIC) bandwidth in Gb/s per GPU for a GPU whose catalogue entry has none.
    pub scale_out_gbit_per_gpu_when_unknown: Assumed,
    /// Achieved fraction of the dense peak of a large GEMM for a GPU without a measured matmul rate in gpus.json.
    #[serde(default)]
    pub gemm_fraction_when_unmeasured: Assumed,
    /// Achieved NVFP4 GEMM rate relative to the tensorwise FP8 GEMM rate of the same shapes.
    #[serde(default)]
    pub nvfp4_gemm_per_tensorwise_fp8: Assumed,
    /// Achieved rate of block-scaled FP8 GEMMs (blockwise, MXFP8) relative to tensorwise FP8 GEMMs of the same shapes.
    #[serde(default)]
    pub fp8_blockwise_gemm_per_tensorwise: Assumed,
    #[serde(default)]
    pub mxfp8_gemm_per_tensorwise: Assumed,
    /// HBM bytes per GEMM-input element each recipe's quantisation, scaling and transposes move, fwd + bwd.
    #[serde(default)]
    pub quantize_bytes_per_tensor: Assumed,
    #[serde(default)]
    pub quantize_bytes_blockwise: Assumed,
    #[serde(default)]
    pub quantize_bytes_mxfp8: Assumed,
    #[serde(default)]
    pub quantize_bytes_nvfp4: Assumed,
    /// Share of a block's kernel launches a CUDA graph of the whole layer removes, and of each listed scope.
    #[serde(default)]
    pub cuda_graph_share_whole_layer: Assumed,
    #[serde(default)]
    pub cuda_graph_share_per_scope: Assumed,
    /// Achieved fraction of link bandwidth of the flex dispatcher (DeepEP / HybridEP kernels).
    #[serde(default)]
    pub flex_dispatcher_bandwidth_fraction: Assumed,
    /// Share of the EP all-to-all hidden by overlap_moe_expert_parallel_comm.
    #[serde(default)]
    pub ep_a2a_overlap_hidden: Assumed,
    /// HBM bytes per routed activation byte of the MoE permutation under a full-iteration CUDA graph (its kernel count).
    #[serde(default)]
    pub moe_permute_bytes_full_iteration_graph: Assumed,
    /// Host memory bandwidth per GPU (TB/s) of a CPU-offloaded optimizer step, and the host link (GB/s per GPU).
    #[serde(default)]
    pub host_optimizer_tbps_per_gpu: Assumed,
    #[serde(default)]
    pub host_link_gbps_per_gpu: Assumed,
    /// Fixed seconds per step of the context-parallel p2p ring (per attention layer and pass), and the HBM bytes its
    /// result merge moves per element, forward and backward.
    #[serde(default)]
    pub cp_ring_step_overhead_s: Assumed,
    #[serde(default)]
    pub cp_merge_bytes_fwd: Assumed,
    #[serde(default)]
    pub cp_merge_bytes_bwd: Assumed,
}

/// One assumed value and where it comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Assumed {
    pub value: f64,
}

/// The embedded assumptions (data/perf_assumptions.json, compiled in by build.rs: a file perf cannot read does not
/// build).
pub fn assumptions() -> &'static Assumptions {
    &COMPILED_ASSUMPTIONS
}

/// Dense peak FLOP/s of the precision trained in, and of BF16.
fn peaks(plan: &Plan) -> (f64, f64) {
    let g = &plan.gpu;
    let bf16 = g.dense_bf16_tflops.max(0.0) * 1e12;
    let p = match plan.training.settings.precision {
        // TF32 tensor cores: a fixed fraction of the BF16 rate (data/perf_assumptions.json).
        Precision::Fp32 => bf16 * assumptions().tf32_per_bf16.value,
        Precision::Fp16 | Precision::Bf16 => bf16,
        // A GPU without FP8/FP4 tensor cores (the rules flag the plan) is estimated at the next rate it has.
        Precision::Fp8 => g.dense_fp8_tflops.map_or(bf16, |x| x * 1e12),
        Precision::Fp4 => g.dense_fp4_tflops.or(g.dense_fp8_tflops).map_or(bf16, |x| x * 1e12),
    };
    (p, bf16)
}

/// Step-time estimate with the embedded constants.
pub fn estimate(plan: &Plan, derived: &Derived) -> Performance {
    estimate_with(plan, derived, constants())
}

fn finite(x: f64) -> f64 {
    if x.is_finite() { x } else { 0.0 }
}

/// BF16 activations.
const ACT_BYTES: f64 = 2.0;

/// Ring collectives move (n−1)/n of the buffer per rank.
// Source: Thakur, Rabenseifner & Gropp 2005 (ring reduce-scatter / all-gather: (n−1)/n · bytes per rank).
fn ring(n: f64) -> f64 {
    if n > 1.0 { (n - 1.0) / n } else { 0.0 }
}

/// The plan's sizes as the formulas use them.
struct Sizes {
    world: f64,
    tp: f64,
    pp: f64,
    cp: f64,
    ep: f64,
    etp: f64,
    vpp: f64,
    dp: f64,
    edp: f64,
    /// Microbatches per step.
    mb: f64,
    /// Sequence length and micro-batch size.
    s: f64,
    b: f64,
    h: f64,
    /// The MoE layers among the decoder layers.
    moe_layers: f64,
    /// Mixer and feed-forward blocks run per step (2 per GPT layer; 1 per hybrid `M`, `*`, `-`, `E` layer), and the
    /// attention layers among them (decoder and MTP).
    blocks: f64,
    attention_layers: f64,
    /// Elements per local token the Mamba-2 / Gated DeltaNet layers of one step move in their CP all-to-alls.
    ssm_cp_elements: f64,
    /// Passes over each layer: forward and backward, plus the recomputed forward with full recompute.
    fwd_passes: f64,
}

impl Sizes {
    fn of(plan: &Plan, derived: &Derived) -> Sizes {
        let par = &plan.parallelism;
        let m = &plan.model;
        let tr = &plan.training;
        let kinds = derived.kinds(m);
        let mixers = kinds.run_where(|k| k.mixer != Mixer::None) as f64;
        let ffns = kinds.run_where(|k| k.ffn != Ffn::None) as f64;
        // CP splits Mamba-2 and Gated DeltaNet heads by all-to-all: the in-projection's output before the
        // convolution and the mixer's output after it (ssm/mamba_context_parallel.py pre_conv_ssm / post_conv_ssm;
        // gated_delta_net a2a_cp_to_hp / hp_to_cp), per local token and split over TP.
        let (d, gn, heads) = (m.mamba_inner() as f64, m.mamba_groups() as f64 * m.mamba_state() as f64, m.mamba_heads() as f64);
        let (dk, dv, hk, hv, _) = m.gdn_dims();
        let (qk, v) = (dk as f64 * hk as f64, dv as f64 * hv as f64);
        let ssm_cp_elements = kinds.run_where(|k| k.mixer == Mixer::Mamba) as f64 * (2.0 * d + 2.0 * gn + heads + d)
            + kinds.run_where(|k| k.mixer == Mixer::GatedDeltaNet) as f64 * (2.0 * qk + 2.0 * v + 2.0 * hv as f64 + v);
        Sizes {
            world: derived.world_size.max(1) as f64,
            tp: par.tp() as f64,
            pp: par.pp() as f64,
            cp: par.cp() as f64,
            ep: par.ep() as f64,
            etp: par.etp() as f64,
            vpp: par.vpp() as f64,
            dp: derived.data_parallel_size.max(1) as f64,
            edp: derived.expert_data_parallel_size.max(1) as f64,
            mb: derived.num_microbatches.max(1) as f64,
            s: tr.seq_length as f64,
            b: tr.micro_batch_size as f64,
            h: m.hidden_size as f64,
            moe_layers: kinds.decoder_where(|k| k.ffn == Ffn::Moe) as f64,
            blocks: mixers + ffns,
            attention_layers: kinds.run_where(|k| k.mixer.is_attention()) as f64,
            ssm_cp_elements,
            fwd_passes: if tr.settings.recompute_granularity == Recompute::Full { 3.0 } else { 2.0 },
        }
    }
}

/// Seconds per step of each kind of GEMM work on one GPU, and the rates behind them.
struct Compute {
    dense_s: f64,
    expert_s: f64,
    core_s: f64,
    logits_s: f64,
    /// State-space scans, at the BF16 rate of the attention core (they are not FP8 GEMMs).
    ssm_s: f64,
    /// Of `dense_s` and `core_s`: the vision encoder's and projector's (built with the embedding).
    vision_s: f64,
    model_flops: f64,
    /// Dense peak of the training precision, FLOP/s.
    peak: f64,
}

impl Compute {
    fn total(&self) -> f64 {
        self.dense_s + self.expert_s + self.core_s + self.logits_s + self.ssm_s
    }
}

/// Achieved fraction of the dense peak of large GEMMs on this GPU: (training precision, BF16), from the catalogue's
/// measured matmul rate where it has one.
// Source: gpus.json measured_bf16/fp8_matmul_tflops over the dense peak (with their sources); block-scaled FP8, NVFP4
// and unmeasured GPUs: data/perf_assumptions.json (TE pre-quantized GEMM speedups on B300).
fn gemm_fraction(plan: &Plan) -> (f64, f64) {
    let g = &plan.gpu;
    let a = assumptions();
    let unmeasured = a.gemm_fraction_when_unmeasured.value;
    let frac = |measured: Option<f64>, peak: Option<f64>| match (measured, peak) {
        (Some(m), Some(p)) if p > 0.0 && m > 0.0 => (m / p).min(1.0),
        _ => unmeasured,
    };
    let bf16 = frac(g.measured_bf16_matmul_tflops, Some(g.dense_bf16_tflops));
    // The catalogue's FP8 figure is a tensorwise-scaled matmul (torch._scaled_mm); block-scaled recipes run their
    // GEMMs at a measured fraction of it (Transformer Engine's pre-quantized GEMM benchmark, perf_assumptions.json).
    let fp8 = frac(g.measured_fp8_matmul_tflops, g.dense_fp8_tflops);
    let lo = match plan.training.settings.precision {
        Precision::Fp8 => match plan.training.settings.low_precision(&plan.gpu).fp8_recipe {
            Some(crate::settings::Fp8Recipe::Blockwise) => fp8 * a.fp8_blockwise_gemm_per_tensorwise.value,
            Some(crate::settings::Fp8Recipe::Mxfp8) => fp8 * a.mxfp8_gemm_per_tensorwise.value,
            _ => fp8,
        },
        // NVFP4: a measured multiple of the FP8 rate, as a share of the FP4 peak (at most the FP8 share).
        Precision::Fp4 => match (g.dense_fp8_tflops, g.dense_fp4_tflops) {
            (Some(f8), Some(f4)) if f4 > 0.0 => (fp8 * a.nvfp4_gemm_per_tensorwise_fp8.value * f8 / f4).min(fp8),
            _ => fp8,
        },
        _ => bf16,
    };
    (lo, bf16)
}

/// SMs × tile width of the reference GPU the fitted `gemm_width_half` is stated for: H100 SXM, 132 SMs of 128-wide
/// wgmma tiles (gpus.json, with sources).
const REFERENCE_SM_TILE: f64 = 132.0 * 128.0;

/// The GEMM width w₀ at which this GPU reaches half its large-GEMM rate: the fitted w₀ (stated for the H100) × the
/// GPU's SMs × tensor-core tile width over the H100's. A GPU with more SMs and wider tiles needs wider GEMMs to give
/// every SM a full tile in each wave; a GPU without the figures is taken as the H100.
// Source: the CUTLASS tcgen05 MMA guide (a Blackwell CTA pair runs one MMA of M = 256, "doubling the tile size" of
// Hopper's two-warpgroup wgmma 128); SM counts in gpus.json.
fn gemm_width_half(plan: &Plan, c: &Constants) -> f64 {
    let g = &plan.gpu;
    let scale = match (g.sm_count, g.mma_tile_width) {
        (Some(n), Some(t)) if n > 0 && t > 0 => n as f64 * t as f64 / REFERENCE_SM_TILE,
        _ => 1.0,
    };
    c.gemm_width_half.max(0.0) * scale
}

/// Tokens one expert receives per micro-batch under balanced routing: the EP group's tokens × top-k over the experts.
// Source: Megatron-Core MoE (moe_utils permute: each token is copied to its top-k experts; EP ranks exchange them).
fn tokens_per_expert(plan: &Plan, sz: &Sizes) -> f64 {
    let m = &plan.model;
    let experts = m.num_experts().max(1) as f64;
    sz.s / sz.cp * sz.b * sz.ep * m.moe_router_topk as f64 / experts
}

/// The routed experts' width factor: w/(w+w0) at the expert's FFN width f/ETP, or, for a latent MoE, each of the two
/// expert GEMMs at its own output width — fc1 maps ℓ → f/ETP, fc2 maps f/ETP → ℓ, so fc2 is ℓ wide (1024 for
/// Nemotron 3 Super, narrower than its f = 2688) — weighted by its share of the expert FLOPs (fc1 2/3 with a gated
/// unit, else 1/2), as a time-weighted (harmonic) mean.
// Source: megatron/core/transformer/moe/experts.py l.219 / l.241 (fc1's input and fc2's output are moe_latent_size) and
// training.py moe_layer_flops (4·T·ℓ·f·k routed: the two GEMMs, ×1.5 on fc1's share for SwiGLU).
fn expert_width_factor(plan: &Plan, etp: f64, width: &dyn Fn(f64) -> f64) -> f64 {
    let m = &plan.model;
    let f = width(m.moe_ffn() as f64 / etp.max(1.0));
    match m.moe_latent_size.filter(|&l| l > 0) {
        Some(l) => {
            let fc1 = if m.gated_linear_unit { 2.0 / 3.0 } else { 0.5 };
            1.0 / (fc1 / f.max(1e-9) + (1.0 - fc1) / width(l as f64).max(1e-9))
        }
        None => f,
    }
}

/// Every GPU does 1/W of the batch's FLOPs (an even share: TP/CP/EP shard the work evenly; `estimate_with` scales it
/// to the slowest pipeline stage), at peak × the GPU's achieved GEMM fraction × fitted efficiency × w/(w+w0), w =
/// per-GPU GEMM width after TP (narrow GEMMs run slower); routed experts also × m/(m+m0), m = tokens per expert
/// (grouped GEMMs of few rows run slower), and take the busiest rank's share (routing imbalance).
fn compute(plan: &Plan, derived: &Derived, sz: &Sizes, c: &Constants) -> Compute {
    let fl = flop_split(plan, derived);
    let (peak, bf16_peak) = peaks(plan);
    let (frac_lo, frac_bf16) = gemm_fraction(plan);
    let low_precision = matches!(plan.training.settings.precision, Precision::Fp8 | Precision::Fp4);
    let w0 = gemm_width_half(plan, c);
    let width = |w: f64| w / (w + w0);
    let eff_hi = frac_bf16 * c.bf16_efficiency * width(sz.h / sz.tp);
    let eff_lo = if low_precision { frac_lo * c.fp8_efficiency * width(sz.h / sz.tp) } else { eff_hi };
    let gemm_rate = (peak * eff_lo).max(1.0);
    let bf16_rate = (bf16_peak * eff_hi).max(1.0);
    let m = tokens_per_expert(plan, sz);
    // An expert's rows fill tensor-core tiles of the GPU's tile width (M): a wider tile wastes more of a short group,
    // so the fitted m0 (stated for 128-row tiles) scales with it.
    // Source: gpus.json mma_tile_width (CUTLASS: Hopper wgmma 2 × m64 per CTA; Blackwell tcgen05 M = 256 per CTA pair).
    let tile = plan.gpu.mma_tile_width.filter(|&t| t > 0).map_or(1.0, |t| t as f64 / 128.0);
    let grouped = if m > 0.0 { m / (m + c.expert_tokens_half.max(0.0) * tile) } else { 1.0 };
    let expert_eff = if low_precision { frac_lo * c.fp8_efficiency } else { frac_bf16 * c.bf16_efficiency };
    let expert_shape = expert_width_factor(plan, sz.etp, &width) * grouped * c.moe_efficiency;
    let expert_rate = (peak * expert_eff * expert_shape).max(1.0);
    let imbalance = plan.training.settings.moe_routing_imbalance_factor.max(1.0);
    let (vision_gemm, vision_core) = vision_flops(plan, derived);
    // The layers Megatron keeps in BF16 under FP8 / FP4 (first_last_layers_bf16) run their GEMMs at the BF16 rate.
    let (bf16_dense, bf16_expert) =
        bf16_layers(plan).map_or((0.0, 0.0), |k| layer_gemm_flops(&plan.model, &k, derived.global_batch_size as f64, sz.s));
    let (bf16_dense, bf16_expert) = (bf16_dense.min(fl.dense_gemm), bf16_expert.min(fl.expert_gemm));
    let expert_bf16_rate = (bf16_peak * frac_bf16 * c.bf16_efficiency * expert_shape).max(1.0);
    Compute {
        vision_s: (vision_gemm / gemm_rate + vision_core / bf16_rate) / sz.world,
        dense_s: ((fl.dense_gemm - bf16_dense) / gemm_rate + bf16_dense / bf16_rate) / sz.world,
        expert_s: ((fl.expert_gemm - bf16_expert) / expert_rate + bf16_expert / expert_bf16_rate) / sz.world * imbalance,
        core_s: fl.attention_core / bf16_rate / sz.world,
        // The output layer is vocabulary-parallel: each GPU's GEMM is [tokens × h] · [h × V/TP], h unsplit, so its
        // narrow dimension is V/TP, not h/TP (megatron/core/models/gpt/gpt_model.py output_layer:
        // tensor_parallel.ColumnParallelLinear over the padded vocabulary; BF16, outside Transformer Engine's FP8).
        logits_s: fl.logits / (bf16_peak * frac_bf16 * c.bf16_efficiency * width(derived.padded_vocab_size as f64 / sz.tp)).max(1.0) / sz.world,
        ssm_s: fl.ssm_scan / bf16_rate / sz.world,
        model_flops: fl.total(),
        peak,
    }
}

/// HBM bytes/s of the GPU.
fn hbm(plan: &Plan) -> f64 {
    plan.gpu.hbm_bandwidth_tbps.max(0.01) * 1e12
}

/// Local tokens per micro-batch on one GPU: the sequence split over CP and, with sequence parallelism, over TP.
fn local_tokens(plan: &Plan, sz: &Sizes) -> f64 {
    sz.s / sz.cp * sz.b / if plan.parallelism.sequence_parallel { sz.tp } else { 1.0 }
}

/// Element-wise kernels (norms, residual adds, activations, RoPE, dropout) read and write the block's hidden
/// activations from HBM: `elementwise_bytes` per hidden element per local token per block, fwd + bwd (+ recomputed
/// fwd). 75 B by count: forward, attention block ≈ norm 4 + RoPE on q,k ≈ 4 + residual 6 + bias/dropout ≈ 6 → ~20 B;
/// MLP block ≈ norm 4 + SwiGLU (read 2f, write f at 2 B, f ≈ 3.5h → ~21) + residual 6 → ~31 B; mean ~25 B, and the
/// backward moves about twice the forward: ~75 B.
// Source: Korthikanti et al. 2022 §4.1 (the element-wise ops of a transformer layer and the bytes each keeps) — memory-
// bound at HBM bandwidth.
fn memory_bound_s(plan: &Plan, sz: &Sizes, c: &Constants) -> f64 {
    // Mamba-2 / Gated DeltaNet mixers also run their element-wise kernels (conv1d, SiLU, gating, gated norm) on the
    // in-projection's output and the mixer's output, `ssm_cp_elements` wide per token (split over TP), at the same
    // bytes per element.
    // Source: Mamba-2 (Dao & Gu 2024, §7 / mamba_ssm Mamba2 layer: conv1d over xBC, z-gated RMSNorm over d_inner).
    let width = sz.blocks / sz.pp * sz.h + sz.ssm_cp_elements / sz.tp / sz.pp;
    sz.mb * local_tokens(plan, sz) * width * c.elementwise_bytes.max(0.0) * sz.fwd_passes / 2.0 / hbm(plan)
}

/// MoE token permutation and unpermutation (each token copied to its top-k experts and combined back), the router's
/// scores (E per token, fp32) and the busiest rank's extra tokens (routing imbalance), memory-bound at HBM bandwidth.
/// The fitted `permute_bytes` (fitted on eager MoE runs) also stands for the host-bound gaps of the eager MoE path; under
/// a full-iteration CUDA graph the host issues nothing, so only the kernels' own traffic is charged
/// (perf_assumptions.json `moe_permute_bytes_full_iteration_graph`).
// Source: Megatron-Core moe_utils.py permute / unpermute and router.py (topk softmax over num_moe_experts logits).
fn moe_routing_s(plan: &Plan, sz: &Sizes, c: &Constants) -> f64 {
    let m = &plan.model;
    if !m.is_moe() {
        return 0.0;
    }
    let tokens = sz.s / sz.cp * sz.b / sz.tp.max(1.0);
    let imbalance = plan.training.settings.moe_routing_imbalance_factor.max(1.0);
    let bytes = if plan.training.settings.cuda_graph_impl == crate::settings::CudaGraphImpl::FullIteration {
        assumptions().moe_permute_bytes_full_iteration_graph.value
    } else {
        c.permute_bytes
    };
    let permute = m.moe_router_topk as f64 * m.expert_width() as f64 * ACT_BYTES * bytes.max(0.0) * imbalance;
    // Router: logits, softmax/sigmoid and top-k over E experts in fp32, read and written fwd + bwd (~3 passes × 4 B).
    let router = m.num_experts() as f64 * 4.0 * 3.0;
    sz.moe_layers / sz.pp * sz.mb * tokens * (permute + router) * sz.fwd_passes / 2.0 / hbm(plan)
}

/// FP8 / NVFP4: every GEMM input (activation fwd, output gradient and transposed copies bwd) is scaled and cast; the
/// recipe's bytes per element (data) × a fitted scale, memory-bound at HBM bandwidth. BF16: none.
// Source: Transformer Engine recipes (tensorwise amax + cast; blockwise 128-element scales; MXFP8 32-element E8M0
// scales in row and column layouts; NVFP4 16-element scales, random Hadamard transform on wgrad inputs).
fn quantize_s(plan: &Plan, sz: &Sizes, c: &Constants) -> f64 {
    let a = assumptions();
    let bytes = match plan.training.settings.precision {
        Precision::Fp4 => a.quantize_bytes_nvfp4.value,
        Precision::Fp8 => match plan.training.settings.low_precision(&plan.gpu).fp8_recipe {
            Some(crate::settings::Fp8Recipe::Blockwise) => a.quantize_bytes_blockwise.value,
            Some(crate::settings::Fp8Recipe::Mxfp8) => a.quantize_bytes_mxfp8.value,
            _ => a.quantize_bytes_per_tensor.value,
        },
        _ => return 0.0,
    };
    let m = &plan.model;
    // Inputs of the two GEMM groups per block (h wide) and of the routed experts (top-k copies, h and ffn wide).
    let per_token = sz.blocks / sz.pp * 2.0 * sz.h
        + if m.is_moe() { sz.moe_layers / sz.pp * m.moe_router_topk as f64 * (m.expert_width() + m.moe_ffn()) as f64 / sz.tp.max(1.0) } else { 0.0 };
    sz.mb * local_tokens(plan, sz) * per_token * bytes * c.quantize_scale.max(0.0) * sz.fwd_passes / 2.0 / hbm(plan)
}

/// Kernel launches: the host issues each block's kernels at a fitted cost per block per micro-batch (fwd + bwd; an
/// MoE layer costs `moe_launch_factor` times more: router, permutation and the dispatcher's token-count sync), less
/// the share CUDA graphs capture (whole layer, each listed scope, or the full iteration). Only what exceeds the
/// block's GPU time is exposed: long kernels hide the launches behind them.
// Source: Megatron-Core cuda_graphs.py / TE make_graphed_callables (graphed modules replay without per-kernel launch);
// token_dispatcher.py (the all-to-all dispatcher reads per-expert token counts to the host before its all-to-all).
fn launch_s(plan: &Plan, sz: &Sizes, c: &Constants, gpu_s: f64) -> f64 {
    use crate::settings::CudaGraphImpl;
    let st = &plan.training.settings;
    let a = assumptions();
    let graphed = match st.cuda_graph_impl {
        CudaGraphImpl::None => 0.0,
        CudaGraphImpl::FullIteration => 1.0,
        _ if st.cuda_graph_scope.is_empty() => a.cuda_graph_share_whole_layer.value,
        _ => (st.cuda_graph_scope.len() as f64 * a.cuda_graph_share_per_scope.value).min(a.cuda_graph_share_whole_layer.value),
    };
    let units = (sz.blocks / sz.pp + sz.moe_layers / sz.pp * c.moe_launch_factor.max(0.0)) * sz.mb;
    if units <= 0.0 {
        return 0.0;
    }
    let host = units * c.launch_s_per_block.max(0.0) * (1.0 - graphed).max(0.0) * sz.fwd_passes / 2.0;
    (host - gpu_s).max(0.0)
}

/// Forward is 1/3 of fwd+bwd: full recompute re-runs the forward of the recomputed layers (×4/3 on the layers);
/// selective recomputes the forward of each listed module: core_attn the attention core, mlp the dense MLP GEMMs,
/// moe the routed experts and their routing, shared_experts / mla_up_proj their GEMMs, moe_act / layernorm their
/// element-wise kernels.
// Source: Korthikanti et al. 2022 §5 (selective recompute of the attention core); Megatron-Core TransformerConfig
// recompute_modules (each listed module's forward re-runs in backward); full recompute = one more forward.
fn recompute_s(plan: &Plan, derived: &Derived, sz: &Sizes, comp: &Compute, side: (f64, f64)) -> f64 {
    use crate::settings::RecomputeModule as M;
    let tr = &plan.training;
    let (routing_s, memory_bound_s) = side;
    let layer_time = comp.dense_s + comp.expert_s + comp.core_s + comp.ssm_s;
    match tr.settings.recompute_granularity {
        Recompute::None => 0.0,
        Recompute::Selective => {
            let shares = dense_shares(plan, &derived.kinds(&plan.model));
            tr.settings.recompute_modules_run().iter().fold(0.0, |t, m| {
                t + match m {
                    M::CoreAttn => comp.core_s,
                    M::Mlp => comp.dense_s * shares.mlp,
                    M::Moe => comp.expert_s + routing_s,
                    M::SharedExperts => comp.dense_s * shares.shared,
                    M::MlaUpProj => comp.dense_s * shares.mla_up,
                    // Element-wise modules: their share of the element-wise traffic (one of ~4 kernels per block).
                    M::MoeAct | M::Layernorm => memory_bound_s / 4.0,
                    _ => 0.0,
                } / 3.0
            })
        }
        Recompute::Full => {
            let per_chunk = (plan.model.num_layers as f64 / (sz.pp * sz.vpp)).max(1.0);
            let share = match (tr.settings.recompute_method, tr.settings.recompute_num_layers) {
                (Some(RecomputeMethod::Block), Some(n)) => (n as f64 / per_chunk).min(1.0),
                _ => 1.0,
            };
            layer_time / 3.0 * share
        }
    }
}

/// Shares of the dense GEMM FLOPs that selective recompute modules re-run.
struct DenseShares {
    mlp: f64,
    shared: f64,
    mla_up: f64,
}

/// Per-token forward FLOPs of the dense MLPs, shared experts and MLA up-projections over all dense GEMM FLOPs.
// Source: the same per-token terms as flop_split (training.py transformer_flops): 2·h·f·r per MLP, MLA q/kv up-proj.
fn dense_shares(plan: &Plan, kinds: &KindTotals) -> DenseShares {
    let m = &plan.model;
    let h = m.hidden_size as f64;
    let r = if m.gated_linear_unit { 3.0 } else { 2.0 };
    let n_moe = kinds.run_where(|k| k.ffn == Ffn::Moe) as f64;
    let n_attn = kinds.run_where(|k| k.mixer.is_attention()) as f64;
    let a = m.num_attention_heads as f64;
    let mlp = h * dense_width_sum(m, kinds) * r;
    let shared = h * m.moe_shared_expert_intermediate_size.unwrap_or(0) as f64 * r * n_moe;
    let (attn, up) = if m.multi_latent_attention {
        let up = (m.q_lora_rank.unwrap_or(0) as f64 * a * (m.qk_head_dim + m.qk_pos_emb_head_dim) as f64
            + m.kv_lora_rank as f64 * a * (m.qk_head_dim + m.v_head_dim) as f64)
            * n_attn;
        (up + h * (m.kv_lora_rank + m.q_lora_rank.unwrap_or(0)) as f64 * n_attn + a * m.v_head_dim as f64 * h * n_attn, up)
    } else {
        // The GEMM FLOPs per token of each attention shape (model.rs gqa_flops_per_token, ÷6 back to multiply-adds).
        let n_alt = kinds.run_where(|k| k.mixer == Mixer::WindowAttention) as f64;
        let per = |mixer| m.gqa_flops_per_token(mixer).0 / 6.0;
        (per(Mixer::Attention) * (n_attn - n_alt) + per(Mixer::WindowAttention) * n_alt, 0.0)
    };
    let total = (mlp + shared + attn).max(1.0);
    DenseShares { mlp: mlp / total, shared: shared / total, mla_up: up / total }
}

/// The most links a [`StepLayout`] keeps (about 170 B each: under 1 MB); a search has a few hundred sets of sizes.
const KNOWN_LINKS: usize = 4096;

/// The link each group kind's collectives run on: NVLink when a group fits one NVLink domain, else the NIC.
#[derive(Clone, Copy)]
struct Links {
    meshes: Meshes,
    domain: u64,
    /// Achieved bytes/s per GPU per direction.
    scale_up: f64,
    scale_out: f64,
    /// [`Meshes::fits_domain`] of each group kind, in [`GroupKind::all`] order: counted once per layout.
    inside: [bool; 9],
}

impl Links {
    fn of(plan: &Plan, derived: &Derived, c: &Constants) -> Links {
        let par = &plan.parallelism;
        let sizes = MeshSizes { tp: par.tp(), pp: par.pp(), cp: par.cp(), ep: par.ep(), etp: par.etp() };
        let (dp, edp) = (derived.data_parallel_size.max(1), derived.expert_data_parallel_size.max(1));
        // An order Megatron refuses (the rules report it) is estimated on Megatron's default order.
        let meshes = Meshes::with_data_parallel(&sizes, dp, edp, &par.order).unwrap_or_else(|_| Meshes::default_order(&sizes, dp, edp));
        let a = assumptions();
        let up = plan.gpu.scale_up_bw_gbps.unwrap_or(a.scale_up_bw_gbps_when_unknown.value);
        let out = plan.gpu.scale_out_gbit_per_gpu.unwrap_or(a.scale_out_gbit_per_gpu_when_unknown.value);
        let domain = plan.cluster.nvlink_domain_size;
        let inside = GroupKind::all().map(|kind| meshes.fits_domain(kind, domain));
        Links {
            meshes,
            domain,
            scale_up: up * 1e9 * c.bandwidth_efficiency, // GB/s per direction
            scale_out: out / 8.0 * 1e9 * c.bandwidth_efficiency, // Gb/s → B/s
            inside,
        }
    }

    /// Whether the groups of `kind` fit one NVLink domain ([`Meshes::fits_domain`]).
    fn inside(&self, kind: GroupKind) -> bool {
        // GroupKind::all() lists the kinds in declaration order.
        self.inside.get(kind as usize).copied().unwrap_or_else(|| self.meshes.fits_domain(kind, self.domain))
    }

    fn bandwidth(&self, kind: GroupKind) -> f64 {
        if self.inside(kind) { self.scale_up } else { self.scale_out }
    }
}

/// What the step time reads of a layout alone, which no micro-batch, recompute, optimizer or dispatcher choice
/// changes: the link each group kind runs on and each pipeline rank's decoder and MoE layers. [`estimate`] builds its
/// own; the layout search builds one per layout ([`StepLayout::refresh`]) and estimates every candidate of that layout
/// with it ([`estimate_for`]).
pub struct StepLayout {
    links: Links,
    ranks: Vec<(u64, u64)>,
}

/// The links [`StepLayout::refresh`] built for layouts of one plan, by the sizes they were built for (TP, PP, CP, EP,
/// ETP, DP, expert DP): the search's layouts of one set of sizes differ in their split, SP and micro-batch only.
#[derive(Default)]
pub struct KnownLinks(std::collections::BTreeMap<[u64; 7], Links>);

impl StepLayout {
    /// The layout of `plan` with `derived`'s sizes, under the embedded constants.
    pub fn of(plan: &Plan, derived: &Derived) -> StepLayout {
        StepLayout::with(plan, derived, constants())
    }

    fn with(plan: &Plan, derived: &Derived, c: &Constants) -> StepLayout {
        let mut ranks = Vec::new();
        stages::rank_layers_into(plan, derived, &mut ranks);
        StepLayout { links: Links::of(plan, derived, c), ranks }
    }

    /// As [`StepLayout::of`] for another layout of the same plan (its order, GPU and cluster), into `self`, reusing its
    /// buffer and the links `known` holds for an earlier layout with the same parallel sizes.
    pub fn refresh(&mut self, plan: &Plan, derived: &Derived, known: &mut KnownLinks) {
        stages::rank_layers_into(plan, derived, &mut self.ranks);
        let par = &plan.parallelism;
        let key = [par.tp(), par.pp(), par.cp(), par.ep(), par.etp(), derived.data_parallel_size, derived.expert_data_parallel_size];
        self.links = match known.0.get(&key) {
            Some(links) => *links,
            None => {
                let links = Links::of(plan, derived, constants());
                // Bounded by the search's layouts; kept small all the same.
                if known.0.len() >= KNOWN_LINKS {
                    known.0.clear();
                }
                known.0.insert(key, links);
                links
            }
        };
    }
}

/// TP/SP: per layer, attention and MLP each all-gather + reduce-scatter (or all-reduce) the s/cp·b·h activation:
/// ring 2(n−1)/n·bytes/bw, in forward and again in backward (and in the recomputed forward). tp-comm-overlap
/// (Transformer Engine userbuffers) pipelines TP collectives with GEMMs only over NVLink; a TP group that leaves the
/// NVLink domain is fully exposed.
// Source: Korthikanti et al. 2022, sequence parallelism (all-gather + reduce-scatter per transformer block, fwd and bwd).
fn tp_comm_s(sz: &Sizes, links: &Links, c: &Constants, overlap: bool) -> f64 {
    let tp_bytes = sz.s / sz.cp * sz.b * sz.h * ACT_BYTES;
    let tp_blocks = sz.blocks / sz.pp - if sz.etp < sz.tp { sz.moe_layers / sz.pp } else { 0.0 };
    let tp_raw = tp_blocks * sz.fwd_passes * 2.0 * ring(sz.tp) * tp_bytes / links.bandwidth(GroupKind::Tp) * sz.mb;
    // tp_comm_overlap (Transformer Engine userbuffers) hides part of it inside the NVLink domain only.
    tp_raw * if links.inside(GroupKind::Tp) && overlap { c.tp_exposed } else { 1.0 }
}

/// CP by `cp_comm_type`, per attention layer: p2p exchanges K and V of the local s/cp chunk in (cp−1) ring steps
/// forward, dK and dV back (×2), overlapped with attention (cp_exposed); all_gather gathers the same K,V volume before
/// attention and reduce-scatters their gradients, not overlapped; a2a (Ulysses) all-to-alls Q, K, V and the output
/// ((n−1)/n of each, forward and backward), not overlapped; a2a+p2p is charged as p2p (its ring runs between the a2a
/// groups). Mamba-2 / Gated DeltaNet layers all-to-all before and after the mixer in every pass.
// Source: Megatron-Core TransformerConfig.cp_comm_type docstring (p2p async and overlapped; all_gather not async,
// cannot be overlapped; a2a like DeepSpeed Ulysses); Transformer Engine attention context parallelism.
fn cp_comm_s(plan: &Plan, sz: &Sizes, links: &Links, c: &Constants) -> f64 {
    use crate::settings::CpCommType;
    if sz.cp <= 1.0 {
        return 0.0;
    }
    let m = &plan.model;
    let kv_width = if m.multi_latent_attention {
        m.num_attention_heads as f64 * (m.qk_head_dim + m.qk_pos_emb_head_dim + m.v_head_dim) as f64
    } else {
        2.0 * m.num_query_groups as f64 * m.kv_channels as f64
    } / sz.tp;
    let chunk = sz.s / sz.cp * sz.b * ACT_BYTES / links.bandwidth(GroupKind::Cp) * sz.mb;
    let per_layer = sz.attention_layers / sz.pp;
    let attention = match plan.training.settings.cp_comm_type.unwrap_or(CpCommType::P2p) {
        CpCommType::P2p | CpCommType::A2aP2p => per_layer * (sz.fwd_passes - 1.0 + 2.0) * (sz.cp - 1.0) * kv_width * chunk * c.cp_exposed,
        CpCommType::AllGather => per_layer * (sz.fwd_passes - 1.0 + 2.0) * (sz.cp - 1.0) * kv_width * chunk,
        CpCommType::A2a => {
            let q_width = m.num_attention_heads as f64 * m.kv_channels as f64 / sz.tp;
            per_layer * sz.fwd_passes * ring(sz.cp) * (2.0 * q_width + kv_width) * chunk
        }
    };
    let ring_steps = match plan.training.settings.cp_comm_type.unwrap_or(CpCommType::P2p) {
        CpCommType::P2p | CpCommType::A2aP2p => cp_ring_steps_s(plan, sz, kv_width),
        _ => 0.0,
    };
    attention + ring_steps + sz.ssm_cp_elements / sz.tp / sz.pp * sz.fwd_passes * ring(sz.cp) * chunk * c.cp_exposed
}

/// What the p2p ring costs besides its transfer: attention runs as CP steps per layer and pass (each rank's s/CP tokens,
/// load-balanced as 2·CP chunks, against one peer's K,V per step), and each step pays a fixed cost (its attention
/// kernels, the send/receive pair and the stream syncs that order them: `cp_ring_step_overhead_s`, an assumption),
/// and each step after the first merges its partial result into the running one, memory-bound: forward, the output
/// (read the step's BF16 output and the FP32 accumulator, write the accumulator, `cp_merge_bytes_fwd` per Q element);
/// backward, dQ and dK,dV accumulate in FP32 (`cp_merge_bytes_bwd` per Q and K,V element).
// Source: Transformer Engine attention/dot_product_attention/context_parallel.py AttnFuncWithCPAndKVP2P (cp steps
// per call, send_recv of K,V per step on a side stream, flash_attn_fwd_out_correction / softmax_lse correction per
// step, dq and dkv accumulated in FP32); Megatron-Core context_parallel docs (2·CP chunks for load balance).
fn cp_ring_steps_s(plan: &Plan, sz: &Sizes, kv_width: f64) -> f64 {
    let a = assumptions();
    let m = &plan.model;
    let q_width = m.num_attention_heads as f64 * m.kv_channels as f64 / sz.tp;
    let tokens = sz.s / sz.cp * sz.b;
    let merges = sz.cp - 1.0;
    let fwd = sz.cp * a.cp_ring_step_overhead_s.value + merges * tokens * q_width * a.cp_merge_bytes_fwd.value / hbm(plan);
    let bwd = sz.cp * a.cp_ring_step_overhead_s.value + merges * tokens * (q_width + kv_width) * a.cp_merge_bytes_bwd.value / hbm(plan);
    sz.attention_layers / sz.pp * sz.mb * ((sz.fwd_passes - 1.0) * fwd + bwd)
}

/// EP: dispatch + combine of each MoE layer, forward and backward (and the recomputed forward), priced by link: the
/// EP group spans `N` NVLink domains ([`Meshes::domains_per_group`], 72 GPUs on GB200/GB300 NVL72, 8 on HGX); a rank's
/// traffic to the other domains crosses its NIC, to the rest of its own domain NVLink, both at once (the slower
/// sets the time). Volume per local token (h × 2 B each):
/// - allgather: every token of the n − 1 other ranks (n − n/N of them in other domains);
/// - alltoall: top-k copies, one per chosen expert, sent to its rank: (1 − 1/N)·k leave the domain, (1/N − 1/n)·k
///   stay in it (no deduplication);
/// - flex (DeepEP / HybridEP): each token once per distinct rank and once per distinct remote domain among its top-k
///   experts (`distinct`), at the kernels' measured bandwidth (data).
///
/// Exposed: all of it (`ep_exposed`, 1: the dispatcher runs on the compute stream), less, with
/// `overlap_moe_expert_parallel_comm`, what the other micro-batch's compute can hide: at most the assumed share
/// (warm-up and flush micro-batches do not overlap) and never more than that compute (`gpu_s`).
// Source: Megatron-Core token_dispatcher.py (MoEAllGatherTokenDispatcher gathers every EP rank's tokens;
// MoEAlltoAllTokenDispatcher permutes top-k copies and all-to-alls them; MoEFlexTokenDispatcher hands the routing map to
// DeepEP / HybridEP); DeepEP buffer.get_dispatch_layout (num_tokens_per_rank, num_tokens_per_rdma_rank: a token is
// sent once per rank and once per RDMA node) and its README (intranode via NVLink, internode RDMA then NVLink
// forwarding); Megatron-Core combined_1f1b.py (EP A2A overlap with another micro-batch's compute).
fn ep_comm_s(plan: &Plan, sz: &Sizes, links: &Links, c: &Constants, gpu_s: f64) -> f64 {
    use crate::settings::DispatcherType;
    let m = &plan.model;
    let st = &plan.training.settings;
    if !(sz.ep > 1.0 && m.is_moe()) {
        return 0.0;
    }
    let n = sz.ep;
    let domains = (links.meshes.domains_per_group(GroupKind::Ep, links.domain) as f64).clamp(1.0, n);
    let k = m.moe_router_topk as f64;
    let experts = m.num_experts().max(1) as f64;
    // (copies to other domains, copies to other ranks of this domain) per local token.
    let (inter, intra) = match st.moe_token_dispatcher_type {
        DispatcherType::Allgather => (n - n / domains, n / domains - 1.0),
        DispatcherType::Alltoall => (k * (1.0 - 1.0 / domains), k * (1.0 / domains - 1.0 / n)),
        DispatcherType::Flex => (
            (domains - 1.0) * distinct(experts, experts / domains, m.moe_router_topk),
            (n / domains - 1.0) * distinct(experts, experts / n, m.moe_router_topk),
        ),
    };
    let a = assumptions();
    let (mut up, mut out) = (links.scale_up, links.scale_out);
    if st.moe_token_dispatcher_type == DispatcherType::Flex && c.bandwidth_efficiency > 0.0 {
        let f = a.flex_dispatcher_bandwidth_fraction.value / c.bandwidth_efficiency;
        (up, out) = (up * f, out * f);
    }
    let bytes = (sz.s / sz.cp * sz.b / sz.tp) * m.expert_width() as f64 * ACT_BYTES;
    let one = (inter * bytes / out.max(1.0)).max(intra.max(0.0) * bytes / up.max(1.0));
    let raw = (sz.moe_layers / sz.pp) * sz.fwd_passes * 2.0 * one * sz.mb * c.ep_exposed;
    if !st.overlap_moe_expert_parallel_comm {
        return raw;
    }
    raw - (raw * a.ep_a2a_overlap_hidden.value.clamp(0.0, 1.0)).min(gpu_s.max(0.0))
}

/// The chance that a token's top-k experts, drawn without repeats from `experts`, include at least one of a given
/// `share` of them (a rank's or a domain's experts): 1 − C(E − e, k) / C(E, k).
// Source: the hypergeometric distribution (balanced routing: each expert equally likely, as the Bridge benchmarks force
// with moe_router_force_load_balancing).
fn distinct(experts: f64, share: f64, k: u64) -> f64 {
    let mut none = 1.0;
    for i in 0..k.min(experts as u64) {
        let i = i as f64;
        none *= ((experts - share - i) / (experts - i)).max(0.0);
    }
    1.0 - none
}

/// PP: each stage boundary sends one s/cp·b·h activation forward and its gradient back per microbatch per chunk
/// (with SP, the TP ranks each send 1/TP of it). The 1F1B schedule's blocking exchanges are exposed; the interleaved
/// schedule with overlap_p2p_comm posts them beside the next chunk's compute, so only the fill's and the drain's
/// PP − 1 transfers each stay on the critical path, plus `pp_exposed` of the rest (fitted: NCCL's SMs and links shared).
// Source: Narayanan et al. 2021 (point-to-point activations and gradients between stages, per microbatch); Megatron-Core
// pipeline_parallel/schedules.py forward_backward_pipelining_with_interleaving (overlap_p2p_comm: async send/recv
// waited before the dependent chunk).
fn pp_comm_s(plan: &Plan, sz: &Sizes, links: &Links, c: &Constants) -> f64 {
    if sz.pp > 1.0 {
        let bytes = sz.s / sz.cp * sz.b * sz.h * ACT_BYTES / if plan.parallelism.sequence_parallel { sz.tp } else { 1.0 };
        let one = bytes / links.bandwidth(GroupKind::Pp);
        if plan.parallelism.p2p_overlapped() {
            let fill = 2.0 * (sz.pp - 1.0);
            (fill + c.pp_exposed.clamp(0.0, 1.0) * (2.0 * sz.vpp * sz.mb - fill).max(0.0)) * one
        } else {
            2.0 * sz.vpp * sz.mb * one
        }
    } else {
        0.0
    }
}

/// Parameters one GPU holds: the dense ones (replicated over DP·CP) and the routed experts (over expert DP).
struct LocalParams {
    dense: f64,
    expert: f64,
}

impl LocalParams {
    /// Routed experts of the decoder layers; everything else (incl. MTP) is dense. Totals as report::derive counted them.
    fn of(plan: &Plan, derived: &Derived, sz: &Sizes) -> LocalParams {
        let kinds = derived.kinds(&plan.model);
        let expert_total =
            kinds.table.params().iter().zip(kinds.decoder.0).fold(0.0, |s, (lp, n)| s + n as f64 * lp.routed_experts as f64);
        LocalParams {
            dense: (derived.total_parameters as f64 + derived.mtp_parameters as f64 - expert_total).max(0.0) / (sz.tp * sz.pp),
            expert: expert_total / (sz.ep * sz.etp * sz.pp),
        }
    }
}

/// DP: gradients (FP32 main grads, 4 B) reduce-scatter + BF16 params (2 B) all-gather with the distributed
/// optimizer, else an all-reduce 2(n−1)/n of the gradients; dense parameters over DP·CP, experts over EDP.
// Source: Megatron-LM docs/source/api-guide/dist_optimizer.md (reduce-scatter of grads, all-gather of params).
fn dp_comm_s(plan: &Plan, sz: &Sizes, params: &LocalParams, links: &Links, c: &Constants) -> f64 {
    let dp_dense = sz.dp * sz.cp;
    let st = &plan.training.settings;
    let dist = st.use_distributed_optimizer || st.use_megatron_fsdp;
    let lp = st.low_precision(&plan.gpu);
    // fp8_param_gather / fp4_param_gather: the weights are all-gathered in 1 B / 0.5 B instead of 2 B.
    let param_bytes = if lp.fp4_param_gather { 0.5 } else if lp.fp8_param_gather { 1.0 } else { 2.0 };
    let grad_bytes = if lp.grad_reduce_in_fp32 { 4.0 } else { 2.0 };
    let dp_bytes = |n: f64, params: f64| {
        if dist { ring(n) * params * (grad_bytes + param_bytes) } else { 2.0 * ring(n) * params * grad_bytes }
    };
    let dp_raw = dp_bytes(dp_dense, params.dense) / links.bandwidth(GroupKind::DpCp)
        + dp_bytes(sz.edp, params.expert) / links.bandwidth(GroupKind::Edp);
    // overlap_grad_reduce hides the fitted share behind backward; without it the reduction follows the step.
    dp_raw * if st.overlap_grad_reduce { c.dp_exposed } else { 1.0 }
}

/// Adam over the local shard is memory-bound: ~16 B/param (FP32 param, grad, m, v) / HBM bandwidth.
// Source: Megatron-LM dist_optimizer.md (FP32 main params, grads and two Adam moments per local parameter).
fn optimizer_s(plan: &Plan, sz: &Sizes, params: &LocalParams) -> f64 {
    let dist = plan.training.settings.use_distributed_optimizer;
    let shard = (params.dense / if dist { sz.dp * sz.cp } else { 1.0 }) + (params.expert / if dist { sz.edp } else { 1.0 });
    // optimizer_cpu_offload: the offloaded fraction steps in host memory and its grads (4 B) and params (2 B) cross
    // the host link (data/perf_assumptions.json).
    let f = plan.training.settings.offload_fraction().clamp(0.0, 1.0);
    let a = assumptions();
    let host = if f > 0.0 {
        f * shard * (16.0 / (a.host_optimizer_tbps_per_gpu.value.max(1e-3) * 1e12) + 6.0 / (a.host_link_gbps_per_gpu.value.max(1e-3) * 1e9))
    } else {
        0.0
    };
    (1.0 - f) * shard * 16.0 / hbm(plan) + host
}

/// Step-time estimate with given constants (the calibration fits them).
pub fn estimate_with(plan: &Plan, derived: &Derived, c: &Constants) -> Performance {
    estimate_in(plan, derived, c, &StepLayout::with(plan, derived, c))
}

/// [`estimate`] of a plan whose layout (its sizes, order, cluster and the chunks' layers) is `layout`'s: the same
/// figures to the bit, without recounting what the layout fixes.
pub fn estimate_for(plan: &Plan, derived: &Derived, layout: &StepLayout) -> Performance {
    estimate_in(plan, derived, constants(), layout)
}

fn estimate_in(plan: &Plan, derived: &Derived, c: &Constants, layout: &StepLayout) -> Performance {
    let sz = Sizes::of(plan, derived);
    let comp = compute(plan, derived, &sz, c);
    let compute_s = comp.total();
    let moe_routing_s = moe_routing_s(plan, &sz, c);
    let memory_bound_s = memory_bound_s(plan, &sz, c);
    let quantize_s = quantize_s(plan, &sz, c);
    let recompute_s = recompute_s(plan, derived, &sz, &comp, (moe_routing_s, memory_bound_s));
    let launch_s = launch_s(plan, &sz, c, compute_s + recompute_s + moe_routing_s + memory_bound_s + quantize_s);
    let links = &layout.links;
    let st = &plan.training.settings;
    let tp_comm_s = tp_comm_s(&sz, links, c, st.tp_comm_overlap && plan.parallelism.sequence_parallel);
    let cp_comm_s = cp_comm_s(plan, &sz, links, c);
    let ep_comm_s = ep_comm_s(plan, &sz, links, c, compute_s + recompute_s + moe_routing_s + memory_bound_s);
    let pp_comm_s = pp_comm_s(plan, &sz, links, c);
    let params = LocalParams::of(plan, derived, &sz);
    let dp_comm_s = dp_comm_s(plan, &sz, &params, links, c);
    // Source: Narayanan 2021 §2.2: bubble = (PP−1)/(VPP·m) of the ideal pipelined time (of the ranks off the slowest).
    let bubble_frac = crate::pipeline::bubble_fraction(plan.parallelism.pp(), plan.parallelism.vpp(), derived.num_microbatches);
    // The slowest pipeline stage sets the pace: its compute and its layers' terms, the even terms scaled to it.
    let parts = stages::ComputeParts {
        layer_s: (comp.dense_s + comp.core_s + comp.ssm_s - comp.vision_s).max(0.0),
        expert_s: comp.expert_s,
        vision_s: comp.vision_s,
        logits_s: comp.logits_s,
    };
    let layer_terms = recompute_s + tp_comm_s + cp_comm_s + ep_comm_s + moe_routing_s + memory_bound_s + quantize_s + launch_s;
    let sc = stages::slowest_stage(plan, derived, &layout.ranks, &parts, layer_terms);
    // The fill and drain pass one chunk of every other rank (perf/stages.rs): (PP − 1)/(VPP·m) of the other ranks'
    // mean pipelined time.
    let bubble_s = bubble_frac * (compute_s * sc.bubble_compute + layer_terms * sc.bubble_layer);
    let compute_s = compute_s * sc.compute;
    let [recompute_s, tp_comm_s, cp_comm_s, ep_comm_s, moe_routing_s, memory_bound_s, quantize_s, launch_s] =
        [recompute_s, tp_comm_s, cp_comm_s, ep_comm_s, moe_routing_s, memory_bound_s, quantize_s, launch_s].map(|t| t * sc.layer);
    let optimizer_s = optimizer_s(plan, &sz, &params);
    let breakdown = Breakdown {
        compute_s: finite(compute_s),
        recompute_s: finite(recompute_s),
        tp_comm_s: finite(tp_comm_s),
        cp_comm_s: finite(cp_comm_s),
        ep_comm_s: finite(ep_comm_s),
        pp_comm_s: finite(pp_comm_s),
        dp_comm_s: finite(dp_comm_s),
        bubble_s: finite(bubble_s),
        optimizer_s: finite(optimizer_s + c.step_overhead_s.max(0.0)),
        moe_routing_s: finite(moe_routing_s),
        memory_bound_s: finite(memory_bound_s),
        quantize_s: finite(quantize_s),
        launch_s: finite(launch_s),
    };
    performance(breakdown, derived, &sz, &comp)
}

/// The step time (the breakdown's sum) and the rates it implies.
fn performance(breakdown: Breakdown, derived: &Derived, sz: &Sizes, comp: &Compute) -> Performance {
    let bd = &breakdown;
    let step = bd.total();
    let tokens = derived.tokens_per_step as f64;
    let (world, peak) = (sz.world, comp.peak);
    let (tps, tflops, mfu, gpu_h) = if step > 0.0 && step.is_finite() {
        let tps = tokens / step / world;
        let achieved = comp.model_flops / step / world;
        (tps, achieved / 1e12, if peak > 0.0 { achieved / peak } else { 0.0 }, if tps > 0.0 { 1e12 / tps / 3600.0 } else { 0.0 })
    } else {
        (0.0, 0.0, 0.0, 0.0)
    };
    Performance {
        step_time_s: finite(step),
        tokens_per_s_per_gpu: finite(tps),
        model_tflops_per_gpu: finite(tflops),
        mfu: finite(mfu),
        breakdown,
        model_flops_per_step: finite(comp.model_flops),
        gpu_hours_per_trillion_tokens: finite(gpu_h),
    }
}

#[cfg(test)]
mod tests {
    use super::expert_width_factor;
    use serde_json::json;

    fn plan(model: &str) -> crate::Plan {
        crate::plan_value(&json!({"model": model, "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 8}}))
            .expect("plan parses")
            .plan
    }

    #[test]
    fn latent_experts_run_fc2_at_the_latent_width() {
        // By hand, w0 = 256 (a round figure, not the fitted one): Nemotron 3 Super (f 2688, ℓ 1024, squared ReLU, not
        // gated, so fc1 and fc2 each do half the expert FLOPs): fc1 2688/(2688+256) = 0.913043, fc2 1024/(1024+256) = 0.8;
        // time-weighted 1/(0.5/0.913043 + 0.5/0.8) = 1/1.172619 = 0.852792. ETP 2: fc1 1344/1600 = 0.84, fc2 still ℓ
        // wide (row-parallel, output unsplit): 1/(0.5/0.84 + 0.625) = 1/(0.595238 + 0.625) = 1/1.220238 = 0.819512.
        let width = |w: f64| w / (w + 256.0);
        let sup = plan("nemotron-3-super-120b-a12b");
        assert!((expert_width_factor(&sup, 1.0, &width) - 0.852792).abs() < 1e-6);
        assert!((expert_width_factor(&sup, 2.0, &width) - 0.819512).abs() < 1e-6);
        // No latent: the FFN width alone, as before (Nemotron 3 Nano f 1856: 1856/2112 = 0.878788).
        assert!((expert_width_factor(&plan("nemotron-3-nano-30b-a3b"), 1.0, &width) - 0.878788).abs() < 1e-6);
    }
}
