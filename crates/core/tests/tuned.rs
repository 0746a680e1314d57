//! Tuned defaults (tuned.rs): what a plan leaves unstated is assumed from the nearest Megatron Bridge performance recipe
//! (the default, or `"defaults": "tuned"`); every assumption is listed with its source; `"megatron-core"` plans
//! Megatron-Core's plain defaults.
//! The recipes' values are read by hand from the Bridge source at the pinned commit (067f987df03b), cited per test.

use meshplan_core::settings::CudaGraphImpl;
use meshplan_core::{ExportKind, Report, export, plan_value};
use serde_json::json;

fn assumed<'a>(r: &'a Report, key: &str) -> Option<&'a meshplan_core::tuned::Assumption> {
    r.assumptions.iter().find(|a| a.key == key)
}

fn codes(r: &Report) -> Vec<&str> {
    r.diagnostics.iter().map(|d| d.code.as_str()).collect()
}

/// Llama 3.1 8B on 8 GB200 in BF16, nothing else stated: Bridge's perf recipe for that model × GPU × precision
/// (perf_recipes/llama/gb200/llama3.py:35, llama3_8b_pretrain_8gpu_gb200_bf16_config) runs the local full-iteration
/// CUDA graph (cuda_graph_impl "local", cuda_graph_scope ["full_iteration"]) and CommOverlapConfig(tp_comm_overlap=False).
#[test]
fn an_unstated_setting_takes_the_nearest_perf_recipes_value_and_names_it() {
    let plan = json!({"model": "llama-3.1-8b", "cluster": {"gpu": "gb200", "num_gpus": 8},
                      "training": {"seq_length": 8192, "global_batch_size": 128, "micro_batch_size": 2}, "defaults": "tuned"});
    let r = plan_value(&plan).unwrap();
    let graph = assumed(&r, "cuda_graph_impl").expect("cuda_graph_impl is assumed");
    assert_eq!(graph.value, json!("full_iteration"));
    assert!(graph.source.contains("perf.llama3_8b_pretrain_8gpu_gb200_bf16_config"), "{}", graph.source);
    assert!(graph.source.contains("perf_recipes/llama/gb200/llama3.py:35"), "{}", graph.source);
    assert_eq!(r.plan.training.settings.cuda_graph_impl, CudaGraphImpl::FullIteration);
    assert_eq!(assumed(&r, "tp_comm_overlap").map(|a| &a.value), Some(&json!(false)));
    // A dense model has no token dispatcher: its settings are not listed.
    assert!(assumed(&r, "moe_token_dispatcher_type").is_none());
    // Every listed key is one the plan left unstated, each once.
    let mut keys: Vec<&str> = r.assumptions.iter().map(|a| a.key.as_str()).collect();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), r.assumptions.len());
}

/// The plan's own keys win and are not listed; `"defaults": "megatron-core"` assumes nothing from a recipe: the plan runs
/// Megatron-Core's default (TransformerConfig.cuda_graph_impl = "none"). No switch at all is tuned defaults.
#[test]
fn stated_keys_win_and_the_switch_asks_for_plain_defaults() {
    let base = json!({"model": "llama-3.1-8b", "cluster": {"gpu": "gb200", "num_gpus": 8},
                      "training": {"seq_length": 8192, "global_batch_size": 128, "cuda_graph_impl": "transformer_engine"}, "defaults": "tuned"});
    let r = plan_value(&base).unwrap();
    assert!(assumed(&r, "cuda_graph_impl").is_none());
    assert_eq!(r.plan.training.settings.cuda_graph_impl, CudaGraphImpl::TransformerEngine);

    // A recipe that does not set a key: the 8-GPU GB200 Llama recipe leaves recompute_modules alone, so with tuned
    // defaults it is listed at Megatron-Core's default (null: ["core_attn"] once selective).
    let r = plan_value(&base).unwrap();
    let modules = assumed(&r, "recompute_modules").unwrap();
    assert_eq!((modules.value.clone(), modules.source.as_str()), (json!(null), meshplan_core::tuned::DEFAULT_SOURCE));

    let mut plain = base.clone();
    plain["defaults"] = json!("megatron-core");
    plain["training"].as_object_mut().unwrap().remove("cuda_graph_impl");
    let r = plan_value(&plain).unwrap();
    assert_eq!(r.plan.training.settings.cuda_graph_impl, CudaGraphImpl::None);
    // Plain defaults consult no recipe: what the plan leaves out is listed at Megatron-Core's default (what meshplan
    // did not read is always said). The reader takes the value as it takes any choice, trimmed and in any case.
    assert!(!r.assumptions.is_empty() && r.assumptions.iter().all(|a| meshplan_core::tuned::is_default_source(&a.source)), "{:?}", r.assumptions);
    assert!(assumed(&r, "cuda_graph_impl").is_some());
    plain["defaults"] = json!(" Megatron-Core ");
    assert_eq!(plan_value(&plain).unwrap(), r);

    // Without the switch the plan gets tuned defaults: the report is the one "tuned" gives, with the recipe's graph.
    let mut tuned = plain.clone();
    tuned["defaults"] = json!("tuned");
    plain.as_object_mut().unwrap().remove("defaults");
    let r = plan_value(&plain).unwrap();
    assert_eq!(r, plan_value(&tuned).unwrap());
    assert_eq!(r.plan.training.settings.cuda_graph_impl, CudaGraphImpl::FullIteration);
    assert!(assumed(&r, "cuda_graph_impl").is_some());

    let mut bad = plain.clone();
    bad["defaults"] = json!("bridge");
    assert!(codes(&plan_value(&bad).unwrap()).contains(&"invalid-value"));
}

/// A plan naming a recipe takes the recipe's values and assumes nothing more from another one. Without a switch it is
/// a Bridge launch of that recipe: Megatron-Core's plain defaults for the rest (Bridge's ConfigContainer defaults for
/// these settings), listed as such — the same report as `"defaults": "megatron-core"`.
#[test]
fn a_named_recipe_is_not_mixed_with_another() {
    let r = plan_value(&json!({"recipe": "perf.llama3_8b_pretrain_8gpu_gb200_bf16_config", "defaults": "tuned"})).unwrap();
    assert!(!r.assumptions.is_empty());
    assert!(r.assumptions.iter().all(|a| meshplan_core::tuned::is_default_source(&a.source)), "{:?}", r.assumptions);
    let bare = plan_value(&json!({"recipe": "perf.llama3_8b_pretrain_8gpu_gb200_bf16_config"})).unwrap();
    assert!(bare.assumptions.iter().all(|a| meshplan_core::tuned::is_default_source(&a.source)), "{:?}", bare.assumptions);
    let plain = plan_value(&json!({"recipe": "perf.llama3_8b_pretrain_8gpu_gb200_bf16_config", "defaults": "megatron-core"})).unwrap();
    assert_eq!(bare, plain);
    // The recipe's values are planned either way (llama3.py:50-51: the local full-iteration graph).
    assert_eq!(bare.plan.training.settings, r.plan.training.settings);
    assert_eq!(bare.plan.training.settings.cuda_graph_impl, CudaGraphImpl::FullIteration);
}

/// DeepSeek-V3 on 64 GB300 in MXFP8 with EP 1: the nearest perf recipe (deepseek/gb300/deepseek_v3.py:133, EP 32)
/// overlaps the EP all-to-all, which Megatron-Core refuses without expert parallelism (ep-overlap-invalid). The
/// assumption is not made: the plan keeps Megatron-Core's default (false) and has no such error.
#[test]
fn an_assumption_megatron_rejects_for_the_layout_is_not_made() {
    let plan = json!({"model": "deepseek-v3", "cluster": {"gpu": "gb300", "num_gpus": 64},
                      "training": {"seq_length": 4096, "global_batch_size": 1024, "precision": "fp8", "fp8_recipe": "mxfp8"},
                      "parallelism": {"pipeline_model_parallel_size": 8, "expert_model_parallel_size": 1}, "defaults": "tuned"});
    let r = plan_value(&plan).unwrap();
    assert!(!codes(&r).contains(&"ep-overlap-invalid"), "{:?}", codes(&r));
    let a = assumed(&r, "overlap_moe_expert_parallel_comm").unwrap();
    assert_eq!((a.value.clone(), a.source.as_str()), (json!(false), meshplan_core::tuned::DEFAULT_SOURCE));
    // The same plan with EP 8 keeps the recipe's overlap.
    let mut ep = plan.clone();
    ep["parallelism"]["expert_model_parallel_size"] = json!(8);
    ep["parallelism"]["virtual_pipeline_model_parallel_size"] = json!(2);
    let r = plan_value(&ep).unwrap();
    let a = assumed(&r, "overlap_moe_expert_parallel_comm").unwrap();
    assert_eq!(a.value, json!(true), "{:?}", codes(&r));
    assert!(a.source.contains("perf.deepseek_v3_pretrain_"), "{}", a.source);
}

/// The example: Llama 3.1 8B in FP8 on 64 H100, TP 1, PP 1, seq 8192, micro-batch 1 — a run that ran. With no
/// switch (tuned defaults) the H100 perf recipe's settings are assumed: the distributed optimizer, full recompute of 5
/// layers per block (llama/h100/llama3.py) and a bf16 gradient buffer (every perf recipe's `_benchmark_common` and
/// `_perf_precision`: perf_recipes/_common.py:73, :122 @ 067f987df03b): it fits. With Megatron-Core's plain defaults and
/// the same recipe settings stated, the one setting left unstated that decides is the gradient buffer: fp32 (4 B per
/// parameter, Bridge's bf16_mixed and fp8 recipes' grad_reduce_in_fp32 = True) against the parameter dtype (2 B):
/// 8,030,261,248 parameters × 2 B = 14.96 GiB more, unsharded (param_and_grad_buffer.py), and the allocator's
/// fragmentation on it (memory/overhead.rs FRAGMENTATION, 5.825%): 15.83 GiB of the device peak. The out-of-memory
/// verdict names that assumption and what fits.
#[test]
fn an_out_of_memory_verdict_names_the_assumed_setting_it_rests_on() {
    let tuned = json!({"model": "llama-3.1-8b", "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 64},
                       "training": {"seq_length": 8192, "global_batch_size": 512, "micro_batch_size": 1, "precision": "fp8"}});
    let t = plan_value(&tuned).unwrap();
    let a = assumed(&t, "grad_reduce_in_fp32").unwrap();
    assert_eq!(a.value, json!(false));
    assert!(a.source.contains("perf.llama3_8b_pretrain_64gpu_h100_fp8cs_config"), "{}", a.source);
    assert!(t.memory.fits && !codes(&t).contains(&"out-of-memory"), "{:?}", codes(&t));
    let mut plan = tuned.clone();
    plan["defaults"] = json!("megatron-core");
    for (k, v) in [("use_distributed_optimizer", json!(true)), ("recompute_granularity", json!("full")),
                   ("recompute_method", json!("block")), ("recompute_num_layers", json!(5))] {
        plan["training"][k] = v;
    }
    let r = plan_value(&plan).unwrap();
    assert!(!r.memory.fits && codes(&r).contains(&"out-of-memory"), "{:?}", codes(&r));
    let d = r.diagnostics.iter().find(|d| d.code.as_str() == "out-of-memory-assumed").expect("the verdict names its assumption");
    assert!(d.message.contains("grad_reduce_in_fp32 = true"), "{}", d.message);
    assert!(d.message.contains("fits with grad_reduce_in_fp32 = false"), "{}", d.message);
    // 16,060,522,496 B = 14.96 GiB × 1.05825 = 15.83 GiB (the message rounds to a tenth: 15.8).
    let saved: f64 = d.message.split("(−").nth(1).and_then(|s| s.split(' ').next()).and_then(|s| s.parse().ok()).unwrap();
    assert!((saved - 15.83).abs() < 0.06, "{}", d.message);
    // The tuned plan's peak is the plain one's less the same 15.83 GiB (no other assumption differs in bytes).
    let gib = |b: u64| b as f64 / f64::from(1u32 << 30);
    assert!((gib(r.memory.peak_bytes) - gib(t.memory.peak_bytes) - 15.83).abs() < 0.01, "{} {}", r.memory.peak_bytes, t.memory.peak_bytes);
    // Applying the fix states the value: it fits, and nothing is left to name.
    let mut fixed = plan.clone();
    for a in &d.apply {
        let key = a.path.trim_start_matches("training.");
        fixed["training"][key] = a.value.clone();
    }
    let r = plan_value(&fixed).unwrap();
    assert!(r.memory.fits && !codes(&r).contains(&"out-of-memory-assumed"), "{:?}", codes(&r));
}

/// An export of a plan whose speed settings are assumed states them: a launched run would otherwise get Megatron's
/// defaults, not the configuration predicted. Llama 3.1 8B on 8 GB200 in BF16, nothing stated: the nearest perf recipe
/// (llama/gb200/llama3.py:35) runs the full-iteration CUDA graph (llama3.py:50-51) and, from the library recipe it
/// starts from (Bridge's _pretrain_common), the distributed optimizer with grad-reduce and param-gather overlap. Names:
/// Bridge's ConfigContainer paths (model.cuda_graph_impl, ddp.*) and Megatron-LM's flags (--cuda-graph-impl,
/// --use-distributed-optimizer, --overlap-grad-reduce, --overlap-param-gather).
#[test]
fn exports_state_the_assumed_settings() {
    let plan = json!({"model": "llama-3.1-8b", "cluster": {"gpu": "gb200", "num_gpus": 8},
                      "training": {"seq_length": 8192, "global_batch_size": 128, "micro_batch_size": 2}});
    let r = plan_value(&plan).unwrap();
    for key in ["cuda_graph_impl", "use_distributed_optimizer", "overlap_grad_reduce", "overlap_param_gather"] {
        assert!(assumed(&r, key).is_some_and(|a| a.source.contains("llama3.py:35")), "{key}: {:?}", assumed(&r, key));
    }
    let launch = export(ExportKind::BridgeCli, &r.plan, &r);
    for line in ["model.cuda_graph_impl=full_iteration", "ddp.use_distributed_optimizer=True", "ddp.overlap_grad_reduce=True", "ddp.overlap_param_gather=True"] {
        assert!(launch.lines().any(|l| l.trim().trim_end_matches(" \\") == line), "Bridge launch lacks {line}:\n{launch}");
    }
    let python = export(ExportKind::Bridge, &r.plan, &r);
    assert!(python.lines().any(|l| l.trim() == "cfg.model.cuda_graph_impl = \"full_iteration\""), "{python}");
    let mlm = export(ExportKind::MegatronLm, &r.plan, &r);
    for flag in ["--cuda-graph-impl full_iteration", "--use-distributed-optimizer", "--overlap-grad-reduce", "--overlap-param-gather"] {
        assert!(mlm.lines().any(|l| l.trim() == flag), "Megatron-LM flags lack {flag}:\n{mlm}");
    }
    // The plan file states every assumed value: read with plain defaults it is the same plan.
    let mut file: serde_json::Value = serde_json::from_str(&export(ExportKind::Plan, &r.plan, &r)).unwrap();
    file["defaults"] = json!("megatron-core");
    assert_eq!(plan_value(&file).unwrap().plan, r.plan);
    // The same plan with plain defaults writes none of them: the check can fail.
    let mut plain = plan.clone();
    plain["defaults"] = json!("megatron-core");
    let p = plan_value(&plain).unwrap();
    assert!(!export(ExportKind::MegatronLm, &p.plan, &p).contains("--cuda-graph-impl"));
}

/// The MoE speed settings a perf recipe gives are exported too: DeepSeek-V3 on 64 GB300 in MXFP8 with EP 8 takes the
/// GB300 recipe's (deepseek/gb300/deepseek_v3.py:133, after apply_flex_dispatcher_backend) flex dispatcher with the
/// HybridEP backend and the EP all-to-all overlap. Bridge: model.moe_token_dispatcher_type,
/// model.moe_flex_dispatcher_backend, comm_overlap.overlap_moe_expert_parallel_comm; Megatron-LM:
/// --moe-token-dispatcher-type, --moe-flex-dispatcher-backend, --overlap-moe-expert-parallel-comm.
#[test]
fn exports_state_the_assumed_moe_dispatch() {
    let plan = json!({"model": "deepseek-v3", "cluster": {"gpu": "gb300", "num_gpus": 64},
                      "training": {"seq_length": 4096, "global_batch_size": 1024, "precision": "fp8", "fp8_recipe": "mxfp8"},
                      "parallelism": {"pipeline_model_parallel_size": 8, "expert_model_parallel_size": 8, "virtual_pipeline_model_parallel_size": 2}});
    let r = plan_value(&plan).unwrap();
    assert_eq!(assumed(&r, "moe_flex_dispatcher_backend").map(|a| &a.value), Some(&json!("hybridep")));
    let launch = export(ExportKind::BridgeCli, &r.plan, &r);
    for line in ["model.moe_token_dispatcher_type=flex", "model.moe_flex_dispatcher_backend=hybridep", "comm_overlap.overlap_moe_expert_parallel_comm=True"] {
        assert!(launch.lines().any(|l| l.trim().trim_end_matches(" \\") == line), "Bridge launch lacks {line}:\n{launch}");
    }
    let mlm = export(ExportKind::MegatronLm, &r.plan, &r);
    for flag in ["--moe-token-dispatcher-type flex", "--moe-flex-dispatcher-backend hybridep", "--overlap-moe-expert-parallel-comm"] {
        assert!(mlm.lines().any(|l| l.trim() == flag), "Megatron-LM flags lack {flag}:\n{mlm}");
    }
}

/// A plan imported from a launch artefact runs its launcher's defaults: the import writes `"defaults": "megatron-core"`
/// and says so in a note, so nothing is assumed from a perf recipe. A Megatron-LM command for Llama 3.1 8B on GB200
/// that leaves CUDA graphs out runs without them (Megatron-LM's --cuda-graph-impl defaults to none).
#[test]
fn an_import_keeps_its_launchers_defaults() {
    use meshplan_core::imports::{self, ImportOptions};
    let text = "torchrun pretrain_gpt.py --num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 \\\n  --group-query-attention --num-query-groups 8 --swiglu --seq-length 8192 --micro-batch-size 2 --global-batch-size 128 --bf16\n";
    let opts = ImportOptions { gpu: Some("gb200".into()), ..ImportOptions::default() };
    let imported = imports::import(text, &opts).unwrap();
    assert_eq!(imported.plan["defaults"], json!("megatron-core"), "{}", imported.plan);
    assert!(imported.notes.iter().any(|n| n.starts_with("defaults: megatron-core") && n.contains("Megatron-LM's defaults")), "{:?}", imported.notes);
    let r = plan_value(&imported.plan).unwrap();
    // Nothing from a perf recipe; what the command leaves out is listed at Megatron-Core's default.
    assert!(r.assumptions.iter().all(|a| meshplan_core::tuned::is_default_source(&a.source)), "{:?}", r.assumptions);
    assert_eq!(r.plan.training.settings.cuda_graph_impl, CudaGraphImpl::None);
    // Bridge overrides: Bridge's ConfigContainer defaults, Megatron-Core's for these settings.
    let bridge = imports::import("model.tensor_model_parallel_size=2 model.sequence_parallel=True\n", &ImportOptions { model: Some("llama-3.1-8b".into()), from: Some(imports::Format::BridgeOverrides), ..opts }).unwrap();
    assert_eq!(bridge.plan["defaults"], json!("megatron-core"), "{}", bridge.plan);
    assert!(bridge.notes.iter().any(|n| n.contains("ConfigContainer defaults")), "{:?}", bridge.notes);
}

/// Llama 3.1 70B on 64 H100 in BF16 without the distributed optimizer: the nearest perf recipe
/// (perf_recipes/llama/h100/llama3.py:118, llama3_70b_pretrain_64gpu_h100_bf16_config) sets overlap_param_gather, but
/// Megatron-LM asserts "--overlap-param-gather only supported with distributed optimizer" (arguments.py): an assumption
/// that draws a warning from Megatron is not assumed. It keeps Megatron-Core's default (false), listed as such, and the
/// report carries no warning about a setting the user never wrote.
#[test]
fn an_assumption_megatron_warns_about_is_not_assumed() {
    let plan = json!({"model": "llama-3.1-70b", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 8},
                      "training": {"seq_length": 8192, "micro_batch_size": 1, "global_batch_size": 64, "use_distributed_optimizer": false},
                      "parallelism": {"tensor_model_parallel_size": 8, "pipeline_model_parallel_size": 4}});
    let r = plan_value(&plan).unwrap();
    let a = assumed(&r, "overlap_param_gather").expect("listed");
    assert_eq!((&a.value, a.source.as_str()), (&json!(false), meshplan_core::tuned::DEFAULT_SOURCE));
    assert!(!codes(&r).contains(&"overlap-param-gather-distributed-optimizer-mlm"), "{:?}", codes(&r));
    // The rest of the recipe still speaks: its overlap_grad_reduce needs no distributed optimizer.
    assert!(assumed(&r, "overlap_grad_reduce").is_some_and(|a| a.source.contains("llama3_70b_pretrain_64gpu_h100_bf16_config")));
}

/// The optimizer state's precision is never taken from a perf recipe: DeepSeek-V3's H100 recipe keeps Adam's moments in
/// bf16 (use_precision_aware_optimizer), but a DeepSeek-V3-shaped 14-layer proxy of Megatron-LM's benchmarks
/// (measured_memory.json m26-015, 72.0 GB measured) ran with fp32 moments: assumed from the recipe, meshplan predicted
/// 59.3 GB (−18%); at Megatron-Core's default 70.8 GB (−2%). The setting is listed at the default; when bf16 moments
/// would make a plan fit, the out-of-memory verdict says so, and by how much: bf16 halves the two fp32 moments
/// (4 B → 2 B each), so the saving is half the stage's "Adam moments" term.
#[test]
fn the_optimizer_states_precision_is_listed_not_assumed_and_a_verdict_it_flips_says_so() {
    let plan = json!({"model": {"preset": "deepseek-v3", "num_layers": 14}, "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 8},
                      "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 256, "precision": "bf16",
                                   "use_distributed_optimizer": true, "moe_token_dispatcher_type": "alltoall", "recompute_granularity": "none",
                                   "grad_reduce_in_fp32": true},
                      "parallelism": {"tensor_model_parallel_size": 1, "pipeline_model_parallel_size": 4, "virtual_pipeline_model_parallel_size": 2,
                                      "expert_model_parallel_size": 16, "expert_tensor_parallel_size": 1, "sequence_parallel": false,
                                      "pipeline_model_parallel_layout": "Ett|(tt|)*6mL"}});
    let r = plan_value(&plan).unwrap();
    for key in ["use_precision_aware_optimizer", "exp_avg_dtype", "exp_avg_sq_dtype", "main_params_dtype", "main_grads_dtype"] {
        let a = assumed(&r, key).unwrap_or_else(|| panic!("{key} listed"));
        assert_eq!(a.source, meshplan_core::tuned::DEFAULT_SOURCE, "{key}");
    }
    assert!(!r.memory.fits);
    let d = r.diagnostics.iter().find(|d| d.code.as_str() == "out-of-memory-assumed").expect("the verdict names the flip");
    assert!(d.message.starts_with("does not fit with use_precision_aware_optimizer = false (Megatron-Core default)"), "{}", d.message);
    assert!(d.message.contains("fits with use_precision_aware_optimizer = true, exp_avg_dtype = \"bf16\", exp_avg_sq_dtype = \"bf16\""), "{}", d.message);
    let peak = r.memory.stages.iter().max_by_key(|s| s.total_bytes).unwrap();
    let moments = peak.terms.iter().find(|t| t.label.starts_with("Adam moments")).expect("moments").bytes as f64 / (1u64 << 30) as f64;
    let saved: f64 = d.message.split("(−").nth(1).and_then(|s| s.split(" GiB").next()).and_then(|s| s.parse().ok()).expect("saving");
    assert!((saved - moments / 2.0).abs() <= 0.2, "saved {saved} GiB vs half the moments {moments} GiB");
    // The fix is one a Megatron-LM run can take: the plan has the distributed optimizer it needs.
    let r2 = plan_value(&json!({"defaults": "tuned", "model": plan["model"], "cluster": plan["cluster"], "parallelism": plan["parallelism"],
        "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 256, "precision": "bf16", "use_distributed_optimizer": true,
                     "moe_token_dispatcher_type": "alltoall", "recompute_granularity": "none", "grad_reduce_in_fp32": true,
                     "use_precision_aware_optimizer": true, "exp_avg_dtype": "bf16", "exp_avg_sq_dtype": "bf16"}})).unwrap();
    assert!(r2.memory.fits && r2.valid, "{:?}", codes(&r2));
}

/// Megatron-FSDP is listed, never assumed from a recipe, and named by a verdict it flips. Llama 3.1 8B (8.03B
/// parameters) on 8 H100 at TP 1, seq 8192, bf16, the distributed optimizer, fp32 grads, no recompute, all stated:
/// bf16 weights 2 B + fp32 grads 4 B per parameter unsharded, plus 12 B of master and moments over DP 8 (1.5 B), is
/// 7.5 B × 8.03B ≈ 60 GB, and 32 layers' activations (≈ 34 B per token per hidden element, 8192 × 4096) ≈ 36 GB: over
/// 80 GiB. Sharding all of it over the 8 (optim_grads_params: 18 B / 8 = 2.25 B, ≈ 18 GB) leaves about 54 GB: fits.
#[test]
fn megatron_fsdp_is_listed_at_its_default_and_a_verdict_it_flips_names_it() {
    let plan = json!({"model": "llama-3.1-8b", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 1},
                      "training": {"seq_length": 8192, "micro_batch_size": 1, "global_batch_size": 64, "precision": "bf16",
                                   "use_distributed_optimizer": true, "grad_reduce_in_fp32": true, "recompute_granularity": "none",
                                   "use_precision_aware_optimizer": false},
                      "parallelism": {"tensor_model_parallel_size": 1, "pipeline_model_parallel_size": 1}});
    let r = plan_value(&plan).unwrap();
    let a = assumed(&r, "use_megatron_fsdp").expect("use_megatron_fsdp listed");
    assert_eq!((&a.value, a.source.as_str()), (&json!(false), meshplan_core::tuned::DEFAULT_SOURCE));
    assert!(!r.memory.fits);
    let d = r.diagnostics.iter().find(|d| d.code.as_str() == "out-of-memory-assumed").expect("the verdict names the flip");
    assert!(d.message.starts_with("does not fit with use_megatron_fsdp = false (Megatron-Core default)"), "{}", d.message);
    assert!(d.message.contains("fits with use_megatron_fsdp = true, data_parallel_sharding_strategy = \"optim_grads_params\""), "{}", d.message);
    let mut fixed = plan.clone();
    fixed["training"]["use_megatron_fsdp"] = json!(true);
    fixed["training"]["data_parallel_sharding_strategy"] = json!("optim_grads_params");
    assert!(plan_value(&fixed).unwrap().memory.fits);
}

/// A recipe value for a setting that does nothing under what the plan states is not assumed: DeepSeek-V3's H100 perf
/// recipe recomputes selected modules and runs the flex dispatcher, but a plan stating `recompute_granularity: none`
/// and the all-to-all dispatcher reads neither recompute_modules nor moe_flex_dispatcher_backend (Megatron-Core's
/// transformer_config.py reads the modules only under selective recompute, the flex backend only under the flex
/// dispatcher). Both stay listed, at Megatron-Core's default.
#[test]
fn a_recipe_value_the_stated_settings_make_moot_is_not_assumed() {
    let plan = json!({"model": "deepseek-v3", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 128},
                      "training": {"seq_length": 4096, "global_batch_size": 8192, "recompute_granularity": "none",
                                   "moe_token_dispatcher_type": "alltoall"},
                      "parallelism": {"tensor_model_parallel_size": 2, "pipeline_model_parallel_size": 16, "expert_model_parallel_size": 64,
                                      "expert_tensor_parallel_size": 1}});
    let r = plan_value(&plan).unwrap();
    for key in ["recompute_modules", "recompute_method", "recompute_num_layers", "moe_flex_dispatcher_backend"] {
        let a = assumed(&r, key).unwrap_or_else(|| panic!("{key} listed"));
        assert_eq!(a.source, meshplan_core::tuned::DEFAULT_SOURCE, "{key}: {a:?}");
    }
    // The recipe still speaks for what the stated settings leave in play.
    assert!(r.assumptions.iter().any(|a| a.source.contains("perf.")), "{:?}", r.assumptions);
}

/// Plain defaults (`"defaults": "megatron-core"`) still name the default an out-of-memory verdict rests on: the setting
/// is unstated either way (issue 23: never a bare out-of-memory when one unstated setting flips it). Llama 3.1 8B (8.03B parameters) on 8 H100 at TP 1, seq 2048, bf16, fp32 gradient
/// reduction: without the distributed optimizer every GPU keeps bf16 weights 2 B + fp32 grads 4 B + fp32 master 4 B +
/// two fp32 moments 8 B = 18 B per parameter, 144.5 GB, over 80 GiB on its own. Megatron-Core's distributed optimizer
/// shards the 12 B of master and moments over DP 8: 2 + 4 + 1.5 = 7.5 B, 60.2 GB, plus 32 layers' activations
/// (≈ 34 B per token per hidden element: 32 × 2048 × 4096 × 34 ≈ 9.1 GB): about 69 GB, under 80 GiB.
#[test]
fn plain_defaults_name_the_default_a_verdict_rests_on() {
    let plan = json!({"defaults": "megatron-core", "model": "llama-3.1-8b", "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8},
                      "training": {"seq_length": 2048, "micro_batch_size": 1, "global_batch_size": 64, "precision": "bf16",
                                   "grad_reduce_in_fp32": true, "recompute_granularity": "none"},
                      "parallelism": {"tensor_model_parallel_size": 1, "pipeline_model_parallel_size": 1}});
    let r = plan_value(&plan).unwrap();
    assert!(!r.memory.fits && codes(&r).contains(&"out-of-memory"), "{:?}", codes(&r));
    let a = assumed(&r, "use_distributed_optimizer").expect("use_distributed_optimizer listed");
    assert_eq!((&a.value, a.source.as_str()), (&json!(false), meshplan_core::tuned::DEFAULT_SOURCE));
    let d = r.diagnostics.iter().find(|d| d.code.as_str() == "out-of-memory-assumed").expect("the verdict names the default");
    assert!(d.message.starts_with("does not fit with use_distributed_optimizer = false (Megatron-Core default)"), "{}", d.message);
    assert!(d.message.contains("fits with use_distributed_optimizer = true"), "{}", d.message);
    // The saving is the sharded part of master weights and moments, 12 B × 8.03B × 7/8 ≈ 84.3 GB = 78.5 GiB, with the
    // allocator's reserve over it (× 1.05825, as in the grad_reduce_in_fp32 test above): 83.1 GiB.
    let saved: f64 = d.message.split("(−").nth(1).and_then(|s| s.split(" GiB").next()).and_then(|s| s.parse().ok()).expect("saving");
    assert!((saved - 83.1).abs() < 0.5, "{}", d.message);
}

/// The layers kept in BF16 are the plan's own model's perf recipe's: Nemotron 3 Super in NVFP4 on 64 GB200
/// (perf_recipes/nemotronh/gb200/nemotronh.py:174) runs `nemotron_3_super_bf16_with_nvfp4_mixed`, which keeps the last
/// 14 layers in BF16 and sets no start count, so Bridge's MixedPrecisionConfig default 0 runs (mixed_precision.py:73,
/// copied into the model config) — not Megatron-Core's 1. Llama 3.1 8B in FP8 current scaling on H100: its perf recipe
/// (llama/h100/llama3.py:72) turns the current-scaling recipe's BF16 first/last layers off (perf_recipes/_common.py:112),
/// where the library recipe alone keeps one at each end.
#[test]
fn the_layers_kept_in_bf16_are_the_models_perf_recipes() {
    let plan = json!({"model": "nemotron-3-super-120b-a12b", "cluster": {"gpu": "gb200", "num_gpus": 64},
                      "training": {"seq_length": 8192, "global_batch_size": 512, "precision": "fp4"},
                      "parallelism": {"tensor_model_parallel_size": 2, "expert_model_parallel_size": 64, "sequence_parallel": true}});
    let r = plan_value(&plan).unwrap();
    let lp = r.plan.training.settings.low_precision(&r.plan.gpu);
    assert_eq!((lp.first_last_layers_bf16, lp.num_layers_at_start_in_bf16, lp.num_layers_at_end_in_bf16), (true, 0, 14));
    let end = assumed(&r, "num_layers_at_end_in_bf16").expect("listed");
    assert!(end.source.contains("nemotronh/gb200/nemotronh.py:174") && !end.source.contains("MixedPrecisionConfig"), "{}", end.source);
    let start = assumed(&r, "num_layers_at_start_in_bf16").expect("listed");
    assert_eq!(start.value, json!(0));
    assert!(start.source.contains("MixedPrecisionConfig default"), "{}", start.source);
    // The plan's own statement wins, and a stated `false` makes the counts moot (listed at their default, not assumed).
    let mut off = plan.clone();
    off["training"]["first_last_layers_bf16"] = json!(false);
    let r = plan_value(&off).unwrap();
    assert!(!r.plan.training.settings.low_precision(&r.plan.gpu).first_last_layers_bf16);
    assert!(assumed(&r, "num_layers_at_end_in_bf16").is_some_and(|a| meshplan_core::tuned::is_default_source(&a.source)));

    let llama = json!({"model": "llama-3.1-8b", "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8},
                       "training": {"seq_length": 8192, "global_batch_size": 128, "precision": "fp8", "fp8_recipe": "tensorwise"}});
    let r = plan_value(&llama).unwrap();
    assert!(!r.plan.training.settings.low_precision(&r.plan.gpu).first_last_layers_bf16);
    assert!(assumed(&r, "first_last_layers_bf16").is_some_and(|a| a.source.contains("llama/h100/llama3.py")), "{:?}", assumed(&r, "first_last_layers_bf16"));
    // Plain defaults: the library recipe's (bf16_with_fp8_current_scaling_mixed: one layer at each end in BF16).
    let mut plain = llama.clone();
    plain["defaults"] = json!("megatron-core");
    let r = plan_value(&plain).unwrap();
    let lp = r.plan.training.settings.low_precision(&r.plan.gpu);
    assert_eq!((lp.first_last_layers_bf16, lp.num_layers_at_start_in_bf16, lp.num_layers_at_end_in_bf16), (true, 1, 1));
}

#[test]
fn a_default_stays_a_default_when_it_says_why_no_recipe_was_consulted() {
    use meshplan_core::tuned::{DEFAULT_SOURCE, MIXED_PRECISION_SOURCE, RECIPES_ABSENT, is_default_source};
    // The page's modules plan without tuned defaults until Bridge's recipes arrive; their defaults carry the reason.
    assert!(is_default_source(&format!("{DEFAULT_SOURCE} — {RECIPES_ABSENT}")));
    assert!(is_default_source(&format!("{MIXED_PRECISION_SOURCE} — {RECIPES_ABSENT}")));
    assert!(is_default_source(DEFAULT_SOURCE) && is_default_source(MIXED_PRECISION_SOURCE));
    // A recipe's source is not a default, nor is a longer word that merely starts alike.
    assert!(!is_default_source("Megatron Bridge perf recipe perf.llama3_8b (Megatron-Bridge@067f987df03b x.py:1)"));
    assert!(!is_default_source("Megatron-Core defaults elsewhere"));
}

/// A typo in a training key is an input warning whose fix lists every known field, the tuned keys among them; it must
/// not read as Megatron rejecting them. Llama 3.1 8B on 8 H100 in BF16: Bridge's perf recipe
/// (perf_recipes/llama/h100/llama3.py, llama3_8b_pretrain_8gpu_h100_bf16_config, through _benchmark_common) reduces
/// gradients in bf16; with `grad_reduce_in_fp23` misspelt beside it, the plan still takes that value from the recipe.
#[test]
fn a_misspelt_training_key_keeps_the_tuned_defaults() {
    let plan = |extra: Option<(&str, serde_json::Value)>| {
        let mut v = json!({"model": "llama-3.1-8b", "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8},
                           "training": {"seq_length": 8192, "global_batch_size": 128}});
        if let Some((k, x)) = extra {
            v["training"][k] = x;
        }
        plan_value(&v).unwrap()
    };
    let clean = plan(None);
    let typo = plan(Some(("grad_reduce_in_fp23", json!(false))));
    assert!(codes(&typo).contains(&"unknown-field"));
    let a = assumed(&typo, "grad_reduce_in_fp32").expect("still assumed");
    assert_eq!(a.value, json!(false));
    assert!(a.source.contains("perf.llama3_8b_pretrain_8gpu_h100_bf16_config"), "{}", a.source);
    assert_eq!(typo.assumptions, clean.assumptions);
    assert_eq!(typo.memory.peak_bytes, clean.memory.peak_bytes);
}

/// A model of a family Bridge has no perf recipe for takes the nearest recipe of another family of its kind, for the
/// settings that do not name the model's own layers. The published run: Nemotron-4 340B on 256 H100 in BF16, TP 8, PP 8,
/// VPP 12, sequence 4,096, global batch 64, micro-batch 1 (NVIDIA dgxc-benchmarking v25.05.02 nemotron/README.md; it
/// ran, 467.8 TFLOP/s per GPU), described by those columns only. Every dense Hopper perf recipe starts from the library
/// recipe's distributed optimizer with grad-reduce and param-gather overlap (_pretrain_common) and reduces gradients
/// in bf16 (perf_recipes/_common.py:73-74 @ 067f987df03b), so the run is planned with them; CUDA graphs and recompute,
/// which answer a model's own layers, stay at Megatron-Core's default. By hand, stage 0 then holds the gradients at the
/// parameters' 2 B and Adam's 12 B per parameter (fp32 master and two moments) sharded over DP = 256/(8·8) = 4: 3 B per
/// parameter, 1.5 × the weights' bytes. Planned with Megatron-Core's plain defaults it "does not fit".
#[test]
fn a_family_without_a_perf_recipe_takes_the_nearest_of_another_family() {
    let plan = json!({"model": "nemotron-4-340b", "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 256},
                      "training": {"seq_length": 4096, "global_batch_size": 64, "micro_batch_size": 1, "precision": "bf16"},
                      "parallelism": {"tensor_model_parallel_size": 8, "pipeline_model_parallel_size": 8,
                                      "virtual_pipeline_model_parallel_size": 12, "sequence_parallel": true}});
    let r = plan_value(&plan).unwrap();
    let dist = assumed(&r, "use_distributed_optimizer").expect("the distributed optimizer is assumed");
    assert_eq!(dist.value, json!(true));
    assert!(dist.source.starts_with("Megatron Bridge perf recipe perf.llama"), "{}", dist.source);
    assert!(dist.source.contains("another family (Bridge has no perf recipe of the Nemotron-4 family)"), "{}", dist.source);
    assert_eq!(assumed(&r, "grad_reduce_in_fp32").map(|a| &a.value), Some(&json!(false)));
    assert_eq!(assumed(&r, "overlap_grad_reduce").map(|a| &a.value), Some(&json!(true)));
    for key in ["cuda_graph_impl", "recompute_granularity"] {
        let a = assumed(&r, key).unwrap();
        assert_eq!(a.source, meshplan_core::tuned::DEFAULT_SOURCE, "{key}");
    }
    use meshplan_core::memory::TermKey;
    let term = |r: &Report, key: TermKey| -> u64 { r.memory.stages[0].terms.iter().filter(|t| t.key == key).map(|t| t.bytes).sum() };
    let weights = term(&r, TermKey::Weights);
    assert_eq!(term(&r, TermKey::Gradients), weights);
    let optimizer = term(&r, TermKey::MasterWeights) + term(&r, TermKey::OptimizerMoments);
    assert!(optimizer.abs_diff(weights * 3 / 2) <= 2, "{optimizer} against 1.5 × {weights}");
    assert!(r.memory.fits, "peak {} B", r.memory.peak_bytes);
    let mut plain = plan.clone();
    plain["defaults"] = json!("megatron-core");
    assert!(!plan_value(&plain).unwrap().memory.fits);
}

/// A model that is no catalogue preset (its own TransformerConfig fields) is matched by its kind alone: a Mixtral-shaped
/// MoE on 64 GB200 in BF16 takes the token dispatcher of the nearest Blackwell MoE perf recipe, named as such; a dense
/// model of its own fields lists no dispatcher. CUDA graphs stay at Megatron-Core's default for both.
#[test]
fn a_model_of_its_own_fields_takes_the_nearest_recipe_of_its_kind() {
    let model = json!({"num_layers": 32, "hidden_size": 4096, "ffn_hidden_size": 14336, "num_attention_heads": 32,
                       "num_query_groups": 8, "kv_channels": 128, "vocab_size": 32000, "gated_linear_unit": true,
                       "add_bias_linear": false, "num_moe_experts": 8, "moe_router_topk": 2});
    let plan = |model: serde_json::Value| json!({"model": model, "cluster": {"gpu": "gb200", "num_gpus": 64},
        "training": {"seq_length": 4096, "global_batch_size": 256, "precision": "bf16"},
        "parallelism": {"expert_model_parallel_size": 8, "pipeline_model_parallel_size": 4}});
    let r = plan_value(&plan(model.clone())).unwrap();
    let dispatcher = assumed(&r, "moe_token_dispatcher_type").expect("the dispatcher is listed");
    assert!(dispatcher.source.contains("the nearest MoE recipe of another family (the model is no catalogue preset)"), "{}", dispatcher.source);
    assert_eq!(assumed(&r, "use_distributed_optimizer").map(|a| &a.value), Some(&json!(true)));
    assert_eq!(assumed(&r, "cuda_graph_impl").unwrap().source, meshplan_core::tuned::DEFAULT_SOURCE);
    let mut dense = model;
    dense.as_object_mut().unwrap().retain(|k, _| !k.starts_with("num_moe") && !k.starts_with("moe_"));
    let mut p = plan(dense);
    p["parallelism"]["expert_model_parallel_size"] = json!(1);
    let r = plan_value(&p).unwrap();
    assert!(assumed(&r, "moe_token_dispatcher_type").is_none());
    assert!(assumed(&r, "use_distributed_optimizer").unwrap().source.contains("nearest dense recipe of another family"));
}

/// Whether a preset is MoE is read from its `num_moe_experts` without building its config; it agrees with the config.
#[test]
fn a_presets_kind_is_its_configs() {
    for p in meshplan_core::presets::models() {
        assert_eq!(p.is_moe(), p.model_config().is_moe(), "{}", p.key);
    }
}
