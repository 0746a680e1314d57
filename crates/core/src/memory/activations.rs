//! Saved activations per layer and microbatch: every tensor a transformer layer keeps for its backward, with its
//! element size under the precision recipe, what each `recompute_modules` entry frees, and what fine-grained
//! activation offloading moves to the host.
//!
//! Per-tensor accounting after Korthikanti et al. 2022 §4.1 (eq. 1), with flash attention (no s² scores saved) and
//! dropout 0, as Megatron Bridge's recipes set it; the tensor lists per sub-layer and what each recompute entry frees
//! are in the research note memory-settings.md §2–§4 (ML = NVIDIA/Megatron-LM@d98e8a64ddf3,
//! TE = NVIDIA/TransformerEngine@d0067d0da6cb).

use super::moe;
use super::run::Run;
use super::shape::Shape;
use crate::model::{Ffn, LayerKind, Mixer, ModelConfig, SavedTensor, Split};
use crate::plan::Plan;
use crate::settings::{OffloadModule, RecomputeModule};

/// Elements of one layer's attention scores on this rank for one microbatch, b·heads/TP·s_q·s_k (0 with flash or fused
/// attention): the shape of the probabilities an unfused core attention saves and of the raw-score buffer.
// ML megatron/core/transformer/dot_product_attention.py l.178-205: output_size (b, np, sq, sk), the [b·np, sq, sk]
// matmul_input_buffer from the global memory buffer.
pub(crate) fn score_elements(m: &ModelConfig, sh: &Shape, mixer: Mixer) -> f64 {
    sh.tokens * m.attention_shape(mixer).num_attention_heads as f64 / sh.tp * sh.scores_keys
}

/// What one layer keeps for one microbatch.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LayerActivations {
    /// Everything the layer saves for backward on the GPU, after selective recompute and activation offloading.
    pub full: f64,
    /// What the layer keeps when full recompute checkpoints it: its input only.
    pub checkpointed: f64,
    /// What selective recompute re-creates for one layer during its backward (the recompute working set).
    pub recompute_working_set: f64,
    /// Bytes the layer offloads to the host per microbatch (fine-grained activation offloading).
    pub offloaded: f64,
}

/// The run's selective-recompute and offload choices, as flags (at most 32 together: [`Choices::bits`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Choices {
    recompute: [bool; RecomputeModule::ALL.len()],
    offload: [bool; OffloadModule::ALL.len()],
}

// `Choices::bits` packs them into a u32.
const _: () = assert!(RecomputeModule::ALL.len() + OffloadModule::ALL.len() <= 32);

impl Choices {
    pub fn of(p: &Plan) -> Choices {
        let s = &p.training.settings;
        let mut c = Choices::default();
        for &r in s.recompute_modules_run() {
            c.recompute[r as usize] = true;
        }
        if s.fine_grained_activation_offloading {
            for &o in &s.offload_modules {
                c.offload[o as usize] = true;
            }
        }
        c
    }
    /// The choices as one number (bit i: `RecomputeModule::ALL[i]`, then the offload modules'), a memo's key.
    pub fn bits(&self) -> u32 {
        self.recompute.iter().chain(&self.offload).rev().fold(0, |b, &on| b << 1 | u32::from(on))
    }

    fn recomputes(&self, r: RecomputeModule) -> bool {
        self.recompute[r as usize]
    }
    fn offloads(&self, o: OffloadModule) -> bool {
        self.offload[o as usize]
    }
}

// Megatron-Core's default --min-offloaded-tensor-size: smaller tensors stay on the GPU
// (ML megatron/core/transformer/transformer_config.py min_offloaded_tensor_size).
const MIN_OFFLOADED_ELEMENTS: f64 = 1_048_576.0;

/// Accumulates one sub-layer's saved tensors: kept, freed by recompute (re-created in backward) or offloaded.
#[derive(Default)]
struct Tally {
    kept: f64,
    recomputed: f64,
    offloaded: f64,
}

impl Tally {
    /// A saved tensor of `elements` at `bytes` each; `recompute` frees it, `offload` moves it to the host.
    fn tensor(&mut self, elements: f64, bytes: f64, recompute: bool, offload: bool) {
        let b = elements * bytes;
        if recompute {
            self.recomputed += b;
        } else if offload && elements >= MIN_OFFLOADED_ELEMENTS {
            self.offloaded += b;
        } else {
            self.kept += b;
        }
    }
}

/// Saved tensors of the attention block (its input norm included) for one microbatch.
// Tensors (memory-settings.md §2, §3): the norm input (residual, saved by the fused norm), the QKV GEMM input (the norm
// output; an FP8/FP4 copy in low-precision layers, TE linear.py l.596-621), MLA's latents, Q/K/V and O saved by flash
// attention (bf16), the output projection's input (the same tensor as O in BF16, a quantized copy under FP8/FP4), and
// the fp32 softmax log-sum-exp. GQA: K and V have num_query_groups heads, at least one per TP rank (attention.py).
// A window layer with its own shape (sliding_attention_setting) saves the same tensors at its own heads and groups.
fn attention(m: &ModelConfig, sh: &Shape, run: &Run, (g, mixer): (f64, Mixer), c: &Choices, t: &mut Tally) {
    let (tokens, h, a) = (sh.tokens, m.hidden_size as f64, run.act);
    let shape = m.attention_shape(mixer);
    let heads = shape.num_attention_heads as f64;
    let local = sh.local() * h;
    // The input norm is a module of its own only with MLA (the TE spec fuses it into linear_qkv otherwise:
    // ML megatron/core/models/gpt/gpt_layer_specs.py), so only then can `layernorm` / `attn_norm` act on it.
    let real_norm = m.multi_latent_attention;
    t.tensor(local, a, false, real_norm && c.offloads(OffloadModule::AttnNorm));
    t.tensor(local, g, real_norm && c.recomputes(RecomputeModule::Layernorm), c.offloads(OffloadModule::QkvLinear));
    let up_proj = c.recomputes(RecomputeModule::MlaUpProj);
    let (qk_dim, v_dim, kv_heads) = if m.multi_latent_attention {
        // ML multi_latent_attention.py: the down-projection outputs (checkpoint inputs of mla_up_proj) and their norms'
        // outputs, the up-projections' inputs, freed by mla_up_proj (output-discarding, l.448-458).
        let q_lora = m.q_lora_rank.unwrap_or(0) as f64;
        let kv = m.kv_lora_rank as f64;
        t.tensor(sh.local() * (q_lora + kv + m.qk_pos_emb_head_dim as f64), a, false, false);
        t.tensor(sh.local() * (q_lora + kv), g, up_proj, false);
        ((m.qk_head_dim + m.qk_pos_emb_head_dim) as f64, m.v_head_dim as f64, heads)
    } else {
        (shape.kv_channels as f64, shape.kv_channels as f64, shape.num_query_groups.max(1) as f64)
    };
    let kv_per_rank = (kv_heads / sh.tp).max(1.0);
    t.tensor(tokens * (heads * qk_dim / sh.tp + kv_per_rank * (qk_dim + v_dim)), a, up_proj, c.offloads(OffloadModule::CoreAttn));
    let o = tokens * heads * v_dim / sh.tp;
    let core_attn = c.recomputes(RecomputeModule::CoreAttn);
    let proj_offload = c.offloads(OffloadModule::AttnProj);
    if g == a {
        // BF16: O is the projection's input, kept by it whatever core_attn recompute does.
        t.tensor(o, a, false, proj_offload);
    } else {
        // FP8/FP4: flash attention's bf16 O (freed by core_attn recompute) and the projection's quantized copy.
        t.tensor(o, a, core_attn, false);
        t.tensor(o, g, false, proj_offload);
    }
    if sh.scores_keys > 0.0 {
        // Unfused core attention saves the softmax's output (its backward and the context bmm's input), and with
        // dropout the mask (1 B) and the dropped-out probabilities (Korthikanti et al. 2022 §4.1: 2·a·s²·b + a·s²·b +
        // 2·a·s²·b at 2 B); all re-created by core_attn recompute (dot_product_attention.py l.210-220).
        let probs = score_elements(m, sh, mixer);
        t.tensor(probs, a, core_attn, false);
        if sh.scores_dropout {
            t.tensor(probs, 1.0, core_attn, false);
            t.tensor(probs, a, core_attn, false);
        }
    } else {
        // Flash attention's fp32 log-sum-exp per head and token (TEDotProductAttention), re-created by core_attn.
        t.tensor(tokens * heads / sh.tp, 4.0, core_attn, false);
    }
}

/// Saved tensors of a DeepSeek-V4 attention block (its input norm included) for one microbatch — an estimate: the
/// tensors its forward produces that a backward reads, each once, at the activation size (GEMM inputs at `g`).
/// The norm input and output (linear_q_down_proj's, linear_kv_proj's and the compressor's input); q_compressed and its
/// norm (linear_q_up_proj's and the indexer's input); the query before and after its RMS norm and RoPE (n·d / TP);
/// the single key/value head and its norm (2·d); the compressor's kv and gate (2·c·d, fp32 as the softmax pooling
/// reads them); the indexer's query (H·D), weights (H), its compressor's kv and gate (2·2·D) and the top-k indices
/// (int32, top-k per token); the attention output O and its fp32 log-sum-exp; the output group projection's input
/// (O after the inverse RoPE, n·d / TP) and linear_proj's input (o_groups·o_lora_rank). Approximate: which of these
/// Megatron-Core's fused kernels keep or recompute is not modelled; `core_attn` and `mla_up_proj` recompute free
/// what they free for MLA.
// Source: Megatron-LM experimental_attention_variant/deepseek_v4_hybrid_attention.py DSv4HybridSelfAttention
// get_query_key_value_tensors / DSv4HybridAttention.forward (the tensors each step produces); DeepSeek-V4-Flash
// inference/model.py Compressor.forward (kv, score fp32), Indexer.forward (q, weights, topk_idxs).
fn dsv4_attention(m: &ModelConfig, sh: &Shape, run: &Run, (g, mixer): (f64, Mixer), c: &Choices, t: &mut Tally) {
    let (tokens, h, a) = (sh.tokens, m.hidden_size as f64, run.act);
    let (n, d) = (m.num_attention_heads as f64, m.v_head_dim as f64);
    let q_lora = m.q_lora_rank.unwrap_or(m.hidden_size) as f64;
    let up_proj = c.recomputes(RecomputeModule::MlaUpProj);
    let core_attn = c.recomputes(RecomputeModule::CoreAttn);
    t.tensor(sh.local() * h, a, false, c.offloads(OffloadModule::AttnNorm));
    t.tensor(sh.local() * h, g, c.recomputes(RecomputeModule::Layernorm), c.offloads(OffloadModule::QkvLinear));
    t.tensor(sh.local() * q_lora, a, false, false);
    t.tensor(sh.local() * q_lora, g, up_proj, false);
    t.tensor(tokens * 2.0 * n * d / sh.tp, a, up_proj, c.offloads(OffloadModule::CoreAttn));
    t.tensor(tokens * 2.0 * d, a, up_proj, false);
    let ratio = mixer.compress_ratio();
    if ratio > 1 {
        let cw = if ratio == 4 { 2.0 } else { 1.0 };
        t.tensor(tokens * 2.0 * cw * d, 4.0, core_attn, false);
    }
    if mixer == Mixer::Dsv4Csa {
        let (heads, dim) = (m.dsa_indexer_n_heads.unwrap_or(0) as f64, m.dsa_indexer_head_dim.unwrap_or(0) as f64);
        t.tensor(tokens * (heads * dim + heads), a, core_attn, false);
        t.tensor(tokens * 2.0 * 2.0 * dim, 4.0, core_attn, false);
        let topk = (m.dsa_indexer_topk.unwrap_or(0) as f64).min(sh.tokens / 4.0);
        t.tensor(tokens * topk, 4.0, false, false);
    }
    let o = tokens * n * d / sh.tp;
    t.tensor(o, a, core_attn, false);
    t.tensor(tokens * n / sh.tp, 4.0, core_attn, false);
    t.tensor(o, a, false, c.offloads(OffloadModule::AttnProj));
    let (groups, rank) = m.dsv4_output();
    t.tensor(tokens * (groups * rank) as f64 / sh.tp, g, false, c.offloads(OffloadModule::AttnProj));
}

/// Saved tensors of the hyper-connections around `sublayers` sub-layers of one layer: per sub-layer the n-stream input
/// (mapping_proj's input and the mixing's), the fp32 mixes (n² + 2n per token) and the single-stream output of the
/// pre-mix (the sub-layer's norm input is counted with the sub-layer); `mhc` recompute re-creates the mixes. An
/// estimate, as for DeepSeek-V4's attention.
// Source: Megatron-LM megatron/core/transformer/hyper_connection.py HyperConnectionModule (mapping_proj over the
// [s, b, n·C] streams, h_pre / h_post / h_res from the n² + 2n mixes, Sinkhorn on h_res); transformer_config.py
// recompute_modules "mhc" (the HyperConnectionModule's outputs discarded and recomputed in backward).
fn hyper_connections(m: &ModelConfig, sh: &Shape, run: &Run, (sublayers, mhc): (f64, bool), t: &mut Tally) {
    let n = m.residual_streams() as f64;
    if n == 0.0 {
        return;
    }
    let h = m.hidden_size as f64;
    t.tensor(sublayers * sh.local() * n * h, run.act, false, false);
    t.tensor(sublayers * sh.local() * (n * n + 2.0 * n), 4.0, mhc, false);
}

/// Saved tensors of a dense MLP (or a shared expert) of width `ffn`: fc1 output (2·ffn when gated: SwiGLU's gate and
/// up halves) and the activation output (fc2's input, a quantized copy under FP8/FP4); `input` counts the fc1 input
/// copy too (the norm output, when the MLP does not share it with another consumer in this precision). `(a, g)` are
/// the bytes of a saved activation and of a saved GEMM input.
fn mlp(m: &ModelConfig, sh: &Shape, (a, g): (f64, f64), ffn: u64, input: bool, recompute: bool, t: &mut Tally) {
    let ffn = ffn as f64;
    let fc1_out = if m.gated_linear_unit { 2.0 * ffn } else { ffn };
    if input {
        t.tensor(sh.local() * m.hidden_size as f64, g, recompute, false);
    }
    t.tensor(sh.tokens * fc1_out / sh.tp, a, recompute, false);
    t.tensor(sh.tokens * ffn / sh.tp, g, recompute, false);
}

/// Saved tensors of an MoE block (its pre-MLP norm included) for one microbatch; `routed` tokens reach this rank's
/// experts ([`moe::routed_tokens`]).
// ML megatron/core/transformer/moe: the pre-MLP norm is a real module in MoE layers (gpt_layer_specs.py); the router
// saves fp32 logits and probabilities (router.py); the grouped experts save the permuted input (fc1's, quantized under
// FP8/FP4), the fc1 output and the activation output; the router probabilities are applied inside the activation
// ("Activation and post-multiply probs", experts.py l.545, weighted_bias_swiglu_impl), so the expert output is not
// saved — only the fp32 probabilities of the routed tokens. `moe` checkpoints all but the block's input (normal),
// `moe_act` discards the activation output (experts.py l.269-277), `shared_experts` checkpoints the shared MLP.
fn moe_block(m: &ModelConfig, sh: &Shape, run: &Run, g: f64, routed: f64, c: &Choices, t: &mut Tally) {
    let (h, a) = (m.hidden_size as f64, run.act);
    let local = sh.local() * h;
    let whole = c.recomputes(RecomputeModule::Moe);
    t.tensor(local, a, false, c.offloads(OffloadModule::MlpNorm));
    // The norm output: the router's (bf16) GEMM input and the checkpoint input of `moe`; `layernorm` discards it.
    t.tensor(local, a, c.recomputes(RecomputeModule::Layernorm), false);
    t.tensor(2.0 * sh.local() * m.num_experts().max(1) as f64, 4.0, whole, false);
    let ffn = m.moe_ffn() as f64;
    let fc1_out = if m.gated_linear_unit { 2.0 * ffn } else { ffn };
    let fc1_offload = c.offloads(OffloadModule::ExpertFc1) || c.offloads(OffloadModule::FusedGroupMlp);
    // Tokens reach the experts at the expert width: the latent size for a latent MoE (token_dispatcher.py hidden_dim =
    // moe_latent_size or hidden_size).
    t.tensor(routed * m.expert_width() as f64, g, whole, fc1_offload);
    t.tensor(routed * fc1_out / sh.etp, a, whole, c.offloads(OffloadModule::MoeAct));
    t.tensor(routed * ffn / sh.etp, g, whole || c.recomputes(RecomputeModule::MoeAct), false);
    t.tensor(routed, 4.0, whole, false);
    if let Some(shared) = m.moe_shared_expert_intermediate_size.filter(|&f| f > 0) {
        // The shared expert reads the norm output: no copy of its own in BF16, a quantized one under FP8/FP4.
        mlp(m, sh, (a, g), shared, g != a, whole || c.recomputes(RecomputeModule::SharedExperts), t);
    }
    if let Some(l) = m.moe_latent_size {
        // Latent MoE (moe/moe_layer.py): fc1_latent_proj reads the norm output (a quantized copy under FP8/FP4) and
        // fc2_latent_proj the experts' combined output at width ℓ.
        if g != a {
            t.tensor(local, g, whole, false);
        }
        t.tensor(sh.local() * l as f64, g, whole, false);
    }
}

/// Saved tensors of a state-space mixer (model/ssm.rs: elements per local token by tensor) for one microbatch: GEMM
/// inputs at `g` bytes (quantized under FP8/FP4), fp32 tensors at 4, the rest at the activation size.
fn ssm(tensors: &[SavedTensor], sh: &Shape, run: &Run, g: f64, t: &mut Tally) {
    for x in tensors {
        let bytes = if x.fp32 { 4.0 } else if x.gemm_input { g } else { run.act };
        t.tensor(sh.tokens * x.elements, bytes, false, false);
    }
}

/// Saved activations of one layer of `kind`, in FP8/FP4 (`low`) or BF16, and of its checkpointed form: its mixer's
/// tensors, then its feed-forward block's.
pub(crate) fn layer(m: &ModelConfig, p: &Plan, run: &Run, sh: &Shape, c: &Choices, kind: LayerKind, low: bool) -> LayerActivations {
    let g = if low { run.gemm_in } else { run.act };
    let mut t = Tally::default();
    let split = Split { tp: sh.tp, sp: sh.sp, cp: p.parallelism.cp().max(1) as f64 };
    match kind.mixer {
        Mixer::None => {}
        Mixer::Attention | Mixer::WindowAttention => attention(m, sh, run, (g, kind.mixer), c, &mut t),
        Mixer::Dsv4Window | Mixer::Dsv4Csa | Mixer::Dsv4Hca => dsv4_attention(m, sh, run, (g, kind.mixer), c, &mut t),
        Mixer::Mamba => ssm(&m.mamba_saved(split), sh, run, g, &mut t),
        Mixer::GatedDeltaNet => ssm(&m.gdn_saved(split), sh, run, g, &mut t),
    }
    match kind.ffn {
        Ffn::None => {}
        Ffn::Moe => moe_block(m, sh, run, g, moe::routed_tokens(m, p, sh), c, &mut t),
        Ffn::Dense => {
            // The dense MLP's pre-MLP norm is fused into fc1 (TE spec), whose input (the residual) is the `mlp`
            // checkpoint's input; `mlp` frees the rest (transformer_layer.py l.990-1010).
            let recompute = c.recomputes(RecomputeModule::Mlp);
            t.tensor(sh.local() * m.hidden_size as f64, run.act, false, false);
            mlp(m, sh, (run.act, g), m.dense_width(kind), true, recompute, &mut t);
        }
    }
    if let Some(dim) = m.per_layer_embed_dim.filter(|_| kind != LayerKind::EMPTY) {
        // Gemma 4's per-layer input block after the MLP (modeling_gemma4.py Gemma4DenseTransformerLayer.forward:
        // gelu(per_layer_input_gate(x)) · per_layer_input → per_layer_projection → post_per_layer_input_norm): the
        // gate's input and the projection's output at h, the gate's output, the GELU's output and the product at dim,
        // plain nn.Linear modules, not split over TP. The layer's slice of the per-layer inputs, and of the projected
        // embedding the first stage normed into them (_compute_per_layer_inputs), both dim wide, are counted here too:
        // the per-layer inputs hold them for every layer until the backward.
        t.tensor(sh.local() * 2.0 * m.hidden_size as f64, run.act, false, false);
        t.tensor(sh.tokens * 5.0 * dim as f64, run.act, false, false);
    }
    // Hyper-connections: around each sub-layer the module saves its n-stream input and its single-stream output.
    let sublayers = f64::from(u8::from(kind.mixer != Mixer::None)) + f64::from(u8::from(kind.ffn != Ffn::None));
    hyper_connections(m, sh, run, (sublayers, c.recomputes(RecomputeModule::Mhc)), &mut t);
    // Full recompute keeps only the layer's input (transformer_block.py _checkpointed_forward), n streams wide with
    // hyper-connections; with distribute_saved_activations (no SP) it is split over TP (tensor_parallel/random.py).
    let split = if p.training.settings.distribute_saved_activations && sh.sp == 1.0 { sh.tp } else { 1.0 };
    let streams = m.residual_streams().max(1) as f64;
    LayerActivations {
        full: t.kept,
        checkpointed: streams * sh.local() * m.hidden_size as f64 * run.act / split,
        recompute_working_set: t.recomputed,
        offloaded: t.offloaded,
    }
}

/// Activations of the output side of the last stage for one microbatch: final norm, logits and cross-entropy.
// Final norm input and output (the output layer's input), bf16 logits and the fp32 softmax that
// tensor_parallel/cross_entropy.py _VocabParallelCrossEntropy saves, each split over TP by vocabulary. The output
// layer is a ColumnParallelLinear, not a TE FP8 module: BF16 under every recipe.
pub(crate) fn output(p: &Plan, run: &Run, sh: &Shape, vocab: u64) -> f64 {
    let h = p.model.hidden_size as f64;
    2.0 * sh.local() * h * run.act + logits_elements(sh, vocab) * (run.act + logits_fp32_bytes(p))
}

/// Bytes per logit of the loss's fp32 copy: 4, unless Transformer Engine's fused loss runs, which writes the gradient
/// over the bf16 logits it saves and keeps no fp32 copy (TE transformer_engine/pytorch/cross_entropy.py
/// CrossEntropyFunction.forward: `ctx.save_for_backward(_input.detach())` after the kernel overwrites `_input`;
/// Megatron-Core's own fused kernel, fusions/fused_cross_entropy.py l.119, saves the fp32 exp_logits as unfused does).
pub(crate) fn logits_fp32_bytes(p: &Plan) -> f64 {
    if p.training.settings.te_fused_loss() { 0.0 } else { 4.0 }
}

/// Elements of one microbatch's logits on this rank, b·s/CP·V/TP: the output layer's output and, at 4 B, the fp32 copy
/// the loss makes of it (`vocab_parallel_logits.float()`, kept in place as the softmax: ML
/// megatron/core/tensor_parallel/cross_entropy.py calculate_logits_max, calculate_predicted_logits).
pub(crate) fn logits_elements(sh: &Shape, vocab: u64) -> f64 {
    sh.tokens * vocab as f64 / sh.tp
}

/// What the last stage keeps with `defer_embedding_wgrad_compute`: the output layer's input and output gradient of
/// every deferred microbatch until the pipeline flush.
// ML megatron/core/tensor_parallel/layers.py ColumnParallelLinear.forward: embedding_activation_buffer.append(input)
// while fewer than wgrad_deferral_limit (0: no limit) are buffered, and grad_output_buffer the same in backward.
pub(crate) fn deferred_wgrad(p: &Plan, run: &Run, sh: &Shape, vocab: u64, microbatches: u64) -> f64 {
    let s = &p.training.settings;
    if !s.defer_embedding_wgrad_compute {
        return 0.0;
    }
    let deferred = if s.wgrad_deferral_limit == 0 { microbatches } else { microbatches.min(s.wgrad_deferral_limit) };
    deferred as f64 * (sh.local() * p.model.hidden_size as f64 + sh.tokens * vocab as f64 / sh.tp) * run.act
}

/// Whether a layer of `kind` is captured in a per-layer CUDA graph: one callable per layer covers every listed scope
/// that applies to it (attention, then the MLP, or the MoE router and preprocessing), so a layer has one graph or none.
// ML megatron/core/transformer/transformer_layer.py `_te_cuda_graph_capture` (one callable: `_forward_attention` when
// attn is listed, `_forward_mlp` when mlp / moe / moe_router applies).
fn graphed_layer(p: &Plan, kind: LayerKind) -> bool {
    use crate::settings::{CudaGraphImpl, CudaGraphScope};
    let s = &p.training.settings;
    match s.cuda_graph_impl {
        // A full-iteration graph captures the whole forward-backward: no per-layer graph, and its static buffers are
        // the micro-batches' input batches (ML megatron/core/full_cuda_graph.py StaticBufferLoader), not hidden states.
        CudaGraphImpl::None | CudaGraphImpl::FullIteration => false,
        // An empty scope graphs the whole layer.
        _ if s.cuda_graph_scope.is_empty() => true,
        _ => s.cuda_graph_scope.iter().any(|scope| match scope {
            CudaGraphScope::Attn => kind.mixer.is_attention(),
            CudaGraphScope::Mlp => kind.ffn == Ffn::Dense,
            CudaGraphScope::Moe | CudaGraphScope::MoeRouter | CudaGraphScope::MoePreprocess => kind.ffn == Ffn::Moe,
            CudaGraphScope::Mamba => kind.mixer == Mixer::Mamba,
        }),
    }
}

/// Per-layer CUDA graphs' static buffers per microbatch for one layer of `kind`: the graph's static input hidden
/// states, t·h/sp at the activation width. The other static tensors are shared, not kept per graph: a graph writes its
/// output straight into the next graph's input, one grad-output buffer serves every graph of a shape, and buffers are
/// reused across microbatches whose forward and backward do not overlap.
// TE transformer_engine/pytorch/graph.py `_reuse_graph_input_output_buffers` (static grad outputs keyed by shape;
// static outputs and grad inputs weak-referenced once the backward graph is built; inputs reused across
// non-overlapping microbatches), which Megatron-Core turns on for TE >= 2.7 (megatron/core/transformer/cuda_graphs.py
// l.2686); the local implementation's `CudagraphBufferMetadata` (ibid. l.279: a graph may "directly write its output
// into a subsequent graph's input"). Measured against: "roughly 7 GB extra memory" for TE graphs of attn, moe_router
// and moe_preprocess on DeepSeek-V3, 256 GB200, TP 1 PP 4 VPP 4 EP 64, MBS 1 (Megatron Core MoE report, arXiv
// 2603.07685, as quoted by reading notes): this term gives 16 layers × 4,096 × 7,168 × 2 B × ~4.75 micro-batches in
// flight ≈ 4.5 GB on stage 0 (the pool's fragmentation is charged with the allocator's).
pub(crate) fn graph_buffers(p: &Plan, run: &Run, sh: &Shape, kind: LayerKind) -> f64 {
    if !graphed_layer(p, kind) {
        return 0.0;
    }
    sh.local() * p.model.hidden_size as f64 * run.act
}
