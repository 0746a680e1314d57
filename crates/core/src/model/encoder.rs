//! A vision encoder as a block of its own beside the language model: a ViT (patch embedding, transformer layers with
//! biases and LayerNorm, a non-gated MLP), the merge of its patches into language-model tokens (Qwen's spatial merge,
//! Llama 4's pixel shuffle, Gemma 3's pooling) and the projector into the language model's width. Megatron builds it on
//! the first pipeline stage only (Megatron Bridge's VLM providers set the vision config's
//! `pipeline_model_parallel_size = 1` and build it where `pre_process`), with the language model's TP.
// Sources: Megatron Bridge src/megatron/bridge/models/qwen_vl/qwen3_vl_provider.py (provide: vision config copied from
// the language config, pipeline_model_parallel_size 1; freeze_vision_model / freeze_vision_projection);
// megatron/core/models/multimodal/llava_model.py (vision model and projection built when add_encoder / pre_process).

use serde::{Deserialize, Serialize};

/// One vision encoder, sized from its Hugging Face `vision_config` (or given in TransformerConfig names).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VisionEncoder {
    /// Transformer layers of the encoder.
    pub num_layers: u64,
    pub hidden_size: u64,
    pub ffn_hidden_size: u64,
    pub num_attention_heads: u64,
    /// A gated MLP (fc1 2·ffn wide); ViTs use a plain GELU MLP.
    #[serde(default)]
    pub gated_linear_unit: bool,
    /// Biases on q/k/v, the attention output and both MLP linears (ViTs have them).
    #[serde(default = "yes")]
    pub add_bias_linear: bool,
    /// "LayerNorm" (weight and bias) or "RMSNorm".
    #[serde(default = "layer_norm")]
    pub normalization: String,
    /// Input elements of one patch: channels × patch_size² (× temporal_patch_size): the patch embedding's fan-in.
    pub patch_dim: u64,
    /// Encoder positions (patches) per language-model token: the spatial merge (Qwen: spatial_merge_size²), pixel
    /// shuffle (Llama 4: 1 / pixel_shuffle_ratio²) or pooling (Gemma 3: patches per image / mm_tokens_per_image).
    #[serde(default = "one")]
    pub patches_per_token: u64,
    /// The projector's linears after the merge, each [in, out], run once per language-model token (Qwen's merger and
    /// deepstack mergers, Llama 4's adapter MLP and projector, Gemma 3's input projection).
    #[serde(default)]
    pub projector: Vec<[u64; 2]>,
    /// Every other parameter, counted by the reader from the config: the patch embedding's bias, class token and
    /// position table, norms outside the layers and in the projector, the projector's biases.
    #[serde(default)]
    pub extra_parameters: u64,
    /// The encoder's own tensor parallelism: absent, the language model's (Megatron-built encoders: Qwen3-VL's vision
    /// config copies the language model's tensor_model_parallel_size); 1, the whole encoder and projector on every TP
    /// rank (Megatron Bridge's Hugging Face towers, e.g. Gemma 4's: built unsplit, gradients averaged over TP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensor_model_parallel_size: Option<u64>,
}

fn yes() -> bool {
    true
}
fn one() -> u64 {
    1
}
fn layer_norm() -> String {
    "LayerNorm".into()
}

/// The encoder's parameters, split as the freeze switches and TP split them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EncoderParams {
    /// Encoder layers' GEMM weights (and their column-parallel biases): split over TP.
    pub layers_tp_sharded: u128,
    /// Encoder layers' norms and row-parallel output biases, the patch embedding and `extra_parameters` outside the
    /// projector: identical on every TP rank.
    pub replicated: u128,
    /// The projector's linears (`freeze_vision_projection`): split over TP (column- then row-parallel).
    pub projector: u128,
}

impl EncoderParams {
    pub fn total(&self) -> u128 {
        self.layers_tp_sharded + self.replicated + self.projector
    }
    /// The encoder without its projector (`freeze_vision_model`).
    pub fn encoder(&self) -> u128 {
        self.layers_tp_sharded + self.replicated
    }
}

impl VisionEncoder {
    fn norm(&self, width: u64) -> u128 {
        // LayerNorm has a weight and a bias; RMSNorm only a weight.
        let per = if self.normalization.eq_ignore_ascii_case("LayerNorm") { 2 } else { 1 };
        per * width as u128
    }

    /// fc1's output width: 2·ffn for a gated MLP.
    fn fc1_out(&self) -> u128 {
        self.ffn_hidden_size as u128 * if self.gated_linear_unit { 2 } else { 1 }
    }

    /// The encoder's TP degree under a language model of `tp`: its own where set (at most `tp`), else `tp`.
    // Source: Megatron Bridge @067f987df03b utils/common_utils.py hook_hf_module_setattr_for_tp_grad_sync (a Hugging
    // Face tower's parameters marked average_gradients_across_tp_domain: whole on each TP rank) and
    // qwen_vl/modelling_qwen3_vl/transformer_config.py get_vision_model_config (the language model's TP).
    pub fn tp(&self, tp: u64) -> u64 {
        self.tensor_model_parallel_size.map_or(tp, |t| t.min(tp)).max(1)
    }

    /// Parameters of one encoder layer: (TP-sharded, replicated).
    // Source: transformers Llama4VisionEncoderLayer / Qwen3VLVisionBlock / SiglipEncoderLayer (q, k, v and output
    // projections h → h with biases, fc1 h → f and fc2 f → h with biases, two LayerNorms); Megatron-Core's ViT layer
    // (vit_layer_specs.py): linear_qkv column-parallel (its bias split), linear_proj / linear_fc2 row-parallel (bias
    // added after the reduction, replicated).
    pub fn layer_params(&self) -> (u128, u128) {
        let h = self.hidden_size as u128;
        let f = self.ffn_hidden_size as u128;
        let mut sharded = 4 * h * h + h * self.fc1_out() + f * h;
        let mut replicated = 2 * self.norm(self.hidden_size);
        if self.add_bias_linear {
            sharded += 3 * h + self.fc1_out();
            replicated += 2 * h;
        }
        (sharded, replicated)
    }

    /// Parameters of the whole encoder: layers, the patch embedding (patch_dim × h, replicated), the projector and the
    /// rest the reader counted.
    pub fn params(&self) -> EncoderParams {
        let (sharded, replicated) = self.layer_params();
        let n = self.num_layers as u128;
        let projector: u128 = self.projector.iter().map(|[i, o]| *i as u128 * *o as u128).sum();
        EncoderParams {
            layers_tp_sharded: n * sharded,
            replicated: n * replicated + self.patch_dim as u128 * self.hidden_size as u128 + self.extra_parameters as u128,
            projector,
        }
    }

    /// Forward FLOPs per encoder position (patch) of the GEMMs: the patch embedding and the layers' projections and MLP,
    /// 2 per multiply-add; and per language-model token of the projector.
    // Source: the layer shapes above; 2 FLOPs per multiply-accumulate as Megatron's transformer_flops counts them.
    pub fn gemm_flops(&self) -> (f64, f64) {
        let h = self.hidden_size as f64;
        let per_layer = 4.0 * h * h + h * self.fc1_out() as f64 + self.ffn_hidden_size as f64 * h;
        let per_patch = 2.0 * (self.patch_dim as f64 * h + self.num_layers as f64 * per_layer);
        let per_token = 2.0 * self.projector.iter().map(|[i, o]| *i as f64 * *o as f64).sum::<f64>();
        (per_patch, per_token)
    }

    /// Forward FLOPs of the attention scores and values per encoder position, with `per_image` positions attending to
    /// each other (bidirectional: QKᵀ and PV, 2·h·s each, no causal halving).
    pub fn attention_flops(&self, per_image: f64) -> f64 {
        4.0 * self.hidden_size as f64 * per_image * self.num_layers as f64
    }

    /// Saved activation bytes of one encoder layer per position, in 16-bit elements: (part split over TP, part split
    /// over TP only with sequence parallelism). Korthikanti et al. 2022 §4.1 generalised to an ffn width f, with flash
    /// attention (no s² terms) and no dropout masks: q, k, v and the attention output (4·2h) and fc1's output and the
    /// activation's (2·2f; 3·2f gated) are split over TP; the inputs of linear_qkv and fc1 (2·2h) and of the two norms
    /// (2·2h) only with SP.
    pub fn layer_activation_bytes(&self) -> (f64, f64) {
        let h = self.hidden_size as f64;
        let f = self.ffn_hidden_size as f64;
        let mlp = if self.gated_linear_unit { 6.0 * f } else { 4.0 * f };
        (8.0 * h + mlp, 8.0 * h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_vit_by_hand() {
        // h 8, f 16, 2 layers, LayerNorm, biases: per layer q/k/v/o 4·64 = 256, fc1 8·16 = 128, fc2 128 → 512 sharded
        // + biases q/k/v 24 + fc1 16 = 552; replicated: 2 LayerNorms 2·16 = 32 + o and fc2 biases 16 = 48.
        let e = VisionEncoder {
            num_layers: 2,
            hidden_size: 8,
            ffn_hidden_size: 16,
            num_attention_heads: 2,
            gated_linear_unit: false,
            add_bias_linear: true,
            normalization: "LayerNorm".into(),
            patch_dim: 12,
            patches_per_token: 4,
            projector: vec![[32, 10]],
            extra_parameters: 5,
            tensor_model_parallel_size: None,
        };
        assert_eq!(e.layer_params(), (552, 48));
        // Patch embedding 12·8 = 96; projector 320.
        assert_eq!(e.params(), EncoderParams { layers_tp_sharded: 1104, replicated: 96 + 96 + 5, projector: 320 });
        // Forward GEMM FLOPs: per patch 2·(96 + 2·512) = 2240; per token 2·320.
        assert_eq!(e.gemm_flops(), (2240.0, 640.0));
    }
}
