//! Megatron Bridge: Hydra overrides (`model.tensor_model_parallel_size=2`, the words of a `run_recipe.py` launch),
//! Python overrides (`cfg.model.tensor_model_parallel_size = 2`), and config YAML (the `ConfigContainer` dump a run
//! writes, or an override file). Every `section.field` path goes through one mapping: [`super::names`] (the parallelism rows' and the batch's paths), the
//! settings rows' Bridge paths, and the model's TransformerConfig fields (the plan's own names).

use super::builder::{Builder, dtype_name, list_expr, row_by_bridge};
use super::{names, python, shell, yaml};
use crate::presets;
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
    // NeMo 2's Python: `recipe = llm.llama3_8b.pretrain_recipe(num_nodes=2, num_gpus_per_node=8)`, the call across
    // lines, its values literals or names the text gives one literal (`nodes: int = 16`).
    if let Some(open) = python::calls(text, ".pretrain_recipe").next() {
        let stem = text[..open - ".pretrain_recipe".len()].rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).next().unwrap_or("");
        let args = python::call_args(text, open).map(python::kwargs).unwrap_or_default();
        let args = resolved(text, &args, b);
        nemo_factory(b, stem, &args);
    }
    nemo_run_executor(text, b);
    let providers = auto_bridge(text, b);
    if !providers.is_empty() {
        provider_lines(text, &providers, b, &mut votes);
    }
    let python: Vec<&str> = text.lines().map(str::trim).filter(|l| python_override(l).is_some()).collect();
    if !python.is_empty() || !providers.is_empty() {
        for line in python {
            let code = strip_py_comment(line);
            let Some((lhs, rhs)) = code.split_once('=') else { continue };
            let Some(path) = python_override(lhs.trim()) else { continue };
            entry(b, path, python_value(rhs), &mut votes);
        }
    } else {
        let (words, notes) = shell::words_noted(text);
        b.notes.extend(notes);
        // A whole command in a string (`bash -c "$CMD"`) is read as its words.
        let whole = |w: &String| w.contains(char::is_whitespace) && (w.contains(" --") || w.split_whitespace().any(|x| override_word(x).is_some()));
        let words: Vec<String> = words.into_iter().flat_map(|w| if whole(&w) { w.split_whitespace().map(str::to_string).collect() } else { vec![w] }).collect();
        let mut i = 0;
        let mut perf = PerfLaunch::default();
        let (mut stem, mut mode): (Option<String>, Option<String>) = (None, None);
        while i < words.len() {
            let w = words[i].as_str();
            i += 1;
            let (flag, inline) = w.split_once('=').map_or((w, None), |(f, v)| (f, Some(v)));
            let next = || words.get(i).map(String::as_str);
            let value = || yaml::scalar(inline.or_else(next).unwrap_or(""));
            if let Some(took) = perf_flag(b, &mut perf, flag, inline, next(), &mut votes) {
                i += took;
                continue;
            }
            match flag.replace('_', "-").as_str() {
                "--recipe" => b.recipe = inline.or_else(next).map(str::to_string),
                // NeMo 2's `nemo llm pretrain --factory llama3_8b` (or `"llama3_8b(num_nodes=2, num_gpus_per_node=8)"`):
                // a NeMo recipe, read for its model and the sizes its call gives.
                "--factory" | "-f" => {
                    if let Some(f) = inline.or_else(next) {
                        i += usize::from(inline.is_none());
                        let (stem, args) = f.split_once('(').map_or((f, ""), |(s, a)| (s, a.trim_end_matches(')')));
                        let args = resolved(f, &python::kwargs(args), b);
                        nemo_factory(b, stem, &args);
                    }
                }
                // run_recipe.py --model: a recipe stem (`qwen3_30b_a3b`), completed with --mode below.
                "--model" => stem = inline.or_else(next).map(str::to_string),
                "--mode" => mode = inline.or_else(next).map(str::to_string),
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
        perf.resolve(b, &mut votes);
        // run_recipe.py: `{model}_{task}_config`, the task being the mode, peft for lora and dora
        // (scripts/training/recipe_metadata.py recipe_task @ 067f987df03b); a LoRA/DoRA mode trains adapters.
        if let Some(stem) = stem {
            let mode = mode.unwrap_or_else(|| "pretrain".into());
            let task = if matches!(mode.as_str(), "lora" | "dora") { "peft" } else { mode.as_str() };
            b.recipe = Some(format!("{stem}_{task}_config"));
            if task == "peft" {
                entry(b, "peft", Value::from(mode.clone()), &mut votes);
            }
        }
    }
    decide_precision(b, &votes);
    wrappers(b);
}

/// What an RL framework's config means beyond its Megatron names, once the whole input is read: verl's engine
/// defaults and batch, NeMo-RL's recompute switch.
fn wrappers(b: &mut Builder) {
    if b.verl {
        verl_defaults(b);
    }
    nemo_rl_checkpointing(b);
    roll(b);
    areal(b);
    nemo1_tokenizer(b);
}

/// NeMo 1's tokenizer section (examples/nlp/language_modeling/conf/megatron_gpt_config.yaml @ NVIDIA/NeMo 000763d0:
/// `library` megatron with a Megatron tokenizer `type`, huggingface with a Hugging Face id as `type`, sentencepiece
/// with a `model` file; `vocab_file`).
const NEMO1_TOKENIZER: [&str; 4] = ["model.tokenizer.library", "model.tokenizer.type", "model.tokenizer.model", "model.tokenizer.vocab_file"];

/// The vocabulary NeMo 1's tokenizer section names, from the tokenizers table (`imports::tokenizers`), when the config
/// gives no vocab_size: a Megatron type (GPT2BPETokenizer), a Hugging Face id, or a vocab file's name. Said.
fn nemo1_tokenizer(b: &mut Builder) {
    let get = |b: &Builder, k: &str| b.fork_args.iter().rev().find(|(p, _)| p == k).map(|(_, v)| v.trim_matches('"').to_string()).filter(|v| v != "null");
    if b.get("model.vocab_size").is_some() || !b.fork_args.iter().any(|(k, _)| NEMO1_TOKENIZER.contains(&k.as_str())) {
        return;
    }
    let (library, ty) = (get(b, "model.tokenizer.library"), get(b, "model.tokenizer.type"));
    let hf = library.as_deref() == Some("huggingface");
    let (megatron_type, model) = if hf { (None, ty) } else { (ty, get(b, "model.tokenizer.model")) };
    if let Some((t, by)) = super::tokenizers::find(megatron_type.as_deref(), model.as_deref(), get(b, "model.tokenizer.vocab_file").as_deref()) {
        b.set("model.vocab_size", Value::from(t.vocab_size), 1);
        b.notes.push(format!("vocab_size: {} from NeMo's tokenizer section ({by}): the {} tokenizer ({})", t.vocab_size, t.name, t.source));
    } else {
        unread(b, &NEMO1_TOKENIZER, "a tokenizer meshplan's table does not know (data/tokenizers.json): give model.vocab_size");
    }
}

/// The kept names of `keys` an input gave but its wrapper's reading did not take, listed as not read (never dropped).
fn unread(b: &mut Builder, keys: &[&str], why: &str) {
    let kept: Vec<(String, String)> = b.fork_args.iter().filter(|(k, _)| keys.contains(&k.as_str())).cloned().collect();
    for (k, v) in kept {
        b.unknown(&k, &Value::from(v), why);
    }
}

/// inclusionAI/AReaL's experiment config names (@ 4aef98d8): the actor's backend and allocation, its model path, its
/// micro-batches' token budget, and the cluster's GPUs per node.
const AREAL: [&str; 4] = ["actor.backend", "actor.path", "actor.mb_spec.max_tokens_per_mb", "cluster.n_gpus_per_node"];

/// An AReaL actor on Megatron (`actor.backend: "megatron:d4p2t2"` or `"megatron:(attn:d4p4t2|ffn:d2p4e4)"`, the
/// grammar of areal/api/alloc_mode.py l.595-640): the layout from its dimensions — d, p, t, c for attention; in the
/// FFN section e and t are EP and ETP (ETP 1 when omitted, and in the plain form; l.940-1040) —, the actor's world their
/// product, SP at TP > 1 (areal/engine/megatron_engine.py l.1242), the model from `actor.path`, and a micro-batch
/// packed up to `mb_spec.max_tokens_per_mb` tokens, sized as one sequence of that length.
fn areal(b: &mut Builder) {
    let get = |b: &Builder, k: &str| b.fork_args.iter().rev().find(|(p, _)| p == k).map(|(_, v)| v.trim_matches('"').to_string());
    if let (Some(m), true) = (get(b, "actor.path"), b.hf_id.is_none()) {
        b.hf_id = Some(m);
    }
    let Some(layout) = get(b, "actor.backend").and_then(|v| areal_layout(&v)) else {
        unread(b, &["actor.backend", "actor.mb_spec.max_tokens_per_mb", "cluster.n_gpus_per_node"], "not a setting meshplan models (AReaL's names are read for an actor.backend of megatron:…)");
        return;
    };
    let mut said = Vec::new();
    for (path, v) in &layout {
        b.set(path, Value::from(*v), 0);
    }
    let dim = |p: &str| layout.iter().find(|(q, _)| *q == p).map_or(1, |(_, v)| *v);
    let world = ["data", "tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size"]
        .iter()
        .map(|d| if *d == "data" { layout.iter().find(|(q, _)| *q == "data").map_or(1, |(_, v)| *v) } else { dim(&format!("parallelism.{d}")) })
        .fold(1u64, u64::saturating_mul);
    b.world_size = Some(world);
    let tp = dim("parallelism.tensor_model_parallel_size");
    b.set("parallelism.sequence_parallel", Value::Bool(tp > 1), 0);
    said.push(format!("the layout of {} ({world} GPUs), SP {}", get(b, "actor.backend").unwrap_or_default(), if tp > 1 { "on" } else { "off" }));
    // An actor on part of one node (4 of its 8 GPUs) is one node of that many.
    if let Some(g) = get(b, "cluster.n_gpus_per_node").and_then(|v| v.parse::<u64>().ok()).filter(|&g| g > 0 && b.get("cluster.gpus_per_node").is_none()) {
        b.set("cluster.gpus_per_node", Value::from(g.min(world)), 0);
    }
    if let Some(t) = get(b, "actor.mb_spec.max_tokens_per_mb").and_then(|v| v.parse::<u64>().ok()).filter(|&t| (1..=crate::limits::MAX_FIELD).contains(&t)) {
        b.set("training.seq_length", Value::from(t), 0);
        b.set("training.micro_batch_size", Value::from(1), 0);
        said.push(format!("seq_length = {t} and micro_batch_size = 1 (samples packed up to mb_spec.max_tokens_per_mb tokens)"));
    }
    b.notes.push(format!("AReaL (actor on Megatron): {}", said.join(", ")));
}

/// The layout of an AReaL Megatron allocation: plan paths and sizes, and ("data", DP); None for another backend or a
/// malformed string.
fn areal_layout(backend: &str) -> Option<Vec<(&'static str, u64)>> {
    let rest = backend.trim().strip_prefix("megatron")?;
    let rest = match rest.strip_prefix('[') {
        Some(r) => r.split_once(']')?.1,
        None => rest,
    };
    let spec: String = rest.strip_prefix(':')?.chars().filter(|c| !c.is_whitespace()).collect();
    let dims = |s: &str| -> Option<Vec<(char, u64)>> {
        let mut out = Vec::new();
        let mut chars = s.chars().peekable();
        while let Some(c) = chars.next() {
            let mut n = String::new();
            while let Some(d) = chars.next_if(char::is_ascii_digit) {
                n.push(d);
            }
            out.push((c, n.parse::<u64>().ok().filter(|&n| (1..=crate::limits::MAX_PARALLEL).contains(&n))?));
        }
        Some(out)
    };
    let path = |c: char| match c {
        't' => Some("parallelism.tensor_model_parallel_size"),
        'p' => Some("parallelism.pipeline_model_parallel_size"),
        'c' => Some("parallelism.context_parallel_size"),
        'e' => Some("parallelism.expert_model_parallel_size"),
        'd' => Some("data"),
        _ => None,
    };
    let mut out: Vec<(&'static str, u64)> = vec![("parallelism.expert_tensor_parallel_size", 1)];
    let hybrid = spec.trim_start_matches('(').trim_end_matches(')');
    if let Some((attn, ffn)) = hybrid.strip_prefix("attn:").and_then(|r| r.split_once("|ffn:")) {
        for (c, n) in dims(attn)? {
            out.push((path(c).filter(|_| c != 'e')?, n));
        }
        for (c, n) in dims(ffn)? {
            match c {
                'e' => out.push(("parallelism.expert_model_parallel_size", n)),
                't' => out[0].1 = n,
                'd' | 'p' => {}
                _ => return None,
            }
        }
    } else {
        for (c, n) in dims(&spec)? {
            out.push((path(c)?, n));
        }
    }
    Some(out)
}

/// alibaba/ROLL's pipeline config names (roll/configs/base_config.py, worker_config.py @ 8eb27cc2): the model
/// (`pretrain`), GPUs per node, the sequence (`sequence_length`, else `prompt_length + response_length`), the actor's
/// training batch (`per_device_train_batch_size` micro-batches of `gradient_accumulation_steps`), its GPUs
/// (`device_mapping`, a Python list or `list(range(a, b))`), its strategy (`megatron_train`, whose strategy_config holds
/// Megatron's own names: names::WRAPPERS) and MoE-layer recompute.
const ROLL: [&str; 10] = [
    "pretrain",
    "num_gpus_per_node",
    "prompt_length",
    "response_length",
    "sequence_length",
    "actor_train.training_args.per_device_train_batch_size",
    "actor_train.training_args.gradient_accumulation_steps",
    "actor_train.device_mapping",
    "actor_train.strategy_args.strategy_name",
    "actor_train.strategy_args.strategy_config.moe_layer_recompute",
];

/// A ROLL config whose actor trains with Megatron (`strategy_name: megatron_train`): each of [`ROLL`] as ROLL means it.
/// A megatron_train worker is one GPU (worker_config.py l.278-282), so the actor's world is `len(device_mapping)`; the
/// strategy merges strategy_config over training_args into mcore_adapter's TrainingArguments (megatron_strategy.py
/// l.106-110), so the global batch is micro-batch × accumulation steps × DP; moe_layer_recompute checkpoints the MoE
/// layers (docs_roll config_guide.md: "checkpointing moe_layer"), Megatron-Core's selective recompute of `moe`.
fn roll(b: &mut Builder) {
    let get = |b: &Builder, k: &str| b.fork_args.iter().rev().find(|(p, _)| p == k).map(|(_, v)| v.trim_matches('"').to_string());
    if get(b, "actor_train.strategy_args.strategy_name").as_deref() != Some("megatron_train") {
        unread(b, &ROLL, "not a setting meshplan models (ROLL's names are read for an actor_train with strategy_name megatron_train)");
        return;
    }
    let num = |b: &Builder, k: &str| get(b, k).and_then(|v| v.parse::<u64>().ok()).filter(|&n| (1..=crate::limits::MAX_FIELD).contains(&n));
    let mut said = Vec::new();
    if let (Some(m), true) = (get(b, "pretrain"), b.hf_id.is_none()) {
        b.hf_id = Some(m);
    }
    if let Some(g) = num(b, "num_gpus_per_node").filter(|_| b.get("cluster.gpus_per_node").is_none()) {
        b.set("cluster.gpus_per_node", Value::from(g), 0);
    }
    if let Some(n) = get(b, "actor_train.device_mapping").and_then(|m| python_list_len(&m)).filter(|&n| n > 0) {
        b.world_size = Some(n);
        said.push(format!("{n} GPUs (len(device_mapping), one a worker)"));
    }
    let seq = num(b, "sequence_length").or_else(|| Some(num(b, "prompt_length")?.saturating_add(num(b, "response_length")?)));
    if let Some(s) = seq.filter(|_| b.get("training.seq_length").is_none()) {
        b.set("training.seq_length", Value::from(s), 0);
        said.push(format!("seq_length = {s} (sequence_length, else prompt_length + response_length)"));
    }
    let micro = num(b, "actor_train.training_args.per_device_train_batch_size").unwrap_or(1);
    b.set("training.micro_batch_size", Value::from(micro), 0);
    if let (Some(gas), Some(world)) = (num(b, "actor_train.training_args.gradient_accumulation_steps"), b.world_size) {
        let size = |p: &str| b.get(p).and_then(crate::fields::as_uint).unwrap_or(1).max(1);
        let replica = size("parallelism.tensor_model_parallel_size").saturating_mul(size("parallelism.pipeline_model_parallel_size")).saturating_mul(size("parallelism.context_parallel_size"));
        if world % replica == 0 {
            let g = micro.saturating_mul(gas).saturating_mul(world / replica);
            b.set("training.global_batch_size", Value::from(g), 0);
            said.push(format!("global_batch_size = {g} (per_device_train_batch_size {micro} × gradient_accumulation_steps {gas} × DP {})", world / replica));
        }
    }
    // mcore_adapter's ModelConfig turns SP off at TP 1, and on where TP > 1 meets EP > 1
    // (mcore_adapter/src/mcore_adapter/models/model_config.py l.368-373).
    let size = |b: &Builder, p: &str| b.get(p).and_then(crate::fields::as_uint).unwrap_or(1);
    let (tp, ep) = (size(b, "parallelism.tensor_model_parallel_size"), size(b, "parallelism.expert_model_parallel_size"));
    let sp = b.get("parallelism.sequence_parallel") == Some(&Value::Bool(true));
    if tp == 1 && sp {
        b.set("parallelism.sequence_parallel", Value::Bool(false), 0);
        said.push("sequence_parallel = false (TP 1: mcore_adapter turns it off)".into());
    } else if tp > 1 && ep > 1 && !sp {
        b.set("parallelism.sequence_parallel", Value::Bool(true), 0);
        said.push("sequence_parallel = true (TP > 1 with EP > 1: mcore_adapter turns it on)".into());
    }
    if get(b, "actor_train.strategy_args.strategy_config.moe_layer_recompute").as_deref() == Some("true") && b.get("training.recompute_granularity").is_none() {
        b.set("training.recompute_granularity", Value::from("selective"), 0);
        b.set("training.recompute_modules", Value::from(vec!["moe"]), 0);
        said.push("moe_layer_recompute: selective recompute of the MoE layers (recompute_modules [\"moe\"])".into());
    }
    b.notes.push(format!("ROLL (actor_train with megatron_train): {}", said.join(", ")));
}

/// The length of a Python list literal or `list(range(a, b[, step]))` as ROLL writes a device mapping; None otherwise.
fn python_list_len(text: &str) -> Option<u64> {
    let t: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    if let Some(args) = t.strip_prefix("list(range(").and_then(|r| r.strip_suffix("))")) {
        let n: Vec<i64> = args.split(',').map(|a| a.parse().ok()).collect::<Option<_>>()?;
        let (start, stop, step) = match n[..] {
            [stop] => (0, stop, 1),
            [start, stop] => (start, stop, 1),
            [start, stop, step] if step > 0 => (start, stop, step),
            _ => return None,
        };
        return u64::try_from((stop - start).max(0).div_euclid(step) + i64::from((stop - start).max(0) % step != 0)).ok();
    }
    let inner = t.strip_prefix('[')?.strip_suffix(']')?;
    Some(inner.split(',').filter(|x| !x.is_empty()).count() as u64)
}

/// NeMo-RL's switch for activation recompute.
const NEMO_RL_CHECKPOINTING: &str = "policy.megatron_cfg.activation_checkpointing";

/// NeMo-RL's `megatron_cfg.activation_checkpointing: true` (nemo_rl/models/megatron/setup.py
/// `_apply_performance_config` @ NVIDIA-NeMo/RL): recompute at `megatron_cfg.recompute_granularity` (full when
/// unset); full recomputes uniformly, one layer at a time. False (its default) recomputes nothing, whatever else says.
fn nemo_rl_checkpointing(b: &mut Builder) {
    let Some((_, on)) = b.fork_args.iter().rev().find(|(k, _)| k == NEMO_RL_CHECKPOINTING) else { return };
    if on != "true" {
        b.remove("training.recompute_granularity");
        return;
    }
    let granularity = b.get("training.recompute_granularity").and_then(Value::as_str).unwrap_or("full").to_string();
    b.set("training.recompute_granularity", Value::from(granularity.as_str()), 0);
    let mut said = format!("recompute_granularity = \"{granularity}\"");
    if granularity == "full" {
        b.set("training.recompute_method", Value::from("uniform"), 0);
        b.set("training.recompute_num_layers", Value::from(1), 0);
        said.push_str(", recompute_method = \"uniform\", recompute_num_layers = 1");
    }
    b.notes.push(format!("NeMo-RL: activation_checkpointing: true is {said}, as its Megatron set-up sets them"));
}

/// verl's names that size the actor's training batch: the prompt and response lengths (a sample is at most both), the
/// mini-batch of prompts per optimizer step, the responses per prompt, the micro-batch per GPU, and the token budget
/// per GPU of its dynamic batching.
const VERL_SIZES: [&str; 7] = [
    "data.max_prompt_length",
    "data.max_response_length",
    "actor_rollout_ref.actor.ppo_mini_batch_size",
    "actor_rollout_ref.rollout.n",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",
    "actor_rollout_ref.actor.use_dynamic_bsz",
    "actor_rollout_ref.actor.ppo_max_token_len_per_gpu",
];

/// The actor's batch from verl's sizes: a sample is a prompt and its response, so the sequence is
/// `max_prompt_length + max_response_length`; an optimizer step takes `ppo_mini_batch_size` prompts × `rollout.n`
/// responses (verl/workers/megatron_workers.py normalises the mini-batch as `ppo_mini_batch_size *= rollout.n`, then
/// per data-parallel rank); a micro-batch is `ppo_micro_batch_size_per_gpu` samples — or, with `use_dynamic_bsz`,
/// samples packed up to `ppo_max_token_len_per_gpu` tokens, sized as one sequence of that length. Said in a note.
fn verl_batch(b: &mut Builder) -> Vec<String> {
    let num = |b: &Builder, k: &str| b.verl_sizes.iter().find(|(p, _)| p == k).and_then(|(_, v)| crate::fields::as_uint(v).or_else(|| v.as_str()?.trim().parse().ok()));
    let dynamic = b.verl_sizes.iter().any(|(p, v)| p.ends_with("use_dynamic_bsz") && (v == &Value::Bool(true) || v.as_str().is_some_and(|s| s.eq_ignore_ascii_case("true"))));
    let mut said = Vec::new();
    let cap = crate::limits::MAX_FIELD;
    let (prompt, response) = (num(b, "data.max_prompt_length"), num(b, "data.max_response_length"));
    let tokens = num(b, "actor_rollout_ref.actor.ppo_max_token_len_per_gpu");
    let seq = match (dynamic, tokens, prompt, response) {
        (true, Some(t), ..) => Some((t, format!("seq_length = {t} (use_dynamic_bsz: samples packed up to ppo_max_token_len_per_gpu tokens, one micro-batch)"))),
        (_, _, Some(p), Some(r)) => Some((p.saturating_add(r), format!("seq_length = {} (max_prompt_length {p} + max_response_length {r})", p.saturating_add(r)))),
        _ => None,
    };
    if let Some((s, text)) = seq.filter(|(s, _)| *s <= cap) {
        if b.get("training.seq_length").is_none() {
            b.set("training.seq_length", Value::from(s), 5);
            said.push(text);
        }
    }
    let micro = if dynamic && tokens.is_some() { Some(1) } else { num(b, "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu") };
    if let Some(m) = micro.filter(|m| (1..=cap).contains(m)) {
        if b.get("training.micro_batch_size").is_none() {
            b.set("training.micro_batch_size", Value::from(m), 5);
            said.push(format!("micro_batch_size = {m}"));
        }
    }
    if let Some(mini) = num(b, "actor_rollout_ref.actor.ppo_mini_batch_size") {
        let n = num(b, "actor_rollout_ref.rollout.n").unwrap_or(1);
        let g = mini.saturating_mul(n);
        if (1..=cap).contains(&g) && b.get("training.global_batch_size").is_none() {
            b.set("training.global_batch_size", Value::from(g), 5);
            said.push(format!("global_batch_size = {g} (ppo_mini_batch_size {mini} prompts × rollout.n {n} responses an optimizer step)"));
        }
    }
    said
}

/// verl's Megatron engine defaults for what its trainer config leaves out (verl/trainer/config/engine/megatron.yaml @
/// volcengine/verl 0b8f32c7: sequence_parallel True — Megatron turns it off at TP 1 —, use_distributed_optimizer True,
/// override_transformer_config.attention_backend flash and moe_token_dispatcher_type alltoall), said in one note.
fn verl_defaults(b: &mut Builder) {
    let tp = b.get("parallelism.tensor_model_parallel_size").and_then(crate::fields::as_uint).unwrap_or(1);
    let mut defaults = vec![
        ("training.use_distributed_optimizer", Value::Bool(true)),
        ("training.attention_backend", Value::from("flash")),
        ("training.moe_token_dispatcher_type", Value::from("alltoall")),
    ];
    if tp > 1 {
        defaults.push(("parallelism.sequence_parallel", Value::Bool(true)));
    }
    let said = b.defaults_unset(defaults);
    let batch = verl_batch(b);
    if !batch.is_empty() {
        b.notes.push(format!("verl: the actor's training batch from its sizes: {}", batch.join(", ")));
    }
    if !said.is_empty() {
        b.notes.push(format!("verl: its Megatron engine's defaults for what the config leaves out (engine/megatron.yaml): {}", said.join(", ")));
    }
}

/// What a launch of Megatron Bridge's performance scripts (`scripts/performance/setup_experiment.py`, which runs
/// `run_script.py` on each rank) names: the flat perf recipe is found from the model recipe name, task, GPU count, GPU
/// and compute dtype (scripts/performance/utils/utils.py `_recipe_function_name` @ 067f987df03b:
/// `{model_recipe_name}_{task}_{num_gpus}gpu_{gpu}_{dtype}{_variant}_config`, dtype fp8_mx → fp8mx …).
#[derive(Default)]
struct PerfLaunch {
    recipe_name: Option<String>,
    task: Option<String>,
    num_gpus: Option<u64>,
    gpu: Option<String>,
    compute_dtype: Option<String>,
    variant: Option<String>,
    /// NeMo 2's performance scripts (`python -m scripts.performance.llm.pretrain_llama3_8b …`, NeMo
    /// scripts/performance/argument_parser.py): the model from the script's name; `-fr` its FP8 recipe.
    nemo_script: Option<String>,
    fp8_recipe: Option<String>,
}

/// One argument of the performance launcher (scripts/performance/argument_parser.py, README "Configuration Options"),
/// applied as `run_script.py` applies it (utils/overrides.py `set_user_overrides` and `_set_*_overrides`,
/// utils/utils.py `apply_argparse_overrides`); Some(words of value consumed) when `flag` is one of its.
fn perf_flag(b: &mut Builder, perf: &mut PerfLaunch, flag: &str, inline: Option<&str>, next: Option<&str>, votes: &mut Vec<(String, Value)>) -> Option<usize> {
    let key = flag.replace('_', "-");
    // Flags whose value is optional (`-et` alone means None) or absent take nothing that starts with '-'.
    let given = inline.or(next.filter(|n| !n.starts_with('-')));
    let took = usize::from(inline.is_none() && given.is_some());
    let text = given.unwrap_or("").to_string();
    let uint = |t: &str| t.parse::<u64>().ok();
    let list = |t: &str| Value::Array(t.split(',').map(str::trim).filter(|x| !x.is_empty()).map(Value::from).collect());
    // The launchers' boolean arguments (NeMo's `bool_arg`: true/1/t/yes/y; Bridge's "Pass `true` or `false`").
    let truthy = matches!(text.to_ascii_lowercase().as_str(), "true" | "1" | "t" | "yes" | "y");
    // NeMo 2's performance script by module or path: `scripts.performance.llm.pretrain_llama3_8b` / `…/pretrain_X.py`.
    let script = |w: &str| w.rsplit(['.', '/']).find(|p| p.starts_with("pretrain_")).and_then(|p| p.strip_prefix("pretrain_")).filter(|_| w.contains("performance")).map(str::to_string);
    if let Some(stem) = script(flag) {
        perf.nemo_script = Some(stem);
        return Some(0);
    }
    // `python -m scripts.performance.llm.pretrain_X`: Python's -m, not the Bridge launcher's model family.
    if flag == "-m" {
        if let Some(stem) = given.and_then(script) {
            perf.nemo_script = Some(stem);
            return Some(took);
        }
    }
    match key.as_str() {
        "-mr" | "--model-recipe-name" => perf.recipe_name = Some(text),
        "-fr" | "--fp8-recipe" => perf.fp8_recipe = Some(text.to_ascii_lowercase()),
        // NeMo 2's `-cg true`: Megatron-Core's own CUDA graphs of each layer (enable_cuda_graph).
        "-cg" | "--cuda-graphs" => {
            if truthy {
                entry(b, "model.cuda_graph_impl", Value::from("local"), votes);
            }
        }
        "-fsdp" | "--use-mcore-fsdp" => entry(b, "ddp.use_megatron_fsdp", Value::Bool(truthy), votes),
        "-m" | "--model-family-name" => {}
        "--task" => perf.task = Some(text),
        "-ng" | "--num-gpus" => perf.num_gpus = uint(&text),
        "-g" | "--gpu" => perf.gpu = Some(text.to_ascii_lowercase()),
        "-c" | "--compute-dtype" => perf.compute_dtype = Some(text.to_ascii_lowercase()),
        "-cv" | "--config-variant" => perf.variant = Some(text.to_ascii_lowercase()),
        "-gn" => b.set("cluster.gpus_per_node", yaml::scalar(&text), 0),
        // `-et` with no value: None (README: "Use `-et` (no value) for `None`").
        "-et" => entry(b, "model.expert_tensor_parallel_size", if given.is_some() { yaml::scalar(&text) } else { Value::Null }, votes),
        "-rl" | "--recompute-num-layers" => {
            entry(b, "model.recompute_granularity", Value::from("full"), votes);
            entry(b, "model.recompute_method", Value::from("block"), votes);
            entry(b, "model.recompute_num_layers", yaml::scalar(&text), votes);
        }
        "-ol" | "--activation-offload-layers" => {
            if uint(&text).is_some_and(|n| n > 0) {
                entry(b, "model.cpu_offloading", Value::Bool(true), votes);
                entry(b, "model.cpu_offloading_num_layers", yaml::scalar(&text), votes);
            }
        }
        // Bridge's --recompute_modules, NeMo 2's -rm: selective recompute of those modules.
        "--recompute-modules" | "-rm" => {
            entry(b, "model.recompute_modules", list(&text), votes);
            entry(b, "model.recompute_granularity", Value::from("selective"), votes);
        }
        "--cuda-graph-impl" => entry(b, "model.cuda_graph_impl", Value::from(text), votes),
        "--cuda-graph-scope" => entry(b, "model.cuda_graph_scope", list(&text), votes),
        "--moe-a2a-overlap" => {
            if truthy {
                entry(b, "comm_overlap.overlap_moe_expert_parallel_comm", Value::Bool(true), votes);
                entry(b, "comm_overlap.delay_wgrad_compute", Value::Bool(true), votes);
                entry(b, "model.moe_shared_expert_overlap", Value::Bool(false), votes);
            }
        }
        "--moe-flex-dispatcher-backend" => {
            entry(b, "model.moe_flex_dispatcher_backend", Value::from(text.clone()), votes);
            if matches!(text.as_str(), "deepep" | "hybridep") {
                entry(b, "model.moe_token_dispatcher_type", Value::from("flex"), votes);
            }
        }
        _ => return None,
    }
    Some(took)
}

/// NeMo 2's performance script `pretrain_STEM`: the model from the stem (as a NeMo factory), the GPU (`-g`, h100 by
/// default), the precision from `-c bf16|fp8` and `-fr ds|cs|mxfp8` (per-tensor delayed, per-tensor current, MXFP8; ds
/// by default), as NeMo's scripts/performance/argument_parser.py defines them. NeMo's recommended per-model settings
/// (its perf configs) are not meshplan's data: the factory's note says so.
/// The precision is a vote like any other launch's, decided once with the command's (`decide_precision`).
fn nemo_perf_script(b: &mut Builder, stem: &str, (gpu, dtype, fp8): (Option<&str>, Option<&str>, Option<&str>), votes: &mut Vec<(String, Value)>) {
    nemo_factory(b, stem, &[]);
    match gpu {
        Some(g) => set_gpu(b, g),
        None => b.notes.push("NeMo's performance scripts default to -g h100: give the GPU (meshplan import --gpu) if the run was not on H100".into()),
    }
    if dtype == Some("fp8") {
        entry(b, "model.fp8", Value::from("hybrid"), votes);
        let recipe = match fp8.unwrap_or("ds") {
            "cs" => "tensorwise",
            "mxfp8" => "mxfp8",
            _ => "delayed",
        };
        b.set("training.fp8_recipe", Value::from(recipe), 1);
    } else {
        entry(b, "model.bf16", Value::Bool(true), votes);
    }
}

/// The launch's GPU as the plan's (its GPUs per node, without -gn, are the GPU's node size: `Builder::cluster`).
fn set_gpu(b: &mut Builder, g: &str) {
    match presets::gpu(g).or_else(|| match presets::gpus_named(g).as_slice() {
        [one] => Some(*one),
        _ => None,
    }) {
        Some(spec) => b.set("cluster.gpu", Value::from(spec.key.clone()), 0),
        None if g.is_empty() => {}
        None => b.unknown("--gpu", &Value::from(g), "not a GPU meshplan's catalogue has, nor the GPU of a perf recipe of that name"),
    }
}

impl PerfLaunch {
    /// The flat perf recipe the launch runs, as the plan's `recipe`, with the launch's GPUs; a name Bridge has no recipe
    /// for is listed with the GPU counts it has.
    fn resolve(self, b: &mut Builder, votes: &mut Vec<(String, Value)>) {
        if let Some(n) = self.num_gpus {
            b.world_size = Some(n);
        }
        if let Some(stem) = self.nemo_script.filter(|_| self.recipe_name.is_none()) {
            nemo_perf_script(b, &stem, (self.gpu.as_deref(), self.compute_dtype.as_deref(), self.fp8_recipe.as_deref()), votes);
            return;
        }
        let Some(stem) = self.recipe_name.filter(|s| !s.is_empty()) else { return };
        let task = self.task.unwrap_or_else(|| "pretrain".into());
        let dtype = self.compute_dtype.unwrap_or_else(|| "bf16".into());
        // utils.py _PRECISION_NAME_MAP: fp8_cs → fp8cs, fp8_mx → fp8mx, …; another name loses its underscores.
        let dtype = dtype.replace('_', "");
        // The legacy v1/v2 labels select the canonical recipe (utils.py _recipe_variant_suffix).
        let variant = self.variant.filter(|v| !matches!(v.as_str(), "v1" | "v2" | "")).map_or(String::new(), |v| format!("_{v}"));
        let gpu = self.gpu.unwrap_or_default();
        let head = format!("perf.{stem}_{task}_");
        let tail = format!("gpu_{gpu}_{dtype}{variant}_config");
        let name = format!("{head}{}{tail}", self.num_gpus.map_or("?".into(), |n| n.to_string()));
        if let Some(r) = crate::recipes::find(&name) {
            // Bridge's `-g h100` is the recipe's GPU, as the recipe table names it (the H100 SXM of its perf tables).
            set_gpu(b, r.gpu.as_deref().unwrap_or(&gpu));
            b.recipe = Some(name);
            return;
        }
        // The GPU counts Bridge has this recipe for (utils.py _matching_perf_recipe_names).
        let counts: Vec<u64> = crate::recipes::all()
            .iter()
            .filter_map(|r| r.name.strip_prefix(head.as_str())?.strip_suffix(tail.as_str())?.parse::<u64>().ok())
            .collect();
        let shown = name.trim_start_matches("perf.");
        let Some(&largest) = counts.iter().max() else {
            set_gpu(b, &gpu);
            let why = format!("Megatron Bridge (pinned {}) has no flat perf recipe `{shown}` for any GPU count", crate::recipes::source_repository());
            b.unknown("--model_recipe_name", &Value::from(stem), &why);
            return;
        };
        // Bridge then takes its default recipe of that name, the one for the most GPUs (utils.py
        // _select_default_recipe_name: matches[-1], unless its _DEFAULT_GPU_COUNT_OVERRIDES names a count), and without
        // -gb weak-scales the global batch to the launch's DP (overrides.py set_post_overrides).
        let list: Vec<String> = counts.iter().map(u64::to_string).collect();
        let fallback = format!("{head}{largest}{tail}");
        set_gpu(b, crate::recipes::find(&fallback).and_then(|r| r.gpu.as_deref()).unwrap_or(&gpu));
        b.recipe = Some(fallback);
        b.notes.push(format!(
            "recipe: Megatron Bridge has no flat perf recipe `{shown}` (it has this one for {} GPUs); it starts from the {largest}-GPU one, as meshplan does, and without -gb scales that recipe's global batch with the data-parallel size — meshplan keeps the recipe's: give -gb",
            list.join(", ")
        ));
    }
}

/// NeMo 1's `megatron_gpt_config.yaml` names whose values change too, as (Bridge path, value) pairs (its plain renames
/// are `names::WRAPPERS`'); None for any other path. The activation is one word for function and gating, the
/// distributed optimizer is the optimizer's name, and the Lightning trainer's `precision` says bf16 or fp16.
// Source: NVIDIA/NeMo 1.x examples/nlp/language_modeling/conf/megatron_gpt_config.yaml (micro_batch_size,
// global_batch_size, encoder_seq_length, activations_checkpoint_granularity/method/num_layers, bias, activation:
// gelu | geglu | reglu | swiglu | squared-relu | fast-*, optim.name: distributed_fused_adam, trainer.precision 16 | bf16
// | 32 | "bf16-mixed"); nemo/collections/nlp/models/language_modeling/megatron_base_model.py maps them onto Megatron-Core's
// TransformerConfig (activations_checkpoint_* → recompute_*; *glu → gated_linear_unit).
fn nemo1(path: &str, v: &Value) -> Option<Vec<(&'static str, Value)>> {
    let word = v.as_str().map(|s| s.trim().to_ascii_lowercase()).unwrap_or_else(|| v.to_string());
    Some(match path {
        "model.activation" => {
            let base = word.trim_start_matches("fast-");
            let (func, gated) = match base {
                "swiglu" => ("silu", true),
                "geglu" => ("gelu", true),
                "reglu" => ("relu", true),
                "gelu" => ("gelu", false),
                "relu" => ("relu", false),
                "squared-relu" => ("squared_relu", false),
                _ => return None,
            };
            vec![("model.activation_func", Value::from(func)), ("model.gated_linear_unit", Value::Bool(gated))]
        }
        // NeMo's Apex distributed Adam, or Megatron-Core's distributed optimizer (`mcore_distributed_optim`, NeMo ≥ 1.23:
        // megatron_base_model.py use_mcore_dist_optim).
        "model.optim.name" => vec![("optimizer.use_distributed_optimizer", Value::Bool(word.starts_with("distributed_fused_adam") || word == "mcore_distributed_optim"))],
        // NeMo 1's training scripts copy the trainer's precision into the model config (megatron_gpt_pretraining.py).
        "trainer.precision" | "model.precision" => match word.trim_matches('"') {
            "bf16" | "bf16-mixed" | "bf16_mixed" => vec![("model.bf16", Value::Bool(true))],
            "16" | "16-mixed" | "fp16" => vec![("model.fp16", Value::Bool(true))],
            _ => return None,
        },
        _ => return None,
    })
}

/// The config path a Python override line sets: `cfg.model.x = 2` (Bridge's ConfigContainer) or `recipe.trainer.x = 2`
/// (NeMo 2's recipe object, whose paths `names::WRAPPERS` maps); None for another line.
pub(crate) fn python_override(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("cfg.").or_else(|| line.strip_prefix("recipe."))?;
    let path = rest.split('=').next()?.trim();
    (path.contains('.') || rest.starts_with("mixed_precision")).then_some(path).filter(|p| !p.contains(['(', ' ']))
}

/// NeMo 2's recipe factory: its stem names the model (the Bridge recipe of the same stem builds the same one), its call's
/// `num_nodes` / `num_gpus_per_node` size the cluster (nemo/collections/llm/recipes/*.py `pretrain_recipe(...,
/// num_nodes, num_gpus_per_node)`); NeMo's own layout and batch for the recipe are not in meshplan, so a note asks for
/// them.
fn nemo_factory(b: &mut Builder, stem: &str, args: &[(String, Option<String>)]) {
    let stem = stem.trim();
    for (k, v) in args {
        let Some(v) = v else { continue };
        match k.as_str() {
            "num_nodes" => b.set("cluster.num_nodes", yaml::scalar(v), 0),
            "num_gpus_per_node" => b.set("cluster.gpus_per_node", yaml::scalar(v), 0),
            // The run's own names, not settings.
            "name" | "dir" | "performance_mode" => {}
            other => b.unknown(&format!("--factory {stem}({other}=…)"), &yaml::scalar(v), "a NeMo recipe argument meshplan does not model"),
        }
    }
    b.recipe_model = Some(stem.to_string());
    b.notes.push(format!(
        "NeMo 2 recipe `{stem}`: read for its model only; its own layout, batch, precision and recompute are NeMo's and not in meshplan — what the command leaves out is Megatron-Core's default, so give them (trainer.strategy.*, data.*, trainer.plugins)"
    ));
}

/// A Python call's keyword arguments with their values as the text decides them ([`python::value`]): `(name, value)`,
/// the value None (listed as not evaluated) where the text gives none; a value read off a definition is said.
fn resolved(text: &str, args: &[(String, String)], b: &mut Builder) -> Vec<(String, Option<String>)> {
    let mut lookups = 0;
    args.iter()
        .map(|(k, v)| {
            // Each name is a pass over the text: a call naming many is read for its first few.
            let name = !v.starts_with(|c: char| c.is_ascii_digit() || c == '"' || c == '\'');
            lookups += usize::from(name);
            (k, v, name && lookups > python::MAX_NAME_LOOKUPS)
        })
        .map(|(k, v, over)| match (!over).then(|| python::value(text, v)).flatten() {
            Some((lit, Some(def))) => {
                b.notes.push(format!("{k}: {lit}, from `{def}` in the script"));
                (k.to_string(), Some(lit.to_string()))
            }
            Some((lit, None)) => (k.to_string(), Some(lit.to_string())),
            None => {
                b.unknown(k, &Value::from(v.as_str()), "not evaluated: the script does not give it one literal value (give it)");
                (k.to_string(), None)
            }
        })
        .collect()
}

/// Megatron Bridge's AutoBridge (its README's way in): `bridge = AutoBridge.from_hf_pretrained("org/name")` names the
/// model by its Hugging Face id, `provider = bridge.to_megatron_provider()` is the model provider — the
/// ConfigContainer's `model` — whose attributes the script then sets. Returns the providers' names.
fn auto_bridge(text: &str, b: &mut Builder) -> Vec<String> {
    if let Some(open) = python::calls(text, "from_hf_pretrained").next() {
        let first = python::call_args(text, open).unwrap_or("").split(',').next().unwrap_or("").trim();
        if !first.contains('=') {
            let id = resolved(text, &[("the Hugging Face model".into(), first.to_string())], b);
            b.hf_id = id.into_iter().next().and_then(|(_, v)| v);
        }
    }
    // `NAME = ….to_megatron_provider(…)`, at a line's start.
    text.lines()
        .filter(|l| l.contains(".to_megatron_provider("))
        .filter_map(|l| l.trim().split_once('=').map(|(lhs, _)| lhs.trim()))
        .filter(|n| !n.is_empty() && n.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_'))
        .map(str::to_string)
        .take(4)
        .collect()
}

/// `provider.x = value` lines: the model provider's field x, Bridge's `model.x`. A Python constant is read as it is;
/// a name takes the one literal the script gives it ([`resolved`], which looks up a few and lists the rest).
fn provider_lines(text: &str, providers: &[String], b: &mut Builder, votes: &mut Vec<(String, Value)>) {
    // (path, value) in the script's order, a later line winning; the names are resolved together.
    let mut set: Vec<(String, Option<Value>)> = Vec::new();
    let mut names: Vec<(String, String)> = Vec::new();
    for line in text.lines().map(str::trim) {
        let Some((lhs, rhs)) = strip_py_comment(line).split_once('=') else { continue };
        if rhs.starts_with('=') {
            continue;
        }
        let Some((var, attr)) = lhs.trim().split_once('.') else { continue };
        if !providers.iter().any(|p| p == var) || !attr.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_') {
            continue;
        }
        let (path, rhs) = (format!("model.{attr}"), rhs.trim());
        let constant = matches!(rhs, "True" | "False" | "None") || rhs.starts_with("torch.") || rhs.starts_with(['[', '-']);
        if constant {
            set.push((path, Some(python_value(rhs))));
        } else {
            names.push((path.clone(), rhs.to_string()));
            set.push((path, None));
        }
    }
    let mut literals = resolved(text, &names, b).into_iter();
    for (path, value) in set {
        match value {
            Some(v) => entry(b, &path, v, votes),
            None => {
                if let Some((_, Some(lit))) = literals.next() {
                    entry(b, &path, python_value(&lit), votes);
                }
            }
        }
    }
}

/// NeMo-Run's executors size the job a NeMo 2 script runs: `run.SlurmExecutor(nodes=…, ntasks_per_node=…,
/// gpus_per_node=…, gpus_per_task=…, torchrun_nproc_per_node=…)` and `run.LocalExecutor(ntasks_per_node=…)`. The
/// processes per node are NeMo-Run's `nproc_per_node()`: torchrun_nproc_per_node, else gpus_per_node when
/// ntasks_per_node is 1, else gpus_per_task, else ntasks_per_node (NVIDIA/NeMo-Run nemo_run/core/execution/slurm.py
/// SlurmExecutor.nnodes / nproc_per_node @ 0cd3b601dddd). Read below the recipe's own num_nodes / num_gpus_per_node.
fn nemo_run_executor(text: &str, b: &mut Builder) {
    for callee in ["SlurmExecutor", "LocalExecutor"] {
        let Some(open) = python::calls(text, callee).next() else { continue };
        let args = python::call_args(text, open).map(python::kwargs).unwrap_or_default();
        let args = resolved(text, &args, b);
        let get = |k: &str| args.iter().find(|(n, _)| n == k).and_then(|(_, v)| v.as_deref()).and_then(|v| v.parse::<u64>().ok());
        let tasks = get("ntasks_per_node");
        let nproc = get("torchrun_nproc_per_node")
            .or_else(|| get("gpus_per_node").filter(|_| tasks.unwrap_or(1) == 1))
            .or_else(|| get("gpus_per_task"))
            .or(tasks);
        let nodes = if callee == "LocalExecutor" { Some(1) } else { get("nodes") };
        if let Some(n) = nodes {
            b.set("cluster.num_nodes", Value::from(n), 1);
        }
        if let Some(g) = nproc {
            b.set("cluster.gpus_per_node", Value::from(g), 1);
        }
        return;
    }
}

/// The ConfigContainer path a `scripts/training/run_recipe.py` shortcut flag sets (its argparse help says which).
// Source: Megatron-Bridge scripts/training/run_recipe.py (-tp/--tensor_model_parallel_size … -etp, -gb, -mb, -sl).
fn run_recipe_flag(flag: &str) -> Option<&'static str> {
    Some(match flag {
        // NeMo 2's performance scripts spell the long names without "model" (--tensor_parallel_size, …).
        "-tp" | "--tensor-model-parallel-size" | "--tensor-parallel-size" => "model.tensor_model_parallel_size",
        "-pp" | "--pipeline-model-parallel-size" | "--pipeline-parallel-size" => "model.pipeline_model_parallel_size",
        "-cp" | "--context-parallel-size" => "model.context_parallel_size",
        "-vp" | "--virtual-pipeline-model-parallel-size" | "--virtual-pipeline-parallel-size" => "model.virtual_pipeline_model_parallel_size",
        "-ep" | "--expert-model-parallel-size" | "--expert-parallel-size" => "model.expert_model_parallel_size",
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
    let mut tree = yaml::parse(text);
    yaml::interpolate(&mut tree);
    if let Value::Object(root) = tree {
        for (section, v) in nemo1_saved(root, b) {
            let section = section.strip_suffix("_config").unwrap_or(&section).to_string();
            flatten(b, &section, v, &mut votes);
        }
    }
    decide_precision(b, &votes);
    wrappers(b);
}

/// NeMo 1's saved model config as its `model` section: a run's `hparams.yaml` holds it under `cfg` (ModelPT.__init__
/// `self.save_hyperparameters("cfg")`), a `.nemo` archive's `model_config.yaml` at the root, with the `nemo_version`
/// ModelPT adds (NVIDIA/NeMo nemo/core/classes/modelPT.py @ 000763d0c69e). Any other root is returned as it is.
fn nemo1_saved(mut root: serde_json::Map<String, Value>, b: &mut Builder) -> serde_json::Map<String, Value> {
    if root.contains_key("model") {
        return root;
    }
    let model = match root.remove("cfg") {
        Some(cfg @ Value::Object(_)) => {
            b.notes.push("read as NeMo 1's hparams.yaml: the model config under `cfg` (the trainer's nodes and devices are not in it)".into());
            cfg
        }
        Some(other) => {
            root.insert("cfg".into(), other);
            return root;
        }
        None if root.contains_key("nemo_version") => {
            b.notes.push("read as NeMo 1's model_config.yaml (a .nemo archive's model config; the trainer's nodes and devices are not in it)".into());
            Value::Object(std::mem::take(&mut root))
        }
        None => return root,
    };
    root.insert("model".into(), model);
    root
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
    if let Some(pairs) = nemo1(path, &v) {
        for (p, value) in pairs {
            entry(b, p, value, votes);
        }
        return;
    }
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
    if path.starts_with("actor_rollout_ref.") {
        b.verl = true;
    }
    if path == NEMO_RL_CHECKPOINTING || ROLL.contains(&path) || AREAL.contains(&path) || NEMO1_TOKENIZER.contains(&path) {
        b.fork_args.push((path.to_string(), v.to_string()));
        return;
    }
    if VERL_SIZES.contains(&path) {
        if b.verl_sizes.len() < VERL_SIZES.len() {
            b.verl_sizes.push((path.to_string(), v));
        }
        return;
    }
    // A wrapper's name for a Megatron setting (an RL framework's `actor_rollout_ref.actor.megatron.*`, its GPU counts).
    if let Some(m) = names::wrapper(path) {
        match m.as_str() {
            "--nproc-per-node" => b.set("cluster.gpus_per_node", v, 0),
            "--nnodes" => b.set("cluster.num_nodes", v, 0),
            // A Bridge path (`model.…`, `train.…`, `dataset.…`): read as Bridge's own.
            p if p.contains('.') && !p.starts_with('-') && p != path => entry(b, p, v, votes),
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
