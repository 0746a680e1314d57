//! Step-3.5-Flash (`step3p5`, also the language model of Step 3.7's `text_config`): GQA attention whose sliding-window
//! layers have heads of their own (`attention_other_setting`), a per-head output gate, a dense MLP on the first
//! layers and routed + shared experts on the layers `moe_layers_enum` lists, and dense MTP layers.
// Source: Megatron Bridge src/megatron/bridge/models/stepfun/step35_bridge.py provider_bridge (num_attention_groups →
// num_query_groups, moe_num_experts / moe_top_k / share_expert_dim, head_wise_attn_gate, sliding_attention_setting,
// window_size = [sliding_window, 0], moe_layer_freq from moe_layers_enum) and configuration_step35.py (layer_types may
// list the MTP layers after the decoder's; num_nextn_predict_layers MTP layers, dense).

use crate::fields::as_uint;
use crate::limits::MAX_LAYERS;
use crate::Diagnostic;
use serde_json::{Map, Value, json};

/// The Step-3.5 fields over the generic reading in `m`, for a model of `layers` decoder layers.
pub fn step3p5(c: &Map<String, Value>, layers: u64, m: &mut Map<String, Value>, _diags: &mut Vec<Diagnostic>) {
    let g = |k: &str| c.get(k).and_then(as_uint);
    let heads = g("num_attention_heads").unwrap_or(1);
    let groups = g("num_attention_groups").or(g("num_key_value_heads")).unwrap_or(heads);
    let head_dim = g("head_dim").unwrap_or(128);
    m.insert("num_query_groups".into(), json!(groups));
    m.insert("kv_channels".into(), json!(head_dim));
    m.insert("head_wise_attn_gate".into(), json!(c.get("use_head_wise_attn_gate").and_then(Value::as_bool).unwrap_or(false)));
    if let Some(e) = g("moe_num_experts").filter(|&e| e > 0) {
        m.insert("num_moe_experts".into(), json!(e));
        m.insert("moe_router_topk".into(), json!(g("moe_top_k").unwrap_or(2)));
        m.insert("moe_ffn_hidden_size".into(), json!(g("moe_intermediate_size").or(g("intermediate_size"))));
        if let Some(s) = g("share_expert_dim").or(g("share_expert_dims")).filter(|&s| s > 0) {
            m.insert("moe_shared_expert_intermediate_size".into(), json!(s));
        }
        m.insert("moe_layer_freq".into(), json!(moe_layers(c.get("moe_layers_enum"), layers)));
    }
    window(c, layers, (heads, groups, head_dim), m);
    // MTP layers: Megatron Bridge builds them dense (step35_bridge.py _MTPDenseLayerSpecsList), with the attention
    // their layer_types entry (after the decoder's) names: window attention on Step-3.5-Flash's three.
    if let Some(n) = g("num_nextn_predict_layers").filter(|&n| n > 0) {
        m.insert("mtp_num_layers".into(), json!(n));
        let first_mtp = usize::try_from(layers).ok().and_then(|i| c.get("layer_types")?.as_array()?.get(i)?.as_str());
        let window = first_mtp == Some("sliding_attention") && m.contains_key("sliding_attention_setting");
        m.insert("mtp_layer".into(), json!({"mixer": if window { "window_attention" } else { "attention" }, "ffn": "dense"}));
    }
}

/// `moe_layers_enum` ("3,4,5" or a list of layer indices) as one 0/1 per decoder layer; indices outside the model are
/// skipped, as Bridge skips them. Absent: the config class's default, layers 3 to the last.
fn moe_layers(list: Option<&Value>, layers: u64) -> Vec<u8> {
    let n = usize::try_from(layers.min(MAX_LAYERS)).unwrap_or(0);
    let mut flags = vec![0u8; n];
    let mut set = |i: u64| {
        if let Some(f) = flags.get_mut(usize::try_from(i).unwrap_or(usize::MAX)) {
            *f = 1;
        }
    };
    match list {
        // At most one entry per layer is read from a text bounded by the plan's size.
        Some(Value::String(t)) => t.split(',').take(n).filter_map(|x| x.trim().parse::<u64>().ok()).for_each(&mut set),
        Some(Value::Array(items)) => items.iter().take(n).filter_map(as_uint).for_each(&mut set),
        // configuration_step35.py: moe_layers_enum defaults to layers 3 … 44 of the 45.
        _ => (3..layers).for_each(&mut set),
    }
    flags
}

/// The sliding window (`window_size = [sliding_window, 0]` on the "sliding_attention" entries of `layer_types`, whose
/// entries past the decoder's are the MTP layers') and the window layers' own shape from `attention_other_setting`
/// (heads, groups and head_dim, each defaulting to the model's).
fn window(c: &Map<String, Value>, layers: u64, (heads, groups, head_dim): (u64, u64, u64), m: &mut Map<String, Value>) {
    let Some(w) = c.get("sliding_window").and_then(as_uint).filter(|&w| w >= 1) else { return };
    let Some(Value::Array(types)) = c.get("layer_types") else { return };
    if (types.len() as u64) < layers || layers > MAX_LAYERS {
        return;
    }
    let flags: Vec<u8> = types.iter().take(layers as usize).map(|t| u8::from(t.as_str() == Some("sliding_attention"))).collect();
    if !flags.contains(&1) {
        return;
    }
    m.insert("window_size".into(), json!([w, 0]));
    m.insert("window_attn_skip_freq".into(), json!(flags));
    if let Some(Value::Object(other)) = c.get("attention_other_setting") {
        let g = |k: &str| other.get(k).and_then(as_uint);
        let shape = json!({
            "num_attention_heads": g("num_attention_heads").unwrap_or(heads),
            "num_query_groups": g("num_attention_groups").or(g("num_key_value_heads")).unwrap_or(groups),
            "kv_channels": g("head_dim").unwrap_or(head_dim),
        });
        m.insert("sliding_attention_setting".into(), shape);
    }
}
