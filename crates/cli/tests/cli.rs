//! The CLI as a user drives it: exit statuses, JSON contract, table output.

mod common;
use common::meshplan;
use serde_json::{Value, json};

fn plan_json(plan: &Value) -> (i32, Value) {
    let out = meshplan(&["plan", "-", "--format", "json"], Some(&plan.to_string()));
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    (out.status.code().unwrap(), v)
}

fn llama70b(tp: u64) -> Value {
    json!({"model": "llama-3.1-70b", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 8},
           "training": {"seq_length": 8192, "micro_batch_size": 1, "global_batch_size": 512,
                        "recompute_granularity": "selective", "use_distributed_optimizer": true},
           "parallelism": {"tensor_model_parallel_size": tp, "pipeline_model_parallel_size": 4, "sequence_parallel": true}})
}

#[test]
fn valid_plan_exits_0_with_the_contract_shape() {
    // TP 8 · PP 4 fits in 80 GB at seq 8192 with selective recompute (TP 4 without CP does not with an fp32 gradient buffer).
    let (code, r) = plan_json(&llama70b(8));
    assert_eq!(code, 0, "{r}");
    assert_eq!(r["valid"], true);
    for key in ["world_size", "data_parallel_size", "expert_data_parallel_size", "min_gpus", "num_microbatches",
                "pipeline_bubble_fraction", "padded_vocab_size", "total_parameters", "active_parameters", "layers_per_stage"] {
        assert!(!r["derived"][key].is_null(), "derived.{key}");
    }
    let stage = &r["memory"]["stages"][0];
    for key in ["pipeline_rank", "num_layers", "parameters_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes",
                "overhead_bytes", "total_bytes"] {
        assert!(stage[key].is_u64(), "memory.stages[0].{key}");
    }
    for key in ["peak_bytes", "gpu_memory_bytes", "fits"] {
        assert!(!r["memory"][key].is_null(), "memory.{key}");
    }
    for key in ["tp", "cp", "dp", "dp_cp", "pp", "tp_pp", "ep", "etp", "edp"] {
        assert!(r["layout"]["groups"][key].is_array(), "layout.groups.{key}");
    }
    assert!(r["layout"]["crossings"].is_array());
    // 64 GPUs / (TP 8 · PP 4) = DP 2; 512 / (1 · 2) = 256 microbatches; TP groups are 8 consecutive ranks.
    assert_eq!(r["derived"]["data_parallel_size"], 2);
    assert_eq!(r["derived"]["num_microbatches"], 256);
    assert_eq!(r["layout"]["groups"]["tp"][1], json!([8, 9, 10, 11, 12, 13, 14, 15]));
}

#[test]
fn invalid_plan_exits_1_and_still_prints_the_report() {
    let (code, r) = plan_json(&llama70b(3));
    assert_eq!(code, 1);
    assert_eq!(r["valid"], false);
    let codes: Vec<&str> = r["diagnostics"].as_array().unwrap().iter().map(|d| d["code"].as_str().unwrap()).collect();
    assert!(codes.contains(&"world-not-divisible-dense"), "{codes:?}");
    assert!(codes.contains(&"heads-not-divisible-by-tp"), "{codes:?}");
}

#[test]
fn unreadable_input_exits_2_with_a_message() {
    // Not JSON is invalid-json; JSON that is not an object is invalid-plan (InputError's Display: error[CODE]).
    for (text, code) in [("{", "invalid-json"), ("not json", "invalid-json"), ("[]", "invalid-plan")] {
        let out = meshplan(&["plan", "-", "--format", "json"], Some(text));
        assert_eq!(out.status.code(), Some(2), "{text}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with(&format!("meshplan: error[{code}]: ")), "{text}: {err}");
        assert!(out.stdout.is_empty());
    }
    let out = meshplan(&["plan", "/nonexistent/plan.json"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("meshplan: cannot read /nonexistent/plan.json: "));
    let out = meshplan(&["plan", "-"], Some(r#"{"model": "llama-9000", "cluster": {"gpu": "h100-sxm-80gb"}}"#));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown-model-preset"));
}

#[test]
fn table_output_is_readable() {
    // TP 8 · PP 4 on 64 GPUs: valid; dense DP 64/32 = 2, 512/2 = 256 microbatches, 80 layers over 4 stages.
    let out = meshplan(&["plan", "-"], Some(&llama70b(8).to_string()));
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[..4], ["Llama 3.1 70B on 8 × NVIDIA H100 SXM5 80GB (64 GPUs, NVLink domain 8)",
                            "TP 8 · PP 4 · CP 1 · EP 1 · ETP 8 · SP on · order tp-cp-ep-dp-pp", "", "VALID"], "{text}");
    for line in ["  data parallel (dense)   2", "  microbatches            256", "  layers per stage        [20, 20, 20, 20]",
                 "Memory per GPU (GiB)", "Rank groups (order tp-cp-ep-dp-pp)"] {
        assert!(lines.contains(&line), "{line:?} missing:\n{text}");
    }
    // TP 4 without CP and with an fp32 gradient buffer (stated: the perf recipe's tuned default is bf16) does not fit
    // in 80 GB at seq 8192: INVALID, exit 1, and the error named in the table.
    let mut tp4 = llama70b(4);
    tp4["training"]["grad_reduce_in_fp32"] = json!(true);
    let out = meshplan(&["plan", "-"], Some(&tp4.to_string()));
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().nth(3), Some("INVALID"), "{text}");
    assert!(text.contains("\n  error[out-of-memory]: pipeline stage "), "{text}");
}

#[test]
fn presets_json_lists_models_and_gpus() {
    let out = meshplan(&["presets", "--format", "json"], None);
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let models = v["models"].as_array().unwrap();
    assert_eq!(models.len(), 76);
    assert!(models.iter().all(|m| m["key"].is_string() && m["name"].is_string() && m["hf_id"].is_string()));
    assert!(models.iter().all(|m| m["family"].as_str().is_some_and(|f| !f.is_empty())), "every preset has a family");
    let gpus = v["gpus"].as_array().unwrap();
    assert_eq!(gpus.len(), 18);
    assert!(gpus.iter().any(|g| g["key"] == "h100-sxm-80gb"));
    // The Bridge recipes (data/bridge_recipes.json): the one README's example names, with its model preset, GPU, and
    // GPU count from its name.
    let recipes = v["recipes"].as_array().unwrap();
    let r = recipes.iter().find(|r| r["name"] == "qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config").unwrap();
    assert_eq!((&r["model"], &r["gpu"], &r["gpus"]), (&json!("qwen3-30b-a3b"), &json!("h100-sxm-80gb"), &json!(16)));
    assert!(r["description"].as_str().unwrap().contains("EP16"));
    // Each recipe's model is a preset, or null with the Hugging Face id of a model without one.
    assert!(recipes.iter().all(|r| models.iter().any(|m| m["key"] == r["model"]) || (r["model"].is_null() && r["hf_model_id"].is_string())));
    let r = recipes.iter().find(|r| r["name"] == "qwen2_72b_pretrain_32gpu_h100_bf16_config").unwrap();
    assert_eq!((&r["model"], &r["hf_model_id"]), (&Value::Null, &json!("Qwen/Qwen2-72B")));
    // Llama 3 70B, which Bridge's llama3_70b recipes build, is a preset (models.json llama-3-70b).
    let r = recipes.iter().find(|r| r["name"] == "llama3_70b_pretrain_32gpu_h100_bf16_config").unwrap();
    assert_eq!((&r["model"], &r["hf_model_id"]), (&json!("llama-3-70b"), &json!("meta-llama/Meta-Llama-3-70B")));
    assert!(v["recipes_source"].as_str().unwrap().starts_with("github:NVIDIA-NeMo/Megatron-Bridge@"));
}

#[test]
fn explain_a_recipe() {
    // recipes/qwen/h100/qwen3_moe.py:146, EP 16 (line 173), HybridEP (205).
    let out = meshplan(&["explain", "qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config"], None);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("src/megatron/bridge/recipes/qwen/h100/qwen3_moe.py:146"), "{text}");
    assert!(text.contains("expert_model_parallel_size               16"), "{text}");
    assert!(text.contains("moe_flex_dispatcher_backend              \"hybridep\""), "{text}");
}

#[test]
fn presets_table_lists_recipes() {
    let out = meshplan(&["presets"], None);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Megatron Bridge recipes"), "{text}");
    assert!(text.contains("\n  deepseek_v3_pretrain_1024gpu_h100_bf16_config "), "{text}");
}

#[test]
fn a_plan_that_is_a_recipe_and_a_cluster() {
    // qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config on the cluster the plan gives (4 nodes of 8 H100 instead of 2).
    let plan = r#"{"recipe": "qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 4}}"#;
    let out = meshplan(&["plan", "-"], Some(plan));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.starts_with("Qwen3-30B-A3B on 4 × NVIDIA H100"), "{text}");
    assert!(text.contains("from Megatron Bridge recipe qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config"), "{text}");
    assert!(text.contains("TP 1 · PP 1 · CP 1 · EP 16 · ETP 1 · SP off"), "{text}");
    let out = meshplan(&["plan", "-", "--format", "json"], Some(plan));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["plan"]["recipe"], json!("qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config"));
}

#[test]
fn explain_known_and_unknown_codes() {
    let out = meshplan(&["explain", "sp-requires-tp"], None);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("sequence_parallel"));
    let out = meshplan(&["explain", "sp-require-tp"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("sp-requires-tp"));
}

#[test]
fn explain_a_setting() {
    // A settings row: its names in each tool (megatron/core/optimizer/optimizer_config.py, Bridge's optimizer section,
    // megatron/training/arguments.py --exp-avg-dtype), its values and default.
    let out = meshplan(&["explain", "exp_avg_dtype"], None);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "training.exp_avg_dtype (setting, Optimizer & gradients)");
    for line in [
        "Values:          one of fp32, fp16, bf16, fp8",
        "Default:         fp32",
        "Megatron-Core:   OptimizerConfig.exp_avg_dtype = torch.float32",
        "Megatron Bridge: cfg.optimizer.exp_avg_dtype",
        "Megatron-LM:     --exp-avg-dtype VALUE",
    ] {
        assert!(lines.contains(&line), "{line:?} in\n{text}");
    }
    // With its section, and a typo's nearest setting.
    assert_eq!(meshplan(&["explain", "cluster.host_memory_per_node_gb"], None).status.code(), Some(0));
    let out = meshplan(&["explain", "exp_avg_dtyp"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("did you mean \"exp_avg_dtype\"?"));
}

#[test]
fn explain_a_parallelism_field() {
    // A parallelism row, by key or path: its names in each tool. TP is --tensor-model-parallel-size VALUE
    // (megatron/training/arguments.py) and cfg.model.tensor_model_parallel_size in Bridge; the p2p overlap is the
    // store_false --no-overlap-p2p-communication (arguments.py:3118), whose default differs from Megatron-Core's.
    for (arg, want) in [
        ("tensor_model_parallel_size", vec!["parallelism.tensor_model_parallel_size (parallelism)", "Megatron-LM:     --tensor-model-parallel-size VALUE", "Default:         1"]),
        ("parallelism.overlap_p2p_comm", vec![
            "Megatron-LM:     --no-overlap-p2p-communication (sets it false)",
            "Megatron-Core:   ModelParallelConfig.overlap_p2p_comm = False",
        ]),
        ("order", vec!["Megatron-LM:     --use-tp-pp-dp-mapping (selects tp-cp-ep-pp-dp)"]),
    ] {
        let out = meshplan(&["explain", arg], None);
        assert_eq!(out.status.code(), Some(0), "{arg}");
        let text = String::from_utf8_lossy(&out.stdout);
        for line in want {
            assert!(text.lines().any(|l| l == line), "{line:?} in\n{text}");
        }
    }
    let out = meshplan(&["explain", "tensor_model_paralel_size"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("did you mean \"tensor_model_parallel_size\"?"));
}

/// `text` shown as an excerpt of `printed`: the parts between lines of `…` appear in order, the first at the start.
fn assert_excerpt(shown: &str, printed: &str) {
    let mut rest = printed;
    for (i, part) in shown.split("\n…\n").enumerate() {
        let at = rest.find(part).unwrap_or_else(|| panic!("part {i} of the excerpt is not printed:\n{part}\n--- printed:\n{printed}"));
        assert!(i > 0 || at == 0, "the excerpt does not start the output:\n{printed}");
        rest = &rest[at + part.len()..];
    }
}

/// The text between `marker` and the end of the code block after it, in the file at `path` (relative to the root).
fn shown_after(path: &str, marker: &str) -> String {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let text = std::fs::read_to_string(format!("{root}/{path}")).unwrap();
    let rest = text.split(marker).nth(1).unwrap_or_else(|| panic!("{path} has no {marker:?}"));
    let block = rest.split("```\n").nth(1).unwrap_or_else(|| panic!("{path}: no code block after {marker:?}"));
    block.trim_end().to_string()
}

#[test]
fn readme_example_output_is_what_the_cli_prints() {
    // README.md shows an excerpt of `meshplan plan examples/llama-3.1-70b.json`; keep them in step.
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let shown = shown_after("README.md", "`meshplan plan examples/llama-3.1-70b.json` prints");
    assert!(shown.lines().count() > 20 && shown.contains("\n…\n"), "{shown}");
    let out = meshplan(&["plan", &format!("{root}/examples/llama-3.1-70b.json")], None);
    assert_eq!(out.status.code(), Some(0));
    assert_excerpt(&shown, &String::from_utf8(out.stdout).unwrap());
    // The excerpt can fail: a figure changed in it is not what the CLI prints.
    let changed = shown.replace("49.24", "49.25");
    let printed = String::from_utf8(meshplan(&["plan", &format!("{root}/examples/llama-3.1-70b.json")], None).stdout).unwrap();
    assert!(std::panic::catch_unwind(|| assert_excerpt(&changed, &printed)).is_err());
}

#[test]
fn plan_format_recipe_example_is_what_the_cli_prints() {
    // docs/plan-format.md shows an excerpt of `meshplan plan examples/qwen3-30b-a3b-recipe.json`: its first three
    // lines, then the memory section; keep them in step.
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let shown = shown_after("docs/plan-format.md", "`meshplan plan examples/qwen3-30b-a3b-recipe.json`");
    let out = meshplan(&["plan", &format!("{root}/examples/qwen3-30b-a3b-recipe.json")], None);
    assert_eq!(out.status.code(), Some(0));
    assert_excerpt(&shown, &String::from_utf8(out.stdout).unwrap());
}

#[test]
fn the_table_shows_a_layout_per_rank_and_chunk() {
    // Megatron Bridge's DeepSeek-V3 GB300 layout on PP 2: 16 stages → VPP 8; pp 0 = E t0–3 | t8–11 | …, pp 1 ends with
    // the stage `tmL` (research notes §2.7). The report's JSON carries the same per chunk, and where MTP and loss sit.
    let plan = serde_json::json!({"model": "deepseek-v3", "cluster": {"gpu": "gb300", "gpus_per_node": 4, "num_nodes": 64},
        "training": {"seq_length": 4096, "micro_batch_size": 2, "global_batch_size": 4096, "precision": "fp4",
                     "use_distributed_optimizer": true, "recompute_granularity": "selective"},
        "parallelism": {"pipeline_model_parallel_size": 2, "expert_model_parallel_size": 32, "expert_tensor_parallel_size": 1,
                        "pipeline_model_parallel_layout": "Et*4|(t*4|)*14tmL"}});
    let (_, text, _) = common::run(&["plan", "-"], Some(&plan.to_string()));
    let lines: Vec<&str> = text.lines().collect();
    for line in [
        "TP 1 · PP 2 (VPP 8) · CP 1 · EP 32 · ETP 1 · SP off · order tp-cp-ep-dp-pp",
        "  layers per stage        [32, 29]",
        "Pipeline layout Et*4|(t*4|)*14tmL (16 chunks: PP 2 × VPP 8)",
        "  pp 0   E t*4 | t*4 | t*4 | t*4 | t*4 | t*4 | t*4 | t*4",
        "  pp 1   t*4 | t*4 | t*4 | t*4 | t*4 | t*4 | t*4 | t*1 m L",
    ] {
        assert!(lines.contains(&line), "{line:?} missing:\n{text}");
    }
    let (_, json, _) = common::run(&["plan", "-", "--format", "json"], Some(&plan.to_string()));
    let r: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(r["derived"]["layers_per_chunk"][1][7], 1);
    assert_eq!(r["derived"]["pipeline_placement"]["mtp"], serde_json::json!({"pipeline_rank": 1, "virtual_rank": 7}));
    assert_eq!(r["plan"]["parallelism"]["pipeline_model_parallel_layout"], "Et*4|(t*4|)*14tmL");
}

/// The table's Assumed section: one line per source, then its settings. Llama 3.1 8B on 8 GB200 in BF16, nothing else
/// stated: the nearest perf recipe is llama/gb200/llama3.py:35 (the local full-iteration CUDA graph, llama3.py:50-51);
/// what no recipe sets (recompute modules) is Megatron-Core's default. With "defaults": "megatron-core" no recipe is
/// consulted: every setting the plan leaves out is listed at Megatron-Core's default (what meshplan did not read is
/// always said).
#[test]
fn the_table_lists_what_it_assumed_by_source() {
    let plan = json!({"model": "llama-3.1-8b", "cluster": {"gpu": "gb200", "num_gpus": 8},
                      "training": {"seq_length": 8192, "global_batch_size": 128, "micro_batch_size": 2}});
    let out = meshplan(&["plan", "-"], Some(&plan.to_string()));
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    let at = lines.iter().position(|l| l.starts_with("Assumed (")).unwrap_or_else(|| panic!("no Assumed section:\n{text}"));
    assert!(lines[at + 1].starts_with("  Megatron Bridge perf recipe perf.llama3_8b_pretrain_8gpu_gb200_bf16_config ")
        && lines[at + 1].ends_with("perf_recipes/llama/gb200/llama3.py:35):"), "{}", lines[at + 1]);
    assert!(lines[at + 2].starts_with("    cuda_graph_impl = \"full_iteration\""), "{}", lines[at + 2]);
    let core = lines.iter().position(|l| *l == "  Megatron-Core default:").expect("the defaults no recipe sets");
    assert!(lines[core + 1..].iter().take_while(|l| l.starts_with("    ")).any(|l| l.contains("recompute_modules = null")), "{text}");
    // Every pair line stays short.
    assert!(lines[at + 2..core].iter().all(|l| l.chars().count() <= 4 + 110), "{text}");
    let mut plain = plan.clone();
    plain["defaults"] = json!("megatron-core");
    let out = meshplan(&["plan", "-"], Some(&plain.to_string()));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Assumed (") && text.contains("\n  Megatron-Core default:\n") && !text.contains("perf recipe"), "{text}");
}
