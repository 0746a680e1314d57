//! Megatron Bridge recipes as data (data/bridge_recipes.json, scripts/extract-bridge-recipes.py) and plans that name
//! one: values checked by hand against the Bridge source, the data against the plan reader, override precedence,
//! the exports' overrides and the plan file's round trip.
//!
//! Bridge source: NVIDIA-NeMo/Megatron-Bridge @ 067f987df03b8355b03192d88d70f1709fedf51a, paths under
//! src/megatron/bridge/.

use meshplan_core::recipes;
use meshplan_core::{ExportKind, export, plan_value};
use serde_json::{Value, json};

fn recipe(name: &str) -> &'static recipes::Recipe {
    recipes::find(name).unwrap_or_else(|| panic!("no recipe {name}"))
}

fn par(r: &recipes::Recipe, key: &str) -> Value {
    r.parallelism.get(key).cloned().unwrap_or(Value::Null)
}

fn tr(r: &recipes::Recipe, key: &str) -> Value {
    r.training.get(key).cloned().unwrap_or(Value::Null)
}

#[test]
fn the_data_names_its_source_commit() {
    assert_eq!(recipes::source_repository(), "github:NVIDIA-NeMo/Megatron-Bridge@067f987df03b8355b03192d88d70f1709fedf51a");
    assert!(recipes::all().len() >= 50, "{} recipes", recipes::all().len());
}

/// recipes/qwen/h100/qwen3_moe.py, read by hand:
/// 146 `def qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config()` starts from the 8-GPU recipe (TP4 PP2 EP4, recompute
/// full) and sets: 151 `cfg.mixed_precision = bf16_mixed()`, 155 `cfg.mixed_precision.grad_reduce_in_fp32 = False`,
/// 157 `use_precision_aware_optimizer = True`, 163-165 recompute_granularity/method/num_layers = None, 168-174 TP 1,
/// PP 1, CP 1, VPP None, EP 16, ETP 1, SP False, 167 seq_length 4096, 177-178 global batch 1024, micro batch 1,
/// 205-206 `moe_flex_dispatcher_backend = "hybridep"`, dispatcher "flex" (and apply_flex_dispatcher_backend keeps it
/// on an H100, compute capability 9.x), 213-214 cuda_graph_impl "transformer_engine", scope ["moe_router",
/// "moe_preprocess"], 218 `CommOverlapConfig(tp_comm_overlap=True)`; the 16 H100 are in its name.
#[test]
fn qwen3_30b_a3b_16gpu_as_the_source_reads() {
    let r = recipe("qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config");
    assert_eq!(r.model, "qwen3-30b-a3b");
    assert_eq!((r.gpu.as_deref(), r.gpus), (Some("h100-sxm-80gb"), Some(16)));
    assert_eq!(r.mixed_precision_recipe.as_deref(), Some("bf16_mixed"));
    for (k, v) in [
        ("tensor_model_parallel_size", json!(1)),
        ("pipeline_model_parallel_size", json!(1)),
        ("context_parallel_size", json!(1)),
        ("expert_model_parallel_size", json!(16)),
        ("expert_tensor_parallel_size", json!(1)),
        ("sequence_parallel", json!(false)),
    ] {
        assert_eq!(par(r, k), v, "{k}");
    }
    assert_eq!(par(r, "virtual_pipeline_model_parallel_size"), Value::Null);
    for (k, v) in [
        ("seq_length", json!(4096)),
        ("micro_batch_size", json!(1)),
        ("global_batch_size", json!(1024)),
        ("precision", json!("bf16")),
        ("grad_reduce_in_fp32", json!(false)),
        ("use_precision_aware_optimizer", json!(true)),
        ("recompute_granularity", json!("none")),
        ("moe_token_dispatcher_type", json!("flex")),
        ("moe_flex_dispatcher_backend", json!("hybridep")),
        ("cuda_graph_impl", json!("transformer_engine")),
        ("cuda_graph_scope", json!(["moe_router", "moe_preprocess"])),
        ("tp_comm_overlap", json!(true)),
        ("use_distributed_optimizer", json!(true)),
    ] {
        assert_eq!(tr(r, k), v, "{k}");
    }
    assert!(r.unresolved.is_empty(), "{:?}", r.unresolved);
}

/// recipes/llama/h100/llama3.py, read by hand: 1107 `def llama31_70b_pretrain_32gpu_h100_bf16_config()`: 1122/1131
/// seq_length = SEQUENCE_LENGTH_128K (36: 131072), 1124-1130 TP 4, PP 4, VPP 5, CP 2, SP True, 1134-1135 global batch
/// 512, micro batch 1, 1154 recompute_granularity None, 1176 `data_parallel_sharding_strategy = "no_shard"`, 1186-1187
/// `CommOverlapConfig(tp_comm_overlap=True, ...)`, 1191 `cfg.mixed_precision = bf16_mixed()` (training/mixed_precision.py
/// bf16_mixed: grad_reduce_in_fp32=True). Its legacy alias llama31_70b_pretrain_config (recipes/llama/llama3.py).
#[test]
fn llama31_70b_32gpu_as_the_source_reads() {
    let r = recipe("llama31_70b_pretrain_32gpu_h100_bf16_config");
    assert_eq!((r.model.as_str(), r.gpus), ("llama-3.1-70b", Some(32)));
    for (k, v) in [
        ("tensor_model_parallel_size", 4),
        ("pipeline_model_parallel_size", 4),
        ("virtual_pipeline_model_parallel_size", 5),
        ("context_parallel_size", 2),
    ] {
        assert_eq!(par(r, k), json!(v), "{k}");
    }
    assert_eq!(par(r, "sequence_parallel"), json!(true));
    for (k, v) in [
        ("seq_length", json!(131072)),
        ("global_batch_size", json!(512)),
        ("micro_batch_size", json!(1)),
        ("recompute_granularity", json!("none")),
        ("data_parallel_sharding_strategy", json!("no_shard")),
        ("tp_comm_overlap", json!(true)),
        ("precision", json!("bf16")),
    ] {
        assert_eq!(tr(r, k), v, "{k}");
    }
    // bf16_mixed's own grad_reduce_in_fp32 = True is what meshplan's bf16 precision selects: not restated.
    assert_eq!(tr(r, "grad_reduce_in_fp32"), Value::Null);
    let alias = recipe("llama31_70b_pretrain_config");
    assert_eq!(alias.alias_of.as_deref(), Some("llama31_70b_pretrain_32gpu_h100_bf16_config"));
    assert_eq!((&alias.parallelism, &alias.training), (&r.parallelism, &r.training));
}

/// recipes/deepseek/h100/deepseek_v3.py, read by hand: 105 `def deepseek_v3_pretrain_1024gpu_h100_bf16_config()`:
/// TP 2, PP 16, VPP None, EP 64, ETP 1, SP True, mtp_num_layers 1; set_deepseek_v3_pipeline_model_parallel_layout
/// picks layout_map[(16, 1)] (line 58): [embedding + 4 decoder], 14 × [4 decoder], [decoder, mtp, loss]; 165 global
/// batch 4096; 206-212 `MixedPrecisionConfig(bf16=True, ..., grad_reduce_in_fp32=False)` (no recipe name);
/// 220-224 precision-aware optimizer with main grads, exp_avg and exp_avg_sq in bfloat16, main params float32;
/// dispatcher "alltoall" with backend "hybridep", which apply_flex_dispatcher_backend turns into "flex" on an H100.
#[test]
fn deepseek_v3_1024gpu_as_the_source_reads() {
    let r = recipe("deepseek_v3_pretrain_1024gpu_h100_bf16_config");
    assert_eq!((r.model.as_str(), r.gpus), ("deepseek-v3", Some(1024)));
    assert_eq!(r.mixed_precision_recipe, None);
    assert_eq!(par(r, "tensor_model_parallel_size"), json!(2));
    assert_eq!(par(r, "pipeline_model_parallel_size"), json!(16));
    assert_eq!(par(r, "expert_model_parallel_size"), json!(64));
    let d = |n: usize| vec![json!("decoder"); n];
    let mut layout = vec![Value::Array([vec![json!("embedding")], d(4)].concat())];
    layout.extend((0..14).map(|_| Value::Array(d(4))));
    layout.push(json!(["decoder", "mtp", "loss"]));
    assert_eq!(par(r, "pipeline_model_parallel_layout"), Value::Array(layout));
    for (k, v) in [
        ("global_batch_size", json!(4096)),
        ("grad_reduce_in_fp32", json!(false)),
        ("use_precision_aware_optimizer", json!(true)),
        ("main_params_dtype", json!("fp32")),
        ("main_grads_dtype", json!("bf16")),
        ("exp_avg_dtype", json!("bf16")),
        ("exp_avg_sq_dtype", json!("bf16")),
        ("moe_token_dispatcher_type", json!("flex")),
        ("moe_flex_dispatcher_backend", json!("hybridep")),
    ] {
        assert_eq!(tr(r, k), v, "{k}");
    }
}

/// recipes/nemotronh/h100/nemotron_3_nano.py, read by hand: 65 `def nemotron_3_nano_pretrain_8gpu_h100_bf16_config()`
/// builds its provider with expert_model_parallel_size=8 (125), sets 155 cuda_graph_impl "transformer_engine" and 156
/// `set_cuda_graph_modules(cfg.model, ["attn", "mamba"])` (utils/cuda_graph.py: the modules list, scope cleared), and
/// 170-171 selective recompute of ["moe", "layernorm"].
#[test]
fn nemotron_3_nano_8gpu_as_the_source_reads() {
    let r = recipe("nemotron_3_nano_pretrain_8gpu_h100_bf16_config");
    assert_eq!((r.model.as_str(), r.gpus), ("nemotron-3-nano-30b-a3b", Some(8)));
    assert_eq!(par(r, "expert_model_parallel_size"), json!(8));
    assert_eq!(tr(r, "cuda_graph_impl"), json!("transformer_engine"));
    assert_eq!(tr(r, "cuda_graph_scope"), json!(["attn", "mamba"]));
    assert_eq!(tr(r, "recompute_granularity"), json!("selective"));
    assert_eq!(tr(r, "recompute_modules"), json!(["moe", "layernorm"]));
}

/// The model a test gives a recipe whose model has no preset (any preset: the recipe's settings are what is checked).
fn model_of(r: &recipes::Recipe) -> Option<Value> {
    r.preset().is_none().then(|| json!("qwen3-30b-a3b"))
}

/// Every recipe is a plan meshplan reads: its model is a preset (or, without one, the plan's model: alone it is an
/// input error naming the Hugging Face id), and every parallelism and training key and value it carries is read without
/// an unknown-field or invalid-value diagnostic.
#[test]
fn every_recipe_reads_as_a_plan() {
    for r in recipes::all() {
        let mut plan = match r.gpu {
            Some(_) => json!({"recipe": r.name}),
            None => json!({"recipe": r.name, "cluster": {"gpu": "h100-sxm-80gb", "num_nodes": 8}}),
        };
        if let Some(model) = model_of(r) {
            let e = plan_value(&plan).unwrap_err();
            assert_eq!(e.code.as_str(), "missing-model", "{}", r.name);
            assert!(e.message.contains(r.hf_model_id.as_deref().unwrap_or("builds its model")), "{}: {}", r.name, e.message);
            plan["model"] = model;
        }
        let report = plan_value(&plan).unwrap_or_else(|e| panic!("{}: {e}", r.name));
        let bad: Vec<_> = report.diagnostics.iter().filter(|d| matches!(d.code.as_str(), "unknown-field" | "invalid-value" | "invalid-section")).collect();
        assert!(bad.is_empty(), "{}: {bad:?}", r.name);
        assert_eq!(report.plan.model_key, r.preset().unwrap_or("qwen3-30b-a3b"), "{}", r.name);
        assert_eq!(report.plan.recipe.as_deref(), Some(r.name.as_str()));
        if let Some(n) = r.gpus {
            assert_eq!(report.plan.world_size(), n, "{}", r.name);
        }
        assert!(!r.description.is_empty());
    }
}

/// A plan naming a recipe takes the recipe's values unless it sets its own: the 16-GPU Qwen3-30B-A3B recipe (EP 16,
/// micro-batch 1, grad reduce in bf16) with the plan's EP 8 and micro-batch 2 on 2 nodes of 8 H100.
#[test]
fn the_plan_overrides_the_recipe_key_by_key() {
    let report = plan_value(&json!({
        "recipe": "qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config",
        "cluster": {"num_nodes": 4},
        "training": {"micro_batch_size": 2},
        "parallelism": {"expert_model_parallel_size": 8},
    }))
    .unwrap();
    let p = &report.plan;
    // Overridden.
    assert_eq!((p.training.micro_batch_size, p.parallelism.expert_model_parallel_size, p.cluster.num_nodes), (2, 8, 4));
    // Kept from the recipe: its GPU and node size, global batch, sequence, grad reduce dtype, dispatcher.
    assert_eq!((p.cluster.gpu.as_str(), p.cluster.gpus_per_node), ("h100-sxm-80gb", 8));
    assert_eq!((p.training.global_batch_size, p.training.seq_length), (Some(1024), 4096));
    assert_eq!(p.training.settings.get("grad_reduce_in_fp32"), Some(json!(false)));
    assert_eq!(p.training.settings.get("moe_token_dispatcher_type"), Some(json!("flex")));
    assert_eq!(p.model_key, "qwen3-30b-a3b");
    // The report's plan echoes the recipe.
    let v = serde_json::to_value(&report).unwrap();
    assert_eq!(v["plan"]["recipe"], json!("qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config"));
}

/// A recipe's mixed-precision fields are those it changes on top of its mixed-precision recipe, so a plan that changes
/// the precision runs that precision's recipe: Llama 3.1 70B's bf16_mixed recipe planned in fp8 on H100 takes
/// bf16_with_fp8_current_scaling_mixed (training/mixed_precision.py: fp8_param_gather True, first and last layer in
/// BF16), while nemotron_h_bf16_with_fp8_current_scaling_mixed's 2 + 2 BF16 layers (not the 1 + 1 of the recipe
/// meshplan maps fp8 to) are kept as the recipe's own.
#[test]
fn a_changed_precision_takes_its_own_mixed_precision_recipe() {
    let report = plan_value(&json!({"recipe": "llama31_70b_pretrain_32gpu_h100_bf16_config", "training": {"precision": "fp8"}})).unwrap();
    let (s, gpu) = (&report.plan.training.settings, &report.plan.gpu);
    assert_eq!(s.resolved("fp8_param_gather", gpu), Some(json!(true)));
    assert_eq!(s.resolved("first_last_layers_bf16", gpu), Some(json!(true)));
    let r = recipe("nemotronh_56b_pretrain_8gpu_h100_bf16_config");
    assert_eq!(r.mixed_precision_recipe.as_deref(), Some("nemotron_h_bf16_with_fp8_current_scaling_mixed"));
    assert_eq!((tr(r, "precision"), tr(r, "fp8_recipe")), (json!("fp8"), json!("tensorwise")));
    assert_eq!((tr(r, "num_layers_at_start_in_bf16"), tr(r, "num_layers_at_end_in_bf16")), (json!(2), json!(2)));
}

/// A recipe of fewer GPUs than a node runs on one node of that many: nemotronh_8b on 2 H100.
#[test]
fn a_recipe_smaller_than_a_node_is_one_node() {
    let report = plan_value(&json!({"recipe": "nemotronh_8b_pretrain_2gpu_h100_bf16_config"})).unwrap();
    assert_eq!((report.plan.cluster.gpus_per_node, report.plan.cluster.num_nodes), (2, 1));
}

/// Plan with a recipe → the plan-file export → planned again: the same report, and the file names the recipe.
#[test]
fn the_plan_file_round_trips_with_its_recipe() {
    for plan in [
        json!({"recipe": "qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config", "training": {"micro_batch_size": 2}}),
        json!({"recipe": "deepseek_v3_pretrain_1024gpu_h100_bf16_config"}),
        json!({"recipe": "llama31_70b_pretrain_config", "parallelism": {"context_parallel_size": 4}}),
    ] {
        let first = plan_value(&plan).unwrap();
        let file = export(ExportKind::Plan, &first.plan, &first);
        let file: Value = serde_json::from_str(&file).unwrap();
        assert_eq!(file["recipe"], plan["recipe"]);
        let second = plan_value(&file).unwrap();
        // The same run; what the first plan left out (listed under `assumptions`) the file may state outright.
        let (mut a, mut b) = (serde_json::to_value(&first).unwrap(), serde_json::to_value(&second).unwrap());
        a["assumptions"] = json!([]);
        b["assumptions"] = json!([]);
        assert_eq!(a, b, "{plan}");
    }
}

/// The Bridge exports of a plan naming a recipe start from it (`--recipe NAME`) and write only what the plan changes;
/// Megatron-LM's flags are written in full.
#[test]
fn exports_start_from_the_recipe_and_write_only_overrides() {
    let name = "qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config";
    let alone = plan_value(&json!({"recipe": name})).unwrap();
    let launch = export(ExportKind::BridgeCli, &alone.plan, &alone);
    assert!(launch.contains(&format!("--recipe {name}")), "{launch}");
    assert!(!launch.contains("model.expert_model_parallel_size="), "{launch}");
    assert!(!launch.contains("train.micro_batch_size="), "{launch}");

    let changed = plan_value(&json!({"recipe": name, "training": {"micro_batch_size": 2}, "parallelism": {"expert_model_parallel_size": 8}})).unwrap();
    let launch = export(ExportKind::BridgeCli, &changed.plan, &changed);
    assert!(launch.contains("model.expert_model_parallel_size=8"), "{launch}");
    assert!(launch.contains("train.micro_batch_size=2"), "{launch}");
    assert!(!launch.contains("model.tensor_model_parallel_size="), "{launch}");
    let python = export(ExportKind::Bridge, &changed.plan, &changed);
    assert!(python.contains(&format!("cfg = {name}()")), "{python}");
    assert!(python.contains("cfg.model.expert_model_parallel_size = 8"), "{python}");
    assert!(!python.contains("cfg.model.tensor_model_parallel_size"), "{python}");

    let mlm = export(ExportKind::MegatronLm, &changed.plan, &changed);
    for flag in ["--tensor-model-parallel-size 1", "--expert-model-parallel-size 8", "--micro-batch-size 2", "--global-batch-size 1024", "--seq-length 4096"] {
        assert!(mlm.contains(flag), "{flag} missing:\n{mlm}");
    }
}

/// Hostile `recipe` values: a megabyte-long name, a number, an object, null, and a near miss of 300 characters. Each is
/// a diagnostic (or, without a model to fall back on, an input error), answered at once.
#[test]
fn hostile_recipe_values_are_diagnostics() {
    let long = "qwen3_30b_a3b_pretrain_config".repeat(40_000);
    let cluster = json!({"gpu": "h100-sxm-80gb", "num_nodes": 1});
    for bad in [json!(long), json!(3), json!({"name": "x"}), json!("x".repeat(300))] {
        let t = std::time::Instant::now();
        let report = plan_value(&json!({"recipe": bad, "model": "qwen3-8b", "cluster": cluster})).unwrap();
        assert!(report.diagnostics.iter().any(|d| d.code.as_str() == "invalid-value"), "{:?}", report.diagnostics);
        assert_eq!(report.plan.recipe, None);
        assert!(t.elapsed().as_secs_f64() < 1.0);
    }
    // Without a model: an input error naming the nearest recipe.
    let e = plan_value(&json!({"recipe": "qwen3_30b_a3b_pretrain_confg", "cluster": cluster})).unwrap_err();
    assert_eq!(e.code.as_str(), "missing-model");
    assert!(e.fix.contains("qwen3_30b_a3b_pretrain_config"), "{}", e.fix);
    // null: no recipe, the plan as it is.
    let report = plan_value(&json!({"recipe": null, "model": "qwen3-8b", "cluster": cluster})).unwrap();
    assert_eq!(report.plan.recipe, None);
}

/// The search reads a plan naming a recipe with the recipe's batch and sequence (qwen3_30b_a3b 16-GPU: global batch
/// 1024, seq 4096), which it requires.
#[test]
fn the_search_takes_a_recipe() {
    let opts = meshplan_core::search::SearchOptions::default();
    let result = meshplan_core::search::search_value(&json!({"recipe": "qwen3_8b_pretrain_4gpu_h100_bf16_config"}), &opts).unwrap();
    assert_eq!(result.world_size, 4);
    assert!(result.evaluated > 0);
}

#[test]
fn a_recipe_written_out_plans_the_same_run() {
    // recipes::expand writes the recipe's values into the plan (the page's "no recipe"): every recipe, alone and with a
    // plan key of its own laid over it, plans the same derived sizes and memory without the recipe as with it.
    // A recipe whose name states no GPU takes the plan's cluster.
    let cluster = json!({"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 2});
    for r in recipes::all() {
        let mut base = if r.gpu.is_some() { json!({"recipe": r.name}) } else { json!({"recipe": r.name, "cluster": cluster}) };
        if let Some(model) = model_of(r) {
            base["model"] = model;
        }
        let mut small = base.clone();
        small["training"] = json!({"micro_batch_size": 2});
        for plan in [base, small] {
            let with = plan_value(&plan).unwrap();
            let written = recipes::expand(&plan).unwrap();
            assert!(written.get("recipe").is_none() && written["model"] == model_of(r).unwrap_or(json!(r.model)), "{}", r.name);
            let without = plan_value(&written).unwrap();
            assert_eq!((with.derived, with.memory), (without.derived, without.memory), "{}", r.name);
            assert_eq!(without.plan.recipe, None);
        }
    }
    // The plan's own value wins, as with the recipe: micro-batch 2 over Qwen3-30B-A3B's 16-GPU recipe's.
    let written = recipes::expand(&json!({"recipe": "qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config", "training": {"micro_batch_size": 2}})).unwrap();
    assert_eq!(written["training"]["micro_batch_size"], json!(2));
    assert_eq!(recipes::expand(&json!({"model": "llama-3.1-8b"})), None);
    assert_eq!(recipes::expand(&json!({"recipe": "no_such_recipe"})), None);
}

/// Bridge's performance recipes (src/megatron/bridge/perf_recipes at the pinned commit) are recipes too, named
/// `perf.<function>` (their functions repeat some library recipes' names) with kind "perf". Read by hand from the source:
/// llama/gb200/llama3.py:35 sets TP 1, PP 1, GBS 128, MBS 2, cuda_graph_impl "local" with scope ["full_iteration"]
/// (meshplan's full_iteration), CommOverlapConfig(tp_comm_overlap=False); deepseek/gb300/deepseek_v3.py:133 sets PP 2,
/// VP 8, EP 32, GBS 4096, no recompute modules and the layout "Et*4|(t*4|)*14tmL", with MXFP8.
#[test]
fn perf_recipes_read_as_the_source_reads() {
    let r = recipe("perf.llama3_8b_pretrain_8gpu_gb200_bf16_config");
    assert_eq!((r.kind.as_str(), r.model.as_str(), r.gpu.as_deref(), r.gpus), ("perf", "llama-3.1-8b", Some("gb200"), Some(8)));
    assert!(r.source.ends_with("perf_recipes/llama/gb200/llama3.py:35"), "{}", r.source);
    assert_eq!((par(r, "tensor_model_parallel_size"), par(r, "pipeline_model_parallel_size")), (json!(1), json!(1)));
    assert_eq!((tr(r, "global_batch_size"), tr(r, "micro_batch_size")), (json!(128), json!(2)));
    assert_eq!((tr(r, "cuda_graph_impl"), tr(r, "cuda_graph_scope")), (json!("full_iteration"), json!([])));
    assert_eq!(tr(r, "tp_comm_overlap"), json!(false));
    let d = recipe("perf.deepseek_v3_pretrain_256gpu_gb300_fp8mx_config");
    assert!(d.source.ends_with("perf_recipes/deepseek/gb300/deepseek_v3.py:133"), "{}", d.source);
    assert_eq!(d.gpus, Some(256));
    assert_eq!(par(d, "pipeline_model_parallel_size"), json!(2));
    assert_eq!(par(d, "virtual_pipeline_model_parallel_size"), json!(8));
    assert_eq!(par(d, "expert_model_parallel_size"), json!(32));
    assert_eq!(par(d, "pipeline_model_parallel_layout"), json!("Et*4|(t*4|)*14tmL"));
    assert_eq!((tr(d, "precision"), tr(d, "fp8_recipe"), tr(d, "global_batch_size")), (json!("fp8"), json!("mxfp8"), json!(4096)));
    // A plan naming it plans the recipe's 256 GPUs.
    let report = plan_value(&json!({"recipe": "perf.deepseek_v3_pretrain_256gpu_gb300_fp8mx_config"})).unwrap();
    assert_eq!(report.plan.world_size(), 256);
}

/// A perf recipe the performance summary measured shows the published figure beside the prediction while the plan runs
/// its configuration: DeepSeek-V3 on 256 GB300 in MXFP8 (26.08 table, docs/performance-summary.md at 067f987df03b:
/// 6,288 tokens/s/GPU, 1,635 model TFLOP/s/GPU; the validation row mbval-0001). Another global batch is another run.
#[test]
fn a_measured_perf_recipe_shows_the_published_throughput_beside_the_prediction() {
    let name = "perf.deepseek_v3_pretrain_256gpu_gb300_fp8mx_config";
    let report = plan_value(&json!({"recipe": name})).unwrap();
    let p = report.published.expect("published beside the prediction");
    assert_eq!((p.recipe.as_str(), p.measured.release.as_str()), (name, "26.08"));
    assert_eq!((p.measured.model_tflops_per_gpu, p.measured.tokens_per_s_per_gpu), (1635.0, 6288.0));
    let predicted = report.performance.unwrap().model_tflops_per_gpu;
    assert_eq!(p.predicted_model_tflops_per_gpu, predicted);
    assert!((p.error - (predicted / 1635.0 - 1.0)).abs() < 1e-12);
    let other = plan_value(&json!({"recipe": name, "training": {"global_batch_size": 2048}})).unwrap();
    assert!(other.published.is_none());
}

/// The recipes whose model is a preset found through the Hugging Face id their AutoBridge.from_hf_pretrained call
/// names (issue 21), read by hand. recipes/llama/h100/llama3.py:
/// 235 `def llama3_8b_pretrain_2gpu_h100_bf16_config()`, 240 `cfg = _pretrain_common()` (recipes/common.py:130
/// mixed_precision "bf16_mixed"), 242 `AutoBridge.from_hf_pretrained("meta-llama/Meta-Llama-3-8B")` (the llama-3-8b
/// preset), 252-259 TP 1, PP 1, layout None, VPP None, CP 2, SP False, seq_length 8192, 262-263 global batch 512,
/// micro batch 1, 282 recompute None, 293-297 fp32 optimizer state, 304-311 overlap_grad_reduce / overlap_param_gather
/// True, distributed optimizer, no Megatron-FSDP; 2 H100 in its name.
#[test]
fn llama3_8b_2gpu_is_read_through_its_hf_id() {
    let r = recipe("llama3_8b_pretrain_2gpu_h100_bf16_config");
    assert_eq!(r.model, "llama-3-8b");
    assert_eq!(r.kind, "pretrain");
    assert_eq!((r.gpu.as_deref(), r.gpus), (Some("h100-sxm-80gb"), Some(2)));
    assert_eq!(r.mixed_precision_recipe.as_deref(), Some("bf16_mixed"));
    for (k, v) in [
        ("tensor_model_parallel_size", json!(1)),
        ("pipeline_model_parallel_size", json!(1)),
        ("context_parallel_size", json!(2)),
        ("sequence_parallel", json!(false)),
    ] {
        assert_eq!(par(r, k), v, "{k}");
    }
    assert_eq!(par(r, "virtual_pipeline_model_parallel_size"), Value::Null);
    for (k, v) in [
        ("seq_length", json!(8192)),
        ("micro_batch_size", json!(1)),
        ("global_batch_size", json!(512)),
        ("precision", json!("bf16")),
        ("recompute_granularity", json!("none")),
        ("use_distributed_optimizer", json!(true)),
        ("overlap_grad_reduce", json!(true)),
        ("overlap_param_gather", json!(true)),
        ("main_grads_dtype", json!("fp32")),
    ] {
        assert_eq!(tr(r, k), v, "{k}");
    }
    // Its legacy alias (recipes/llama/llama3.py:23) is the same recipe.
    let alias = recipe("llama3_8b_pretrain_config");
    assert_eq!(alias.alias_of.as_deref(), Some("llama3_8b_pretrain_2gpu_h100_bf16_config"));
    assert_eq!((&alias.parallelism, &alias.training), (&r.parallelism, &r.training));
    // Planned: 2 GPUs at TP 1 · PP 1 · CP 2 leave DP 2 / (1·1·2) = 1, so 512 / (1 · 1) = 512 microbatches.
    let report = plan_value(&json!({"recipe": "llama3_8b_pretrain_2gpu_h100_bf16_config"})).unwrap();
    assert_eq!(report.plan.model_key, "llama-3-8b");
    assert_eq!((report.derived.data_parallel_size, report.derived.num_microbatches), (1, 512));
}

/// recipes/qwen/h100/qwen2.py: 1539 `def qwen25_7b_sft_2gpu_h100_bf16_config()`, 1544 `cfg = _sft_common()`
/// (recipes/common.py:183-184 global batch 128, micro batch 1; 230 mixed_precision "bf16_mixed"), 1547
/// `AutoBridge.from_hf_pretrained("Qwen/Qwen2.5-7B")` (the qwen2.5-7b preset), 1553-1559 TP 2, PP 1, CP 1, SP False,
/// 1562 seq_length 2048, 1570 `bf16_mixed()`, 1598 recompute None; 2 H100 in its name.
#[test]
fn qwen25_7b_sft_is_read_through_its_hf_id() {
    let r = recipe("qwen25_7b_sft_2gpu_h100_bf16_config");
    assert_eq!((r.model.as_str(), r.kind.as_str()), ("qwen2.5-7b", "sft"));
    assert_eq!((r.gpu.as_deref(), r.gpus), (Some("h100-sxm-80gb"), Some(2)));
    assert_eq!(r.mixed_precision_recipe.as_deref(), Some("bf16_mixed"));
    for (k, v) in [("tensor_model_parallel_size", json!(2)), ("pipeline_model_parallel_size", json!(1)), ("context_parallel_size", json!(1)), ("sequence_parallel", json!(false))] {
        assert_eq!(par(r, k), v, "{k}");
    }
    for (k, v) in [("seq_length", json!(2048)), ("micro_batch_size", json!(1)), ("global_batch_size", json!(128)), ("precision", json!("bf16")), ("recompute_granularity", json!("none"))] {
        assert_eq!(tr(r, k), v, "{k}");
    }
}

/// recipes/gemma/h100/gemma2.py: 117 `def gemma2_9b_pretrain_8gpu_h100_bf16_config()`, 122 `cfg = _pretrain_common()`
/// (recipes/common.py:66-67 global batch 32, micro batch 2; 130 "bf16_mixed"), 125
/// `AutoBridge.from_hf_pretrained("google/gemma-2-9b")` (the gemma-2-9b preset), 136-143 TP 8, PP 1, CP 1, SP False,
/// seq_length 4096, 187-188 overlap_grad_reduce / overlap_param_gather False, 190 distributed optimizer; 8 H100.
#[test]
fn gemma2_9b_pretrain_is_read_through_its_hf_id() {
    let r = recipe("gemma2_9b_pretrain_8gpu_h100_bf16_config");
    assert_eq!((r.model.as_str(), r.kind.as_str()), ("gemma-2-9b", "pretrain"));
    assert_eq!((r.gpu.as_deref(), r.gpus), (Some("h100-sxm-80gb"), Some(8)));
    for (k, v) in [("tensor_model_parallel_size", json!(8)), ("pipeline_model_parallel_size", json!(1)), ("context_parallel_size", json!(1)), ("sequence_parallel", json!(false))] {
        assert_eq!(par(r, k), v, "{k}");
    }
    for (k, v) in [
        ("seq_length", json!(4096)),
        ("micro_batch_size", json!(2)),
        ("global_batch_size", json!(32)),
        ("precision", json!("bf16")),
        ("overlap_grad_reduce", json!(false)),
        ("overlap_param_gather", json!(false)),
        ("use_distributed_optimizer", json!(true)),
    ] {
        assert_eq!(tr(r, k), v, "{k}");
    }
}

/// Every library recipe that names a Hugging Face id which is a preset's (models.json `hf_id`, or the current name of
/// a renamed repository: meta-llama's Meta-Llama-3.1-* → Llama-3.1-*) is read with that preset: none is left skipped.
#[test]
fn no_recipe_of_a_preset_model_is_skipped() {
    let file: Value = serde_json::from_str(include_str!("../data/bridge_recipes.json")).unwrap();
    let ids: Vec<String> = meshplan_core::presets::models().iter().map(|m| m.hf_id.to_lowercase()).collect();
    for s in file["skipped"].as_array().unwrap() {
        if let Some(hf) = s["hf_model_id"].as_str() {
            assert!(!ids.contains(&hf.to_lowercase()), "{} is skipped, but its model {hf} is a preset: {}", s["name"], s["reason"]);
        }
    }
}

/// A recipe whose model has no preset is data too (issue 21), with the Hugging Face id it builds its model from.
/// recipes/qwen/h100/qwen2.py: 302 `def qwen2_72b_pretrain_32gpu_h100_bf16_config()`, 307 `_pretrain_common()`
/// (recipes/common.py:66-67: global batch 32, micro batch 2), 310 `AutoBridge.from_hf_pretrained("Qwen/Qwen2-72B")` (no
/// meshplan preset), 321-329 TP 8, PP 4, no VPP, CP 1, SP False, seq_length 4096; 32 H100 in its name.
/// Without a model the plan is an input error naming that id and what to give; with a model (its config.json, or a
/// preset key of the same shape: Qwen2.5 72B) the recipe's settings apply: 32 GPUs at TP 8 · PP 4 leave DP 1, and a
/// global batch of 32 in micro-batches of 2 is 16 microbatches.
#[test]
fn a_recipe_without_a_preset_needs_its_model_and_then_applies() {
    let name = "qwen2_72b_pretrain_32gpu_h100_bf16_config";
    let r = recipe(name);
    assert_eq!((r.preset(), r.hf_model_id.as_deref()), (None, Some("Qwen/Qwen2-72B")));
    assert!(r.explain().contains("Qwen/Qwen2-72B"), "{}", r.explain());

    let e = plan_value(&json!({"recipe": name})).unwrap_err();
    assert_eq!(e.code.as_str(), "missing-model");
    assert!(e.message.contains("this recipe's model is Qwen/Qwen2-72B"), "{}", e.message);
    assert!(e.fix.contains("model.hf_config"), "{}", e.fix);

    // Qwen2 72B's config.json fields (a Qwen2ForCausalLM: 80 layers, hidden 8192, FFN 29568, 64 heads, 8 KV heads,
    // vocabulary 152,064, biased QKV), written for this test.
    let hf = json!({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 8192, "intermediate_size": 29568,
        "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8, "vocab_size": 152064,
        "max_position_embeddings": 131072, "hidden_act": "silu", "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": false});
    for model in [json!({"hf_config": hf}), json!("qwen2.5-72b")] {
        let report = plan_value(&json!({"recipe": name, "model": model})).unwrap();
        let (p, t) = (&report.plan.parallelism, &report.plan.training);
        assert_eq!((p.tensor_model_parallel_size, p.pipeline_model_parallel_size, p.context_parallel_size), (8, 4, 1), "{model}");
        assert_eq!(p.virtual_pipeline_model_parallel_size, None);
        assert!(!p.sequence_parallel);
        assert_eq!((t.seq_length, t.global_batch_size, t.micro_batch_size), (4096, Some(32), 2));
        assert_eq!(report.plan.cluster.gpus_per_node * report.plan.cluster.num_nodes, 32);
        assert_eq!((report.derived.data_parallel_size, report.derived.num_microbatches), (1, 16));
        assert_eq!(report.plan.model.num_layers, 80);
        assert!(!report.diagnostics.iter().any(|d| d.code.as_str() == "recipe-model-differs"), "{:?}", report.diagnostics);
        assert_eq!(report.plan.recipe.as_deref(), Some(name));
    }
}

/// An import of a launch naming that recipe: without a model, the import error names the recipe's Hugging Face id;
/// with `--model`, the plan is the recipe (its TP 8 · PP 4, qwen2.py:321-322) with the model given. Llama 3 70B, which
/// Bridge's llama3_70b recipes build, is a preset (models.json llama-3-70b): those recipes need no model.
#[test]
fn an_import_of_a_recipe_without_a_preset_names_its_model() {
    use meshplan_core::imports::{self, ImportOptions};
    let text = "python scripts/training/run_recipe.py --recipe qwen2_72b_pretrain_32gpu_h100_bf16_config train.global_batch_size=64";
    let e = imports::import_plan(text, &ImportOptions::default()).unwrap_err();
    assert!(e.message.contains("Qwen/Qwen2-72B"), "{}", e.message);
    let opts = ImportOptions { model: Some("qwen2.5-72b".into()), ..Default::default() };
    let (_, plan, _) = imports::import_plan(text, &opts).unwrap();
    let p = &plan.parallelism;
    assert_eq!((p.tensor_model_parallel_size, p.pipeline_model_parallel_size, p.virtual_pipeline_model_parallel_size, p.context_parallel_size), (8, 4, None, 1));
    assert_eq!((plan.training.global_batch_size, plan.model_key.as_str()), (Some(64), "qwen2.5-72b"));
    let llama = "python scripts/training/run_recipe.py --recipe llama3_70b_pretrain_32gpu_h100_bf16_config";
    let (_, plan, _) = imports::import_plan(llama, &ImportOptions::default()).unwrap();
    assert_eq!((plan.model_key.as_str(), plan.model.max_position_embeddings), ("llama-3-70b", Some(8192)));
}

/// PEFT recipes are read with their LoRA settings (meshplan sizes LoRA: memory/peft.rs). recipes/llama/h100/llama3.py:
/// 2336 `def llama3_8b_peft_1gpu_h100_bf16_config(peft_scheme="lora", …)`, 2349 `_peft_common()` (recipes/common.py),
/// 2353 AutoBridge.from_hf_pretrained(hf_path) (Meta-Llama-3-8B: llama-3-8b), 2359-2361 seq_length 4096, 2365-2369
/// `default_peft_config("lora")` (recipes/utils/dataset_utils.py:71-72: LoRA(), whose target_modules are the four
/// defaults, peft/lora.py:143-145) with dim 8, alpha 16; 2377-2382 TP 1, PP 1, CP 1, SP False; 2385 "bf16_mixed";
/// 2391-2392 global batch 8, micro batch 1; 1 H100.
/// The adapters by hand (Llama 3 8B: h 4,096, 32 heads × 128, 8 groups, SwiGLU FFN 14,336, 32 layers; r 8, TP 1):
/// linear_qkv 8·(4,096 + 4,096 + 2·1,024) = 81,920, linear_proj 8·(4,096 + 4,096) = 65,536, linear_fc1
/// 8·(4,096 + 2·14,336) = 262,144, linear_fc2 8·(14,336 + 4,096) = 147,456: 557,056 a layer, 17,825,792 in all; only
/// they carry gradients (fp32 main grads, 4 B: 71,303,168 B) and Adam's two fp32 moments (8 B: 142,606,336 B).
#[test]
fn a_peft_recipe_plans_its_lora_adapters() {
    use meshplan_core::memory::TermKey;
    let r = recipe("llama3_8b_peft_1gpu_h100_bf16_config");
    assert_eq!((r.kind.as_str(), r.model.as_str()), ("peft", "llama-3-8b"));
    assert_eq!((r.gpu.as_deref(), r.gpus), (Some("h100-sxm-80gb"), Some(1)));
    for (k, v) in [("peft", json!("lora")), ("lora_dim", json!(8)), ("seq_length", json!(4096)), ("global_batch_size", json!(8)), ("micro_batch_size", json!(1))] {
        assert_eq!(tr(r, k), v, "{k}");
    }
    assert_eq!(tr(r, "lora_target_modules"), Value::Null, "the default four targets: the settings row's default");
    assert_eq!((par(r, "tensor_model_parallel_size"), par(r, "pipeline_model_parallel_size")), (json!(1), json!(1)));
    let report = plan_value(&json!({"recipe": r.name})).unwrap();
    let term = |key: TermKey| report.memory.stages[0].terms.iter().filter(|t| t.key == key).map(|t| t.bytes).sum::<u64>();
    assert_eq!(term(TermKey::Gradients), 71_303_168);
    assert_eq!(term(TermKey::OptimizerMoments), 142_606_336);
}

/// An unknown recipe name (issue 21's `{"recipe": "llama3_8b_pretrain_config_typo"}`) is never dropped: without a model
/// it is a missing-model input error whose fix names the nearest recipe (llama3_8b_pretrain_config, Bridge's Llama 3 8B
/// alias, recipes/llama/llama3.py:23); with a model, an unknown-recipe diagnostic naming it (and its `apply`), the plan
/// read without the recipe.
#[test]
fn an_unknown_recipe_name_gives_the_nearest() {
    let e = meshplan_core::plan_str(r#"{"recipe": "llama3_8b_pretrain_config_typo"}"#).unwrap_err();
    assert_eq!(e.code.as_str(), "missing-model");
    assert!(e.fix.contains("\"llama3_8b_pretrain_config\""), "{}", e.fix);
    let report = meshplan_core::plan_str(r#"{"recipe": "llama3_8b_pretrain_config_typo", "model": "llama-3-8b", "cluster": {"gpu": "h100-sxm-80gb"}}"#).unwrap();
    let d = report.diagnostics.iter().find(|d| d.code.as_str() == "unknown-recipe").expect("an unknown-recipe diagnostic");
    assert!(d.fix.contains("\"llama3_8b_pretrain_config\""), "{}", d.fix);
    assert_eq!(report.plan.recipe, None);
}

/// A legacy alias is written in the data file as its name, target and source only; read, it is its target's recipe
/// (the same model, kind, cluster, settings and unresolved list) under its own name and source.
#[test]
fn every_alias_reads_as_its_target() {
    let file: Value = serde_json::from_str(include_str!("../data/bridge_recipes.json")).unwrap();
    let aliases = recipes::all().iter().filter(|r| r.alias_of.is_some()).count();
    assert!(aliases >= 100, "{aliases} aliases");
    for entry in file["recipes"].as_array().unwrap().iter().filter(|e| e.get("alias_of").is_some()) {
        let (alias, target) = (recipe(entry["name"].as_str().unwrap()), recipe(entry["alias_of"].as_str().unwrap()));
        assert_eq!(alias.source, entry["source"].as_str().unwrap());
        assert!(!alias.kind.is_empty() && target.alias_of.is_none(), "{}", alias.name);
        assert_eq!(
            (&alias.model, &alias.hf_model_id, &alias.kind, &alias.gpu, alias.gpus, &alias.mixed_precision_recipe),
            (&target.model, &target.hf_model_id, &target.kind, &target.gpu, target.gpus, &target.mixed_precision_recipe),
            "{}",
            alias.name
        );
        assert_eq!((&alias.parallelism, &alias.training, &alias.unresolved), (&target.parallelism, &target.training, &target.unresolved), "{}", alias.name);
    }
}
