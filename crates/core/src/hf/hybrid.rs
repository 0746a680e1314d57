//! The hybrid families' Hugging Face configs: Nemotron-H / Nemotron Nano v2 / Nemotron 3 (`nemotron_h`: Mamba-2,
//! attention, MLP and MoE layers in a pattern) and Qwen3-Next (`qwen3_next`: Gated DeltaNet and gated attention, MoE),
//! mapped to the Megatron-Core fields Megatron Bridge's bridges set. And the layer kinds of other families meshplan
//! cannot size, refused by name.

use crate::fields::{as_uint, short};
use crate::{Code, InputError};
use serde_json::{Map, Value, json};

/// HF `layers_block_type` / `mtp_layers_block_type` words → hybrid pattern symbols, as transformers' NemotronHConfig
/// pairs them with `hybrid_override_pattern` (M mamba, * attention, - mlp, E moe).
fn block_symbol(word: &str) -> Option<char> {
    Some(match word {
        "mamba" => 'M',
        "attention" => '*',
        "mlp" => '-',
        "moe" => 'E',
        _ => return None,
    })
}

/// A pattern from `pattern_key` (a string) or `list_key` (a list of block words).
fn pattern_of(c: &Map<String, Value>, pattern_key: &str, list_key: &str) -> Result<Option<String>, InputError> {
    if let Some(Value::String(s)) = c.get(pattern_key) {
        return Ok(Some(s.clone()));
    }
    let Some(Value::Array(items)) = c.get(list_key) else { return Ok(None) };
    // One symbol per entry; the model reader bounds the pattern's length (limits.rs MAX_PATTERN_CHARS).
    let mut s = String::with_capacity(items.len().min(crate::limits::MAX_PATTERN_CHARS + 1));
    for item in items.iter().take(crate::limits::MAX_PATTERN_CHARS + 1) {
        match item.as_str().and_then(block_symbol) {
            Some(sym) => s.push(sym),
            None => {
                return Err(InputError::new(
                    Code::HfConfigUnmappable,
                    format!("`{list_key}` has a layer kind meshplan cannot size: {}", short(item)),
                    "use \"mamba\", \"attention\", \"mlp\" or \"moe\" blocks, or give Megatron fields (hybrid_layer_pattern) directly",
                ));
            }
        }
    }
    Ok(Some(s))
}

/// Nemotron-H: the Megatron fields Megatron Bridge's NemotronHBridge.provider_bridge sets.
// Source: Megatron Bridge src/megatron/bridge/models/nemotronh/nemotron_h_bridge.py (CONFIG_MAPPING: mamba_head_dim,
// mamba_num_heads, n_groups → mamba_num_groups, ssm_state_size → mamba_state_dim, hybrid_override_pattern →
// hybrid_layer_pattern, use_bias → add_bias_linear, moe_shared_expert_intermediate_size; provider_bridge:
// position_embedding_type "none", squared_relu, kv_channels from head_dim or attention_head_dim, moe_latent_size, MTP
// from num_nextn_predict_layers + mtp_hybrid_override_pattern with mtp_use_repeated_layer default True).
pub fn nemotron_h(c: &Map<String, Value>, m: &mut Map<String, Value>) -> Result<(), InputError> {
    let g = |k: &str| c.get(k).and_then(as_uint);
    let mut put = |k: &str, v: Value| {
        m.insert(k.to_string(), v);
    };
    let Some(pattern) = pattern_of(c, "hybrid_override_pattern", "layers_block_type")? else {
        return Err(InputError::new(
            Code::HfConfigUnmappable,
            "a nemotron_h config without hybrid_override_pattern or layers_block_type: its layer kinds are unknown",
            "paste the whole config.json, or give Megatron fields (hybrid_layer_pattern) directly",
        ));
    };
    put("hybrid_layer_pattern", json!(pattern));
    let renamed = [
        ("mamba_head_dim", "mamba_head_dim"),
        ("mamba_num_heads", "mamba_num_heads"),
        ("n_groups", "mamba_num_groups"),
        ("ssm_state_size", "mamba_state_dim"),
        ("moe_shared_expert_intermediate_size", "moe_shared_expert_intermediate_size"),
        ("moe_latent_size", "moe_latent_size"),
    ];
    for (hf, megatron) in renamed {
        if let Some(v) = g(hf) {
            put(megatron, json!(v));
        }
    }
    put("position_embedding_type", json!("none"));
    put("gated_linear_unit", json!(false));
    put("activation_func", json!("squared_relu"));
    put("add_bias_linear", json!(c.get("use_bias").and_then(Value::as_bool).unwrap_or(false)));
    if let Some(kv) = g("head_dim").or(g("attention_head_dim")) {
        put("kv_channels", json!(kv));
    }
    let depths = g("num_nextn_predict_layers").unwrap_or(0);
    if depths > 0 {
        let Some(mtp) = pattern_of(c, "mtp_hybrid_override_pattern", "mtp_layers_block_type")? else {
            return Err(InputError::new(
                Code::HfConfigUnmappable,
                "num_nextn_predict_layers > 0 without mtp_hybrid_override_pattern (Megatron Bridge: \"An HF config with num_nextn_predict_layers > 0 must define mtp_hybrid_override_pattern.\")",
                "add mtp_hybrid_override_pattern (e.g. \"*E\") or set num_nextn_predict_layers to 0",
            ));
        };
        put("mtp_hybrid_override_pattern", json!(mtp));
        put("mtp_num_layers", json!(depths));
        put("mtp_use_repeated_layer", json!(c.get("mtp_use_repeated_layer").and_then(Value::as_bool).unwrap_or(true)));
    }
    Ok(())
}

/// Qwen3-Next: Gated DeltaNet layers with every `full_attention_interval`-th layer gated attention, MoE with a gated
/// shared expert; the fields Megatron Bridge's Qwen3NextBridge.provider_bridge sets.
// Source: Megatron Bridge src/megatron/bridge/models/qwen/qwen3_next_bridge.py (experimental_attention_variant
// "gated_delta_net", linear_attention_freq = full_attention_interval, linear_* copied, attention_output_gate,
// moe_shared_expert_gate, qk_layernorm, moe_shared_expert_intermediate_size = shared_expert_intermediate_size).
pub fn qwen3_next(c: &Map<String, Value>, m: &mut Map<String, Value>) {
    let g = |k: &str| c.get(k).and_then(as_uint);
    m.insert("experimental_attention_variant".into(), json!("gated_delta_net"));
    m.insert("linear_attention_freq".into(), json!(g("full_attention_interval").unwrap_or(4)));
    for k in ["linear_key_head_dim", "linear_value_head_dim", "linear_num_key_heads", "linear_num_value_heads", "linear_conv_kernel_dim"] {
        if let Some(v) = g(k) {
            m.insert(k.into(), json!(v));
        }
    }
    m.insert("attention_output_gate".into(), json!(true));
    m.insert("moe_shared_expert_gate".into(), json!(true));
    m.insert("qk_layernorm".into(), json!(true));
}

/// A config of a family read the Llama way that declares layers meshplan cannot size: per-layer `block_configs`
/// (DeciLM / Llama-Nemotron), hybrid patterns or block lists, `layer_types` beyond full / sliding / chunked attention.
/// Refused by name rather than sized as a Llama.
pub fn unsized_layers(c: &Map<String, Value>) -> Option<InputError> {
    let refuse = |what: String| {
        Some(InputError::new(
            Code::HfConfigUnmappable,
            format!("the Hugging Face config has {what}: layer kinds meshplan cannot size for this model_type"),
            "give Megatron fields directly (hybrid_layer_pattern, moe_layer_freq, …), or a supported family's config.json",
        ))
    };
    // attention_other_setting: sliding-window layers with heads and groups of their own (sized for step3p5 only).
    // DeepSeek-V4 (deepseek_v4): compressed attention per layer (compress_ratios), hyper-connections (hc_mult) and a
    // grouped low-rank output projection (o_lora_rank, o_groups). Step-3 (step3_text, Step2-mini): a query bottleneck
    // (share_q_dim: q_proj h → share_q_dim, a norm, wq → heads·head_dim). None of them is a Llama layer.
    // global_head_dim, hidden_size_per_layer_input (per-layer embeddings), num_kv_shared_layers: Gemma 4's parts, sized
    // for gemma4 / gemma4_text only (hf/gemma4.rs); Gemma 3n (gemma3n_text) has them beside AltUp and LAuReL blocks.
    // sparse_attention_config: MiniMax-M3's block-sparse attention with its own index heads (sparse_num_index_heads,
    // sparse_index_dim) on the layers its sparse_attention_freq marks, which no Megatron-Core layer meshplan sizes is.
    const UNSIZED: [&str; 12] = [
        "global_head_dim",
        "hidden_size_per_layer_input",
        "num_kv_shared_layers",
        "block_configs",
        "hybrid_override_pattern",
        "layers_block_type",
        "attention_other_setting",
        "compress_ratios",
        "hc_mult",
        "o_lora_rank",
        "share_q_dim",
        "sparse_attention_config",
    ];
    for key in UNSIZED {
        if c.get(key).is_some_and(|v| !v.is_null()) {
            return refuse(format!("`{key}`"));
        }
    }
    if let Some(Value::Array(types)) = c.get("layer_types") {
        let sized = ["full_attention", "sliding_attention", "chunked_attention"];
        if let Some(t) = types.iter().find(|t| !t.as_str().is_some_and(|s| sized.contains(&s))) {
            return refuse(format!("layer_types entry {}", short(t)));
        }
    }
    None
}
