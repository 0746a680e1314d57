//! The plan: model, cluster, training and parallelism, read from the plan file's JSON with
//! Megatron's names and defaults.

use crate::fields::{Fields, MAX_FIELD, nearest};
use crate::model::{ModelConfig, MoeLayerFreq};
use crate::presets::{self, GpuSpec};
use crate::{Code, Diagnostic, hf, settings};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Largest parallel size, GPU count per node, or node count accepted (2^24).
pub const MAX_PARALLEL: u64 = 1 << 24;
/// Most layers a model may have.
pub const MAX_LAYERS: u64 = 1 << 20;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cluster {
    pub gpu: String,
    pub gpus_per_node: u64,
    pub num_nodes: u64,
    pub nvlink_domain_size: u64,
    /// Host (CPU) memory of one node in GiB: the plan's value, else the GPU catalogue's system; None when unknown.
    #[serde(default)]
    pub host_memory_per_node_gb: Option<f64>,
}

pub use crate::settings::{Precision, Recompute, RecomputeMethod, Settings};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Training {
    pub seq_length: u64,
    pub micro_batch_size: u64,
    /// None: Megatron's default, micro_batch_size × data_parallel_size.
    pub global_batch_size: Option<u64>,
    /// Every other run setting, one row of [`crate::settings::SETTINGS`] each, written flat into `training`.
    #[serde(flatten)]
    pub settings: Settings,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Parallelism {
    pub tensor_model_parallel_size: u64,
    pub pipeline_model_parallel_size: u64,
    pub virtual_pipeline_model_parallel_size: Option<u64>,
    pub context_parallel_size: u64,
    pub expert_model_parallel_size: u64,
    pub expert_tensor_parallel_size: u64,
    /// Whether ETP was given, or defaulted to TP as megatron-core does.
    pub expert_tensor_parallel_size_defaulted: bool,
    pub sequence_parallel: bool,
    pub order: String,
    pub num_layers_in_first_pipeline_stage: Option<u64>,
    pub num_layers_in_last_pipeline_stage: Option<u64>,
    pub microbatch_group_size_per_vp_stage: Option<u64>,
    /// Megatron-LM `--overlap-p2p-communication`; None: not given (Megatron-LM off, Megatron Bridge turns it on
    /// when PP > 1 and VPP > 1).
    #[serde(default)]
    pub overlap_p2p_comm: Option<bool>,
}

impl Parallelism {
    pub fn tp(&self) -> u64 {
        self.tensor_model_parallel_size
    }
    pub fn pp(&self) -> u64 {
        self.pipeline_model_parallel_size
    }
    pub fn cp(&self) -> u64 {
        self.context_parallel_size
    }
    pub fn ep(&self) -> u64 {
        self.expert_model_parallel_size
    }
    pub fn etp(&self) -> u64 {
        self.expert_tensor_parallel_size
    }
    /// Virtual pipeline chunks per stage (1 without interleaving).
    pub fn vpp(&self) -> u64 {
        self.virtual_pipeline_model_parallel_size.unwrap_or(1).max(1)
    }
}

/// A fully resolved plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Preset key, or "custom".
    pub model_key: String,
    pub model_name: String,
    pub model: ModelConfig,
    pub cluster: Cluster,
    pub gpu: GpuSpec,
    pub training: Training,
    pub parallelism: Parallelism,
}

impl Plan {
    pub fn world_size(&self) -> u64 {
        self.cluster.gpus_per_node.saturating_mul(self.cluster.num_nodes)
    }
}

/// Input that cannot be planned at all (exit status 2): not JSON, no model, an unknown preset.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InputError {
    pub code: Code,
    pub message: String,
    pub fix: String,
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "error[{}]: {}\n  fix: {}", self.code, self.message, self.fix)
    }
}

impl InputError {
    pub fn new(code: Code, message: impl Into<String>, fix: impl Into<String>) -> Self {
        InputError { code, message: message.into(), fix: fix.into() }
    }
}

/// Parses plan-file text.
pub fn parse_plan_str(text: &str) -> Result<(Plan, Vec<Diagnostic>), InputError> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        InputError::new(Code::InvalidJson, format!("the plan is not valid JSON: {e}"), "fix the JSON syntax at the position shown")
    })?;
    parse_plan(&value)
}

/// Parses a plan-file JSON value, collecting diagnostics for every field that had to be corrected.
pub fn parse_plan(value: &Value) -> Result<(Plan, Vec<Diagnostic>), InputError> {
    if !value.is_object() {
        return Err(InputError::new(
            Code::InvalidPlan,
            "the plan must be a JSON object with model, cluster, training and parallelism",
            "write {\"model\": ..., \"cluster\": ..., \"training\": ..., \"parallelism\": ...}",
        ));
    }
    let mut diags = Vec::new();
    let mut top = Fields::new(Some(value), "", &mut diags);
    top.accept(&["model", "cluster", "training", "parallelism", "$schema", "comment"]);
    top.finish();

    let (model_key, model_name, model) = parse_model(value.get("model"), &mut diags)?;
    training_keys_under_model(value.get("model"), &mut diags);
    let (cluster, gpu) = parse_cluster(value.get("cluster"), &mut diags)?;
    let training = parse_training(value.get("training"), &mut diags);
    let parallelism = parse_parallelism(value.get("parallelism"), &mut diags);
    Ok((Plan { model_key, model_name, model, cluster, gpu, training, parallelism }, diags))
}

fn parse_model(value: Option<&Value>, diags: &mut Vec<Diagnostic>) -> Result<(String, String, ModelConfig), InputError> {
    match value {
        None | Some(Value::Null) => Err(InputError::new(
            Code::MissingModel,
            "the plan has no `model`",
            "set `model` to a preset key (see `meshplan presets`), Megatron TransformerConfig fields, or {\"hf_config\": {...}}",
        )),
        Some(Value::String(key)) => {
            let preset = find_model_preset(key)?;
            let mut preset_diags = Vec::new();
            let config = model_from_fields(Some(&preset.config), None, "model", &mut preset_diags);
            Ok((preset.key.clone(), preset.name.clone(), config))
        }
        Some(Value::Object(map)) => {
            if let Some(hf) = map.get("hf_config") {
                let mut f = Fields::new(value, "model", diags);
                f.accept(&["hf_config", "name"]);
                let name = f.string("name");
                f.finish();
                let config = hf::from_hf_config(hf, diags)?;
                let name = name.unwrap_or_else(|| hf::hf_model_name(hf).unwrap_or_else(|| "custom (Hugging Face config)".into()));
                return Ok(("custom".into(), name, config));
            }
            let base = match map.get("preset") {
                Some(Value::String(k)) => Some(find_model_preset(k)?),
                Some(other) => {
                    return Err(InputError::new(
                        Code::InvalidValue,
                        format!("`model.preset` must be a preset key string, found {other}"),
                        "set `model.preset` to a key from `meshplan presets`",
                    ));
                }
                None => None,
            };
            let base_config = base.map(|p| {
                let mut ignored = Vec::new();
                model_from_fields(Some(&p.config), None, "model", &mut ignored)
            });
            let config = model_from_fields(value, base_config.as_ref(), "model", diags);
            let name = map.get("name").and_then(Value::as_str).map(str::to_string);
            // Fields that only restate the preset's own values (as the plan export writes them) keep the preset.
            let unchanged = base_config.as_ref() == Some(&config);
            let (key, default_name) = match base {
                Some(p) if unchanged => (p.key.clone(), p.name.clone()),
                Some(p) => ("custom".into(), format!("{} (modified)", p.name)),
                None => ("custom".into(), "custom model".into()),
            };
            Ok((key, name.unwrap_or(default_name), config))
        }
        Some(other) => Err(InputError::new(
            Code::InvalidModel,
            format!("`model` must be a preset key or an object, found {other}"),
            "set `model` to a preset key such as \"llama-3.1-8b\", or an object of Megatron TransformerConfig fields",
        )),
    }
}

fn find_model_preset(key: &str) -> Result<&'static presets::ModelPreset, InputError> {
    presets::model(key).ok_or_else(|| {
        let keys: Vec<&str> = presets::models().iter().map(|m| m.key.as_str()).collect();
        let fix = match nearest(key, &keys) {
            Some(n) => format!("did you mean \"{n}\"? Known presets: {}", keys.join(", ")),
            None => format!("use one of: {}", keys.join(", ")),
        };
        InputError::new(Code::UnknownModelPreset, format!("there is no model preset {:?}", key.chars().take(60).collect::<String>()), fix)
    })
}

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
        Some(_) => f.opt_uint("num_moe_experts", 0, 1 << 20).filter(|&e| e > 0),
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

fn read_moe_layer_freq(f: &mut Fields, num_layers: u64) -> Option<MoeLayerFreq> {
    let v = f.raw("moe_layer_freq")?;
    if let Some(n) = crate::fields::as_uint(v) {
        if n >= 1 && n <= MAX_LAYERS {
            return Some(MoeLayerFreq::Every(n));
        }
    }
    if let Value::Array(items) = v {
        let pattern: Option<Vec<u8>> = items.iter().map(|x| crate::fields::as_uint(x).filter(|&b| b <= 1).map(|b| b as u8)).collect();
        if let Some(p) = pattern {
            if p.len() as u64 == num_layers {
                return Some(MoeLayerFreq::Pattern(p));
            }
            f.diags.push(Diagnostic::new(
                Code::MoeLayerFreqLength,
                format!("`model.moe_layer_freq` lists {} layers but the model has num_layers = {num_layers}", p.len()),
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

fn parse_cluster(value: Option<&Value>, diags: &mut Vec<Diagnostic>) -> Result<(Cluster, GpuSpec), InputError> {
    let mut f = Fields::new(value, "cluster", diags);
    if !f.is_present() {
        return Err(InputError::new(
            Code::MissingCluster,
            "the plan has no `cluster`",
            "add \"cluster\": {\"gpu\": \"h100-sxm-80gb\", \"gpus_per_node\": 8, \"num_nodes\": 1}",
        ));
    }
    let key = f.string("gpu").unwrap_or_else(|| "h100-sxm-80gb".into());
    let gpu = presets::gpu(&key).cloned().ok_or_else(|| {
        let keys: Vec<&str> = presets::gpus().iter().map(|g| g.key.as_str()).collect();
        let fix = match nearest(&key, &keys) {
            Some(n) => format!("did you mean \"{n}\"? Known GPUs: {}", keys.join(", ")),
            None => format!("use one of: {}", keys.join(", ")),
        };
        InputError::new(Code::UnknownGpu, format!("there is no GPU preset {:?}", key.chars().take(60).collect::<String>()), fix)
    })?;
    let gpus_per_node = f.uint("gpus_per_node", gpu.gpus_per_node, 1, MAX_PARALLEL);
    let total = f.opt_uint("num_gpus", 1, MAX_PARALLEL * MAX_PARALLEL);
    let num_nodes = match (f.opt_uint("num_nodes", 1, MAX_PARALLEL), total) {
        (Some(n), _) => n,
        (None, Some(t)) => t.div_ceil(gpus_per_node),
        (None, None) => 1,
    };
    // Rack-scale systems (NVL72) span nodes; on HGX boards the domain is at most the node.
    let default_domain =
        if gpu.nvlink_domain_size > gpu.gpus_per_node { gpu.nvlink_domain_size } else { gpu.nvlink_domain_size.min(gpus_per_node) };
    let nvlink_domain_size = f.uint("nvlink_domain_size", default_domain.max(1), 1, MAX_PARALLEL * MAX_PARALLEL);
    let host_memory_per_node_gb = settings::read_value::<f64>(&mut f, &settings::HOST_MEMORY).or(gpu.host_memory_per_node_gb);
    f.finish();
    Ok((Cluster { gpu: gpu.key.clone(), gpus_per_node, num_nodes, nvlink_domain_size, host_memory_per_node_gb }, gpu))
}

fn parse_training(value: Option<&Value>, diags: &mut Vec<Diagnostic>) -> Training {
    let mut f = Fields::new(value, "training", diags);
    let seq_length = f.uint("seq_length", 4096, 1, MAX_FIELD);
    let micro_batch_size = f.uint("micro_batch_size", 1, 1, MAX_FIELD);
    let global_batch_size = f.opt_uint("global_batch_size", 1, MAX_FIELD);
    let settings = Settings::read(&mut f);
    f.finish();
    Training { seq_length, micro_batch_size, global_batch_size, settings }
}

/// A run setting written under `model` (where Megatron Bridge keeps many of them) is read from `training`: its
/// unknown-field warning says where it belongs.
fn training_keys_under_model(model: Option<&Value>, diags: &mut [Diagnostic]) {
    let Some(map) = model.and_then(Value::as_object) else { return };
    for key in map.keys().filter(|k| settings::SETTINGS.iter().any(|r| r.key == k.as_str())) {
        let prefix = format!("`model.{key}`");
        if let Some(d) = diags.iter_mut().find(|d| d.code == Code::UnknownField && d.message.starts_with(&prefix)) {
            d.fix = format!(
                "did you mean `training.{key}`? meshplan reads run settings from the plan's `training` section (Megatron Bridge keeps some under cfg.model): move it there"
            );
        }
    }
}

/// The default rank order of megatron/core/parallel_state.py `initialize_model_parallel`.
pub const DEFAULT_ORDER: &str = "tp-cp-ep-dp-pp";

fn parse_parallelism(value: Option<&Value>, diags: &mut Vec<Diagnostic>) -> Parallelism {
    let mut f = Fields::new(value, "parallelism", diags);
    let tp = f.uint("tensor_model_parallel_size", 1, 1, MAX_PARALLEL);
    let pp = f.uint("pipeline_model_parallel_size", 1, 1, MAX_PARALLEL);
    let vpp = f.opt_uint("virtual_pipeline_model_parallel_size", 1, MAX_PARALLEL);
    let cp = f.uint("context_parallel_size", 1, 1, MAX_PARALLEL);
    let ep = f.uint("expert_model_parallel_size", 1, 1, MAX_PARALLEL);
    let etp_given = f.opt_uint("expert_tensor_parallel_size", 1, MAX_PARALLEL);
    let sp = f.boolean("sequence_parallel", false);
    let order = f.string("order").unwrap_or_else(|| DEFAULT_ORDER.to_string());
    let first = f.opt_uint("num_layers_in_first_pipeline_stage", 0, MAX_LAYERS);
    let last = f.opt_uint("num_layers_in_last_pipeline_stage", 0, MAX_LAYERS);
    let group = f.opt_uint("microbatch_group_size_per_vp_stage", 1, MAX_PARALLEL);
    let overlap_p2p_comm = f.opt_bool("overlap_p2p_comm");
    f.finish();
    Parallelism {
        tensor_model_parallel_size: tp,
        pipeline_model_parallel_size: pp,
        virtual_pipeline_model_parallel_size: vpp,
        context_parallel_size: cp,
        expert_model_parallel_size: ep,
        // megatron-core: expert_tensor_parallel_size defaults to tensor_model_parallel_size.
        expert_tensor_parallel_size: etp_given.unwrap_or(tp),
        expert_tensor_parallel_size_defaulted: etp_given.is_none(),
        sequence_parallel: sp,
        order,
        num_layers_in_first_pipeline_stage: first,
        num_layers_in_last_pipeline_stage: last,
        microbatch_group_size_per_vp_stage: group,
        overlap_p2p_comm,
    }
}
