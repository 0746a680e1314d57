//! Gemma 4 (`gemma4`, `gemma4_text`): sliding-window layers of `head_dim` with `num_key_value_heads`, full-attention
//! layers with a head width (`global_head_dim`) and, with keys as values (`attention_k_eq_v`), key heads
//! (`num_global_key_value_heads`) of their own. The full layers are the model's attention shape, the window layers
//! Megatron Bridge's `sliding_attention_setting` (as for Step-3.5). The 26B-A4B's MoE block beside each layer's MLP
//! (`enable_moe_block`) is routed experts with the MLP as a shared expert. E2B and E4B add per-layer embeddings
//! (`hidden_size_per_layer_input` of `vocab_size_per_layer_input` rows), layers reusing earlier layers' keys and values
//! (`num_kv_shared_layers`) and, on those, double-wide MLPs (`use_double_wide_mlp`): Megatron Bridge's
//! Gemma4DenseProvider fields `per_layer_embed_dim`, `per_layer_embed_vocab_size`, `num_kv_shared_layers`,
//! `use_double_wide_mlp`.
// Source: transformers models/gemma4/configuration_gemma4.py (Gemma4TextConfig keys) and modeling_gemma4.py
// Gemma4TextAttention (head_dim = global_head_dim on full layers; use_alternative_attention = attention_k_eq_v and
// not is_sliding: num_global_key_value_heads key heads, no v_proj); Gemma4TextDecoderLayer with enable_moe_block: the
// dense mlp and the router's top_k_experts of num_experts experts (moe_intermediate_size) both read the layer's input
// and their outputs are summed, a shared expert's arrangement (Megatron-Core moe_layer.py shared_experts). Megatron
// Bridge src/megatron/bridge/models/gemma/gemma4_bridge.py (@067f987df03b): the HF keys above map to
// Gemma4DenseProvider's per_layer_embed_dim, per_layer_embed_vocab_size, num_kv_shared_layers, use_double_wide_mlp.

use crate::fields::as_uint;
use serde_json::{Map, Value, json};

/// The Gemma 4 fields over the generic reading in `m`: the full layers' shape and the window layers' own.
pub fn gemma4(c: &Map<String, Value>, m: &mut Map<String, Value>) {
    let g = |k: &str| c.get(k).and_then(as_uint);
    let heads = g("num_attention_heads").unwrap_or(1);
    let window_groups = g("num_key_value_heads").unwrap_or(heads);
    let window_dim = g("head_dim").unwrap_or(256);
    let keys_as_values = c.get("attention_k_eq_v").and_then(Value::as_bool).unwrap_or(false);
    let full_groups = if keys_as_values { g("num_global_key_value_heads").unwrap_or(window_groups) } else { window_groups };
    m.insert("kv_channels".into(), json!(g("global_head_dim").unwrap_or(window_dim)));
    m.insert("num_query_groups".into(), json!(full_groups));
    m.insert("attention_k_eq_v".into(), json!(keys_as_values));
    if c.get("enable_moe_block").and_then(Value::as_bool) == Some(true) {
        if let (Some(experts), Some(width)) = (g("num_experts"), g("moe_intermediate_size")) {
            m.insert("num_moe_experts".into(), json!(experts));
            m.insert("moe_router_topk".into(), json!(g("top_k_experts").unwrap_or(1)));
            m.insert("moe_ffn_hidden_size".into(), json!(width));
            m.insert("moe_shared_expert_intermediate_size".into(), json!(g("intermediate_size")));
            m.insert("moe_layer_freq".into(), json!(1));
        }
    }
    if let Some(dim) = g("hidden_size_per_layer_input").filter(|&d| d > 0) {
        m.insert("per_layer_embed_dim".into(), json!(dim));
        m.insert("per_layer_embed_vocab_size".into(), json!(g("vocab_size_per_layer_input").or(g("vocab_size"))));
    }
    if let Some(shared) = g("num_kv_shared_layers").filter(|&n| n > 0) {
        m.insert("num_kv_shared_layers".into(), json!(shared));
        m.insert("use_double_wide_mlp".into(), json!(c.get("use_double_wide_mlp").and_then(Value::as_bool).unwrap_or(false)));
    }
    if m.contains_key("window_size") {
        let shape = json!({"num_attention_heads": heads, "num_query_groups": window_groups, "kv_channels": window_dim});
        m.insert("sliding_attention_setting".into(), shape);
    }
}
