//! The guide's rules (../shared/seed/parallelism-strategies.md, "Pitfalls", "Minimum GPU Count", "Decision by Hardware
//! Topology") hold for every preset, the 2026 zoo's hybrid, MLA, DSA, sliding-window, heterogeneous and multimodal
//! families included: each plan below is read without a panic or an input error, each pitfall is the error (or
//! warning) the guide names, and the sizes follow the guide's formulas.

use meshplan_core::{Report, plan_value, presets};
use serde_json::{Value, json};

fn plan(model: &str, gpus: u64, parallelism: Value, seq: u64) -> Report {
    let p = json!({"model": model, "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": gpus / 8},
                   "training": {"seq_length": seq, "micro_batch_size": 1, "global_batch_size": 1024},
                   "parallelism": parallelism});
    plan_value(&p).unwrap_or_else(|e| panic!("{model} {p}: {e:?}"))
}

fn has(r: &Report, code: &str) -> bool {
    r.diagnostics.iter().any(|d| d.code == code)
}

fn error(r: &Report, code: &str) -> bool {
    r.diagnostics.iter().any(|d| d.code == code && d.is_error())
}

/// The smallest EP above 1 that does not divide the expert count.
fn non_divisor(experts: u64) -> u64 {
    (2..).find(|k| experts % k != 0).unwrap()
}

#[test]
fn the_guides_pitfalls_fire_for_every_preset() {
    for m in presets::models() {
        let key = m.key.as_str();
        let model = m.model_config();
        // Pitfall 3: SP requires TP > 1.
        let r = plan(key, 8, json!({"tensor_model_parallel_size": 1, "sequence_parallel": true}), 4096);
        assert!(error(&r, "sp-requires-tp"), "{key}: {:?}", r.diagnostics);
        // Pitfall 2's VPP needs PP > 1.
        let r = plan(key, 8, json!({"pipeline_model_parallel_size": 1, "virtual_pipeline_model_parallel_size": 2}), 4096);
        assert!(error(&r, "vpp-requires-pp"), "{key}");
        // Pitfall 4: seq_length % (2·CP) == 0.
        let r = plan(key, 8, json!({"context_parallel_size": 2}), 4097);
        assert!(error(&r, "cp-seq-not-divisible"), "{key}");
        // Pitfall 5: EP only for MoE; for an MoE model, EP must divide the experts.
        if model.is_moe() {
            let ep = non_divisor(model.num_experts());
            let r = plan(key, 8 * ep, json!({"expert_model_parallel_size": ep}), 4096);
            assert!(error(&r, "experts-not-divisible-by-ep"), "{key}: EP {ep} over {} experts", model.num_experts());
            // MoE with TP needs SP (Megatron-Core's rule the guide's MoE recipes follow).
            let r = plan(key, 16, json!({"tensor_model_parallel_size": 2, "sequence_parallel": false}), 4096);
            assert!(error(&r, "moe-tp-requires-sp"), "{key}");
        } else {
            let r = plan(key, 16, json!({"expert_model_parallel_size": 2}), 4096);
            assert!(error(&r, "ep-requires-moe"), "{key}");
        }
        // Pitfall 1: TP across nodes (16 over nodes of 8) is the topology warning, whatever else the plan has wrong.
        let r = plan(key, 16, json!({"tensor_model_parallel_size": 16, "sequence_parallel": true}), 4096);
        let d = r.diagnostics.iter().find(|d| d.code == "tp-crosses-nvlink").unwrap_or_else(|| panic!("{key}: {:?}", r.diagnostics));
        assert_eq!(d.severity, meshplan_core::Severity::Warning, "{key}");
    }
}

#[test]
fn min_gpus_and_data_parallel_sizes_follow_the_guides_formulas_for_every_preset() {
    // "Minimum GPU Count": PP·max(TP·CP, EP·ETP); DP = world / (TP·PP·CP); EDP = world / (PP·EP·ETP). With TP 2, PP 2,
    // CP 2 and, for an MoE model, the largest EP ≤ 8 dividing its experts (ETP 1), on 64 GPUs.
    for m in presets::models() {
        let key = m.key.as_str();
        let model = m.model_config();
        let ep = if model.is_moe() { (1..=8u64).rev().find(|k| model.num_experts() % k == 0).unwrap() } else { 1 };
        let r = plan(key, 64, json!({"tensor_model_parallel_size": 2, "pipeline_model_parallel_size": 2, "context_parallel_size": 2,
                                     "expert_model_parallel_size": ep, "expert_tensor_parallel_size": 1, "sequence_parallel": true}), 8192);
        assert_eq!(r.derived.min_gpus, 2 * (2 * 2).max(ep), "{key}");
        assert_eq!(r.derived.data_parallel_size, 64 / 8, "{key}");
        assert_eq!(r.derived.expert_data_parallel_size, 64 / (2 * ep), "{key}");
        assert!(!has(&r, "min-gpus") || r.diagnostics.iter().any(|d| d.code == "min-gpus" && d.message.contains(&format!("= {}", r.derived.min_gpus))), "{key}");
    }
}
