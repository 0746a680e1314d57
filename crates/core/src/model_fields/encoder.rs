//! The model section's `vision_config`: a vision encoder in TransformerConfig names (num_layers, hidden_size,
//! ffn_hidden_size, num_attention_heads, gated_linear_unit, add_bias_linear, normalization) plus its patch, merge and
//! projector sizes ([`VisionEncoder`]). The Hugging Face import writes it from a config's `vision_config`.

use crate::fields::{Fields, as_uint, short};
use crate::limits::{MAX_FIELD, MAX_LAYERS};
use crate::model::VisionEncoder;
use crate::{Code, Diagnostic};
use serde_json::Value;

use crate::limits::MAX_PROJECTOR_LINEARS;

/// The encoder `vision_config` describes, over `base`'s; `None` without one.
pub fn read(f: &mut Fields, base: Option<&VisionEncoder>, section: &str) -> Option<VisionEncoder> {
    let Some(value) = f.raw("vision_config") else { return base.cloned() };
    let path = format!("{section}.vision_config");
    let mut g = Fields::new(Some(value), &path, f.diags);
    if !g.is_present() {
        return base.cloned();
    }
    let hidden_size = g.uint("hidden_size", base.map_or(1024, |b| b.hidden_size), 1, 1 << 20);
    let e = VisionEncoder {
        num_layers: g.uint("num_layers", base.map_or(1, |b| b.num_layers), 0, MAX_LAYERS),
        hidden_size,
        ffn_hidden_size: g.uint("ffn_hidden_size", base.map_or(4 * hidden_size, |b| b.ffn_hidden_size), 1, 1 << 24),
        num_attention_heads: g.uint("num_attention_heads", base.map_or(16, |b| b.num_attention_heads), 1, 1 << 16),
        gated_linear_unit: g.boolean("gated_linear_unit", base.is_some_and(|b| b.gated_linear_unit)),
        add_bias_linear: g.boolean("add_bias_linear", base.is_none_or(|b| b.add_bias_linear)),
        normalization: g.choice("normalization", &["LayerNorm", "RMSNorm"], "LayerNorm").to_string(),
        patch_dim: g.uint("patch_dim", base.map_or(3 * 14 * 14, |b| b.patch_dim), 1, 1 << 24),
        patches_per_token: g.uint("patches_per_token", base.map_or(1, |b| b.patches_per_token), 1, 1 << 16),
        projector: Vec::new(),
        extra_parameters: g.uint("extra_parameters", base.map_or(0, |b| b.extra_parameters), 0, MAX_FIELD),
        tensor_model_parallel_size: base.and_then(|b| b.tensor_model_parallel_size),
    };
    // The encoder's own TP (1: whole on every TP rank, as Megatron Bridge builds a Hugging Face tower; at least the
    // language model's TP: split as the language model).
    let tensor_model_parallel_size = match g.raw("tensor_model_parallel_size") {
        None => e.tensor_model_parallel_size,
        Some(_) => Some(g.uint("tensor_model_parallel_size", 1, 1, 1 << 16)),
    };
    let projector = match g.raw("projector") {
        None => base.map_or_else(Vec::new, |b| b.projector.clone()),
        Some(v) => projector_of(v).unwrap_or_else(|why| {
            g.diags.push(Diagnostic::new(
                Code::InvalidValue,
                format!("`{path}.projector` {why}, found {}", short(v)),
                format!("list at most {MAX_PROJECTOR_LINEARS} linears as [in_features, out_features] (none counted meanwhile)"),
            ));
            Vec::new()
        }),
    };
    g.finish();
    Some(VisionEncoder { projector, tensor_model_parallel_size, ..e })
}

/// A list of [in, out] pairs of whole numbers in 1..=2^24.
fn projector_of(v: &Value) -> Result<Vec<[u64; 2]>, &'static str> {
    let Value::Array(items) = v else { return Err("must be a list of [in_features, out_features]") };
    if items.len() > MAX_PROJECTOR_LINEARS {
        return Err("lists more linears than meshplan reads");
    }
    items
        .iter()
        .map(|it| match it.as_array().map(|a| a.iter().map(as_uint).collect::<Vec<_>>()).as_deref() {
            Some([Some(i), Some(o)]) if (1..=1 << 24).contains(i) && (1..=1 << 24).contains(o) => Ok([*i, *o]),
            _ => Err("must be a list of [in_features, out_features], each a whole number in 1..=16777216"),
        })
        .collect()
}
