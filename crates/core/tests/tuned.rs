//! Tuned defaults (tuned.rs): with `"defaults": "tuned"` what a plan leaves unstated is assumed from the nearest Megatron
//! Bridge performance recipe; every assumption is listed with its source; `"megatron-core"` (the default for now) plans
//! Megatron-Core's plain defaults.
//! The recipes' values are read by hand from the Bridge source at the pinned commit (067f987df03b), cited per test.

use meshplan_core::settings::CudaGraphImpl;
use meshplan_core::{Report, plan_value};
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

/// The plan's own keys win and are not listed; `"defaults": "megatron-core"` (and no switch at all) assumes nothing from
/// a recipe: the plan runs Megatron-Core's default (TransformerConfig.cuda_graph_impl = "none").
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
    // Plain defaults, asked for or by default, list nothing: the report is as it was before tuned defaults.
    assert!(r.assumptions.is_empty());
    plain.as_object_mut().unwrap().remove("defaults");
    assert_eq!(plan_value(&plain).unwrap(), r);

    let mut bad = plain.clone();
    bad["defaults"] = json!("bridge");
    assert!(codes(&plan_value(&bad).unwrap()).contains(&"invalid-value"));
}

/// A plan naming a recipe takes the recipe's values and assumes nothing more from another one.
#[test]
fn a_named_recipe_is_not_mixed_with_another() {
    let r = plan_value(&json!({"recipe": "perf.llama3_8b_pretrain_8gpu_gb200_bf16_config", "defaults": "tuned"})).unwrap();
    assert!(!r.assumptions.is_empty());
    assert!(r.assumptions.iter().all(|a| a.source == meshplan_core::tuned::DEFAULT_SOURCE), "{:?}", r.assumptions);
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

/// The example: Llama 3.1 8B in FP8 on 64 H100, TP 1, PP 1, seq 8192, micro-batch 1, tuned defaults. The
/// out-of-memory verdict names the unstated settings it rests on and what fits. With the H100 perf recipe's settings
/// assumed (distributed optimizer, full recompute of 5 layers per block: llama/h100/llama3.py) the one left is the
/// gradient buffer: fp32 (4 B per parameter, Bridge's bf16_mixed and fp8 recipes' grad_reduce_in_fp32 = True) against
/// the parameter dtype (2 B): 8,030,261,248 parameters × 2 B = 14.96 GiB less, unsharded (param_and_grad_buffer.py),
/// and the allocator's fragmentation on it (memory/overhead.rs FRAGMENTATION, 5.825%): 15.83 GiB of the device peak.
#[test]
fn an_out_of_memory_verdict_names_the_assumed_setting_it_rests_on() {
    let plan = json!({"model": "llama-3.1-8b", "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 64},
                      "training": {"seq_length": 8192, "global_batch_size": 512, "micro_batch_size": 1, "precision": "fp8"}, "defaults": "tuned"});
    let r = plan_value(&plan).unwrap();
    assert!(!r.memory.fits && codes(&r).contains(&"out-of-memory"), "{:?}", codes(&r));
    let d = r.diagnostics.iter().find(|d| d.code.as_str() == "out-of-memory-assumed").expect("the verdict names its assumption");
    assert!(d.message.contains("grad_reduce_in_fp32 = true"), "{}", d.message);
    assert!(d.message.contains("fits with grad_reduce_in_fp32 = false"), "{}", d.message);
    // 16,060,522,496 B = 14.96 GiB × 1.05825 = 15.83 GiB (the message rounds to a tenth: 15.8).
    let saved: f64 = d.message.split("(−").nth(1).and_then(|s| s.split(' ').next()).and_then(|s| s.parse().ok()).unwrap();
    assert!((saved - 15.83).abs() < 0.06, "{}", d.message);
    // Applying the fix states the value: it fits, and nothing is left to name.
    let mut fixed = plan.clone();
    for a in &d.apply {
        let key = a.path.trim_start_matches("training.");
        fixed["training"][key] = a.value.clone();
    }
    let r = plan_value(&fixed).unwrap();
    assert!(r.memory.fits && !codes(&r).contains(&"out-of-memory-assumed"), "{:?}", codes(&r));
}
