//! The per-family parts of the Hugging Face import that the generic Llama reading in `hf.rs` does not cover: Llama 4
//! (interleaved MoE with its own dense width and a shared expert), gpt-oss (biases everywhere), Gemma 2/3 (GeGLU, tied
//! embeddings by default), EXAONE, OLMo-2, MiniMax-M2 (MTP modules), Nemotron-4 (squared ReLU, LayerNorm), Qwen3.5
//! (Gated DeltaNet like Qwen3-Next) — and the unwrapping of multimodal configs whose language model sits under
//! `text_config`.
// Field meanings: transformers' configuration_*.py of each model_type; the Megatron fields are those Megatron Bridge's
// bridges set (src/megatron/bridge/models/<family>/*_bridge.py provider_bridge).

use crate::fields::as_uint;
use crate::limits::MAX_LAYERS;
use crate::{Code, InputError};
use serde_json::{Map, Value, json};

/// Keys of a multimodal config that describe encoders meshplan does not count in the language model.
const ENCODER_KEYS: &[&str] = &["vision_config", "audio_config", "speech_config", "vision_tower", "mm_projector"];

/// A multimodal config (Llama 4, Gemma 3, Qwen3.5, …) keeps its language model under `text_config`. Returns the
/// language model's keys with the outer keys it lacks (`tie_word_embeddings`, …) and the outer `model_type`, and the
/// encoder keys left out; `None` when the config is flat (it has `num_hidden_layers` itself, or no `text_config`).
pub fn unwrap_text_config(outer: &Map<String, Value>) -> Option<(Map<String, Value>, Vec<&'static str>)> {
    if outer.contains_key("num_hidden_layers") {
        return None;
    }
    let Some(Value::Object(text)) = outer.get("text_config") else { return None };
    let mut c = text.clone();
    for (k, v) in outer {
        if k != "text_config" && !ENCODER_KEYS.contains(&k.as_str()) && !c.contains_key(k) {
            c.insert(k.clone(), v.clone());
        }
    }
    // The family is the outer model_type ("llama4", "gemma3", "qwen3_5"); the inner one names the text half.
    if let Some(t) = outer.get("model_type") {
        c.insert("model_type".into(), t.clone());
    }
    let excluded = ENCODER_KEYS.iter().copied().filter(|k| outer.get(*k).is_some_and(|v| !v.is_null())).collect();
    Some((c, excluded))
}

/// Older spellings of the sizing keys, renamed to the ones `hf.rs` reads (EXAONE 3.x: `num_layers`; GPT-style
/// configs: `n_layer` …). A key already present is kept.
pub fn rename_keys(c: &mut Map<String, Value>, model_type: &str) {
    let renames: &[(&str, &str)] = match model_type {
        "exaone" => &[("num_layers", "num_hidden_layers"), ("layer_norm_epsilon", "rms_norm_eps")],
        // Nemotron-4 keeps the Llama names; its norm is `norm_eps` (not a sizing key).
        _ => &[],
    };
    for (old, new) in renames {
        if !c.contains_key(*new) {
            if let Some(v) = c.get(*old).cloned() {
                c.insert((*new).to_string(), v);
            }
        }
    }
}

/// The sizing keys a family's config class defaults, filled where the config leaves them out (Gemma 3's released
/// gemma-3-4b-it config.json names only hidden_size, intermediate_size and num_hidden_layers under text_config).
// Source: transformers Gemma3TextConfig.__init__ defaults (vocab_size 262_208, hidden_size 2304, intermediate_size 9216,
// num_hidden_layers 26, num_attention_heads 8, num_key_value_heads 4, head_dim 256, max_position_embeddings 131_072,
// sliding_window 4096), as T5Gemma2TextConfig repeats them.
pub fn fill_defaults(c: &mut Map<String, Value>, model_type: &str) {
    let defaults: &[(&str, u64)] = match model_type {
        "gemma3" | "gemma3_text" => &[
            ("vocab_size", 262_208),
            ("hidden_size", 2304),
            ("intermediate_size", 9216),
            ("num_hidden_layers", 26),
            ("num_attention_heads", 8),
            ("num_key_value_heads", 4),
            ("head_dim", 256),
            ("max_position_embeddings", 131_072),
            ("sliding_window", 4096),
        ],
        _ => &[],
    };
    for (k, v) in defaults {
        if c.get(*k).is_none_or(Value::is_null) {
            c.insert((*k).to_string(), json!(v));
        }
    }
}

/// Whether a family ties the output layer to the embedding when its config says nothing (Gemma does:
/// `tie_word_embeddings=True` in Gemma2Config / Gemma3TextConfig; transformers' PretrainedConfig default is also True,
/// but Llama-family configs always state it).
pub fn ties_by_default(model_type: &str) -> bool {
    matches!(model_type, "gemma" | "gemma2" | "gemma3" | "gemma3_text" | "gemma4" | "gemma4_text")
}

/// The family's own Megatron fields, written over the generic reading in `m`. `layers` is the checked layer count.
pub fn apply(model_type: &str, c: &Map<String, Value>, layers: u64, m: &mut Map<String, Value>) {
    sliding_window(model_type, c, layers, m);
    let g = |k: &str| c.get(k).and_then(as_uint);
    let mut put = |k: &str, v: Value| {
        m.insert(k.to_string(), v);
    };
    match model_type {
        "llama4" => {
            // Llama4TextConfig: MoE layers use intermediate_size (experts and the one shared expert), dense layers
            // intermediate_size_mlp; moe_layers defaults to every interleave_moe_layer_step-th layer counted from 1.
            if let Some(dense) = g("intermediate_size_mlp") {
                put("ffn_hidden_size", json!(dense));
            }
            if let Some(w) = g("intermediate_size") {
                put("moe_shared_expert_intermediate_size", json!(w));
            }
            if let Some(p) = llama4_moe_layers(c, layers) {
                put("moe_layer_freq", json!(p));
            }
            // Chunked attention on the RoPE layers; NoPE layers (no_rope_layers 0, default every 4th: Llama4TextConfig
            // no_rope_layer_interval 4) attend globally. Megatron-Core: chunk_attention_size, no_rope_freq (1 = NoPE).
            if let Some(chunk) = g("attention_chunk_size") {
                put("chunk_attention_size", json!(chunk));
            }
            match c.get("no_rope_layers") {
                Some(Value::Array(list)) if list.len() as u64 == layers && layers <= MAX_LAYERS => {
                    put("no_rope_freq", json!(list.iter().map(|v| u8::from(as_uint(v) == Some(0))).collect::<Vec<u8>>()));
                }
                _ => put("no_rope_freq", json!(g("no_rope_layer_interval").filter(|&n| n >= 1 && n <= MAX_LAYERS).unwrap_or(4))),
            }
            // use_qk_norm is an L2 norm without weights (Llama4TextL2Norm): no parameters.
            put("qk_layernorm", json!(false));
            // Llama4TextMoe scores its top-1 expert with a sigmoid, so Megatron's "topk 1 needs pre-softmax" check (made
            // for softmax scoring) does not apply; meshplan has no score-function field, and pre-softmax stands in.
            put("moe_router_pre_softmax", json!(true));
        }
        "gpt_oss" => {
            // GptOssConfig: q/k/v/o biases (attention_bias) and expert biases; Bridge's GPT-OSS provider sets
            // add_bias_linear. The clamped SwiGLU (activation_func_clamp_value 7) adds no weights.
            put("add_bias_linear", json!(true));
            put("add_qkv_bias", json!(true));
            // Attention sinks: Bridge's GPT-OSS provider sets softmax_type = "learnable".
            put("softmax_type", json!("learnable"));
            if let Some(k) = g("num_experts_per_tok").or(g("experts_per_token")) {
                put("moe_router_topk", json!(k));
            }
        }
        "gemma" | "gemma2" | "gemma3" | "gemma3_text" | "gemma4" | "gemma4_text" => {
            // Gemma: GeGLU (gelu_pytorch_tanh, gated); Gemma 3 and 4 add per-head q/k RMSNorm.
            put("activation_func", json!("gelu"));
            put("qk_layernorm", json!(!matches!(model_type, "gemma" | "gemma2")));
        }
        "exaone4" | "olmo2" | "olmo3" => {
            // Exaone4Attention and Olmo2Attention normalise q and k (q_norm, k_norm).
            put("qk_layernorm", json!(true));
        }
        "minimax_m2" => {
            // MiniMax-M2: use_qk_norm; `num_mtp_modules` MTP modules (reported apart from the published total).
            put("qk_layernorm", json!(c.get("use_qk_norm").and_then(Value::as_bool).unwrap_or(false)));
            if c.get("use_mtp").and_then(Value::as_bool).unwrap_or(false) {
                if let Some(n) = g("num_mtp_modules").filter(|&n| n > 0) {
                    put("mtp_num_layers", json!(n));
                }
            }
        }
        "nemotron" => {
            // NemotronConfig (Nemotron-4): squared ReLU ("relu2") without a gate, LayerNorm (layernorm1p), no biases.
            put("activation_func", json!("squared_relu"));
            put("gated_linear_unit", json!(false));
            put("normalization", json!("LayerNorm"));
            if let Some(kv) = g("head_dim").or(g("kv_channels")) {
                put("kv_channels", json!(kv));
            }
        }
        _ => {}
    }
}

/// Llama 4's MoE layers as a 0/1 list: `moe_layers` when listed, else every `interleave_moe_layer_step`-th layer
/// (layer i is MoE iff (i + 1) % step == 0); `None` when every layer is MoE (step 1, or nothing said).
fn llama4_moe_layers(c: &Map<String, Value>, layers: u64) -> Option<Vec<u8>> {
    let layers = layers.min(MAX_LAYERS);
    if let Some(Value::Array(list)) = c.get("moe_layers") {
        let mut p = vec![0u8; usize::try_from(layers).ok()?];
        for i in list.iter().take(p.len()).filter_map(as_uint) {
            if let Some(slot) = p.get_mut(usize::try_from(i).unwrap_or(usize::MAX)) {
                *slot = 1;
            }
        }
        return Some(p);
    }
    let step = c.get("interleave_moe_layer_step").and_then(as_uint).unwrap_or(1).max(1);
    (step > 1).then(|| (0..layers).map(|i| u8::from((i + 1) % step == 0)).collect())
}

/// Sliding-window attention as Megatron Bridge's bridges map it: `window_size = (sliding_window - 1, 0)` and
/// `window_attn_skip_freq` one 0/1 per layer from `layer_types` (1 = "sliding_attention"), or the family's fixed
/// alternation where the config has no list (Gemma 2: every 2nd layer full; Gemma 3: every `sliding_window_pattern`-th).
/// Families whose `sliding_window` is off unless `use_sliding_window` (Qwen2/Qwen3) or absent get none.
// Source: Megatron Bridge src/megatron/bridge/models/exaone/exaone_moe/exaone_moe_bridge.py (window_attn_skip_freq
// from layer_types, window_size = (sliding_window - 1, 0)); transformers Gemma2DecoderLayer (sliding on even
// layer_idx), Gemma3DecoderLayer (sliding unless (layer_idx + 1) % sliding_window_pattern == 0).
fn sliding_window(model_type: &str, c: &Map<String, Value>, layers: u64, m: &mut Map<String, Value>) {
    let Some(w) = c.get("sliding_window").and_then(as_uint).filter(|&w| w >= 1) else { return };
    if c.get("use_sliding_window").and_then(Value::as_bool) == Some(false) || model_type.starts_with("qwen") {
        return;
    }
    let freq = match c.get("layer_types") {
        Some(Value::Array(types)) if types.len() as u64 == layers && layers <= MAX_LAYERS => {
            let flags: Vec<u8> = types.iter().map(|t| u8::from(t.as_str() == Some("sliding_attention"))).collect();
            if !flags.contains(&1) {
                return;
            }
            Some(json!(flags))
        }
        // Chunked attention (Llama 4) and other lists without a sliding layer: no window.
        Some(Value::Array(_)) => return,
        _ => match model_type {
            "gemma2" => Some(json!(2)),
            "gemma3" | "gemma3_text" => Some(json!(c.get("sliding_window_pattern").and_then(as_uint).unwrap_or(6).max(1))),
            "gpt_oss" | "exaone4" | "olmo3" => return, // these always list layer_types
            _ => None,
        },
    };
    m.insert("window_size".into(), json!([w - 1, 0]));
    if let Some(f) = freq {
        m.insert("window_attn_skip_freq".into(), f);
    }
}

/// DeciLM / Llama-Nemotron (`nemotron-nas`): per-layer `block_configs`, as Megatron Bridge hands them to Megatron-Core
/// (`heterogeneous_layers_config_encoded_json`), with the query groups their attention layers share. A block meshplan
/// cannot size is refused by name.
// Source: Megatron Bridge src/megatron/bridge/models/llama_nemotron (heterogeneous_layers_config_encoded_json =
// the HF config as JSON); megatron/core/transformer/heterogeneous/heterogeneous_config.py.
pub fn block_configs(c: &Map<String, Value>, layers: u64, m: &mut Map<String, Value>) -> Result<(), InputError> {
    let (hidden, heads) = (c.get("hidden_size").and_then(as_uint).unwrap_or(1), c.get("num_attention_heads").and_then(as_uint).unwrap_or(1));
    let blocks = c.get("block_configs").unwrap_or(&Value::Null);
    let (_, groups) = crate::model_fields::parse_block_configs(blocks, layers, hidden, heads).map_err(|why| {
        InputError::new(Code::HfConfigUnmappable, format!("the config's block_configs cannot be sized: {why}"), "give Megatron fields directly, or a supported family's config.json")
    })?;
    if let Some(g) = groups {
        m.insert("num_query_groups".into(), json!(g));
    }
    m.insert("heterogeneous_layers_config_encoded_json".into(), json!({"block_configs": blocks}));
    Ok(())
}
