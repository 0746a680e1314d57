//! Reading the plan file (plan.rs, fields.rs, hf.rs): unreadable input is an `InputError` (exit status 2); a field
//! that had to be corrected is a diagnostic in the report.

use super::*;

/// A complete small plan file as text, for the text probes.
const PLAN_TEXT: &str = r#"{"model": "llama-3.1-8b", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 1}}"#;

/// Llama-3.1-8B's config.json sizing fields.
fn llama_hf(model_type: &str) -> Value {
    json!({"model_type": model_type, "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
           "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 128256, "tie_word_embeddings": false})
}

/// A plan that is a recipe, a model and the probes' cluster (8 H100): the recipe supplies parallelism and training.
fn recipe_plan(recipe: &str, model: Value) -> Probe {
    Probe::Plan(json!({"recipe": recipe, "model": model, "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 1}}))
}

fn without(plan: Value, section: &str) -> Probe {
    let mut v = plan;
    v.as_object_mut().map(|m| m.remove(section));
    Probe::Plan(v)
}

pub fn cases() -> Vec<Case> {
    let dense_plan = plan(dense());
    vec![
        // The same plan cut off after its first field is not JSON (serde_json: EOF while parsing an object).
        case("invalid-json", Kind::Input, Probe::Text(r#"{"model": "llama-3.1-8b","#), Probe::Text(PLAN_TEXT)),
        // A JSON array holding the plan is JSON but not the object parse_plan requires.
        case("invalid-plan", Kind::Input, Probe::Text(r#"[{"model": "llama-3.1-8b", "cluster": {"gpu": "h100-sxm-80gb"}}]"#), Probe::Text(PLAN_TEXT)),
        // `training` as a list: Fields::new reports it and reads the section's defaults (an error in the report).
        case(
            "invalid-section",
            Kind::Error,
            probe(dense(), &[("training", json!([4096]))]),
            probe(dense(), &[("training", json!({"seq_length": 4096}))]),
        ),
        // TP "two" is not an integer in 1..=2^24; 2 is.
        case("invalid-value", Kind::Error, probe(dense(), &[(TP, json!("two"))]), probe(dense(), &[(TP, json!(2))])),
        // A misspelt key (one letter short) is ignored with a warning; spelt right it is read.
        case(
            "unknown-field",
            Kind::Warning,
            probe(dense(), &[("parallelism.tensor_model_paralel_size", json!(2))]),
            probe(dense(), &[("parallelism.tensor_model_parallel_size", json!(2))]),
        ),
        case("missing-model", Kind::Input, without(dense_plan.clone(), "model"), Probe::Plan(dense_plan.clone())),
        // A number is neither a preset key nor an object; the preset key is.
        case("invalid-model", Kind::Input, probe(json!(42), &[]), probe(json!("llama-3.1-8b"), &[])),
        // llama-3.1-8c is one letter off the preset llama-3.1-8b.
        case("unknown-model-preset", Kind::Input, probe(json!("llama-3.1-8c"), &[]), probe(json!("llama-3.1-8b"), &[])),
        // No cluster at all, against an empty cluster object (every field defaulted: one node of the default GPU).
        case("missing-cluster", Kind::Input, without(dense_plan.clone(), "cluster"), probe(dense(), &[("cluster", json!({}))])),
        // h100-sxm-81gb is one letter off the catalogue's h100-sxm-80gb.
        case("unknown-gpu", Kind::Input, probe(dense(), &[("cluster.gpu", json!("h100-sxm-81gb"))]), probe(dense(), &[("cluster.gpu", json!("h100-sxm-80gb"))])),
        // torch's device name for an H100 SXM names the one catalogue entry of that family and size: read as it, said;
        // the catalogue's key is silent.
        case(
            "gpu-name-read",
            Kind::Info,
            probe(dense(), &[("cluster.gpu", json!("NVIDIA H100 80GB HBM3"))]),
            probe(dense(), &[("cluster.gpu", json!("h100-sxm-80gb"))]),
        ),
        // One letter dropped from a recipe name of data/bridge_recipes.json ("confg"): levenshtein 1 to
        // qwen3_8b_pretrain_4gpu_h100_bf16_config, the fix; the plan keeps its own model and cluster. Spelt right it is
        // silent (that recipe, TP 4 and micro-batch 2 at seq 4096, fits the 8 H100 of the probe's cluster).
        case(
            "unknown-recipe",
            Kind::Error,
            recipe_plan("qwen3_8b_pretrain_4gpu_h100_bf16_confg", json!("qwen3-8b")),
            recipe_plan("qwen3_8b_pretrain_4gpu_h100_bf16_config", json!("qwen3-8b")),
        )
        .fix(&[("recipe", json!("qwen3_8b_pretrain_4gpu_h100_bf16_config"))]),
        // qwen3_8b_pretrain_4gpu_h100_bf16_config trains the qwen3-8b preset (data/bridge_recipes.json `model`); the
        // plan's own TransformerConfig object is another model: warned, with the recipe's preset as the fix. Naming
        // that preset is silent.
        case(
            "recipe-model-differs",
            Kind::Warning,
            recipe_plan("qwen3_8b_pretrain_4gpu_h100_bf16_config", dense()),
            recipe_plan("qwen3_8b_pretrain_4gpu_h100_bf16_config", json!("qwen3-8b")),
        )
        .fix(&[("model", json!("qwen3-8b"))]),
        // kimi_k2_pretrain_512gpu_h100_bf16_config sets optimizer "dist_muon" (recipes/kimi/h100/kimi_k2.py
        // _apply_kimi_k2_optimizer), which the settings table does not take: listed under `unresolved`, an info.
        // Giving training.optimizer in the plan silences it.
        case(
            "recipe-unresolved",
            Kind::Info,
            Probe::Plan(json!({"recipe": "kimi_k2_pretrain_512gpu_h100_bf16_config"})),
            Probe::Plan(json!({"recipe": "kimi_k2_pretrain_512gpu_h100_bf16_config", "training": {"optimizer": "adam"}})),
        ),
        // vocab_size is one of the four fields hf.rs needs to size a transformer.
        case(
            "hf-config-unmappable",
            Kind::Input,
            probe(json!({"hf_config": set(&llama_hf("llama"), &[("vocab_size", Value::Null)])}), &[]),
            probe(json!({"hf_config": llama_hf("llama")}), &[]),
        ),
        // gpt_neox is not in hf::FAMILIES: read as a Llama-style decoder, with a warning; "llama" is mapped.
        case(
            "hf-config-family-unknown",
            Kind::Warning,
            probe(json!({"hf_config": llama_hf("gpt_neox")}), &[]),
            probe(json!({"hf_config": llama_hf("llama")}), &[]),
        ),
        // A multimodal config (Llama 4's shape) keeps its language model under text_config: with a vision_config beside it,
        // the encoder is left out and the plan says so; the same text_config alone says nothing.
        case(
            "hf-config-part-excluded",
            Kind::Info,
            probe(json!({"hf_config": {"model_type": "llama4", "text_config": llama_hf("llama4_text"), "vision_config": {"hidden_size": 1408}}}), &[]),
            probe(json!({"hf_config": {"model_type": "llama4", "text_config": llama_hf("llama4_text")}}), &[]),
        ),
        // GLM-5.2's cadence (index_topk_freq 4, index_skip_topk_offset 3 over 8 layers: layers 1-3 and 7 compute their
        // indices, 4-6 and 8 reuse them): 4 sharing layers' indexers counted over; the same config at freq 1 shares none.
        case(
            "hf-config-part-approximated",
            Kind::Warning,
            probe(json!({"hf_config": dsa_hf(4)}), &[]),
            probe(json!({"hf_config": dsa_hf(1)}), &[]),
        ),
        // A gated (SwiGLU) model that leaves add_bias_linear out is read without biases (Megatron's default is True).
        case(
            "add-bias-linear-default",
            Kind::Info,
            probe(set(&dense(), &[("add_bias_linear", Value::Null)]), &[]),
            probe(dense(), &[]),
        ),
        // 16 layers need 16 entries of 0/1: 15 are one short; 8 dense then 8 MoE layers are 16.
        case(
            "moe-layer-freq-length",
            Kind::Error,
            probe(set(&moe(), &[("moe_layer_freq", json!([vec![0; 7], vec![1; 8]].concat()))]), &[]),
            probe(set(&moe(), &[("moe_layer_freq", json!([vec![0; 8], vec![1; 8]].concat()))]), &[]),
        ),
    ]
}

#[test]
fn codes() {
    run(cases());
}

/// A small GLM-5-style MLA + DSA config (8 layers) whose indexers are shared at cadence `freq` from offset 3.
fn dsa_hf(freq: u64) -> Value {
    json!({"model_type": "glm_moe_dsa", "hidden_size": 1024, "num_hidden_layers": 8, "num_attention_heads": 8,
           "num_key_value_heads": 8, "vocab_size": 32000, "intermediate_size": 2048, "q_lora_rank": 256, "kv_lora_rank": 128,
           "qk_nope_head_dim": 64, "qk_rope_head_dim": 32, "v_head_dim": 64, "index_n_heads": 4, "index_head_dim": 64,
           "index_topk": 256, "index_topk_freq": freq, "index_skip_topk_offset": 3})
}
