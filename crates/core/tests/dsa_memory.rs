//! The DSA indexer's saved activations as a memory term of their own, worked by hand on a small MLA model.

use meshplan_core::plan_value;
use serde_json::{Value, json};

fn plan(model_extra: Value, training_extra: Value) -> meshplan_core::Report {
    let mut model = json!({"num_layers": 4, "hidden_size": 1024, "ffn_hidden_size": 4096, "num_attention_heads": 16,
        "vocab_size": 32000, "gated_linear_unit": true, "add_bias_linear": false, "multi_latent_attention": true,
        "q_lora_rank": 512, "kv_lora_rank": 256, "qk_head_dim": 64, "qk_pos_emb_head_dim": 32, "v_head_dim": 64,
        "experimental_attention_variant": "dsa", "dsa_indexer_n_heads": 8, "dsa_indexer_head_dim": 64, "dsa_indexer_topk": 512});
    model.as_object_mut().unwrap().extend(model_extra.as_object().unwrap().clone());
    let mut t = json!({"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 8, "precision": "bf16"});
    t.as_object_mut().unwrap().extend(training_extra.as_object().unwrap().clone());
    plan_value(&json!({"model": model, "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 1}, "training": t,
                       "parallelism": {"tensor_model_parallel_size": 2, "sequence_parallel": true}}))
    .unwrap()
}

fn term(r: &meshplan_core::Report, key: &str) -> u64 {
    r.memory.stages[0].terms.iter().filter(|t| serde_json::to_value(t.key).unwrap() == json!(key)).map(|t| t.bytes).sum()
}

#[test]
fn indexer_saves_its_top_k_and_with_a_loss_its_projections() {
    // One pipeline stage holds one microbatch in flight (PP 1).
    let r = plan(json!({}), json!({}));
    assert_eq!(r.memory.stages[0].microbatches_in_flight, 1.0);
    // By hand, per attention layer and microbatch: 1 · 4096 query rows (CP 1; every row on each TP rank) keep
    // min(512, 4096) int64 indices: 4096 · 512 · 8 = 16,777,216 B; four layers 67,108,864 B.
    assert_eq!(term(&r, "dsa_indexer_activations"), 67_108_864);
    // With dsa_indexer_loss_coeff the indexer trains and also saves, in bf16, q 4096·8·64, weights 4096·8, the k_norm
    // input 4096·64 and k over the sequence's 4096 keys · 64: 2·(4096·584 + 4096·64) = 5,308,416 B; and, SP gathering
    // them over TP 2, copies of x (h 1024) and qr (q_lora_rank 512): 2·4096·1536 = 12,582,912 B.
    // Per layer 16,777,216 + 5,308,416 + 12,582,912 = 34,668,544 B; four layers 138,674,176 B.
    let trained = plan(json!({"dsa_indexer_loss_coeff": 0.001}), json!({}));
    assert_eq!(term(&trained, "dsa_indexer_activations"), 138_674_176);
    // The term is part of the stage's activations.
    let act = |r: &meshplan_core::Report| r.memory.stages[0].activations_bytes;
    assert_eq!(act(&trained) - act(&r), 138_674_176 - 67_108_864);
}

#[test]
fn recompute_of_the_core_attention_or_no_indexer_keeps_none() {
    // Selective core_attn recompute checkpoints DSAttention, the indexer inside it; full recompute the whole layer.
    for training in [json!({"recompute_granularity": "selective"}), json!({"recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 1})] {
        let r = plan(json!({"dsa_indexer_loss_coeff": 0.001}), training);
        assert_eq!(term(&r, "dsa_indexer_activations"), 0);
    }
    // The same MLA model without the DSA variant has no indexer.
    let r = plan(json!({"experimental_attention_variant": null}), json!({}));
    assert_eq!(term(&r, "dsa_indexer_activations"), 0);
    assert!(r.memory.stages[0].activations_bytes > 0);
}

#[test]
fn glm_5_trains_its_indexer_as_bridge_configures_it() {
    // Megatron Bridge's GLM-5 provider sets dsa_indexer_loss_coeff = 0.001 (glm5_bridge.py); DeepSeek-V3.2 has no
    // Bridge provider setting it, so Megatron-Core's default (None: no indexer loss) stands.
    let coeff = |key: &str| meshplan_core::presets::model(key).unwrap().model_config().dsa_indexer_loss_coeff;
    assert_eq!(coeff("glm-5"), Some(0.001));
    assert_eq!(coeff("deepseek-v3.2"), None);
    let path = format!("{}/tests/data/hf/zai-org--GLM-5.config.json", env!("CARGO_MANIFEST_DIR"));
    let hf: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let r = plan_value(&json!({"model": {"hf_config": hf}, "cluster": {"gpu": "h100-sxm-80gb"}})).unwrap();
    assert_eq!(r.plan.model.dsa_indexer_loss_coeff, Some(0.001));
}
