//! The model section's reader: Megatron-Core TransformerConfig fields (a preset's, a plan's, or those the Hugging Face
//! import maps) → a resolved [`ModelConfig`]. The preset, HF and plan readers all use it; it uses only the field
//! reader below it.

use crate::fields::{Fields, as_uint};
use crate::limits::{MAX_EXPERTS, MAX_LAYERS};
use crate::model::{AttentionShape, Ffn, HeteroLayer, LayerKind, Mixer, ModelConfig, MoeLayerFreq, VisionEncoder};
use crate::{Code, Diagnostic};
use serde_json::Value;

mod dsv4;
mod encoder;
mod hetero;
mod pattern;

pub use hetero::parse_block_configs;

/// Megatron-Core TransformerConfig fields, over `base` (a preset) or Megatron's own defaults.
// Defaults: megatron/core/transformer/transformer_config.py (TransformerConfig, MLATransformerConfig) and
// megatron/training/arguments.py (make_vocab_size_divisible_by=128, position_embedding_type=learned_absolute).
pub fn model_from_fields(value: Option<&Value>, base: Option<&ModelConfig>, section: &str, diags: &mut Vec<Diagnostic>) -> ModelConfig {
    model_from_fields_known(value, base, section, diags, &mut Vec::new())
}

/// Every field name the model section reads (TransformerConfig names), as the imports route `model.*` settings.
pub fn model_field_names() -> &'static [&'static str] {
    static NAMES: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    NAMES.get_or_init(|| {
        let mut known = Vec::new();
        model_from_fields_known(None, None, "model", &mut Vec::new(), &mut known);
        known
    })
}

/// [`model_from_fields`], also giving the names of the fields it reads in `known`.
fn model_from_fields_known(
    value: Option<&Value>,
    base: Option<&ModelConfig>,
    section: &str,
    diags: &mut Vec<Diagnostic>,
    known: &mut Vec<&'static str>,
) -> ModelConfig {
    let mut f = Fields::new(value, section, diags);
    f.accept(&["preset", "name"]);
    let b = base;
    // A hybrid pattern fixes the layer count (Megatron derives num_layers from it).
    let pattern_text = pattern::read_text(&mut f, b.and_then(|b| b.hybrid_layer_pattern.as_ref()));
    let mut hybrid = pattern_text.as_deref().and_then(|t| pattern::parse(t, f.diags));
    let num_layers = match &hybrid {
        Some(p) => {
            let given = f.opt_uint("num_layers", 1, MAX_LAYERS);
            pattern::num_layers(given, p, f.diags)
        }
        None => f.uint("num_layers", b.map_or(1, |b| b.num_layers), 1, MAX_LAYERS),
    };
    let d = read_dense_fields(&mut f, b, (value, section));
    let (hidden_size, num_attention_heads) = (d.hidden_size, d.num_attention_heads);
    let moe = read_moe_fields(&mut f, b, num_layers);
    // A pattern with + (MLA) or D (DSA) layers turns MLA on (megatron/training/arguments.py l.918–923).
    let mla_pattern = hybrid.as_ref().is_some_and(|p| p.has(b'+') || p.has(b'D'));
    let multi_latent_attention = f.boolean("multi_latent_attention", b.is_some_and(|b| b.multi_latent_attention)) || mla_pattern;
    let mla = read_mla_fields(&mut f, b, value);
    let mut mtp_num_layers = f.uint("mtp_num_layers", b.map_or(0, |b| b.mtp_num_layers), 0, 1 << 10);
    let mtp_use_repeated_layer = f.boolean("mtp_use_repeated_layer", b.is_some_and(|b| b.mtp_use_repeated_layer));
    let mtp_layer = read_mtp_layer(&mut f, b, value);
    let mtp_pattern = pattern::text(&mut f, "mtp_hybrid_override_pattern");
    if let (Some(main), Some(p)) = (pattern_text.as_deref(), hybrid.as_ref()) {
        if let Some(unified) = pattern::with_mtp(main, mtp_pattern.as_deref(), mtp_num_layers, mtp_use_repeated_layer, f.diags) {
            hybrid = pattern::parse(&unified, f.diags).or_else(|| Some(p.clone()));
        }
    }
    if let Some(p) = &hybrid {
        mtp_num_layers = pattern::mtp_depths(mtp_num_layers, !f_absent(value, "mtp_num_layers"), p, f.diags);
    }
    let ssm = read_ssm_fields(&mut f, b, num_layers);
    let v = read_variant_fields(&mut f, b, (value, section), (num_layers, hidden_size, num_attention_heads));
    let v4 = dsv4::read(&mut f, b, num_layers, mtp_num_layers);
    known.extend_from_slice(f.seen());
    f.finish();
    let mut config = ModelConfig {
        num_layers,
        hidden_size: d.hidden_size,
        ffn_hidden_size: d.ffn_hidden_size,
        num_attention_heads: d.num_attention_heads,
        num_query_groups: d.num_query_groups,
        kv_channels: d.kv_channels,
        vocab_size: d.vocab_size,
        make_vocab_size_divisible_by: d.make_vocab_size_divisible_by,
        max_position_embeddings: d.max_position_embeddings,
        position_embedding_type: d.position_embedding_type,
        gated_linear_unit: d.gated_linear_unit,
        activation_func: d.activation_func,
        normalization: d.normalization,
        add_bias_linear: d.add_bias_linear,
        add_qkv_bias: d.add_qkv_bias,
        qk_layernorm: d.qk_layernorm,
        share_embeddings_and_output_weights: d.share_embeddings_and_output_weights,
        num_moe_experts: moe.num_moe_experts,
        moe_router_topk: moe.moe_router_topk,
        moe_ffn_hidden_size: moe.moe_ffn_hidden_size,
        moe_shared_expert_intermediate_size: moe.moe_shared_expert_intermediate_size,
        moe_layer_freq: moe.moe_layer_freq,
        moe_router_pre_softmax: moe.moe_router_pre_softmax,
        multi_latent_attention,
        q_lora_rank: mla.q_lora_rank,
        kv_lora_rank: mla.kv_lora_rank,
        qk_head_dim: mla.qk_head_dim,
        qk_pos_emb_head_dim: mla.qk_pos_emb_head_dim,
        v_head_dim: mla.v_head_dim,
        mtp_num_layers,
        mtp_use_repeated_layer,
        mtp_layer,
        hybrid_layer_pattern: hybrid,
        mamba_state_dim: ssm.mamba[0],
        mamba_head_dim: ssm.mamba[1],
        mamba_num_groups: ssm.mamba[2],
        mamba_num_heads: ssm.mamba[3],
        experimental_attention_variant: ssm.variant,
        linear_attention_freq: ssm.linear_attention_freq,
        linear_key_head_dim: ssm.linear[0],
        linear_value_head_dim: ssm.linear[1],
        linear_num_key_heads: ssm.linear[2],
        linear_num_value_heads: ssm.linear[3],
        linear_conv_kernel_dim: ssm.linear[4],
        attention_output_gate: v.attention_output_gate,
        moe_latent_size: v.moe_latent_size,
        moe_shared_expert_gate: v.moe_shared_expert_gate,
        window_size: v.window_size,
        window_attn_skip_freq: v.window_attn_skip_freq,
        sliding_attention_setting: v.sliding_attention_setting,
        head_wise_attn_gate: v.head_wise_attn_gate,
        attention_k_eq_v: v.attention_k_eq_v,
        softmax_type: v.softmax_type,
        heterogeneous_layers: v.heterogeneous_layers,
        vision_config: v.vision_config,
        dsa_indexer_n_heads: v.dsa[0],
        dsa_indexer_head_dim: v.dsa[1],
        dsa_indexer_topk: v.dsa[2],
        dsa_indexer_loss_coeff: v.dsa_indexer_loss_coeff,
        chunk_attention_size: v.chunk_attention_size,
        no_rope_freq: v.no_rope_freq,
        csa_compress_ratios: v4.csa_compress_ratios,
        csa_window_size: v4.csa_window_size,
        o_groups: v4.o_groups,
        o_lora_rank: v4.o_lora_rank,
        enable_hyper_connections: v4.enable_hyper_connections,
        num_residual_streams: v4.num_residual_streams,
        moe_n_hash_layers: v4.moe_n_hash_layers,
        per_layer_embed_dim: v.ple[0],
        per_layer_embed_vocab_size: v.ple[1],
        num_kv_shared_layers: v.num_kv_shared_layers,
        use_double_wide_mlp: v.use_double_wide_mlp,
    };
    if let Some(g) = v.hetero_groups.filter(|_| f_absent(value, "num_query_groups")) {
        config.num_query_groups = g;
    }
    fill_ssm_defaults(&mut config);
    check_hybrid_moe(&config, diags);
    dsv4::check(&config, diags);
    config
}

/// The dense transformer's fields as given (over `base`'s, or Megatron's defaults): widths, heads, vocabulary,
/// positions, activation, norm, biases and tied embeddings.
struct DenseFields {
    hidden_size: u64,
    ffn_hidden_size: u64,
    num_attention_heads: u64,
    num_query_groups: u64,
    kv_channels: u64,
    vocab_size: u64,
    make_vocab_size_divisible_by: u64,
    max_position_embeddings: Option<u64>,
    position_embedding_type: String,
    gated_linear_unit: bool,
    activation_func: String,
    normalization: String,
    add_bias_linear: bool,
    add_qkv_bias: bool,
    qk_layernorm: bool,
    share_embeddings_and_output_weights: bool,
}

fn read_dense_fields(f: &mut Fields, b: Option<&ModelConfig>, (value, section): (Option<&Value>, &str)) -> DenseFields {
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
    DenseFields {
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
    }
}

/// The layer variants' fields as given (over `base`'s): attention gates, sliding windows and the window layers' own
/// shape, attention sinks, heterogeneous layers, latent MoE, the vision encoder, chunked attention, NoPE layers and
/// DSA's indexer.
struct VariantFields {
    attention_output_gate: bool,
    head_wise_attn_gate: bool,
    attention_k_eq_v: bool,
    moe_shared_expert_gate: bool,
    window_size: Option<[u64; 2]>,
    window_attn_skip_freq: Option<MoeLayerFreq>,
    sliding_attention_setting: Option<AttentionShape>,
    heterogeneous_layers: Option<Vec<HeteroLayer>>,
    hetero_groups: Option<u64>,
    softmax_type: Option<String>,
    moe_latent_size: Option<u64>,
    vision_config: Option<VisionEncoder>,
    chunk_attention_size: Option<u64>,
    no_rope_freq: Option<MoeLayerFreq>,
    /// dsa_indexer_n_heads, dsa_indexer_head_dim, dsa_indexer_topk.
    dsa: [Option<u64>; 3],
    dsa_indexer_loss_coeff: Option<f64>,
    /// per_layer_embed_dim, per_layer_embed_vocab_size (Gemma 4's per-layer embeddings).
    ple: [Option<u64>; 2],
    num_kv_shared_layers: u64,
    use_double_wide_mlp: bool,
}

fn read_variant_fields(
    f: &mut Fields,
    b: Option<&ModelConfig>,
    (value, section): (Option<&Value>, &str),
    (num_layers, hidden_size, num_attention_heads): (u64, u64, u64),
) -> VariantFields {
    let cleared = |k: &str| value.and_then(|v| v.get(k)).is_some_and(Value::is_null);
    let (window_size, window_attn_skip_freq) = read_window(f, b, num_layers);
    let (heterogeneous_layers, hetero_groups) =
        hetero::read(f, b.and_then(|b| b.heterogeneous_layers.as_deref()), num_layers, hidden_size, num_attention_heads);
    let softmax_type = match f.raw("softmax_type") {
        Some(_) => Some(f.choice("softmax_type", &["vanilla", "off-by-one", "learnable"], "vanilla")).filter(|t| *t != "vanilla").map(str::to_string),
        None => b.and_then(|b| b.softmax_type.clone()),
    };
    VariantFields {
        attention_output_gate: f.boolean("attention_output_gate", b.is_some_and(|b| b.attention_output_gate)),
        head_wise_attn_gate: f.boolean("head_wise_attn_gate", b.is_some_and(|b| b.head_wise_attn_gate)),
        attention_k_eq_v: f.boolean("attention_k_eq_v", b.is_some_and(|b| b.attention_k_eq_v)),
        moe_shared_expert_gate: f.boolean("moe_shared_expert_gate", b.is_some_and(|b| b.moe_shared_expert_gate)),
        window_size,
        window_attn_skip_freq,
        sliding_attention_setting: read_sliding_attention(f, b, value),
        heterogeneous_layers,
        hetero_groups,
        softmax_type,
        moe_latent_size: f.opt_uint("moe_latent_size", 1, 1 << 24).or(b.and_then(|b| b.moe_latent_size)),
        vision_config: encoder::read(f, b.and_then(|b| b.vision_config.as_ref()), section),
        // Chunked local attention (Llama 4) and the layers without RoPE (Megatron-Core no_rope_freq).
        chunk_attention_size: f.opt_uint("chunk_attention_size", 1, 1 << 32).or(b.and_then(|b| b.chunk_attention_size)),
        no_rope_freq: read_layer_freq(f, "no_rope_freq", num_layers).or_else(|| b.and_then(|b| b.no_rope_freq.clone())),
        // DeepSeek Sparse Attention's indexer (Megatron-Core TransformerConfig dsa_indexer_*).
        dsa: [
            f.opt_uint("dsa_indexer_n_heads", 1, 1 << 16).or(b.and_then(|b| b.dsa_indexer_n_heads)),
            f.opt_uint("dsa_indexer_head_dim", 1, 1 << 16).or(b.and_then(|b| b.dsa_indexer_head_dim)),
            f.opt_uint("dsa_indexer_topk", 1, 1 << 32).or(b.and_then(|b| b.dsa_indexer_topk)),
        ],
        dsa_indexer_loss_coeff: f.opt_number("dsa_indexer_loss_coeff", 0.0, 1e6).or(b.and_then(|b| b.dsa_indexer_loss_coeff)),
        // Gemma 4's per-layer embeddings, KV-shared layers and their double-wide MLPs (Megatron Bridge
        // Gemma4DenseProvider fields).
        // null clears a preset's (Gemma4DenseProvider's None: no per-layer embeddings).
        ple: [
            f.opt_uint("per_layer_embed_dim", 1, 1 << 16).or(b.and_then(|b| b.per_layer_embed_dim).filter(|_| !cleared("per_layer_embed_dim"))),
            f.opt_uint("per_layer_embed_vocab_size", 1, 1 << 24)
                .or(b.and_then(|b| b.per_layer_embed_vocab_size).filter(|_| !cleared("per_layer_embed_vocab_size"))),
        ],
        num_kv_shared_layers: f.uint("num_kv_shared_layers", b.map_or(0, |b| b.num_kv_shared_layers.min(num_layers)), 0, num_layers),
        use_double_wide_mlp: f.boolean("use_double_wide_mlp", b.is_some_and(|b| b.use_double_wide_mlp)),
    }
}

/// Megatron Bridge's `sliding_attention_setting` (Step-3.5): the window layers' num_attention_heads, num_query_groups
/// and kv_channels (its window_size is the model's `window_size`), over `base`'s; null clears it. Anything else is a
/// diagnostic and the window layers keep the model's shape.
// Source: Megatron Bridge src/megatron/bridge/models/stepfun/step35_bridge.py provider_bridge (sliding_attention_setting
// = {window_size, num_attention_heads, num_query_groups, kv_channels}).
fn read_sliding_attention(f: &mut Fields, b: Option<&ModelConfig>, value: Option<&Value>) -> Option<AttentionShape> {
    let Some(raw) = f.raw("sliding_attention_setting") else {
        let cleared = value.and_then(|v| v.get("sliding_attention_setting")).is_some_and(Value::is_null);
        return if cleared { None } else { b.and_then(|b| b.sliding_attention_setting) };
    };
    let get = |k: &str| raw.get(k).and_then(as_uint).filter(|&n| (1..=1 << 20).contains(&n));
    let shape = match (get("num_attention_heads"), get("num_query_groups"), get("kv_channels")) {
        (Some(heads), Some(groups), Some(kv)) if heads % groups == 0 => Some(AttentionShape { num_attention_heads: heads, num_query_groups: groups, kv_channels: kv }),
        _ => None,
    };
    if shape.is_none() {
        // What is wrong, with the value found: the first entry missing or out of range, else the heads' divisibility.
        let found = match ["num_attention_heads", "num_query_groups", "kv_channels"].into_iter().find(|k| get(k).is_none()) {
            _ if !raw.is_object() => format!("found {}", crate::fields::short(raw)),
            Some(k) => format!("{k} is {}", entry(raw, k)),
            None => format!("num_attention_heads {} is not a multiple of num_query_groups {}", entry(raw, "num_attention_heads"), entry(raw, "num_query_groups")),
        };
        f.diags.push(Diagnostic::new(
            Code::InvalidValue,
            format!("`model.sliding_attention_setting` must give num_attention_heads, num_query_groups (dividing the heads) and kv_channels, each in 1..=2^20: {found}"),
            "give e.g. {\"num_attention_heads\": 96, \"num_query_groups\": 8, \"kv_channels\": 128}; the window layers keep the model's shape meanwhile",
        ));
    }
    shape
}

/// `mtp_layer`, the MTP depth's own layer kind ({"mixer": "attention" | "window_attention" | "gated_delta_net",
/// "ffn": "dense" | "moe"}), over `base`'s; null clears it. Anything else is a diagnostic and MTP keeps the last
/// decoder layer's kind.
// Source: Megatron Bridge src/megatron/bridge/models/stepfun/step35_bridge.py _MTPDenseLayerSpecsList (a dense MTP
// layer spec in place of layer_specs[-1]).
fn read_mtp_layer(f: &mut Fields, b: Option<&ModelConfig>, value: Option<&Value>) -> Option<LayerKind> {
    let Some(raw) = f.raw("mtp_layer") else {
        let cleared = value.and_then(|v| v.get("mtp_layer")).is_some_and(Value::is_null);
        return if cleared { None } else { b.and_then(|b| b.mtp_layer) };
    };
    let mixer = match raw.get("mixer").and_then(Value::as_str) {
        Some("attention") => Some(Mixer::Attention),
        Some("window_attention") => Some(Mixer::WindowAttention),
        Some("gated_delta_net") => Some(Mixer::GatedDeltaNet),
        _ => None,
    };
    let ffn = match raw.get("ffn").and_then(Value::as_str) {
        Some("dense") => Some(Ffn::Dense),
        Some("moe") => Some(Ffn::Moe),
        _ => None,
    };
    let unknown = raw.as_object().and_then(|o| o.keys().find(|k| *k != "mixer" && *k != "ffn"));
    match (mixer, ffn) {
        (Some(mixer), Some(ffn)) if unknown.is_none() && raw.is_object() => Some(LayerKind::new(mixer, ffn)),
        _ => {
            // What is wrong, with the value found.
            let found = if !raw.is_object() {
                format!("found {}", crate::fields::short(raw))
            } else if mixer.is_none() {
                format!("mixer is {}", entry(raw, "mixer"))
            } else if ffn.is_none() {
                format!("ffn is {}", entry(raw, "ffn"))
            } else {
                format!("it has the unknown key {}", crate::fields::short(&Value::String(unknown.cloned().unwrap_or_default())))
            };
            f.diags.push(Diagnostic::new(
                Code::InvalidValue,
                format!("`model.mtp_layer` must give mixer (\"attention\", \"window_attention\" or \"gated_delta_net\") and ffn (\"dense\" or \"moe\"): {found}"),
                "give e.g. {\"mixer\": \"window_attention\", \"ffn\": \"dense\"}, or null; MTP is sized like the last decoder layer meanwhile",
            ));
            None
        }
    }
}

/// `key` of the object `raw` as a diagnostic quotes it: its short form, or "missing".
fn entry(raw: &Value, key: &str) -> String {
    raw.get(key).map_or_else(|| "missing".to_string(), crate::fields::short)
}

/// HybridModel builds E layers from the MoE spec, which needs num_moe_experts (transformer_config.py).
fn check_hybrid_moe(config: &ModelConfig, diags: &mut Vec<Diagnostic>) {
    if config.hybrid_layer_pattern.as_ref().is_some_and(|p| p.has(b'E')) && !config.is_moe() {
        diags.push(Diagnostic::new(
            Code::InvalidValue,
            "the hybrid pattern has E (MoE) layers but num_moe_experts is not set: they are counted without experts",
            "set model.num_moe_experts (and moe_router_topk, moe_ffn_hidden_size)",
        ));
    }
}

/// The MoE fields as given (over `base`'s).
struct MoeFields {
    num_moe_experts: Option<u64>,
    moe_router_topk: u64,
    moe_ffn_hidden_size: Option<u64>,
    moe_shared_expert_intermediate_size: Option<u64>,
    moe_layer_freq: MoeLayerFreq,
    moe_router_pre_softmax: bool,
}

fn read_moe_fields(f: &mut Fields, b: Option<&ModelConfig>, num_layers: u64) -> MoeFields {
    let num_moe_experts = match f.raw("num_moe_experts") {
        Some(_) => f.opt_uint("num_moe_experts", 0, MAX_EXPERTS).filter(|&e| e > 0),
        None => b.and_then(|b| b.num_moe_experts),
    };
    MoeFields {
        num_moe_experts,
        moe_router_topk: f.uint("moe_router_topk", b.map_or(2, |b| b.moe_router_topk), 1, 1 << 20),
        moe_ffn_hidden_size: f.opt_uint("moe_ffn_hidden_size", 1, 1 << 26).or(b.and_then(|b| b.moe_ffn_hidden_size)),
        moe_shared_expert_intermediate_size: f
            .opt_uint("moe_shared_expert_intermediate_size", 0, 1 << 26)
            .or(b.and_then(|b| b.moe_shared_expert_intermediate_size)),
        moe_layer_freq: read_layer_freq(f, "moe_layer_freq", num_layers)
            .unwrap_or_else(|| b.map_or(MoeLayerFreq::Every(1), |b| b.moe_layer_freq.clone())),
        moe_router_pre_softmax: f.boolean("moe_router_pre_softmax", b.is_some_and(|b| b.moe_router_pre_softmax)),
    }
}

/// The multi-latent-attention sizes as given (over `base`'s; DeepSeek-V3's by default).
struct MlaFields {
    q_lora_rank: Option<u64>,
    kv_lora_rank: u64,
    qk_head_dim: u64,
    qk_pos_emb_head_dim: u64,
    v_head_dim: u64,
}

fn read_mla_fields(f: &mut Fields, b: Option<&ModelConfig>, value: Option<&Value>) -> MlaFields {
    let q_lora_rank = match f.raw("q_lora_rank") {
        Some(_) => f.opt_uint("q_lora_rank", 1, 1 << 24),
        None if value.and_then(|v| v.get("q_lora_rank")).is_some_and(Value::is_null) => None,
        None => b.map_or(Some(512), |b| b.q_lora_rank),
    };
    MlaFields {
        q_lora_rank,
        kv_lora_rank: f.uint("kv_lora_rank", b.map_or(512, |b| b.kv_lora_rank), 1, 1 << 24),
        qk_head_dim: f.uint("qk_head_dim", b.map_or(128, |b| b.qk_head_dim), 1, 1 << 20),
        qk_pos_emb_head_dim: f.uint("qk_pos_emb_head_dim", b.map_or(64, |b| b.qk_pos_emb_head_dim), 0, 1 << 20),
        v_head_dim: f.uint("v_head_dim", b.map_or(128, |b| b.v_head_dim), 1, 1 << 20),
    }
}

/// The Mamba-2 and Gated DeltaNet fields as given (over `base`'s).
struct SsmFields {
    /// mamba_state_dim, mamba_head_dim, mamba_num_groups, mamba_num_heads.
    mamba: [Option<u64>; 4],
    variant: Option<String>,
    linear_attention_freq: Option<MoeLayerFreq>,
    /// linear_key_head_dim, linear_value_head_dim, linear_num_key_heads, linear_num_value_heads, linear_conv_kernel_dim.
    linear: [Option<u64>; 5],
}

fn read_ssm_fields(f: &mut Fields, b: Option<&ModelConfig>, num_layers: u64) -> SsmFields {
    const MAMBA: [&str; 4] = ["mamba_state_dim", "mamba_head_dim", "mamba_num_groups", "mamba_num_heads"];
    const LINEAR: [&str; 5] =
        ["linear_key_head_dim", "linear_value_head_dim", "linear_num_key_heads", "linear_num_value_heads", "linear_conv_kernel_dim"];
    let base_mamba = b.map_or([None; 4], |b| [b.mamba_state_dim, b.mamba_head_dim, b.mamba_num_groups, b.mamba_num_heads]);
    let base_linear = b.map_or([None; 5], |b| {
        [b.linear_key_head_dim, b.linear_value_head_dim, b.linear_num_key_heads, b.linear_num_value_heads, b.linear_conv_kernel_dim]
    });
    let mamba = std::array::from_fn(|i| f.opt_uint(MAMBA[i], 1, 1 << 20).or(base_mamba[i]));
    let linear = std::array::from_fn(|i| f.opt_uint(LINEAR[i], 1, 1 << 20).or(base_linear[i]));
    // Megatron-Core's experimental_attention_variant values meshplan sizes ("gdn" is Megatron's alias).
    let variant = match f.raw("experimental_attention_variant") {
        Some(_) => Some(f.choice("experimental_attention_variant", &["gated_delta_net", "gdn", "dsa", "dsv4_hybrid"], "gated_delta_net").to_string()),
        None => b.and_then(|b| b.experimental_attention_variant.clone()),
    };
    let linear_attention_freq =
        read_layer_freq(f, "linear_attention_freq", num_layers).or_else(|| b.and_then(|b| b.linear_attention_freq.clone()));
    SsmFields { mamba, variant, linear_attention_freq, linear }
}

/// Fills Megatron's defaults into the Mamba-2 and Gated DeltaNet fields of a model that has such layers, so the
/// resolved plan shows the sizes it is planned with.
fn fill_ssm_defaults(c: &mut ModelConfig) {
    let kinds = c.kind_totals();
    if kinds.run_where(|k| k.mixer == Mixer::Mamba) > 0 {
        c.mamba_num_heads = Some(c.mamba_heads());
        (c.mamba_state_dim, c.mamba_head_dim, c.mamba_num_groups) = (Some(c.mamba_state()), Some(c.mamba_head()), Some(c.mamba_groups()));
    }
    if kinds.run_where(|k| k.mixer == Mixer::GatedDeltaNet) > 0 {
        let (dk, dv, hk, hv, k) = c.gdn_dims();
        c.linear_key_head_dim = Some(dk);
        c.linear_value_head_dim = Some(dv);
        c.linear_num_key_heads = Some(hk);
        c.linear_num_value_heads = Some(hv);
        c.linear_conv_kernel_dim = Some(k);
    }
}

/// Megatron-Core's `window_size` ([left, right], or the CLI's "left,right"; -1 on the left is an unbounded window, i.e.
/// none) and `window_attn_skip_freq` (as `moe_layer_freq`), over `base`'s.
// Source: megatron/core/transformer/transformer_config.py (window_size: Optional[Tuple[int, int]], -1 infinite;
// window_attn_skip_freq: int or list, 1 = sliding window); megatron/training/arguments.py (--window-size tuple_type).
fn read_window(f: &mut Fields, b: Option<&ModelConfig>, num_layers: u64) -> (Option<[u64; 2]>, Option<MoeLayerFreq>) {
    let freq = read_layer_freq(f, "window_attn_skip_freq", num_layers).or_else(|| b.and_then(|b| b.window_attn_skip_freq.clone()));
    let Some(raw) = f.raw("window_size") else { return (b.and_then(|b| b.window_size), freq) };
    let parts: Vec<Option<i64>> = match raw {
        Value::Array(items) => items.iter().map(Value::as_i64).collect(),
        Value::String(t) => t.split(',').take(3).map(|p| p.trim().parse::<i64>().ok()).collect(),
        Value::Null => return (None, freq),
        _ => Vec::new(),
    };
    match parts.as_slice() {
        [Some(-1), Some(_)] => (None, freq),
        [Some(l @ 0..), Some(r @ -1..)] if *l <= 1 << 32 && *r <= 1 << 32 => (Some([*l as u64, (*r).max(0) as u64]), freq),
        _ => {
            f.diags.push(Diagnostic::new(
                Code::InvalidValue,
                format!("`model.window_size` must be two integers [left, right] (≥ -1), found {}", crate::fields::short(raw)),
                "give window_size as [left, 0] for a causal sliding window of left + 1 keys, or leave it out for full attention",
            ));
            (None, freq)
        }
    }
}

fn f_absent(value: Option<&Value>, key: &str) -> bool {
    value.and_then(|v| v.get(key)).is_none_or(Value::is_null)
}

/// Megatron's `moe_layer_freq` or `linear_attention_freq`: an int N (every N-th layer) or one 0/1 entry per layer. A
/// list is checked entry by entry and against `num_layers` before anything is allocated for it.
fn read_layer_freq(f: &mut Fields, key: &'static str, num_layers: u64) -> Option<MoeLayerFreq> {
    let v = f.raw(key)?;
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
            let (code, one) = match key {
                "moe_layer_freq" => (Code::MoeLayerFreqLength, "MoE"),
                "window_attn_skip_freq" => (Code::InvalidValue, "sliding window"),
                _ => (Code::InvalidValue, "linear attention"),
            };
            let zero = if key == "moe_layer_freq" { "dense" } else { "full attention" };
            f.diags.push(Diagnostic::new(
                code,
                format!("`model.{key}` lists {} layers but the model has num_layers = {num_layers}", items.len()),
                format!("give exactly {num_layers} entries of 0 ({zero}) or 1 ({one})"),
            ));
            return None;
        }
    }
    let (what, example) = if key == "moe_layer_freq" {
        ("1 (every layer MoE)", "[0,0,0,1,1,...]")
    } else if key == "window_attn_skip_freq" {
        ("2 (every 2nd layer full attention, the rest windowed)", "[1,0,1,0,...]")
    } else {
        ("4 (every 4th layer full attention, the rest linear)", "[1,1,1,0,...]")
    };
    f.diags.push(Diagnostic::new(
        Code::InvalidValue,
        format!("`model.{key}` must be an integer ≥ 1 or a list of 0/1 per layer"),
        format!("set `model.{key}` to {what} or e.g. {example}"),
    ));
    None
}
