//! The plan: model, cluster, training and parallelism, read from the plan file's JSON with
//! Megatron's names and defaults.

use crate::fields::{Fields, nearest, short, too_long};
use crate::limits::{MAX_FIELD, MAX_PLAN_BYTES};
use crate::model::ModelConfig;
use crate::pipeline::layout;
use crate::presets::{self, GpuSpec};
use crate::{Code, Diagnostic, hf, recipes, settings, tuned};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::diag::InputError;
pub use crate::limits::{MAX_LAYERS, MAX_PARALLEL};
pub use crate::model_fields::model_from_fields;

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

pub use crate::parallelism::Parallelism;

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
    /// The Megatron Bridge recipe the plan started from (`"recipe"` at the plan's top level; see [`crate::recipes`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipe: Option<String>,
}

impl Plan {
    pub fn world_size(&self) -> u64 {
        self.cluster.gpus_per_node.saturating_mul(self.cluster.num_nodes)
    }

    /// The value of the cluster's, training's or parallelism's field `key` as serde writes the plan (None: no such
    /// field), read from the typed plan: serialising the whole plan to look one up linked serde's `Plan` serializer
    /// (14 KB raw) into the page's wasm. `tests/plan_field.rs` checks every field against serde's.
    pub fn field(&self, section: &str, key: &str) -> Option<Value> {
        let (c, t) = (&self.cluster, &self.training);
        match (section, key) {
            ("cluster", "gpu") => Some(Value::from(c.gpu.as_str())),
            ("cluster", "gpus_per_node") => Some(Value::from(c.gpus_per_node)),
            ("cluster", "num_nodes") => Some(Value::from(c.num_nodes)),
            ("cluster", "nvlink_domain_size") => Some(Value::from(c.nvlink_domain_size)),
            ("cluster", "host_memory_per_node_gb") => Some(Value::from(c.host_memory_per_node_gb)),
            ("training", "seq_length") => Some(Value::from(t.seq_length)),
            ("training", "micro_batch_size") => Some(Value::from(t.micro_batch_size)),
            ("training", "global_batch_size") => Some(Value::from(t.global_batch_size)),
            ("training", key) => t.settings.get(key),
            // serde leaves a layout the plan does not give out of the section (`skip_serializing_if`).
            ("parallelism", "pipeline_model_parallel_layout") if self.parallelism.pipeline_model_parallel_layout.is_none() => None,
            ("parallelism", key) => self.parallelism.get(key),
            _ => None,
        }
    }
}

/// Reads plan-file text as JSON: at most [`MAX_PLAN_BYTES`], and nested at most 128 deep (serde_json's recursion
/// limit), so no text costs more than a bounded parse.
pub fn read_json(text: &str) -> Result<Value, InputError> {
    if text.len() > MAX_PLAN_BYTES {
        return Err(InputError::new(
            Code::PlanTooLarge,
            format!("the plan is {} bytes; the largest plan meshplan reads is {MAX_PLAN_BYTES} bytes (1 MiB)", text.len()),
            "remove what the plan does not need (a plan file is a few KB; a Hugging Face config.json too)",
        ));
    }
    serde_json::from_str(text).or_else(|e| {
        // Python's json module writes Infinity, -Infinity and NaN (Nemotron-H configs: "time_step_limit": [0.0,
        // Infinity]); a pasted config.json with them is read with each as null. Anything else stays an error.
        non_finite_as_null(text).and_then(|t| serde_json::from_str(&t).ok()).ok_or_else(|| {
            InputError::new(Code::InvalidJson, format!("the plan is not valid JSON: {e}"), "fix the JSON syntax at the position shown")
        })
    })
}

/// `text` with every bare `Infinity`, `-Infinity` and `NaN` outside strings replaced by `null`, or `None` when it has
/// none. One pass over text already bounded by [`MAX_PLAN_BYTES`].
fn non_finite_as_null(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped, mut replaced) = (false, false, false);
    let mut rest = text;
    while let Some(ch) = rest.chars().next() {
        if in_string {
            match ch {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
        } else if let Some(token) = ["-Infinity", "Infinity", "NaN"].into_iter().find(|t| rest.starts_with(t)) {
            out.push_str("null");
            rest = &rest[token.len()..];
            replaced = true;
            continue;
        } else if ch == '"' {
            in_string = true;
        }
        out.push(ch);
        rest = &rest[ch.len_utf8()..];
    }
    replaced.then_some(out)
}

/// Parses plan-file text.
pub fn parse_plan_str(text: &str) -> Result<(Plan, Vec<Diagnostic>), InputError> {
    parse_plan(&read_json(text)?)
}

/// Parses a plan-file JSON value, collecting diagnostics for every field that had to be corrected.
pub fn parse_plan(value: &Value) -> Result<(Plan, Vec<Diagnostic>), InputError> {
    parse_plan_excluding(value, &[]).map(|(p, d, _)| (p, d))
}

/// A parsed plan, its findings, and what it left unstated (`tuned::assume`, each value as planned).
pub type Parsed = (Plan, Vec<Diagnostic>, Vec<tuned::Assumption>);

/// As [`parse_plan`], assuming none of the `excluded` keys from a perf recipe (`tuned::assume`): the report re-reads a
/// plan without the assumptions Megatron rejects for its layout.
pub fn parse_plan_excluding(value: &Value, excluded: &[String]) -> Result<Parsed, InputError> {
    if !value.is_object() {
        return Err(InputError::new(
            Code::InvalidPlan,
            "the plan must be a JSON object with model, cluster, training and parallelism",
            "write {\"model\": ..., \"cluster\": ..., \"training\": ..., \"parallelism\": ...}",
        ));
    }
    let mut diags = Vec::new();
    let (value, recipe) = recipes::resolve(value, &mut diags)?;
    let (value, mut assumptions) = tuned::assume(value.as_ref(), excluded);
    let value = value.as_ref();
    let mut top = Fields::new(Some(value), "", &mut diags);
    top.accept(&["model", "cluster", "training", "parallelism", "recipe", "$schema", "comment"]);
    top.choice(tuned::DEFAULTS_KEY, &tuned::DEFAULTS_VALUES, "tuned");
    top.finish();

    let (model_key, model_name, model) = parse_model(value.get("model"), &mut diags)?;
    training_keys_under_model(value.get("model"), &mut diags);
    let (cluster, gpu) = parse_cluster(value.get("cluster"), &mut diags)?;
    let training = parse_training(value.get("training"), &mut diags);
    let mut parallelism = parse_parallelism(value.get("parallelism"), &mut diags);
    bound_pipeline(&model, &mut parallelism, &mut diags);
    let recipe = recipe.map(|r| r.name.clone());
    // An unstated setting no perf recipe spoke for keeps its default: the value the run uses (a null default resolved
    // from the precision's mixed-precision recipe).
    for a in assumptions.iter_mut().filter(|a| a.value.is_null()) {
        a.value = training.settings.resolved(&a.key, &gpu).unwrap_or_default();
    }
    // The interleaved schedule's p2p overlap, which the step time reads, as the launchers run it when unstated.
    if parallelism.overlap_p2p_comm.is_none() && parallelism.p2p_overlapped() {
        let key = tuned::OVERLAP_P2P_KEY.to_string();
        assumptions.push(tuned::Assumption { key, value: Value::Bool(true), source: tuned::LAUNCHER_SOURCE.to_string() });
    }
    Ok((Plan { model_key, model_name, model, cluster, gpu, training, parallelism, recipe }, diags, assumptions))
}

/// Pipeline stages beyond the layer count: in every split Megatron accepts without a layout each stage builds at least
/// one layer, so PP ≤ num_layers. A larger PP is an error here, before any per-stage work, and the default PP = 1 is
/// used instead. A `pipeline_model_parallel_layout` or a hybrid pattern's `|` segments may leave stages empty: their
/// stage count (bounded by [`crate::limits::MAX_PIPELINE_STAGES`] before anything is built) then bounds PP, and sets
/// the VPP Megatron derives from it when the plan leaves VPP unset. (Virtual chunks need no bound of their own: [`crate::pipeline::split_layers`]
/// builds chunks only for stages with layers, each at least one layer; a layout's chunks are its stages.)
pub fn bound_pipeline(model: &ModelConfig, par: &mut Parallelism, diags: &mut Vec<Diagnostic>) {
    let num_layers = model.num_layers;
    let pp = par.pipeline_model_parallel_size;
    // A hybrid pattern's `|` segments are its stages (bounded by the pattern's length, MAX_PATTERN_CHARS); else a
    // layout's stages.
    let explicit_stages = match &model.hybrid_layer_pattern {
        Some(h) if h.segments().len() > 1 => Some(h.segments().len() as u64),
        Some(_) => None,
        None => par.pipeline_model_parallel_layout.as_ref().and_then(|spec| layout::stage_count(spec, num_layers, model.mtp_num_layers).ok()),
    };
    if let Some(stages) = explicit_stages.filter(|&stages| stages % pp == 0 && stages <= crate::limits::MAX_PIPELINE_STAGES) {
        // transformer_config.py __post_init__ sets VPP from a layout when it is None and the layout gives > 1;
        // megatron/training/arguments.py does the same for a hybrid pattern's segments.
        if par.virtual_pipeline_model_parallel_size.is_none() && stages / pp > 1 {
            par.virtual_pipeline_model_parallel_size = Some(stages / pp);
        }
        return;
    }
    if pp > num_layers {
        diags.push(Diagnostic::new(
            Code::PipelineExceedsLayers,
            format!(
                "pipeline_model_parallel_size = {pp} is more than num_layers = {num_layers}: every pipeline stage builds at least one layer, so the largest accepted is {num_layers} (using 1 meanwhile)"
            ),
            format!("set pipeline_model_parallel_size to a divisor of {num_layers}, at most {num_layers}"),
        ));
        par.pipeline_model_parallel_size = 1;
    }
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
                let config = hf::read(hf, diags)?;
                let name = name.unwrap_or_else(|| hf::hf_model_name(hf).unwrap_or_else(|| "custom (Hugging Face config)".into()));
                return Ok(("custom".into(), name, config));
            }
            let base = match map.get("preset") {
                Some(Value::String(k)) => Some(find_model_preset(k)?),
                Some(other) => {
                    return Err(InputError::new(
                        Code::InvalidValue,
                        format!("`model.preset` must be a preset key string, found {}", short(other)),
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
            let name = map.get("name").and_then(Value::as_str).filter(|n| match too_long("model.name", n) {
                Some(d) => {
                    diags.push(d);
                    false
                }
                None => true,
            });
            let name = name.map(str::to_string);
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
            format!("`model` must be a preset key or an object, found {}", short(other)),
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

fn parse_cluster(value: Option<&Value>, diags: &mut Vec<Diagnostic>) -> Result<(Cluster, GpuSpec), InputError> {
    let example = format!("\"cluster\": {{\"gpu\": \"{}\", \"gpus_per_node\": 8, \"num_nodes\": 1}}", presets::default_gpu_key());
    match value {
        None | Some(Value::Null) => return Err(InputError::new(Code::MissingCluster, "the plan has no `cluster`", format!("add {example}"))),
        // Without its GPU and counts there is nothing to plan on: an input error, not a default cluster.
        Some(v) if !v.is_object() => {
            let found = serde_json::to_string(v).unwrap_or_default().chars().take(40).collect::<String>();
            return Err(InputError::new(
                Code::MissingCluster,
                format!("`cluster` must be a JSON object with gpu, gpus_per_node and num_nodes; found {found}"),
                format!("write {example}"),
            ));
        }
        Some(_) => {}
    }
    let mut f = Fields::new(value, "cluster", diags);
    let key = f.string("gpu").unwrap_or_else(|| presets::default_gpu_key().into());
    // The catalogue's key, else the one entry a name people write for the GPU means (a device name, a system's), said.
    let mut read_as = None;
    let exact = presets::gpu(&key);
    let named = if exact.is_some() { Vec::new() } else { presets::gpus_named(&key) };
    let gpu = match (exact, named.as_slice()) {
        (Some(g), _) => g.clone(),
        (None, [g]) => {
            read_as = Some(Diagnostic::new(
                Code::GpuNameRead,
                format!("cluster.gpu {:?} is read as the catalogue's {} ({})", key.chars().take(60).collect::<String>(), g.key, g.name),
                format!("write \"gpu\": \"{}\" to say so", g.key),
            ));
            (*g).clone()
        }
        (None, several) => {
            let keys: Vec<&str> = presets::gpus().iter().map(|g| g.key.as_str()).collect();
            let fix = match (several, nearest(&key, &keys)) {
                ([], Some(n)) => format!("did you mean \"{n}\"? Known GPUs: {}", keys.join(", ")),
                ([], None) => format!("use one of: {}", keys.join(", ")),
                (many, _) => format!("name one of {} (the name fits each); known GPUs: {}", many.iter().map(|g| g.key.as_str()).collect::<Vec<_>>().join(", "), keys.join(", ")),
            };
            return Err(InputError::new(Code::UnknownGpu, format!("there is no GPU preset {:?}", key.chars().take(60).collect::<String>()), fix));
        }
    };
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
    diags.extend(read_as);
    Ok((Cluster { gpu: gpu.key.clone(), gpus_per_node, num_nodes, nvlink_domain_size, host_memory_per_node_gb }, gpu))
}

/// The sequence length a plan that states none is planned at.
pub const DEFAULT_SEQ_LENGTH: u64 = 4096;

fn parse_training(value: Option<&Value>, diags: &mut Vec<Diagnostic>) -> Training {
    let mut f = Fields::new(value, "training", diags);
    let seq_length = f.uint("seq_length", DEFAULT_SEQ_LENGTH, 1, MAX_FIELD);
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
pub use crate::layout::DEFAULT_ORDER;

/// The `parallelism` section, read row by row of [`crate::parallelism::PARALLELISM`].
fn parse_parallelism(value: Option<&Value>, diags: &mut Vec<Diagnostic>) -> Parallelism {
    let mut f = Fields::new(value, "parallelism", diags);
    let par = Parallelism::read(&mut f);
    f.finish();
    par
}
