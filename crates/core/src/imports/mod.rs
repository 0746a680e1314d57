//! Imports: what users already hold, read back into a plan file — a Megatron-LM launch command or script
//! (`pretrain_gpt.py --flag value …`, arrays and variables included), the `arguments` block Megatron-LM prints at
//! start-up, Megatron Bridge overrides (Hydra `model.x=2` words, or `cfg.model.x = 2` Python lines), the config YAML a
//! Bridge run writes (or an override YAML), and every meshplan export (the plan file itself included).
//!
//! Every name goes through one mapping: the settings table's rows ([`crate::settings::SETTINGS`]: Bridge paths and
//! Megatron-LM flags) and [`names`] for the layout, batch and model fields. A setting none of them knows is listed in
//! [`Imported::unrecognized`] with its value and why — never dropped silently. The model comes from a Bridge recipe
//! name (`--recipe`, or the Python export's import line), a Hugging Face id, or the TransformerConfig fields given;
//! fields that restate a preset keep the preset.
//!
//! Pure and bounded: the text is at most [`crate::limits::MAX_PLAN_BYTES`]; the readers below bound what they unroll.

mod bridge;
mod builder;
mod devices;
mod forks;
mod kube;
mod launchers;
mod mlm;
pub use crate::names;
mod python;
pub mod shell;
pub mod tokenizers;
pub mod yaml;

pub use crate::limits::MAX_UNRECOGNIZED;
pub use builder::{Format, ImportOptions, Unrecognized, dtype_name, list_expr, recipe_preset, row_by_bridge};
use builder::Builder;
use crate::limits::MAX_PLAN_BYTES;
use crate::plan::{InputError, Plan};
use crate::{Code, Diagnostic, presets};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What an import read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Imported {
    pub format: Format,
    /// The plan file built from the input (Megatron names; what the input does not say takes meshplan's defaults).
    pub plan: Value,
    pub unrecognized: Vec<Unrecognized>,
    /// What was assumed or derived (the cluster when the input does not size it, a recipe's preset, …).
    pub notes: Vec<String>,
}

/// Reads `text` as `opts.from` (or the format it looks like) into a plan file.
pub fn import(text: &str, opts: &ImportOptions) -> Result<Imported, InputError> {
    if text.len() > MAX_PLAN_BYTES {
        return Err(InputError::new(
            Code::PlanTooLarge,
            format!("the input is {} bytes; the largest meshplan reads is {MAX_PLAN_BYTES} bytes (1 MiB)", text.len()),
            "paste only the launch command, the arguments block or the config YAML",
        ));
    }
    let by_log;
    let opts = match gpu_beside(text, text, opts) {
        Some(o) => {
            by_log = o;
            &by_log
        }
        None => opts,
    };
    // A Kubernetes manifest's containers run a command the other readers take (unless asked to read it as YAML).
    let manifest = if matches!(opts.from, None | Some(Format::MegatronArgs | Format::BridgeOverrides)) { kube::read(text) } else { None };
    let text = manifest.as_ref().map_or(text, |m| m.shell.as_str());
    let format = opts.from.unwrap_or_else(|| detect(text));
    let mut b = Builder::default();
    match format {
        Format::Plan => {
            let plan = crate::plan::read_json(text)?;
            return Ok(Imported { format, plan, unrecognized: Vec::new(), notes: Vec::new() });
        }
        Format::MegatronArgs => mlm::read(text, &mut b),
        Format::BridgeOverrides => bridge::read_overrides(text, &mut b),
        Format::BridgeYaml => bridge::read_yaml(text, &mut b),
    }
    if let Some(m) = &manifest {
        m.size(&mut b);
    }
    meshplan_header(text, &mut b);
    let (mut built, set_keys) = b.finish(format, opts)?;
    if built.tuned_defaults {
        // The imported plan is written out resolved, so what tuned defaults assume is said here, with its source.
        let (_, assumed) = crate::tuned::assume(&built.plan, &[]);
        let said: Vec<String> = crate::tuned::by_source(&assumed)
            .into_iter()
            .filter(|(source, _)| !crate::tuned::is_default_source(source))
            .map(|(source, group)| {
                let keys: Vec<String> = group.iter().map(|a| format!("{} = {}", a.key, a.value)).collect();
                format!("{} from {source}", keys.join(", "))
            })
            .collect();
        built.notes.push(format!(
            "defaults: tuned — what the configuration leaves out is its implementation's own (its YAML and the config_common.sh it sources), tuned as Bridge's perf recipes are, so meshplan assumes the nearest perf recipe's{}",
            if said.is_empty() { " (none applies)".to_string() } else { format!(": {}", said.join("; ")) }
        ));
        return Ok(Imported { format, plan: built.plan, unrecognized: built.unrecognized, notes: built.notes });
    }
    launcher_defaults(format, &mut built.plan, &mut built.notes);
    let built = if format == Format::MegatronArgs { mlm::defaults(built, &set_keys) } else { built };
    Ok(Imported { format, plan: built.plan, unrecognized: built.unrecognized, notes: built.notes })
}

/// A launch artefact runs its launcher's own defaults for what it leaves out, not the tuned defaults a hand-written plan
/// gets (`crate::tuned`): the imported plan says `"defaults": "megatron-core"`, and a note says why. For the speed and
/// memory settings tuned defaults fill (`tuned::TUNED_KEYS`) both launchers' defaults are Megatron-Core's:
/// Megatron-LM's flags are generated from Megatron-Core's configs (its differing defaults `mlm::defaults` writes out);
/// Megatron Bridge's ConfigContainer takes Megatron-Core's DistributedDataParallelConfig and OptimizerConfig unchanged
/// (Megatron-Bridge src/megatron/bridge/training/config.py:90, :121, :987 @ 067f987df03b), leaves comm_overlap and
/// mixed_precision None (:1007-1008), and its GPTModelProvider sets none of the model's (models/gpt_provider.py:129).
fn launcher_defaults(format: Format, plan: &mut Value, notes: &mut Vec<String>) {
    let Some(o) = plan.as_object_mut() else { return };
    o.insert(crate::tuned::DEFAULTS_KEY.into(), Value::from(crate::tuned::PLAIN));
    let launcher = match format {
        Format::MegatronArgs => "Megatron-LM's defaults (Megatron-Core's for the speed and memory settings)",
        _ if o.contains_key("recipe") => "the recipe's, then Megatron Bridge's ConfigContainer defaults (Megatron-Core's for the speed and memory settings)",
        _ => "Megatron Bridge's ConfigContainer defaults (Megatron-Core's for the speed and memory settings)",
    };
    notes.push(format!(
        "defaults: megatron-core — what the input leaves out is {launcher}, as the launched run has them; not meshplan's tuned defaults from Bridge's perf recipes (remove \"defaults\" from the plan to assume them)"
    ));
}

/// Imports and resolves: the plan and the findings of reading it.
/// A text longer than an import reads is read as a run's log, for the arguments it printed ([`import_log`]).
pub fn import_plan(text: &str, opts: &ImportOptions) -> Result<(Imported, Plan, Vec<Diagnostic>), InputError> {
    let imported = import_log(text, opts)?;
    let (plan, diags) = crate::plan::parse_plan(&imported.plan)?;
    Ok((imported, plan, diags))
}

/// Whether `text` (a log, say) holds the arguments a Megatron-LM run printed: its `arguments` block, or the
/// `Namespace(…)` of `print(args)` — so that the run's own plan can be read from the log an out-of-memory is in.
pub fn has_printed_arguments(text: &str) -> bool {
    mlm::printed_arguments(text).is_some()
}

/// The options for an input that names no GPU, read beside `log` (the input itself, or the log the input came with):
/// the GPU an environment report pasted there names (collect_env, nvidia-smi: `devices::named`), else the one its
/// out-of-memory message's device capacity names (`oom::gpu_of_log`), with the note saying which. None when the options
/// name the GPU, or the log says nothing of it.
fn gpu_beside(input: &str, log: &str, opts: &ImportOptions) -> Option<ImportOptions> {
    if opts.gpu.is_some() || opts.unnamed_gpu_note.is_some() {
        return None;
    }
    let assumed = opts.unnamed_gpu.as_deref().unwrap_or(crate::presets::default_gpu_key());
    let (key, note) = devices::named(input).or_else(|| devices::named(log)).or_else(|| crate::oom::gpu_of_log(log, assumed))?;
    Some(ImportOptions { unnamed_gpu: Some(key), unnamed_gpu_note: Some(note), ..opts.clone() })
}

/// The plan a run's own log holds (the arguments it printed at start-up), for `meshplan oom LOG` and the page's OOM
/// panel: the log read as [`import`] reads it; a log longer than an import reads (a training log is up to
/// `MAX_OOM_LOG_BYTES`), its printed arguments alone, the GPU read beside them in the whole log.
pub fn import_log(log: &str, opts: &ImportOptions) -> Result<Imported, InputError> {
    let log = crate::limits::prefix(log, crate::limits::MAX_OOM_LOG_BYTES);
    match mlm::printed_arguments(log).filter(|_| log.len() > MAX_PLAN_BYTES) {
        Some(args) => import(args, &gpu_beside(args, log, opts).unwrap_or_else(|| opts.clone())),
        None => import(log, opts),
    }
}

/// [`import`] of a launch artefact `input` given beside the run's `log` (its out-of-memory message, an environment
/// report): the GPU, when the input names none, as the log says it.
pub fn import_beside(input: &str, log: &str, opts: &ImportOptions) -> Result<Imported, InputError> {
    import(input, &gpu_beside(input, log, opts).unwrap_or_else(|| opts.clone()))
}

/// The format `text` looks like.
pub fn detect(text: &str) -> Format {
    let t = text.trim_start();
    if mlm::is_args_block(text) || mlm::is_yaml_cfg(text) || mlm::args_by_name(text).is_some() {
        return Format::MegatronArgs;
    }
    if t.starts_with('{') {
        return Format::Plan;
    }
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect();
    if lines.iter().any(|l| bridge::python_override(l).is_some()) || text.contains(".to_megatron_provider(") {
        return Format::BridgeOverrides;
    }
    // Megatron Bridge's recipe runner and its performance launcher (scripts/performance/setup_experiment.py, which
    // runs run_script.py on each rank; their flags name the flat perf recipe).
    // scripts/training/train.sh runs scripts/training/setup_experiment.py, which runs run_recipe.py (its --recipe /
    // --model and -tp … flags).
    // NeMo 2's CLI (`nemo llm pretrain --factory …`) and its Python (`llm.X.pretrain_recipe(…)`) use the same readers.
    let perf_launch = ["setup_experiment.py", "scripts/performance/run_script.py", "--model_recipe_name", "--compute_dtype", "scripts/training/train.sh", "nemo llm ", "--factory", ".pretrain_recipe(", "scripts.performance.llm.", "scripts/performance/llm/"];
    if text.contains("run_recipe.py") || text.contains("--recipe") || perf_launch.iter().any(|p| text.contains(p)) {
        return Format::BridgeOverrides;
    }
    // NeMo 1's model_config.yaml (a .nemo archive's): flat `key: value` lines with the `nemo_version` ModelPT adds.
    if lines.iter().any(|l| l.starts_with("nemo_version:")) {
        return Format::BridgeYaml;
    }
    let yaml_keys = lines.iter().filter(|l| l.ends_with(':') && !l.contains(' ') && !l.contains('=')).count();
    if yaml_keys > 0 && lines.iter().all(|l| !l.starts_with("--")) {
        return Format::BridgeYaml;
    }
    let words = shell::words(text);
    // The performance launcher's model recipe by its short flag alone (`… -mr llama3_70b -ng 64 …`).
    if words.iter().any(|w| w == "-mr") {
        return Format::BridgeOverrides;
    }
    let flags = words.iter().filter(|w| w.starts_with("--")).count();
    let dotted = words.iter().filter(|w| bridge::override_word(w).is_some()).count();
    if dotted > flags { Format::BridgeOverrides } else { Format::MegatronArgs }
}

/// The cluster and model name a meshplan export states in its first comment line:
/// `… — meshplan plan for NAME — TP=… , 64 GPUs (8 nodes × 8 h100-sxm-80gb)`.
fn meshplan_header(text: &str, b: &mut Builder) {
    let Some(line) = text.lines().take(5).find(|l| l.contains("— meshplan plan for ")) else { return };
    let Some(tail) = line.rsplit_once(" GPUs (").map(|(_, t)| t.trim_end_matches(')')) else { return };
    let mut words = tail.split_whitespace();
    let (nodes, _, _, gpn, gpu) = (words.next(), words.next(), words.next(), words.next(), words.next());
    if let (Some(nodes), Some(gpn)) = (nodes.and_then(|n| n.parse::<u64>().ok()), gpn.and_then(|n| n.parse::<u64>().ok())) {
        b.set("cluster.num_nodes", Value::from(nodes), 0);
        b.set("cluster.gpus_per_node", Value::from(gpn), 0);
    }
    if let Some(g) = gpu.filter(|g| presets::gpu(g).is_some()) {
        b.set("cluster.gpu", Value::from(g), 0);
    }
    if let Some(name) = line.split("— meshplan plan for ").nth(1).and_then(|r| r.split(" — ").next()) {
        b.header_name = Some(name.trim().to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_expressions() {
        assert_eq!(list_expr("([0]*3+[1]*2)"), Some(vec![0, 0, 0, 1, 1]));
        assert_eq!(list_expr("[0] * 1 + [1] * 2"), Some(vec![0, 1, 1]));
        assert_eq!(list_expr("[1]*999999999999"), None);
    }

    #[test]
    fn recipe_names_with_variants() {
        assert_eq!(recipe_preset("llama31_70b_pretrain_config").map(|p| p.key.as_str()), Some("llama-3.1-70b"));
        assert_eq!(recipe_preset("llama31_70b_pretrain_32gpu_h100_bf16_config").map(|p| p.key.as_str()), Some("llama-3.1-70b"));
    }
}
