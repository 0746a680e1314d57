//! The 2026 model zoo: every preset added from a real config.json (crates/core/tests/data/hf, origins in SOURCES.md)
//! against the parameter count its makers publish, the config pasted as a user would ({"hf_config": ...}) against the
//! preset, and a valid layout per family from the search.
//!
//! Conventions of the published figures, as each source states them:
//! - "total" is every parameter with the input embedding and the output layer counted once each (once in all when
//!   tied); MTP modules are not in it (meshplan reports them apart: `ParamCounts::mtp`).
//! - "non-embedding" (Qwen, EXAONE, Gemma 2 report) leaves out the input embedding and the output layer.
//! - OpenAI's gpt-oss "active" counts the unembedding but not the input embedding (a lookup).
//! - A figure only given as a model name ("Qwen3.5-35B-A3B", "17B active") is checked by rounding: the count must round
//!   to the name's digits.
//! - Multimodal models (Llama 4, Qwen3.5, Qwen3-VL) count their vision encoder in the total (Meta's 109B for Scout
//!   does); "active" is the language model's (Meta's "17B active").

use meshplan_core::search::{self, SearchOptions};
use meshplan_core::{ExportKind, export, plan_value, presets};
use serde_json::{Value, json};

fn hf_config(file: &str) -> Value {
    let path = format!("{}/tests/data/hf/{file}.config.json", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))).unwrap()
}

/// (total, active, embedding + output layer) of a preset.
fn counts(key: &str) -> (f64, f64, f64) {
    let c = presets::model(key).unwrap_or_else(|| panic!("no preset {key}")).model_config().param_counts();
    (c.total as f64, c.active as f64, (c.embedding + c.output_layer) as f64)
}

fn within(what: &str, ours: f64, published: f64, tol: f64) {
    assert!((ours / published - 1.0).abs() <= tol, "{what}: meshplan {ours:.6e} vs published {published:.6e} (tolerance {tol})");
}

/// The count, in billions, rounds to the model name's figure (`digits` after the point).
fn rounds_to(what: &str, ours: f64, name_billions: f64, digits: i32) {
    let scale = 10f64.powi(digits);
    assert_eq!((ours / 1e9 * scale).round() / scale, name_billions, "{what}: {:.3}B does not round to the published {name_billions}B", ours / 1e9);
}

#[test]
fn llama_3_2_and_4_against_meta_model_cards() {
    // Llama 3.2 model card (meta-llama/Llama-3.2-1B, "Model Information" table): 1.23B and 3.21B parameters, tied.
    within("llama-3.2-1b total", counts("llama-3.2-1b").0, 1.23e9, 0.01);
    within("llama-3.2-3b total", counts("llama-3.2-3b").0, 3.21e9, 0.01);
    // Llama 4 model card: Scout 17B active / 109B total, Maverick 17B active / 400B total. The totals include the vision
    // encoder; "active" is the language model's. Scout's language model, by hand: 48 MoE layers × (attention
    // 5120·(40+16)·128 + 40·128·5120 = 62,914,560; 16 experts + 1 shared × 3·5120·8192 = 2,139,095,040; router
    // 16·5120; norms 2·5120) = 48 × 2,202,101,760, + 2 × 202048·5120 + 5120 = 107,769,861,120. Its vision encoder
    // (transformers Llama4VisionModel, h 1408, f 5632, 34 layers, patch 14, image 336): unfold linear 588·1408 =
    // 827,904; class token 1408; positions 577·1408 = 812,416; pre/post LayerNorms 4·1408 = 5,632; per layer q/k/v/o
    // 4·(1408² + 1408) = 7,935,488 + fc1/fc2 2·1408·5632 + 5632 + 1408 = 15,866,752 + 2 LayerNorms 5,632 = 23,807,872,
    // × 34 = 809,467,648; adapter 5632·4096 + 4096² = 39,845,888; projector 4096·5120 = 20,971,520. Encoder
    // 871,932,416; total 108,641,793,536 (0.3% under the published 109B, which is rounded).
    let (scout, scout_active, _) = counts("llama-4-scout-17b-16e");
    assert_eq!(scout, 107_769_861_120.0 + 871_932_416.0);
    assert_eq!(presets::model("llama-4-scout-17b-16e").unwrap().model_config().param_counts().vision_encoder, 871_932_416);
    within("llama-4-scout total", scout, 109e9, 0.005);
    rounds_to("llama-4-scout active", scout_active, 17.0, 0);
    let (maverick, maverick_active, _) = counts("llama-4-maverick-17b-128e");
    within("llama-4-maverick total", maverick, 400e9, 0.01);
    rounds_to("llama-4-maverick active", maverick_active, 17.0, 0);
    // Maverick interleaves: 24 MoE layers (every second, counted from layer 1) and 24 dense layers 16384 wide.
    let m = presets::model("llama-4-maverick-17b-128e").unwrap().model_config();
    assert_eq!(m.num_moe_layers(), 24);
    assert!(!m.layer_is_moe(0) && m.layer_is_moe(1));
}

#[test]
fn qwen_2_5_3_and_3_5_against_qwen_model_cards() {
    // Qwen2.5 model cards ("Number of Parameters: 7.61B; Number of Parameters (Non-Embedding): 6.53B"; 32B: 32.5B and
    // 31.0B; 14B: 14.7B and 13.1B; 72B: 72.7B and 70.0B); Qwen3 model cards: 0.6B, non-embedding 0.44B (embeddings
    // tied); 4B: 4.0B and 3.6B (tied); 14B: 14.8B and 13.2B.
    for (key, total, non_embedding) in [
        ("qwen2.5-7b", 7.61e9, 6.53e9),
        ("qwen2.5-14b", 14.7e9, 13.1e9),
        ("qwen2.5-32b", 32.5e9, 31.0e9),
        ("qwen2.5-72b", 72.7e9, 70.0e9),
        ("qwen3-0.6b", 0.6e9, 0.44e9),
        ("qwen3-4b", 4.0e9, 3.6e9),
        ("qwen3-14b", 14.8e9, 13.2e9),
    ] {
        let (t, _, e) = counts(key);
        within(&format!("{key} total"), t, total, 0.01);
        within(&format!("{key} non-embedding"), t - e, non_embedding, 0.01);
    }
    // Qwen3-1.7B model card: 1.7B (non-embedding 1.4B); tied.
    let (t, _, e) = counts("qwen3-1.7b");
    rounds_to("qwen3-1.7b total", t, 1.7, 1);
    within("qwen3-1.7b non-embedding", t - e, 1.4e9, 0.01);
    // Qwen3.5: the figures are the model names, which name the language model: with its 0.46B vision encoder (counted in
    // meshplan's total) Qwen3.5-9B would be 9.4B. The language model (total less the encoder) within 1% of the name.
    for (key, total, active) in
        [("qwen3.5-9b", 9.0, None), ("qwen3.5-27b", 27.0, None), ("qwen3.5-35b-a3b", 35.0, Some(3.0)), ("qwen3.5-122b-a10b", 122.0, Some(10.0)), ("qwen3.5-397b-a17b", 397.0, Some(17.0))]
    {
        let (t, a, _) = counts(key);
        let encoder = presets::model(key).unwrap().model_config().param_counts().vision_encoder as f64;
        assert!(encoder > 0.0, "{key}: the preset has its vision encoder");
        within(&format!("{key} language model"), t - encoder, total * 1e9, 0.01);
        if let Some(active) = active {
            rounds_to(&format!("{key} active"), a, active, 0);
        }
    }
}

#[test]
fn gpt_oss_against_the_openai_model_card() {
    // gpt-oss model card (OpenAI, Aug 2025), parameter table: 120b 116.83B total, 5.13B active; 20b 20.91B total,
    // 3.61B active, where "active" counts the unembedding but not the input embedding (201088 × 2880 = 579,133,440).
    // By hand, gpt-oss-20b: attention 2880·(64+16)·64 + qkv bias 5120 + o 4096·2880 + o bias 2880 + 64 sinks + norm
    // 2880 = 26,553,024; MoE router 32·2880 + 32 experts × (fc1 2880·5760 + 5760 + fc2 2880·2880 + 2880) + norm 2880
    // = 796,633,920; 24 layers × 823,186,944 + 2 × 201088·2880 + 2880 = 20,914,756,416 (the router's 32 biases per
    // layer are not counted).
    assert_eq!(counts("gpt-oss-20b").0, 20_914_756_416.0);
    for (key, total, active) in [("gpt-oss-20b", 20.91e9, 3.61e9), ("gpt-oss-120b", 116.83e9, 5.13e9)] {
        let (t, a, _) = counts(key);
        within(&format!("{key} total"), t, total, 0.01);
        within(&format!("{key} active"), a - 201_088.0 * 2880.0, active, 0.01);
    }
}

#[test]
fn gemma_2_against_the_gemma_2_report() {
    // Gemma 2 report (arXiv 2408.00118, Table 2, non-embedding parameters): 2B 2,024,517,888; 9B 8,324,201,984; 27B
    // 26,047,480,320.
    // By hand, 9B: 42 × (q/k/v 3584·(16+8+8)·256 + o 4096·3584 + MLP 3·3584·14336 + 4 norms·3584) + final norm 3584
    // = 42 × 198,195,200 + 3584 = 8,324,201,984. meshplan counts 2 of the 4 per-layer norms (Megatron Bridge folds the
    // post-attention and post-MLP norms into linear_proj / linear_fc2 post_layernorm; meshplan has no field for them),
    // so it is short by exactly 2 × 3584 per layer.
    let (t, _, e) = counts("gemma-2-2b");
    assert_eq!(t - e + 26.0 * 2.0 * 2304.0, 2_024_517_888.0);
    let (t, _, e) = counts("gemma-2-9b");
    assert_eq!(t - e + 42.0 * 2.0 * 3584.0, 8_324_201_984.0);
    let (t, _, e) = counts("gemma-2-27b");
    assert_eq!(t - e + 46.0 * 2.0 * 4608.0, 26_047_480_320.0);
    // Tied embeddings (Gemma2Config's default): one 256000 × 3584 table.
    assert_eq!(e, 256_000.0 * 4608.0);
}

#[test]
fn gemma_3_against_keras_hubs_exact_counts() {
    // keras-hub's Gemma 3 presets (keras_hub/src/models/gemma3/gemma3_presets.py "params", text-only backbones):
    // 1B 999,885,952; 4B 3,880,099,328; 12B 11,765,788,416; 27B 27,009,002,240. By hand, 12B: tied 262144·3840 =
    // 1,006,632,960 + 48 × (q/k/v 3840·(16+8+8)·256 + o 4096·3840 + MLP 3·3840·15360 + 4 norms·3840 + q/k norms 2·256 =
    // 224,148,992) + 3840 = 11,765,788,416. 1B: tied 262144·1152 = 301,989,888 +
    // 26 × (q/k/v 1152·(4+1+1)·256 + o 1024·1152 + MLP 3·1152·6912 + 4 norms·1152 + q/k norms 2·256 = 26,842,112)
    // + 1152 = 999,885,952. meshplan counts 2 of the 4 per-layer norms (see Gemma 2), and keras-hub's text backbones
    // hold 262144 of the HF config's vocab rows (4B and 27B configs list 262208: 64 image tokens more).
    for (key, layers, hidden, vocab, keras) in [
        ("gemma-3-1b", 26.0, 1152.0, 262_144.0, 999_885_952.0),
        ("gemma-3-4b", 34.0, 2560.0, 262_208.0, 3_880_099_328.0),
        ("gemma-3-12b", 48.0, 3840.0, 262_208.0, 11_765_788_416.0),
        ("gemma-3-27b", 62.0, 5376.0, 262_208.0, 27_009_002_240.0),
    ] {
        let (t, _, _) = counts(key);
        assert_eq!(t + layers * 2.0 * hidden - (vocab - 262_144.0) * hidden, keras, "{key}");
    }
}

#[test]
fn deepseek_v2_lite_against_the_deepseek_v2_paper() {
    // DeepSeek-V2 paper (arXiv 2405.04434, appendix B): DeepSeek-V2-Lite has 15.7B total parameters, 2.4B activated
    // per token. meshplan's active count holds both embedding tables (2 × 102400·2048 = 419,430,400); without the
    // input embedding it is 2.45B, 2.1% above the published 2.4B, whose rounding the paper does not state.
    let (t, a, e) = counts("deepseek-v2-lite");
    within("deepseek-v2-lite total", t, 15.7e9, 0.01);
    within("deepseek-v2-lite active without the input embedding", a - e / 2.0, 2.4e9, 0.025);
    let m = presets::model("deepseek-v2-lite").unwrap().model_config();
    assert_eq!((m.q_lora_rank, m.num_moe_layers()), (None, 26));
}

#[test]
fn phi_4_exaone_4_and_minimax_m2() {
    // phi-4 (published as "14B"), by hand: 40 × (q/k/v 5120·(40+10+10)·128 + o 5120·5120 + MLP 3·5120·17920 + 2 norms
    // ·5120) = 40 × 340,797,440 = 13,631,897,600; untied embeddings 2 × 100352·5120 = 1,027,604,480; final norm 5120.
    assert_eq!(counts("phi-4").0, 14_659_507_200.0);
    // EXAONE 4.0 model cards, "Number of Parameters (without embeddings)": 32B 30.95B, 1.2B 1.07B (tied).
    for (key, non_embedding) in [("exaone-4.0-32b", 30.95e9), ("exaone-4.0-1.2b", 1.07e9)] {
        let (t, _, e) = counts(key);
        within(&format!("{key} non-embedding"), t - e, non_embedding, 0.01);
    }
    // MiniMax-M2 model card: 230B total parameters, 10B active (M2.5 keeps the architecture); MTP modules apart.
    let (t, a, e) = counts("minimax-m2.5");
    within("minimax-m2.5 total", t, 230e9, 0.01);
    rounds_to("minimax-m2.5 active (non-embedding)", a - e, 10.0, 0);
    assert_eq!(presets::model("minimax-m2.5").unwrap().model_config().mtp_num_layers, 3);
}

#[test]
fn llama_nemotron_super_49b_heterogeneous_layers() {
    // Its block_configs, by hand: 49 GQA attention layers (8192·(8192 + 2·1024) + 8192·8192 + norm 8192 = 151,003,136)
    // and 31 without attention; FFN widths int(2·ffn_mult·8192/3) rounded up to 256: 5.25 → 28672 (49 layers), 2.625
    // → 14336 (6), 1.3125 → 7168 (10), 1.0 → 5461 → 5632 (8), 0.5 → 2730 → 2816 (6), 3.28125 → 17920 (1), each
    // 3·8192·w + norm 8192; untied embeddings 2 × 128256·8192; final norm. Total 49,867,145,216 (published as "49B").
    let widths = 49.0 * 28672.0 + 6.0 * 14336.0 + 10.0 * 7168.0 + 8.0 * 5632.0 + 6.0 * 2816.0 + 17920.0;
    let by_hand = 49.0 * 151_003_136.0 + 3.0 * 8192.0 * widths + 80.0 * 8192.0 + 2.0 * 128_256.0 * 8192.0 + 8192.0;
    assert_eq!(by_hand, 49_867_145_216.0);
    assert_eq!(counts("llama-3.3-nemotron-super-49b").0, by_hand);
    let m = presets::model("llama-3.3-nemotron-super-49b").unwrap().model_config();
    assert_eq!((m.num_query_groups, m.kind_totals().run_where(|k| k.mixer == meshplan_core::model::Mixer::Attention)), (8, 49));
    // Dense GEMM FLOPs follow each layer's width: 6·T·h·(3·Σ widths) for the MLPs, 6·T·(h·(q + 2kv) + q·h) per attention
    // layer, and MTP none (T = 8 × 4096 tokens).
    let r = plan_of(json!("llama-3.3-nemotron-super-49b"), 4096, 8);
    let split = meshplan_core::perf::flop_split(&r.plan, &r.derived);
    let t = 8.0 * 4096.0;
    let expected = t * (6.0 * 8192.0 * 3.0 * widths + 49.0 * 6.0 * (8192.0 * (8192.0 + 2048.0) + 8192.0 * 8192.0));
    assert!((split.dense_gemm / expected - 1.0).abs() < 1e-12, "{} vs {expected}", split.dense_gemm);
    // Per-stage memory follows the blocks: on PP 2 both stages build 40 layers, but the first holds 45 of the 49
    // attention layers and the widest MLPs (layers 40–79 are mostly no-op attention with narrow MLPs).
    let r = plan_value(&json!({"model": "llama-3.3-nemotron-super-49b", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 2},
        "parallelism": {"tensor_model_parallel_size": 8, "pipeline_model_parallel_size": 2}})).unwrap();
    let params = |s: usize| {
        r.memory.stages[s].terms.iter().find(|t| t.key == meshplan_core::memory::TermKey::Weights).map(|t| t.bytes).unwrap()
    };
    assert!(params(0) as f64 > 1.5 * params(1) as f64, "{} vs {}", params(0), params(1));
    // The resolved plan round-trips through the plan export with its layers.
    let text = meshplan_core::export(meshplan_core::ExportKind::Plan, &r.plan, &r);
    assert_eq!(meshplan_core::plan_str(&text).unwrap().derived.total_parameters, r.derived.total_parameters);
}

#[test]
fn heterogeneous_layers_as_megatron_fields() {
    // heterogeneous_layers_config_encoded_json as Megatron-Core takes it: a JSON text with block_configs.
    let blocks = json!({"block_configs": [
        {"attention": {"no_op": false, "n_heads_in_group": 4}, "ffn": {"no_op": false, "ffn_mult": 1.5}},
        {"attention": {"no_op": true}, "ffn": {"no_op": false, "ffn_mult": 3.0}},
        {"attention": {"no_op": false, "n_heads_in_group": 4}, "ffn": {"no_op": true}}]});
    let model = json!({"num_layers": 3, "hidden_size": 1024, "num_attention_heads": 16, "kv_channels": 64, "vocab_size": 32000,
        "gated_linear_unit": true, "add_bias_linear": false, "normalization": "RMSNorm", "position_embedding_type": "rope",
        "share_embeddings_and_output_weights": false,
        "heterogeneous_layers_config_encoded_json": blocks.to_string()});
    let r = plan_of(model.clone(), 1024, 16);
    // By hand: 16 heads / 4 per group = 4 groups; attention 1024·(1024 + 2·256) + 1024·1024 + norm = 2,622,464 (×2);
    // MLP widths 2·1.5·1024/3 = 1024 and 2·3·1024/3 = 2048 → 3·1024·w + norm: 3,146,752 and 6,292,480; embeddings
    // 2 × 32000·1024 = 65,536,000; final norm 1024.
    assert_eq!(r.plan.model.num_query_groups, 4);
    assert_eq!(r.derived.total_parameters, 2 * 2_622_464 + 3_146_752 + 6_292_480 + 65_536_000 + 1024);
    // A block of a kind meshplan cannot size is named, and the model read without the blocks.
    let (mut bad, mut bad_blocks) = (model, blocks);
    bad_blocks["block_configs"][1]["attention"] = json!({"no_op": false, "n_heads_in_group": 4, "sparsify": [1]});
    bad["heterogeneous_layers_config_encoded_json"] = json!(bad_blocks.to_string());
    let r = plan_of(bad, 1024, 16);
    assert!(r.diagnostics.iter().any(|d| d.code == "invalid-value" && d.message.contains("block 1") && d.message.contains("sparsify")), "{:?}", r.diagnostics);
}

/// Each preset added from a config.json, and that file.
const FROM_CONFIG: &[(&str, &str)] = &[
    ("llama-3.2-1b", "meta-llama--Llama-3.2-1B-Instruct"),
    ("llama-3.2-3b", "meta-llama--Llama-3.2-3B-Instruct"),
    ("llama-4-scout-17b-16e", "meta-llama--Llama-4-Scout-17B-16E-Instruct"),
    ("llama-4-maverick-17b-128e", "meta-llama--Llama-4-Maverick-17B-128E-Instruct"),
    ("qwen2.5-7b", "Qwen--Qwen2.5-7B-Instruct"),
    ("qwen2.5-32b", "Qwen--Qwen2.5-32B-Instruct"),
    ("qwen2.5-72b", "Qwen--Qwen2.5-72B"),
    ("qwen2.5-14b", "Qwen--Qwen2.5-14B"),
    ("qwen3-14b", "Qwen--Qwen3-14B"),
    ("qwen3-4b", "Qwen--Qwen3-4B"),
    ("olmo-2-13b", "allenai--OLMo-2-1124-13B"),
    ("olmo-2-7b", "allenai--OLMo-2-1124-7B"),
    ("qwen3-0.6b", "Qwen--Qwen3-0.6B"),
    ("qwen3-1.7b", "Qwen--Qwen3-1.7B"),
    ("qwen3.5-9b", "Qwen--Qwen3.5-9B"),
    ("qwen3.5-27b", "Qwen--Qwen3.5-27B"),
    ("qwen3.5-35b-a3b", "Qwen--Qwen3.5-35B-A3B"),
    ("qwen3.5-122b-a10b", "Qwen--Qwen3.5-122B-A10B"),
    ("qwen3.5-397b-a17b", "Qwen--Qwen3.5-397B-A17B"),
    ("gpt-oss-20b", "openai--gpt-oss-20b"),
    ("gpt-oss-120b", "openai--gpt-oss-120b"),
    ("gemma-2-2b", "google--gemma-2-2b"),
    ("gemma-2-9b", "google--gemma-2-9b"),
    ("gemma-2-27b", "google--gemma-2-27b"),
    ("phi-4", "microsoft--phi-4"),
    ("exaone-4.0-32b", "LGAI-EXAONE--EXAONE-4.0-32B"),
    ("exaone-4.0-1.2b", "LGAI-EXAONE--EXAONE-4.0-1.2B"),
    ("minimax-m2.5", "MiniMaxAI--MiniMax-M2.5"),
    ("deepseek-v2-lite", "deepseek-ai--DeepSeek-V2-Lite"),
    ("gemma-3-1b", "google--gemma-3-1b"),
    ("gemma-3-4b", "google--gemma-3-4b"),
    ("gemma-3-12b", "google--gemma-3-12b"),
    ("gemma-3-27b", "google--gemma-3-27b"),
    ("gemma-4-31b", "google--gemma-4-31B"),
    ("gemma-4-26b-a4b", "google--gemma-4-26B-A4B"),
    ("gemma-4-e2b", "google--gemma-4-E2B"),
    ("gemma-4-e4b", "google--gemma-4-E4B"),
    ("llama-3.3-nemotron-super-49b", "nvidia__Llama-3_3-Nemotron-Super-49B-v1"),
    ("qwen3-vl-8b", "Qwen--Qwen3-VL-8B-Instruct"),
    ("qwen3-vl-30b-a3b", "Qwen--Qwen3-VL-30B-A3B-Instruct"),
    ("qwen3-vl-235b-a22b", "Qwen--Qwen3-VL-235B-A22B-Instruct"),
    ("deepseek-v3.2", "deepseek-ai--DeepSeek-V3.2"),
    ("glm-5", "zai-org--GLM-5"),
    ("kimi-k2.5", "moonshotai--Kimi-K2.5"),
    ("deepseek-v4-flash", "deepseek-ai--DeepSeek-V4-Flash"),
    ("deepseek-v4-pro", "deepseek-ai--DeepSeek-V4-Pro"),
    ("llama-3.1-8b", "meta-llama--Meta-Llama-3.1-8B"),
    ("llama-3.1-70b", "meta-llama--Meta-Llama-3.1-70B"),
    ("llama-3.1-405b", "meta-llama--Meta-Llama-3.1-405B"),
    ("qwen3-8b", "Qwen--Qwen3-8B"),
    ("qwen3-32b", "Qwen--Qwen3-32B"),
    ("qwen3-30b-a3b", "Qwen--Qwen3-30B-A3B"),
    ("qwen3-235b-a22b", "Qwen--Qwen3-235B-A22B"),
    ("deepseek-v3", "deepseek-ai--DeepSeek-V3"),
    ("kimi-k2", "moonshotai--Kimi-K2-Instruct"),
    ("moonlight-16b-a3b", "moonshotai--Moonlight-16B-A3B-Instruct"),
    ("glm-4.5", "zai-org--GLM-4.5"),
    ("glm-4.5-air", "zai-org--GLM-4.5-Air"),
    ("olmoe-1b-7b", "allenai--OLMoE-1B-7B-0924"),
    ("mixtral-8x7b", "mistralai--Mixtral-8x7B-v0.1"),
    ("deepseek-v2", "deepseek-ai--DeepSeek-V2"),
];

#[test]
fn each_config_json_pasted_gives_its_presets_counts() {
    for &(key, file) in FROM_CONFIG {
        let hf = hf_config(file);
        let r = plan_value(&json!({"model": {"hf_config": hf}, "cluster": {"gpu": "h100-sxm-80gb"}})).unwrap_or_else(|e| panic!("{file}: {e:?}"));
        let preset = presets::model(key).unwrap().model_config().param_counts();
        // A config copy without its vision_config (Llama 4's are text-only copies) gives the language model alone; one
        // with it gives the language model and its encoder: the preset's own encoder where the preset has one (Qwen3-VL,
        // Qwen3.5, Kimi-K2.5), the encoder counted by hand in its own test where the preset is text-only (Gemma 4).
        let multimodal = hf.get("vision_config").is_some();
        let read = r.derived.vision_encoder_parameters as u128;
        if multimodal && preset.vision_encoder > 0 {
            assert_eq!(read, preset.vision_encoder, "{file} encoder");
        }
        assert_eq!(r.derived.total_parameters as u128, preset.total - preset.vision_encoder + read, "{file} total");
        assert_eq!(r.derived.active_parameters as u128, preset.active, "{file} active");
        // The MTP modules the file names (num_nextn_predict_layers, mtp_num_hidden_layers) are the preset's too.
        assert_eq!(r.derived.mtp_parameters as u128, preset.mtp, "{file} MTP");
        let codes: Vec<&str> = r.diagnostics.iter().map(|d| d.code.as_str()).collect();
        assert!(!codes.contains(&"hf-config-family-unknown") && !codes.contains(&"unknown-field"), "{file}: {codes:?}");
        // A multimodal config's vision encoder is sized; a text-only one says nothing; an audio tower (Gemma 4 E2B and
        // E4B) is named as not counted.
        let sized = r.plan.model.vision_config.is_some();
        let audio = hf.get("audio_config").is_some_and(|a| !a.is_null());
        assert!(!sized || multimodal, "{file}");
        assert_eq!(codes.contains(&"hf-config-part-excluded"), (multimodal && !sized) || audio, "{file}: {codes:?}");
        assert_eq!(sized, multimodal, "{file}");
    }
}

#[test]
fn every_new_family_has_a_valid_layout() {
    // One model per family added, on a cluster its size calls for; the search must find a layout without errors.
    for (key, gpus) in [
        ("llama-3.2-3b", 8),
        ("llama-4-scout-17b-16e", 32),
        ("qwen2.5-7b", 8),
        ("qwen3.5-35b-a3b", 16),
        ("gpt-oss-20b", 16),
        ("gemma-2-9b", 8),
        ("gemma-3-1b", 8),
        ("deepseek-v2-lite", 8),
        ("phi-4", 8),
        ("exaone-4.0-32b", 16),
        ("minimax-m2.5", 64),
        ("llama-3.3-nemotron-super-49b", 32),
        ("step-3.5-flash", 128),
        ("gemma-4-31b", 16),
        ("gemma-4-26b-a4b", 16),
        ("olmo-2-7b", 8),
        ("gemma-3-12b", 8),
        ("gemma-4-e4b", 8),
        ("deepseek-v4-flash", 128),
    ] {
        let plan = json!({"model": key, "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": gpus / 8},
                          "training": {"seq_length": 4096, "global_batch_size": 256}});
        let r = search::search_value(&plan, &SearchOptions { top: 1, ..SearchOptions::default() }).unwrap();
        assert!(r.valid > 0 && !r.candidates.is_empty(), "{key} on {gpus} GPUs: no valid layout ({:?})", r.rejected_by);
    }
}

#[test]
fn every_preset_has_a_family_and_a_bridge_recipe_entry() {
    let recipes: Value = serde_json::from_str(include_str!("../data/recipes.json")).unwrap();
    let listed = |k: &str| {
        ["recipes", "without_recipe"].iter().filter(|s| recipes[**s].as_array().unwrap().iter().any(|r| r["model"] == k)).count()
    };
    for m in presets::models() {
        assert!(!m.family.is_empty(), "{}", m.key);
        assert_eq!(listed(&m.key), 1, "{}: listed once under recipes or without_recipe", m.key);
    }
    assert_eq!(presets::bridge_recipe("gpt-oss-120b").unwrap().recipe, "gpt_oss_120b_pretrain_config");
}

#[test]
fn non_finite_numbers_in_a_pasted_config_read_as_null() {
    // Python's json writes Infinity / NaN (Nemotron-H: "time_step_limit": [0.0, Infinity]); strict JSON has neither.
    let text = r#"{"model": {"hf_config": {"model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192,
        "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 16, "vocab_size": 128256,
        "tie_word_embeddings": true, "time_step_limit": [0.0, Infinity], "x": -Infinity, "y": NaN, "s": "NaN Infinity"}},
        "cluster": {"gpu": "h100-sxm-80gb"}}"#;
    let r = meshplan_core::plan_str(text).expect("read with the non-finite numbers as null");
    assert_eq!(r.derived.total_parameters as f64, counts("llama-3.2-1b").0);
    // Anything else that is not JSON stays an error.
    assert_eq!(meshplan_core::plan_str(r#"{"model": Infinite}"#).unwrap_err().code, "invalid-json");
}

fn plan_of(model: Value, seq: u64, gbs: u64) -> meshplan_core::Report {
    plan_value(&json!({"model": model, "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 2},
                       "training": {"seq_length": seq, "micro_batch_size": 1, "global_batch_size": gbs}}))
    .unwrap()
}

#[test]
fn sliding_window_layers_as_megatron_picks_them() {
    // megatron/core/transformer/utils.py is_layer_window_attention, layer_number 1-indexed: an int N keeps every N-th
    // layer full; a list marks windowed layers with 1. EXAONE 4.0 32B (LLLG): layers 3, 7, … (0-based) are full.
    let m = presets::model("exaone-4.0-32b").unwrap().model_config();
    assert_eq!(m.window_size, Some([4095, 0]));
    assert!(m.is_window_layer(0) && m.is_window_layer(2) && !m.is_window_layer(3) && !m.is_window_layer(63));
    assert_eq!(m.window_attention_layers(), 48);
    // gpt-oss: "sliding_attention" on even layers (0-based) of its layer_types → 12 of 24.
    assert_eq!(presets::model("gpt-oss-20b").unwrap().model_config().window_attention_layers(), 12);
    // The CLI form "left,right", an unbounded left (-1: no window), a list, and a malformed value.
    let dense = json!({"num_layers": 4, "hidden_size": 256, "num_attention_heads": 4, "add_bias_linear": false, "gated_linear_unit": true});
    let with = |extra: Value| {
        let mut v = dense.clone();
        v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        plan_of(v, 1024, 16)
    };
    let r = with(json!({"window_size": "63,0", "window_attn_skip_freq": [1, 1, 0, 1]}));
    assert_eq!(r.plan.model.window_size, Some([63, 0]));
    assert_eq!(r.plan.model.window_attention_layers(), 3);
    assert_eq!(with(json!({"window_size": [-1, 0]})).plan.model.window_size, None);
    let r = with(json!({"window_size": [64]}));
    assert!(r.diagnostics.iter().any(|d| d.code == "invalid-value" && d.message.contains("window_size")));
    let r = with(json!({"window_size": [63, 0], "window_attn_skip_freq": [1, 0]}));
    assert!(r.diagnostics.iter().any(|d| d.code == "invalid-value" && d.message.contains("window_attn_skip_freq")));
}

#[test]
fn sliding_window_attention_flops() {
    // gpt-oss-20b at s = 4096: 24 attention layers, 12 of them windowed to W = 127 + 0 + 1 = 128 keys. Megatron
    // Bridge's flop_utils (calculate_swa_context) gives a windowed layer an average context W − W(W−1)/(2s) against s/2
    // for full causal attention, i.e. s·(2W − W(W−1)/s) = 2·4096·128 − 128·127 = 1,032,320 pairs per sequence
    // against s² = 16,777,216. Core attention per pair: 6 × q (q = 64 heads × 64 = 4096; fwd+bwd, QKᵀ and PV, causal
    // halving folded into Megatron's s²).
    let gbs = 32.0;
    let r = plan_of(json!("gpt-oss-20b"), 4096, 32);
    let split = meshplan_core::perf::flop_split(&r.plan, &r.derived);
    let expected = 6.0 * 4096.0 * gbs * (12.0 * 16_777_216.0 + 12.0 * 1_032_320.0);
    assert!((split.attention_core / expected - 1.0).abs() < 1e-12, "{} vs {expected}", split.attention_core);
    // Without the window every layer pays s².
    let mut plain = r.plan.clone();
    plain.model.window_size = None;
    let full = meshplan_core::perf::flop_split(&plain, &r.derived).attention_core;
    assert!((full / (6.0 * 4096.0 * gbs * 24.0 * 16_777_216.0) - 1.0).abs() < 1e-12);
    // A window at least as long as the sequence changes nothing (Gemma 2's 4096 keys at s = 4096).
    let g = plan_of(json!("gemma-2-9b"), 4096, 32);
    let mut g_plain = g.plan.clone();
    g_plain.model.window_size = None;
    assert_eq!(meshplan_core::perf::flop_split(&g.plan, &g.derived).attention_core, meshplan_core::perf::flop_split(&g_plain, &g.derived).attention_core);
}

#[test]
fn hf_sliding_window_mapping_by_family() {
    let base = json!({"hidden_size": 1024, "intermediate_size": 4096, "num_attention_heads": 8, "num_key_value_heads": 4,
                      "num_hidden_layers": 12, "vocab_size": 32000, "head_dim": 128, "sliding_window": 512});
    let model = |extra: Value| {
        let mut v = base.clone();
        v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        plan_of(json!({"hf_config": v}), 2048, 16).plan.model
    };
    // Gemma 2: sliding on even layer_idx (Gemma2DecoderLayer) → every 2nd layer full; tied by default.
    let g2 = model(json!({"model_type": "gemma2"}));
    assert_eq!((g2.window_size, g2.window_attn_skip_freq.clone()), (Some([511, 0]), Some(meshplan_core::model::MoeLayerFreq::Every(2))));
    assert!(g2.share_embeddings_and_output_weights);
    // Gemma 3: every sliding_window_pattern-th layer full; q/k norms.
    let g3 = model(json!({"model_type": "gemma3_text", "sliding_window_pattern": 6}));
    assert_eq!(g3.window_attention_layers(), 10);
    assert!(g3.qk_layernorm);
    // Qwen2 configs carry sliding_window with use_sliding_window false: no window.
    assert_eq!(model(json!({"model_type": "qwen2", "use_sliding_window": false})).window_size, None);
    // Mistral: every layer windowed.
    assert_eq!(model(json!({"model_type": "mistral"})).window_attention_layers(), 12);
}

#[test]
fn nemotron_4_olmo_2_and_exaone_3_configs_map() {
    // A Nemotron-4 340B config.json as NeMo's Nemotron → HF converter writes it (model_type nemotron, hidden_act relu2,
    // norm_eps, partial_rotary_factor, untied) gives the preset's counts (Bridge's Nemotron4ModelProvider340B):
    // squared ReLU without a gate, LayerNorm with biases.
    let hf = json!({"architectures": ["NemotronForCausalLM"], "model_type": "nemotron", "hidden_act": "relu2", "hidden_size": 18432,
        "intermediate_size": 73728, "max_position_embeddings": 4096, "num_attention_heads": 96, "num_hidden_layers": 96,
        "num_key_value_heads": 8, "norm_eps": 1e-5, "rope_theta": 10000, "partial_rotary_factor": 0.5,
        "tie_word_embeddings": false, "vocab_size": 256000});
    let r = plan_of(json!({"hf_config": hf}), 4096, 16);
    let preset = presets::model("nemotron-4-340b").unwrap().model_config().param_counts();
    assert_eq!(r.derived.total_parameters as u128, preset.total);
    assert!(!r.diagnostics.iter().any(|d| d.code == "hf-config-family-unknown"));
    // OLMo-2 normalises q and k; EXAONE 3.x names its layer count num_layers.
    let small = json!({"hidden_size": 1024, "intermediate_size": 4096, "num_attention_heads": 8, "num_key_value_heads": 8,
        "vocab_size": 32000, "tie_word_embeddings": false});
    let with = |extra: Value| {
        let mut v = small.clone();
        v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        plan_of(json!({"hf_config": v}), 2048, 16)
    };
    assert!(with(json!({"model_type": "olmo2", "num_hidden_layers": 4})).plan.model.qk_layernorm);
    let exaone = with(json!({"model_type": "exaone", "num_layers": 6}));
    assert_eq!(exaone.plan.model.num_layers, 6);
}

#[test]
fn vision_language_and_dsa_configs_read_their_language_model() {
    // Qwen3-VL-8B-Instruct's config.json (as copied in NVIDIA/TensorRT-LLM's Qwen3-VL modeling test, whose text layers
    // are cut to 4 there; 36 in the model): Qwen3's language model under text_config (q/k norms included), so its text
    // shape is Qwen3-8B's, and a vision_config meshplan sizes.
    let text = json!({"model_type": "qwen3_vl_text", "hidden_size": 4096, "intermediate_size": 12288, "num_attention_heads": 32,
        "num_key_value_heads": 8, "head_dim": 128, "num_hidden_layers": 36, "vocab_size": 151936, "tie_word_embeddings": false});
    let vision = json!({"deepstack_visual_indexes": [8, 16, 24], "depth": 27, "hidden_act": "gelu_pytorch_tanh", "hidden_size": 1152,
        "in_channels": 3, "intermediate_size": 4304, "model_type": "qwen3_vl", "num_heads": 16, "num_position_embeddings": 2304,
        "out_hidden_size": 4096, "patch_size": 16, "spatial_merge_size": 2, "temporal_patch_size": 2});
    let r = plan_of(json!({"hf_config": {"model_type": "qwen3_vl", "text_config": text, "vision_config": vision}}), 4096, 16);
    // The encoder by hand (transformers Qwen3VLVisionModel): patch Conv3d 3·2·16·16·1152 + 1152 = 1,770,624; positions
    // 2304·1152 = 2,654,208; per block 2 LayerNorms 4,608 + qkv 1152·3456 + 3456 = 3,984,768 + proj 1152² + 1152 =
    // 1,328,256 + fc1/fc2 2·1152·4304 + 4304 + 1152 = 9,921,872 → 15,239,504, × 27 = 411,466,608; merger LayerNorm 2,304
    // + fc1 4608² + 4608 = 21,238,272 + fc2 4608·4096 + 4096 = 18,878,464 → 40,119,040; three deepstack mergers with
    // their LayerNorm over 4608 (9,216): 3 × 40,125,952 = 120,377,856. Encoder 576,388,336.
    let qwen3_8b = presets::model("qwen3-8b").unwrap().model_config().param_counts();
    assert_eq!(r.derived.total_parameters as u128, qwen3_8b.total + 576_388_336);
    assert_eq!(r.derived.active_parameters as u128, qwen3_8b.active);
    assert!(!r.diagnostics.iter().any(|d| d.code == "hf-config-part-excluded"), "{:?}", r.diagnostics);
    // An encoder meshplan does not size (an audio tower, or a vision_config without its sizes) is still named.
    let r = plan_of(json!({"hf_config": {"model_type": "qwen3_vl", "text_config": text, "vision_config": {"depth": 27}}}), 4096, 16);
    assert_eq!(r.derived.total_parameters as u128, qwen3_8b.total);
    assert!(r.diagnostics.iter().any(|d| d.code == "hf-config-part-excluded" && d.message.contains("vision_config")));
    // A DeepSeek-V3.2 config is DeepSeek-V3's MLA and MoE with a DSA lightning indexer on every layer (index_topk 2048).
    let mut v32 = json!({"model_type": "deepseek_v32", "hidden_size": 7168, "intermediate_size": 18432,
        "moe_intermediate_size": 2048, "num_hidden_layers": 61, "num_attention_heads": 128, "num_key_value_heads": 128,
        "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8, "first_k_dense_replace": 3, "moe_layer_freq": 1,
        "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
        "vocab_size": 129280, "tie_word_embeddings": false, "num_nextn_predict_layers": 1});
    v32["index_n_heads"] = json!(64);
    v32["index_head_dim"] = json!(128);
    v32["index_topk"] = json!(2048);
    let r = plan_of(json!({"hf_config": v32.clone()}), 4096, 16);
    // The indexer by hand (DeepSeek-V3.2-Exp inference/model.py Indexer; Megatron-Core DSAIndexer): wq_b 1536·64·128 =
    // 12,582,912; wk 7168·128 = 917,504; k_norm LayerNorm 2·128 = 256; weights_proj 7168·64 = 458,752 → 13,959,424 a
    // layer, 61 layers 851,524,864 (0.13% of the model).
    let v3 = presets::model("deepseek-v3").unwrap().model_config().param_counts();
    assert_eq!(r.derived.total_parameters as u128, v3.total + 61 * 13_959_424);
    assert_eq!(r.derived.active_parameters as u128, v3.active + 61 * 13_959_424);
    assert_eq!(r.plan.model.dsa(), Some((64, 128, 2048)));
    assert!(!r.diagnostics.iter().any(|d| d.code == "hf-config-part-excluded" || d.code == "hf-config-family-unknown"), "{:?}", r.diagnostics);
    // FLOPs: the MLA attention of each layer sees at most 2048 keys. At seq 4096: pairs per sequence in units of s²
    // (full causal attention: s² = 16,777,216): 4096·(2·2048 − 2048·2047/4096) = 4096·(4096 − 1023.5) = 12,584,960.
    // The indexer's scores: 3 × 2·(64·128 + 64) × s²/2 a sequence and layer = 3 × 8256 × 16,777,216; its GEMMs 3 × 2 ×
    // 13,959,168 (its weights without k_norm) a token and layer.
    let split = meshplan_core::perf::flop_split(&r.plan, &r.derived);
    let mut dense = v32.clone();
    for k in ["index_n_heads", "index_head_dim", "index_topk"] {
        dense.as_object_mut().unwrap().remove(k);
    }
    let d = plan_of(json!({"hf_config": dense}), 4096, 16);
    let dense_split = meshplan_core::perf::flop_split(&d.plan, &d.derived);
    let m = &r.plan.model;
    let a_core = 6.0 * (128.0 * 192.0 / 2.0 + 128.0 * 128.0 / 2.0);
    let (b, layers) = (16.0, 61.0);
    let expected_core = a_core * b * 12_584_960.0 * layers + 3.0 * 8256.0 * 16_777_216.0 * b * layers;
    let dense_core = a_core * b * 16_777_216.0 * layers;
    assert_eq!(m.num_layers, 61);
    // The MTP depth's attention is DeepSeek's MLA too: its pairs change likewise.
    let mtp = a_core * b * (12_584_960.0 - 16_777_216.0) + 3.0 * 8256.0 * 16_777_216.0 * b;
    assert!((split.attention_core - (dense_split.attention_core - dense_core + expected_core + mtp)).abs() / split.attention_core < 1e-12);
    let gemm = 3.0 * 2.0 * 13_959_168.0 * b * 4096.0 * (layers + 1.0);
    assert!((split.dense_gemm - dense_split.dense_gemm - gemm).abs() / gemm < 1e-9);
}

#[test]
fn per_layer_attention_shapes_are_refused_by_name() {
    // A family read the Llama way whose config gives its sliding-window layers their own heads and groups
    // (attention_other_setting, as Step-3.5's does): not one attention shape, so not read as a Llama. (Step-3.5 itself,
    // model_type step3p5, is sized: step_3_5_flash_counted_by_hand_and_by_bridges_import.)
    let step = json!({"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 64, "num_key_value_heads": 8,
        "num_hidden_layers": 45, "vocab_size": 128896, "intermediate_size": 11264,
        "attention_other_setting": {"num_attention_heads": 96, "num_attention_groups": 8, "head_dim": 128}});
    let e = plan_value(&json!({"model": {"hf_config": step}, "cluster": {"gpu": "h100-sxm-80gb"}})).unwrap_err();
    assert_eq!(e.code, "hf-config-unmappable");
    assert!(e.message.contains("attention_other_setting"), "{}", e.message);
}

#[test]
fn gemma_3_released_multimodal_config_with_its_siglip_encoder() {
    // google/gemma-3-4b-it's config.json names few keys (copied in full in a stored test of a .NET port: "The original
    // gemma-3-4b-it's config.json names few keys: transformers' defaults fill the rest"): Gemma3TextConfig's defaults
    // fill heads 8, groups 4, head_dim 256, vocabulary 262208; SiglipVisionConfig's num_channels 3.
    let hf = json!({"architectures": ["Gemma3ForConditionalGeneration"], "boi_token_index": 255999, "eoi_token_index": 256000,
        "image_token_index": 262144, "mm_tokens_per_image": 256, "model_type": "gemma3", "torch_dtype": "bfloat16",
        "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text", "num_hidden_layers": 34,
                        "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024, "final_logit_softcapping": 30.0},
        "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304, "model_type": "siglip_vision_model",
                          "num_attention_heads": 16, "num_hidden_layers": 27, "patch_size": 14, "vision_use_head": false}});
    let r = plan_of(json!({"hf_config": hf}), 4096, 16);
    // The language model is the gemma-3-4b preset's (from the text config copy). The SigLIP encoder by hand
    // (transformers SiglipVisionModel + Gemma3MultiModalProjector): patch Conv2d 3·14·14·1152 + 1152 = 678,528;
    // positions (896/14)² = 4096 × 1152 = 4,718,592; 27 layers × (q/k/v/out 4·(1152² + 1152) = 5,313,024 + fc1/fc2
    // 2·1152·4304 + 4304 + 1152 = 9,921,872 + 2 LayerNorms 4,608 = 15,239,504) = 411,466,608; post LayerNorm 2,304;
    // soft-embedding RMSNorm 1,152 and projection 1152·2560 = 2,949,120. Encoder 419,816,304.
    let text = presets::model("gemma-3-4b").unwrap().model_config().param_counts();
    assert_eq!(r.derived.vision_encoder_parameters, 419_816_304);
    assert_eq!(r.derived.total_parameters as u128, text.total + 419_816_304);
    // Gemma 3 technical report, Table 1: vision encoder 417M (SigLIP without the projector: 419,816,304 − 2,950,272 =
    // 416,866,032), and the 4B model's 4.3B in all.
    within("gemma-3-4b SigLIP", (419_816_304 - 2_950_272) as f64, 417e6, 0.005);
    within("gemma-3-4b total", r.derived.total_parameters as f64, 4.3e9, 0.01);
    // 4096 patches pooled to 256 tokens: 16 patches per token.
    assert_eq!(r.plan.model.vision_config.as_ref().unwrap().patches_per_token, 16);
}

#[test]
fn gemma_4_pasted_with_its_vision_encoder() {
    // Gemma 4's ViT by hand (transformers modeling_gemma4.py Gemma4VisionModel + Gemma4MultimodalEmbedder; no biases):
    //   large tower (31B, 26B-A4B: h 1152, 27 layers, 16 heads of 72, GeGLU 4304, patch 16, standardize):
    //     layer: q/k/v/o 4·1152² = 5,308,416 + gate/up/down 3·1152·4304 = 14,874,624 + four RMSNorms 4·1152 + q/k norms
    //       2·72 = 4,752: 20,187,792; 27 layers 545,070,384
    //     patch input_proj 3·16²·1152 = 884,736; position table 2·10240·1152 = 23,592,960; std_bias, std_scale 2·1152
    //     tower 545,070,384 + 884,736 + 23,592,960 + 2,304 = 569,550,384
    //     embedding_projection 1152 × text width (its RMSNorm has no scale): 31B 1152·5376 = 6,193,152; 26B-A4B
    //       1152·2816 = 3,244,032
    //   small tower (E2B, E4B: h 768, 16 layers, 12 heads of 64, GeGLU 3072, no standardize):
    //     layer: 4·768² = 2,359,296 + 3·768·3072 = 7,077,888 + 4·768 + 2·64 = 3,200: 9,440,384; 16 layers 151,046,144
    //     patch 768·768 = 589,824; position table 2·10240·768 = 15,728,640: tower 167,364,608
    //     projection: E2B 768·1536 = 1,179,648; E4B 768·2560 = 1,966,080
    let cases = [
        ("gemma-4-31b", "google--gemma-4-31B", 569_550_384 + 6_193_152),
        ("gemma-4-26b-a4b", "google--gemma-4-26B-A4B", 569_550_384 + 3_244_032),
        ("gemma-4-e2b", "google--gemma-4-E2B", 167_364_608 + 1_179_648),
        ("gemma-4-e4b", "google--gemma-4-E4B", 167_364_608 + 1_966_080),
    ];
    for (key, file, encoder) in cases {
        let r = plan_value(&json!({"model": {"hf_config": hf_config(file)}, "cluster": {"gpu": "h100-sxm-80gb"}})).unwrap();
        let text = presets::model(key).unwrap().model_config().param_counts();
        assert_eq!(r.derived.vision_encoder_parameters as u128, encoder, "{file}");
        assert_eq!(r.derived.total_parameters as u128, text.total + encoder, "{file}");
        assert_eq!(r.derived.active_parameters as u128, text.active, "{file}");
        let v = r.plan.model.vision_config.as_ref().unwrap();
        // 3×3 patches pooled into one soft token (pooling_kernel_size 3: 2,520 patches to 280 tokens).
        assert_eq!(v.patches_per_token, 9, "{file}");
        // Megatron Bridge's Gemma4VLModel builds the transformers tower unsplit on every TP rank.
        assert_eq!(v.tensor_model_parallel_size, Some(1), "{file}");
        // The E2B / E4B audio tower (gemma4_audio, a conformer) is still not counted, and the diagnostic names it.
        let excluded: Vec<_> = r.diagnostics.iter().filter(|d| d.code == "hf-config-part-excluded").collect();
        if file.contains("-E") {
            assert!(excluded.len() == 1 && excluded[0].message.contains("audio_config") && excluded[0].message.contains("gemma4_audio"), "{excluded:?}");
            assert!(!excluded[0].message.contains("vision_config"), "{}", excluded[0].message);
        } else {
            assert!(excluded.is_empty(), "{file}: {excluded:?}");
        }
    }
    // Published (Gemma 4 model card): vision encoder ~550M (26B-A4B, 31B) and ~150M (E2B, E4B). Approximate figures
    // that match the transformer layers alone (545.1M, 1.0% under 550M; 151.0M, 0.7% over 150M); the whole towers with
    // their 2-D position tables (23.6M, 15.7M), patch embeddings and projections are 3.7% and 12% above them.
    within("gemma 4 large tower layers", 545_070_384.0, 550e6, 0.01);
    within("gemma 4 small tower layers", 151_046_144.0, 150e6, 0.01);
    // A tower whose attention is not h wide or has fewer key-value heads than heads is not a shape meshplan's encoder
    // holds: not counted, and named with its model_type (never sized wrong).
    for (k, v) in [("num_key_value_heads", 4), ("head_dim", 64)] {
        let mut hf = hf_config("google--gemma-4-31B");
        hf["vision_config"][k] = json!(v);
        let r = plan_value(&json!({"model": {"hf_config": hf}, "cluster": {"gpu": "h100-sxm-80gb"}})).unwrap();
        assert_eq!(r.derived.vision_encoder_parameters, 0, "{k}");
        assert!(r.diagnostics.iter().any(|d| d.code == "hf-config-part-excluded" && d.message.contains("vision_config (gemma4_vision)")), "{k}");
    }
}

#[test]
fn llama_4_chunked_attention_and_nope_layers_in_flops() {
    // Llama 4 Scout's config (attention_chunk_size 8192, no_rope_layers by default every 4th layer NoPE): 36 of its 48
    // layers attend within chunks of 8192, 12 globally. At seq 16384 (two chunks) a chunked layer attends to
    // 2 · 8192² = 134,217,728 pairs in Megatron's s² units against 16384² = 268,435,456 for a global one.
    let hf = hf_config("meta-llama--Llama-4-Scout-17B-16E-Instruct");
    let r = plan_value(&json!({"model": {"hf_config": hf}, "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 2},
                               "training": {"seq_length": 16384, "micro_batch_size": 1, "global_batch_size": 16}})).unwrap();
    let m = &r.plan.model;
    assert_eq!((m.chunk_attention_size, m.chunked_attention_layers()), (Some(8192), 36));
    assert!(m.is_nope_layer(3) && !m.is_nope_layer(0) && m.is_nope_layer(47));
    // Megatron's factor per (query, key) pair of GQA attention (QKᵀ and PV, forward and backward, in s² units):
    // 6 · heads · head_dim = 6 · 40 · 128.
    let a_core = 6.0 * 40.0 * 128.0;
    let expected = a_core * 16.0 * (36.0 * 134_217_728.0 + 12.0 * 268_435_456.0);
    let split = meshplan_core::perf::flop_split(&r.plan, &r.derived);
    assert_eq!(split.attention_core, expected);
    // The preset says the same.
    let p = presets::model("llama-4-scout-17b-16e").unwrap().model_config();
    assert_eq!((p.chunk_attention_size, p.chunked_attention_layers()), (Some(8192), 36));
    // A sequence shorter than a chunk is full causal attention on every layer; 8192 + 100 tokens: 8192² + 100².
    assert_eq!(meshplan_core::model::ModelConfig::chunk_pairs(4096.0, 8192.0), 4096.0 * 4096.0);
    assert_eq!(meshplan_core::model::ModelConfig::chunk_pairs(8292.0, 8192.0), 8192.0 * 8192.0 + 100.0 * 100.0);
}

#[test]
fn qwen3_vl_deepseek_v3_2_glm_5_and_kimi_k2_5_presets() {
    // Qwen3-VL: the language model is the Qwen3 text preset's; the encoder is counted by hand in
    // vision_language_and_dsa_configs_read_their_language_model (576,388,336 into 4096). Into 2048 (30B-A3B), each of
    // the four mergers' fc2 is 4608·2048 + 2048 smaller: 576,388,336 − 4 × 9,439,232 = 538,631,408.
    for (vl, text, encoder) in [("qwen3-vl-8b", "qwen3-8b", 576_388_336u128), ("qwen3-vl-30b-a3b", "qwen3-30b-a3b", 538_631_408), ("qwen3-vl-235b-a22b", "qwen3-235b-a22b", 576_388_336)] {
        let c = presets::model(vl).unwrap().model_config().param_counts();
        let t = presets::model(text).unwrap().model_config().param_counts();
        assert_eq!((c.total, c.active, c.vision_encoder), (t.total + encoder, t.active, encoder), "{vl}");
    }
    // Qwen3-VL-235B-A22B: the name's 235B and 22B (the model card's "A22B") within 1% / by rounding.
    let (t, a, _) = counts("qwen3-vl-235b-a22b");
    within("qwen3-vl-235b-a22b total", t, 235e9, 0.01);
    rounds_to("qwen3-vl-235b-a22b active", a, 22.0, 0);
    // DeepSeek-V3.2: DeepSeek-V3's 671B main model plus the indexer, 61 × 13,959,424 (counted by hand above).
    let v3 = presets::model("deepseek-v3").unwrap().model_config().param_counts();
    let v32 = presets::model("deepseek-v3.2").unwrap().model_config().param_counts();
    assert_eq!(v32.total, v3.total + 61 * 13_959_424);
    within("deepseek-v3.2 main model", v32.total as f64, 671e9, 0.002);
    // GLM-5 (Z.ai's release: 744B parameters, 40B active): the total by rounding; the active count less the input
    // embedding and the output layer (lookups and the head, which the "active" figure leaves out) within 1%.
    let (t, a, e) = counts("glm-5");
    rounds_to("glm-5 total", t, 744.0, 0);
    within("glm-5 active without embeddings", a - e, 40e9, 0.01);
    // Kimi-K2.5's language model is Kimi-K2's (its config's text_config), from a different file; its MoonViT is in the
    // total only (kimi_k2_5_moonvit_counted_by_hand).
    let k2 = presets::model("kimi-k2").unwrap().model_config().param_counts();
    let k25 = presets::model("kimi-k2.5").unwrap().model_config().param_counts();
    assert_eq!((k25.total - k25.vision_encoder, k25.active), (k2.total, k2.active));
}

#[test]
fn kimi_k2_5_moonvit_counted_by_hand() {
    // MoonViT3d (modeling_kimi_k25.py) for Kimi-K2.5's vision_config (vt_hidden_size 1152, vt_intermediate_size 4304,
    // 16 heads, 27 layers, patch 14, 64×64 position table, merge 2×2, text hidden 7168), by hand:
    //   patch_embed Conv2d 3·14·14·1152 + 1152 = 678,528; position table 64·64·1152 = 4,718,592 (the temporal sincos
    //   table is a buffer); 27 layers × (wqkv 1152·3456 + 3456 = 3,984,768; wo 1152² + 1152 = 1,328,256; fc0
    //   1152·4304 + 4304 = 4,962,512; fc1 4304·1152 + 1152 = 4,959,360; norm0 / norm1 4,608) = 27 × 15,239,504 =
    //   411,466,608; final_layernorm 2,304. Encoder 416,866,032.
    //   Projector (KimiK25VLMultiModalProjector): pre_norm 2,304; linear_1 4608·4608 + 4608 = 21,238,272; linear_2
    //   4608·7168 + 7168 = 33,037,312. Projector 54,277,888. Encoder and projector 471,143,920.
    let c = presets::model("kimi-k2.5").unwrap().model_config().param_counts();
    assert_eq!(c.vision_encoder, 471_143_920);
    // Moonshot's Kimi K2.5 model card: "Vision Encoder: MoonViT, 400M parameters" (one significant figure): the encoder
    // without its projector, 0.417 B, rounds to it.
    rounds_to("kimi-k2.5 MoonViT", 416_866_032.0, 0.4, 1);
    let e = presets::model("kimi-k2.5").unwrap().model_config().vision_config.unwrap().params();
    assert_eq!(e.encoder(), 416_866_032 + 2_304 + 4_608 + 7_168, "the projector's norm and biases sit with the replicated extras");
    assert_eq!(e.projector, 4608 * 4608 + 4608 * 7168);
    // The config.json pasted gives the same encoder, and names nothing as left out (it has no audio tower).
    let r = plan_of(json!({"hf_config": hf_config("moonshotai--Kimi-K2.5")}), 4096, 16);
    assert_eq!(r.derived.vision_encoder_parameters, 471_143_920);
    assert!(!r.diagnostics.iter().any(|d| d.code == "hf-config-part-excluded"), "{:?}", r.diagnostics);
}

#[test]
fn olmo_2_13b_against_its_checkpoint_index() {
    // allenai/OLMo-2-1124-13B's model.safetensors.index.json (beside the config copy): total_size 54,864,793,600 bytes of
    // float32 weights = 13,716,198,400 parameters. OLMo-2 normalises q and k over the whole projection (q_norm and k_norm
    // 40·128 = 5120 wide each), where meshplan's qk_layernorm counts one head's 128 each: 40 layers × (2·5120 − 2·128) =
    // 399,360 fewer.
    let (t, _, _) = counts("olmo-2-13b");
    assert_eq!(t + 399_360.0, 54_864_793_600.0 / 4.0);
    // OLMo 2 7B by hand, as the checkpoint holds it: 32 layers × (q/k/v/o 4·4096² = 67,108,864; MLP 3·4096·11008 =
    // 135,266,304; the two post-norms 8,192; q_norm and k_norm over the whole 4096-wide projection 8,192) =
    // 6,476,529,664, embedding and untied head 2·100352·4096 = 822,083,584, final norm 4,096: 7,298,617,344 (the "7B"
    // of its name). meshplan's per-head q/k norms count 32 × (2·4096 − 2·128) = 253,952 fewer.
    let (t, _, _) = counts("olmo-2-7b");
    assert_eq!(t + 253_952.0, 7_298_617_344.0);
    rounds_to("olmo-2-7b total", t, 7.0, 0);
}

#[test]
fn step_3_5_flash_counted_by_hand_and_by_bridges_import() {
    // Step-3.5-Flash by hand (h 4096, vocab 128896 untied, 45 layers; GQA heads of 128 with 8 groups; head-wise gate
    // h → heads; q/k RMSNorms 2·128; input norm h):
    //   full attention (12 layers, 64 heads): 4096·8192 + 2·4096·1024 + 8192·4096 + 4096·64 + 256 + 4096 = 75,763,968
    //   window attention (33 layers, 96 heads): 4096·12288 + 2·4096·1024 + 12288·4096 + 4096·96 + 256 + 4096 = 109,449,472
    //   dense MLP (layers 0-2): 3·4096·11264 + 4096 = 138,416,128
    //   MoE (layers 3-44): 288 experts + 1 shared × 3·4096·1280, router 288·4096, norm 4096 = 4,546,760,704
    //   12·75,763,968 + 33·109,449,472 + 3·138,416,128 + 42·4,546,760,704 + 2·128896·4096 + 4096 = 196,956,118,272.
    // Published (model card, StepFun): 196B total, 11B active. Active by hand: the MoE layers with 8 routed + 1 shared
    // expert (9·15,728,640 + 1,179,648 + 4096 = 142,741,504 each): 11,987,311,872; without the embedding and output
    // layer (1,055,916,032) 10,931,395,840 — the published 11B counts that way (0.6 % under).
    let step = hf_config("stepfun-ai--Step-3.5-Flash");
    let c = presets::model("step-3.5-flash").unwrap().model_config().param_counts();
    assert_eq!(c.total, 196_956_118_272);
    assert_eq!(c.active, 11_987_311_872);
    within("step-3.5-flash total", c.total as f64, 196e9, 0.01);
    within("step-3.5-flash active without embeddings", (c.active - c.embedding - c.output_layer) as f64, 11e9, 0.01);
    // Its 3 MTP depths (num_nextn_predict_layers; the published 196B excludes them, as meshplan's total does), each a
    // dense window-attention layer as Bridge builds them (_MTPDenseLayerSpecsList; layer_types 45-47 "sliding_attention"):
    // 109,449,472 + 138,416,128 + eh_proj 2·4096² (33,554,432) + enorm, hnorm, final norm 3·4096 = 281,432,320 each.
    assert_eq!(c.mtp, 3 * 281_432_320);
    // The config pasted as a user would gives the preset's model, MTP included.
    let r = plan_of(json!({"hf_config": step}), 4096, 16);
    assert_eq!(r.derived.total_parameters as u128, c.total);
    assert_eq!(r.derived.mtp_parameters as u128, 844_296_960);
    assert!(!r.diagnostics.iter().any(|d| d.code == "hf-config-part-excluded" || d.code == "mtp-layer-unavailable"), "{:?}", r.diagnostics);
    let preset = plan_of(json!("step-3.5-flash"), 4096, 16);
    let mut imported = r.plan.model.clone();
    imported.q_lora_rank = None; // MLA's default, unused without MLA (the preset writes null)
    assert_eq!(imported, preset.plan.model);
    // Megatron Bridge's verified import of the real checkpoint (examples/model_verification_cards/step35-flash/card.yaml,
    // hf_revision ab446a3de5e1): "constructed 199,997,706,240 parameters". That import runs on a Megatron-Core without
    // head_wise_attn_gate, so Step35Bridge falls back to attention_output_gate (a gate per query channel, h·heads·128
    // instead of h·heads), builds the 3 MTP depths as dense window-attention layers (2·h² eh_proj + 3 norms + 109,449,472
    // − 393,216 + 50,331,648 + 138,416,128 each), and keeps the router's expert bias as a buffer. The same model in
    // meshplan's fields gives exactly that count: the architecture read here is the checkpoint's.
    let bridge = plan_of(json!({"preset": "step-3.5-flash", "head_wise_attn_gate": false, "attention_output_gate": true}), 4096, 16);
    let counts = bridge.plan.model.param_counts();
    let mtp_dense = 3 * (2 * 4096 * 4096 + 3 * 4096 + 109_449_472 - 393_216 + 50_331_648 + 138_416_128);
    assert_eq!(counts.mtp, mtp_dense);
    assert_eq!(counts.total + counts.mtp, 199_997_706_240);
}

#[test]
fn step_3_5_mtp_layers_are_dense_in_flops() {
    // The preset (MTP depths: dense window-attention layers) against the same MTP depths built as MoE layers: per
    // token and depth the dense MLP 3·4096·11264 multiply-adds replace the shared expert's 3·4096·1280 (dense GEMMs:
    // 6·3·4096·9984 = 736,100,352 FLOPs fwd + bwd) and the 8 routed experts' 8·3·4096·1280 (expert GEMMs:
    // 6·24·4096·1280 = 754,974,720); attention, logits and eh_proj unchanged.
    let dense = plan_of(json!("step-3.5-flash"), 4096, 16);
    let moe = plan_of(json!({"preset": "step-3.5-flash", "mtp_layer": {"mixer": "window_attention", "ffn": "moe"}}), 4096, 16);
    let (a, b) = (meshplan_core::perf::flop_split(&dense.plan, &dense.derived), meshplan_core::perf::flop_split(&moe.plan, &moe.derived));
    let tokens = 16.0 * 4096.0;
    assert_eq!(a.dense_gemm - b.dense_gemm, tokens * 3.0 * 736_100_352.0);
    assert_eq!(b.expert_gemm - a.expert_gemm, tokens * 3.0 * 754_974_720.0);
    assert_eq!((a.attention_core, a.logits), (b.attention_core, b.logits));
    // MoE MTP depth: 109,449,472 + 4,546,760,704 + 33,554,432 + 12,288 = 4,689,776,896 parameters each.
    assert_eq!(moe.plan.model.param_counts().mtp, 3 * 4_689_776_896);
    // The MTP window layers attend through the 513-key window like the decoder's: against full attention (mtp_layer
    // attention, dense; no sliding shape → the model's 64 heads), the core term of 3 layers of 96 heads over
    // 3,939,840 pairs a sequence replaces 3 of 64 heads over 4096² = 16,777,216 pairs: 6·128·(96·3,939,840 − 64·16,777,216).
    let full = plan_of(json!({"preset": "step-3.5-flash", "mtp_layer": {"mixer": "attention", "ffn": "dense"}}), 4096, 16);
    let f = meshplan_core::perf::flop_split(&full.plan, &full.derived);
    assert_eq!(a.attention_core - f.attention_core, 16.0 * 3.0 * 6.0 * 128.0 * (96.0 * 3_939_840.0 - 64.0 * 16_777_216.0));
}

#[test]
fn step_3_5_window_layers_cost_flops_and_activations_at_their_own_heads() {
    // The preset against the same model whose window layers keep the full layers' 64 heads (sliding_attention_setting
    // null): only the 33 window layers differ, each by 32 query heads of 128.
    // (Without MTP in both: the window shape's MTP layers are the next test's.)
    let own = plan_of(json!({"preset": "step-3.5-flash", "mtp_num_layers": 0}), 4096, 16);
    let same = plan_of(json!({"preset": "step-3.5-flash", "sliding_attention_setting": null, "mtp_num_layers": 0}), 4096, 16);
    let (a, b) = (meshplan_core::perf::flop_split(&own.plan, &own.derived), meshplan_core::perf::flop_split(&same.plan, &same.derived));
    // Projections per token, ×6 (fwd + bwd, 2 FLOPs a multiply-add): h·(q + 2kv) + q·h + h·heads, 96 heads against 64:
    // 4096·(12288 + 2048 + 12288 + 96) − 4096·(8192 + 2048 + 8192 + 64) = 4096·8224 = 33,685,504, ×6 = 202,113,024.
    let tokens = 16.0 * 4096.0;
    assert_eq!(a.dense_gemm - b.dense_gemm, tokens * 33.0 * 202_113_024.0);
    // Core attention: 6·q per (query, key) pair, the window of 513 keys (window_size [512, 0]) giving each sequence of
    // 4096 tokens 4096·(2·513 − 513·512/4096) = 3,939,840 pairs (Megatron's units); 6·(12288 − 8192) more a pair.
    assert_eq!(a.attention_core - b.attention_core, 16.0 * 3_939_840.0 * 33.0 * 6.0 * 4096.0);
    // Saved activations per microbatch (BF16, TP 1, CP 1, 4096 tokens): flash attention's Q and O, 32 more heads of 128 in
    // bf16 each (2 · 4096·4096·2 = 67,108,864) and its fp32 log-sum-exp per head (4096·32·4 = 524,288), K and V unchanged
    // (8 groups both): 67,633,152 per window layer, 33 layers.
    let act = |r: &meshplan_core::Report| r.memory.stages[0].activations_per_microbatch_bytes;
    assert_eq!(act(&own) - act(&same), 33 * 67_633_152);
}

#[test]
fn step_3_5_window_heads_are_checked_against_tp() {
    // TP 64 divides the full layers' 64 heads but not the window layers' 96 (96 mod 64 = 32), and their 8 groups are a
    // divisor of 64: one finding, naming the window shape, whose fix (TP 32: divides 64 and 96, a multiple of 8 groups,
    // and the FFN widths 11264 and 1280) clears it.
    let plan = |tp: u64| plan_value(&json!({"model": "step-3.5-flash", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 8},
        "parallelism": {"tensor_model_parallel_size": tp}, "training": {"seq_length": 4096, "global_batch_size": 64}})).unwrap();
    // Megatron-LM has no flag for the window layers' shape (a Bridge provider's field): its export says so. (The Bridge
    // export applies to step35_196b_a11b_pretrain_config, whose provider sets it.)
    let r = plan(32);
    let text = meshplan_core::export(meshplan_core::ExportKind::MegatronLm, &r.plan, &r);
    assert!(text.contains("sliding_attention_setting: 96 heads, 8 query groups of 128) is not written"), "{text}");
    let text = meshplan_core::export(meshplan_core::ExportKind::Bridge, &r.plan, &r);
    assert!(text.contains("cfg = step35_196b_a11b_pretrain_config()"), "{text}");
    let r = plan(64);
    let heads: Vec<_> = r.diagnostics.iter().filter(|d| d.code == "heads-not-divisible-by-tp").collect();
    assert_eq!(heads.len(), 1, "{:?}", r.diagnostics);
    assert!(heads[0].message.contains("sliding_attention_setting.num_attention_heads = 96"), "{}", heads[0].message);
    assert!(heads[0].fix.contains("to 32"), "{}", heads[0].fix);
    assert!(!plan(32).diagnostics.iter().any(|d| d.code == "heads-not-divisible-by-tp"));
}

#[test]
fn step_3_and_gemma_3n_are_refused_by_name() {
    // DeepSeek-V4's keys (compress_ratios, hc_mult, o_lora_rank) outside a deepseek_v4 config stay refused by name: a
    // Llama-read model with them would be sized without its compressors and hyper-connections.
    let other = json!({"model_type": "llama", "hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 8,
        "vocab_size": 32000, "compress_ratios": [0, 4, 128, 0], "hc_mult": 4});
    let e = plan_value(&json!({"model": {"hf_config": other}, "cluster": {"gpu": "h100-sxm-80gb"}})).unwrap_err();
    assert_eq!(e.code, "hf-config-unmappable");
    assert!(e.message.contains("compress_ratios"), "{}", e.message);
    // Step-3's text model (vLLM's Step3TextConfig defaults: h 7168, 64 heads, 1 group of 256, share_q_dim 2048): its
    // query goes through a bottleneck GQA has not.
    let step3 = json!({"model_type": "step3_text", "hidden_size": 7168, "intermediate_size": 18432, "num_attention_heads": 64,
        "num_attention_groups": 1, "num_hidden_layers": 61, "vocab_size": 128815, "head_dim": 256, "share_q_dim": 2048,
        "moe_num_experts": 48, "moe_top_k": 3, "moe_intermediate_size": 5120, "share_expert_dim": 5120});
    let e = plan_value(&json!({"model": {"hf_config": step3}, "cluster": {"gpu": "h100-sxm-80gb"}})).unwrap_err();
    assert_eq!(e.code, "hf-config-unmappable");
    assert!(e.message.contains("share_q_dim"), "{}", e.message);
    // Gemma 3n's per-layer embeddings come with AltUp and LAuReL blocks meshplan does not size: refused by name (Gemma 4's
    // are sized, gemma_4_e2b_and_e4b_* below).
    let gemma3n = json!({"model_type": "gemma3n_text", "hidden_size": 2048, "intermediate_size": 16384, "num_hidden_layers": 35,
        "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 256, "vocab_size": 262400,
        "hidden_size_per_layer_input": 256, "num_kv_shared_layers": 15, "altup_num_inputs": 4});
    let e = plan_value(&json!({"model": {"hf_config": gemma3n}, "cluster": {"gpu": "h100-sxm-80gb"}})).unwrap_err();
    assert_eq!(e.code, "hf-config-unmappable");
    assert!(e.message.contains("hidden_size_per_layer_input"), "{}", e.message);
    // global_head_dim outside Gemma 4 stays refused by name.
    let other = json!({"model_type": "llama", "hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 8,
        "vocab_size": 32000, "global_head_dim": 256});
    let e = plan_value(&json!({"model": {"hf_config": other}, "cluster": {"gpu": "h100-sxm-80gb"}})).unwrap_err();
    assert!(e.message.contains("global_head_dim"), "{}", e.message);
}

#[test]
fn gemma_4_31b_counted_by_hand() {
    // Gemma 4 31B by hand (h 5376, 60 layers, vocab 262144 tied; q/k RMSNorm per head width; input and pre-MLP norms h):
    //   sliding layer (50; 32 heads, 16 KV heads of 256): q 5376·8192 + k, v 2·5376·4096 + o 8192·5376 = 132,120,576,
    //     q/k norms 2·256, input norm 5376: 132,126,464
    //   full layer (10; 32 heads of 512, 4 KV heads, keys as values: no v_proj): q 5376·16384 + k 5376·2048
    //     + o 16384·5376 = 187,170,816, q/k norms 2·512, input norm 5376: 187,177,216
    //   MLP (GeGLU): 3·5376·21504 + pre-MLP norm 5376 = 346,821,888
    //   50·(132,126,464 + 346,821,888) + 10·(187,177,216 + 346,821,888) + 262144·5376 + final norm 5376
    //   = 23,947,417,600 + 5,339,991,040 + 1,409,286,144 + 5376 = 30,696,700,160.
    // Published (Gemma 4 31B model card): 30.7B dense (+ ~550M vision encoder, not in this text preset). The checkpoint
    // also holds Gemma's post-attention and post-MLP norms and a per-layer scalar, 60·(2·5376 + 1) = 645,180 more, which
    // meshplan does not count (as for Gemma 3): 30,697,345,340, the published 30.7B either way.
    let m = presets::model("gemma-4-31b").unwrap().model_config();
    let c = m.param_counts();
    assert_eq!(c.total, 30_696_700_160);
    assert_eq!(c.active, c.total);
    within("gemma-4-31b total", (c.total + 645_180) as f64, 30.7e9, 0.01);
    // Keys as values: the same model with a V projection on the full layers has 10·5376·2048 = 110,100,480 more.
    let with_v = plan_of(json!({"preset": "gemma-4-31b", "attention_k_eq_v": false}), 4096, 16);
    assert_eq!(with_v.derived.total_parameters as u128 - c.total, 110_100_480);
    // FLOPs: the full layers' missing V projection, 6·5376·2048 = 66,060,288 per token and layer (fwd + bwd); the core
    // attention and the saved activations are unchanged (keys and values are still two tensors: k_norm and RoPE make K,
    // v_norm makes V, from the one projection).
    let own = plan_of(json!("gemma-4-31b"), 4096, 16);
    let (a, b) = (meshplan_core::perf::flop_split(&own.plan, &own.derived), meshplan_core::perf::flop_split(&with_v.plan, &with_v.derived));
    assert_eq!(b.dense_gemm - a.dense_gemm, 16.0 * 4096.0 * 10.0 * 66_060_288.0);
    assert_eq!(a.attention_core, b.attention_core);
    let act = |r: &meshplan_core::Report| r.memory.stages[0].activations_per_microbatch_bytes;
    assert_eq!(act(&own), act(&with_v));
}

#[test]
fn gemma_4_26b_a4b_counted_by_hand() {
    // Gemma 4 26B A4B by hand (h 2816, 30 layers, vocab 262144 tied):
    //   sliding attention (25; 16 heads, 8 KV heads of 256): q 2816·4096 + k, v 2·2816·2048 + o 4096·2816 = 34,603,008,
    //     q/k norms 2·256, input norm 2816: 34,606,336
    //   full attention (5; 16 heads of 512, 2 KV heads, keys as values): q 2816·8192 + k 2816·1024 + o 8192·2816
    //     = 49,020,928, q/k norms 2·512, input norm 2816: 49,024,768
    //   MoE block (every layer): 128 experts · 3·2816·704 = 761,266,176, the MLP beside them (the shared expert)
    //     3·2816·2112 = 17,842,176, router 128·2816 = 360,448, pre-MLP norm 2816: 779,471,616
    //   25·(34,606,336 + 779,471,616) + 5·(49,024,768 + 779,471,616) + 262144·2816 + 2816 = 25,232,631,040.
    // Active: 8 of the 128 experts (47,579,136) + shared 17,842,176 + router + norm = 65,784,576 a layer:
    //   25·(34,606,336 + 65,784,576) + 5·(49,024,768 + 65,784,576) + 738,197,504 + 2816 = 3,822,019,840.
    // Published (Gemma 4 model card): 25.2B total, 3.8B active (vision encoder apart).
    let c = presets::model("gemma-4-26b-a4b").unwrap().model_config().param_counts();
    assert_eq!((c.total, c.active), (25_232_631_040, 3_822_019_840));
    within("gemma-4-26b-a4b total", c.total as f64, 25.2e9, 0.01);
    within("gemma-4-26b-a4b active", c.active as f64, 3.8e9, 0.01);
}

#[test]
fn gemma_4_e2b_and_e4b_counted_by_hand() {
    // Gemma 4 E2B by hand (h 1536, 35 layers, 8 heads; window layers 1 KV head of 256, full layers (every 5th) 1 KV head
    // of 512; GeGLU 6144, 12288 on the last 20 (KV-shared) layers; per-layer embeddings of 256; vocab 262144 tied):
    //   window attention: q 1536·2048 + k, v 2·1536·256 + o 2048·1536 = 7,077,888, q/k norms 2·256, input norm 1536:
    //     7,079,936 (28 layers)
    //   full attention: q 1536·4096 + k, v 2·1536·512 + o 4096·1536 = 14,155,776 + 2·512 + 1536 = 14,158,336 (7 layers)
    //   MLP 3·1536·6144 + norm 1536 = 28,313,088 (15 layers); double-wide 3·1536·12288 + 1536 = 56,624,640 (20 layers)
    //   per-layer gate and projection 2·1536·256 + their norm 1536 = 787,968 (35 layers)
    //   28·7,079,936 + 7·14,158,336 + 15·28,313,088 + 20·56,624,640 + 35·787,968 = 1,882,114,560
    //   word embeddings 262144·1536 = 402,653,184, final norm 1536
    //   per-layer table 262144·35·256 = 2,348,810,240, its projection 1536·35·256 = 13,762,560, its norm 256
    //   total 1,882,114,560 + 402,653,184 + 1536 + 2,348,810,240 + 13,762,560 + 256 = 4,647,342,336.
    // Published (Gemma 4 model card): "2.3B effective, 5.1B with per-layer embeddings" — the effective count without the
    // per-layer table, and as Hugging Face holds it: without the K and V projections of the 20 KV-shared layers (16 window
    // 2·1536·256, 4 full 2·1536·512: 18,874,368), which Megatron builds and the checkpoint has not:
    //   4,647,342,336 − 2,348,810,240 − 18,874,368 = 2,279,657,728, 0.9% under 2.3B.
    let e2b = presets::model("gemma-4-e2b").unwrap().model_config().param_counts();
    assert_eq!(e2b.total, 4_647_342_336);
    assert_eq!(e2b.per_layer_embedding, 2_348_810_240 + 13_762_560 + 256);
    within("gemma-4-e2b effective", (e2b.total - 2_348_810_240 - 18_874_368) as f64, 2.3e9, 0.01);
    // Gemma 4 E4B by hand (h 2560, 42 layers, 8 heads; 2 KV heads of 256 on window layers, of 512 on full (every 6th);
    // GeGLU 10240 everywhere; per-layer embeddings of 256):
    //   window attention: q 2560·2048 + k, v 2·2560·512 + o 2048·2560 = 13,107,200 + 2·256 + 2560 = 13,110,272 (35)
    //   full attention: q 2560·4096 + k, v 2·2560·1024 + o 4096·2560 = 26,214,400 + 2·512 + 2560 = 26,217,984 (7)
    //   MLP 3·2560·10240 + 2560 = 78,645,760 (42); per-layer 2·2560·256 + 2560 = 1,313,280 (42)
    //   35·13,110,272 + 7·26,217,984 + 42·(78,645,760 + 1,313,280) = 4,000,665,088
    //   word embeddings 262144·2560 = 671,088,640, final norm 2560
    //   per-layer table 262144·42·256 = 2,818,572,288, projection 2560·42·256 = 27,525,120, norm 256
    //   total 4,000,665,088 + 671,088,640 + 2560 + 2,818,572,288 + 27,525,120 + 256 = 7,517,853,952.
    let e4b = presets::model("gemma-4-e4b").unwrap().model_config().param_counts();
    assert_eq!(e4b.total, 7_517_853_952);
    // Published: "4.5B effective, 8B with per-layer embeddings". Without the table and the 18 KV-shared layers' K and V
    // (15 window 2·2560·512, 3 full 2·2560·1024: 55,050,240), as for E2B: 4,644,231,424 — 3.2% above 4.5B, a convention
    // Google does not state. With the table (7,462,803,712) and the encoders the card gives (~150M vision, ~300M audio):
    // about 7.91B, the published 8B within 1.2%.
    let hf_effective = e4b.total - 2_818_572_288 - 55_050_240;
    assert_eq!(hf_effective, 4_644_231_424);
    within("gemma-4-e4b with embeddings and encoders", (hf_effective + 2_818_572_288 + 450_000_000) as f64, 8.0e9, 0.015);
}

#[test]
fn gemma_4_per_layer_embeddings_cost_where_megatron_puts_them() {
    // E4B at TP 2 on 2 H100 (Bridge's recipe layout): the per-layer embeddings' table and projection are split over TP on
    // the first stage, (2,818,572,288 + 27,525,120) / 2 = 1,423,048,704, and their norm (256) and every layer's gate,
    // projection and norm (42·1,313,280 = 55,157,760) are whole on each rank: 1,478,206,720 parameters a GPU more than
    // the same model without them.
    let tp2 = |model: Value| {
        plan_value(&json!({"model": model, "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 2},
            "parallelism": {"tensor_model_parallel_size": 2}, "training": {"seq_length": 4096, "global_batch_size": 8}})).unwrap()
    };
    let (with, without) = (tp2(json!("gemma-4-e4b")), tp2(json!({"preset": "gemma-4-e4b", "per_layer_embed_dim": null})));
    assert_eq!(with.memory.stages[0].dense_parameters - without.memory.stages[0].dense_parameters, 1_478_206_720);
    // FLOPs: 6 × (every layer's gate and projection 42·2·2560·256 + the projection 2560·42·256) per token of the global
    // batch (8 × 4096 tokens).
    let (a, b) = (meshplan_core::perf::flop_split(&with.plan, &with.derived), meshplan_core::perf::flop_split(&without.plan, &without.derived));
    let tokens = with.derived.global_batch_size as f64 * 4096.0;
    assert_eq!(a.dense_gemm - b.dense_gemm, tokens * 6.0 * (42.0 * 2.0 * 2560.0 * 256.0 + 2560.0 * 42.0 * 256.0));
    // Dense Gemma 4 is built at PP 1 only (Megatron Bridge Gemma4DenseProvider).
    let pp2 = plan_value(&json!({"model": "gemma-4-e4b", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8},
        "parallelism": {"tensor_model_parallel_size": 4, "pipeline_model_parallel_size": 2}})).unwrap();
    assert!(pp2.diagnostics.iter().any(|d| d.code == "gemma4-dense-pipeline"));
}

#[test]
fn gemma_4_e2b_double_wide_mlps_on_its_kv_shared_layers() {
    // E2B's last 20 layers (15..34) have MLPs of 12288: a split at layer 15 sees 15 narrow and 20 wide layers, and the
    // model declares both widths (the TP rule checks 6144 and 12288).
    let m = presets::model("gemma-4-e2b").unwrap().model_config();
    assert_eq!(m.dense_width(m.layer_kind(14)), 6144);
    assert_eq!(m.dense_width(m.layer_kind(15)), 12288);
    assert_eq!(m.dense_width(m.layer_kind(34)), 12288);
    // FLOPs of the MLPs: 6·3·1536·(15·6144 + 20·12288) per token, against 35·6144 without the wide layers.
    let wide = plan_of(json!("gemma-4-e2b"), 4096, 2);
    let narrow = plan_of(json!({"preset": "gemma-4-e2b", "use_double_wide_mlp": false}), 4096, 2);
    let (a, b) = (meshplan_core::perf::flop_split(&wide.plan, &wide.derived), meshplan_core::perf::flop_split(&narrow.plan, &narrow.derived));
    let tokens = wide.derived.global_batch_size as f64 * 4096.0;
    assert_eq!(a.dense_gemm - b.dense_gemm, tokens * 6.0 * 3.0 * 1536.0 * 20.0 * 6144.0);
}

#[test]
fn gemma_4_31b_head_counts_against_tp() {
    // TP 8 (one H100 node): 32 heads and the window layers' 16 KV heads divide; the full layers' 4 KV heads are fewer than
    // 8 ranks, so Megatron-Core replicates each on 8/4 = 2 ranks (an info, not an error).
    let r = plan_value(&json!({"model": "gemma-4-31b", "cluster": {"gpu": "h100-sxm-80gb"},
        "parallelism": {"tensor_model_parallel_size": 8}})).unwrap();
    let codes: Vec<&str> = r.diagnostics.iter().map(|d| d.code.as_str()).collect();
    assert!(codes.contains(&"query-groups-replicated") && !codes.contains(&"query-groups-not-divisible-by-tp") && !codes.contains(&"heads-not-divisible-by-tp"), "{codes:?}");
    // TP 3 on 6 GPUs: 32 heads mod 3 = 2, for the full layers' and the window layers' heads alike.
    let r = plan_value(&json!({"model": "gemma-4-31b", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 6},
        "parallelism": {"tensor_model_parallel_size": 3}})).unwrap();
    let heads: Vec<&str> = r.diagnostics.iter().filter(|d| d.code == "heads-not-divisible-by-tp").map(|d| d.message.as_str()).collect();
    assert!(heads.iter().any(|m| m.contains("sliding_attention_setting")) && heads.len() == 2, "{heads:?}");
}

#[test]
fn step_3_5_bridge_recipe_resolves_to_the_preset_and_its_layout_is_checked() {
    // step35_196b_a11b_pretrain_config (Megatron Bridge @067f987df03b recipes/stepfun/h100/step35.py:24, read statically
    // into data/bridge_recipes.json): TP 1, PP 8, CP 8, EP 8, SP on, on 512 H100. Its 45 decoder layers do not divide over
    // 8 stages (45 = 5·8 + 5) with no uneven-stage setting or layout, and SP is on with TP 1: Megatron-Core's
    // TransformerConfig rejects both (Bridge's verification card leaves its training unverified).
    let r = plan_value(&json!({"recipe": "step35_196b_a11b_pretrain_config"})).unwrap();
    assert_eq!(r.plan.model, presets::model("step-3.5-flash").unwrap().model_config());
    let codes: Vec<&str> = r.diagnostics.iter().map(|d| d.code.as_str()).collect();
    assert!(codes.contains(&"layers-not-divisible-by-pp") && codes.contains(&"sp-requires-tp"), "{codes:?}");
    // PP 9 (45 = 5·9) and SP off clear both.
    let r = plan_value(&json!({"recipe": "step35_196b_a11b_pretrain_config",
        "parallelism": {"pipeline_model_parallel_size": 9, "sequence_parallel": false}, "cluster": {"num_nodes": 72}})).unwrap();
    let codes: Vec<&str> = r.diagnostics.iter().map(|d| d.code.as_str()).collect();
    assert!(!codes.contains(&"layers-not-divisible-by-pp") && !codes.contains(&"sp-requires-tp"), "{codes:?}");
}

#[test]
fn a_broken_window_shape_or_mtp_layer_is_named_with_the_value_found() {
    // The diagnostic says which entry is wrong and quotes it, so the user need not guess which of three numbers failed.
    let message = |extra: Value| {
        let mut model = json!({"preset": "llama-3.1-8b", "window_size": [512, 0], "mtp_num_layers": 1});
        model.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        let r = plan_value(&json!({"model": model, "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 1}}))
            .expect("a bad field is a diagnostic, not a refusal");
        r.diagnostics.iter().filter(|d| d.code == "invalid-value").map(|d| d.message.clone()).collect::<Vec<_>>().join(" | ")
    };
    let heads = json!({"sliding_attention_setting": {"num_attention_heads": 33, "num_query_groups": 8, "kv_channels": 128}});
    assert!(message(heads).contains("num_attention_heads 33 is not a multiple of num_query_groups 8"));
    assert!(message(json!({"sliding_attention_setting": {"num_attention_heads": 0}})).contains("num_attention_heads is 0"));
    assert!(message(json!({"sliding_attention_setting": {"num_attention_heads": 8, "num_query_groups": 8}})).contains("kv_channels is missing"));
    assert!(message(json!({"sliding_attention_setting": [8]})).contains("found an array"));
    assert!(message(json!({"mtp_layer": {"mixer": "mamba", "ffn": "dense"}})).contains("mixer is \"mamba\""));
    assert!(message(json!({"mtp_layer": {"mixer": "attention"}})).contains("ffn is missing"));
    assert!(message(json!({"mtp_layer": {"mixer": "attention", "ffn": "moe", "norm": 1}})).contains("the unknown key \"norm\""));
}

#[test]
fn deepseek_v4_flash_counted_by_hand() {
    // DeepSeek-V4-Flash as Megatron-Core builds it (h 4096, 64 heads of d = 512, q_lora 1024, o_groups 8 × o_lora 1024,
    // vocab 129280 untied, 43 layers all MoE: 256 experts + 1 shared of 2048, top-6; 4 residual streams):
    //   attention, TP-sharded: q_up 1024·64·512 + kv 4096·512 + linear_proj 8·1024·4096 + attn_sink 64 = 69,206,080
    //   attention, replicated: norm 4096 + q_down 4096·1024 + q_norm 1024 + kv_norm 512 + o_group_proj 8192·4096
    //     (8 groups × 1024 rows of 64·512/8 = 4096) = 37,754,368;                                  together 106,960,448
    //   compressor, ratio 128: wkv + wgate 2·4096·512 + ape 128·512 + norm 512 = 4,260,352
    //   compressor, ratio 4 (overlapping, 2·512 wide): 2·4096·1024 + 4·1024 + 512 = 8,393,216
    //   indexer (ratio 4): wq_b 1024·64·128 + weights_proj 4096·64 + its compressor 2·4096·256 + 4·256 + 128 = 10,749,056
    //   hyper-connections, 2 per layer: mapping_proj (4·4096 → 4² + 2·4 = 24) 393,216 + bias 24 + 3 gates = 786,486
    //   MoE: experts 256·3·4096·2048 + shared 3·4096·2048 + router 256·4096 + norm 4096 = 6,468,669,440 (the router's
    //     expert bias is a buffer in Megatron-Core, as tid2eid of the 3 hash layers)
    //   layer of ratio 0: 6,576,416,374; ratio 128: 6,580,676,726; ratio 4: 6,595,558,646
    //   2 × ratio 0 + 20 × ratio 128 + 21 × ratio 4 + embedding and output 2·129280·4096 + final norm 4096 + the
    //   hyper-connection head (4 × 4·4096 + 4 + 1) = 284,332,230,231.
    // Active: each layer's 250 unrouted experts less (250·25,165,824 = 6,291,456,000 × 43): 13,799,622,231.
    // MTP (its compress-ratio entry 0): a ratio-0 layer + e_proj, h_proj 2·4096² + enorm, hnorm, norm 3·4096 + its own
    // hyper-connection head 65,541 = 6,610,048,635.
    // Published (DeepSeek-V4 report, arXiv 2606.19348; model card): 284B total, 13B activated; DeepSeek's totals leave
    // the MTP layer out, as meshplan's does. The total is 0.12% above 284B. "13B activated" is two digits: without
    // the input embedding (a lookup, 529,530,880) the count is 13.27B, which rounds to it.
    let c = presets::model("deepseek-v4-flash").unwrap().model_config().param_counts();
    assert_eq!(c.total, 284_332_230_231);
    assert_eq!(c.active, 13_799_622_231);
    assert_eq!(c.mtp, 6_610_048_635);
    within("deepseek-v4-flash total", c.total as f64, 284e9, 0.01);
    rounds_to("deepseek-v4-flash active without the input embedding", (c.active - c.embedding) as f64, 13.0, 0);
    // DeepSeek-V4-Pro: the same parts at h 7168, 128 heads, q_lora 1536, o_groups 16, 384 experts of 3072, 61 layers
    // (ratios 128, 128, (4, 128) × 29, 4). Published 1.6T total, 49B activated: 1,572,997,179,491 rounds to 1.6T (1.7%
    // under it: the figure has two digits); the active count without the input embedding, 48.85B, is 0.3% under 49B.
    let p = presets::model("deepseek-v4-pro").unwrap().model_config().param_counts();
    assert_eq!(p.total, 1_572_997_179_491);
    rounds_to("deepseek-v4-pro total (trillions)", p.total as f64 / 1e3, 1.6, 1);
    within("deepseek-v4-pro active without the input embedding", (p.active - p.embedding) as f64, 49e9, 0.01);
}

#[test]
fn deepseek_v4_layers_are_kinds_of_their_compress_ratio() {
    // Flash's 43 layers: 2 sliding-window, then CSA and HCA alternating, the last CSA; its MTP layer's ratio is 0.
    let r = plan_of(json!("deepseek-v4-flash"), 4096, 16);
    let m = &r.plan.model;
    let kinds: Vec<(String, u64)> = m.layer_runs().map(|(k, n)| (k.name(), n)).collect();
    assert_eq!(kinds[0], ("sliding attention (ratio 0) + MoE".to_string(), 2));
    assert_eq!(kinds[1], ("CSA (ratio 4) + MoE".to_string(), 1));
    assert_eq!(kinds[2], ("HCA (ratio 128) + MoE".to_string(), 1));
    assert_eq!(kinds.len(), 43 - 1);
    assert_eq!(m.mtp_layer_kind().name(), "sliding attention (ratio 0) + MoE");
    // A ratio list of the wrong length or with a ratio V4 has not is named, with the length Megatron-Core wants.
    let bad = |ratios: Value| {
        let r = plan_of(json!({"preset": "deepseek-v4-flash", "csa_compress_ratios": ratios}), 4096, 16);
        r.diagnostics.into_iter().filter(|d| d.code == "invalid-value").map(|d| d.message).collect::<Vec<_>>()
    };
    let short = bad(json!([0, 4, 128]));
    assert!(short.iter().any(|m| m.contains("lists 3 ratios but num_layers + mtp_num_layers = 44")), "{short:?}");
    let mut odd = vec![0u64; 44];
    odd[5] = 16;
    let odd = bad(json!(odd));
    assert!(odd.iter().any(|m| m.contains("csa_compress_ratios[5]` is 16")), "{odd:?}");
    // The preset's 44 ratios kept for a model of 8 layers: named too.
    let r = plan_of(json!({"preset": "deepseek-v4-flash", "num_layers": 8}), 4096, 16);
    assert!(r.diagnostics.iter().any(|d| d.message.contains("lists 44 ratios but num_layers + mtp_num_layers = 9")), "{:?}", r.diagnostics);
}

#[test]
fn deepseek_v4_flops_worked_by_hand() {
    // DeepSeek-V4-Flash, 16 sequences of s = 4096 (t = 65,536 tokens), by hand (6 per GEMM weight a token passes,
    // 12·n·d per attended (query, key) pair for QKᵀ and PV at d = 512, fwd + bwd):
    //   GEMM weights per attention layer: q_up, kv, linear_proj 69,206,016 (TP-sharded) + q_down, o_group_proj
    //   (1024·64·512) and the compressor's wkv/wgate: ratio 0 37,748,736; ratio 128 41,943,040; ratio 4 (with the
    //   indexer's wq_b, weights_proj and its compressor) 56,885,248; hyper-connections' mapping_proj 2·4·4096·24.
    //   Keys per query (averaged, causal): window 128 − 128·127/(2·4096) = 126.015625; + HCA s/128/2 = 16; + CSA the
    //   indexer's top-512 of s/4 = 1024 compressed keys: 512 − 2·512²/4096 = 384. CSA indexer scores: 3·2·(64·128 + 64)
    //   per pair over s/8 pairs a query = 25,362,432 a token.
    //   Layers run: ratio 0 ×3 (2 + the MTP layer), ratio 4 ×21, ratio 128 ×20.
    //   The rest as for every MoE model: shared experts 6·h·2048·3 and routed 6·h·2048·6·3 over 44 MoE layers, the MTP
    //   block 6·(3h + 2h²), logits 6·h·129,280·2 (the head and the MTP depth's).
    // Total 5,926,420,287,062,016 FLOPs per step (the attention 41.3% of it).
    let r = plan_of(json!("deepseek-v4-flash"), 4096, 16);
    let per_layer = |repl: f64, keys: f64, scores: f64| {
        6.0 * (69_206_016.0 + repl + 2.0 * 4.0 * 4096.0 * 24.0) + 12.0 * 64.0 * 512.0 * keys + scores
    };
    let t = 65_536.0;
    let attention = t
        * (3.0 * per_layer(37_748_736.0, 126.015625, 0.0)
            + 21.0 * per_layer(56_885_248.0, 126.015625 + 384.0, 25_362_432.0)
            + 20.0 * per_layer(41_943_040.0, 126.015625 + 16.0, 0.0));
    let h = 4096.0;
    let rest = t * (6.0 * h * 2048.0 * 3.0 * 44.0 + 6.0 * (3.0 * h + 2.0 * h * h) + 6.0 * h * 2048.0 * 6.0 * 3.0 * 44.0 + 6.0 * h * 129_280.0 * 2.0);
    let flops = r.performance.as_ref().unwrap().model_flops_per_step;
    within("deepseek-v4-flash model FLOPs", flops, attention + rest, 1e-9);
    assert!((attention / flops - 0.413).abs() < 0.001, "{}", attention / flops);
}

#[test]
fn deepseek_v4_stage_parameters_follow_bridges_layout() {
    // DeepSeek-V4-Flash on Bridge's PP 4 layout (deepseek_v4_bridge.py set_deepseek_v4_pipeline_model_parallel_layout:
    // E + 11 | 11 | 11 | 10 + MTP + loss), EP 8, TP 1. Per layer, the parameters outside the routed experts (hand count
    // of deepseek_v4_flash_counted_by_hand: attention + hyper-connections + shared expert 25,165,824 + router 1,048,576 +
    // norm 4096): ratio 0 133,965,430; ratio 128 138,225,782; ratio 4 153,107,702.
    //   stage 0: layers 0-10 (ratios 0, 0, then 4, 128 alternating: 2 × 0, 5 × 4, 4 × 128) + the embedding 529,530,880
    //     = 2,115,903,378.
    //   stage 3: layers 33-42 (5 × 128, 5 × 4) + the output layer 529,530,880 + final norm and hyper-connection head
    //     69,637 + the MTP layer less its experts 167,597,691 + the embedding copy the MTP layer reads 529,530,880
    //     = 2,683,396,508.
    //   routed experts on every stage: 11 layers (stage 3: 10 + the MTP layer) × 256 / 8 × 3·4096·2048 = 8,858,370,048.
    let r = plan_value(&json!({"model": "deepseek-v4-flash", "cluster": {"gpu": "gb200", "num_gpus": 32},
        "parallelism": {"pipeline_model_parallel_size": 4, "expert_model_parallel_size": 8,
                        "pipeline_model_parallel_layout": "Et*11|t*11|t*11|t*10mL"},
        "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 128}}))
    .unwrap();
    let stages = &r.memory.stages;
    assert_eq!((stages[0].dense_parameters, stages[0].expert_parameters), (2_115_903_378, 8_858_370_048));
    assert_eq!((stages[3].dense_parameters, stages[3].expert_parameters), (2_683_396_508, 8_858_370_048));
    // Without the layout, PP 4 is refused by name (the hash layers) with Bridge's layout as the one-click fix.
    let bare = plan_value(&json!({"model": "deepseek-v4-flash", "cluster": {"gpu": "gb200", "num_gpus": 32},
        "parallelism": {"pipeline_model_parallel_size": 4, "expert_model_parallel_size": 8}})).unwrap();
    let d = bare.diagnostics.iter().find(|d| d.code == "dsv4-hash-layers-need-layout").expect("the hash layers need a layout");
    assert!(d.fix.contains("\"Et*11|t*11|t*11|t*10mL\""), "{}", d.fix);
    // A layout that builds the embedding alone on its first chunk leaves the hash layers elsewhere: refused too.
    let apart = plan_value(&json!({"model": "deepseek-v4-flash", "cluster": {"gpu": "gb200", "num_gpus": 32},
        "parallelism": {"pipeline_model_parallel_size": 4, "expert_model_parallel_size": 8,
                        "pipeline_model_parallel_layout": "E|t*15|t*14|t*14mL"}})).unwrap();
    let d = apart.diagnostics.iter().find(|d| d.code == "dsv4-hash-layers-need-layout").expect("the hash layers are not with the embedding");
    assert!(d.message.contains("builds 0 decoder layer(s) with the embedding"), "{}", d.message);
}

#[test]
fn deepseek_v4_native_transformers_config_reads_as_the_legacy_one() {
    // transformers' native deepseek_v4 config names each layer's type (layer_types through compress_rates) and the
    // hash-routed layers (mlp_layer_types' hash_moe prefix) instead of compress_ratios / num_hash_layers; Megatron
    // Bridge reads both the same way (deepseek_v4_bridge.py _dsv4_compress_ratios, _dsv4_num_hash_layers; its tests:
    // layer_types sliding, sliding, CSA, HCA with one MTP layer → [0, 0, 4, 128, 0]).
    let mut legacy = hf_config("deepseek-ai--DeepSeek-V4-Flash");
    let mut native = legacy.clone();
    let o = native.as_object_mut().unwrap();
    let ratios: Vec<u64> = o.remove("compress_ratios").unwrap().as_array().unwrap().iter().map(|r| r.as_u64().unwrap()).collect();
    o.remove("num_hash_layers");
    let name = |r: u64| match r {
        0 => "sliding_attention",
        4 => "compressed_sparse_attention",
        _ => "heavily_compressed_attention",
    };
    o.insert("layer_types".into(), json!(ratios[..43].iter().map(|&r| name(r)).collect::<Vec<_>>()));
    o.insert("compress_rates".into(), json!({"compressed_sparse_attention": 4, "heavily_compressed_attention": 128}));
    let mlp: Vec<&str> = (0..43).map(|i| if i < 3 { "hash_moe" } else { "moe" }).collect();
    o.insert("mlp_layer_types".into(), json!(mlp));
    let a = plan_of(json!({"hf_config": legacy.take()}), 4096, 16);
    let b = plan_of(json!({"hf_config": native.clone()}), 4096, 16);
    assert_eq!(b.plan.model, a.plan.model);
    assert_eq!(b.plan.model.csa_compress_ratios.as_ref().map(Vec::len), Some(44));
    assert_eq!(b.plan.model.moe_n_hash_layers, Some(3));
    // hash_moe layers that are not a prefix: named, as Bridge rejects them.
    let o = native.as_object_mut().unwrap();
    o.insert("mlp_layer_types".into(), json!((0..43).map(|i| if i == 5 { "hash_moe" } else { "moe" }).collect::<Vec<_>>()));
    let r = plan_of(json!({"hf_config": native}), 4096, 16);
    assert!(r.diagnostics.iter().any(|d| d.message.contains("not a contiguous prefix")), "{:?}", r.diagnostics);
    // Without its per-layer ratios (or layer types) a deepseek_v4 config is refused by name, never sized as plain MLA.
    let mut bare = hf_config("deepseek-ai--DeepSeek-V4-Flash");
    bare.as_object_mut().unwrap().remove("compress_ratios");
    let e = plan_value(&json!({"model": {"hf_config": bare}, "cluster": {"gpu": "h100-sxm-80gb"}})).unwrap_err();
    assert_eq!(e.code, "hf-config-unmappable");
    assert!(e.message.contains("compress_ratios (or layer_types)"), "{}", e.message);
}

#[test]
fn deepseek_v4_mhc_recompute_frees_the_hyper_connection_mixes() {
    // Each hyper-connection module (2 a layer) saves its fp32 mixes, n² + 2n = 24 per token for 4 streams: at seq 4096,
    // micro-batch 1, TP 1, 4096 · 24 · 4 B · 2 = 786,432 B a layer; `mhc` recompute re-creates them. Stage 0 of Bridge's
    // PP 4 layout builds 11 layers: 8,650,752 B less per microbatch.
    let stage0 = |modules: Value| {
        let r = plan_value(&json!({"model": "deepseek-v4-flash", "cluster": {"gpu": "gb200", "num_gpus": 32},
            "parallelism": {"pipeline_model_parallel_size": 4, "expert_model_parallel_size": 8,
                            "pipeline_model_parallel_layout": "Et*11|t*11|t*11|t*10mL"},
            "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 128,
                         "recompute_granularity": "selective", "recompute_modules": modules}}))
        .unwrap();
        r.memory.stages[0].activations_per_microbatch_bytes
    };
    assert_eq!(stage0(json!(["moe_act"])) - stage0(json!(["moe_act", "mhc"])), 8_650_752);
}

#[test]
fn deepseek_v4_bridge_exports_read_back_as_the_same_model() {
    // A DeepSeek-V4 changed from its preset (2 residual streams) is written field by field in Bridge's provider names
    // (experimental_attention_variant, csa_compress_ratios, o_groups, …), and both Bridge exports read back as it; the
    // Megatron-LM export says it cannot carry them.
    let r = plan_value(&json!({"model": {"preset": "deepseek-v4-flash", "num_residual_streams": 2},
        "cluster": {"gpu": "gb200", "num_gpus": 64},
        "parallelism": {"pipeline_model_parallel_size": 8, "expert_model_parallel_size": 8,
                        "pipeline_model_parallel_layout": "Et*6|t*6|t*6|t*5|t*5|t*5|t*5|t*5mL"},
        "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 256}}))
    .unwrap();
    for kind in [ExportKind::Bridge, ExportKind::BridgeCli] {
        let text = export(kind, &r.plan, &r);
        assert!(text.contains("csa_compress_ratios") && text.contains("num_residual_streams"), "{text}");
        let (_, plan, _) = meshplan_core::imports::import_plan(&text, &Default::default()).unwrap();
        assert_eq!(plan.model.csa_compress_ratios, r.plan.model.csa_compress_ratios);
        assert_eq!(plan.model.param_counts(), r.plan.model.param_counts());
    }
    let mlm = export(ExportKind::MegatronLm, &r.plan, &r);
    assert!(mlm.contains("DeepSeek-V4's hybrid attention") && mlm.contains("is not written"), "{mlm}");
}

#[test]
fn deepseek_v4_flops_per_token_against_bridges_published_throughput() {
    // Megatron Bridge's performance summary (docs/performance-summary.md @067f987df03b, 26.08 container, DeepSeekV4
    // Flash on 128 DGX-GB200, MXFP8, GBS 2048, MBS 1, seq 4096): 7776 tokens/s/GPU at 706 model TFLOP/s/GPU, i.e. Bridge's
    // own FLOPs count gives 706e12 / 7776 = 90.79 GFLOP a token. Its model verification card (deepseek-v4-flash card.yaml,
    // 64 GB200, GBS 256): 142.910 TFLOP/s/GPU over 10,415.760 ms steps, 9.527e16 FLOPs a step of 256 · 4096 tokens =
    // 90.85 GFLOP a token. meshplan's count (deepseek_v4_flops_worked_by_hand's terms) is within 1% of both.
    let r = plan_value(&json!({"model": "deepseek-v4-flash", "cluster": {"gpu": "gb200", "num_gpus": 128},
        "parallelism": {"expert_model_parallel_size": 64},
        "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 2048}}))
    .unwrap();
    let per_token = r.performance.as_ref().unwrap().model_flops_per_step / (2048.0 * 4096.0);
    within("DeepSeek-V4-Flash FLOPs per token (performance summary)", per_token, 706e12 / 7776.0, 0.01);
    within("DeepSeek-V4-Flash FLOPs per token (verification card)", per_token, 142.910e12 * 10.415760 * 64.0 / (256.0 * 4096.0), 0.01);
}

#[test]
fn minimax_m3_is_refused_by_name() {
    // MiniMax-M3 (Bridge's minimax_m3 recipes; its released config.json, aiconfigurator's copy): block-sparse attention
    // with index heads of its own on 57 of its 60 layers. Read the Llama way it would be sized without them and with
    // the MoE width for its dense layers: refused, naming the key, never a Llama count.
    let e = plan_value(&json!({"model": {"hf_config": hf_config("MiniMaxAI--MiniMax-M3")}, "cluster": {"gpu": "h100-sxm-80gb"}})).unwrap_err();
    assert_eq!(e.code, "hf-config-unmappable");
    assert!(e.message.contains("sparse_attention_config"), "{}", e.message);
}

#[test]
fn glm_5_2_counts_an_indexer_on_every_layer() {
    // GLM-5.2 (the model of Bridge's glm52_* recipes) is GLM-5's architecture with its DSA indexers shared: only 21 of
    // its 78 layers compute top-k indices (index_topk_freq 4, index_skip_topk_offset 3: layers 1-3 and every 4th from 7,
    // 1-based, as Bridge's flop_utils count_indexer_layers walks them); the other 57 reuse them and hold no indexer
    // weights. Megatron Bridge's verification card (examples/model_verification_cards/glm5-2/card.yaml @067f987df03b):
    // transformers reloads it as GlmMoeDsaForCausalLM with 743,377,000,704 parameters. meshplan reads the config as
    // GLM-5's, an indexer on every layer: 57 indexers over, each 2048·32·128 + 6144·128 + 2·128 + 6144·32 = 9,371,904
    // (wq_b, wk, k_norm, weights_proj), 534,198,528 in all, 0.07% of the model (within 1%; the shared layers' indexer
    // FLOPs are over too). A known gap: meshplan does not model index_topk_freq; the import says so, with the numbers.
    let r = plan_of(json!({"hf_config": hf_config("zai-org--GLM-5.2")}), 4096, 16);
    assert_eq!(r.derived.total_parameters, 743_377_000_704 + 57 * 9_371_904);
    let d = r.diagnostics.iter().find(|d| d.code == "hf-config-part-approximated").expect("the sharing is named");
    assert!(d.message.contains("57 of 78 layers") && d.message.contains("534198528 parameters over"), "{}", d.message);
    // The same layers by the cadence alone (indexer_types left out): index_topk_freq 4 from offset 3.
    let mut cadence = hf_config("zai-org--GLM-5.2");
    cadence.as_object_mut().unwrap().remove("indexer_types");
    let r2 = plan_of(json!({"hf_config": cadence}), 4096, 16);
    assert!(r2.diagnostics.iter().any(|d| d.code == "hf-config-part-approximated" && d.message.contains("57 of 78 layers")));
    // GLM-5 itself shares none: no warning.
    let r5 = plan_of(json!({"hf_config": hf_config("zai-org--GLM-5")}), 4096, 16);
    assert!(!r5.diagnostics.iter().any(|d| d.code == "hf-config-part-approximated"));
    within("glm-5.2 total", r.derived.total_parameters as f64, 743_377_000_704.0, 0.001);
    assert_eq!(r.plan.model.param_counts(), presets::model("glm-5").unwrap().model_config().param_counts());
}
