//! The input limits (limits.rs): work proportional to a size happens only after the size passed its limit.

use super::*;

/// Llama-3.1-8B on one node of 8 H100s, as plan text.
const PLAN_TEXT: &str = r#"{"model": "llama-3.1-8b", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 1}}"#;

fn search_plan(num_nodes: u64) -> Value {
    json!({"model": "llama-3.1-8b", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": num_nodes},
           "training": {"seq_length": 4096, "global_batch_size": 1024}})
}

pub fn cases() -> Vec<Case> {
    // The same plan followed by 2^20 spaces is 1 MiB + 104 bytes of text: one byte past MAX_PLAN_BYTES would do.
    let padded: &'static str = Box::leak(format!("{PLAN_TEXT}{}", " ".repeat(1 << 20)).into_boxed_str());
    let qwen = |mlp_only: Vec<u64>| {
        json!({"hf_config": {"model_type": "qwen2_moe", "hidden_size": 2048, "intermediate_size": 5632, "num_attention_heads": 16,
                             "num_hidden_layers": 4, "num_key_value_heads": 16, "vocab_size": 151936, "num_experts": 60,
                             "num_experts_per_tok": 4, "moe_intermediate_size": 1408, "mlp_only_layers": mlp_only}})
    };
    vec![
        case("plan-too-large", Kind::Input, Probe::Text(padded), Probe::Text(PLAN_TEXT)),
        // The 16-layer model at PP 32: 32 stages cannot each build a layer. PP 16 gives each stage one layer.
        case("pipeline-exceeds-layers", Kind::Error, probe(dense(), &[(PP, json!(32))]), probe(dense(), &[(PP, json!(16))])),
        // A 4-layer Qwen MoE with five mlp_only_layers entries: more entries than layers. Four entries are accepted.
        case("list-too-long", Kind::Error, probe(qwen(vec![0, 1, 2, 3, 0]), &[]), probe(qwen(vec![0, 1, 2, 3]), &[])),
        // 2^22 nodes of 8 = 2^25 GPUs, past the search's 2^24; one node is searched.
        case("search-too-large", Kind::Input, Probe::Search(search_plan(1 << 22)), Probe::Search(search_plan(1))),
    ]
}
