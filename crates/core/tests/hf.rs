//! Hugging Face config.json → Megatron fields, checked against the presets' published shapes.

use meshplan_core::{plan_value, presets};
use serde_json::json;

fn hf_plan(hf: serde_json::Value) -> meshplan_core::Report {
    plan_value(&json!({"model": {"hf_config": hf}, "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 1},
                       "parallelism": {"tensor_model_parallel_size": 1}})).unwrap()
}

#[test]
fn llama_3_1_8b_config_json() {
    // The published config.json's sizing fields.
    let r = hf_plan(json!({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
        "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
        "vocab_size": 128256, "tie_word_embeddings": false, "max_position_embeddings": 131072, "rms_norm_eps": 1e-5,
        "rope_theta": 500000.0, "torch_dtype": "bfloat16"}));
    assert_eq!(r.derived.total_parameters, 8_030_261_248);
    assert!(!r.diagnostics.iter().any(|d| d.code == "unknown-field"));
}

#[test]
fn deepseek_v3_config_json_matches_the_preset() {
    let r = hf_plan(json!({"model_type": "deepseek_v3", "hidden_size": 7168, "intermediate_size": 18432,
        "moe_intermediate_size": 2048, "num_hidden_layers": 61, "num_attention_heads": 128, "num_key_value_heads": 128,
        "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8, "first_k_dense_replace": 3, "moe_layer_freq": 1,
        "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
        "vocab_size": 129280, "tie_word_embeddings": false, "num_nextn_predict_layers": 1, "max_position_embeddings": 163840}));
    let preset = presets::model("deepseek-v3").unwrap().model_config().param_counts();
    assert_eq!(r.derived.total_parameters as u128, preset.total);
    assert_eq!(r.derived.active_parameters as u128, preset.active);
    assert_eq!(r.plan.model.num_moe_layers(), 58);
    assert_eq!(r.plan.model.mtp_num_layers, 1);
}

#[test]
fn qwen3_moe_and_mixtral_keys() {
    let r = hf_plan(json!({"model_type": "qwen3_moe", "hidden_size": 2048, "intermediate_size": 6144, "moe_intermediate_size": 768,
        "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128, "num_experts": 128,
        "num_experts_per_tok": 8, "decoder_sparse_step": 1, "mlp_only_layers": [], "vocab_size": 151936, "tie_word_embeddings": false}));
    let preset = presets::model("qwen3-30b-a3b").unwrap().model_config().param_counts();
    assert_eq!(r.derived.total_parameters as u128, preset.total);
    let r = hf_plan(json!({"model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 8, "num_local_experts": 8, "num_experts_per_tok": 2, "vocab_size": 32000}));
    let preset = presets::model("mixtral-8x7b").unwrap().model_config().param_counts();
    assert_eq!(r.derived.total_parameters as u128, preset.total);
}

#[test]
fn unmappable_config_is_an_input_error() {
    let e = plan_value(&json!({"model": {"hf_config": {"model_type": "whisper", "d_model": 1280}}, "cluster": {"gpu": "h100-sxm-80gb"}}))
        .unwrap_err();
    assert_eq!(e.code, "hf-config-unmappable");
    assert!(e.message.contains("num_hidden_layers"));
}
