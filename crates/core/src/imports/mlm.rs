//! Megatron-LM: a launch command or script (`torchrun … pretrain_gpt.py --flag value …`), or the `arguments` block
//! `megatron/training/arguments.py` prints at start-up (`  tensor_model_parallel_size ........ 4`). Both become
//! `--flag values` pairs read through the one mapping ([`super::names`] and the settings rows' flags).
//!
//! What Megatron-LM does when a flag is absent is what the import assumes: fp32 without --bf16/--fp16, linear biases
//! without --disable-bias-linear, tied embeddings without --untie-embeddings-and-output-weights, no query groups without
//! --group-query-attention, and each settings row's Megatron-LM default (`mlm_default`, `store_true` flags off).

use super::names::{self, Arg};
use super::builder::{Built, Builder, list_expr};
use super::{launchers, shell, yaml};
use crate::settings::{Mlm, SETTINGS, Setting, Ty};
use serde_json::Value;

/// Reads `text` into `b`.
pub(crate) fn read(text: &str, b: &mut Builder) {
    let mut gqa = false;
    if is_args_block(text) {
        arguments(args_block(text), b, &mut gqa);
    } else if let Some(pairs) = args_by_name(text) {
        arguments(pairs, b, &mut gqa);
        b.notes.push("read as Megatron-LM's arguments by name (a JSON object or a Weights & Biases config of `vars(args)`, or the printed `Namespace(…)`)".into());
    } else if is_yaml_cfg(text) {
        arguments(yaml_cfg(text), b, &mut gqa);
        b.notes.push("read as Megatron-LM's --yaml-cfg file: language_model (TransformerConfig), model_parallel (ModelParallelConfig) and the other arguments by their names".into());
    } else {
        // A quoted array item `"--fp8-format hybrid"`, or a whole command in a string (`bash -c "${TRAINING_CMD}"`), is
        // read as its words.
        let split = |w: &String| (w.starts_with("--") && w.contains(' ')) || w.contains(" --");
        let flags_yaml = yaml_of_flags(text);
        let keep = |n: &str| names::MLPERF_MARKERS.contains(&n) || names::MLPERF_VALUES.contains(&n) || names::wrapper(n).is_some() || n == "WORLD_SIZE";
        let (words, notes, env) = shell::words_env(flags_yaml.as_deref().unwrap_or(text), keep);
        b.notes.extend(notes);
        mlperf(&env, b, &mut gqa);
        let words: Vec<String> = words.into_iter().flat_map(|w| if split(&w) { w.split_whitespace().map(str::to_string).collect() } else { vec![w] }).collect();
        let words = launcher_words(words, &mut b.notes);
        // Words that are an unset variable alone (`${load_options}`): empty in the shell, or flags the text does not hold.
        let mut unset: Vec<&str> = Vec::new();
        let mut i = 0;
        while i < words.len() {
            let w = &words[i];
            i += 1;
            if unset_word(w) {
                if unset.len() < UNSET_WORDS_LISTED && !unset.contains(&w.as_str()) {
                    unset.push(w);
                }
                continue;
            }
            // The training program (`pretrain_gpt.py`, a fork's `pretrain_qwen3_next.py`), for what forks read by it.
            if w.ends_with(".py") && !b.fork_args.iter().any(|(k, _)| k == "program") {
                b.fork_args.push(("program".into(), w.rsplit('/').next().unwrap_or(w).to_string()));
            }
            // ms-swift's entry point: `megatron sft|pt|rlhf` (swift/cli/_megatron/).
            if (w == "megatron" && words.get(i).is_some_and(|n| matches!(n.as_str(), "sft" | "pt" | "rlhf"))) || w.contains("swift/cli/_megatron/") {
                b.ms_swift = true;
            }
            // A wrapper's environment word (`NPROC_PER_NODE=8 megatron sft …`).
            if let Some((flag_name, v)) = w.split_once('=').and_then(|(n, v)| names::wrapper(n).map(|f| (f, v))) {
                flag(b, &flag_name, &[v.to_string()], &mut gqa);
                continue;
            }
            if !(w.starts_with("--") && w.len() > 2) {
                continue;
            }
            let (name, inline) = match w.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (w.as_str(), None),
            };
            let mut values: Vec<String> = inline.into_iter().collect();
            if values.is_empty() {
                // A switch takes no value, and a flag's value is one word: a word that is an unset variable alone after
                // them is an argument of its own (`--bf16 ${load_options}`), not their value.
                // (Looked up only at such a word: most flags are followed by none.)
                let switch = || takes_no_value(&names::canonical_flag(name));
                // A launcher's flags end at the program it starts (`torchrun --master_port 6000 pretrain_gpt.py …`).
                while i < words.len() && !words[i].starts_with("--") && words[i] != "\n" && !words[i].ends_with(".py") {
                    if unset_word(&words[i]) && (!values.is_empty() || switch()) {
                        break;
                    }
                    values.push(words[i].clone());
                    i += 1;
                }
            }
            flag(b, name, &values, &mut gqa);
        }
        world_from_env(&env, b);
        if !unset.is_empty() {
            b.notes.push(format!(
                "not set in the text: {} — each expands to nothing or to flags meshplan cannot see, which are left out (give them)",
                unset.iter().map(|w| format!("`{w}`")).collect::<Vec<_>>().join(", ")
            ));
        }
    }
    finish(b, gqa);
}

/// An exported `WORLD_SIZE` when nothing else sizes the job: torch.distributed's `env://` initialisation, which
/// Megatron-LM uses, reads the world size from it where no launcher sets it — a `python pretrain_gpt.py` started once
/// per rank by the user's own scheduler, or a single process with `--fake-process-group` sizing memory for that world
/// (Megatron-LM PR #2280). Where torchrun or a scheduler sizes the job, theirs wins (torchrun sets WORLD_SIZE itself,
/// and a Kubeflow PyTorchJob's WORLD_SIZE counts nodes, read through `--nnodes`). A value that is no whole number of
/// TP·PP·CP replicas (a fallback such as `${WORLD_SIZE:-1}`) is not taken, said.
fn world_from_env(env: &[(String, String)], b: &mut Builder) {
    let Some((_, raw)) = env.iter().find(|(n, _)| n == "WORLD_SIZE") else { return };
    if b.world_size.is_some() || b.get("cluster.num_nodes").is_some() || b.get("cluster.gpus_per_node").is_some() {
        return;
    }
    let Some(world) = raw.trim().trim_matches(['"', '\'']).parse::<u64>().ok().filter(|w| (1..=crate::limits::MAX_PARALLEL).contains(w)) else { return };
    let size = |p: &str| b.get(p).and_then(crate::fields::as_uint).unwrap_or(1).max(1);
    let replica = size("parallelism.tensor_model_parallel_size")
        .saturating_mul(size("parallelism.pipeline_model_parallel_size"))
        .saturating_mul(size("parallelism.context_parallel_size"));
    if world % replica != 0 {
        b.notes.push(format!("WORLD_SIZE={world} in the text is not a whole number of TP·PP·CP = {replica} replicas: not taken as the world size"));
        return;
    }
    b.world_size = Some(world);
    b.notes.push(format!("cluster: {world} GPUs from WORLD_SIZE={world}, which torch.distributed reads when no launcher sets it (env:// initialisation)"));
}

/// The most unset-variable words one note names.
const UNSET_WORDS_LISTED: usize = 8;

/// A word that is one variable the shell reader left unexpanded (`$X`, `${X}`): unset in the text.
fn unset_word(w: &str) -> bool {
    let name = w.strip_prefix("${").and_then(|r| r.strip_suffix('}')).or_else(|| w.strip_prefix('$'));
    name.is_some_and(|n| !n.is_empty() && n.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_'))
}

/// Whether Megatron-LM's flag `key` takes no value (a store_true or store_false switch): a name table's or settings
/// row's switch, or one of the switches `flag` reads itself.
fn takes_no_value(key: &str) -> bool {
    const OWN_SWITCHES: [&str; 16] = [
        "--bf16", "--fp16", "--swiglu", "--squared-relu", "--quick-geglu", "--use-rotary-position-embeddings", "--no-position-embedding",
        "--recompute-activations", "--group-query-attention", "--no-check-for-nan-in-loss-and-grad", "--enable-cuda-graph",
        "--external-cuda-graph", "--moe-enable-deepep", "--checkpoint-activations", "--overlap-p2p-communication", "--deepspeed",
    ];
    OWN_SWITCHES.contains(&key)
        || super::forks::SWITCHES.contains(&key)
        || names::by_flag(key).and_then(|n| n.mlm).is_some_and(|(_, a)| matches!(a, Arg::Flag | Arg::FlagFalse))
        || names::switch_by_flag(key).is_some()
        || SETTINGS.iter().any(|row| match row.doc().mlm {
            Mlm::Flag(f) => f == key,
            Mlm::Switch(on, off) => on == Some(key) || off == Some(key),
            _ => false,
        })
}

/// An NVIDIA MLPerf Training configuration (`config_<SYSTEM>_….sh`, which only exports the run's sizes: names::WRAPPERS
/// lists them): each exported setting as the flag it stands for, before the command's own words (which win). MINIBS
/// is the samples per data-parallel rank per step (the implementations log gradient accumulation as MINIBS /
/// MICRO_BATCH_SIZE: mlcommons/training_results_v5.1 NVIDIA/benchmarks/*/implementations/*/pretrain.py), so the global
/// batch is MINIBS × DP once the world and layout are known (`finish`); FP8=True trains in FP8 (FP8_HYBRID: E4M3
/// forward and E5M2 gradients) with FP8_RECIPE, FP4=True in NVFP4's E2M1. What the configuration leaves out is the
/// implementation's own YAML and `config_common.sh`, tuned as Bridge's perf recipes are, so the plan keeps meshplan's
/// tuned defaults rather than Megatron-LM's (`imports::launcher_defaults`).
fn mlperf(env: &[(String, String)], b: &mut Builder, gqa: &mut bool) {
    if !env.iter().any(|(n, _)| names::MLPERF_MARKERS.contains(&n.as_str())) {
        return;
    }
    b.tuned_defaults = true;
    let on = |name: &str| env.iter().any(|(n, v)| n == name && matches!(v.trim().to_ascii_lowercase().as_str(), "true" | "1"));
    for (name, value) in env {
        let v = value.trim().trim_matches(['"', '\'']);
        if matches!(v, "" | "null" | "None" | "none") {
            continue;
        }
        match name.as_str() {
            "MINIBS" => b.per_replica_batch = Some(v.to_string()),
            "FP8" if on("FP8") => flag(b, "--fp8-format", &[if on("FP8_HYBRID") { "hybrid" } else { "e4m3" }.to_string()], gqa),
            "FP8_RECIPE" if on("FP8") => flag(b, "--fp8-recipe", &[v.to_string()], gqa),
            "FP4" if on("FP4") => flag(b, "--fp4-format", &["e2m1".to_string()], gqa),
            _ => {
                if let Some(f) = names::wrapper(name).filter(|f| f.starts_with("--")) {
                    flag(b, &f, &[v.to_string()], gqa);
                }
            }
        }
    }
    b.notes.push("read as an NVIDIA MLPerf Training configuration: its exported sizes (DGXNNODES, DGXNGPU, TENSOR_MODEL_PARALLEL, …, MINIBS per data-parallel rank)".into());
}

/// The global batch an MLPerf configuration implies: MINIBS samples per data-parallel rank, DP = world / (TP·PP·CP).
fn per_replica_batch(b: &mut Builder) {
    let Some(raw) = b.per_replica_batch.take() else { return };
    if b.get("training.global_batch_size").is_some() {
        return;
    }
    let uint = |b: &Builder, p: &str| b.get(p).and_then(crate::fields::as_uint);
    let size = |b: &Builder, p: &str| uint(b, p).unwrap_or(1).max(1);
    let Some(minibs) = raw.parse::<u64>().ok().filter(|&n| n > 0) else {
        b.unknown("MINIBS", &Value::from(raw.as_str()), "not a positive whole number of samples");
        return;
    };
    let (Some(nodes), Some(gpn)) = (uint(b, "cluster.num_nodes"), uint(b, "cluster.gpus_per_node")) else {
        b.unknown("MINIBS", &Value::from(minibs), "the global batch is MINIBS × DP, and the text gives no DGXNNODES and DGXNGPU (give global_batch_size)");
        return;
    };
    let model_parallel = size(b, "parallelism.tensor_model_parallel_size")
        .saturating_mul(size(b, "parallelism.pipeline_model_parallel_size"))
        .saturating_mul(size(b, "parallelism.context_parallel_size"));
    let world = nodes.saturating_mul(gpn);
    if world % model_parallel != 0 {
        b.unknown("MINIBS", &Value::from(minibs), &format!("{world} GPUs are not a whole number of TP·PP·CP = {model_parallel} replicas"));
        return;
    }
    let dp = world / model_parallel;
    let gbs = minibs.saturating_mul(dp);
    b.set("training.global_batch_size", Value::from(gbs), 0);
    b.notes.push(format!("global_batch_size: {gbs} = MINIBS {minibs} × DP {dp} ({world} GPUs / TP·PP·CP {model_parallel}), as NVIDIA's MLPerf implementations size it"));
}

/// The words of the launchers that start the training program (`srun -N 4 …`, `mpirun -np 16 …`, `deepspeed …`: the
/// [`launchers`] table) up to the program: their sizing options in the long form (`--nodes=4`, `--ntasks=16`), the rest
/// dropped and named in a note. The program is the first word that starts one (python, a `.py` or `.sh` file, torchrun,
/// bash) or a flag the training program takes (`mpirun -np 8 ./pretrain --num-layers …`). Where torchrun's agents are
/// the tasks (torch.distributed.run / launch too) a task count says nothing of the GPUs: tasks / tasks-per-node are the
/// nodes, and both are dropped.
fn launcher_words(words: Vec<String>, notes: &mut Vec<String>) -> Vec<String> {
    let ends = |w: &str| {
        let base = w.rsplit('/').next().unwrap_or(w);
        w == "\n" || w.ends_with(".py") || w.ends_with(".sh") || base.starts_with("python") || matches!(base, "torchrun" | "bash" | "sh")
            || (w.starts_with("--") && is_training_flag(w))
    };
    let mut out = Vec::with_capacity(words.len());
    let mut i = 0;
    while i < words.len() {
        let launcher = launchers::launcher(&words[i]);
        out.push(words[i].clone());
        i += 1;
        if let Some(launcher) = launcher {
            let name = words[i - 1].rsplit('/').next().unwrap_or("");
            let end = (i..words.len()).find(|&j| ends(&words[j])).unwrap_or(words.len());
            let (kept, dropped) = launchers::sizing(launcher, &words[i..end]);
            out.extend(kept);
            if !dropped.is_empty() && notes.len() < crate::limits::MAX_UNRECOGNIZED {
                notes.push(format!("{name}'s own options ({}) start the job and size nothing meshplan plans", dropped.join(", ")));
            }
            i = end;
        }
    }
    let agents = out.iter().any(|w| w == "torchrun" || w.contains("torch.distributed.run") || w.contains("torch.distributed.launch"));
    if agents {
        let count = |p: &str| out.iter().find_map(|w| w.strip_prefix(p)?.parse::<u64>().ok());
        if let (None, Some(tasks), Some(per_node)) = (count("--nodes="), count("--ntasks="), count("--ntasks-per-node=")) {
            if per_node > 0 && tasks % per_node == 0 {
                out.push(format!("--nodes={}", tasks / per_node));
            }
        }
        out.retain(|w| !w.starts_with("--ntasks=") && !w.starts_with("--ntasks-per-node="));
    }
    out
}

/// Whether `w` (`--flag` or `--flag=value`) is a flag Megatron-LM's training program takes (a settings row's, a name
/// table's, or one the reader handles itself).
fn is_training_flag(w: &str) -> bool {
    let key = names::canonical_flag(w.split_once('=').map_or(w, |(n, _)| n));
    names::by_flag(&key).is_some() || names::switch_by_flag(&key).is_some() || setting(&key, &[]).is_some()
}

/// Megatron-LM's defaults for what the flags left out (model fields only when the input gives a model).
fn finish(b: &mut Builder, gqa: bool) {
    per_replica_batch(b);
    if !gqa {
        if let Some(v) = b.remove("model.num_query_groups") {
            b.notes.push(format!("--num-query-groups {v} without --group-query-attention: Megatron-LM ignores it (one query group per head)"));
        }
    }
    let has_model = b.get("model.num_layers").is_some() || b.get("model.hidden_size").is_some();
    if has_model {
        // megatron/training/arguments.py defaults: add_bias_linear True, untied off, no gated linear unit, GeLU;
        // --position-embedding-type learned_absolute (arguments.py l.2397); and TransformerConfig's, from which
        // Megatron-LM builds the other flags (ArgumentGroupFactory, l.2373): LayerNorm, no QK layernorm
        // (transformer_config.py l.256, l.259), and a QKV bias exactly when the linear layers have one (add_qkv_bias
        // False, l.218, which validate_args sets True with add_bias_linear, arguments.py l.1609-1610). Stated, so that a
        // preset matched by shape cannot lend the run its own (OLMo 2's QK layernorm to a script that never asks for it).
        b.set("model.add_bias_linear", Value::Bool(true), 5);
        b.set("model.share_embeddings_and_output_weights", Value::Bool(true), 5);
        b.set("model.gated_linear_unit", Value::Bool(false), 5);
        b.set("model.activation_func", Value::from("gelu"), 5);
        b.set("model.position_embedding_type", Value::from("learned_absolute"), 5);
        b.set("model.normalization", Value::from("LayerNorm"), 5);
        b.set("model.qk_layernorm", Value::Bool(false), 5);
        let bias = b.get("model.add_bias_linear").cloned().unwrap_or(Value::Bool(true));
        b.set("model.add_qkv_bias", bias, 5);
    }
    if b.ms_swift {
        swift_defaults(b);
    }
    super::forks::finish(b);
    if b.precision.is_none() {
        // Neither --bf16 nor --fp16: Megatron-LM trains in fp32.
        b.precision = Some("fp32");
    }
    validate_args(b, has_model);
}

/// ms-swift's own defaults for what a `megatron sft|pt|rlhf` command leaves out: its MegatronArguments dataclass sets
/// them before Megatron-LM parses anything (swift/megatron/argument/megatron_args.py @ modelscope/ms-swift
/// 00840e65: use_distributed_optimizer True, recompute_granularity "selective" with recompute_modules ["core_attn"],
/// moe_token_dispatcher_type "alltoall", attention_backend "flash", expert_tensor_parallel_size 1, micro_batch_size 1,
/// global_batch_size 16; bf16 / fp16 from the model's torch_dtype, `_init_mixed_precision`). Each is said in one note.
fn swift_defaults(b: &mut Builder) {
    let defaults = vec![
        ("training.use_distributed_optimizer", Value::Bool(true)),
        ("training.recompute_granularity", Value::from("selective")),
        ("training.recompute_modules", Value::from(vec!["core_attn"])),
        ("training.moe_token_dispatcher_type", Value::from("alltoall")),
        ("training.attention_backend", Value::from("flash")),
        ("parallelism.expert_tensor_parallel_size", Value::from(1)),
        ("training.micro_batch_size", Value::from(1)),
        ("training.global_batch_size", Value::from(16)),
    ];
    // The modules are selective recompute's: under full recompute they do nothing.
    let full = b.get("training.recompute_granularity").and_then(Value::as_str) == Some("full");
    let defaults = defaults.into_iter().filter(|(path, _)| !(full && *path == "training.recompute_modules")).collect();
    let mut said = b.defaults_unset(defaults);
    // MegatronArguments' lora_rank: 8 (megatron_args.py l.465 @ ms-swift 3602360a), where Bridge's LoRA.dim is 32.
    if b.get("training.peft").and_then(Value::as_str) == Some("lora") {
        said.extend(b.defaults_unset(vec![("training.lora_dim", Value::from(8))]));
    }
    if b.precision.is_none() {
        b.precision = Some("bf16");
        said.push("bf16 (ms-swift takes the model's torch_dtype, bfloat16 in the config.json of the models it trains; give --torch_dtype otherwise)".into());
    }
    if !said.is_empty() {
        b.notes.push(format!("ms-swift (`megatron sft|pt|rlhf`): its own defaults for what the command leaves out: {}", said.join(", ")));
    }
}

/// What Megatron-LM's `validate_args` derives or changes (megatron/training/arguments.py @ NVIDIA/Megatron-LM
/// d98e8a64dd), each said in a note: the imported plan is the run Megatron-LM launches.
fn validate_args(b: &mut Builder, has_model: bool) {
    let tp = b.get("parallelism.tensor_model_parallel_size").and_then(crate::fields::as_uint).unwrap_or(1);
    data_parallel(b, tp);
    // arguments.py:1433-1439: at TP 1, "Disabling sequence parallelism because tensor model parallelism is disabled".
    if tp == 1 && b.get("parallelism.sequence_parallel") == Some(&Value::Bool(true)) {
        b.set("parallelism.sequence_parallel", Value::Bool(false), 0);
        b.notes.push("`--sequence-parallel` ignored: TP = 1, as Megatron-LM does (validate_args turns it off with a warning); Megatron-Core's TransformerConfig alone would reject it (sp-requires-tp)".into());
    }
    // arguments.py:1950-1951: --cpu-offloading-num-layers above 0 turns cpu_offloading on (it has no flag of its own).
    let offload = b.get("training.cpu_offloading_num_layers").and_then(crate::fields::as_uint).unwrap_or(0);
    if offload > 0 && b.get("training.cpu_offloading").is_none() {
        b.set("training.cpu_offloading", Value::Bool(true), 0);
        b.notes.push(format!("cpu_offloading: on, as Megatron-LM's validate_args sets it for --cpu-offloading-num-layers {offload}"));
    }
    vpp_from_layers(b);
    zero_stage(b);
    if !has_model {
        return;
    }
    let hidden = b.get("model.hidden_size").and_then(crate::fields::as_uint);
    // arguments.py:1320-1327: no --ffn-hidden-size under --swiglu is int((4·h·2/3)/64)·64 = ⌊h/24⌋·64 (8h/192 exactly).
    if let (None, Some(h), Some(Value::Bool(true))) = (b.get("model.ffn_hidden_size"), hidden, b.get("model.gated_linear_unit")) {
        let ffn = h / 24 * 64;
        b.set("model.ffn_hidden_size", Value::from(ffn), 5);
        b.notes.push(format!("ffn_hidden_size: {ffn}, as Megatron-LM derives it under --swiglu without --ffn-hidden-size: int((4·{h}·2/3)/64)·64"));
    }
    vocabulary(b);
}

/// Megatron-DeepSpeed (microsoft/Megatron-DeepSpeed megatron/arguments.py `_add_zero_args`: --zero-stage, default 1,
/// which its scripts also write into the ds_config's zero_optimization.stage, the value DeepSpeed runs), with
/// `--deepspeed` on: ZeRO-1 shards the optimizer state over data parallelism, ZeRO-2 the gradients too, ZeRO-3 the
/// parameters too — sized as Megatron-Core's distributed optimizer and Megatron-FSDP's optim_grads /
/// optim_grads_params, which shard the same. Without DeepSpeed the stage does nothing (and every Megatron-DeepSpeed
/// argument dump prints its default).
fn zero_stage(b: &mut Builder) {
    let Some(raw) = b.zero_stage.take() else { return };
    if !b.deepspeed {
        return;
    }
    let stage = raw.trim_end_matches(".0");
    // (Megatron-FSDP's sharding strategy, or none: the distributed optimizer), as what.
    let (strategy, as_what) = match stage {
        "1" => (None, "the distributed optimizer"),
        "2" => (Some("optim_grads"), "Megatron-FSDP optim_grads"),
        "3" => (Some("optim_grads_params"), "Megatron-FSDP optim_grads_params"),
        "0" => return,
        _ => return b.unknown("--zero-stage", &Value::from(raw.as_str()), "not a ZeRO stage (0-3)"),
    };
    match strategy {
        None => b.set("training.use_distributed_optimizer", Value::Bool(true), 1),
        Some(s) => {
            b.set("training.use_megatron_fsdp", Value::Bool(true), 1);
            b.set("training.data_parallel_sharding_strategy", Value::from(s), 1);
        }
    }
    b.notes.push(format!(
        "--zero-stage {stage} with --deepspeed is Megatron-DeepSpeed's DeepSpeed ZeRO stage (the ds_config's zero_optimization.stage is what runs): sized as {as_what}, which shards the same state over data parallelism; DeepSpeed's own buffers and timing are not modelled"
    ));
}

/// `--num-layers-per-virtual-pipeline-stage N`: Megatron-LM's validate_args sets virtual_pipeline_model_parallel_size
/// to the layers per pipeline stage over N (the layers counting one more for each of
/// --account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split), and None when that is 1
/// (megatron/training/arguments.py:953-979 @ d98e8a64dd). An explicit virtual size (the argument dump prints the derived
/// one beside it) or a layout string wins; a size that does not divide is listed as not read, with Megatron-LM's
/// assertion.
fn vpp_from_layers(b: &mut Builder) {
    let Some(raw) = b.layers_per_virtual_stage.take() else { return };
    let flag = "--num-layers-per-virtual-pipeline-stage";
    let explicit = ["parallelism.virtual_pipeline_model_parallel_size", "parallelism.pipeline_model_parallel_layout"];
    if explicit.iter().any(|p| b.get(p).is_some_and(|v| !v.is_null())) {
        return;
    }
    let uint = |b: &Builder, p: &str| b.get(p).and_then(crate::fields::as_uint);
    let Some(per_chunk) = raw.parse::<u64>().ok().filter(|&n| n > 0) else {
        b.unknown(flag, &Value::from(raw.as_str()), "not a positive whole number of layers");
        return;
    };
    let (Some(layers), pp) = (uint(b, "model.num_layers"), uint(b, "parallelism.pipeline_model_parallel_size").unwrap_or(1).max(1)) else {
        b.unknown(flag, &Value::from(per_chunk), "the input gives no --num-layers to divide (give virtual_pipeline_model_parallel_size)");
        return;
    };
    let on = |b: &Builder, p: &str| b.get(p) == Some(&Value::Bool(true));
    // Saturating: the layers are not validated yet (the plan's own check reports an absurd count).
    let counted = layers
        .saturating_add(u64::from(on(b, "parallelism.account_for_embedding_in_pipeline_split")))
        .saturating_add(u64::from(on(b, "parallelism.account_for_loss_in_pipeline_split")));
    if counted % pp != 0 || (counted / pp) % per_chunk != 0 {
        b.unknown(
            flag,
            &Value::from(per_chunk),
            &format!("{counted} layers over PP {pp} is not a whole number of {per_chunk}-layer chunks: Megatron-LM's validate_args stops there"),
        );
        return;
    }
    let vpp = counted / pp / per_chunk;
    if vpp > 1 {
        b.set("parallelism.virtual_pipeline_model_parallel_size", Value::from(vpp), 0);
    }
    b.notes.push(format!(
        "virtual_pipeline_model_parallel_size: {} from {flag} {per_chunk} ({counted} layers / PP {pp} / {per_chunk}), as Megatron-LM's validate_args derives it",
        if vpp > 1 { vpp.to_string() } else { "none (1 chunk per stage)".into() }
    ));
}

/// The vocabulary Megatron-LM builds: `--vocab-size`, else Pai-Megatron-Patch's `--padded-vocab-size`, else the
/// tokenizer's (data/tokenizers.json); Megatron-LM pads it to a multiple of make_vocab_size_divisible_by·TP
/// (megatron/training/vocab_utils.py calculate_padded_vocab_size), as meshplan does.
fn vocabulary(b: &mut Builder) {
    if b.get("model.vocab_size").is_some() {
        return;
    }
    let arg = |b: &Builder, f: &str| b.tokenizer.iter().rev().find(|(k, _)| k == f).map(|(_, v)| v.clone());
    if let Some(n) = arg(b, "--padded-vocab-size").and_then(|v| v.parse::<u64>().ok()) {
        b.set("model.vocab_size", Value::from(n), 1);
        b.notes.push(format!("vocab_size: {n} from --padded-vocab-size"));
        return;
    }
    let (ty, model, file) = (arg(b, "--tokenizer-type"), arg(b, "--tokenizer-model"), arg(b, "--vocab-file"));
    if let Some((t, by)) = super::tokenizers::find(ty.as_deref(), model.as_deref(), file.as_deref()) {
        b.set("model.vocab_size", Value::from(t.vocab_size), 1);
        b.notes.push(format!(
            "vocab_size: {} from {by}: the {} tokenizer ({}); Megatron-LM pads it to a multiple of make_vocab_size_divisible_by·TP",
            t.vocab_size, t.name, t.source
        ));
    }
}

/// Megatron-LM's arguments kept by their names outside a log: a JSON object of `vars(args)` (as scripts save it), or
/// the Weights & Biases run config Megatron-LM's logger writes from them (megatron/training/global_vars.py
/// `_set_wandb_writer`: `wandb.init(config=vars(args))`; W&B's config.yaml wraps each as `name: {desc, value}`), as
/// (name, value) pairs spelled as the `arguments` block prints them; None for another text (a plan file, whose keys
/// are sections).
pub(crate) fn args_by_name(text: &str) -> Option<Vec<(String, String)>> {
    let t = text.trim_start();
    if let Some(pairs) = namespace(text) {
        return Some(pairs);
    }
    let root = if t.starts_with('{') {
        serde_json::from_str::<Value>(t).ok()?
    } else if text.lines().any(|l| l.starts_with("wandb_version:")) {
        yaml::parse(text)
    } else {
        return None;
    };
    let Value::Object(map) = root else { return None };
    // Two of the arguments every Megatron-LM run has, and none of a plan file's sections.
    let sections = ["model", "cluster", "parallelism", "training", "recipe"];
    if map.keys().any(|k| sections.contains(&k.as_str())) || !names_a_run(map.keys().map(String::as_str)) {
        return None;
    }
    let pairs = map.into_iter().filter(|(name, _)| name != "wandb_version").filter_map(|(name, v)| {
        // W&B's `{desc, value}` wrapper; a nested object (W&B's own `_wandb`) is no argument.
        let v = match v {
            Value::Object(mut o) => match o.remove("value") {
                Some(Value::Object(_)) | None => return None,
                Some(inner) => inner,
            },
            v => v,
        };
        let value = match v {
            Value::Null => "None".to_string(),
            Value::Bool(true) => "True".to_string(),
            Value::Bool(false) => "False".to_string(),
            Value::String(s) => s,
            other => other.to_string(),
        };
        Some((name, value))
    });
    Some(pairs.collect())
}

/// Whether argument names include two of the arguments every Megatron-LM run has (so a text of them is a run's
/// arguments, not another object's).
fn names_a_run<'a>(names: impl Iterator<Item = &'a str>) -> bool {
    const EVERY_RUN: [&str; 5] = ["num_layers", "hidden_size", "tensor_model_parallel_size", "micro_batch_size", "seq_length"];
    names.filter(|n| EVERY_RUN.contains(n)).take(2).count() == 2
}

/// Megatron-LM's arguments as Python prints the `argparse.Namespace` (`Namespace(num_layers=32, bf16=True, …)`): what
/// `print(args)` shows, and what a checkpoint holds (megatron/training/checkpointing.py l.1571 `state_dict['args'] =
/// args`, printed after `torch.load`). Each `name=value` at the top level is an argument, its value spelled as the
/// `arguments` block prints it: a quoted string unquoted, an enum's repr `<AttnBackend.auto: 5>` as `AttnBackend.auto`,
/// everything else as written. None unless two of the arguments every run has are there.
fn namespace(text: &str) -> Option<Vec<(String, String)>> {
    namespace_found(text).map(|(_, pairs)| pairs)
}

/// Where the first of (at most 16) `Namespace(` that holds a run's arguments starts, and its arguments: prose before it
/// may name the word. Each is read over at most [`MAX_NAMESPACE_BYTES`].
fn namespace_found(text: &str) -> Option<(usize, Vec<(String, String)>)> {
    text.match_indices("Namespace(").take(16).find_map(|(i, w)| namespace_at(&text[i + w.len()..]).map(|p| (i, p)))
}

/// The most bytes one `Namespace(` is read over: Megatron-LM's ~500 arguments print in about 30 KB.
const MAX_NAMESPACE_BYTES: usize = 256 * 1024;

fn namespace_at(body: &str) -> Option<Vec<(String, String)>> {
    let body = crate::limits::prefix(body, MAX_NAMESPACE_BYTES);
    let mut pairs = Vec::new();
    let (mut depth, mut quote, mut escaped) = (0usize, None::<char>, false);
    let mut item = 0;
    let close = |from: usize, to: usize, pairs: &mut Vec<(String, String)>| {
        let Some((name, value)) = body[from..to].split_once('=') else { return };
        let name = name.trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return;
        }
        let v = value.trim();
        let unquoted = ['\'', '"'].iter().find_map(|q| v.strip_prefix(*q).and_then(|x| x.strip_suffix(*q)));
        let v = match unquoted {
            Some(inner) => inner.to_string(),
            // `<AttnBackend.auto: 5>` → `AttnBackend.auto`.
            None if v.starts_with('<') && v.ends_with('>') => v[1..v.len() - 1].split(':').next().unwrap_or("").trim().to_string(),
            None => v.to_string(),
        };
        pairs.push((name.to_string(), v));
    };
    for (i, c) in body.char_indices() {
        if let Some(q) = quote {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                _ if c == q => quote = None,
                _ => {}
            }
            continue;
        }
        match c {
            '\'' | '"' => quote = Some(c),
            '(' | '[' | '{' | '<' => depth += 1,
            ')' if depth == 0 => {
                close(item, i, &mut pairs);
                break;
            }
            ')' | ']' | '}' | '>' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                close(item, i, &mut pairs);
                item = i + 1;
            }
            _ => {}
        }
    }
    names_a_run(pairs.iter().map(|(n, _)| n.as_str())).then_some(pairs)
}

/// Whether `text` is Megatron-LM's `--yaml-cfg` file (megatron/training/yaml_arguments.py, examples/gpt3/gpt_config.yaml):
/// the TransformerConfig's fields under `language_model:`, the ModelParallelConfig's under `model_parallel:`.
pub(crate) fn is_yaml_cfg(text: &str) -> bool {
    let root = |key: &str| text.lines().any(|l| l.trim_end() == key);
    root("language_model:") && root("model_parallel:")
}

/// A `--yaml-cfg` file as the arguments it amounts to: yaml_arguments.py copies `model_parallel`'s and
/// `language_model`'s fields onto the arguments (validate_yaml) and keeps every other key as the argument of that
/// name, so each `name: value` line, at any depth, is the argument `name`.
fn yaml_cfg(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let t = line.split(" #").next().unwrap_or("").trim();
        let Some((name, value)) = t.split_once(':').filter(|(n, _)| !n.is_empty() && !n.starts_with('#') && !n.contains(char::is_whitespace)) else { continue };
        let value = value.trim();
        if value.is_empty() {
            continue;
        }
        let value = if value == "null" { "None" } else { value.trim_matches('"').trim_matches('\'') };
        out.push((name.to_string(), value.to_string()));
    }
    out
}

/// YAML whose keys are Megatron-LM flags (`--tensor-model-parallel-size: 2`, as Megatron-LM's functional tests'
/// model_config.yaml and MoE model zoos keep them) as a command line: `--flag value`, `--flag` for true, nothing for
/// false; None when the text has no such key.
fn yaml_of_flags(text: &str) -> Option<String> {
    let mut out = String::new();
    let mut any = false;
    for line in text.lines() {
        let t = line.trim();
        let Some((k, v)) = t.strip_prefix("--").and_then(|r| r.split_once(':')).filter(|(k, _)| !k.is_empty() && !k.contains(char::is_whitespace)) else {
            continue;
        };
        any = true;
        let v = v.split(" #").next().unwrap_or("").trim().trim_matches('"').trim_matches('\'');
        match v {
            "true" | "True" => out.push_str(&format!("--{k}\n")),
            "false" | "False" | "null" | "" => {}
            v => out.push_str(&format!("--{k} '{}'\n", v.replace('\'', ""))),
        }
    }
    any.then_some(out)
}

/// Words a wrapper or fork adds to Megatron-LM's: the checkpoint `--load` names (kept as a model name, and read on),
/// ms-swift's `--torch_dtype`. True when the word is read whole.
fn wrapper_word(b: &mut Builder, key: &str, values: &[String]) -> bool {
    if key == "--load" {
        b.load_path = values.first().cloned();
    }
    // ms-swift's `--torch_dtype`, from which it sets --bf16 / --fp16 (swift/llm/argument/base_args/model_args.py
    // _init_mixed_precision, called by MegatronArguments._init_mixed_precision).
    if key == "--torch-dtype" {
        let dtype = values.first().and_then(|v| super::builder::dtype_name(&v.to_ascii_lowercase()));
        if let Some(p) = dtype.filter(|p| matches!(*p, "bf16" | "fp16" | "fp32")) {
            b.precision.get_or_insert(p);
            return true;
        }
    }
    false
}

/// Flags of Megatron-LM's forks and of its newer model switches that `flag`'s table does not hold. True when read.
fn fork_flag(b: &mut Builder, key: &str, values: &[String], gqa: &mut bool) -> bool {
    let first = values.first().map(String::as_str).unwrap_or("");
    match key {
        // A gated MLP of quick-GELU (megatron/training/argument_utils.py:323-325 @ d98e8a64dd: gated_linear_unit True,
        // activation quick_gelu): sized as a gated GELU, which has its shapes.
        "--quick-geglu" => {
            b.set("model.gated_linear_unit", Value::Bool(true), 0);
            b.set("model.activation_func", Value::from("gelu"), 0);
            b.notes.push("--quick-geglu: a gated MLP of quick-GELU, sized as gated GELU (the same shapes)".into());
        }
        // Megatron-DeepSpeed's grouped-query attention: the key-value heads, GQA whenever they are fewer than the heads
        // (microsoft/Megatron-DeepSpeed megatron/arguments.py --num-key-value-heads, default the attention heads).
        "--num-key-value-heads" => match first.parse::<u64>() {
            Ok(n) => {
                b.set("model.num_query_groups", Value::from(n), 0);
                *gqa = true;
            }
            Err(_) => b.unknown(key, &Value::from(first), "not a whole number of key-value heads"),
        },
        // Megatron-DeepSpeed's expert parallelism (megatron/arguments.py --moe-expert-parallel-size, default 1).
        "--moe-expert-parallel-size" => flag(b, "--expert-model-parallel-size", values, gqa),
        _ => return false,
    }
    true
}

/// One `--flag values` pair.
fn flag(b: &mut Builder, raw: &str, values: &[String], gqa: &mut bool) {
    let mut key = names::canonical_flag(raw);
    // A wrapper's switch for a setting Megatron-LM has no flag for (`--train_type lora`, `--lora_rank 8`).
    if let Some(path) = names::wrapper_setting(&key) {
        b.wrapper_setting(&key, path, values.first().map(String::as_str).unwrap_or(""));
        return;
    }
    // A wrapper's name for a Megatron argument (`--max_length` → `--seq-length`), or a Hugging Face id.
    match names::wrapper(&key) {
        Some(p) if p == "model.hf_model_id" => {
            b.hf_id = values.first().cloned();
            return;
        }
        Some(f) => key = f,
        None => {}
    }
    if wrapper_word(b, &key, values) {
        return;
    }
    if launch_only(b, &key) {
        return;
    }
    // A value the text does not know (an unset variable or parameter, a command's output) is not guessed.
    if let Some(v) = values.iter().find(|v| v.contains('$') || v.contains('`')) {
        b.unknown(&key, &Value::from(values.join(" ")), &format!("not evaluated: `{v}` is not set in the text (give it)"));
        return;
    }
    let first = values.first().map(String::as_str).unwrap_or("");
    if cluster_flag(b, &key, first) {
        return;
    }
    // Wrappers pass store_true flags with a value (`--sequence_parallel true`); `false` leaves the flag off.
    let off = matches!(first, "false" | "False");
    if fork_flag(b, &key, values, gqa) || super::forks::word(b, &key, values) {
        return;
    }
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
        "--group-query-attention" => *gqa = true,

        "--tokenizer-type" | "--tokenizer-model" | "--vocab-file" | "--padded-vocab-size" => b.tokenizer.push((key.clone(), first.to_string())),
        "--merge-file" => {}
        // validate_args derives the virtual pipeline size from it once the layers and PP are known (see vpp_from_layers).
        "--num-layers-per-virtual-pipeline-stage" => b.layers_per_virtual_stage = Some(first.to_string()),
        "--swiglu" => {
            b.set("model.gated_linear_unit", Value::Bool(true), 0);
            b.set("model.activation_func", Value::from("silu"), 0);
        }
        "--squared-relu" => b.set("model.activation_func", Value::from("squared_relu"), 0),
        "--use-rotary-position-embeddings" => b.set("model.position_embedding_type", Value::from("rope"), 0),
        "--no-position-embedding" => b.set("model.position_embedding_type", Value::from("none"), 1),
        "--recompute-activations" => b.set("training.recompute_granularity", Value::from("selective"), 1),
        // Deprecated spellings today's Megatron-LM still takes and rewrites in validate_args (arguments.py:611-640 @
        // d98e8a64dd): --cuda-graph-scope (hidden, dest cuda_graph_scope_deprecated) becomes --cuda-graph-modules,
        // --enable-cuda-graph cuda_graph_impl local, --external-cuda-graph transformer_engine; and TransformerConfig's
        // moe_enable_deepep the flex dispatcher's DeepEP backend (transformer_config.py __post_init__).
        "--cuda-graph-scope" => {
            flag(b, "--cuda-graph-modules", values, gqa);
            b.notes.push("--cuda-graph-scope is deprecated: read as --cuda-graph-modules, as Megatron-LM copies it (with a warning)".into());
        }
        "--enable-cuda-graph" | "--external-cuda-graph" if !off => {
            let imp = if key == "--enable-cuda-graph" { "local" } else { "transformer_engine" };
            flag(b, "--cuda-graph-impl", &[imp.to_string()], gqa);
            b.notes.push(format!("{key} is deprecated: read as --cuda-graph-impl {imp}, as Megatron-LM sets it (with a warning)"));
        }
        "--moe-enable-deepep" if !off => {
            flag(b, "--moe-flex-dispatcher-backend", &["deepep".to_string()], gqa);
            b.notes.push("--moe-enable-deepep is deprecated: read as --moe-flex-dispatcher-backend deepep, as Megatron-Core sets it (it also needs --moe-token-dispatcher-type flex)".into());
        }
        // validate_args: without --seq-length the sequence is --encoder-seq-length (arguments.py:1346-1351).
        "--encoder-seq-length" => b.set("training.seq_length", yaml::scalar(first), 1),
        // Megatron-LM's flags before 2021, which today's validate_args stops on (arguments.py:591-605): read as what
        // the Megatron-LM that took them did, with a note — as --overlap-p2p-communication above.
        "--checkpoint-activations" if !off => {
            b.set("training.recompute_granularity", Value::from("full"), 1);
            b.set("training.recompute_method", Value::from("uniform"), 1);
            b.set("training.recompute_num_layers", Value::from(1), 2);
            b.notes.push("--checkpoint-activations is Megatron-LM's flag from before 2021 (each layer's activations recomputed: read as full, uniform, --checkpoint-num-layers of them, 1 by default); today's Megatron-LM exits on it: use --recompute-granularity full --recompute-method uniform".into());
        }
        "--checkpoint-num-layers" => b.set("training.recompute_num_layers", yaml::scalar(first), 1),
        // Megatron-DeepSpeed's ZeRO stage and DeepSpeed switch: read once every flag is (`zero_stage`).
        "--zero-stage" => b.zero_stage = Some(first.to_string()),
        "--deepspeed" => b.deepspeed = !off,
        "--model-parallel-size" => {
            b.set("parallelism.tensor_model_parallel_size", yaml::scalar(first), 1);
            b.notes.push(format!("--model-parallel-size {first} is Megatron-LM's flag from before 2021 for the tensor-parallel size: read as --tensor-model-parallel-size; today's Megatron-LM stops on it"));
        }
        "--batch-size" => {
            b.set("training.micro_batch_size", yaml::scalar(first), 1);
            b.notes.push(format!("--batch-size {first} is Megatron-LM's flag from before 2021 for the micro-batch: read as --micro-batch-size; today's Megatron-LM stops on it"));
        }
        // The decoder's layers when --num-layers is not given (arguments.py:957-960 reads it in its place).
        "--decoder-num-layers" => b.set("model.num_layers", yaml::scalar(first), 1),
        // Megatron-LM before 4eeff55d1f (Oct 2023) had a store_true --overlap-p2p-communication; today's is
        // --no-overlap-p2p-communication (the parallelism table's), so an older script asks for today's default.
        "--overlap-p2p-communication" => {
            b.set("parallelism.overlap_p2p_comm", Value::Bool(!off), 0);
            // Today's parser has allow_abbrev=False (arguments.py:120): the old flag stops the launch there.
            b.notes.push(
                "--overlap-p2p-communication is Megatron-LM's flag from before Oct 2023; today's Megatron-LM rejects it as unrecognized and overlaps the interleaved schedule's p2p by default (--no-overlap-p2p-communication turns it off): read as overlap_p2p_comm = true, drop the flag for today's Megatron-LM"
                    .into(),
            );
        }
        _ => {
            if let Some(name) = names::by_flag(&key) {
                let Some((_, arg)) = name.mlm else { return };
                let v = match arg {
                    Arg::Flag => Value::Bool(!off),
                    Arg::FlagFalse => Value::Bool(off),
                    Arg::Value if name.plan.ends_with("_freq") => list_expr(first).map_or_else(|| yaml::scalar(first), |l| Value::from(l)),
                    Arg::Value if name.plan.ends_with("_layout") || name.plan.ends_with("_pattern") => Value::from(first),
                    Arg::Value => yaml::scalar(first),
                };
                b.set(name.plan, v, 0);
            } else if let Some((path, value)) = names::switch_by_flag(&key) {
                b.set(path, Value::from(value), 0);
            } else if let Some((row, v)) = setting(&key, values) {
                b.set_row(row, v, 0);
            } else {
                b.unknown(&key, &Value::from(values.join(" ")), "not a setting meshplan models");
            }
        }
    }
}

/// torchrun's options that say where and how the job starts (true: the flag is read).
fn launch_only(b: &mut Builder, key: &str) -> bool {
    // torchrun's rendezvous and process options (torch/distributed/run.py): where and how the job starts, not what it
    // trains; they size nothing meshplan plans.
    const RENDEZVOUS: [&str; 19] = [
        "--node-rank", "--master-addr", "--master-port", "--rdzv-id", "--rdzv-backend", "--rdzv-endpoint", "--rdzv-conf",
        "--max-restarts", "--monitor-interval", "--start-method", "--redirects", "--tee", "--log-dir", "--role",
        "--local-ranks-filter", "--no-python", "--run-path", "--local-addr",
        // torch.distributed.launch's (deprecated) switch to pass the local rank in the environment.
        "--use-env",
    ];
    if RENDEZVOUS.contains(&key) {
        return true;
    }
    // torchrun's single-node mode (a local rendezvous): one node.
    if key == "--standalone" {
        b.set("cluster.num_nodes", Value::from(1), 1);
        return true;
    }
    false
}

/// The flags of the launchers that size the cluster (torchrun's, Slurm's in the long form `launchers` gives, an
/// `#SBATCH` directive's); true when `key` is one.
fn cluster_flag(b: &mut Builder, key: &str, first: &str) -> bool {
    if matches!(key, "--gres" | "--gpus" | "--gpus-per-node") {
        slurm_gpu_type(b, key, first);
    }
    match key {
        // torchrun's `--nproc-per-node gpu` (or `auto` on a GPU node): one process per GPU of the node, the GPU's node
        // size, which the cluster takes when GPUs per node are unstated (builder.rs `cluster`).
        "--nproc-per-node" if matches!(first, "gpu" | "auto") => {
            b.notes.push(format!("--nproc-per-node {first}: one process per GPU of the node, as torchrun starts them"));
        }
        // Slurm's total task count (`--ntasks=16`, `-n 16`) when srun starts the training program itself, one task per
        // GPU: the world size (`launcher_words` drops it where torchrun's agents are the tasks).
        "--ntasks" => match first.parse::<u64>() {
            Ok(n) if n > 0 => b.world_size = Some(n),
            _ => b.unknown(&key, &Value::from(first), "not a task count"),
        },
        // Slurm's `--gpus=[type:]N` (`-G`): the job's GPUs in all, the world size whoever starts the processes.
        "--gpus" => match first.rsplit(':').next().and_then(|n| n.parse::<u64>().ok()) {
            Some(n) if n > 0 => b.world_size = Some(n),
            _ => b.unknown(&key, &Value::from(first), "not a GPU count"),
        },
        // torchrun's, and an `#SBATCH` directive's (--nodes, --gpus-per-node).
        "--nproc-per-node" | "--nnodes" | "--nodes" | "--gpus-per-node" => {
            let path = if matches!(key, "--nnodes" | "--nodes") { "cluster.num_nodes" } else { "cluster.gpus_per_node" };
            match first.rsplit(':').next().and_then(|n| n.parse::<u64>().ok()) {
                // torchrun's elastic `--nnodes MIN:MAX`: the job runs on up to MAX nodes.
                Some(n) if key == "--nnodes" && first.contains(':') => {
                    b.set(path, Value::from(n), 0);
                    b.notes.push(format!("--nnodes {first} is torchrun's elastic range: its largest, {n} nodes, planned"));
                }
                Some(n) => b.set(path, Value::from(n), 0),
                None => b.unknown(&key, &Value::from(first), "not a number (a variable the text does not set?): give the cluster in the plan"),
            }
        }
        // Slurm's tasks per node (srun starts one per GPU) and `--gres=gpu:8` / `gpu:h100:8`.
        "--ntasks-per-node" | "--gres" => match first.rsplit(':').next().and_then(|n| n.parse::<u64>().ok()) {
            Some(n) if key == "--ntasks-per-node" || first.starts_with("gpu") => b.set("cluster.gpus_per_node", Value::from(n), 1),
            _ => b.unknown(&key, &Value::from(first), "not a GPU count"),
        },
        _ => return false,
    }
    true
}

/// Slurm's GPU type in `--gres=gpu:TYPE:N`, `--gpus=TYPE:N` or `--gpus-per-node=TYPE:N` (sbatch(1): `[type:]number`):
/// the GPU, when it names one catalogue entry (`h100` → h100-sxm-80gb), said; a type that names two (`a100`) or none is
/// said too, and the GPU left to the rest of the input.
fn slurm_gpu_type(b: &mut Builder, key: &str, value: &str) {
    let parts: Vec<&str> = value.split(':').collect();
    let kind = match (key, parts.as_slice()) {
        ("--gres", ["gpu", kind, _]) | ("--gpus" | "--gpus-per-node", [kind, _]) => *kind,
        _ => return,
    };
    b.gpu_named(kind, 1, &format!("Slurm's {key}={value} (its GPU type `{kind}`)"));
}

/// The settings row that flag `key` sets, and the value it gives.
fn setting(key: &str, values: &[String]) -> Option<(&'static Setting, Value)> {
    // A wrapper passes a store_true switch with a value (ms-swift's `--use_distributed_optimizer false`): `false` leaves
    // it off, and turns a store_false switch's setting back on.
    let off = matches!(values.first().map(String::as_str), Some("false" | "False"));
    SETTINGS.iter().find_map(|row| match row.doc().mlm {
        Mlm::Flag(f) if f == key => Some((row, Value::Bool(!off))),
        Mlm::Switch(on, _) if on == Some(key) => Some((row, Value::Bool(!off))),
        Mlm::Switch(on, off_flag) if off_flag == Some(key) && on != Some(key) => Some((row, Value::Bool(off))),
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

/// The dump's `data_parallel_size`, which validate_args derives as world_size // (TP · PP · CP) (arguments.py l.442-448):
/// the world when the dump gives no `world_size` (a W&B config trimmed of it), else checked against it.
fn data_parallel(b: &mut Builder, tp: u64) {
    let Some(dp) = b.data_parallel else { return };
    let size = |b: &Builder, k: &str| b.get(k).and_then(crate::fields::as_uint).unwrap_or(1).max(1);
    let (pp, cp) = (size(b, "parallelism.pipeline_model_parallel_size"), size(b, "parallelism.context_parallel_size"));
    let world = dp.saturating_mul(tp.max(1)).saturating_mul(pp).saturating_mul(cp);
    match b.world_size {
        None => {
            b.world_size = Some(world);
            b.notes.push(format!("world size {world}: data_parallel_size {dp} × TP {tp} × PP {pp} × CP {cp}, as Megatron-LM derives the one from the other"));
        }
        Some(w) if w != world => b.notes.push(format!(
            "data_parallel_size {dp} is not world_size {w} / (TP {tp} × PP {pp} × CP {cp}): the plan takes the world size; the arguments may come from two runs"
        )),
        Some(_) => {}
    }
}

/// Whether `text` is Megatron-LM's argument dump (its header, or at least three `name ..... value` lines).
pub(crate) fn is_args_block(text: &str) -> bool {
    text.contains("---------- arguments ----------") || text.lines().filter(|l| l.contains(" ....")).take(3).count() == 3
}

/// The part of a log that holds the arguments the run printed: its `arguments` block (from its header line to its end
/// line, or the end of the log), or the `Namespace(…)` with what follows it (at most [`MAX_NAMESPACE_BYTES`]). None
/// when the log holds neither.
pub(crate) fn printed_arguments(text: &str) -> Option<&str> {
    let line_start = |i: usize| text[..i].rfind('\n').map_or(0, |j| j + 1);
    if let Some(i) = text.find("---------- arguments ----------") {
        let from = line_start(i);
        let end = text[from..].find("end of arguments").map_or(text.len(), |j| from + j + "end of arguments".len());
        return Some(&text[from..end]);
    }
    if is_args_block(text) {
        return Some(text);
    }
    let (i, _) = namespace_found(text)?;
    Some(crate::limits::prefix(&text[i..], MAX_NAMESPACE_BYTES + "Namespace(".len()))
}

/// The `arguments` block Megatron-LM prints: each `name ..... value` line as (name, value).
fn args_block(text: &str) -> Vec<(String, String)> {
    let start = text.lines().position(|l| l.contains("---------- arguments ----------")).map_or(0, |i| i + 1);
    let lines = text.lines().skip(start).take_while(|l| !l.contains("end of arguments"));
    lines
        .filter_map(|line| {
            // Launchers prefix each line (`[default3]:`, `0: `); the name is the word before the dots.
            let (head, value) = line.split_once(" ..")?;
            let name = head.split_whitespace().last()?;
            Some((name.to_string(), value.trim_start_matches('.').trim().to_string()))
        })
        .collect()
}

/// Megatron-LM's arguments by their names (`args` attributes, as the `arguments` block prints them), each read as the
/// flag it comes from.
fn arguments(pairs: Vec<(String, String)>, b: &mut Builder, gqa: &mut bool) {
    for (name, value) in &pairs {
        let (name, value) = (name.as_str(), value.as_str());
        let v = yaml::scalar(value);
        match (name, &v) {
            (_, Value::Null) => {}
            ("world_size", _) => b.world_size = crate::fields::as_uint(&v),
            ("data_parallel_size", _) => b.data_parallel = crate::fields::as_uint(&v).filter(|&d| d > 0),
            ("virtual_pipeline_model_parallel_size", _) => b.set("parallelism.virtual_pipeline_model_parallel_size", v, 0),
            ("add_bias_linear", Value::Bool(on)) => b.set("model.add_bias_linear", Value::Bool(*on), 0),
            ("untie_embeddings_and_output_weights", Value::Bool(on)) => b.set("model.share_embeddings_and_output_weights", Value::Bool(!on), 0),
            // The dump writes the dest of --no-overlap-p2p-communication, after validate_args turned it off without VPP.
            ("overlap_p2p_comm", Value::Bool(on)) => b.set("parallelism.overlap_p2p_comm", Value::Bool(*on), 0),
            // A --yaml-cfg file's TransformerConfig fields (yaml_arguments.py core_transformer_config_from_yaml:
            // `activation_func` swiglu is gated SiLU, squaredrelu squared ReLU, gelu GeLU; `gated_linear_unit` as given).
            ("gated_linear_unit", Value::Bool(on)) => b.set("model.gated_linear_unit", Value::Bool(*on), 1),
            ("activation_func", _) => match value {
                "swiglu" => flag(b, "--swiglu", &[], gqa),
                "squaredrelu" => flag(b, "--squared-relu", &[], gqa),
                "gelu" => b.set("model.activation_func", Value::from("gelu"), 1),
                _ => b.unknown("activation_func", &v, "not an activation Megatron-LM's --yaml-cfg takes (swiglu, squaredrelu, gelu)"),
            },
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
        || names::switch_by_flag(&key).is_some()
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
