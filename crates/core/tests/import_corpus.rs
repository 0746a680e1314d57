//! The import corpus: launch artefacts written for meshplan (tests/data/import_corpus/), each reproducing a construct
//! public launch scripts, argument dumps, recipes and wrappers use — the file's `# source:` line names where the
//! construct is seen — with the plan its text states worked out by hand in `# expect:` lines.
//!
//! Expectation lines (any comment line of the file):
//! - `# expect: KEY=VALUE …` — the imported, resolved plan's value; KEY is a shorthand (below) or a dotted path of the
//!   plan's JSON (`training.recompute_granularity`); `world` is GPUs per node × nodes.
//! - `# expect-note: TEXT` — a note of the import contains TEXT (an assumption or a normalisation said, not silent).
//! - `# expect-unread: NAME` — NAME is listed as not read (not dropped).
//! - `# expect-no-code: CODE` — the report has no diagnostic CODE; `# expect-no-errors` — no error at all.
//! - `# options: gpu=KEY model=KEY` — what `meshplan import --gpu/--model` would give.
//!
//! The figure "read right" counts the artefacts whose every expectation holds. Before issue 21's work on the readers
//! (main at 1834a18) it was 15 of the first 44; after it, 45 of 46 (45 and 46 were added with their fixes; the one left,
//! 25, named a Llama 3 8B recipe whose model had no preset). With every Bridge recipe read and a Llama 3 8B preset, 47 of
//! 47 (25 reads right; 47, a shape match naming the nearer of two same-shape presets, was added with its fix). 51 of 51
//! after the thirteenth session's fixes, each added with its fix (48: unset option groups after a switch; 49: a shape
//! whose preset has QK layernorm; 50: Slurm's GPU type; 51: an argument dump sized by its data_parallel_size). 55 of 55
//! after the fourteenth session's (52: the arguments as Python prints the Namespace; 53: a prompt before the command
//! that runs a wrapper with positional arguments; 54: a command with the environment report beside it;
//! 55: Megatron-DeepSpeed's ZeRO stage). 61 of 61 after the fifteenth session's (56: ms-swift's defaults and a model named by
//! its converted checkpoint's directory; 57: verl's engine defaults and a base model's id with its variant suffix;
//! 58: NeMo's mcore_distributed_optim and overlaps; 59: Megatron-DeepSpeed's GQA and EP flags; 60: --quick-geglu;
//! 61: verl's actor batch from its prompt, response, mini-batch and micro-batch sizes). 66 of 66 after the sixteenth
//! session's (62: slime's Ray placement, defaults and dynamic batch; 63: an exported WORLD_SIZE with
//! --fake-process-group; 64: DeepSpeed-MoE's PR-MoE and deepspeed --include; 65: verl's override_transformer_config and
//! override_optimizer_config; 66: NeMo-RL's megatron_cfg sections, flow mappings and activation_checkpointing; 67: a
//! single-quoted command run by `bash -c`; 68: overrides echoed through `tr` and `sed`; 69: ROLL's megatron_train
//! actor; 70: AReaL's Megatron allocation; 71: MindSpeed-LLM's dense first layers, shared experts and noop layers;
//! 72: MindSpeed-LLM's per-stage layers and gated GELU).
//! `MIN_READ_RIGHT` is raised as the readers improve, so a regression fails.

use meshplan_core::imports::{self, ImportOptions};
use meshplan_core::{Severity, plan_resolved};
use serde_json::Value;

/// The artefacts that must read right (the corpus figure after the last landed fix).
const MIN_READ_RIGHT: usize = 72;

fn path_of(key: &str) -> String {
    let p = match key {
        "tp" => "parallelism.tensor_model_parallel_size",
        "pp" => "parallelism.pipeline_model_parallel_size",
        "vpp" => "parallelism.virtual_pipeline_model_parallel_size",
        "cp" => "parallelism.context_parallel_size",
        "ep" => "parallelism.expert_model_parallel_size",
        "etp" => "parallelism.expert_tensor_parallel_size",
        "sp" => "parallelism.sequence_parallel",
        "mbs" => "training.micro_batch_size",
        "gbs" => "training.global_batch_size",
        "seq" => "training.seq_length",
        "precision" => "training.precision",
        "recompute" => "training.recompute_granularity",
        "nodes" => "cluster.num_nodes",
        "gpn" => "cluster.gpus_per_node",
        "gpu" => "cluster.gpu",
        "model" => "model_key",
        "layers" => "model.num_layers",
        "hidden" => "model.hidden_size",
        "ffn" => "model.ffn_hidden_size",
        "heads" => "model.num_attention_heads",
        "groups" => "model.num_query_groups",
        "kv" => "model.kv_channels",
        "vocab" => "model.vocab_size",
        "experts" => "model.num_moe_experts",
        other => other,
    };
    p.to_string()
}

fn lookup<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(v, |v, k| v.get(k))
}

/// The value as the expectation spells it: numbers, true/false, null, else a string.
fn same(got: &Value, want: &str) -> bool {
    match got {
        Value::Number(n) => want.parse::<f64>().ok() == n.as_f64(),
        Value::Bool(b) => want == b.to_string(),
        Value::Null => want == "null",
        Value::String(s) => s == want,
        other => other.to_string() == want,
    }
}

/// What is wrong with `name`'s import (empty: it reads right).
fn check(name: &str, text: &str) -> Vec<String> {
    let mut opts = ImportOptions::default();
    for line in text.lines().filter_map(|l| l.trim().strip_prefix("# options:")) {
        for kv in line.split_whitespace() {
            match kv.split_once('=') {
                Some(("gpu", g)) => opts.gpu = Some(g.into()),
                Some(("model", m)) => opts.model = Some(m.into()),
                _ => panic!("{name}: bad option {kv}"),
            }
        }
    }
    let (imported, plan, diags) = match imports::import_plan(text, &opts) {
        Ok(x) => x,
        Err(e) => return vec![format!("import error: {e}")],
    };
    let report = plan_resolved(&plan, diags);
    let mut pj = serde_json::to_value(&plan).unwrap();
    pj["world"] = Value::from(plan.world_size());
    let mut wrong = Vec::new();
    for line in text.lines().map(str::trim) {
        if let Some(exp) = line.strip_prefix("# expect:") {
            for kv in exp.split_whitespace() {
                let (k, want) = kv.split_once('=').unwrap_or_else(|| panic!("{name}: bad expectation {kv}"));
                let got = lookup(&pj, &path_of(k)).cloned().unwrap_or(Value::Null);
                if !same(&got, want) {
                    wrong.push(format!("{k}: want {want}, got {got}"));
                }
            }
        } else if let Some(t) = line.strip_prefix("# expect-note:") {
            let t = t.trim();
            if !imported.notes.iter().any(|n| n.contains(t)) {
                wrong.push(format!("no note containing {t:?} (notes: {:?})", imported.notes));
            }
        } else if let Some(t) = line.strip_prefix("# expect-unread:") {
            let t = t.trim();
            if !imported.unrecognized.iter().any(|u| u.name == t) {
                wrong.push(format!("{t} not listed as unread"));
            }
        } else if let Some(c) = line.strip_prefix("# expect-no-code:") {
            let c = c.trim();
            if let Some(d) = report.diagnostics.iter().find(|d| serde_json::to_value(d.code).unwrap() == c) {
                wrong.push(format!("diagnostic {c}: {}", d.message));
            }
        } else if line == "# expect-no-errors" {
            for d in report.diagnostics.iter().filter(|d| d.severity == Severity::Error) {
                wrong.push(format!("error {}: {}", serde_json::to_value(d.code).unwrap(), d.message));
            }
        }
    }
    wrong
}

#[test]
fn the_corpus_reads_as_its_text_says() {
    let dir = format!("{}/tests/data/import_corpus", env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.file_name().unwrap() != "README.md").collect();
    files.sort();
    let mut right = 0;
    let mut report = String::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        assert!(text.contains("# source:"), "{name}: names no source");
        assert!(text.contains("# expect"), "{name}: states no expectation");
        let wrong = check(&name, &text);
        if wrong.is_empty() {
            right += 1;
        } else {
            report.push_str(&format!("{name}:\n  {}\n", wrong.join("\n  ")));
        }
    }
    println!("import corpus: {right} of {} read every stated setting right\n{report}", files.len());
    assert!(files.len() >= 40, "the corpus has {} artefacts", files.len());
    assert!(right >= MIN_READ_RIGHT, "{right} of {} read right (at least {MIN_READ_RIGHT} did):\n{report}", files.len());
}
