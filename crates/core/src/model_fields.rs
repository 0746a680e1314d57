//! The model section's reader: Megatron-Core TransformerConfig fields (a preset's, a plan's, or those the Hugging Face
//! import maps) → a resolved [`ModelConfig`]. The preset, HF and plan readers all use it; it uses only the field
//! reader below it.

use crate::fields::{Fields, as_uint};
use crate::limits::{MAX_EXPERTS, MAX_LAYERS};
use crate::model::{ModelConfig, MoeLayerFreq};
use crate::{Code, Diagnostic};
use serde_json::Value;

/// Megatron-Core TransformerConfig fields, over `base` (a preset) or Megatron's own defaults.
// Defaults: megatron/core/transformer/transformer_config.py (TransformerConfig, MLATransformerConfig) and
// megatron/training/arguments.py (make_vocab_size_divisible_by=128, position_embedding_type=learned_absolute).
pub fn model_from_fields(value: Option<&Value>, base: Option<&ModelConfig>, section: &str, diags: &mut Vec<Diagnostic>) -> ModelConfig {
    let mut f = Fields::new(value, section, diags);
    f.accept(&["preset", "name"]);
    let b = base;
    let num_layers = f.uint("num_layers", b.map_or(1, |b| b.num_layers), 1, MAX_LAYERS);
    let hidden_size = f.uint("hidden_size", b.map_or(1024, |b| b.hidden_size), 1, 1 << 24);
    let num_attention_heads = f.uint("num_attention_heads", b.map_or(16, |b| b.num_attention_heads), 1, 1 << 20);
    let ffn_hidden_size = f.uint("ffn_hidden_size", b.map_or(4 * hidden_size, |b| b.ffn_hidden_size), 1, 1 << 26);
    let num_query_groups = f.uint("num_query_groups", b.map_or(num_attention_heads, |b| b.num_query_groups), 1, 1 << 20);
    let kv_channels = f.uint("kv_channels", b.map_or((hidden_size / num_attention_heads).max(1), |b| b.kv_channels), 1, 1 << 20);
    let vocab_size = f.uint("vocab_size", b.map_or(32000, |b| b.vocab_size), 1, 1 << 32);
    let make_vocab_size_divisible_by = f.uint("make_vocab_size_divisible_by", b.map_or(128, |b| b.make_vocab_size_divisible_by), 1, 1 << 20);
    let max_position_embeddings = f.opt_uint("max_position_embeddings", 1, 1 << 32).or(b.and_then(|b| b.max_position_embeddings));
    let position_embedding_type = f
        .choice("position_embedding_type", &["learned_absolute", "rope", "yarn", "mrope", "none"], "learned_absolute")
        .to_string();
    let position_embedding_type = if f_absent(value, "position_embedding_type") {
        b.map_or(position_embedding_type, |b| b.position_embedding_type.clone())
    } else {
        position_embedding_type
    };
    let gated_linear_unit = f.boolean("gated_linear_unit", b.is_some_and(|b| b.gated_linear_unit));
    let activation_func = f.choice("activation_func", &["silu", "gelu", "squared_relu", "relu"], "gelu").to_string();
    let activation_func = if f_absent(value, "activation_func") { b.map_or(activation_func, |b| b.activation_func.clone()) } else { activation_func };
    let normalization = f.choice("normalization", &["LayerNorm", "RMSNorm"], "LayerNorm").to_string();
    let normalization = if f_absent(value, "normalization") { b.map_or(normalization, |b| b.normalization.clone()) } else { normalization };
    // Megatron defaults add_bias_linear to True, but SwiGLU-era models (Llama, Qwen, Mixtral, DeepSeek) have no linear
    // biases; a gated model that leaves it out is read without biases, and the plan says so.
    let bias_absent = f_absent(value, "add_bias_linear");
    let add_bias_linear = f.boolean("add_bias_linear", b.map_or(!gated_linear_unit, |b| b.add_bias_linear));
    if bias_absent && b.is_none() && gated_linear_unit && !section.ends_with("hf_config") {
        f.diags.push(Diagnostic::new(
            Code::AddBiasLinearDefault,
            "add_bias_linear was not given: a gated (SwiGLU) model is read without linear biases, although Megatron's own default is True",
            "set add_bias_linear explicitly; exports pass it to Megatron (--disable-bias-linear / cfg.model.add_bias_linear = False)",
        ));
    }
    let add_qkv_bias = f.boolean("add_qkv_bias", b.is_some_and(|b| b.add_qkv_bias));
    let qk_layernorm = f.boolean("qk_layernorm", b.is_some_and(|b| b.qk_layernorm));
    let share_embeddings_and_output_weights =
        f.boolean("share_embeddings_and_output_weights", b.is_none_or(|b| b.share_embeddings_and_output_weights));
    let num_moe_experts = match f.raw("num_moe_experts") {
        Some(_) => f.opt_uint("num_moe_experts", 0, MAX_EXPERTS).filter(|&e| e > 0),
        None => b.and_then(|b| b.num_moe_experts),
    };
    let moe_router_topk = f.uint("moe_router_topk", b.map_or(2, |b| b.moe_router_topk), 1, 1 << 20);
    let moe_ffn_hidden_size = f.opt_uint("moe_ffn_hidden_size", 1, 1 << 26).or(b.and_then(|b| b.moe_ffn_hidden_size));
    let moe_shared_expert_intermediate_size =
        f.opt_uint("moe_shared_expert_intermediate_size", 0, 1 << 26).or(b.and_then(|b| b.moe_shared_expert_intermediate_size));
    let moe_layer_freq = read_moe_layer_freq(&mut f, num_layers).unwrap_or_else(|| b.map_or(MoeLayerFreq::Every(1), |b| b.moe_layer_freq.clone()));
    let moe_router_pre_softmax = f.boolean("moe_router_pre_softmax", b.is_some_and(|b| b.moe_router_pre_softmax));
    let multi_latent_attention = f.boolean("multi_latent_attention", b.is_some_and(|b| b.multi_latent_attention));
    let q_lora_rank = match f.raw("q_lora_rank") {
        Some(_) => f.opt_uint("q_lora_rank", 1, 1 << 24),
        None if value.and_then(|v| v.get("q_lora_rank")).is_some_and(Value::is_null) => None,
        None => b.map_or(Some(512), |b| b.q_lora_rank),
    };
    let kv_lora_rank = f.uint("kv_lora_rank", b.map_or(512, |b| b.kv_lora_rank), 1, 1 << 24);
    let qk_head_dim = f.uint("qk_head_dim", b.map_or(128, |b| b.qk_head_dim), 1, 1 << 20);
    let qk_pos_emb_head_dim = f.uint("qk_pos_emb_head_dim", b.map_or(64, |b| b.qk_pos_emb_head_dim), 0, 1 << 20);
    let v_head_dim = f.uint("v_head_dim", b.map_or(128, |b| b.v_head_dim), 1, 1 << 20);
    let mtp_num_layers = f.uint("mtp_num_layers", b.map_or(0, |b| b.mtp_num_layers), 0, 1 << 10);
    f.finish();
    ModelConfig {
        num_layers,
        hidden_size,
        ffn_hidden_size,
        num_attention_heads,
        num_query_groups,
        kv_channels,
        vocab_size,
        make_vocab_size_divisible_by,
        max_position_embeddings,
        position_embedding_type,
        gated_linear_unit,
        activation_func,
        normalization,
        add_bias_linear,
        add_qkv_bias,
        qk_layernorm,
        share_embeddings_and_output_weights,
        num_moe_experts,
        moe_router_topk,
        moe_ffn_hidden_size,
        moe_shared_expert_intermediate_size,
        moe_layer_freq,
        moe_router_pre_softmax,
        multi_latent_attention,
        q_lora_rank,
        kv_lora_rank,
        qk_head_dim,
        qk_pos_emb_head_dim,
        v_head_dim,
        mtp_num_layers,
    }
}

fn f_absent(value: Option<&Value>, key: &str) -> bool {
    value.and_then(|v| v.get(key)).is_none_or(Value::is_null)
}

/// Megatron's `moe_layer_freq`: an int N (every N-th layer) or one 0/1 entry per layer. A list is checked entry by
/// entry and against `num_layers` before anything is allocated for it.
fn read_moe_layer_freq(f: &mut Fields, num_layers: u64) -> Option<MoeLayerFreq> {
    let v = f.raw("moe_layer_freq")?;
    if let Some(n) = as_uint(v) {
        if n >= 1 && n <= MAX_LAYERS {
            return Some(MoeLayerFreq::Every(n));
        }
    }
    let is_flag = |x: &Value| as_uint(x).is_some_and(|b| b <= 1);
    if let Value::Array(items) = v {
        if items.iter().all(is_flag) {
            if items.len() as u64 == num_layers {
                return Some(MoeLayerFreq::Pattern(items.iter().map(|x| u8::from(as_uint(x) == Some(1))).collect()));
            }
            f.diags.push(Diagnostic::new(
                Code::MoeLayerFreqLength,
                format!("`model.moe_layer_freq` lists {} layers but the model has num_layers = {num_layers}", items.len()),
                format!("give exactly {num_layers} entries of 0 (dense) or 1 (MoE)"),
            ));
            return None;
        }
    }
    f.diags.push(Diagnostic::new(
        Code::InvalidValue,
        "`model.moe_layer_freq` must be an integer ≥ 1 or a list of 0/1 per layer",
        "set `model.moe_layer_freq` to 1 (every layer MoE) or e.g. [0,0,0,1,1,...]",
    ));
    None
}
