//! Bad input never panics: it becomes a diagnostic, or an InputError (exit status 2).

mod common;
use common::fields::{HF_FIELDS, PLAN_FIELDS};
use common::*;
use meshplan_core::{plan_str, plan_value};
use proptest::prelude::*;
use serde_json::{Value, json};

#[test]
fn wrong_types_zero_negative_fractional_become_diagnostics() {
    for bad in [json!("four"), json!(0), json!(-2), json!(2.5), json!(1e300), json!([4]), json!({"x": 1}), json!(true)] {
        let mut v = P::new(small_dense(), 8).json();
        v["parallelism"]["tensor_model_parallel_size"] = bad.clone();
        let r = plan_value(&v).unwrap();
        let d = r.diagnostics.iter().find(|d| d.code == "invalid-value").unwrap_or_else(|| panic!("{bad}: {:?}", codes(&r)));
        assert!(d.message.contains("tensor_model_parallel_size"), "{}", d.message);
        assert!(!r.valid);
        // The default (1) was used meanwhile, so the rest of the report is still computed.
        assert_eq!(r.plan.parallelism.tensor_model_parallel_size, 1);
    }
}

/// A bad value names its field, once: the page marks that field and shows the message under it (issue 24).
#[test]
fn a_bad_value_names_its_field_once() {
    let mut v = P::new(small_dense(), 8).json();
    v["parallelism"]["tensor_model_parallel_size"] = json!("abc");
    v["training"]["recompute_granularity"] = json!("sometimes");
    let r = plan_value(&v).unwrap();
    for path in ["parallelism.tensor_model_parallel_size", "training.recompute_granularity"] {
        let named: Vec<_> = r.diagnostics.iter().filter(|d| d.field.as_deref() == Some(path)).collect();
        assert_eq!(named.len(), 1, "{path}: {:?}", codes(&r));
        assert_eq!(named[0].code, "invalid-value");
    }
    // Findings about the plan as a whole name no field.
    assert!(r.diagnostics.iter().filter(|d| d.code != "invalid-value").all(|d| d.field.is_none()));
}

#[test]
fn integral_floats_are_accepted() {
    let mut v = P::new(small_dense(), 8).json();
    v["parallelism"]["tensor_model_parallel_size"] = json!(2.0);
    let r = plan_value(&v).unwrap();
    assert_eq!(r.plan.parallelism.tensor_model_parallel_size, 2);
    assert!(!codes(&r).contains(&"invalid-value"));
}

#[test]
fn unknown_fields_are_named_with_a_suggestion() {
    let mut v = P::new(small_dense(), 8).json();
    v["parallelism"]["tensor_model_paralel_size"] = json!(2);
    v["model"]["num_query_group"] = json!(8);
    let r = plan_value(&v).unwrap();
    let unknown: Vec<_> = r.diagnostics.iter().filter(|d| d.code == "unknown-field").collect();
    assert_eq!(unknown.len(), 2, "{:?}", codes(&r));
    assert!(unknown.iter().any(|d| d.fix.contains("parallelism.tensor_model_parallel_size")));
    assert!(unknown.iter().any(|d| d.fix.contains("model.num_query_groups")));
}

#[test]
fn unreadable_input_is_an_input_error() {
    for text in ["", "{", "{\"model\": ", "[1,2]", "42", "null", "{\"cluster\": {}}"] {
        assert!(plan_str(text).is_err(), "{text:?}");
    }
    let e = plan_str(r#"{"model": "llama-3.1-8c", "cluster": {"gpu": "h100-sxm-80gb"}}"#).unwrap_err();
    assert_eq!(e.code, "unknown-model-preset");
    assert!(e.fix.contains("llama-3.1-8b"), "{}", e.fix);
    let e = plan_str(r#"{"model": "llama-3.1-8b", "cluster": {"gpu": "h1000"}}"#).unwrap_err();
    assert_eq!(e.code, "unknown-gpu");
    // A cluster that is not an object says what it found, not that there is none.
    let e = plan_str(r#"{"model": "llama-3.1-8b", "cluster": "h100"}"#).unwrap_err();
    assert_eq!(e.code, "missing-cluster");
    assert!(e.message.contains("must be a JSON object") && e.message.contains("\"h100\""), "{}", e.message);
    let e = plan_str(r#"{"model": "llama-3.1-8b"}"#).unwrap_err();
    assert_eq!(e.message, "the plan has no `cluster`");
}

#[test]
fn astronomically_large_models_and_clusters_do_not_overflow() {
    // ~10^13 parameters: 1,000 layers of hidden 65,536 (each layer ≈ 12·h² ≈ 5.2·10^10).
    let model = json!({"num_layers": 1000, "hidden_size": 65536, "num_attention_heads": 512, "ffn_hidden_size": 262144,
                       "vocab_size": 256000, "gated_linear_unit": false, "position_embedding_type": "rope"});
    let mut p = P::new(model, 1 << 20);
    (p.tp, p.pp) = (8, 100);
    p.gbs = 1 << 24;
    let r = plan_value(&p.json()).unwrap();
    // Not gated, so Megatron's add_bias_linear = True; 512 heads of 128 with as many KV groups; LayerNorm (weight and
    // bias). Per layer: QKV 3·h² + 3h = 12,884,901,888 + 196,608; proj h² + h = 4,294,967,296 + 65,536; fc1 and fc2
    // 2·h·262144 + 262,144 + h = 34,359,738,368 + 327,680; two norms 4h = 262,144 → 51,540,459,520. 1,000 layers:
    // 51,540,459,520,000; tied embedding 256000·h = 16,777,216,000; final norm 2h = 131,072.
    assert_eq!(r.derived.total_parameters, 51_557_236_867_072);
    assert_eq!(r.derived.world_size, 1 << 20);
    // Fields beyond every limit are rejected, not wrapped: exactly the two given, each named.
    let mut v = P::new(small_dense(), 8).json();
    v["model"]["hidden_size"] = json!(u64::MAX);
    v["cluster"]["num_nodes"] = json!(1e18);
    let r = plan_value(&v).unwrap();
    let invalid: Vec<&str> = r.diagnostics.iter().filter(|d| d.code == "invalid-value").map(|d| d.message.as_str()).collect();
    assert_eq!(invalid.len(), 2, "{invalid:?}");
    assert!(invalid.iter().any(|m| m.contains("`model.hidden_size`")) && invalid.iter().any(|m| m.contains("`cluster.num_nodes`")), "{invalid:?}");
}

#[test]
fn a_million_gpus_plan() {
    // 10^6 GPUs = 125,000 nodes of 8; TP 8 · PP 4 · CP 1 = 32 → DP 10^6 / 32 = 31,250.
    let mut p = P::new(small_dense(), 1_000_000);
    (p.tp, p.pp) = (8, 4);
    p.gbs = 1_000_000;
    let r = p.run();
    assert_eq!(r.derived.world_size, 1_000_000);
    assert_eq!(r.derived.data_parallel_size, 31_250);
}

/// Any JSON value at any plan field.
fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| json!(f)),
        (0u64..70).prop_map(|n| json!(n)),
        "[a-z0-9<>\"'-]{0,12}".prop_map(Value::String),
        // Any printable Unicode (every script, combining marks, right-to-left letters), and multi-byte text around the
        // 256-character string limit (`█` is 3 bytes, `e` + U+0301 two characters, U+202E a right-to-left override).
        "\\PC{0,40}".prop_map(Value::String),
        (prop::sample::select(vec!["█", "…", "e\u{301}", "שלום", "\u{202e}x", "🦀"]), 120usize..300).prop_map(|(s, n)| Value::String(s.repeat(n))),
        // Sizes at and past the limits: 2^14 layers, 2^16 experts, 2^24 parallel sizes, 2^40 fields, u64::MAX.
        prop::sample::select(vec![1u64 << 14, (1 << 14) + 1, 1 << 16, (1 << 16) + 1, 1 << 24, (1 << 24) + 1, 1 << 40, u64::MAX])
            .prop_map(|n| json!(n)),
        // Long lists (of 0/1 flags, or of layer indices) and long strings.
        (0usize..20_000, any::<bool>()).prop_map(|(n, flags)| json!((0..n).map(|i| if flags { i % 2 } else { i }).collect::<Vec<_>>())),
        (250usize..300).prop_map(|n| Value::String("x".repeat(n))),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array), inner.prop_map(|v| json!({"k": v}))]
    })
}

/// A report's every export and the memory of its plan answer too.
fn exports_and_memory(v: &Value) {
    if let Ok(r) = plan_value(v) {
        for kind in meshplan_core::ExportKind::ALL {
            let _ = meshplan_core::export(kind, &r.plan, &r);
        }
    }
    let _ = meshplan_core::report::memory_value(v);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn any_value_anywhere_never_panics(edits in prop::collection::vec((0..PLAN_FIELDS.len(), arb_json()), 1..5)) {
        let mut v = P { tp: 2, ep: 8, ..P::new(small_moe(), 16) }.json();
        for (i, val) in edits {
            let (section, key) = PLAN_FIELDS[i];
            v[section][key] = val;
        }
        exports_and_memory(&v);
    }

    #[test]
    fn any_value_in_any_hf_config_field_never_panics(
        base in prop::sample::select(vec!["deepseek_v3", "qwen3_moe", "mixtral", "llama", "made_up"]),
        edits in prop::collection::vec((0..HF_FIELDS.len(), arb_json()), 1..6),
    ) {
        let mut hf = json!({"model_type": base, "hidden_size": 1024, "intermediate_size": 4096, "moe_intermediate_size": 512,
            "num_hidden_layers": 8, "num_attention_heads": 16, "num_key_value_heads": 4, "n_routed_experts": 16, "num_experts": 16,
            "n_shared_experts": 1, "num_experts_per_tok": 2, "first_k_dense_replace": 1, "moe_layer_freq": 1, "decoder_sparse_step": 1,
            "mlp_only_layers": [0], "kv_lora_rank": 128, "q_lora_rank": 256, "vocab_size": 32000});
        for (i, val) in edits {
            hf[HF_FIELDS[i]] = val;
        }
        let v = json!({"model": {"hf_config": hf}, "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 2},
                       "training": {"global_batch_size": 64}, "parallelism": {"tensor_model_parallel_size": 2, "expert_model_parallel_size": 4}});
        exports_and_memory(&v);
    }

    #[test]
    fn truncated_json_never_panics(cut in 0usize..400) {
        let text = serde_json::to_string(&P::new(small_moe(), 8).json()).unwrap();
        let cut = cut.min(text.len());
        let _ = plan_str(&text[..cut]);
    }

    #[test]
    fn dp_times_model_parallel_is_world(tp_e in 0u32..4, pp_e in 0u32..3, cp_e in 0u32..2, nodes in 1u64..9) {
        let (tp, pp, cp) = (1u64 << tp_e, 1u64 << pp_e, 1u64 << cp_e);
        let mut p = P::new(small_dense(), 8 * nodes);
        (p.tp, p.pp, p.cp) = (tp, pp, cp);
        let r = p.run();
        let w = r.derived.world_size;
        if w % (tp * pp * cp) == 0 {
            prop_assert_eq!(r.derived.data_parallel_size * tp * pp * cp, w);
        } else {
            prop_assert!(codes(&r).contains(&"world-not-divisible-dense"));
        }
    }
}
