//! Megatron Bridge: Hydra overrides (`model.tensor_model_parallel_size=2`, the words of a `run_recipe.py` launch),
//! Python overrides (`cfg.model.tensor_model_parallel_size = 2`), and config YAML (the `ConfigContainer` dump a run
//! writes, or an override file). Every `section.field` path goes through one mapping: [`super::names`] (the parallelism rows' and the batch's paths), the
//! settings rows' Bridge paths, and the model's TransformerConfig fields (the plan's own names).

use super::{Builder, dtype_name, list_expr, names, row_by_bridge, shell, yaml};
use crate::settings::{SETTINGS, mixed_precision_recipes};
use serde_json::Value;

/// `a.b=c`, `+a.b=c`, `++a.b=c` → (`a.b`, `c`): a Hydra override word.
pub(crate) fn override_word(w: &str) -> Option<(&str, &str)> {
    let (k, v) = w.split_once('=')?;
    let k = k.trim_start_matches('+');
    let ident = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    (k.contains('.') || k == "mixed_precision").then_some(())?;
    k.split('.').all(ident).then_some((k, v))
}

/// Hydra words or Python lines.
pub(crate) fn read_overrides(text: &str, b: &mut Builder) {
    let mut votes = Vec::new();
    for line in text.lines() {
        // `from megatron.bridge.recipes[.family] import NAME` (the name also called as `cfg = NAME()`).
        let import = line.trim().strip_prefix("from megatron.bridge.recipes").and_then(|r| r.split(" import ").nth(1));
        if let Some(name) = import.filter(|n| n.trim().ends_with("_config")) {
            b.recipe = Some(name.trim().to_string());
        }
    }
    let python: Vec<&str> = text.lines().map(str::trim).filter(|l| l.starts_with("cfg.")).collect();
    if !python.is_empty() {
        for line in python {
            let code = strip_py_comment(line);
            let Some((lhs, rhs)) = code.split_once('=') else { continue };
            let path = lhs.trim().trim_start_matches("cfg.");
            entry(b, path, python_value(rhs), &mut votes);
        }
    } else {
        let (words, notes) = shell::words_noted(text);
        b.notes.extend(notes);
        // A whole command in a string (`bash -c "$CMD"`) is read as its words.
        let whole = |w: &String| w.contains(char::is_whitespace) && (w.contains(" --") || w.split_whitespace().any(|x| override_word(x).is_some()));
        let words: Vec<String> = words.into_iter().flat_map(|w| if whole(&w) { w.split_whitespace().map(str::to_string).collect() } else { vec![w] }).collect();
        let mut i = 0;
        while i < words.len() {
            let w = words[i].as_str();
            i += 1;
            let (flag, inline) = w.split_once('=').map_or((w, None), |(f, v)| (f, Some(v)));
            let next = || words.get(i).map(String::as_str);
            let value = || yaml::scalar(inline.or_else(next).unwrap_or(""));
            match flag.replace('_', "-").as_str() {
                "--recipe" => b.recipe = inline.or_else(next).map(str::to_string),
                // run_recipe.py --model: a recipe stem (`qwen3_30b_a3b`).
                "--model" => b.recipe = inline.or_else(next).map(|s| format!("{s}_pretrain_config")),
                "--nproc-per-node" | "--gpus-per-node" => b.set("cluster.gpus_per_node", value(), 0),
                "--nnodes" | "--nodes" => b.set("cluster.num_nodes", value(), 0),
                f if f.starts_with('-') && run_recipe_flag(f).is_some() => {
                    if let Some(path) = run_recipe_flag(f) {
                        entry(b, path, value(), &mut votes);
                    }
                }
                f if f.starts_with('-') && !f.starts_with("--") && f.len() > 1 => {}
                f if f.starts_with("--") => {
                    let v = match next().filter(|n| !n.starts_with('-') && override_word(n).is_none() && inline.is_none()) {
                        Some(n) => n.to_string(),
                        None => inline.unwrap_or("").to_string(),
                    };
                    b.unknown(flag, &Value::from(v), "a launcher argument, not a setting meshplan models");
                }
                _ => {
                    if let Some((path, value)) = override_word(w) {
                        entry(b, path, yaml::scalar(value), &mut votes);
                    }
                }
            }
        }
    }
    decide_precision(b, &votes);
}

/// The ConfigContainer path a `scripts/training/run_recipe.py` shortcut flag sets (its argparse help says which).
// Source: Megatron-Bridge scripts/training/run_recipe.py (-tp/--tensor_model_parallel_size … -etp, -gb, -mb, -sl).
fn run_recipe_flag(flag: &str) -> Option<&'static str> {
    Some(match flag {
        "-tp" | "--tensor-model-parallel-size" => "model.tensor_model_parallel_size",
        "-pp" | "--pipeline-model-parallel-size" => "model.pipeline_model_parallel_size",
        "-cp" | "--context-parallel-size" => "model.context_parallel_size",
        "-vp" | "--virtual-pipeline-model-parallel-size" => "model.virtual_pipeline_model_parallel_size",
        "-ep" | "--expert-model-parallel-size" => "model.expert_model_parallel_size",
        "-etp" | "--expert-tensor-parallel-size" => "model.expert_tensor_parallel_size",
        "-gb" | "--global-batch-size" => "train.global_batch_size",
        "-mb" | "--micro-batch-size" => "train.micro_batch_size",
        "-sl" | "--seq-length" => "dataset.seq_length",
        _ => return None,
    })
}

/// A Bridge config YAML (a `ConfigContainer` dump, or an override file with `model:`/`train:` or `model_config:`
/// sections).
pub(crate) fn read_yaml(text: &str, b: &mut Builder) {
    let mut votes = Vec::new();
    if let Value::Object(root) = yaml::parse(text) {
        for (section, v) in root {
            let section = section.strip_suffix("_config").unwrap_or(&section).to_string();
            flatten(b, &section, v, &mut votes);
        }
    }
    decide_precision(b, &votes);
}

/// Reads a nested section; an object that only names a callable (`{_target_: torch.nn.functional.silu}`) is a value.
fn flatten(b: &mut Builder, path: &str, v: Value, votes: &mut Vec<(String, Value)>) {
    match v {
        Value::Object(map) if map.keys().all(|k| k.starts_with('_') && k.ends_with('_')) => {
            if let Some(t) = map.get("_target_").and_then(Value::as_str) {
                if path.contains('.') {
                    entry(b, path, Value::from(t), votes);
                }
            }
        }
        Value::Object(map) => {
            for (k, child) in map {
                if k == "_target_" {
                    continue;
                }
                flatten(b, &format!("{path}.{k}"), child, votes);
            }
        }
        other => entry(b, path, other, votes),
    }
}

/// One `section.field = value` of Bridge.
fn entry(b: &mut Builder, path: &str, v: Value, votes: &mut Vec<(String, Value)>) {
    // A wrapper's switch for a setting without a Bridge path of its own (`peft: lora`, an RL trainer's lora_rank).
    if let Some(p) = names::wrapper_setting(path) {
        let raw = match &v {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            other => other.to_string(),
        };
        b.wrapper_setting(path, p, &raw);
        return;
    }
    // A wrapper's name for a Megatron setting (an RL framework's `actor_rollout_ref.actor.megatron.*`, its GPU counts).
    if let Some(m) = names::wrapper(path) {
        match m.as_str() {
            "--nproc-per-node" => b.set("cluster.gpus_per_node", v, 0),
            "--nnodes" => b.set("cluster.num_nodes", v, 0),
            p if p.starts_with("model.") && p != path => entry(b, p, v, votes),
            _ if m == "model.hf_model_id" => b.hf_id = v.as_str().map(str::to_string),
            _ => {}
        }
        return;
    }
    if path == "mixed_precision" || is_precision_switch(path) {
        votes.push((path.to_string(), v));
        return;
    }
    if path == "model.hf_model_id" {
        b.hf_id = v.as_str().map(str::to_string);
        return;
    }
    if let Some((name, rank)) = names::by_bridge(path) {
        // An explicit None of a parallelism field (VPP, the first/last stage's layers, the layout) is kept: it says
        // "none" over what a named recipe sets, where leaving it out would take the recipe's.
        if !v.is_null() || name.plan.starts_with("parallelism.") {
            b.set(name.plan, v, rank);
        }
        return;
    }
    // What full-iteration CUDA graphs require (ConfigContainer.validate), written by the exports beside them; it
    // changes no memory or step time, so it is read as said rather than listed as unread.
    if path == "rerun_state_machine.check_for_nan_in_loss" && v == Value::Bool(false) {
        return;
    }
    if let Some((plan_path, value)) = names::switch_by_bridge(path) {
        if v == Value::Bool(true) {
            b.set(plan_path, Value::from(value), 0);
        }
        return;
    }
    if let Some((row, rank)) = row_by_bridge(path) {
        if !(rank == 99 && v.is_null()) {
            b.set_row(row, v, rank);
        }
        return;
    }
    if let Some(field) = path.strip_prefix("model.").filter(|f| crate::model_fields::model_field_names().contains(f)) {
        let v = match (field, &v) {
            // `torch.nn.functional.silu`, `megatron.core.activations.squared_relu` → the function's name.
            ("activation_func", Value::String(s)) => Value::from(s.rsplit('.').next().unwrap_or(s).to_string()),
            ("moe_layer_freq" | "linear_attention_freq", Value::String(s)) => list_expr(s).map_or(v.clone(), Value::from),
            _ => v,
        };
        if !v.is_null() {
            b.set(path, v, 0);
        }
        return;
    }
    if !v.is_null() {
        b.unknown(path, &v, "not a setting meshplan models");
    }
}

/// The fields that pick the precision (`mixed_precision.fp8`, `model.bf16`, …).
fn is_precision_switch(path: &str) -> bool {
    let Some((section, field)) = path.split_once('.') else { return false };
    matches!(section, "mixed_precision" | "model") && matches!(field, "bf16" | "fp16" | "fp8" | "fp4" | "fp32")
}

/// The precision: a mixed-precision recipe named by string, else the switches (the `mixed_precision` section's over
/// the model's, as Bridge's setup copies them onto the model): fp4 or fp8 given a format, else bf16, fp16, fp32.
// Source: Megatron-Bridge training/mixed_precision.py (MixedPrecisionConfig fields bf16, fp16, fp8, fp4; the registered
// recipes, data/mixed_precision.json).
fn decide_precision(b: &mut Builder, votes: &[(String, Value)]) {
    if let Some((_, v)) = votes.iter().find(|(p, _)| p == "mixed_precision") {
        match v.as_str() {
            Some(name) => match mixed_precision_recipes().iter().find(|r| r.name == name) {
                Some(r) => {
                    b.precision = Some(r.precision.key());
                    match r.fp8_recipe {
                        Some(f) => b.set("training.fp8_recipe", Value::from(f.key()), 1),
                        // None over a Bridge recipe's own FP8 recipe: the named one carries none.
                        None => b.set("training.fp8_recipe", Value::Null, 2),
                    }
                    // The named recipe replaces the config's whole mixed_precision (a Bridge recipe's own changes to it
                    // included): its fields hold unless an override sets them (`mixed_precision.field=…`, rank ≤ 1).
                    let fields = serde_json::to_value(r).unwrap_or_default();
                    for row in SETTINGS.iter().filter(|row| row.key != "fp8_recipe") {
                        let Some(field) = row.doc().bridge.first().and_then(|p| p.strip_prefix("mixed_precision.")) else { continue };
                        if let Some(v) = fields.get(field).filter(|v| !v.is_null()) {
                            b.set_row(row, v.clone(), 2);
                        }
                    }
                    return;
                }
                None => b.unknown("mixed_precision", v, "not one of the Bridge mixed-precision recipes meshplan knows (data/mixed_precision.json)"),
            },
            None if v.is_null() => {}
            None => b.unknown("mixed_precision", v, "a recipe name was expected"),
        }
    }
    let section = if votes.iter().any(|(p, _)| p.starts_with("mixed_precision.")) { "mixed_precision." } else { "model." };
    let get = |f: &str| votes.iter().find(|(p, _)| p.strip_prefix(section) == Some(f)).map(|(_, v)| v);
    let set = |v: Option<&Value>| v.is_some_and(|v| !v.is_null() && *v != Value::Bool(false));
    let precision = if set(get("fp4")) {
        "fp4"
    } else if set(get("fp8")) {
        "fp8"
    } else if get("bf16") == Some(&Value::Bool(true)) {
        "bf16"
    } else if get("fp16") == Some(&Value::Bool(true)) {
        "fp16"
    } else if votes.is_empty() {
        return;
    } else {
        "fp32"
    };
    b.precision = Some(precision);
}

/// A Python line's code, without a trailing `# comment` outside quotes.
fn strip_py_comment(line: &str) -> &str {
    let mut quote = None;
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (None, '"' | '\'') => quote = Some(c),
            (None, '#') => return line[..i].trim_end(),
            _ => {}
        }
    }
    line
}

/// A Python value as the exports write them: literals, lists, `torch.bfloat16`, `[0] * 3 + [1] * 58`,
/// `get_mixed_precision_config("bf16_mixed")`.
fn python_value(s: &str) -> Value {
    let s = s.trim();
    if let Some(arg) = s.strip_prefix("get_mixed_precision_config(").and_then(|r| r.strip_suffix(')')) {
        return yaml::scalar(arg);
    }
    if s.contains("] *") || s.contains("]*") {
        if let Some(l) = list_expr(s) {
            return Value::from(l);
        }
    }
    if let Some(d) = s.strip_prefix("torch.").and_then(dtype_name) {
        return Value::from(d);
    }
    yaml::scalar(s)
}
