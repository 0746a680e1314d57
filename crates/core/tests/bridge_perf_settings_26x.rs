//! reference/bridge_perf_settings_26x.json (scripts/extract-bridge-perf-recipes-26x.py): the entries three validation
//! rows were matched to, checked against the values read by hand from the recipe files they cite
//! (`git --git-dir=MEGATRON_BRIDGE show TAG:PATH`, line numbers of that tag). Not the program's own output: every
//! expected value below is copied from the cited line.

use serde_json::{Value, json};

fn rows() -> serde_json::Map<String, Value> {
    let text = include_str!("../../../reference/bridge_perf_settings_26x.json");
    let doc: Value = serde_json::from_str(text).unwrap();
    doc["rows"].as_object().cloned().unwrap()
}

fn check(e: &Value, expected: &[(&str, Value)]) {
    for (k, v) in expected {
        assert_eq!(&e[*k], v, "{k} of {}", e["name"]);
    }
}

/// mbval-0081, DeepSeek-V3 256×B200 MXFP8 PP8 VP2 EP32 GBS 4096 (table 26.04.01) -> the workload preset of v0.4.2,
/// scripts/performance/configs/deepseek/deepseek_workload_base_configs.py:
/// 110–119 DEEPSEEK_V3_PRETRAIN_CONFIG_B200_V1 = replace(BASE, num_gpus=256, pipeline_model_parallel_size=16,
///   expert_model_parallel_size=8, global_batch_size=2048, recompute_modules=["mla_up_proj"], hybridep, a2a overlap False);
/// 197–200 ..._B200_V2 = replace(..._B200_V1, global_batch_size=4096); 202 ..._B200_FP8_CS_V2 = ..._B200_V2;
/// 203–214 ..._B200_FP8_MX_V2 = replace(..._B200_FP8_CS_V2, moe_flex_dispatcher_backend="deepep",
///   pipeline_model_parallel_size=8, virtual_pipeline_model_parallel_size=2, expert_model_parallel_size=32,
///   moe_a2a_overlap=True, pp_layout="Et*4|(t*4|)*14tmL", cuda_graph_impl="transformer_engine",
///   cuda_graph_scope=["attn", "moe_router", "moe_preprocess"], recompute_modules=["mla_up_proj", "mlp"]).
#[test]
fn deepseek_v3_b200_mxfp8_of_26_04_01_is_the_v0_4_2_preset() {
    let rows = rows();
    let e = &rows["mbval-0081"];
    assert!(e["source"].as_str().unwrap().contains("deepseek_workload_base_configs.py (v0.4.2)"), "{}", e["source"]);
    check(e, &[
        ("name", json!("DEEPSEEK_V3_PRETRAIN_CONFIG_B200_FP8_MX_V2")),
        ("num_gpus", json!(256)),
        ("pipeline_model_parallel_size", json!(8)),
        ("virtual_pipeline_model_parallel_size", json!(2)),
        ("expert_model_parallel_size", json!(32)),
        ("global_batch_size", json!(4096)),
        ("moe_flex_dispatcher_backend", json!("deepep")),
        ("moe_a2a_overlap", json!(true)),
        ("pp_layout", json!("Et*4|(t*4|)*14tmL")),
        ("cuda_graph_impl", json!("transformer_engine")),
        ("cuda_graph_scope", json!(["attn", "moe_router", "moe_preprocess"])),
        ("recompute_modules", json!(["mla_up_proj", "mlp"])),
    ]);
}

/// mbval-0007, Qwen3-30B-A3B 8×GB300 MXFP8 (table 26.08) -> the flat recipe of v0.6.0,
/// src/megatron/bridge/perf_recipes/qwen/gb300/qwen3_moe.py: 301 `def qwen3_30b_a3b_pretrain_8gpu_gb300_fp8mx_config`;
/// 306 recompute_granularity = None; 314–321 TP 1, PP 1, CP 1, VP None, EP 8, GBS 512, MBS 8; 323–324
/// moe_flex_dispatcher_backend "hybridep", moe_token_dispatcher_type "flex"; 327 _enable_hybridep_full_iteration_mxfp8,
/// which is qwen/common.py:37–38 cuda_graph_impl "full_iteration", cuda_graph_scope []; 329– env_vars with
/// NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN 8.
#[test]
fn qwen3_30b_gb300_mxfp8_of_26_08_is_the_v0_6_0_flat_recipe() {
    let rows = rows();
    let e = &rows["mbval-0007"];
    assert!(e["source"].as_str().unwrap().ends_with("perf_recipes/qwen/gb300/qwen3_moe.py:301 (v0.6.0)"), "{}", e["source"]);
    check(e, &[
        ("name", json!("qwen3_30b_a3b_pretrain_8gpu_gb300_fp8mx_config")),
        ("num_gpus", json!(8)),
        ("tensor_model_parallel_size", json!(1)),
        ("pipeline_model_parallel_size", json!(1)),
        ("virtual_pipeline_model_parallel_size", Value::Null),
        ("expert_model_parallel_size", json!(8)),
        ("global_batch_size", json!(512)),
        ("micro_batch_size", json!(8)),
        ("recompute_granularity", Value::Null),
        ("moe_token_dispatcher_type", json!("flex")),
        ("moe_flex_dispatcher_backend", json!("hybridep")),
        ("cuda_graph_impl", json!("full_iteration")),
        ("cuda_graph_scope", json!([])),
        ("hybrid_ep_ranks_per_nvlink_domain", json!(8)),
    ]);
}

/// mbval-0041, DeepSeek-V3 256×GB300 MXFP8 GBS 15360 (table 26.06) -> v0.5.0's
/// scripts/performance/configs/deepseek/deepseek_workload_base_configs.py:323–326
/// DEEPSEEK_V3_PRETRAIN_CONFIG_GB300_FP8_MX_GBS15360 = replace(..._GB300_FP8_MX_V2, global_batch_size=15360) — a preset
/// named by neither V1 nor V2, which a reading of the V<n> names alone misses. And a row no tag has a recipe for stays
/// on the 25.x settings with the reason: mbval-0157 (Llama-3 70B 64×GB300 MXFP8 PP4 MBS 2 GBS 256, 26.02.01; the tags'
/// GB300 MXFP8 70B presets run other layouts).
#[test]
fn named_variants_match_and_unmatched_rows_say_why() {
    let rows = rows();
    let e = &rows["mbval-0041"];
    check(e, &[("name", json!("DEEPSEEK_V3_PRETRAIN_CONFIG_GB300_FP8_MX_GBS15360")), ("global_batch_size", json!(15360)), ("rev", json!("v0.5.0"))]);
    let f = rows["mbval-0157"]["fallback"].as_str().unwrap_or("");
    assert!(f.contains("no recipe of any tag, nor of any commit of the presets' history, has the row's layout"), "{f}");
}
