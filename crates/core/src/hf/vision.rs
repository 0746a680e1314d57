//! A multimodal config's `vision_config` → the model's `vision_config` ([`crate::model::VisionEncoder`] fields), for
//! the encoders meshplan sizes: Llama 4's ViT with its pixel-shuffle adapter and projector, Qwen3-VL's / Qwen3.5's ViT
//! with its patch merger (and deepstack mergers), Gemma 3's SigLIP with its input projection, Kimi-K2.5's MoonViT with
//! its patch-merger MLP, Gemma 4's ViT (`gemma4_vision`) with its multimodal embedder. Each function counts
//! what the layers do not (patch-embedding bias, class token, position table, outer norms, projector norms and biases)
//! as `extra_parameters`, from the module list of the transformers model it names.

use crate::fields::as_uint;
use serde_json::{Map, Value, json};

/// The model's `vision_config` for `model_type`'s encoder, `text_hidden` the language model's width; `None` for an
/// encoder meshplan does not size (its config is then named as not counted).
pub fn encoder(model_type: &str, outer: &Map<String, Value>, text_hidden: u64) -> Option<Value> {
    let Some(Value::Object(v)) = outer.get("vision_config") else { return None };
    // Sizes above 2^20 are no encoder's; products saturate (the model reader bounds every field it takes).
    let g = |k: &str| v.get(k).and_then(as_uint).filter(|&n| n <= 1 << 20);
    match model_type {
        "llama4" => llama4(v, &g, text_hidden),
        "qwen3_vl" | "qwen3_vl_moe" | "qwen3_5" | "qwen3_5_moe" => qwen3_vl(v, &g),
        "gemma3" => gemma3(outer, &g, text_hidden),
        "kimi_k25" => kimi_k25(v, &g, text_hidden),
        "gemma4" => gemma4(v, &g, text_hidden),
        _ => None,
    }
}

/// Llama 4: Llama4VisionModel (transformers modeling_llama4.py) — Llama4UnfoldConvolution (channels·p² → h, no bias),
/// class_embedding (h), positional_embedding_vlm (((image_size / p)² + 1) × h), layernorm_pre and layernorm_post
/// (LayerNorm, 2h each), num_hidden_layers Llama4VisionEncoderLayers (q/k/v/o and fc1/fc2 with biases, two LayerNorms),
/// the adapter Llama4VisionMLP2 (fc1 intermediate_size → projector_input_dim, fc2 projector_output_dim →
/// projector_output_dim, no biases) after a pixel shuffle of ratio r (1/r² patches per token), and
/// Llama4MultiModalProjector (vision_output_dim → text hidden, no bias).
/// The product of `xs`, saturating.
fn mul(xs: &[u64]) -> u64 {
    xs.iter().fold(1u64, |a, &x| a.saturating_mul(x))
}

fn llama4(v: &Map<String, Value>, g: &dyn Fn(&str) -> Option<u64>, text_hidden: u64) -> Option<Value> {
    let h = g("hidden_size")?;
    let p = g("patch_size")?.max(1);
    let side = g("image_size")? / p;
    let ratio = v.get("pixel_shuffle_ratio").and_then(Value::as_f64).filter(|r| *r > 0.0 && *r <= 1.0).unwrap_or(0.5);
    let per_token = (1.0 / (ratio * ratio)).round() as u64;
    let inter = g("intermediate_size")?;
    let pin = g("projector_input_dim")?;
    let pout = g("projector_output_dim").unwrap_or(pin);
    let extra = mul(&[side, side, h]).saturating_add(6 * h);
    Some(json!({
        "num_layers": g("num_hidden_layers")?, "hidden_size": h, "ffn_hidden_size": inter,
        "num_attention_heads": g("num_attention_heads")?, "gated_linear_unit": false, "add_bias_linear": true,
        "normalization": "LayerNorm", "patch_dim": mul(&[g("num_channels").unwrap_or(3), p, p]), "patches_per_token": per_token,
        "projector": [[inter, pin], [pout, pout], [g("vision_output_dim").unwrap_or(pout), text_hidden]],
        "extra_parameters": extra,
    }))
}

/// Qwen3-VL and Qwen3.5: Qwen3VLVisionModel (transformers modeling_qwen3_vl.py) — patch_embed Conv3d (in_channels ·
/// temporal_patch_size · p² → h, with bias), pos_embed (num_position_embeddings × h), `depth` Qwen3VLVisionBlocks (qkv
/// h → 3h and proj with biases, fc1 / fc2 with biases, two LayerNorms), the merger Qwen3VLVisionPatchMerger over m²
/// patches (LayerNorm h, linear_fc1 h·m² → h·m², linear_fc2 h·m² → out_hidden_size, with biases) and one more merger per
/// `deepstack_visual_indexes` entry with its LayerNorm over h·m² (use_postshuffle_norm).
fn qwen3_vl(v: &Map<String, Value>, g: &dyn Fn(&str) -> Option<u64>) -> Option<Value> {
    let h = g("hidden_size")?;
    let p = g("patch_size").unwrap_or(16);
    let m = g("spatial_merge_size").unwrap_or(2);
    let hm = mul(&[h, m, m]);
    let out = g("out_hidden_size")?;
    let deepstack = v.get("deepstack_visual_indexes").and_then(Value::as_array).map_or(0, |a| a.len().min(64)) as u64;
    let mut projector = vec![json!([hm, hm]), json!([hm, out])];
    for _ in 0..deepstack {
        projector.extend([json!([hm, hm]), json!([hm, out])]);
    }
    let merger_biases = hm.saturating_add(out);
    let extra = mul(&[g("num_position_embeddings").unwrap_or(2304), h])
        .saturating_add(3 * h)
        .saturating_add(merger_biases)
        .saturating_add(mul(&[deepstack, hm.saturating_mul(2).saturating_add(merger_biases)]));
    Some(json!({
        "num_layers": g("depth")?, "hidden_size": h, "ffn_hidden_size": g("intermediate_size")?,
        "num_attention_heads": g("num_heads")?, "gated_linear_unit": false, "add_bias_linear": true,
        "normalization": "LayerNorm",
        "patch_dim": mul(&[g("in_channels").unwrap_or(3), g("temporal_patch_size").unwrap_or(2), p, p]),
        "patches_per_token": mul(&[m, m]), "projector": projector, "extra_parameters": extra,
    }))
}

/// Gemma 3: SiglipVisionModel (transformers modeling_siglip.py) — patch_embedding Conv2d (channels·p² → h, with bias),
/// position_embedding ((image_size / p)² × h), SiglipEncoderLayers (q/k/v/out and fc1/fc2 with biases, two LayerNorms),
/// post_layernorm (2h); Gemma3MultiModalProjector (modeling_gemma3.py): mm_soft_emb_norm (RMSNorm, h) and
/// mm_input_projection_weight (h × text hidden) after average pooling to mm_tokens_per_image tokens per image.
fn gemma3(outer: &Map<String, Value>, g: &dyn Fn(&str) -> Option<u64>, text_hidden: u64) -> Option<Value> {
    let h = g("hidden_size")?;
    let p = g("patch_size")?.max(1);
    let side = g("image_size")? / p;
    let tokens = outer.get("mm_tokens_per_image").and_then(as_uint).filter(|&t| t > 0).unwrap_or(256);
    let extra = mul(&[side, side, h]).saturating_add(4 * h);
    Some(json!({
        "num_layers": g("num_hidden_layers")?, "hidden_size": h, "ffn_hidden_size": g("intermediate_size")?,
        "num_attention_heads": g("num_attention_heads")?, "gated_linear_unit": false, "add_bias_linear": true,
        "normalization": "LayerNorm", "patch_dim": mul(&[g("num_channels").unwrap_or(3), p, p]),
        "patches_per_token": (mul(&[side, side]) / tokens).max(1), "projector": [[h, text_hidden]], "extra_parameters": extra,
    }))
}

/// Kimi-K2.5: MoonViT3dPretrainedModel (modeling_kimi_k25.py, remote code; the same modules as Megatron Bridge's
/// KimiK25VLModel builds from it) — patch_embed Conv2d (3·p² → h, with bias) and a learned position table
/// (init_pos_emb_height × init_pos_emb_width × h; the temporal sincos table is a buffer), vt_num_hidden_layers
/// MoonViT3dEncoderLayers (wqkv h → 3h and wo with biases, fc0 / fc1 with biases, two LayerNorms), final_layernorm
/// (2h); the merge of merge_kernel_size patches a token (sd2_tpool: mean over frames, a still image has one) and
/// KimiK25VLMultiModalProjector (pre_norm LayerNorm over mm_hidden_size, linear_1 m·h → m·h and linear_2 m·h → text
/// hidden, with biases).
fn kimi_k25(v: &Map<String, Value>, g: &dyn Fn(&str) -> Option<u64>, text_hidden: u64) -> Option<Value> {
    let h = g("vt_hidden_size")?;
    let p = g("patch_size").unwrap_or(14);
    let kernel = v.get("merge_kernel_size").and_then(Value::as_array);
    let k = |i: usize| kernel.and_then(|a| a.get(i)).and_then(as_uint).filter(|&n| (1..=64).contains(&n)).unwrap_or(2);
    let merged = mul(&[h, k(0), k(1)]);
    let mm = g("mm_hidden_size").unwrap_or(h);
    let positions = mul(&[g("init_pos_emb_height").unwrap_or(64), g("init_pos_emb_width").unwrap_or(64), h]);
    // Conv bias h, final LayerNorm 2h, the projector's pre_norm 2·mm and its biases m·h + text hidden.
    let extra = positions.saturating_add(3 * h).saturating_add(2 * mm).saturating_add(merged).saturating_add(text_hidden);
    Some(json!({
        "num_layers": g("vt_num_hidden_layers")?, "hidden_size": h, "ffn_hidden_size": g("vt_intermediate_size")?,
        "num_attention_heads": g("vt_num_attention_heads")?, "gated_linear_unit": false, "add_bias_linear": true,
        "normalization": "LayerNorm", "patch_dim": mul(&[3, p, p]), "patches_per_token": k(0) * k(1),
        "projector": [[merged, merged], [merged, text_hidden]], "extra_parameters": extra,
    }))
}

/// Gemma 4: Gemma4VisionModel (transformers models/gemma4/modeling_gemma4.py, model_type "gemma4_vision") —
/// Gemma4VisionPatchEmbedder (input_proj 3·p² → h, no bias; position_embedding_table 2 × position_embedding_size × h,
/// one row per x and per y), num_hidden_layers Gemma4VisionEncoderLayers (q/k/v/o h → heads·head_dim → h without
/// biases; q_norm and k_norm RMSNorms of head_dim, v_norm without a scale; the gated GELU MLP gate/up h → f, down f → h,
/// no biases; four RMSNorms of h: input, post-attention, pre- and post-feedforward), the pooler (an average over
/// pooling_kernel_size² patches, no parameters), std_bias and std_scale (h each) when `standardize`, and
/// Gemma4MultimodalEmbedder (embedding_pre_projection_norm, an RMSNorm without a scale, and embedding_projection h →
/// text hidden, no bias). Megatron Bridge's Gemma4VLModel (gemma_vl/modeling_gemma4_vl.py) builds these transformers
/// modules where pre_process (the first stage), unsplit on every TP rank (tensor_model_parallel_size 1), freezable by
/// freeze_vision_model (vision_tower) and freeze_vision_projection (embed_vision).
/// Heads·head_dim ≠ h or key-value heads ≠ heads is not a shape [`crate::model::VisionEncoder`] holds: `None` (the
/// config is then named as not counted).
fn gemma4(v: &Map<String, Value>, g: &dyn Fn(&str) -> Option<u64>, text_hidden: u64) -> Option<Value> {
    let h = g("hidden_size")?;
    let heads = g("num_attention_heads")?;
    let head_dim = g("head_dim")?;
    if heads.checked_mul(head_dim) != Some(h) || g("num_key_value_heads").is_some_and(|kv| kv != heads) {
        return None;
    }
    let layers = g("num_hidden_layers")?;
    let p = g("patch_size").unwrap_or(16);
    let standardize = v.get("standardize").and_then(Value::as_bool).unwrap_or(false);
    // Per layer beyond VisionEncoder's two norms: two more RMSNorms of h and q_norm, k_norm of head_dim.
    let per_layer = 2 * h + 2 * head_dim;
    let extra = mul(&[2, g("position_embedding_size").unwrap_or(10240), h])
        .saturating_add(mul(&[layers, per_layer]))
        .saturating_add(if standardize { 2 * h } else { 0 });
    let k = g("pooling_kernel_size").filter(|&k| (1..=64).contains(&k)).unwrap_or(3);
    Some(json!({
        "num_layers": layers, "hidden_size": h, "ffn_hidden_size": g("intermediate_size")?,
        "num_attention_heads": heads, "gated_linear_unit": true, "add_bias_linear": false,
        "normalization": "RMSNorm", "patch_dim": mul(&[3, p, p]), "patches_per_token": k * k,
        "projector": [[h, text_hidden]], "extra_parameters": extra, "tensor_model_parallel_size": 1,
    }))
}
