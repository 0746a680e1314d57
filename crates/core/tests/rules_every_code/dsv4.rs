//! DeepSeek-V4's hybrid attention against TP and the pipeline layout, and hyper-connections against full recompute
//! (Megatron Bridge's DeepSeekV4Bridge and recipes, Megatron-Core's transformer_config.py).

use super::*;

/// A small DeepSeek-V4: 8 layers of hidden 1024, 16 MQA heads of 128 (64 of RoPE), q_lora 256, 4 output groups of rank
/// 256, ratios 0, 0, then 4 and 128 alternating (and 0 for its one MTP layer), an indexer of 8 heads of 64 (top-64), 4
/// residual streams, 16 experts of 512 top-2 with a shared expert, the first 2 layers hash-routed.
fn v4() -> Value {
    json!({"num_layers": 8, "hidden_size": 1024, "num_attention_heads": 16, "num_query_groups": 1, "kv_channels": 128,
           "vocab_size": 32000, "gated_linear_unit": true, "add_bias_linear": false, "multi_latent_attention": true,
           "experimental_attention_variant": "dsv4_hybrid", "q_lora_rank": 256, "kv_lora_rank": 64, "qk_head_dim": 64,
           "qk_pos_emb_head_dim": 64, "v_head_dim": 128, "o_groups": 4, "o_lora_rank": 256,
           "csa_compress_ratios": [0, 0, 4, 128, 4, 128, 4, 128, 0], "csa_window_size": 128, "mtp_num_layers": 1,
           "dsa_indexer_n_heads": 8, "dsa_indexer_head_dim": 64, "dsa_indexer_topk": 64,
           "enable_hyper_connections": true, "num_residual_streams": 4, "moe_n_hash_layers": 2,
           "num_moe_experts": 16, "moe_router_topk": 2, "moe_ffn_hidden_size": 512, "moe_shared_expert_intermediate_size": 512})
}

pub fn cases() -> Vec<Case> {
    vec![
        // TP 2 on 8 GPUs: 16 heads and 4 output groups divide by 2, but Bridge runs DeepSeek-V4 at TP 1 → fix TP 1.
        case("dsv4-tensor-parallel", Kind::Error, probe(v4(), &[(TP, json!(2))]), probe(v4(), &[(TP, json!(1))])).fix(&[(TP, json!(1))]),
        // PP 2 without a layout: 8 layers split 4 + 4 evenly, but the 2 hash-routed layers need Bridge's explicit layout;
        // Bridge's: the embedding and 4 layers, then 4 layers, the MTP layer and the loss.
        case(
            "dsv4-hash-layers-need-layout",
            Kind::Error,
            probe(v4(), &[(PP, json!(2))]),
            probe(v4(), &[(PP, json!(2)), ("parallelism.pipeline_model_parallel_layout", json!("Et*4|t*4mL"))]),
        )
        .fix(&[("parallelism.pipeline_model_parallel_layout", json!("Et*4|t*4mL"))]),
        // Full recompute with hyper-connections: Megatron-Core raises; selective recompute does not.
        case(
            "hyper-connections-full-recompute",
            Kind::Error,
            probe(v4(), &[(RECOMPUTE, json!("full")), (METHOD, json!("uniform")), (RECOMPUTE_LAYERS, json!(1))]),
            probe(v4(), &[]),
        )
        .fix(&[(RECOMPUTE, json!("selective")), (METHOD, Value::Null), (RECOMPUTE_LAYERS, Value::Null)]),
    ]
}

#[test]
fn codes() {
    run(cases());
}
