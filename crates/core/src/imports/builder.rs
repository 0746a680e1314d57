//! The plan an import builds, below the readers that fill it (`mlm.rs`, `bridge.rs`) and the dispatch that runs them
//! (`mod.rs`): the input's format, what was not read, the options, the [`Builder`] (values by plan path, each from the
//! highest-ranked name that set it) and the helpers every reader shares.

use super::yaml;
use crate::limits::MAX_UNRECOGNIZED;
use crate::plan::InputError;
use crate::settings::{SETTINGS, Setting, Ty};
use crate::{Code, presets};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};


/// Model fields that make two models of one shape different architectures, not one model modified: a shape match
/// needs them equal.
const DEFINING_FIELDS: [&str; 8] = [
    "normalization",
    "qk_layernorm",
    "position_embedding_type",
    "gated_linear_unit",
    "activation_func",
    "add_bias_linear",
    "add_qkv_bias",
    "multi_latent_attention",
];

/// What the text is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// A Megatron-LM command line or launch script, or the `arguments` block it prints.
    MegatronArgs,
    /// Megatron Bridge overrides: Hydra `key=value` words (a launch command) or `cfg.key = value` Python lines.
    BridgeOverrides,
    /// A Megatron Bridge config YAML (the `ConfigContainer` a run writes, or an override file).
    BridgeYaml,
    /// A meshplan plan file (JSON).
    Plan,
}

impl Format {
    pub const ALL: [Format; 4] = [Format::MegatronArgs, Format::BridgeOverrides, Format::BridgeYaml, Format::Plan];

    pub fn key(self) -> &'static str {
        match self {
            Format::MegatronArgs => "megatron-args",
            Format::BridgeOverrides => "bridge-overrides",
            Format::BridgeYaml => "bridge-yaml",
            Format::Plan => "plan",
        }
    }

    pub fn from_key(key: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.key() == key)
    }
}

/// A setting of the input meshplan does not read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Unrecognized {
    /// As the input spells it (`--lr`, `optimizer.lr`).
    pub name: String,
    pub value: String,
    pub why: String,
}

/// Choices the text cannot carry (a launch command rarely names the GPU).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ImportOptions {
    pub from: Option<Format>,
    /// A model preset key, used when the input names no model (or instead of it).
    pub model: Option<String>,
    /// A GPU catalogue key, used instead of the input's (or the catalogue's default GPU).
    pub gpu: Option<String>,
    /// A GPU catalogue key for an input that names none: the page's plan's, kept (the catalogue's default otherwise).
    pub unnamed_gpu: Option<String>,
    /// The note that says why `unnamed_gpu` was taken, when it is not the replaced plan's (the device of the log
    /// beside the input: `oom::gpu_of_log`).
    pub unnamed_gpu_note: Option<String>,
}

/// A plan under construction: values by plan path, each with the rank of the name it came from (0 decides).
#[derive(Default)]
pub(crate) struct Builder {
    plan: Map<String, Value>,
    ranks: Vec<(String, usize)>,
    pub unrecognized: Vec<Unrecognized>,
    /// (name, value) of each entry of `unrecognized`, so a repeat is found in O(1).
    listed: std::collections::HashSet<(String, String)>,
    pub notes: Vec<String>,
    /// A Bridge recipe function name.
    pub recipe: Option<String>,
    /// A Hugging Face id (Bridge's `model.hf_model_id`).
    pub hf_id: Option<String>,
    /// The checkpoint directory Megatron loads (`--load`), a model's name when nothing else names one.
    pub load_path: Option<String>,
    /// The model name a meshplan export's header gives.
    pub header_name: Option<String>,
    /// The precision, once decided.
    pub precision: Option<&'static str>,
    /// Total GPUs, when the input gives only the world size.
    pub world_size: Option<u64>,
    /// The data-parallel size Megatron-LM's argument dump prints (derived there from the world: `data_parallel_size`).
    pub data_parallel: Option<u64>,
    /// The tokenizer arguments a Megatron-LM launch gives (`--tokenizer-type`, …), by flag.
    pub tokenizer: Vec<(String, String)>,
    /// Megatron-DeepSpeed's `--zero-stage`, as written, and whether `--deepspeed` is on: the stage applies only with
    /// DeepSpeed (its arguments print `zero_stage 1.0`, the default, in every run).
    pub zero_stage: Option<String>,
    pub deepspeed: bool,
    /// ms-swift's Megatron entry point (`megatron sft|pt|rlhf`) runs the command: its own defaults fill what it leaves
    /// out (`imports::mlm` `swift_defaults`).
    pub ms_swift: bool,
    /// verl's trainer config names the run (`actor_rollout_ref.…`): its engine defaults fill what it leaves out
    /// (`imports::bridge` `verl_defaults`).
    pub verl: bool,
    /// verl's batch and length settings, read by `imports::bridge` `verl_defaults` (path, value).
    pub verl_sizes: Vec<(String, Value)>,
    /// slime's launcher names the run (`--actor-num-nodes`, `--rollout-batch-size`, …): its defaults and batch apply
    /// (`imports::forks`).
    pub slime: bool,
    /// The words of Megatron-LM's forks and wrappers that `imports::forks` reads together at the end (flag, value).
    pub fork_args: Vec<(String, String)>,
    /// Megatron-LM's `--num-layers-per-virtual-pipeline-stage`, as written: the virtual pipeline size it implies needs
    /// the layers and PP, which may come later in the text.
    pub layers_per_virtual_stage: Option<String>,
    /// A recipe named only for its model: NeMo 2's `--factory llama3_8b` (a NeMo recipe, whose layout and batch
    /// meshplan does not hold; the Bridge recipe of the same stem builds the same model).
    pub recipe_model: Option<String>,
    /// An MLPerf configuration's MINIBS (samples per data-parallel rank), as written: the global batch it implies needs
    /// the world and the layout.
    pub per_replica_batch: Option<String>,
    /// Whether what the input leaves out is tuned rather than its launcher's plain defaults (an MLPerf configuration,
    /// whose implementation sets them: `imports::launcher_defaults`).
    pub tuned_defaults: bool,
}

/// The plan built, with what was not read.
pub(crate) struct Built {
    pub plan: Value,
    pub unrecognized: Vec<Unrecognized>,
    pub notes: Vec<String>,
    /// [`Builder::tuned_defaults`].
    pub tuned_defaults: bool,
}

impl Builder {
    /// Sets `path` (`section.field`) unless a name of lower rank already set it.
    /// A wrapper's switch for a setting Megatron-LM has no flag for (`names::WRAPPER_SETTINGS`): its plan value, or
    /// the value left unread with why.
    pub(crate) fn wrapper_setting(&mut self, name: &str, path: &str, raw: &str) {
        let v = match path {
            "training.peft" => crate::names::peft_value(raw).map(Value::from),
            _ => raw.trim().parse::<u64>().ok().map(Value::from),
        };
        match (path, v) {
            // A LoRA rank of 0 is the RL trainer's "no LoRA"; a positive one turns LoRA on.
            ("training.lora_dim", Some(Value::Number(n))) if n.as_u64() == Some(0) => {}
            ("training.lora_dim", Some(n)) => {
                self.set(path, n, 0);
                self.set("training.peft", Value::from("lora"), 1);
            }
            (_, Some(v)) => self.set(path, v, 0),
            (_, None) => self.unknown(name, &Value::from(raw), &format!("not a value meshplan reads for {path}")),
        }
    }

    pub fn set(&mut self, path: &str, value: Value, rank: usize) {
        if let Some((_, r)) = self.ranks.iter().find(|(p, _)| p == path) {
            if *r < rank {
                return;
            }
        }
        self.ranks.retain(|(p, _)| p != path);
        self.ranks.push((path.to_string(), rank));
        let (section, field) = path.split_once('.').unwrap_or(("", path));
        if let Value::Object(m) = self.plan.entry(section.to_string()).or_insert_with(|| Value::Object(Map::new())) {
            m.insert(field.to_string(), value);
        }
    }

    /// The GPU a launcher names in its own words (Slurm's GPU type, a pod's product label): the one catalogue entry the
    /// name means (`presets::gpus_named`), at `rank`, said with `whence`; a name meaning none or several is said and
    /// leaves the GPU to the rest of the input.
    pub fn gpu_named(&mut self, name: &str, rank: usize, whence: &str) {
        match presets::gpus_named(name).as_slice() {
            [one] => {
                self.set("cluster.gpu", Value::from(one.key.clone()), rank);
                self.notes.push(format!("GPU: {} from {whence}", one.key));
            }
            [] => self.notes.push(format!("{whence} names no GPU of meshplan's catalogue: give --gpu")),
            many => self.notes.push(format!("{whence} fits {}: give --gpu", many.iter().map(|g| g.key.as_str()).collect::<Vec<_>>().join(" and "))),
        }
    }

    pub fn get(&self, path: &str) -> Option<&Value> {
        let (section, field) = path.split_once('.')?;
        self.plan.get(section)?.get(field)
    }

    pub fn remove(&mut self, path: &str) -> Option<Value> {
        let (section, field) = path.split_once('.')?;
        self.ranks.retain(|(p, _)| p != path);
        self.plan.get_mut(section)?.as_object_mut()?.remove(field)
    }

    /// A launcher's own defaults: each path the input left unset is set (rank 5, below anything read); the ones set are
    /// returned as `field = value` for the launcher's note.
    pub(crate) fn defaults_unset(&mut self, defaults: Vec<(&str, Value)>) -> Vec<String> {
        let mut said = Vec::new();
        for (path, v) in defaults {
            if self.get(path).is_none() {
                said.push(format!("{} = {v}", path.rsplit('.').next().unwrap_or(path)));
                self.set(path, v, 5);
            }
        }
        said
    }

    pub fn unknown(&mut self, name: &str, value: &Value, why: &str) {
        // Past MAX_UNRECOGNIZED entries, the last one counts the rest.
        if self.unrecognized.len() >= MAX_UNRECOGNIZED {
            if self.unrecognized.len() == MAX_UNRECOGNIZED {
                self.unrecognized.push(Unrecognized { name: "…".into(), value: "0".into(), why: "more settings not read (not listed one by one)".into() });
            }
            if let Some(last) = self.unrecognized.last_mut() {
                last.value = (last.value.parse::<u64>().unwrap_or(0) + 1).to_string();
            }
            return;
        }
        let shown = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let (name, shown): (String, String) = (name.chars().take(200).collect(), shown.chars().take(200).collect());
        // A command a script both echoes and runs lists each setting once.
        if !self.listed.insert((name.clone(), shown.clone())) {
            return;
        }
        self.unrecognized.push(Unrecognized { name, value: shown, why: why.into() });
    }

    /// A settings row's value in the plan's spelling, from a tool's value (`v` parsed as a scalar or list).
    pub fn set_row(&mut self, row: &'static Setting, v: Value, rank: usize) {
        let v = setting_value(row, v);
        // Bridge writes the offload fraction (0.0) with offloading off: nothing is offloaded, as when it is not set.
        if row.key == "optimizer_offload_fraction" && v.as_f64() == Some(0.0) {
            return;
        }
        self.set(&format!("training.{}", row.key), v, rank);
    }

    /// The model section: the recipe's or Hugging Face id's preset, the given fields, or both; None when there is none.
    fn model(&mut self, opts: &ImportOptions) -> Option<Value> {
        let mut fields = self.plan.remove("model").and_then(|v| v.as_object().cloned()).unwrap_or_default();
        // Megatron-LM requires --max-position-embeddings; a value equal to the sequence length (what the Megatron-LM
        // export writes when the plan leaves it unset) says nothing of the model when a preset leaves it unset.
        let seq = self.get("training.seq_length").cloned();
        let unset_in_preset = |p: &presets::ModelPreset| p.model_config().max_position_embeddings.is_none();
        let named = opts
            .model
            .as_deref()
            .and_then(presets::model)
            .or_else(|| self.recipe.as_deref().and_then(recipe_preset))
            // A NeMo recipe stem is often a preset's key in other spelling (`mixtral_8x7b`, `nemotron4_340b`).
            .or_else(|| self.recipe_model.as_deref().and_then(|r| recipe_preset(&format!("{r}_pretrain_config")).or_else(|| presets::model(&r.replace('_', "-")))))
            .or_else(|| self.by_checkpoint_name(!fields.is_empty()))
            .or_else(|| self.header_name.as_deref().and_then(|n| presets::models().iter().find(|p| p.name == n)));
        if let Some(p) = named {
            if unset_in_preset(p) && seq.is_some() && fields.get("max_position_embeddings") == seq.as_ref() {
                fields.remove("max_position_embeddings");
            }
            self.notes.push(format!("model: the {} preset{}", p.key, if fields.is_empty() { String::new() } else { " with the fields the input sets".into() }));
            let mut m = fields;
            m.insert("preset".into(), Value::from(p.key.clone()));
            return Some(Value::Object(m));
        }
        if fields.is_empty() {
            return None;
        }
        // Fields that restate a preset (all of them, the vocabulary aside when the input leaves it to the tokenizer).
        let obj = Value::Object(fields.clone());
        let given = crate::model_fields::model_from_fields(Some(&obj), None, "model", &mut Vec::new());
        let tp = self.get("parallelism.tensor_model_parallel_size").and_then(crate::fields::as_uint).unwrap_or(1);
        for p in presets::models() {
            let base = p.model_config();
            let mut fields = fields.clone();
            if base.max_position_embeddings.is_none() && seq.is_some() && fields.get("max_position_embeddings") == seq.as_ref() {
                fields.remove("max_position_embeddings");
            }
            // A tokenizer's vocabulary that Megatron-LM pads to the preset's (GPT-2's 50,257 → 51,200 at TP 8, the
            // preset's figure) builds the preset's embedding: the same model.
            let mut padded_note = String::new();
            if let Some(v) = fields.get("vocab_size").and_then(crate::fields::as_uint).filter(|v| *v != base.vocab_size) {
                let mut mine = base.clone();
                mine.vocab_size = v;
                if mine.padded_vocab_size(tp) == base.padded_vocab_size(tp) {
                    fields.remove("vocab_size");
                    padded_note = format!(" (vocab_size {v} pads to the preset's {} at TP {tp}, as Megatron-LM pads it)", base.vocab_size);
                }
            }
            let obj = Value::Object(fields.clone());
            let over = crate::model_fields::model_from_fields(Some(&obj), Some(&base), "model", &mut Vec::new());
            if over == base && (fields.contains_key("vocab_size") || !padded_note.is_empty() || given.num_layers == base.num_layers) {
                let vocab = match (fields.contains_key("vocab_size"), padded_note.is_empty()) {
                    (_, false) => padded_note,
                    (true, true) => String::new(),
                    (false, true) => format!(" (vocab_size not given: the preset's {})", base.vocab_size),
                };
                self.notes.push(format!("model: the fields given are the {} preset's{vocab}", p.key));
                let mut m = fields;
                m.insert("preset".into(), Value::from(p.key.clone()));
                return Some(Value::Object(m));
            }
        }
        if let Some(m) = self.shaped_like(fields.clone(), &given) {
            return Some(m);
        }
        if !fields.contains_key("vocab_size") {
            let d = crate::model_fields::model_from_fields(Some(&Value::Object(Map::new())), None, "model", &mut Vec::new()).vocab_size;
            self.notes.push(format!(
                "model: vocab_size is not given (no --vocab-size, and no tokenizer meshplan's table knows, data/tokenizers.json); meshplan's default {d} assumed: give the model's vocab_size"
            ));
        }
        let mut m = fields;
        if let Some(name) = self.header_name.clone().or_else(|| self.hf_id.clone()) {
            m.insert("name".into(), Value::from(name));
        }
        Some(Value::Object(m))
    }

    /// The preset a checkpoint's name means (`presets::model_named`): the Hugging Face id or path the input gives,
    /// else, with no model fields, the directory Megatron loads (`--load Qwen2.5-7B-Instruct-mcore`, as ms-swift's
    /// converted checkpoints are named); a note says which name and what was dropped from it.
    fn by_checkpoint_name(&mut self, fields_given: bool) -> Option<&'static presets::ModelPreset> {
        let (name, from) = match (&self.hf_id, &self.load_path) {
            (Some(id), _) => (id.clone(), "the Hugging Face id or path"),
            (None, Some(load)) if !fields_given => (load.clone(), "the checkpoint directory it loads (--load)"),
            _ => return None,
        };
        let (p, dropped) = presets::model_named(&name)?;
        let mut words: Vec<&str> = dropped.iter().map(String::as_str).collect();
        words.reverse();
        if !words.is_empty() || from != "the Hugging Face id or path" || p.hf_id != name {
            let without = if words.is_empty() { String::new() } else { format!(" without its variant suffix \"-{}\" (fine-tuning and conversion keep the architecture)", words.join("-")) };
            self.notes.push(format!("model: {from} \"{name}\" read as the {} preset{without}", p.key));
        }
        Some(p)
    }

    /// The preset whose shape the fields give (and none of whose [`DEFINING_FIELDS`] differ from them) (layers, hidden size, heads, query groups, FFN and experts equal; of
    /// several, the one fewest given fields differ from, the first on a tie — Llama 3 8B and 3.1 8B differ only in
    /// their context), with the fields laid over it; a note names the preset and every given field that differs from it.
    fn shaped_like(&mut self, fields: Map<String, Value>, given: &crate::model::ModelConfig) -> Option<Value> {
        let shape = |m: &crate::model::ModelConfig| (m.num_layers, m.hidden_size, m.num_attention_heads, m.num_query_groups, m.ffn_hidden_size, m.num_moe_experts);
        let mine = serde_json::to_value(given).unwrap_or(Value::Null);
        let differing = |base: &Value| fields.keys().filter(|k| base.get(k.as_str()) != mine.get(k.as_str())).cloned().collect::<Vec<String>>();
        let (p, base, differ) = presets::models()
            .iter()
            .filter(|p| shape(&p.model_config()) == shape(given))
            .map(|p| {
                let base = serde_json::to_value(p.model_config()).unwrap_or(Value::Null);
                let differ = differing(&base);
                (p, base, differ)
            })
            // A preset built differently (another norm, QK layernorm, positions, gating, activation, biases, attention)
            // is another model of the same size, not this one modified: no name is lent.
            .filter(|(_, _, differ)| !differ.iter().any(|k| DEFINING_FIELDS.contains(&k.as_str())))
            .min_by_key(|(_, _, differ)| differ.len())?;
        let shown = |v: &Value, k: &str| v.get(k).unwrap_or(&Value::Null).to_string();
        let differ: Vec<String> = differ.iter().map(|k| format!("{k} {} (preset {})", shown(&mine, k), shown(&base, k))).collect();
        let taken: Vec<&str> = ["vocab_size", "max_position_embeddings"].into_iter().filter(|k| !fields.contains_key(*k)).collect();
        let differ = if differ.is_empty() { "none".to_string() } else { differ.join(", ") };
        let taken = if taken.is_empty() { String::new() } else { format!("; the preset's {} (the input does not give them)", taken.join(", ")) };
        self.notes.push(format!(
            "model: matched by shape to the {} preset ({} layers, hidden {}, {} heads, {} query groups, FFN {}); the input's fields that differ from it, which the plan keeps: {differ}{taken}",
            p.key, given.num_layers, given.hidden_size, given.num_attention_heads, given.num_query_groups, given.ffn_hidden_size
        ));
        let mut m = fields;
        m.insert("preset".into(), Value::from(p.key.clone()));
        if let Some(name) = self.header_name.clone().or_else(|| self.hf_id.clone()) {
            m.insert("name".into(), Value::from(name));
        }
        Some(Value::Object(m))
    }

    /// The plan file: model, cluster (what the input sizes, else assumed and noted), training, parallelism.
    pub(super) fn finish(mut self, format: Format, opts: &ImportOptions) -> Result<(Built, Vec<String>), InputError> {
        let unknown = self.recipe.clone().filter(|r| crate::recipes::find(r).is_none());
        let model = self.model(opts).ok_or_else(|| {
            let known = self.recipe.as_deref().and_then(crate::recipes::find);
            let what = match &unknown {
                // A recipe meshplan does not hold: data/bridge_recipes.json lists the library's other recipes (skipped),
                // each with the Hugging Face id its model is built from.
                Some(r) => format!("names the Megatron Bridge recipe `{}`, which meshplan does not hold and whose model it cannot tell ({})", r.chars().take(120).collect::<String>(), unknown_recipe(r)),
                // A recipe meshplan holds whose model has no preset: the Hugging Face id it builds the model from.
                None if known.is_some() => {
                    let r = known.map_or_else(String::new, |r| r.name.clone());
                    let hf = known.and_then(|r| r.hf_model_id.clone()).map_or("built in the recipe".into(), |h| format!("{h}: give its config.json"));
                    format!("names the Megatron Bridge recipe `{r}`, whose model has no meshplan preset ({hf})")
                }
                None if self.recipe_model.is_some() => format!(
                    "names the NeMo 2 recipe `{}`, whose model meshplan cannot tell (no Bridge recipe or preset of that name)",
                    self.recipe_model.as_deref().unwrap_or("").chars().take(120).collect::<String>()
                ),
                None => "names no model: no recipe, model class or Hugging Face id, and no num_layers / hidden_size".to_string(),
            };
            InputError::new(
                Code::ImportNoModel,
                format!("the {} input {what}", format.key()),
                "name a model preset (meshplan import --model KEY; see `meshplan presets`), or include the model's flags or fields (or paste its config.json)",
            )
        })?;
        if let Some(p) = self.precision {
            self.set("training.precision", Value::from(p), 0);
        }
        self.cluster(opts);
        let set_keys: Vec<String> = self.ranks.iter().map(|(p, _)| p.clone()).collect();
        let mut plan = Map::new();
        // A launch names a recipe and overrides some of it: the run is the recipe with those overrides, so a recipe
        // meshplan has (data/bridge_recipes.json) is the plan's `recipe` and the input's values are laid over it.
        if let Some(r) = self.recipe.as_deref().and_then(crate::recipes::find) {
            plan.insert("recipe".into(), Value::from(r.name.clone()));
            self.notes.push(format!("recipe: {} — what the input does not set is the recipe's (data/bridge_recipes.json)", r.name));
            self.tp_comm_overlap_at_tp1(r);
        } else if let Some(name) = unknown.filter(|n| !n.contains('$')) {
            // Said with the nearest names, never dropped; not made the plan's `recipe` (an unknown-recipe error), since
            // an export names the Bridge recipe of a model whose settings it then writes out in full.
            self.notes.push(unknown_recipe(&name));
        }
        // The sequence length sizes every activation: an input without one (and without a recipe to give it) plans
        // meshplan's default, said.
        if !plan.contains_key("recipe") && self.get("training.seq_length").is_none() {
            let default = crate::plan::DEFAULT_SEQ_LENGTH;
            self.notes.push(format!("training: the input gives no sequence length; meshplan's default {default} assumed (give seq_length)"));
        }
        // No global batch: one microbatch per data-parallel rank per step, as Megatron-LM's validate_args sets it
        // (derive.rs) — a step with nothing to hide its gradient reduction behind, so said.
        if !plan.contains_key("recipe") && self.get("training.global_batch_size").is_none() {
            self.notes.push("training: the input gives no global batch size; micro_batch_size × data-parallel size (one microbatch per step) assumed, as Megatron-LM's validate_args sets it (give global_batch_size)".into());
        }
        plan.insert("model".into(), model);
        for section in ["cluster", "training", "parallelism"] {
            plan.insert(section.into(), self.plan.remove(section).unwrap_or_else(|| Value::Object(Map::new())));
        }
        Ok((Built { plan: Value::Object(plan), unrecognized: self.unrecognized, notes: self.notes, tuned_defaults: self.tuned_defaults }, set_keys))
    }

    /// Megatron Bridge's CommOverlapConfig turns a requested `tp_comm_overlap` off with a warning at TP < 2, and else
    /// without sequence parallelism (Megatron-Bridge src/megatron/bridge/training/comm_overlap.py:442-448 @
    /// 067f987df03b): the run Bridge launches has it off.
    fn tp_comm_overlap_at_tp1(&mut self, r: &crate::recipes::Recipe) {
        let tp = self.get("parallelism.tensor_model_parallel_size").or_else(|| r.parallelism.get("tensor_model_parallel_size")).and_then(crate::fields::as_uint).unwrap_or(1);
        let sp = self.get("parallelism.sequence_parallel").or_else(|| r.parallelism.get("sequence_parallel")).and_then(Value::as_bool).unwrap_or(false);
        let on = self.get("training.tp_comm_overlap").or_else(|| r.training.get("tp_comm_overlap")).and_then(Value::as_bool).unwrap_or(false);
        let why = match (on, tp < 2, sp) {
            (true, true, _) => format!("TP = {tp}"),
            (true, false, false) => "sequence_parallel is off".to_string(),
            _ => return,
        };
        self.set("training.tp_comm_overlap", Value::Bool(false), 0);
        self.notes.push(format!(
            "tp_comm_overlap ignored: {why}, as Megatron Bridge's CommOverlapConfig does (it turns the overlap off with a warning); Megatron-Core alone would reject the plan (tp-comm-overlap-needs-sp)"
        ));
    }

    /// The cluster: the input's node count and GPUs per node (or its world size), else the smallest world the layout
    /// needs; the GPU from the options, the input, or the catalogue's default (`presets::default_gpu_key`) — each
    /// assumption noted.
    fn cluster(&mut self, opts: &ImportOptions) {
        match (&opts.gpu, self.get("cluster.gpu").is_some()) {
            (Some(g), _) => self.set("cluster.gpu", Value::from(g.clone()), 0),
            (None, true) => {}
            (None, false) => match opts.unnamed_gpu.as_deref().filter(|g| presets::gpu(g).is_some()) {
                Some(key) => {
                    self.set("cluster.gpu", Value::from(key), 0);
                    let note = opts.unnamed_gpu_note.clone();
                    self.notes.push(note.unwrap_or_else(|| format!("cluster: the input does not name the GPU; the replaced plan's, {key}, kept")));
                }
                None => {
                    let key = presets::default_gpu_key();
                    self.set("cluster.gpu", Value::from(key), 0);
                    self.notes.push(format!("cluster: the input does not name the GPU; {key} assumed (meshplan import --gpu KEY)"));
                }
            },
        }
        if self.get("cluster.num_nodes").is_some() && self.get("cluster.gpus_per_node").is_some() {
            return;
        }
        let size = |b: &Builder, p: &str| b.get(p).and_then(crate::fields::as_uint).unwrap_or(1).max(1);
        let gpn = self.get("cluster.gpus_per_node").and_then(crate::fields::as_uint);
        let nodes = self.get("cluster.num_nodes").and_then(crate::fields::as_uint);
        // The fewest GPUs the layout needs: PP × max(TP·CP, EP·ETP).
        let (tp, pp, cp) = (size(self, "parallelism.tensor_model_parallel_size"), size(self, "parallelism.pipeline_model_parallel_size"), size(self, "parallelism.context_parallel_size"));
        let (ep, etp) = (size(self, "parallelism.expert_model_parallel_size"), self.get("parallelism.expert_tensor_parallel_size").and_then(crate::fields::as_uint).unwrap_or(tp));
        let min = pp.saturating_mul((tp.saturating_mul(cp)).max(ep.saturating_mul(etp)));
        let catalogue = self.get("cluster.gpu").and_then(Value::as_str).and_then(presets::gpu).map(|g| g.gpus_per_node).filter(|&n| n > 0);
        let total = match (self.world_size, gpn, nodes) {
            (Some(w), _, _) => w,
            (None, Some(g), Some(n)) => g.saturating_mul(n),
            // GPUs per node without a node count (`srun --ntasks-per-node=8`, `--nproc-per-node 8` with the nodes in a
            // variable the text does not set): the fewest whole nodes the layout needs, said.
            (None, Some(g), None) => {
                let n = min.div_ceil(g.max(1)).max(1);
                self.notes.push(format!("cluster: the input gives {g} GPUs per node but no node count; {n} node(s), the fewest the layout needs, assumed"));
                g.saturating_mul(n)
            }
            // A node count without GPUs per node (`#SBATCH --nodes=4` alone): the GPU's node size (gpus.json).
            (None, None, Some(n)) => {
                let g = catalogue.unwrap_or(8);
                self.notes.push(format!("cluster: the input gives {n} nodes but not the GPUs per node; the GPU's node size, {g}, assumed"));
                self.set("cluster.gpus_per_node", Value::from(g), 0);
                return;
            }
            _ => {
                self.notes.push(format!("cluster: the input does not size the world; the smallest the layout needs, {min} GPUs, assumed"));
                min
            }
        };
        // Unstated GPUs per node: the GPU's own node size where the world is whole nodes of it (a GB200/GB300 tray holds
        // 4, an HGX/DGX node 8: gpus.json), as Bridge's launcher infers it from the GPU; else 8, or one node of fewer.
        let node = catalogue.filter(|&n| total % n == 0);
        let gpn = gpn.or(node).unwrap_or_else(|| if total % 8 == 0 { 8 } else { total.clamp(1, 8) });
        self.set("cluster.gpus_per_node", Value::from(gpn), 0);
        self.set("cluster.num_nodes", Value::from(total.div_ceil(gpn.max(1)).max(1)), 0);
    }
}

/// A recipe name meshplan does not have, said with the nearest names it has (never dropped).
fn unknown_recipe(name: &str) -> String {
    let short: String = name.trim().rsplit('.').next().unwrap_or(name).chars().take(120).collect();
    let mut near: Vec<(f64, &str)> = crate::recipes::all().iter().map(|r| (strsim::jaro_winkler(&short, &r.name), r.name.as_str())).collect();
    crate::sort::stable_by(&mut near, |a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    let names: Vec<&str> = near.iter().take(3).map(|(_, n)| *n).collect();
    format!(
        "recipe: `{short}` is not a Megatron Bridge recipe meshplan has (data/bridge_recipes.json, {}); nearest: {}; the plan does not take its settings",
        crate::recipes::source_repository(),
        names.join(", ")
    )
}

/// The preset whose Bridge recipe is `name` (the library's name, with or without a `_config` / variant suffix).
pub fn recipe_preset(name: &str) -> Option<&'static presets::ModelPreset> {
    // A recipe meshplan reads (data/bridge_recipes.json) names its model preset, found by its Hugging Face id.
    if let Some(r) = crate::recipes::find(name.trim()) {
        return r.preset().and_then(presets::model);
    }
    let name = name.trim().rsplit('.').next().unwrap_or(name);
    // The model stem before the mode: `qwen3_30b_a3b_sft_8gpu_h100_bf16_config` → `qwen3_30b_a3b`, the stem of the
    // library's `qwen3_30b_a3b_pretrain_config`.
    let stem = |n: &str| ["_pretrain", "_sft", "_peft", "_finetune", "_lora"].iter().filter_map(|m| n.find(m)).min().map(|i| n[..i].to_string());
    let r = presets::bridge_recipes().iter().find(|r| r.recipe == name).or_else(|| {
        let s = stem(name)?;
        presets::bridge_recipes().iter().find(|r| stem(&r.recipe).as_deref() == Some(s.as_str()))
    })?;
    presets::model(&r.model)
}

/// `torch.bfloat16`, `bfloat16`, `bf16` → the plan's dtype spelling.
pub fn dtype_name(s: &str) -> Option<&'static str> {
    match s.trim().trim_start_matches("torch.") {
        "float32" | "fp32" | "float" => Some("fp32"),
        "float16" | "fp16" | "half" => Some("fp16"),
        "bfloat16" | "bf16" => Some("bf16"),
        "uint8" | "fp8" => Some("fp8"),
        _ => None,
    }
}

/// A tool's value as the settings row spells it: dtypes by name, Megatron's None as the row's null spelling, a single
/// value of a list row as a one-item list.
fn setting_value(row: &Setting, v: Value) -> Value {
    match (&v, row.ty) {
        (Value::Null, _) => row.null_spelling.map_or(Value::Null, Value::from),
        (Value::String(s), _) if row.torch_dtype => dtype_name(s).map_or(v.clone(), Value::from),
        (Value::String(s), Ty::List(_)) => Value::Array(vec![Value::from(s.clone())]),
        (Value::String(s), Ty::Bool) => yaml::scalar(s),
        (Value::String(s), Ty::UInt | Ty::Float) => yaml::scalar(s),
        _ => v,
    }
}

/// The settings row whose Bridge path is `path`, and the path's rank (a deprecated spelling ranks last). A
/// `mixed_precision.F` row is also read from `model.F`, `ddp.F` and `optimizer.F`, the copies Bridge's
/// MixedPrecisionConfig.setup writes (a config dump holds both; the `mixed_precision` section decides).
pub fn row_by_bridge(path: &str) -> Option<(&'static Setting, usize)> {
    let direct = SETTINGS.iter().find_map(|r| {
        r.doc().bridge.iter().position(|b| *b == path).map(|i| (r, i)).or_else(|| r.doc().bridge_clears.contains(&path).then_some((r, 99)))
    });
    direct.or_else(|| {
        let (section, field) = path.split_once('.')?;
        if !matches!(section, "model" | "ddp" | "optimizer") {
            return None;
        }
        let mp = format!("mixed_precision.{field}");
        // An RL framework's or trainer's flat Megatron section (verl's `…megatron.use_distributed_optimizer`, ROLL's
        // strategy_config, AReaL's `actor.megatron.*`) names each setting as Megatron-LM's argument (its dest): the
        // row whose flag it is.
        let flag = format!("--{}", field.replace('_', "-"));
        let by_flag = |r: &&Setting| match r.doc().mlm {
            crate::settings::Mlm::Flag(f) => f == flag,
            crate::settings::Mlm::Switch(on, _) => on == Some(flag.as_str()),
            crate::settings::Mlm::Value(f) => f == flag,
            _ => false,
        };
        SETTINGS.iter().find(|r| r.doc().bridge.first() == Some(&mp.as_str())).or_else(|| SETTINGS.iter().find(by_flag)).map(|r| (r, 50))
    })
}

/// `[0]*3+[1]*58`, `([0] * 3 + [1] * 58)`, `[0,1,1]` → the 0/1 list (at most [`crate::limits::MAX_LAYERS`] entries).
pub fn list_expr(s: &str) -> Option<Vec<u8>> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    let s = s.trim_start_matches('(').trim_end_matches(')');
    let mut out: Vec<u8> = Vec::new();
    for term in s.split('+') {
        let (list, times) = match term.rsplit_once("]*") {
            Some((l, k)) => (format!("{l}]"), k.parse::<u64>().ok()?),
            None => (term.to_string(), 1),
        };
        let items: Vec<u8> = list.strip_prefix('[')?.strip_suffix(']')?.split(',').map(|x| x.parse::<u8>().ok()).collect::<Option<_>>()?;
        if (out.len() as u64).saturating_add((items.len() as u64).saturating_mul(times)) > crate::limits::MAX_LAYERS {
            return None;
        }
        for _ in 0..times {
            out.extend_from_slice(&items);
        }
    }
    Some(out)
}
