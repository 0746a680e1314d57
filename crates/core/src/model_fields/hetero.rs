//! Heterogeneous layers: Megatron-Core's `heterogeneous_layers_config_encoded_json` (a JSON text holding the Hugging
//! Face DeciLM / Llama-Nemotron config, whose `block_configs` give each layer's attention and MLP), read into
//! [`HeteroLayer`]s. Only what meshplan can size is accepted; anything else is named.
// Source: megatron/core/transformer/heterogeneous/heterogeneous_config.py (HeterogeneousTransformerConfig: block_configs,
// attention no_op / replace_with_linear / n_heads_in_group, ffn no_op / replace_with_linear / ffn_mult) and the DeciLM
// width rule `_ffn_mult_to_intermediate_size`: int(2 · ffn_mult · hidden / 3) rounded up to a multiple of 256.

use crate::fields::{Fields, short};
use crate::limits::{MAX_LAYERS, MAX_PLAN_BYTES};
use crate::model::{HeteroLayer, MAX_LAYER_KINDS};
use crate::{Code, Diagnostic};
use serde_json::Value;

/// The layers `block_configs` describe, and the query groups their attention layers share (`num_attention_heads /
/// n_heads_in_group`), for a model of `num_layers` layers, `hidden` wide with `heads` heads. An error names what
/// cannot be sized.
pub fn parse_block_configs(blocks: &Value, num_layers: u64, hidden: u64, heads: u64) -> Result<(Vec<HeteroLayer>, Option<u64>), String> {
    let Value::Array(blocks) = blocks else { return Err(format!("block_configs must be a list, found {}", short(blocks))) };
    if blocks.len() as u64 != num_layers || num_layers > MAX_LAYERS {
        return Err(format!("block_configs lists {} blocks for num_layers = {num_layers}: one block per layer", blocks.len()));
    }
    let mut layers = Vec::with_capacity(blocks.len());
    let mut groups: Option<u64> = None;
    let mut kinds = Vec::new();
    for (i, b) in blocks.iter().enumerate() {
        let attention = attention_of(b.get("attention"), i, heads, &mut groups)?;
        let ffn_hidden_size = ffn_of(b.get("ffn"), i, hidden)?;
        let layer = HeteroLayer { attention, ffn_hidden_size };
        if !kinds.contains(&layer.kind()) {
            kinds.push(layer.kind());
            if kinds.len() > MAX_LAYER_KINDS {
                return Err(format!("block_configs has more than {MAX_LAYER_KINDS} distinct layer kinds (attention or none × MLP width), the most meshplan holds"));
            }
        }
        layers.push(layer);
    }
    Ok((layers, groups))
}

/// A feature of a block meshplan cannot size: set to something other than null / false.
fn unsized_feature(block: &Value, keys: &[&str]) -> Option<String> {
    keys.iter().find(|k| block.get(**k).is_some_and(|v| !v.is_null() && *v != Value::Bool(false))).map(|k| k.to_string())
}

fn attention_of(a: Option<&Value>, i: usize, heads: u64, groups: &mut Option<u64>) -> Result<bool, String> {
    let Some(a) = a.filter(|a| a.is_object()) else { return Err(format!("block {i} has no attention object")) };
    if a.get("no_op").and_then(Value::as_bool) == Some(true) {
        return Ok(false);
    }
    if let Some(k) = unsized_feature(a, &["replace_with_linear", "sparsify", "window_length", "num_sink_tokens"]) {
        return Err(format!("block {i}'s attention sets {k}, a layer kind meshplan cannot size"));
    }
    // Megatron-Core's own key first (AttentionConfig.num_query_groups), else DeciLM's n_heads_in_group.
    let native = a.get("num_query_groups").and_then(crate::fields::as_uint).filter(|&g| g >= 1 && heads % g == 0).map(|g| heads / g);
    let per_group = native.or_else(|| a.get("n_heads_in_group").and_then(crate::fields::as_uint).filter(|&n| n >= 1 && heads % n == 0));
    let Some(per_group) = per_group else {
        return Err(format!("block {i}'s attention needs num_query_groups or n_heads_in_group dividing num_attention_heads = {heads}, found {}", a.get("n_heads_in_group").or(a.get("num_query_groups")).map_or("nothing".into(), short)));
    };
    let g = heads / per_group;
    match groups {
        Some(prev) if *prev != g => Err(format!("block {i} has {g} query groups where earlier blocks have {prev}: meshplan sizes one group count per model")),
        _ => {
            *groups = Some(g);
            Ok(true)
        }
    }
}

fn ffn_of(f: Option<&Value>, i: usize, hidden: u64) -> Result<Option<u64>, String> {
    let Some(f) = f.filter(|f| f.is_object()) else { return Err(format!("block {i} has no ffn object")) };
    if f.get("no_op").and_then(Value::as_bool) == Some(true) {
        return Ok(None);
    }
    if let Some(k) = unsized_feature(f, &["replace_with_linear", "sparsify"]) {
        return Err(format!("block {i}'s ffn sets {k}, a layer kind meshplan cannot size"));
    }
    // A width given outright: Megatron-Core's MLPConfig.ffn_hidden_size, or intermediate_size.
    if let Some(w) = f.get("ffn_hidden_size").or_else(|| f.get("intermediate_size")).and_then(crate::fields::as_uint).filter(|&w| (1..=1 << 26).contains(&w)) {
        return Ok(Some(w));
    }
    let mult = f.get("ffn_mult").and_then(Value::as_f64).filter(|m| m.is_finite() && *m > 0.0 && *m <= 1024.0);
    let Some(mult) = mult else { return Err(format!("block {i}'s ffn needs ffn_mult in (0, 1024], found {}", f.get("ffn_mult").map_or("nothing".into(), short))) };
    // int(2 · ffn_mult · hidden / 3), rounded up to a multiple of 256 (DeciLM _ffn_mult_to_intermediate_size).
    let w = (2.0 * mult * hidden as f64 / 3.0).floor() as u64;
    Ok(Some(w.div_ceil(256).saturating_mul(256).clamp(256, 1 << 26)))
}

/// `heterogeneous_layers_config_encoded_json`: the layers and query groups it gives, over `base`'s layers. A text that
/// is not JSON with sizable `block_configs` is a diagnostic naming why, and the model is read without it.
pub fn read(f: &mut Fields, base: Option<&[HeteroLayer]>, num_layers: u64, hidden: u64, heads: u64) -> (Option<Vec<HeteroLayer>>, Option<u64>) {
    const KEY: &str = "heterogeneous_layers_config_encoded_json";
    if let Some(resolved) = resolved_layers(f, num_layers) {
        return (resolved, None);
    }
    let Some(raw) = f.raw(KEY) else { return (base.map(<[HeteroLayer]>::to_vec), None) };
    let parsed = match raw {
        Value::Null => return (None, None),
        // The plan's own size bounds the text (limits.rs MAX_PLAN_BYTES); one more parse of at most that much.
        Value::String(t) if t.len() <= MAX_PLAN_BYTES => serde_json::from_str::<Value>(t).map_err(|e| format!("it is not JSON: {e}")),
        Value::Object(_) => Ok(raw.clone()),
        other => Err(format!("it must be a JSON text, found {}", short(other))),
    };
    let result = parsed.and_then(|v| match v.get("block_configs") {
        Some(blocks) => parse_block_configs(blocks, num_layers, hidden, heads),
        None => Err("it has no block_configs".into()),
    });
    match result {
        Ok((layers, groups)) => (Some(layers), groups),
        Err(why) => {
            f.diags.push(Diagnostic::new(
                Code::InvalidValue,
                format!("`model.{KEY}` cannot be sized: {why}"),
                "give one block per layer with attention (no_op, or n_heads_in_group) and ffn (no_op, or ffn_mult); the model is read without it meanwhile",
            ));
            (None, None)
        }
    }
}

/// `heterogeneous_layers`: the per-layer form a resolved plan carries (the plan export writes it back), one
/// {"attention", "ffn_hidden_size"} per layer. `None` when absent; `Some(None)` after a diagnostic.
fn resolved_layers(f: &mut Fields, num_layers: u64) -> Option<Option<Vec<HeteroLayer>>> {
    let raw = f.raw("heterogeneous_layers")?;
    let layers = match raw {
        Value::Null => return Some(None),
        Value::Array(items) if items.len() as u64 == num_layers => serde_json::from_value::<Vec<HeteroLayer>>(raw.clone()).ok(),
        _ => None,
    };
    let fits = |l: &Vec<HeteroLayer>| {
        let mut kinds = Vec::new();
        for k in l.iter().map(HeteroLayer::kind) {
            if !kinds.contains(&k) {
                kinds.push(k);
            }
        }
        kinds.len() <= MAX_LAYER_KINDS && l.iter().all(|x| x.ffn_hidden_size.is_none_or(|w| (1..=1 << 26).contains(&w)))
    };
    match layers.filter(fits) {
        Some(l) => Some(Some(l)),
        None => {
            f.diags.push(Diagnostic::new(
                Code::InvalidValue,
                format!("`model.heterogeneous_layers` must list num_layers = {num_layers} layers of {{\"attention\": bool, \"ffn_hidden_size\": width or null}}, with at most {MAX_LAYER_KINDS} distinct kinds"),
                "give one entry per layer, or heterogeneous_layers_config_encoded_json (block_configs); the model is read without it meanwhile",
            ));
            Some(None)
        }
    }
}
