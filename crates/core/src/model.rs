//! The model: Megatron-Core TransformerConfig fields, resolved, and the parameter counts they imply.

use serde::{Deserialize, Serialize};

/// Which layers are MoE: Megatron's `moe_layer_freq`, an int N (every N-th layer, from layer 0) or a 0/1 list.
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
    pub fn total(&self) -> u128 {
        self.tp_sharded + self.replicated + self.routed_experts
    }
    /// Parameters a token passes through: everything but the routed experts it is not sent to.
    pub fn active(&self, topk: u64) -> u128 {
        self.tp_sharded + self.replicated + self.per_expert * topk as u128
    }
}

/// Parameters of each kind of layer (see [`ModelConfig::kinds`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LayerKinds {
    pub dense: LayerParams,
    pub moe: LayerParams,
    pub mtp: LayerParams,
}

/// Parameter counts of the whole model, as published (unpadded vocabulary).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParamCounts {
    pub total: u128,
    pub active: u128,
    pub embedding: u128,
    pub output_layer: u128,
    pub mtp: u128,
}

impl ModelConfig {
    pub fn is_moe(&self) -> bool {
        self.num_moe_experts.is_some_and(|e| e > 0)
    }

    pub fn num_experts(&self) -> u64 {
        self.num_moe_experts.unwrap_or(0)
    }

    /// Whether layer `index` (0-based) has an MoE MLP, per `moe_layer_freq`.
    // Source: megatron/core/models/gpt/moe_module_specs / transformer_block `moe_layer_pattern`.
    pub fn layer_is_moe(&self, index: u64) -> bool {
        if !self.is_moe() {
            return false;
        }
        match &self.moe_layer_freq {
            MoeLayerFreq::Every(n) => *n > 0 && index % n == 0,
            MoeLayerFreq::Pattern(p) => p.get(index as usize).is_some_and(|&v| v != 0),
        }
    }

    pub fn num_moe_layers(&self) -> u64 {
        self.moe_layers_in(0, self.num_layers)
    }

    /// How many of the `count` layers from `start` are MoE layers: what `layer_is_moe` says of each, counted
    /// arithmetically for `moe_layer_freq = N`.
    pub fn moe_layers_in(&self, start: u64, count: u64) -> u64 {
        if !self.is_moe() {
            return 0;
        }
        let end = start.saturating_add(count).min(self.num_layers);
        let start = start.min(end);
        match &self.moe_layer_freq {
            // Layers 0, n, 2n, …: ⌈end/n⌉ of them below `end`, ⌈start/n⌉ below `start`.
            MoeLayerFreq::Every(n) => if *n == 0 { 0 } else { end.div_ceil(*n) - start.div_ceil(*n) },
            MoeLayerFreq::Pattern(p) => {
                let slice = |i: u64| usize::try_from(i).unwrap_or(usize::MAX).min(p.len());
                p[slice(start)..slice(end)].iter().filter(|&&v| v != 0).count() as u64
            }
        }
    }

    pub fn moe_ffn(&self) -> u64 {
        self.moe_ffn_hidden_size.unwrap_or(self.ffn_hidden_size)
    }

    /// Vocabulary padded so that each TP rank holds an equal, aligned slice.
    // Source: megatron/training/tokenizer/tokenizer.py `_vocab_size_with_padding`: multiple = divisible_by * TP.
    pub fn padded_vocab_size(&self, tp: u64) -> u64 {
        let multiple = (self.make_vocab_size_divisible_by.max(1) as u128) * (tp.max(1) as u128);
        let padded = (self.vocab_size as u128).div_ceil(multiple) * multiple;
        u64::try_from(padded).unwrap_or(u64::MAX)
    }

    fn norm_params(&self, width: u64) -> u128 {
        // LayerNorm has a weight and a bias; RMSNorm only a weight.
        let per = if self.normalization.eq_ignore_ascii_case("LayerNorm") { 2 } else { 1 };
        per * width as u128
    }

    /// Parameters of the attention block, including its input norm.
    // Source: megatron/core/transformer/attention.py (SelfAttention linear_qkv/linear_proj) and
    // multi_latent_attention.py (MLASelfAttention: linear_q_down_proj/up_proj, linear_kv_down_proj/up_proj).
    pub fn attention_params(&self) -> (u128, u128) {
        let h = self.hidden_size as u128;
        let heads = self.num_attention_heads as u128;
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
            replicated += h * (kv_lora + rope) + self.norm_params(kv_lora as u64);
            sharded += kv_lora * heads * (self.qk_head_dim + self.v_head_dim) as u128;
            sharded += heads * self.v_head_dim as u128 * h;
            if self.add_bias_linear {
                replicated += h;
            }
        } else {
            let kv = self.kv_channels as u128;
            let groups = self.num_query_groups as u128;
            let qkv_out = (heads + 2 * groups) * kv;
            sharded = h * qkv_out + heads * kv * h;
            if self.add_qkv_bias || self.add_bias_linear {
                sharded += qkv_out;
            }
            if self.add_bias_linear {
                replicated += h;
            }
            if self.qk_layernorm {
                replicated += 2 * self.norm_params(self.kv_channels);
            }
        }
        (sharded, replicated)
    }

    fn mlp_weights(&self, ffn: u64) -> u128 {
        // SwiGLU-style gated units have two input projections (fc1 is 2·ffn wide).
        let fc1 = if self.gated_linear_unit { 2 } else { 1 } * ffn as u128;
        let mut p = self.hidden_size as u128 * fc1 + ffn as u128 * self.hidden_size as u128;
        if self.add_bias_linear {
            p += fc1;
        }
        p
    }

    /// Parameters of layer `index`: they depend only on whether it is an MoE layer.
    pub fn layer_params(&self, index: u64) -> LayerParams {
        self.kind_params(self.layer_is_moe(index))
    }

    /// Parameters of a dense (`moe = false`) or MoE decoder layer.
    // Source: megatron/core/transformer/mlp.py (MLP fc1/fc2), moe/moe_layer.py, moe/router.py (TopKRouter weight E×h),
    // moe/shared_experts.py.
    pub fn kind_params(&self, moe: bool) -> LayerParams {
        let (attn_sharded, attn_replicated) = self.attention_params();
        let h = self.hidden_size as u128;
        let mut lp = LayerParams {
            tp_sharded: attn_sharded,
            replicated: attn_replicated + self.norm_params(self.hidden_size),
            ..Default::default()
        };
        if moe {
            let experts = self.num_experts() as u128;
            lp.replicated += experts * h; // router
            lp.per_expert = self.mlp_weights(self.moe_ffn());
            lp.routed_experts = lp.per_expert * experts;
            if let Some(shared) = self.moe_shared_expert_intermediate_size.filter(|&s| s > 0) {
                lp.tp_sharded += self.mlp_weights(shared);
            }
            if self.add_bias_linear {
                lp.replicated += h; // fc2 bias is added after the row-parallel reduction
            }
        } else {
            lp.tp_sharded += self.mlp_weights(self.ffn_hidden_size);
            if self.add_bias_linear {
                lp.replicated += h;
            }
        }
        lp
    }

    /// Parameters of a dense layer, an MoE layer and an MTP module, for callers that size many layouts of one model.
    pub fn kinds(&self) -> LayerKinds {
        LayerKinds { dense: self.kind_params(false), moe: self.kind_params(true), mtp: self.mtp_layer_params() }
    }

    /// One MTP module: two norms, the 2h→h projection, a transformer layer (like the last decoder layer) and a norm.
    // Source: megatron/core/transformer/multi_token_prediction.py (MultiTokenPredictionLayer: enorm, hnorm, eh_proj, final_layernorm).
    pub fn mtp_layer_params(&self) -> LayerParams {
        let mut lp = self.layer_params(self.num_layers.saturating_sub(1));
        let h = self.hidden_size as u128;
        lp.tp_sharded += 2 * h * h;
        lp.replicated += 3 * self.norm_params(self.hidden_size);
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

    /// The final norm after the last decoder layer.
    // Source: megatron/core/transformer/transformer_block.py (final_layernorm, has_final_layernorm_in_this_stage).
    pub fn final_norm_params(&self) -> u128 {
        self.norm_params(self.hidden_size)
    }

    /// Parameter counts as published: unpadded vocabulary, MTP modules reported apart.
    pub fn param_counts(&self) -> ParamCounts {
        let n_moe = self.num_moe_layers() as u128;
        let n_dense = self.num_layers as u128 - n_moe;
        let (dense, moe) = (self.kind_params(false), self.kind_params(true));
        let mut total = n_dense * dense.total() + n_moe * moe.total();
        let mut active = n_dense * dense.active(self.moe_router_topk) + n_moe * moe.active(self.moe_router_topk);
        let embedding = self.embedding_params(self.vocab_size);
        let output_layer = if self.share_embeddings_and_output_weights {
            0
        } else {
            self.vocab_size as u128 * self.hidden_size as u128
        };
        let final_norm = self.final_norm_params();
        total += embedding + output_layer + final_norm;
        active += embedding + output_layer + final_norm;
        let mtp = self.mtp_layer_params().total() * self.mtp_num_layers as u128;
        ParamCounts { total, active, embedding, output_layer, mtp }
    }
}
