//! Megatron-LM: a launch command or script (`torchrun … pretrain_gpt.py --flag value …`), or the `arguments` block
//! `megatron/training/arguments.py` prints at start-up (`  tensor_model_parallel_size ........ 4`). Both become
//! `--flag values` pairs read through the one mapping ([`super::names`] and the settings rows' flags).
//!
//! What Megatron-LM does when a flag is absent is what the import assumes: fp32 without --bf16/--fp16, linear biases
//! without --disable-bias-linear, tied embeddings without --untie-embeddings-and-output-weights, no query groups without
//! --group-query-attention, and each settings row's Megatron-LM default (`mlm_default`, `store_true` flags off).

use super::names::{self, Arg};
use super::builder::{Built, Builder, list_expr};
use super::{shell, yaml};
use crate::settings::{Mlm, SETTINGS, Setting, Ty};
use serde_json::Value;

/// Reads `text` into `b`.
pub(crate) fn read(text: &str, b: &mut Builder) {
    let mut gqa = false;
    if is_args_block(text) {
        args_block(text, b, &mut gqa);
    } else {
        // A quoted array item `"--fp8-format hybrid"`, or a whole command in a string (`bash -c "${TRAINING_CMD}"`), is
        // read as its words.
        let split = |w: &String| (w.starts_with("--") && w.contains(' ')) || w.contains(" --");
        let (words, notes) = shell::words_noted(text);
        b.notes.extend(notes);
        let words: Vec<String> = words.into_iter().flat_map(|w| if split(&w) { w.split_whitespace().map(str::to_string).collect() } else { vec![w] }).collect();
        let mut i = 0;
        while i < words.len() {
            let w = &words[i];
            i += 1;
            if !(w.starts_with("--") && w.len() > 2) {
                continue;
            }
            let (name, inline) = match w.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (w.as_str(), None),
            };
            let mut values: Vec<String> = inline.into_iter().collect();
            if values.is_empty() {
                while i < words.len() && !words[i].starts_with("--") && words[i] != "\n" {
                    values.push(words[i].clone());
                    i += 1;
                }
            }
            flag(b, name, &values, &mut gqa);
        }
    }
    finish(b, gqa);
}

/// Megatron-LM's defaults for what the flags left out (model fields only when the input gives a model).
fn finish(b: &mut Builder, gqa: bool) {
    if !gqa {
        if let Some(v) = b.remove("model.num_query_groups") {
            b.notes.push(format!("--num-query-groups {v} without --group-query-attention: Megatron-LM ignores it (one query group per head)"));
        }
    }
    let has_model = b.get("model.num_layers").is_some() || b.get("model.hidden_size").is_some();
    if has_model {
        // megatron/training/arguments.py defaults: add_bias_linear True, untied off, no gated linear unit, GeLU.
        b.set("model.add_bias_linear", Value::Bool(true), 5);
        b.set("model.share_embeddings_and_output_weights", Value::Bool(true), 5);
        b.set("model.gated_linear_unit", Value::Bool(false), 5);
        b.set("model.activation_func", Value::from("gelu"), 5);
    }
    if b.precision.is_none() {
        // Neither --bf16 nor --fp16: Megatron-LM trains in fp32.
        b.precision = Some("fp32");
    }
}

/// One `--flag values` pair.
fn flag(b: &mut Builder, raw: &str, values: &[String], gqa: &mut bool) {
    let key = names::canonical_flag(raw);
    let first = values.first().map(String::as_str).unwrap_or("");
    let low = |b: &Builder| matches!(b.precision, Some("fp8" | "fp4"));
    match key.as_str() {
        "--bf16" if !low(b) => b.precision = Some("bf16"),
        "--fp16" if !low(b) => b.precision = Some("fp16"),
        "--fp8-format" => b.precision = Some("fp8"),
        "--fp4-format" => b.precision = Some("fp4"),
        "--bf16" | "--fp16" | "--fp4-recipe" => {}
        // validate_args requires it with --cuda-graph-impl full_iteration (the exports write it there); it changes no
        // memory or step time.
        "--no-check-for-nan-in-loss-and-grad" => {}
        // torchrun's, and an `#SBATCH` directive's (--nodes, --gpus-per-node).
        "--nproc-per-node" | "--nnodes" | "--nodes" | "--gpus-per-node" => {
            let path = if matches!(key.as_str(), "--nnodes" | "--nodes") { "cluster.num_nodes" } else { "cluster.gpus_per_node" };
            match first.rsplit(':').next().and_then(|n| n.parse::<u64>().ok()) {
                Some(n) => b.set(path, Value::from(n), 0),
                None => b.unknown(&key, &Value::from(first), "not a number (a variable the text does not set?): give the cluster in the plan"),
            }
        }
        "--group-query-attention" => *gqa = true,
        "--swiglu" => {
            b.set("model.gated_linear_unit", Value::Bool(true), 0);
            b.set("model.activation_func", Value::from("silu"), 0);
        }
        "--squared-relu" => b.set("model.activation_func", Value::from("squared_relu"), 0),
        "--use-rotary-position-embeddings" => b.set("model.position_embedding_type", Value::from("rope"), 0),
        "--no-position-embedding" => b.set("model.position_embedding_type", Value::from("none"), 1),
        "--recompute-activations" => b.set("training.recompute_granularity", Value::from("selective"), 1),
        _ => {
            if let Some(name) = names::by_flag(&key) {
                let Some((_, arg)) = name.mlm else { return };
                let v = match arg {
                    Arg::Flag => Value::Bool(true),
                    Arg::FlagFalse => Value::Bool(false),
                    Arg::Value if name.plan.ends_with("_freq") => list_expr(first).map_or_else(|| yaml::scalar(first), |l| Value::from(l)),
                    Arg::Value if name.plan.ends_with("_layout") || name.plan.ends_with("_pattern") => Value::from(first),
                    Arg::Value => yaml::scalar(first),
                };
                b.set(name.plan, v, 0);
            } else if let Some((row, v)) = setting(&key, values) {
                b.set_row(row, v, 0);
            } else {
                b.unknown(&key, &Value::from(values.join(" ")), "not a setting meshplan models");
            }
        }
    }
}

/// The settings row that flag `key` sets, and the value it gives.
fn setting(key: &str, values: &[String]) -> Option<(&'static Setting, Value)> {
    SETTINGS.iter().find_map(|row| match row.doc().mlm {
        Mlm::Flag(f) if f == key => Some((row, Value::Bool(true))),
        Mlm::Switch(on, _) if on == Some(key) => Some((row, Value::Bool(true))),
        Mlm::Switch(on, off) if off == Some(key) && on != Some(key) => Some((row, Value::Bool(false))),
        Mlm::Value(f) if f == key => Some((
            row,
            match row.ty {
                Ty::List(_) => Value::Array(values.iter().map(|v| Value::from(v.as_str())).collect()),
                _ => values.first().map_or(Value::Null, |v| yaml::scalar(v)),
            },
        )),
        _ => None,
    })
}

/// Whether `text` is Megatron-LM's argument dump (its header, or at least three `name ..... value` lines).
pub(crate) fn is_args_block(text: &str) -> bool {
    text.contains("---------- arguments ----------") || text.lines().filter(|l| l.contains(" ....")).take(3).count() == 3
}

/// The `arguments` block: each `name ..... value` line as the flag Megatron-LM derived the name from.
fn args_block(text: &str, b: &mut Builder, gqa: &mut bool) {
    let start = text.lines().position(|l| l.contains("---------- arguments ----------")).map_or(0, |i| i + 1);
    for line in text.lines().skip(start).take_while(|l| !l.contains("end of arguments")) {
        // Launchers prefix each line (`[default3]:`, `0: `); the name is the word before the dots.
        let Some((head, value)) = line.split_once(" ..") else { continue };
        let Some(name) = head.split_whitespace().last() else { continue };
        let value = value.trim_start_matches('.').trim();
        let v = yaml::scalar(value);
        match (name, &v) {
            (_, Value::Null) => {}
            ("world_size", _) => b.world_size = crate::fields::as_uint(&v),
            ("virtual_pipeline_model_parallel_size", _) => b.set("parallelism.virtual_pipeline_model_parallel_size", v, 0),
            ("add_bias_linear", Value::Bool(on)) => b.set("model.add_bias_linear", Value::Bool(*on), 0),
            ("untie_embeddings_and_output_weights", Value::Bool(on)) => b.set("model.share_embeddings_and_output_weights", Value::Bool(!on), 0),
            ("fp8" | "fp4", _) => flag(b, &format!("--{name}-format"), &[value.to_string()], gqa),
            ("bf16" | "fp16", Value::Bool(true)) => flag(b, &format!("--{name}"), &[], gqa),
            ("bf16" | "fp16", _) => {}
            (_, Value::Bool(false)) if is_store_true(name) => {}
            (_, Value::Bool(true)) if is_store_true(name) => flag(b, name, &[], gqa),
            (_, Value::Array(items)) => {
                let words: Vec<String> = items.iter().map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_string)).collect();
                flag(b, name, &words, gqa);
            }
            _ => flag(b, name, &[value.trim_matches('\'').to_string()], gqa),
        }
    }
}

/// Whether the flag for argument `name` is a `store_true` switch meshplan reads.
fn is_store_true(name: &str) -> bool {
    let key = names::canonical_flag(name);
    let special = ["--group-query-attention", "--swiglu", "--squared-relu", "--use-rotary-position-embeddings", "--recompute-activations"];
    special.contains(&key.as_str())
        || names::by_flag(&key).is_some_and(|n| matches!(n.mlm, Some((_, Arg::Flag | Arg::FlagFalse))))
        || SETTINGS.iter().any(|r| match r.doc().mlm {
            Mlm::Flag(f) => f == key,
            Mlm::Switch(on, off) => on == Some(key.as_str()) || off == Some(key.as_str()),
            _ => false,
        })
}

/// Each settings row the input did not set, at Megatron-LM's value: a `store_true` flag off, the row's Megatron-LM
/// default (`mlm_default`), and the gradient reduction --bf16 implies — only where the row matters to the plan, as
/// the Megatron-LM export decides what to write.
pub(crate) fn defaults(mut built: Built, set_keys: &[String]) -> Built {
    let Ok((plan, _)) = crate::plan::parse_plan(&built.plan) else { return built };
    let Some(training) = built.plan.get_mut("training").and_then(Value::as_object_mut) else { return built };
    for row in SETTINGS.iter() {
        let path = format!("training.{}", row.key);
        if set_keys.contains(&path) || !crate::export::mlm_relevant(&plan, row) {
            continue;
        }
        let v = match (row.doc().mlm, row.doc().mlm_default) {
            (_, Some(d)) => serde_json::from_str(d).ok(),
            (Mlm::Flag(_), None) => Some(Value::Bool(false)),
            (Mlm::Switch(..), None) => {
                use crate::settings::Precision as P;
                let fp32_by_default = matches!(plan.training.settings.precision, P::Bf16 | P::Fp8 | P::Fp4);
                (plan.training.settings.precision != P::Fp32).then_some(Value::Bool(fp32_by_default))
            }
            _ => None,
        };
        if let Some(v) = v {
            training.insert(row.key.to_string(), v);
        }
    }
    built
}
