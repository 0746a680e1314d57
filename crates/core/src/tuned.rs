//! Tuned defaults: what a plan leaves unstated among the speed and memory settings is assumed from Megatron Bridge's
//! performance recipe for the nearest model × GPU × precision (`recipes`, kind `perf`), and every assumption is listed
//! with its source. Where no recipe speaks, the setting keeps Megatron-Core's default (the settings row's), listed too.
//!
//! They are the default: a plan without `"defaults"` (or with `"defaults": "tuned"`) gets them. `"defaults":
//! "megatron-core"` is the one switch for Megatron-Core's plain defaults: nothing assumed, nothing listed. A plan
//! imported from a launch artefact carries that switch (`imports`): it runs its own launcher's defaults, which for
//! these settings are Megatron-Core's, not Bridge's perf recipes. A plan that names a `recipe` takes that recipe's
//! values and assumes nothing more: plain defaults unless it asks for `"tuned"`, which lists what the recipe leaves
//! unstated at Megatron-Core's default. The plan's
//! explicit keys always win: only keys absent from its `training` are filled, before the plan is read (as
//! `recipes::resolve` lays a plan over its recipe).
//!
//! The nearest recipe: the same dense/MoE kind, GPU generation and use of Megatron-FSDP are required (a Hopper recipe says nothing about
//! Blackwell's CUDA graphs or dispatchers); then the same model preset, else the same family, else another family (a
//! model Bridge has no perf recipe for: Mixtral, GPT-3, Nemotron-4, a custom or Hugging Face model); the same GPU; the
//! same precision and FP8 recipe; the nearest GPU count; the name, for a deterministic pick. Recompute and offload
//! settings are taken only from a recipe of the same model (they answer that model's memory), CUDA graphs only from
//! one of the same family (a graph's scope names the model's own layers: attn, mamba, moe_router), the mixed-precision
//! fields only from one of the same precision (the recipe file lists only what differs from that precision's
//! mixed-precision recipe).
//!
//! It imports `fields`, `hf` (a config.json model's kind), `presets` and `recipes`; `plan` builds on it.

use crate::{presets, recipes};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::borrow::Cow;

/// One value meshplan assumed: the plan key (in `training`, or [`OVERLAP_P2P_KEY`]'s path), the value, and where it
/// comes from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Assumption {
    pub key: String,
    pub value: Value,
    pub source: String,
}

/// The plan's top-level switch between tuned defaults (`"tuned"`, the default) and Megatron-Core's plain defaults
/// (`"megatron-core"`).
pub const DEFAULTS_KEY: &str = "defaults";
/// The values [`DEFAULTS_KEY`] takes.
pub const DEFAULTS_VALUES: [&str; 2] = ["tuned", "megatron-core"];
/// The value that asks for Megatron-Core's plain defaults.
pub const PLAIN: &str = "megatron-core";

/// The settings rows a tuned default may fill: what Bridge's performance recipes set for speed and fit. Not the
/// optimizer (what is trained) nor `moe_router_force_load_balancing` (a benchmark's forced routing balance, not a
/// setting a real run would want assumed); the optimizer state's precision and Megatron-FSDP are listed but never taken
/// from a recipe (`NOT_FROM_RECIPE`).
// The last eleven (recompute, activation offloading, the layers kept in BF16) are `SAME_MODEL`: keep them last.
pub const TUNED_KEYS: [&str; 30] = [
    "cuda_graph_impl",
    "cuda_graph_scope",
    "moe_token_dispatcher_type",
    "moe_flex_dispatcher_backend",
    "overlap_moe_expert_parallel_comm",
    "tp_comm_overlap",
    "overlap_grad_reduce",
    "overlap_param_gather",
    "use_distributed_optimizer",
    "use_precision_aware_optimizer",
    "main_params_dtype",
    "main_grads_dtype",
    "exp_avg_dtype",
    "exp_avg_sq_dtype",
    "grad_reduce_in_fp32",
    "fp8_param_gather",
    "fp4_param_gather",
    "reuse_grad_buf_for_mxfp8_param_ag",
    "use_megatron_fsdp",
    "recompute_granularity",
    "recompute_method",
    "recompute_num_layers",
    "recompute_modules",
    "fine_grained_activation_offloading",
    "offload_modules",
    "cpu_offloading",
    "cpu_offloading_num_layers",
    "first_last_layers_bf16",
    "num_layers_at_start_in_bf16",
    "num_layers_at_end_in_bf16",
];

/// Keys listed but never taken from a perf recipe: the optimizer state's precision (Megatron-Core's precision-aware
/// optimizer, bf16 moments). Like the optimizer itself it changes the numerics of what is trained, not only its speed,
/// so a run states it; assumed from a recipe it made Megatron-LM runs that kept fp32 state 10 GB lighter than they ran
/// (measured_memory.json m26-015..019: −17% against −2% at the default). They stay at Megatron-Core's default and an
/// out-of-memory verdict that bf16 moments would flip says so (`report::verdict`).
/// Megatron-FSDP is listed on the same terms: another data-parallel scheme (its own checkpoint format and wrapper), which
/// a run states; an out-of-memory verdict it would flip says so.
const NOT_FROM_RECIPE: [&str; 6] =
    ["use_precision_aware_optimizer", "main_params_dtype", "main_grads_dtype", "exp_avg_dtype", "exp_avg_sq_dtype", "use_megatron_fsdp"];

/// Keys of the MoE token dispatcher.
const MOE_KEYS: [&str; 3] = ["moe_token_dispatcher_type", "moe_flex_dispatcher_backend", "overlap_moe_expert_parallel_comm"];

/// Keys taken only from a recipe of the plan's own model: they answer that model's memory (recompute and both kinds of
/// activation offloading) and its layers (the first / last layers kept in BF16 under FP8 / FP4: Nemotron 3 Super's
/// NVFP4 recipe keeps its last 14), the last eleven of `TUNED_KEYS`.
const SAME_MODEL: &[&str] = TUNED_KEYS.split_at(TUNED_KEYS.len() - 11).1;
/// Keys taken only from a recipe of the plan's precision: the recipe file states its mixed-precision fields relative
/// to that precision's mixed-precision recipe.
const SAME_PRECISION: [&str; 12] = [
    "first_last_layers_bf16",
    "num_layers_at_start_in_bf16",
    "num_layers_at_end_in_bf16",
    "grad_reduce_in_fp32",
    "fp8_param_gather",
    "fp4_param_gather",
    "reuse_grad_buf_for_mxfp8_param_ag",
    "use_precision_aware_optimizer",
    "main_params_dtype",
    "main_grads_dtype",
    "exp_avg_dtype",
    "exp_avg_sq_dtype",
];

/// Keys taken only from a recipe of the plan's own family: a CUDA graph captures the model's own layers, and its scope
/// names them (perf recipes' `cuda_graph_scope`: "attn", "mamba", "moe_router", "moe_preprocess"), so another family's
/// graph says nothing about this model's.
const SAME_FAMILY: [&str; 2] = ["cuda_graph_impl", "cuda_graph_scope"];

/// What the nearest recipe is chosen by, read from the plan's JSON. `model` and `family` are None for a model that is
/// no catalogue preset (its own TransformerConfig fields or a Hugging Face config).
struct Wanted<'a> {
    model: Option<&'a str>,
    family: Option<&'a str>,
    moe: bool,
    gpu: &'a presets::GpuSpec,
    precision: &'a str,
    fp8_recipe: Option<String>,
    gpus: Option<u64>,
    fsdp: bool,
}

/// Whether a plan plans Megatron-Core's plain defaults: it asks for `"defaults": "megatron-core"`, or it names a
/// `recipe` and says nothing (a recipe is a Bridge launch: what it leaves out takes Bridge's ConfigContainer defaults,
/// Megatron-Core's for these settings, as an imported launch does). Otherwise — no key, `"tuned"`, or any other value,
/// which the plan reader reports as `invalid-value` — it gets tuned defaults. Compared as the reader compares a choice
/// (`fields::Fields::choice`): trimmed, case-insensitively.
pub fn plain(plan: &Value) -> bool {
    match plan.get(DEFAULTS_KEY) {
        Some(v) => v.as_str().is_some_and(|v| v.trim().eq_ignore_ascii_case(PLAIN)),
        None => plan.get("recipe").is_some_and(|r| !r.is_null()),
    }
}

/// What an assumption says when no perf recipe speaks: the setting keeps its default (filled in by `plan` from the
/// settings row, once the plan is read).
pub const DEFAULT_SOURCE: &str = "Megatron-Core default";

/// What it says for the settings whose default is not Megatron-Core's but the precision's Bridge mixed-precision
/// recipe's (`settings::Settings::low_precision`): fp32 gradient reduction under bf16, fp8, fp4 (Megatron-LM forces it
/// too with --bf16), FP8/FP4 weight gathering and the MXFP8 grad-buffer reuse. "Megatron-Core default" would misname
/// them (DistributedDataParallelConfig.grad_reduce_in_fp32 is False there).
pub const MIXED_PRECISION_SOURCE: &str = "Bridge mixed-precision recipe default";

/// What it says for a parallelism setting whose Megatron-Core default (a dataclass's) no launcher runs: both
/// Megatron-LM and Megatron Bridge turn `overlap_p2p_comm` on for the interleaved schedule (Megatron-LM arguments.py:3118
/// `--no-overlap-p2p-communication`, a store_false; Bridge training/comm_overlap.py:454-457), where
/// ModelParallelConfig.overlap_p2p_comm is False.
pub const LAUNCHER_SOURCE: &str = "Megatron-LM and Megatron Bridge default with virtual pipeline stages";

/// The plan path of the one parallelism setting assumed ([`LAUNCHER_SOURCE`]): an assumption's key is a `training`
/// key, or this path.
pub const OVERLAP_P2P_KEY: &str = "parallelism.overlap_p2p_comm";

/// The keys [`MIXED_PRECISION_SOURCE`] names.
const RESOLVED_BY_PRECISION: [&str; 7] = [
    "grad_reduce_in_fp32",
    "fp8_param_gather",
    "fp4_param_gather",
    "reuse_grad_buf_for_mxfp8_param_ag",
    "first_last_layers_bf16",
    "num_layers_at_start_in_bf16",
    "num_layers_at_end_in_bf16",
];

/// What a default's source adds when no perf recipe could be consulted because this build of the core has none and
/// none were installed (the page's modules fetch them after their first render, `recipes::install`; until they are
/// here, or when the file cannot be had, a plan is planned without tuned defaults, and says so).
pub const RECIPES_ABSENT: &str = "Megatron Bridge's perf recipes are not loaded, so no tuned default was looked up";

/// Assumptions grouped by their source, in the order each source first appears (the CLI's "Assumed" table, an
/// import's note).
pub fn by_source(assumptions: &[Assumption]) -> Vec<(&str, Vec<&Assumption>)> {
    let mut groups: Vec<(&str, Vec<&Assumption>)> = Vec::new();
    for a in assumptions {
        match groups.iter_mut().find(|(s, _)| *s == a.source) {
            Some((_, group)) => group.push(a),
            None => groups.push((&a.source, vec![a])),
        }
    }
    groups
}

/// Whether an assumption's source is a default rather than a perf recipe.
pub fn is_default_source(source: &str) -> bool {
    [DEFAULT_SOURCE, MIXED_PRECISION_SOURCE, LAUNCHER_SOURCE].iter().any(|d| source.strip_prefix(d).is_some_and(|rest| rest.is_empty() || rest.starts_with(" — ")))
}

/// Whether `key` does nothing under what the plan states, so a recipe's value for it is not assumed (it stays listed at
/// Megatron-Core's default): recompute modules without selective recompute, a recompute method or layer count
/// without full recompute (transformer_config.py reads each only under its granularity), a flex backend under another
/// dispatcher, offload modules without fine-grained activation offloading, offloaded layers without cpu_offloading,
/// BF16 layer counts without first_last_layers_bf16.
fn moot(key: &str, stated: Option<&Map<String, Value>>) -> bool {
    let said = |k: &str| stated.and_then(|t| t.get(k)).and_then(Value::as_str).map(|v| v.trim().to_ascii_lowercase());
    let granularity = said("recompute_granularity");
    match key {
        "recompute_modules" => granularity.as_deref().is_some_and(|g| g != "selective"),
        "recompute_method" | "recompute_num_layers" => granularity.as_deref().is_some_and(|g| g != "full"),
        "moe_flex_dispatcher_backend" => said("moe_token_dispatcher_type").as_deref().is_some_and(|d| d != "flex"),
        "offload_modules" => stated.and_then(|t| t.get("fine_grained_activation_offloading")).and_then(Value::as_bool) == Some(false),
        "cpu_offloading_num_layers" => stated.and_then(|t| t.get("cpu_offloading")).and_then(Value::as_bool) == Some(false),
        // fp8_utils.py is_first_last_bf16_layer reads the counts only under first_last_layers_bf16.
        "num_layers_at_start_in_bf16" | "num_layers_at_end_in_bf16" => {
            stated.and_then(|t| t.get("first_last_layers_bf16")).and_then(Value::as_bool) == Some(false)
        }
        _ => false,
    }
}

/// The plan with its unstated speed and memory settings filled from the nearest perf recipe, and every unstated one
/// listed: the recipe's value, or (value null until `plan` resolves it) the default. No recipe is consulted for a plan
/// naming a `recipe`, one asking for plain defaults, one whose model is not a preset, nor for the keys in `excluded`
/// (those Megatron rejects for this plan's layout; `report` finds them).
pub fn assume<'v>(plan: &'v Value, excluded: &[String]) -> (Cow<'v, Value>, Vec<Assumption>) {
    let named = plan.get("recipe").is_some_and(|r| !r.is_null());
    let wanted = wanted(plan);
    let recipe = if plain(plan) || named { None } else { wanted.as_ref().and_then(nearest) };
    // A tuned default would have been looked up, but there is nothing to look in.
    let absent = !plain(plan) && !named && wanted.is_some() && !recipes::available();
    let stated = plan.get("training").and_then(Value::as_object);
    let mut filled = Map::new();
    let mut out = Vec::new();
    let dense = wanted.as_ref().is_some_and(|w| !w.moe);
    for key in TUNED_KEYS {
        // A dense model has no token dispatcher: its settings are neither assumed nor listed. A key stated null is
        // listed at its default but not filled from a recipe: the plan-file export writes null for a setting a plan
        // left at its default, and read back it is the same assumption (`report::verdict` names it alike).
        let stated_null = stated.and_then(|t| t.get(key)).is_some_and(Value::is_null);
        if (stated.is_some_and(|t| t.contains_key(key)) && !stated_null) || (dense && MOE_KEYS.contains(&key)) {
            continue;
        }
        let from_recipe = recipe.filter(|Nearest { same_model, same_family, same_precision, .. }| {
            !stated_null
                && !excluded.iter().any(|k| k == key)
                // The flex backend is read only by the flex dispatcher: moot once the dispatcher is not assumed.
                && !(key == "moe_flex_dispatcher_backend" && excluded.iter().any(|k| k == "moe_token_dispatcher_type"))
                && !NOT_FROM_RECIPE.contains(&key)
                && !moot(key, stated)
                && (*same_model || !SAME_MODEL.contains(&key))
                && (*same_family || !SAME_FAMILY.contains(&key))
                && (*same_precision || !SAME_PRECISION.contains(&key))
        });
        match from_recipe.and_then(|n| Some((n, recipe_value(n.recipe, key)?))) {
            Some((n, (v, _))) if key == "tp_comm_overlap" && v.as_bool() == Some(true) && !tp_overlap_applies(plan) => {
                filled.insert(key.to_string(), Value::Bool(false));
                let source = format!("{} — off at this plan's TP < 2 or without sequence parallelism, as its CommOverlapConfig turns it off", n.source(&wanted));
                out.push(Assumption { key: key.to_string(), value: Value::Bool(false), source });
            }
            Some((n, (v, defaulted))) => {
                let source = if defaulted { format!("{}, {BF16_COUNT_DEFAULT}", n.source(&wanted)) } else { n.source(&wanted) };
                filled.insert(key.to_string(), v.clone());
                out.push(Assumption { key: key.to_string(), value: v, source });
            }
            None => {
                let source = if RESOLVED_BY_PRECISION.contains(&key) { MIXED_PRECISION_SOURCE } else { DEFAULT_SOURCE };
                let source = if absent { format!("{source} — {RECIPES_ABSENT}") } else { source.to_string() };
                out.push(Assumption { key: key.to_string(), value: Value::Null, source });
            }
        }
    }
    if filled.is_empty() {
        return (Cow::Borrowed(plan), out);
    }
    let mut plan = plan.clone();
    if let Some(o) = plan.as_object_mut() {
        let t = o.entry("training").or_insert_with(|| Value::Object(Map::new()));
        if let Some(t) = t.as_object_mut() {
            t.extend(filled);
        }
    }
    (Cow::Owned(plan), out)
}

/// How a BF16 layer count a recipe leaves unset is sourced.
const BF16_COUNT_DEFAULT: &str = "Bridge MixedPrecisionConfig default (the recipe leaves it unset)";

/// A recipe's value for `key`, and whether it is a default the recipe leaves in place: the value it sets, or for a BF16
/// layer count it leaves unset beside first_last_layers_bf16, 0 — Bridge's MixedPrecisionConfig defaults both counts to 0 and copies every field into the model config
/// (Megatron-Bridge@067f987df03b training/mixed_precision.py:73-74 and update_config_with_precision_overrides), where
/// Megatron-Core's own default would be 1 (Nemotron 3 Super's NVFP4 recipe sets only the last 14).
fn recipe_value(r: &recipes::Recipe, key: &str) -> Option<(Value, bool)> {
    match r.training.get(key) {
        Some(v) => Some((v.clone(), false)),
        None if matches!(key, "num_layers_at_start_in_bf16" | "num_layers_at_end_in_bf16") && r.training.contains_key("first_last_layers_bf16") => {
            Some((Value::from(0u64), true))
        }
        None => None,
    }
}

/// Whether TP communication overlap applies to the plan's layout: a recipe's `tp_comm_overlap = True` is Bridge's
/// CommOverlapConfig's, which turns it off at TP < 2 and without sequence parallelism (Megatron-Bridge
/// src/megatron/bridge/training/comm_overlap.py:442-448 @ 067f987df03b), so on another layout the recipe runs it off.
fn tp_overlap_applies(plan: &Value) -> bool {
    let par = plan.get("parallelism");
    let tp = par.and_then(|p| p.get("tensor_model_parallel_size")).and_then(crate::fields::as_uint).unwrap_or(1);
    let sp = par.and_then(|p| p.get("sequence_parallel")).and_then(Value::as_bool).unwrap_or(false);
    tp >= 2 && sp
}

/// How an assumption names its recipe: the plan name and the Bridge source file:line at the pinned commit.
pub fn source_of(r: &recipes::Recipe) -> String {
    let repo = recipes::source_repository();
    let commit = repo.rsplit('@').next().unwrap_or(repo);
    format!("Megatron Bridge perf recipe {} (Megatron-Bridge@{} {})", r.name, commit.get(..12).unwrap_or(commit), r.source)
}

fn wanted(plan: &Value) -> Option<Wanted<'_>> {
    let m = plan.get("model")?;
    let preset = m.as_str().or_else(|| m.get("preset").and_then(Value::as_str)).and_then(presets::model);
    // A preset's kind unless the plan's fields change its expert count; a model of its own fields is MoE with experts
    // (Megatron's num_moe_experts); a Hugging Face config as its reader maps it (nothing is assumed while that reader
    // is not loaded in the page: the plan is refused until it is).
    let experts = m.get("num_moe_experts").filter(|v| !v.is_null());
    let moe = match (preset, experts, m.get("hf_config")) {
        (Some(p), None, _) => p.is_moe(),
        (_, Some(e), _) => e.as_u64().is_some_and(|e| e > 0),
        (None, None, Some(hf)) => crate::hf::read(hf, &mut Vec::new()).ok()?.is_moe(),
        (None, None, None) if m.is_object() => false,
        (None, None, None) => return None,
    };
    let cluster = plan.get("cluster");
    let gpu = presets::gpu(cluster.and_then(|c| c.get("gpu")).and_then(Value::as_str).unwrap_or(presets::default_gpu_key()))?;
    let training = plan.get("training");
    let precision = training.and_then(|t| t.get("precision")).and_then(Value::as_str).unwrap_or("bf16");
    let fp8_recipe = training
        .and_then(|t| t.get("fp8_recipe"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| gpu.fp8_recipe.and_then(|r| serde_json::to_value(r).ok()).and_then(|v| v.as_str().map(str::to_string)));
    let gpus = cluster.and_then(|c| {
        let n = c.get("num_gpus").and_then(Value::as_u64);
        n.or_else(|| Some(c.get("num_nodes")?.as_u64()?.saturating_mul(c.get("gpus_per_node").and_then(Value::as_u64).unwrap_or(gpu.gpus_per_node))))
    });
    let fsdp = training.and_then(|t| t.get("use_megatron_fsdp")).and_then(Value::as_bool).unwrap_or(false);
    let (model, family) = (preset.map(|p| p.key.as_str()), preset.map(|p| p.family.as_str()));
    Some(Wanted { model, family, moe, gpu, precision, fp8_recipe, gpus, fsdp })
}

/// The nearest perf recipe and how near: of the same model, of the same family, of the same precision (and FP8 recipe).
#[derive(Clone, Copy)]
struct Nearest {
    recipe: &'static recipes::Recipe,
    same_model: bool,
    same_family: bool,
    same_precision: bool,
}

impl Nearest {
    /// How an assumption taken from it is sourced: the recipe, and when it is another family's, why that one.
    fn source(&self, w: &Option<Wanted>) -> String {
        let why = match w.as_ref().and_then(|w| w.family) {
            _ if self.same_family => return source_of(self.recipe),
            Some(f) => format!("Bridge has no perf recipe of the {f} family"),
            None => "the model is no catalogue preset".to_string(),
        };
        let kind = if w.as_ref().is_some_and(|w| w.moe) { "MoE" } else { "dense" };
        format!("{} — the nearest {kind} recipe of another family ({why}), for the settings that do not name a model's own layers", source_of(self.recipe))
    }
}

/// The nearest perf recipe ([`Nearest`]).
fn nearest(w: &Wanted) -> Option<Nearest> {
    let score = |r: &recipes::Recipe| -> Option<(u32, u64)> {
        let preset = presets::model(&r.model)?;
        let gpu = presets::gpu(r.gpu.as_deref()?)?;
        let same_model = w.model == Some(r.model.as_str());
        let same_family = w.family == Some(preset.family.as_str());
        // A Megatron-FSDP recipe is another parallel scheme: its settings answer that scheme, not the plan's.
        let fsdp = r.training.get("use_megatron_fsdp").and_then(Value::as_bool).unwrap_or(false);
        if gpu.generation != w.gpu.generation || fsdp != w.fsdp || (!same_model && preset.is_moe() != w.moe) {
            return None;
        }
        let (same_precision, same_type) = precision_match(r, w);
        let s = 16 * u32::from(same_family)
            + 8 * u32::from(same_model)
            + 4 * u32::from(gpu.key == w.gpu.key)
            + 2 * u32::from(same_precision)
            + u32::from(same_type);
        // The nearest GPU count: |log2(recipe / plan)| in eighths of a doubling, as a tie-break.
        let distance = match (r.gpus, w.gpus) {
            (Some(a), Some(b)) if a > 0 && b > 0 => ((a as f64 / b as f64).log2().abs() * 8.0) as u64,
            _ => u64::MAX,
        };
        Some((s, distance))
    };
    let best = recipes::all()
        .iter()
        .filter(|r| r.kind == "perf")
        .filter_map(|r| Some((r, score(r)?)))
        .min_by(|(a, (sa, da)), (b, (sb, db))| sb.cmp(sa).then(da.cmp(db)).then(a.name.cmp(&b.name)))?;
    let (recipe, (s, _)) = best;
    Some(Nearest { recipe, same_model: s & 8 != 0, same_family: s & 16 != 0, same_precision: precision_match(recipe, w).0 })
}

/// Whether a recipe trains the plan's precision with its FP8 recipe, and whether the same precision at all.
fn precision_match(r: &recipes::Recipe, w: &Wanted) -> (bool, bool) {
    let precision = r.training.get("precision").and_then(Value::as_str).unwrap_or("bf16");
    let fp8 = r.training.get("fp8_recipe").and_then(Value::as_str);
    (precision == w.precision && (precision != "fp8" || fp8 == w.fp8_recipe.as_deref()), precision == w.precision)
}
