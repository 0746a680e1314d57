//! Hugging Face `config.json` → Megatron TransformerConfig, for the Llama (3 and 4), Qwen2/Qwen2.5/Qwen3, Qwen-MoE,
//! Mixtral, OLMoE, OLMo-2, DeepSeek-V2/V3, Kimi-K2, GLM-4.5, gpt-oss, Gemma 2/3, Phi-3/Phi-4, EXAONE, MiniMax-M2 and
//! Nemotron-4 families (`hf/families.rs` holds what differs per family, and unwraps `text_config`), the hybrid
//! Nemotron-H, Qwen3-Next and Qwen3.5 (`hf/hybrid.rs`), and Step-3.5 (`hf/step.rs`).
// Field mapping follows Megatron Bridge's model bridges (src/megatron/bridge/models/*/ *_bridge.py: provider_bridge).

use crate::fields::{as_uint, short};
use crate::limits::{MAX_FIELD, MAX_LAYERS};
use crate::model::{ModelConfig, MoeLayerFreq};
use crate::model_fields::model_from_fields;
use crate::{Code, Diagnostic, InputError};
use serde_json::{Map, Value, json};

mod families;
mod dsv4;
mod gemma4;
mod hybrid;
mod step;
mod vision;

/// The `model_type` values mapped, with the family they belong to.
pub const FAMILIES: &[(&str, &str)] = &[
    ("llama", "Llama"),
    ("mistral", "Llama"),
    ("qwen2", "Qwen2"),
    ("qwen3", "Qwen3"),
    ("qwen2_moe", "Qwen2-MoE"),
    ("qwen3_moe", "Qwen3-MoE"),
    ("mixtral", "Mixtral"),
    ("olmoe", "OLMoE"),
    ("deepseek_v2", "DeepSeek-V2"),
    ("deepseek_v3", "DeepSeek-V3"),
    ("kimi_k2", "Kimi-K2"),
    ("glm4_moe", "GLM-4.5"),
    ("nemotron_h", "Nemotron-H"),
    ("qwen3_next", "Qwen3-Next"),
    ("qwen3_5", "Qwen3.5"),
    ("qwen3_5_moe", "Qwen3.5-MoE"),
    ("llama4", "Llama 4"),
    ("gpt_oss", "gpt-oss"),
    ("gemma", "Gemma"),
    ("gemma2", "Gemma 2"),
    ("gemma3", "Gemma 3"),
    ("gemma3_text", "Gemma 3"),
    ("gemma4", "Gemma 4 (language model)"),
    ("gemma4_text", "Gemma 4"),
    ("phi3", "Phi-3 / Phi-4"),
    ("olmo2", "OLMo-2"),
    ("olmo3", "OLMo-3"),
    ("exaone", "EXAONE"),
    ("exaone4", "EXAONE 4"),
    ("minimax_m2", "MiniMax-M2"),
    ("nemotron", "Nemotron-4"),
    ("nemotron-nas", "Llama-Nemotron (DeciLM block_configs)"),
    ("qwen3_vl", "Qwen3-VL (language model)"),
    ("qwen3_vl_moe", "Qwen3-VL-MoE (language model)"),
    ("kimi_k25", "Kimi-K2.5 (language model)"),
    ("deepseek_v32", "DeepSeek-V3.2"),
    ("glm_moe_dsa", "GLM-5"),
    ("deci", "DeciLM (block_configs)"),
    ("step3p5", "Step-3.5"),
    ("deepseek_v4", "DeepSeek-V4"),
];

/// The families whose layer kinds are not all attention: their own readers size them (`hf/hybrid.rs`).
fn hybrid_family(model_type: &str) -> bool {
    matches!(model_type, "nemotron_h" | "qwen3_next" | "qwen3_5" | "qwen3_5_moe")
}

/// A readable name from `_name_or_path` or the architecture.
pub fn hf_model_name(hf: &Value) -> Option<String> {
    let s = hf.get("_name_or_path").and_then(Value::as_str).or_else(|| hf.get("architectures")?.get(0)?.as_str())?;
    Some(s.chars().filter(|c| !c.is_control() && *c != '<' && *c != '>').take(80).collect())
}

/// A `config.json` read into Megatron TransformerConfig fields ([`map`]), with the findings made before those fields
/// are read as the model (`before`) and after (`after`); [`finish`] reads them. Two halves, so that the page's module
/// can leave the families' mapping to the tools module (core feature `hf-config`, see [`read`]).
#[derive(Clone, Debug, PartialEq)]
pub struct HfReading {
    pub fields: Value,
    pub before: Vec<Diagnostic>,
    pub after: Vec<Diagnostic>,
}

/// How a build without the `hf-config` feature maps a config: installed at run time (the page's module asks the tools
/// module, src/state/hf.rs); until then a plan with `hf_config` is the `hf-config-loading` input error.
static READER: std::sync::OnceLock<fn(&Value) -> Result<HfReading, InputError>> = std::sync::OnceLock::new();

/// Installs the config.json reader of a build without the `hf-config` feature (the first one installed stays).
pub fn install(reader: fn(&Value) -> Result<HfReading, InputError>) {
    let _ = READER.set(reader);
}

/// The model a plan's `model.hf_config` describes: the families' mapping compiled in (feature `hf-config`, on by
/// default), or the one [`install`]ed.
pub fn read(hf: &Value, diags: &mut Vec<Diagnostic>) -> Result<ModelConfig, InputError> {
    #[cfg(feature = "hf-config")]
    let reading = map(hf)?;
    #[cfg(not(feature = "hf-config"))]
    let reading = match READER.get() {
        Some(reader) => reader(hf)?,
        None => return Err(loading()),
    };
    Ok(finish(reading, diags))
}

/// The input error of a plan with `model.hf_config` in a build whose config.json reader is not there (yet).
pub fn loading() -> InputError {
    InputError::new(
        Code::HfConfigLoading,
        "the model is a Hugging Face config.json, which the page reads once its tools module (meshplan-tools_bg.wasm) has loaded",
        "wait for the page to finish loading (serve meshplan-tools_loader.js, meshplan-tools.js and meshplan-tools_bg.wasm beside index.html), or give the model as a preset or Megatron TransformerConfig fields",
    )
}

pub fn from_hf_config(hf: &Value, diags: &mut Vec<Diagnostic>) -> Result<ModelConfig, InputError> {
    Ok(finish(map(hf)?, diags))
}

/// The reading's fields as the model, its findings in the order they were made.
pub fn finish(reading: HfReading, diags: &mut Vec<Diagnostic>) -> ModelConfig {
    diags.extend(reading.before);
    let mut config = model_from_fields(Some(&reading.fields), None, "model.hf_config", diags);
    if config.moe_layer_freq == MoeLayerFreq::Every(0) {
        config.moe_layer_freq = MoeLayerFreq::Every(1);
    }
    diags.extend(reading.after);
    config
}

/// The families' mapping: a config.json to Megatron TransformerConfig fields.
pub fn map(hf: &Value) -> Result<HfReading, InputError> {
    let mut before = Vec::new();
    let diags = &mut before;
    let Value::Object(outer) = hf else {
        return Err(InputError::new(Code::HfConfigUnmappable, "`model.hf_config` must be a config.json object", "paste the whole config.json"));
    };
    let model_type = outer.get("model_type").and_then(Value::as_str).unwrap_or("").to_ascii_lowercase();
    // A multimodal config's language model sits under text_config; its encoders are not counted (and the plan says so).
    let (mut flat, mut excluded) = families::unwrap_text_config(outer).unwrap_or_else(|| (outer.clone(), Vec::new()));
    families::rename_keys(&mut flat, &model_type);
    families::fill_defaults(&mut flat, &model_type);
    let c = &flat;
    // The vision encoders meshplan sizes become the model's vision_config; the rest stay named as not counted.
    let vision = c.get("hidden_size").and_then(as_uint).and_then(|h| vision::encoder(&model_type, outer, h));
    if vision.is_some() {
        excluded.retain(|k| *k != "vision_config");
    }
    note_excluded(&excluded, outer, &model_type, diags);
    // A Nemotron-H config may give its layers as a block list alone (Nemotron 3 Ultra has no num_hidden_layers).
    let listed = model_type == "nemotron_h" && c.get("layers_block_type").is_some_and(Value::is_array);
    check_required(c, &model_type, listed)?;
    let heterogeneous = matches!(model_type.as_str(), "nemotron-nas" | "deci") && c.contains_key("block_configs");
    // Gemma 4 sizes every part its configs name (hf/gemma4.rs).
    let gemma4 = matches!(model_type.as_str(), "gemma4" | "gemma4_text");
    if !hybrid_family(&model_type) && !heterogeneous && !matches!(model_type.as_str(), "step3p5" | "deepseek_v4") && !gemma4 {
        if let Some(e) = hybrid::unsized_layers(c) {
            return Err(e);
        }
    }
    if !FAMILIES.iter().any(|(t, _)| *t == model_type) {
        diags.push(Diagnostic::new(
            Code::HfConfigFamilyUnknown,
            format!("model_type {:?} is not a family meshplan maps; it was read as a Llama-style decoder", model_type.chars().take(40).collect::<String>()),
            format!("check the derived fields; mapped families: {}", FAMILIES.iter().map(|(t, _)| *t).collect::<Vec<_>>().join(", ")),
        ));
    }
    let (mut m, layers) = dense_fields(c, &model_type, listed, diags);
    moe_fields(c, &model_type, layers, &mut m, diags);
    variant_fields(c, &model_type, layers, &mut m);
    if heterogeneous {
        families::block_configs(c, layers, &mut m)?;
    }
    if let Some(v) = vision {
        m.insert("vision_config".into(), v);
    }
    match model_type.as_str() {
        "nemotron_h" => hybrid::nemotron_h(c, &mut m)?,
        "qwen3_next" | "qwen3_5" | "qwen3_5_moe" => hybrid::qwen3_next(c, &mut m),
        "step3p5" => step::step3p5(c, layers, &mut m, diags),
        "gemma4" | "gemma4_text" => gemma4::gemma4(c, &mut m),
        "deepseek_v4" => dsv4::deepseek_v4(c, layers, &mut m, diags)?,
        _ => {}
    }
    let megatron = Value::Object(m);
    // The shared-indexer note needs the model: read here once more (its own findings are `finish`'s to make).
    let config = finish(HfReading { fields: megatron.clone(), before: Vec::new(), after: Vec::new() }, &mut Vec::new());
    let mut after = Vec::new();
    note_shared_indexers(c, &config, &mut after);
    Ok(HfReading { fields: megatron, before, after })
}

/// The encoder keys of a multimodal config that are not counted, named in one diagnostic.
fn note_excluded(excluded: &[&str], outer: &Map<String, Value>, model_type: &str, diags: &mut Vec<Diagnostic>) {
    if excluded.is_empty() {
        return;
    }
    // Each part with its own model_type where it names one ("audio_config (gemma4_audio)").
    let named: Vec<String> = excluded
        .iter()
        .map(|k| match outer.get(*k).and_then(|v| v.get("model_type")).and_then(Value::as_str) {
            Some(t) => format!("{k} ({})", t.chars().filter(|c| !c.is_control()).take(40).collect::<String>()),
            None => (*k).to_string(),
        })
        .collect();
    diags.push(Diagnostic::new(
        Code::HfConfigPartExcluded,
        format!(
            "the config's {} {} not counted: meshplan sizes the language model under text_config (model_type {:?})",
            named.join(" and "),
            if excluded.len() == 1 { "is" } else { "are" },
            model_type.chars().take(40).collect::<String>()
        ),
        "the encoder's weights, activations and FLOPs are left out: give its sizes as model.vision_config (TransformerConfig names, patch_dim, patches_per_token, projector), or plan the text model alone",
    ));
}

/// The keys without which no transformer can be sized: an error naming the missing ones.
fn check_required(c: &Map<String, Value>, model_type: &str, listed: bool) -> Result<(), InputError> {
    let required = ["num_hidden_layers", "hidden_size", "num_attention_heads", "vocab_size"];
    let missing: Vec<String> = required
        .iter()
        .filter(|k| !(listed && **k == "num_hidden_layers"))
        .filter(|k| c.get(**k).and_then(as_uint).is_none())
        .map(|k| match c.get(*k) {
            Some(v) if !v.is_null() => format!("{k} (found {}, not a whole number)", short(v)),
            _ => k.to_string(),
        })
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(InputError::new(
        Code::HfConfigUnmappable,
        format!(
            "the Hugging Face config (model_type {:?}) lacks {} needed to size a transformer",
            model_type.chars().take(40).collect::<String>(),
            missing.join(", ")
        ),
        "paste a decoder-only transformer's config.json (Llama, Qwen, Mixtral, OLMoE, DeepSeek, Kimi-K2, GLM-4.5), or give Megatron fields directly",
    ))
}

/// The Llama reading every family starts from: layers (checked first: it bounds every per-layer list), widths, heads,
/// vocabulary, norms, biases and tied embeddings. Returns the Megatron fields and the checked layer count.
fn dense_fields(c: &Map<String, Value>, model_type: &str, listed: bool, diags: &mut Vec<Diagnostic>) -> (Map<String, Value>, u64) {
    let g = |k: &str| c.get(k).and_then(as_uint);
    let flag = |k: &str| c.get(k).and_then(Value::as_bool);
    let mut m = Map::new();
    let mut put = |k: &str, v: Value| {
        m.insert(k.to_string(), v);
    };
    let layers = match g("num_hidden_layers").unwrap_or(1) {
        n @ 1..=MAX_LAYERS => {
            if !listed {
                put("num_layers", json!(n));
            }
            n
        }
        n => {
            diags.push(Diagnostic::new(
                Code::InvalidValue,
                format!("`model.hf_config.num_hidden_layers` must be an integer in 1..={MAX_LAYERS}, found {n}"),
                format!("set num_hidden_layers to at most {MAX_LAYERS} (using 1 meanwhile)"),
            ));
            1
        }
    };
    put("hidden_size", json!(g("hidden_size")));
    put("num_attention_heads", json!(g("num_attention_heads")));
    put("vocab_size", json!(g("vocab_size")));
    put("num_query_groups", json!(g("num_key_value_heads").or(g("num_attention_heads"))));
    if let Some(hd) = g("head_dim") {
        put("kv_channels", json!(hd));
    }
    if let Some(ffn) = g("intermediate_size") {
        put("ffn_hidden_size", json!(ffn));
    }
    if let Some(p) = g("max_position_embeddings") {
        put("max_position_embeddings", json!(p));
    }
    put("position_embedding_type", json!("rope"));
    put("gated_linear_unit", json!(true));
    put("activation_func", json!("silu"));
    put("normalization", json!("RMSNorm"));
    put("add_bias_linear", json!(flag("mlp_bias").unwrap_or(false)));
    let qkv_bias = match model_type {
        "qwen2" | "qwen2_moe" => true,
        _ => flag("attention_bias").unwrap_or(false),
    };
    put("add_qkv_bias", json!(qkv_bias));
    let qk_norm = matches!(model_type, "qwen3" | "qwen3_moe" | "qwen3_next" | "qwen3_vl" | "qwen3_vl_moe" | "olmoe") || flag("use_qk_norm").unwrap_or(false);
    put("qk_layernorm", json!(qk_norm));
    put("share_embeddings_and_output_weights", json!(flag("tie_word_embeddings").unwrap_or(families::ties_by_default(model_type))));
    (m, layers)
}

/// Multi-latent attention, MTP depths, the family's own fields and DeepSeek Sparse Attention's indexer.
fn variant_fields(c: &Map<String, Value>, model_type: &str, layers: u64, m: &mut Map<String, Value>) {
    let g = |k: &str| c.get(k).and_then(as_uint);
    let mut put = |k: &str, v: Value| {
        m.insert(k.to_string(), v);
    };
    // Multi-latent attention (DeepSeek-V2/V3, Kimi-K2).
    if g("kv_lora_rank").is_some() {
        put("multi_latent_attention", json!(true));
        put("q_lora_rank", json!(g("q_lora_rank")));
        put("kv_lora_rank", json!(g("kv_lora_rank")));
        put("qk_head_dim", json!(g("qk_nope_head_dim").unwrap_or(128)));
        put("qk_pos_emb_head_dim", json!(g("qk_rope_head_dim").unwrap_or(64)));
        put("v_head_dim", json!(g("v_head_dim").unwrap_or(128)));
    }
    // MTP depths: DeepSeek / GLM / Nemotron-H `num_nextn_predict_layers`, Qwen3.5 `mtp_num_hidden_layers`.
    if let Some(n) = g("num_nextn_predict_layers").or(g("mtp_num_hidden_layers")).filter(|&n| n > 0) {
        put("mtp_num_layers", json!(n));
    }
    families::apply(model_type, c, layers, m);
    // DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5): every MLA layer has a lightning indexer (index_n_heads heads of
    // index_head_dim) choosing index_topk keys: Megatron-Core's experimental_attention_variant "dsa" and dsa_indexer_* fields.
    if let (Some(heads), Some(dim)) = (g("index_n_heads"), g("index_head_dim")) {
        m.insert("experimental_attention_variant".into(), json!("dsa"));
        m.insert("dsa_indexer_n_heads".into(), json!(heads));
        m.insert("dsa_indexer_head_dim".into(), json!(dim));
        if let Some(k) = g("index_topk") {
            m.insert("dsa_indexer_topk".into(), json!(k));
        }
        // Megatron Bridge's GLM-5 provider trains the indexer with a KL loss of coefficient 0.001
        // (models/glm_moe_dsa/glm5_bridge.py: provider.dsa_indexer_loss_coeff = 0.001).
        if model_type == "glm_moe_dsa" {
            m.insert("dsa_indexer_loss_coeff".into(), json!(0.001));
        }
    }
}

/// GLM-5.2 computes top-k indices on some layers and reuses them on the rest, which hold no indexer: `indexer_types`
/// ("full" / "shared") lists them, or Megatron Bridge's `dsa_indexer_topk_freq` / `dsa_indexer_skip_topk_offset` cadence
/// (from `index_topk_freq` / `index_skip_topk_offset`) gives them. meshplan builds an indexer on every layer: a warning
/// naming how many layers share and the parameters counted over.
// Source: Megatron Bridge training/utils/flop_utils.py count_indexer_layers (1-based layer L computes its indices iff
// max(L − max(offset, 1), 0) mod freq == 0); models/glm_moe_dsa/glm5_bridge.py.
fn note_shared_indexers(c: &Map<String, Value>, model: &ModelConfig, diags: &mut Vec<Diagnostic>) {
    let per_layer = model.dsa_indexer_params();
    if per_layer == 0 {
        return;
    }
    let layers = model.num_layers;
    let g = |k: &str| c.get(k).and_then(as_uint);
    let shared = match c.get("indexer_types") {
        Some(Value::Array(types)) => types.iter().filter(|t| t.as_str() == Some("shared")).count() as u64,
        _ => {
            let (freq, offset) = (g("index_topk_freq").unwrap_or(1).max(1), g("index_skip_topk_offset").unwrap_or(0).max(1));
            (1..=layers).filter(|&l| l.saturating_sub(offset) % freq != 0).count() as u64
        }
    };
    if shared == 0 {
        return;
    }
    diags.push(Diagnostic::new(
        Code::HfConfigPartApproximated,
        format!(
            "the config shares its DSA indexers: {shared} of {layers} layers reuse another layer's top-k indices and hold no indexer, but meshplan builds one on every layer ({} parameters over, {per_layer} a layer, and those layers' indexer FLOPs and activations)",
            u128::from(shared) * per_layer
        ),
        "read the parameter count as an upper bound by that much; the rest of the model is sized as the config gives it",
    ));
}

/// The MoE fields: routed experts (each family's key), their width, shared experts, and which layers are MoE.
fn moe_fields(c: &Map<String, Value>, model_type: &str, layers: u64, m: &mut Map<String, Value>, diags: &mut Vec<Diagnostic>) {
    let g = |k: &str| c.get(k).and_then(as_uint);
    let mut put = |k: &str, v: Value| {
        m.insert(k.to_string(), v);
    };
    // Routed experts: the key differs by family.
    let experts = g("n_routed_experts").or(g("num_experts")).or(g("num_local_experts")).filter(|&e| e > 0);
    if let Some(e) = experts {
        put("num_moe_experts", json!(e));
        put("moe_router_topk", json!(g("num_experts_per_tok").unwrap_or(2)));
        // Mixtral and OLMoE have no separate MoE width: their intermediate_size is the expert's.
        let moe_ffn = g("moe_intermediate_size").or(g("intermediate_size"));
        put("moe_ffn_hidden_size", json!(moe_ffn));
        let shared = match (g("n_shared_experts"), g("shared_expert_intermediate_size"), moe_ffn) {
            (Some(n), _, Some(f)) if n > 0 => shared_width(n, f, diags),
            (_, Some(s), _) if s > 0 => Some(s),
            _ => None,
        };
        if let Some(s) = shared {
            put("moe_shared_expert_intermediate_size", json!(s));
        }
        let first_dense = g("first_k_dense_replace").unwrap_or(0);
        let step = g("decoder_sparse_step").or(g("moe_layer_freq")).unwrap_or(1).max(1);
        let dense_only = mlp_only_layers(c.get("mlp_only_layers"), layers, diags);
        if first_dense > 0 || step > 1 || !dense_only.is_empty() {
            // DeepSeek: layer i is MoE iff i >= first_k_dense_replace and i % moe_layer_freq == 0;
            // Qwen-MoE: iff i not in mlp_only_layers and (i + 1) % decoder_sparse_step == 0.
            let qwen = model_type.starts_with("qwen");
            let pattern: Vec<u8> = (0..layers)
                .map(|i| {
                    let sparse = if qwen { (i + 1) % step == 0 } else { i % step == 0 };
                    let dense = dense_only.get(i as usize).copied().unwrap_or(false);
                    u8::from(i >= first_dense && sparse && !dense)
                })
                .collect();
            put("moe_layer_freq", json!(pattern));
        }
    }
}

/// The shared experts' total width, `n_shared_experts × moe_intermediate_size` (DeepSeek's and Kimi's bridges),
/// computed without overflow: a product beyond [`MAX_FIELD`] is a diagnostic and no shared experts.
fn shared_width(n: u64, f: u64, diags: &mut Vec<Diagnostic>) -> Option<u64> {
    match n.checked_mul(f).filter(|&w| w <= MAX_FIELD) {
        Some(w) => Some(w),
        None => {
            diags.push(Diagnostic::new(
                Code::InvalidValue,
                format!("`model.hf_config.n_shared_experts` × the expert width = {n} × {f} is more than {MAX_FIELD}"),
                "check n_shared_experts and moe_intermediate_size (no shared experts are counted meanwhile)",
            ));
            None
        }
    }
}

/// Which of the model's `layers` layers Qwen's `mlp_only_layers` makes dense, one flag per layer, or nothing when it
/// lists no integer. A list longer than the model (at most one entry per layer) is a diagnostic and ignored; entries
/// outside the model name no layer.
fn mlp_only_layers(list: Option<&Value>, layers: u64, diags: &mut Vec<Diagnostic>) -> Vec<bool> {
    let Some(Value::Array(items)) = list else { return Vec::new() };
    if items.len() as u64 > layers {
        diags.push(Diagnostic::new(
            Code::ListTooLong,
            format!("`model.hf_config.mlp_only_layers` lists {} layers, but the model has num_hidden_layers = {layers}, the most it may list", items.len()),
            format!("list at most {layers} layer indices (from 0 to {}); the list was ignored", layers - 1),
        ));
        return Vec::new();
    }
    if !items.iter().any(|x| as_uint(x).is_some()) {
        return Vec::new();
    }
    let mut dense = vec![false; layers as usize];
    for i in items.iter().filter_map(as_uint) {
        if let Some(flag) = dense.get_mut(usize::try_from(i).unwrap_or(usize::MAX)) {
            *flag = true;
        }
    }
    dense
}
