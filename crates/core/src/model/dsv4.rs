//! DeepSeek-V4 as Megatron-Core builds it (`experimental_attention_variant = "dsv4_hybrid"`, Megatron Bridge's
//! DeepSeekV4Bridge): per layer a hybrid MQA attention of its compress ratio (0 sliding window, 4 CSA with an indexer,
//! 128 HCA), a grouped low-rank output projection, and hyper-connections (`num_residual_streams` residual streams
//! mixed around each sub-layer).
//!
//! Parameters, per attention layer (h hidden, n heads, d = v_head_dim the MQA head width, r_q = q_lora_rank,
//! g = o_groups, r_o = o_lora_rank):
//! - TP-sharded: linear_q_up_proj r_q·n·d, linear_kv_proj h·d (column-parallel), linear_proj g·r_o·h (row-parallel),
//!   attn_sink n.
//! - Replicated: the input norm h, linear_q_down_proj h·r_q (duplicated) and q_layernorm r_q, kv_layernorm d,
//!   linear_o_group_proj (g·r_o)·(n·d/g) (a plain parameter, every group on every TP rank), and on compressed layers
//!   the compressor (linear_wkv, linear_wgate h·c·d each, ape ratio·c·d, norm d; c = 2 for the overlapping ratio 4,
//!   else 1) and on ratio-4 layers the indexer (linear_wq_b r_q·H·D, linear_weights_proj h·H, a compressor of its own
//!   at width D; H, D = dsa_indexer_n_heads, dsa_indexer_head_dim).
//!
//! Hyper-connections, per sub-layer (attention, MLP): mapping_proj n_s·h → n_s² + 2·n_s, a bias of n_s² + 2·n_s and
//! three scalar gates (n_s = num_residual_streams); the block's head contraction (hc_head_fn n_s × n_s·h, base n_s,
//! scale 1) sits with the final norm, and each MTP depth has one of its own.
// Source: Megatron-LM megatron/core/transformer/experimental_attention_variant/deepseek_v4_hybrid_attention.py
// (DSv4HybridAttention: linear_o_group_proj [o_groups·o_lora_rank, n·v_head_dim/o_groups] nn.Parameter, linear_proj
// o_groups·o_lora_rank → h; DSv4HybridSelfAttention: linear_q_down_proj duplicated, linear_q_up_proj and
// linear_kv_up_proj column-parallel); megatron/core/transformer/hyper_connection.py HyperConnectionModule
// (mapping_proj nn.Linear(n·h, n² + 2n, bias=False), alpha_pre/post/res, bias n² + 2n); Megatron Bridge
// deepseek_v4_bridge.py mapping_registry (compressor and indexer linears ReplicatedMapping, attn_sink ColumnParallel,
// decoder.hc_head_fn/base/scale, mtp.layers.N.hc_head_*); DeepSeek-V4-Flash inference/model.py @60d8d70 (Compressor:
// ape [ratio, coff·head_dim], wkv/wgate dim → coff·head_dim, coff = 1 + (ratio == 4); Indexer: wq_b, weights_proj,
// compressor at index_head_dim; Block hc_*_fn [(2 + hc)·hc, hc·dim]).

use super::{LayerParams, Mixer, ModelConfig};

impl ModelConfig {
    /// DeepSeek-V4's per-layer compress ratios (decoder layers, then MTP layers), when the model is one.
    pub fn dsv4_ratios(&self) -> Option<&[u64]> {
        (self.experimental_attention_variant.as_deref() == Some("dsv4_hybrid")).then_some(())?;
        self.csa_compress_ratios.as_deref()
    }

    /// Whether the model is DeepSeek-V4's hybrid attention.
    pub fn is_dsv4(&self) -> bool {
        self.dsv4_ratios().is_some()
    }

    /// The MQA head width of DeepSeek-V4's attention: `v_head_dim` (queries, the one key/value head and the output).
    fn dsv4_head(&self) -> u128 {
        self.v_head_dim as u128
    }

    /// The output groups and their rank (`o_groups`, `o_lora_rank`), 1 and `hidden_size` when unset.
    pub fn dsv4_output(&self) -> (u64, u64) {
        (self.o_groups.unwrap_or(1).max(1), self.o_lora_rank.unwrap_or(self.hidden_size))
    }

    /// A compressor's parameters at head width `d` for `ratio`: linear_wkv and linear_wgate (h → c·d), ape
    /// (ratio × c·d) and its norm (d); none for ratio 0.
    // Source: DeepSeek-V4-Flash inference/model.py Compressor.__init__; Bridge's compressor.linear_wkv / linear_wgate / ape / norm.
    fn compressor_params(&self, ratio: u64, d: u128) -> u128 {
        if ratio <= 1 {
            return 0;
        }
        let c = if ratio == 4 { 2 } else { 1 };
        2 * self.hidden_size as u128 * c * d + ratio as u128 * c * d + d
    }

    /// The CSA indexer's parameters (ratio-4 layers): linear_wq_b (q_lora_rank → H·D), linear_weights_proj (h → H)
    /// and its own compressor at width D.
    // Source: DeepSeek-V4-Flash inference/model.py Indexer.__init__; Bridge's indexer.linear_wq_b / linear_weights_proj / compressor.*.
    fn csa_indexer_params(&self) -> u128 {
        let (heads, dim) = (self.dsa_indexer_n_heads.unwrap_or(0) as u128, self.dsa_indexer_head_dim.unwrap_or(0) as u128);
        let q_in = self.q_lora_rank.unwrap_or(self.hidden_size) as u128;
        q_in * heads * dim + self.hidden_size as u128 * heads + self.compressor_params(4, dim)
    }

    /// One DeepSeek-V4 attention layer of `mixer` with its input norm: (TP-sharded, replicated).
    // Source: deepseek_v4_hybrid_attention.py DSv4HybridAttention / DSv4HybridSelfAttention.__init__ (module header).
    pub fn dsv4_attention_params(&self, mixer: Mixer) -> (u128, u128) {
        let (h, n, d) = (self.hidden_size as u128, self.num_attention_heads as u128, self.dsv4_head());
        let q_lora = self.q_lora_rank.unwrap_or(self.hidden_size) as u128;
        let (groups, rank) = self.dsv4_output();
        let (g, r) = (groups as u128, rank as u128);
        let sharded = q_lora * n * d + h * d + g * r * h + n;
        let mut replicated = self.norm_params(self.hidden_size) + h * q_lora + self.norm_params(q_lora as u64);
        replicated += self.norm_params(self.v_head_dim) + g * r * (n * d / g);
        replicated += self.compressor_params(mixer.compress_ratio(), d);
        if mixer == Mixer::Dsv4Csa {
            replicated += self.csa_indexer_params();
        }
        (sharded, replicated)
    }

    /// The residual streams of hyper-connections (`num_residual_streams`), 0 without them.
    pub fn residual_streams(&self) -> u64 {
        if self.enable_hyper_connections { self.num_residual_streams.unwrap_or(4).max(1) } else { 0 }
    }

    /// One hyper-connection module (one per sub-layer): mapping_proj n·h × (n² + 2n), its bias and three gates.
    // Source: megatron/core/transformer/hyper_connection.py HyperConnectionModule.__init__.
    pub fn hyper_connection_params(&self) -> LayerParams {
        let n = self.residual_streams() as u128;
        if n == 0 {
            return LayerParams::default();
        }
        let mix = n * n + 2 * n;
        LayerParams { replicated: mix * n * self.hidden_size as u128 + mix + 3, ..Default::default() }
    }

    /// The hyper-connection head that contracts the streams before the final norm (the decoder's, and each MTP
    /// depth's): hc_head_fn n × n·h, hc_head_base n, hc_head_scale 1.
    // Source: Megatron Bridge deepseek_v4_bridge.py (decoder.hc_head_fn / hc_head_base / hc_head_scale); inference/model.py Transformer.
    pub fn hc_head_params(&self) -> u128 {
        let n = self.residual_streams() as u128;
        if n == 0 { 0 } else { n * n * self.hidden_size as u128 + n + 1 }
    }

    /// The GEMM weights among a DeepSeek-V4 attention layer's replicated parameters (linear_q_down_proj, the output
    /// group projection, the compressor's and the indexer's linears).
    // Source: the duplicated linears of DSv4HybridSelfAttention and the compressor / indexer (parallel_mode "duplicated").
    pub fn dsv4_replicated_gemms(&self, mixer: Mixer) -> f64 {
        let (h, n, d) = (self.hidden_size as f64, self.num_attention_heads as f64, self.v_head_dim as f64);
        let q_lora = self.q_lora_rank.unwrap_or(self.hidden_size) as f64;
        let (_, r) = self.dsv4_output();
        let c = |ratio: u64| if ratio == 4 { 2.0 } else if ratio > 1 { 1.0 } else { 0.0 };
        let mut w = h * q_lora + r as f64 * n * d + 2.0 * h * c(mixer.compress_ratio()) * d;
        if mixer == Mixer::Dsv4Csa {
            let (heads, dim) = (self.dsa_indexer_n_heads.unwrap_or(0) as f64, self.dsa_indexer_head_dim.unwrap_or(0) as f64);
            w += q_lora * heads * dim + h * heads + 2.0 * h * 2.0 * dim;
        }
        w
    }

    /// Model FLOPs per token of one DeepSeek-V4 attention layer of `mixer` in a causal sequence of `s` tokens, forward
    /// and backward: (GEMMs, core attention, indexer scores).
    /// - GEMMs: 6 per weight of every linear a token passes ([`ModelConfig::dsv4_attention_params`]' GEMMs), the output
    ///   group projection's einsum included, plus the hyper-connections' mapping_proj (2 per layer).
    /// - Core: each query attends to the window's `csa_window_size` keys and, on a compressed layer, to compressed keys:
    ///   every earlier one of s/128 (HCA), the indexer's top-k of s/4 (CSA); 6·n·d per (query, key) pair (QKᵀ and PV at
    ///   head width d, fwd + bwd).
    /// - Indexer scores (CSA): every query against every earlier compressed key, H·D + H multiply-adds, ×3 for the
    ///   backward as the DSA indexer's count has it.
    // Source: the GEMM and core terms as megatron/training/training.py transformer_flops counts attention (6 per weight,
    // 2·2 per query-key pair and head dim for QKᵀ and PV, ×3 fwd+bwd); the attended keys per query from DeepSeek-V4-Flash
    // inference/model.py Attention.forward (get_window_topk_idxs window + get_compress_topk_idxs every (i+1)//ratio
    // compressed key, or Indexer.forward's top-k of them); the indexer's scores from Indexer.forward (einsum
    // "bshd,btd->bsht" then weights over heads).
    pub fn dsv4_flops_per_token(&self, mixer: Mixer, s: f64) -> (f64, f64, f64) {
        let (h, n, d) = (self.hidden_size as f64, self.num_attention_heads as f64, self.v_head_dim as f64);
        let q_lora = self.q_lora_rank.unwrap_or(self.hidden_size) as f64;
        let (g, r) = self.dsv4_output();
        let sharded_gemms = q_lora * n * d + h * d + g as f64 * r as f64 * h;
        let streams = self.residual_streams() as f64;
        let hc = 2.0 * streams * h * (streams * streams + 2.0 * streams);
        let gemm = 6.0 * (sharded_gemms + self.dsv4_replicated_gemms(mixer) + hc);
        let window = self.csa_window_size.unwrap_or(128) as f64;
        // Keys per query averaged over the sequence (causal): the window, then the compressed keys.
        let mut keys = super::keys_within(s, window) / (2.0 * s);
        let mut scores = 0.0;
        match mixer {
            Mixer::Dsv4Hca => keys += s / 128.0 / 2.0,
            Mixer::Dsv4Csa => {
                let compressed = s / 4.0;
                let k = self.dsa_indexer_topk.unwrap_or(u64::MAX) as f64;
                // Query i sees (i+1)/4 compressed keys, capped at the top-k: averaged over i < s.
                keys += if compressed <= k { compressed / 2.0 } else { k - 2.0 * k * k / s };
                let (heads, dim) = (self.dsa_indexer_n_heads.unwrap_or(0) as f64, self.dsa_indexer_head_dim.unwrap_or(0) as f64);
                scores = 3.0 * 2.0 * (heads * dim + heads) * compressed / 2.0;
            }
            _ => {}
        }
        (gemm, 6.0 * 2.0 * n * d * keys, scores)
    }
}
