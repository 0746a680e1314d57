//! DeepSeek-V4 (`deepseek_v4`): the fields Megatron Bridge's DeepSeekV4Bridge.provider_bridge sets. Hybrid MQA
//! attention of head width `head_dim` (q_lora_rank → heads·head_dim queries, one key/value head) with a compress ratio
//! per layer (`compress_ratios`, or the native `layer_types` + `compress_rates`), a window of `sliding_window` keys, a
//! CSA indexer (`index_*`) on the ratio-4 layers, the grouped output projection (`o_groups` × `o_lora_rank`),
//! hyper-connections (`hc_mult` streams), hash-routed first layers (`num_hash_layers`, or the `hash_moe` prefix of
//! `mlp_layer_types`), every layer MoE with `n_shared_experts` shared experts, and `num_nextn_predict_layers` MTP layers.
// Source: Megatron Bridge src/megatron/bridge/models/deepseek/deepseek_v4_bridge.py provider_bridge (v_head_dim =
// head_dim, qk_pos_emb_head_dim = qk_rope_head_dim, q_lora_rank, o_groups, o_lora_rank, csa_compress_ratios,
// csa_window_size = sliding_window, dsa_indexer_*, enable_hyper_connections, num_residual_streams = hc_mult,
// moe_layer_freq = [1] * num_hidden_layers, moe_shared_expert_intermediate_size = moe_intermediate_size ×
// n_shared_experts, moe_n_hash_layers, mtp_num_layers, make_vocab_size_divisible_by = 1280); _dsv4_compress_ratios and _dsv4_num_hash_layers; the
// "qk_head_dim and kv_lora_rank derived automatically in DSv4HybridConfig" (head_dim − qk_rope_head_dim).

use crate::diag::Diagnostic;
use crate::fields::as_uint;
use crate::limits::MAX_LAYERS;
use crate::{Code, InputError};
use serde_json::{Map, Value, json};

/// The Bridge's layer types and their compress ratios.
const LAYER_TYPES: [(&str, u64); 3] = [("sliding_attention", 0), ("compressed_sparse_attention", 4), ("heavily_compressed_attention", 128)];

/// The config's V4 fields into `m`; a config without its per-layer ratios or its output projection is refused by
/// name (Megatron Bridge's bridge raises on it too), never sized as a plain MLA model.
pub fn deepseek_v4(c: &Map<String, Value>, layers: u64, m: &mut Map<String, Value>, diags: &mut Vec<Diagnostic>) -> Result<(), InputError> {
    let g = |k: &str| c.get(k).and_then(as_uint);
    let has_ratios = c.get("compress_ratios").is_some_and(Value::is_array) || c.get("layer_types").is_some_and(Value::is_array);
    let missing: Vec<&str> = [("compress_ratios (or layer_types)", has_ratios), ("o_groups", g("o_groups").is_some()), ("o_lora_rank", g("o_lora_rank").is_some())]
        .into_iter()
        .filter(|(_, ok)| !ok)
        .map(|(k, _)| k)
        .collect();
    if !missing.is_empty() {
        return Err(InputError::new(
            Code::HfConfigUnmappable,
            format!("the deepseek_v4 config has no {}: DeepSeek-V4's layers cannot be sized without them", missing.join(", ")),
            "paste the model's whole config.json (DeepSeek-V4-Flash's has compress_ratios, o_groups 8, o_lora_rank 1024)",
        ));
    }
    // The generic reading's window layers and DSA variant do not apply: V4's window is the hybrid attention's own.
    m.remove("window_size");
    m.remove("window_attn_skip_freq");
    m.insert("experimental_attention_variant".into(), json!("dsv4_hybrid"));
    m.insert("multi_latent_attention".into(), json!(true));
    m.insert("qk_layernorm".into(), json!(true));
    let head = g("head_dim").unwrap_or(512);
    let rope = g("qk_rope_head_dim").unwrap_or(64).min(head);
    m.insert("v_head_dim".into(), json!(head));
    m.insert("qk_pos_emb_head_dim".into(), json!(rope));
    m.insert("qk_head_dim".into(), json!((head - rope).max(1)));
    m.insert("kv_lora_rank".into(), json!((head - rope).max(1)));
    m.insert("q_lora_rank".into(), json!(g("q_lora_rank")));
    for (hf, megatron) in [("o_groups", "o_groups"), ("o_lora_rank", "o_lora_rank"), ("sliding_window", "csa_window_size")] {
        if let Some(v) = g(hf) {
            m.insert(megatron.into(), json!(v));
        }
    }
    m.insert("enable_hyper_connections".into(), json!(true));
    m.insert("num_residual_streams".into(), json!(g("hc_mult").unwrap_or(4)));
    m.insert("moe_layer_freq".into(), json!(1));
    m.insert("make_vocab_size_divisible_by".into(), json!(1280));
    let mtp = g("num_nextn_predict_layers").unwrap_or(0);
    if let Some(r) = ratios(c, layers, mtp, diags) {
        m.insert("csa_compress_ratios".into(), json!(r));
    }
    if let Some(n) = hash_layers(c, diags) {
        m.insert("moe_n_hash_layers".into(), json!(n));
    }
    Ok(())
}

/// The compress ratios as the Bridge reads them: `compress_ratios`, or `layer_types` through `compress_rates`; a list
/// of num_hidden_layers gets 0 for each MTP layer, a longer one is cut to num_hidden_layers + MTP. Bounded by the
/// layer count before anything is collected; an entry that is not a ratio or a layer type is left for the model
/// reader to name (kept as written) or named here.
fn ratios(c: &Map<String, Value>, layers: u64, mtp: u64, diags: &mut Vec<Diagnostic>) -> Option<Vec<Value>> {
    let want = layers.saturating_add(mtp);
    let list = c.get("compress_ratios").or_else(|| c.get("layer_types"))?.as_array()?;
    if list.len() as u64 > MAX_LAYERS + (1 << 10) {
        return None;
    }
    let rates = c.get("compress_rates").and_then(Value::as_object);
    let mut out: Vec<Value> = Vec::with_capacity(list.len().min(want as usize));
    for v in list.iter().take(want as usize) {
        let r = match v.as_str() {
            Some(t) => rates.and_then(|r| r.get(t)).and_then(as_uint).or_else(|| LAYER_TYPES.iter().find(|(n, _)| *n == t).map(|(_, r)| *r)),
            None => as_uint(v),
        };
        match r {
            Some(r) => out.push(json!(r)),
            None => {
                diags.push(Diagnostic::new(
                    Code::InvalidValue,
                    format!("the DeepSeek-V4 config's layer type {} is not one Megatron Bridge maps", crate::fields::short(v)),
                    "use sliding_attention, compressed_sparse_attention or heavily_compressed_attention (ratios 0, 4, 128)",
                ));
                return None;
            }
        }
    }
    if out.len() as u64 == layers {
        out.extend(std::iter::repeat_n(json!(0), mtp.min(1 << 10) as usize));
    }
    Some(out)
}

/// The hash-routed layers: `num_hash_layers`, or the `hash_moe` prefix of `mlp_layer_types` (which must be a prefix).
fn hash_layers(c: &Map<String, Value>, diags: &mut Vec<Diagnostic>) -> Option<u64> {
    if let Some(n) = c.get("num_hash_layers").and_then(as_uint) {
        return Some(n);
    }
    let types = c.get("mlp_layer_types")?.as_array()?;
    let prefix = types.iter().take_while(|t| t.as_str() == Some("hash_moe")).count();
    if types[prefix..].iter().any(|t| t.as_str() == Some("hash_moe")) {
        diags.push(Diagnostic::new(
            Code::InvalidValue,
            "the DeepSeek-V4 config's hash_moe layers in mlp_layer_types are not a contiguous prefix",
            "list the hash-routed layers first (Megatron Bridge's _dsv4_num_hash_layers rejects any other order)",
        ));
    }
    Some(prefix as u64)
}
