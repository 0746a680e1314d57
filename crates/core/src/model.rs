//! The model: Megatron-Core TransformerConfig fields, resolved, and the parameter counts they imply.

use serde::{Deserialize, Serialize};

mod dsv4;
mod encoder;
mod hetero;
mod hybrid;
mod kinds;
mod ssm;

pub use hybrid::{HybridPattern, LAYER_SYMBOLS, PatternError};
pub use encoder::{EncoderParams, VisionEncoder};
pub use hetero::HeteroLayer;
pub use kinds::{Ffn, KindCounts, KindTable, KindTotals, LayerKind, LayerKinds, LayerRuns, MAX_LAYER_KINDS, Mixer, Mtp};
pub use ssm::{MAMBA_D_CONV, MAMBA_EXPAND, SavedTensor, Split};

/// Which layers are MoE: Megatron's `moe_layer_freq`, an int N (every N-th layer, from layer 0) or a 0/1 list. The same
/// shape serves `linear_attention_freq` (an int N: every N-th layer full attention; a list: 1 = linear attention).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MoeLayerFreq {
    Every(u64),
    Pattern(Vec<u8>),
}

/// A resolved model: every TransformerConfig field the planner needs, with Megatron's defaults filled in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelConfig {
    pub num_layers: u64,
    pub hidden_size: u64,
    pub ffn_hidden_size: u64,
    pub num_attention_heads: u64,
    pub num_query_groups: u64,
    pub kv_channels: u64,
    pub vocab_size: u64,
    pub make_vocab_size_divisible_by: u64,
    pub max_position_embeddings: Option<u64>,
    pub position_embedding_type: String,
    pub gated_linear_unit: bool,
    pub activation_func: String,
    pub normalization: String,
    pub add_bias_linear: bool,
    pub add_qkv_bias: bool,
    pub qk_layernorm: bool,
    pub share_embeddings_and_output_weights: bool,
    pub num_moe_experts: Option<u64>,
    pub moe_router_topk: u64,
    pub moe_ffn_hidden_size: Option<u64>,
    pub moe_shared_expert_intermediate_size: Option<u64>,
    pub moe_layer_freq: MoeLayerFreq,
    pub moe_router_pre_softmax: bool,
    pub multi_latent_attention: bool,
    pub q_lora_rank: Option<u64>,
    pub kv_lora_rank: u64,
    pub qk_head_dim: u64,
    pub qk_pos_emb_head_dim: u64,
    pub v_head_dim: u64,
    pub mtp_num_layers: u64,
    /// With a hybrid pattern, each MTP depth reuses one depth's weights (Megatron Bridge's Nemotron-H default).
    #[serde(default, skip_serializing_if = "is_false")]
    pub mtp_use_repeated_layer: bool,
    /// The layer kind of each MTP depth where the model builds it unlike its last decoder layer (Megatron-Core's
    /// default): Step-3.5's MTP layers are dense window-attention layers after an MoE last layer. `None`: the last
    /// decoder layer's kind (a hybrid model's MTP pattern gives its own).
    // Source: Megatron Bridge src/megatron/bridge/models/stepfun/step35_bridge.py _MTPDenseLayerSpecsList (the spec
    // get_gpt_mtp_block_spec reads as layer_specs[-1] is a dense one); exaone_moe_provider.py does the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtp_layer: Option<LayerKind>,
    /// The hybrid layer pattern (Megatron-Core HybridModel): one symbol per layer, `|` between pipeline segments, `/`
    /// before each MTP depth. Without it the model is a GPT stack.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hybrid_layer_pattern: Option<HybridPattern>,
    /// Mamba-2 sizes (Megatron-Core TransformerConfig); set, with Megatron's defaults, when the model has Mamba layers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mamba_state_dim: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mamba_head_dim: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mamba_num_groups: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mamba_num_heads: Option<u64>,
    /// `"gated_delta_net"` makes the layers `linear_attention_freq` marks Gated DeltaNet (Qwen3-Next, Qwen3.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental_attention_variant: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linear_attention_freq: Option<MoeLayerFreq>,
    /// Gated DeltaNet sizes; set, with Megatron's defaults, when the model has Gated DeltaNet layers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linear_key_head_dim: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linear_value_head_dim: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linear_num_key_heads: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linear_num_value_heads: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linear_conv_kernel_dim: Option<u64>,
    /// Gated attention (Qwen3-Next): linear_qkv also projects a sigmoid gate on the attention output.
    #[serde(default, skip_serializing_if = "is_false")]
    pub attention_output_gate: bool,
    /// Latent MoE (Nemotron 3 Super / Ultra): routed experts work at this width behind h → ℓ → h projections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moe_latent_size: Option<u64>,
    /// A sigmoid gate (1 × h) on the shared experts' output (Qwen3-Next, Qwen2-MoE).
    #[serde(default, skip_serializing_if = "is_false")]
    pub moe_shared_expert_gate: bool,
    /// Sliding-window attention (Megatron-Core `window_size`): each query sees `left` keys before it and `right` after
    /// (causal: 0); `None` is full attention. Which attention layers it applies to: `window_attn_skip_freq`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_size: Option<[u64; 2]>,
    /// An int N: every N-th layer (1-indexed) keeps full attention, the rest are windowed; a list: 1 = windowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_attn_skip_freq: Option<MoeLayerFreq>,
    /// The sliding-window layers' own attention shape where it differs from the model's (Step-3.5-Flash: 96 heads on
    /// its window layers, 64 on its full ones): Megatron Bridge's `sliding_attention_setting`. The window layers are
    /// then a layer kind of their own ([`Mixer::WindowAttention`]).
    // Source: Megatron Bridge src/megatron/bridge/models/stepfun/step35_provider.py Step35DecoderLayer (on a
    // "sliding_attention" layer: num_attention_heads, num_query_groups, kv_channels from sliding_attention_setting).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sliding_attention_setting: Option<AttentionShape>,
    /// A per-head sigmoid gate on the attention output: linear_qkv also projects one gate logit per head (Step-3.5's
    /// `g_proj`, Megatron-Core's `head_wise_attn_gate`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub head_wise_attn_gate: bool,
    /// Keys as values on the attention layers of the model's own shape (Gemma 4's full-attention layers, whose window
    /// layers have a shape of their own): no V projection, the K projection's output is normed and used as the values.
    /// transformers' `attention_k_eq_v` (no Megatron-Core field: Megatron Bridge has no Gemma 4 bridge at @067f987df03b).
    // Source: transformers models/gemma4/modeling_gemma4.py Gemma4TextAttention (use_alternative_attention =
    // attention_k_eq_v and not is_sliding: v_proj is None and value_states come from k_proj, then v_norm).
    #[serde(default, skip_serializing_if = "is_false")]
    pub attention_k_eq_v: bool,
    /// Megatron-Core's `softmax_type`: "vanilla" (None), "off-by-one", or "learnable" — attention sinks, one learned
    /// logit per head (gpt-oss).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub softmax_type: Option<String>,
    /// Heterogeneous layers (Megatron-Core's `heterogeneous_layers_config_encoded_json`, DeciLM / Llama-Nemotron
    /// `block_configs`): per layer, attention or none and a dense MLP of its own width or none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heterogeneous_layers: Option<Vec<HeteroLayer>>,
    /// A vision encoder beside the language model (Megatron Bridge's VLM providers: `vision_config`), built on the
    /// first pipeline stage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vision_config: Option<VisionEncoder>,
    /// DeepSeek Sparse Attention (`experimental_attention_variant = "dsa"`, or a hybrid pattern's `D` layers): a
    /// lightning indexer of `dsa_indexer_n_heads` heads of `dsa_indexer_head_dim` scores every earlier token, and the
    /// MLA attention attends to the `dsa_indexer_topk` best.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dsa_indexer_n_heads: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dsa_indexer_head_dim: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dsa_indexer_topk: Option<u64>,
    /// The indexer's KL loss coefficient (Megatron-Core `dsa_indexer_loss_coeff`, default None = off). Above 0 the
    /// indexer trains: its forward runs with autograd and saves its projections' inputs and outputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dsa_indexer_loss_coeff: Option<f64>,
    /// Chunked local attention (Llama 4's attention_chunk_size; Megatron's `chunk_attention_size`): the sequence is cut
    /// into chunks of this many tokens, each attending causally within itself — on the layers that apply RoPE.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_attention_size: Option<u64>,
    /// Layers without RoPE (Megatron-Core `no_rope_freq`): an int N skips RoPE on every N-th layer (1-indexed), a list
    /// gives 1 for a NoPE layer. Llama 4's NoPE layers attend globally.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_rope_freq: Option<MoeLayerFreq>,
    /// DeepSeek-V4 (`experimental_attention_variant = "dsv4_hybrid"`): each layer's compress ratio, the decoder's then
    /// the MTP layers' (0 sliding window, 4 CSA, 128 HCA), as Megatron Bridge's DeepSeekV4Bridge sets it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csa_compress_ratios: Option<Vec<u64>>,
    /// DeepSeek-V4's sliding window (keys per query besides the compressed ones); Bridge: the config's sliding_window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csa_window_size: Option<u64>,
    /// DeepSeek-V4's grouped low-rank output projection: `o_groups` groups of heads, each projected to `o_lora_rank`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub o_groups: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub o_lora_rank: Option<u64>,
    /// Hyper-connections (mHC): `num_residual_streams` copies of the residual stream, mixed around each sub-layer
    /// (Megatron Bridge's DeepSeek-V4 provider fields; Megatron-Core main names them enable_mhc_connections /
    /// mhc_num_residual_streams).
    #[serde(default, skip_serializing_if = "is_false")]
    pub enable_hyper_connections: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_residual_streams: Option<u64>,
    /// DeepSeek-V4's hash-routed MoE layers: the first `moe_n_hash_layers` route each token by its id (tid2eid, a
    /// buffer), so they need the input ids on their stage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moe_n_hash_layers: Option<u64>,
    /// Per-layer embeddings (Gemma 4 E2B / E4B; Megatron Bridge Gemma4DenseProvider `per_layer_embed_dim`): a second
    /// embedding table gives every token `per_layer_embed_dim` values for each decoder layer, mixed with a projection
    /// of the token's embedding, and each layer adds them to its output through a gate (h → dim) and a projection
    /// (dim → h) of its own.
    // Source: Megatron Bridge src/megatron/bridge/models/gemma/modeling_gemma4.py _attach_ple_modules
    // (per_layer_embedding VocabParallelEmbedding(per_layer_embed_vocab_size, num_layers·dim), per_layer_model_proj
    // ColumnParallelLinear(h → num_layers·dim), per_layer_proj_norm RMSNorm(dim)) and Gemma4DenseTransformerLayer
    // (per_layer_input_gate nn.Linear(h, dim), per_layer_projection nn.Linear(dim, h), post_per_layer_input_norm).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_layer_embed_dim: Option<u64>,
    /// Rows of the per-layer embedding table (Gemma4DenseProvider `per_layer_embed_vocab_size`; default: `vocab_size`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_layer_embed_vocab_size: Option<u64>,
    /// The last `num_kv_shared_layers` decoder layers attend with the keys and values of the last earlier layer of
    /// their attention type (Gemma4DenseProvider `num_kv_shared_layers`). Megatron builds their K and V projections all
    /// the same (the checkpoint has none: Bridge's _Gemma4DenseQKVMapping tolerates them missing), so they count.
    // Source: modeling_gemma4.py Gemma4DenseSelfAttention (is_kv_shared_layer; get_query_key_value_tensors computes
    // linear_qkv whole, then takes the stored keys and values of kv_shared_layer_index).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub num_kv_shared_layers: u64,
    /// The KV-shared layers' dense MLPs are twice `ffn_hidden_size` wide (Gemma4DenseProvider `use_double_wide_mlp`).
    // Source: modeling_gemma4.py _gemma4_dense_ffn_hidden_size (2 · ffn_hidden_size on layers ≥ num_layers −
    // num_kv_shared_layers when use_double_wide_mlp).
    #[serde(default, skip_serializing_if = "is_false")]
    pub use_double_wide_mlp: bool,
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

/// The attended (query, key) pairs of one causal sequence of `s` tokens when each query sees at most `w` keys (itself
/// and the w − 1 before it: a sliding window, or DSA's top-k), in units where full attention has s²: s·(2w − w(w−1)/s)
/// for w < s, else s².
// Source: Megatron Bridge src/megatron/bridge/training/utils/flop_utils.py calculate_swa_context (average context
// w − w(w−1)/(2s), against s/2 for full causal attention, whose pairs Megatron counts as s²/2); DSA: the
// DeepSeek-V3.2 report (core attention O(L·k) for top-k k) — the same count with w = k.
pub fn keys_within(s: f64, w: f64) -> f64 {
    if w < s { s * (2.0 * w - w * (w - 1.0) / s) } else { s * s }
}

/// The shape of a GQA attention block: heads, query groups (key/value heads) and the width of a head.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttentionShape {
    pub num_attention_heads: u64,
    pub num_query_groups: u64,
    pub kv_channels: u64,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Parameters of one transformer layer, split by how Megatron shards them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayerParams {
    /// Split across the tensor-parallel group: attention projections, dense MLP, shared experts.
    pub tp_sharded: u128,
    /// Identical on every TP rank: norms, router, row-parallel biases, MLA down-projections.
    pub replicated: u128,
    /// All routed experts of the layer together (split across EP·ETP).
    pub routed_experts: u128,
    /// One routed expert.
    pub per_expert: u128,
}

impl LayerParams {
    fn plus(self, o: LayerParams) -> LayerParams {
        LayerParams {
            tp_sharded: self.tp_sharded + o.tp_sharded,
            replicated: self.replicated + o.replicated,
            routed_experts: self.routed_experts + o.routed_experts,
            per_expert: self.per_expert + o.per_expert,
        }
    }
    pub fn total(&self) -> u128 {
        self.tp_sharded + self.replicated + self.routed_experts
    }
    /// Parameters a token passes through: everything but the routed experts it is not sent to.
    pub fn active(&self, topk: u64) -> u128 {
        self.tp_sharded + self.replicated + self.per_expert * topk as u128
    }
}

/// Parameter counts of the whole model, as published (unpadded vocabulary).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParamCounts {
    pub total: u128,
    pub active: u128,
    pub embedding: u128,
    pub output_layer: u128,
    pub mtp: u128,
    /// The vision encoder with its projector: in `total` (as Meta and Qwen publish a VLM's total), not in `active` (the
    /// language model's parameters a token passes through, as Meta's "17B active" counts them).
    #[serde(default)]
    pub vision_encoder: u128,
    /// Gemma 4's per-layer embeddings (table, projection and its norm): in `total` and `active`, as the word
    /// embeddings are. Google's "effective" count leaves them out, with the encoders.
    #[serde(default, skip_serializing_if = "is_zero_u128")]
    pub per_layer_embedding: u128,
}

fn is_zero_u128(n: &u128) -> bool {
    *n == 0
}

impl ModelConfig {
    pub fn is_moe(&self) -> bool {
        self.num_moe_experts.is_some_and(|e| e > 0)
    }

    pub fn num_experts(&self) -> u64 {
        self.num_moe_experts.unwrap_or(0)
    }

    /// Whether layer `index` (0-based) has an MoE MLP: per `moe_layer_freq`, or an `E` of the hybrid pattern.
    pub fn layer_is_moe(&self, index: u64) -> bool {
        self.layer_kind(index).ffn == Ffn::Moe
    }

    /// Decoder layers with an MoE MLP.
    pub fn num_moe_layers(&self) -> u64 {
        self.kind_totals().decoder_where(|k| k.ffn == Ffn::Moe)
    }

    /// Whether the attention layers are DeepSeek Sparse Attention with an indexer: the variant "dsa" (every attention
    /// layer, as DeepSeek-V3.2 and GLM-5 use it) or `D` layers in the hybrid pattern, with the indexer's sizes given.
    // Source: megatron/core/transformer/experimental_attention_variant/dsa.py (DSAttention, DSAIndexer);
    // megatron/core/models/hybrid/hybrid_layer_allocation.py (`D`).
    pub fn dsa(&self) -> Option<(u64, u64, u64)> {
        // DSAttention is an MLA variant: without multi_latent_attention there is no indexer to size.
        let on = self.multi_latent_attention
            && (self.experimental_attention_variant.as_deref() == Some("dsa") || self.hybrid_layer_pattern.as_ref().is_some_and(|p| p.has(b'D')));
        let (heads, dim) = (self.dsa_indexer_n_heads?, self.dsa_indexer_head_dim?);
        on.then_some((heads, dim, self.dsa_indexer_topk.unwrap_or(u64::MAX)))
    }

    /// The DSA indexer's parameters per attention layer, all duplicated on every TP rank: linear_wq_b (q_lora_rank →
    /// heads·dim), linear_wk (h → dim), k_norm (LayerNorm over dim: 2·dim) and linear_weights_proj (h → heads).
    // Source: megatron/core/transformer/experimental_attention_variant/dsa.py DSAIndexer.__init__ (parallel_mode
    // "duplicated", no biases); DeepSeek-V3.2-Exp inference/model.py Indexer (wq_b, wk, k_norm, weights_proj).
    pub fn dsa_indexer_params(&self) -> u128 {
        let Some((heads, dim, _)) = self.dsa() else { return 0 };
        let (h, heads, dim) = (self.hidden_size as u128, heads as u128, dim as u128);
        let q_in = self.q_lora_rank.unwrap_or(self.hidden_size) as u128;
        q_in * heads * dim + h * dim + 2 * dim + h * heads
    }

    /// Whether `experimental_attention_variant` makes `linear_attention_freq`'s layers Gated DeltaNet.
    pub fn gated_delta_net_variant(&self) -> bool {
        matches!(self.experimental_attention_variant.as_deref(), Some("gated_delta_net" | "gdn"))
    }

    /// The width routed experts read and write: `moe_latent_size` for a latent MoE, else the hidden size.
    pub fn expert_width(&self) -> u64 {
        self.moe_latent_size.unwrap_or(self.hidden_size)
    }

    /// The width of `kind`'s dense MLP: its own (heterogeneous layers) or `ffn_hidden_size`.
    pub fn dense_width(&self, kind: LayerKind) -> u64 {
        if kind.ffn_width > 0 { kind.ffn_width } else { self.ffn_hidden_size }
    }

    pub fn moe_ffn(&self) -> u64 {
        self.moe_ffn_hidden_size.unwrap_or(self.ffn_hidden_size)
    }

    /// Whether decoder layer `index` (0-based) attends through the sliding window, as Megatron-Core decides it.
    // Source: megatron/core/transformer/utils.py is_layer_window_attention (layer_number 1-indexed: no window_size →
    // full; no skip freq → windowed; an int N → windowed unless layer_number % N == 0; a list → its entry).
    pub fn is_window_layer(&self, index: u64) -> bool {
        if self.window_size.is_none() {
            return false;
        }
        match &self.window_attn_skip_freq {
            None => true,
            Some(MoeLayerFreq::Every(n)) => *n == 0 || (index + 1) % n != 0,
            Some(MoeLayerFreq::Pattern(p)) => p.get(usize::try_from(index).unwrap_or(usize::MAX)).is_some_and(|&v| v != 0),
        }
    }

    /// Whether decoder layer `index` (0-based) applies no RoPE, as Megatron-Core's no_rope_freq says.
    // Source: megatron/core/transformer/transformer_config.py no_rope_freq ("no_rope=4 means RoPE is applied for 3
    // layers, then skipped for 1"; a list: 1 = skip).
    pub fn is_nope_layer(&self, index: u64) -> bool {
        match &self.no_rope_freq {
            None => false,
            Some(MoeLayerFreq::Every(n)) => *n > 0 && (index + 1) % n == 0,
            Some(MoeLayerFreq::Pattern(p)) => p.get(usize::try_from(index).unwrap_or(usize::MAX)).is_some_and(|&v| v != 0),
        }
    }

    /// Decoder attention layers that attend within chunks: with chunk_attention_size, those that apply RoPE (Llama 4's
    /// NoPE layers attend globally), counted over the layer runs like [`ModelConfig::window_attention_layers`].
    // Source: transformers Llama4TextConfig (layer_types: "chunked_attention" where no_rope_layers is 1, i.e. RoPE).
    pub fn chunked_attention_layers(&self) -> u64 {
        if self.chunk_attention_size.is_none() {
            return 0;
        }
        self.attention_layers_where(|i| !self.is_nope_layer(i))
    }

    /// The attended (query, key) pairs of one sequence of `s` tokens cut into causal chunks of `c`, in units where full
    /// causal attention has s²: each whole chunk c², the remainder r².
    // Source: causal attention within each chunk (c²/2 pairs, Megatron's units ×2); Llama 4 chunked attention.
    pub fn chunk_pairs(s: f64, c: f64) -> f64 {
        if c <= 0.0 || c >= s {
            return s * s;
        }
        let whole = (s / c).floor();
        let r = s - whole * c;
        whole * c * c + r * r
    }

    /// Decoder attention layers that attend through the sliding window (MTP layers keep full attention unless
    /// `mtp_layer` makes them window layers: perf.rs adds those), counted over
    /// the layer runs: O(layers) at most, and nothing without a window.
    pub fn window_attention_layers(&self) -> u64 {
        if self.window_size.is_none() {
            return 0;
        }
        self.attention_layers_where(|i| self.is_window_layer(i))
    }

    /// Decoder attention layers (0-based index) `which` accepts, counted over the layer runs: O(layers) at most.
    fn attention_layers_where(&self, which: impl Fn(u64) -> bool) -> u64 {
        let mut start = 0u64;
        let mut n = 0u64;
        for (kind, len) in self.layer_runs() {
            if kind.mixer.is_attention() {
                let end = start.saturating_add(len).min(crate::limits::MAX_LAYERS);
                n += (start..end).filter(|&i| which(i)).count() as u64;
            }
            start = start.saturating_add(len);
        }
        n
    }

    /// The attended (query, key) pairs of one causal sequence of `s` tokens, in units where full attention has s²:
    /// s² without a window, else s·(2W − W(W−1)/s) for a window of W = left + right + 1 keys shorter than s.
    // Source: Megatron Bridge src/megatron/bridge/training/utils/flop_utils.py calculate_swa_context (average context
    // W − W(W−1)/(2s), against s/2 for full causal attention, whose pairs Megatron counts as s²/2).
    pub fn window_pairs(&self, s: f64) -> f64 {
        match self.window_size {
            Some([left, right]) => keys_within(s, left as f64 + right as f64 + 1.0),
            None => s * s,
        }
    }

    /// Vocabulary padded so that each TP rank holds an equal, aligned slice.
    // Source: megatron/training/tokenizer/tokenizer.py `_vocab_size_with_padding`: multiple = divisible_by * TP.
    pub fn padded_vocab_size(&self, tp: u64) -> u64 {
        let multiple = (self.make_vocab_size_divisible_by.max(1) as u128) * (tp.max(1) as u128);
        let padded = (self.vocab_size as u128).div_ceil(multiple) * multiple;
        u64::try_from(padded).unwrap_or(u64::MAX)
    }

    pub(crate) fn norm_params(&self, width: u64) -> u128 {
        // LayerNorm has a weight and a bias; RMSNorm only a weight.
        let per = if self.normalization.eq_ignore_ascii_case("LayerNorm") { 2 } else { 1 };
        per * width as u128
    }

    /// Parameters of the attention block, including its input norm.
    // Source: megatron/core/transformer/attention.py (SelfAttention linear_qkv/linear_proj) and
    // multi_latent_attention.py (MLASelfAttention: linear_q_down_proj/up_proj, linear_kv_down_proj/up_proj).
    pub fn attention_params(&self) -> (u128, u128) {
        self.attention_params_of(Mixer::Attention)
    }

    /// The attention shape of a layer whose mixer is `mixer`: the window layers' own ([`ModelConfig::sliding_attention_setting`])
    /// for [`Mixer::WindowAttention`], else the model's heads, query groups and kv_channels.
    pub fn attention_shape(&self, mixer: Mixer) -> AttentionShape {
        match (mixer, self.sliding_attention_setting) {
            (Mixer::WindowAttention, Some(shape)) => shape,
            _ => AttentionShape { num_attention_heads: self.num_attention_heads, num_query_groups: self.num_query_groups, kv_channels: self.kv_channels },
        }
    }

    /// A GQA attention layer's model FLOPs per token, forward and backward, for the shape of `mixer`: (projections
    /// 6·(h·(q + 2·kv) + q·h), plus 6·h·heads for a head-wise gate; the core 6·q per (query, key) pair in Megatron's units
    /// where full causal attention has s² pairs), with q = heads·kv_channels and kv = groups·kv_channels.
    // Source: megatron/training/training.py transformer_flops (attention projections and core, ×3 fwd+bwd ×2 FMA);
    // the head-wise gate is one more h → heads GEMM (step35_bridge.py merges g_proj into linear_qkv).
    pub fn gqa_flops_per_token(&self, mixer: Mixer) -> (f64, f64) {
        let sh = self.attention_shape(mixer);
        let (h, heads) = (self.hidden_size as f64, sh.num_attention_heads as f64);
        let q = sh.kv_channels as f64 * heads;
        let kv = sh.kv_channels as f64 * sh.num_query_groups as f64;
        let gate = if self.head_wise_attn_gate { h * heads } else { 0.0 };
        // Keys as values (attention_k_eq_v): one h → kv projection instead of two.
        let kv_projections = if self.keys_as_values(mixer) { 1.0 } else { 2.0 };
        (6.0 * (h * (q + kv_projections * kv) + q * h + gate), 6.0 * q)
    }

    /// Whether layers of `mixer` use their keys as values (`attention_k_eq_v`: the GQA layers of the model's own shape).
    pub fn keys_as_values(&self, mixer: Mixer) -> bool {
        self.attention_k_eq_v && mixer == Mixer::Attention && !self.multi_latent_attention
    }

    /// [`ModelConfig::attention_params`] of an attention layer whose mixer is `mixer` (its own shape, see
    /// [`ModelConfig::attention_shape`]).
    pub fn attention_params_of(&self, mixer: Mixer) -> (u128, u128) {
        let shape = self.attention_shape(mixer);
        let h = self.hidden_size as u128;
        let heads = shape.num_attention_heads as u128;
        let mut sharded: u128;
        let mut replicated = self.norm_params(self.hidden_size);
        if self.multi_latent_attention {
            let qk = (self.qk_head_dim + self.qk_pos_emb_head_dim) as u128;
            let kv_lora = self.kv_lora_rank as u128;
            let rope = self.qk_pos_emb_head_dim as u128;
            sharded = match self.q_lora_rank {
                Some(r) => {
                    let r = r as u128;
                    // The down-projection is duplicated on every TP rank; its output norm too.
                    replicated += h * r + self.norm_params(r as u64);
                    r * heads * qk
                }
                None => h * heads * qk,
            };
            replicated += h * (kv_lora + rope) + self.norm_params(kv_lora as u64) + self.dsa_indexer_params();
            sharded += kv_lora * heads * (self.qk_head_dim + self.v_head_dim) as u128;
            sharded += heads * self.v_head_dim as u128 * h;
            if self.add_bias_linear {
                replicated += h;
            }
        } else {
            let kv = shape.kv_channels as u128;
            let groups = shape.num_query_groups as u128;
            // Keys as values (attention_k_eq_v): no V projection.
            let kv_projections = if self.keys_as_values(mixer) { 1 } else { 2 };
            let qkv_out = (heads + kv_projections * groups) * kv;
            sharded = h * qkv_out + heads * kv * h;
            if self.add_qkv_bias || self.add_bias_linear {
                sharded += qkv_out;
            }
            if self.add_bias_linear {
                replicated += h;
            }
            if self.qk_layernorm {
                replicated += 2 * self.norm_params(shape.kv_channels);
            }
            if self.softmax_type.as_deref() == Some("learnable") {
                // Attention sinks: one learnable softmax offset per head, split with the heads over TP
                // (transformer/dot_product_attention.py softmax_offset, shape [heads per partition]).
                sharded += heads;
            }
            if self.attention_output_gate {
                // Gated attention: linear_qkv's output grows by one gate per query channel (attention.py SelfAttention:
                // linear_qkv_out_dim += kv_channels · num_attention_heads).
                sharded += h * heads * kv;
            }
            if self.head_wise_attn_gate {
                // Head-wise gate: one gate logit per head (Megatron Bridge step35_bridge.py merges g_proj, h → heads,
                // into linear_qkv; Step-3.5 modeling: sigmoid(g_proj(x)) scales each head's output).
                sharded += h * heads;
            }
        }
        (sharded, replicated)
    }

    fn mlp_weights(&self, ffn: u64) -> u128 {
        self.mlp_weights_at(self.hidden_size, ffn)
    }

    /// An MLP from and to `width` (the hidden size, or a latent MoE's latent size).
    fn mlp_weights_at(&self, width: u64, ffn: u64) -> u128 {
        // SwiGLU-style gated units have two input projections (fc1 is 2·ffn wide).
        let fc1 = if self.gated_linear_unit { 2 } else { 1 } * ffn as u128;
        let mut p = width as u128 * fc1 + ffn as u128 * width as u128;
        if self.add_bias_linear {
            p += fc1;
        }
        p
    }

    /// Parameters of layer `index`: those of its kind.
    pub fn layer_params(&self, index: u64) -> LayerParams {
        self.params_of(self.layer_kind(index))
    }

    /// Parameters of one layer of `kind`: its mixer (with the input norm) and its feed-forward block (with its norm).
    pub fn params_of(&self, kind: LayerKind) -> LayerParams {
        let mixer = match kind.mixer {
            Mixer::None => LayerParams::default(),
            Mixer::Attention | Mixer::WindowAttention => {
                let (tp_sharded, replicated) = self.attention_params_of(kind.mixer);
                LayerParams { tp_sharded, replicated, ..Default::default() }
            }
            Mixer::Dsv4Window | Mixer::Dsv4Csa | Mixer::Dsv4Hca => {
                let (tp_sharded, replicated) = self.dsv4_attention_params(kind.mixer);
                LayerParams { tp_sharded, replicated, ..Default::default() }
            }
            Mixer::Mamba => self.mamba_params(),
            Mixer::GatedDeltaNet => self.gdn_params(),
        };
        // Hyper-connections: one module around each sub-layer the layer has.
        let sublayers = u128::from(kind.mixer != Mixer::None) + u128::from(kind.ffn != Ffn::None);
        let hc = self.hyper_connection_params();
        let hc = LayerParams { replicated: hc.replicated * sublayers, ..Default::default() };
        mixer.plus(self.ffn_params(kind)).plus(self.per_layer_input_params(kind)).plus(hc)
    }

    /// A layer's share of the per-layer embeddings: its gate (h → dim) and projection (dim → h), plain nn.Linear
    /// modules, so whole on every TP rank, and the norm after them.
    // Source: Megatron Bridge modeling_gemma4.py Gemma4DenseTransformerLayer.__init__ (per_layer_input_gate,
    // per_layer_projection: nn.Linear without bias; post_per_layer_input_norm over h).
    fn per_layer_input_params(&self, kind: LayerKind) -> LayerParams {
        match self.per_layer_embed_dim {
            Some(dim) if kind != LayerKind::EMPTY => {
                LayerParams { replicated: 2 * self.hidden_size as u128 * dim as u128 + self.norm_params(self.hidden_size), ..Default::default() }
            }
            _ => LayerParams::default(),
        }
    }

    /// Multiply-adds per token of the per-layer embeddings' GEMMs, forward: each layer's gate and projection (2·h·dim)
    /// and the projection of the token's embedding (h·num_layers·dim); the table is a lookup.
    // Source: the modules of per_layer_input_params and per_layer_embedding_params, one multiply-add per weight.
    pub fn per_layer_embedding_macs(&self) -> f64 {
        let Some(dim) = self.per_layer_embed_dim else { return 0.0 };
        let (h, l, dim) = (self.hidden_size as f64, self.num_layers as f64, dim as f64);
        2.0 * h * dim * l + h * l * dim
    }

    /// The per-layer embeddings beside the word embeddings, on the first stage: (split over TP, whole on every TP
    /// rank). The table (rows × num_layers·dim, split by rows) and the projection of the token's embedding
    /// (h → num_layers·dim, column-parallel), then the projection's norm over dim.
    // Source: Megatron Bridge modeling_gemma4.py _attach_ple_modules (VocabParallelEmbedding, ColumnParallelLinear
    // without bias, Gemma4RMSNorm(dim)); attached only when pre_process.
    pub fn per_layer_embedding_params(&self) -> (u128, u128) {
        let Some(dim) = self.per_layer_embed_dim else { return (0, 0) };
        let rows = self.per_layer_embed_vocab_size.unwrap_or(self.vocab_size) as u128;
        let width = self.num_layers as u128 * dim as u128;
        (rows * width + self.hidden_size as u128 * width, self.norm_params(dim))
    }

    /// Parameters of a feed-forward block with its pre-norm (`pre_mlp_layernorm`, or fused into fc1).
    // Source: megatron/core/transformer/mlp.py (MLP fc1/fc2), moe/moe_layer.py, moe/router.py (TopKRouter weight E×h),
    // moe/shared_experts.py (gate_weight 1×h with moe_shared_expert_gate).
    fn ffn_params(&self, kind: LayerKind) -> LayerParams {
        let h = self.hidden_size as u128;
        let mut lp = LayerParams { replicated: self.norm_params(self.hidden_size), ..Default::default() };
        match kind.ffn {
            Ffn::None => return LayerParams::default(),
            Ffn::Moe => {
                let experts = self.num_experts() as u128;
                lp.replicated += experts * h; // router
                // Latent MoE: experts work at the latent width behind two duplicated projections h → ℓ → h
                // (moe/moe_layer.py fc1_latent_proj / fc2_latent_proj, TELinear parallel_mode="duplicated").
                let width = self.expert_width();
                if let Some(l) = self.moe_latent_size {
                    lp.replicated += 2 * h * l as u128 + if self.add_bias_linear { l as u128 + h } else { 0 };
                }
                lp.per_expert = self.mlp_weights_at(width, self.moe_ffn());
                if self.add_bias_linear {
                    // Each expert's fc2 has its own bias (moe/experts.py TEGroupedMLP: bias=add_bias_linear on fc1 and fc2).
                    lp.per_expert += width as u128;
                }
                lp.routed_experts = lp.per_expert * experts;
                if let Some(shared) = self.moe_shared_expert_intermediate_size.filter(|&s| s > 0) {
                    lp.tp_sharded += self.mlp_weights(shared);
                    if self.moe_shared_expert_gate {
                        lp.replicated += h;
                    }
                }
            }
            Ffn::Dense => {
                lp.tp_sharded += self.mlp_weights(self.dense_width(kind));
                if self.add_bias_linear {
                    lp.replicated += h; // fc2 bias is added after the row-parallel reduction
                }
            }
        }
        lp
    }

    /// Parameters of the input embedding: the word embeddings plus, with learned absolute positions, the position table.
    pub fn embedding_params(&self, vocab: u64) -> u128 {
        self.word_embedding_params(vocab) + self.position_embedding_params(self.max_position_embeddings.unwrap_or(0))
    }

    /// The word embeddings, vocab × h: a VocabParallelEmbedding, split over TP by vocabulary.
    // Source: megatron/core/models/common/embeddings/language_model_embedding.py (word_embeddings).
    pub fn word_embedding_params(&self, vocab: u64) -> u128 {
        vocab as u128 * self.hidden_size as u128
    }

    /// The learned absolute position table of `rows` positions × h (0 for RoPE and the rest): a plain
    /// torch.nn.Embedding, replicated on every TP rank.
    // Source: megatron/core/models/common/embeddings/language_model_embedding.py (position_embeddings, only for
    // position_embedding_type == 'learned_absolute').
    pub fn position_embedding_params(&self, rows: u64) -> u128 {
        if self.position_embedding_type == "learned_absolute" { rows as u128 * self.hidden_size as u128 } else { 0 }
    }

    /// The final norm after the last decoder layer, with the hyper-connections' head contraction where the model has
    /// them (both on the stage that holds the final norm).
    // Source: megatron/core/transformer/transformer_block.py (final_layernorm, has_final_layernorm_in_this_stage);
    // Megatron Bridge deepseek_v4_bridge.py (decoder.hc_head_fn / hc_head_base / hc_head_scale on the TransformerBlock).
    pub fn final_norm_params(&self) -> u128 {
        self.norm_params(self.hidden_size) + self.hc_head_params()
    }

    /// Parameter counts as published: unpadded vocabulary, MTP modules reported apart.
    pub fn param_counts(&self) -> ParamCounts {
        self.param_counts_of(&self.kind_totals())
    }

    /// [`ModelConfig::param_counts`] from the model's kind totals, counted once by the caller.
    pub fn param_counts_of(&self, kt: &KindTotals) -> ParamCounts {
        let (mut total, mut active) = (0u128, 0u128);
        for (lp, n) in kt.table.params().iter().zip(kt.decoder.0) {
            total += n as u128 * lp.total();
            active += n as u128 * lp.active(self.moe_router_topk);
        }
        let embedding = self.embedding_params(self.vocab_size);
        let output_layer = if self.share_embeddings_and_output_weights {
            0
        } else {
            self.vocab_size as u128 * self.hidden_size as u128
        };
        let final_norm = self.final_norm_params();
        let per_layer_embedding = {
            let (split, whole) = self.per_layer_embedding_params();
            split + whole
        };
        total += embedding + output_layer + final_norm + per_layer_embedding;
        active += embedding + output_layer + final_norm + per_layer_embedding;
        let mtp = kt.mtp.params.total() * kt.mtp.weight_copies as u128;
        let vision_encoder = self.vision_config.as_ref().map_or(0, |v| v.params().total());
        total += vision_encoder;
        ParamCounts { total, active, embedding, output_layer, mtp, vision_encoder, per_layer_embedding }
    }
}
