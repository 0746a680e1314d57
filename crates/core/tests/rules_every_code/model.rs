//! Tensor parallelism against the model's widths (megatron/core/transformer/attention.py, transformer_config.py,
//! tensor_parallel/layers.py) and the vocabulary (vocab_utils.py, Megatron Bridge setup.py).

use super::*;

/// 24 heads in 6 query groups of 64; hidden 1536, ffn 4608 divide by 2, 3, 4, 6, 8, 12.
fn heads24_groups6() -> Value {
    set(&dense(), &[("num_attention_heads", json!(24)), ("num_query_groups", json!(6)), ("kv_channels", json!(64)),
                    ("hidden_size", json!(1536)), ("ffn_hidden_size", json!(4608))])
}

/// The small dense model with its window layers' own shape (32 heads in 8 groups of 64) and `window`: a sliding window
/// of 128 keys on every other layer, or none.
fn with_window_shape(window: bool) -> Value {
    let mut edits = vec![("sliding_attention_setting", json!({"num_attention_heads": 32, "num_query_groups": 8, "kv_channels": 64}))];
    if window {
        edits.extend([("window_size", json!([127, 0])), ("window_attn_skip_freq", json!(2))]);
    }
    set(&dense(), &edits)
}

pub fn cases() -> Vec<Case> {
    vec![
        // The small dense model with Gemma 4's per-layer embeddings (64 per layer) on PP 2: Megatron Bridge's
        // Gemma4DenseProvider builds it at PP 1 only; at PP 1 nothing to say.
        case(
            "gemma4-dense-pipeline",
            Kind::Error,
            probe(set(&dense(), &[("per_layer_embed_dim", json!(64))]), &[(PP, json!(2))]),
            probe(set(&dense(), &[("per_layer_embed_dim", json!(64))]), &[(PP, json!(1))]),
        )
        .fix(&[(PP, json!(1))]),
        // A window layers' shape without a window: no layer uses it (ignored); with window_size the odd layers do.
        case("sliding-attention-setting-unused", Kind::Warning, probe(with_window_shape(false), &[]), probe(with_window_shape(true), &[]))
            .fix(&[("model.sliding_attention_setting", Value::Null)]),
        // MoE MTP layers on the dense model (no experts): ignored, the MTP depth is a dense layer like the last one;
        // dense MTP layers are a kind the model has.
        case(
            "mtp-layer-unavailable",
            Kind::Warning,
            probe(set(&dense(), &[("mtp_num_layers", json!(1)), ("mtp_layer", json!({"mixer": "attention", "ffn": "moe"}))]), &[]),
            probe(set(&dense(), &[("mtp_num_layers", json!(1)), ("mtp_layer", json!({"mixer": "attention", "ffn": "dense"}))]), &[]),
        )
        .fix(&[("model.mtp_layer", Value::Null)]),
        // 16 heads at TP 3 on 6 GPUs (a whole DP of 2; GBS 960 divides by DP 2 and 3): 16 mod 3 = 1. TPs passing every width rule (divisors of 16
        // that suit 8 groups and ffn 5632 = 2⁹·11): 1, 2, 4, 8, 16; of those dividing 6/(PP·CP) = 6: 1, 2 → 2.
        case(
            "heads-not-divisible-by-tp",
            Kind::Error,
            probe(dense(), &[(TP, json!(3)), (PER_NODE, json!(6)), (GBS, json!(960))]),
            probe(dense(), &[(TP, json!(2)), (PER_NODE, json!(6)), (GBS, json!(960))]),
        )
        .fix(&[(TP, json!(2))]),
        // 6 groups at TP 4: 6 mod 4 = 2 and 4 mod 6 = 4, neither a multiple nor a divisor (24 heads divide by 4).
        // TPs dividing 24 and 8 GPUs: 1, 2, 4, 8; a multiple or divisor of 6: 1, 2 → 2, where 6 mod 2 = 0.
        case(
            "query-groups-not-divisible-by-tp",
            Kind::Error,
            probe(heads24_groups6(), &[(TP, json!(4))]),
            probe(heads24_groups6(), &[(TP, json!(2))]),
        )
        .fix(&[(TP, json!(2))]),
        // 2 query groups at TP 4: 4 mod 2 = 0, so megatron-core replicates each KV head on 4/2 = 2 ranks (an info);
        // at TP 2 each rank holds exactly one group.
        case(
            "query-groups-replicated",
            Kind::Info,
            probe(set(&dense(), &[("num_query_groups", json!(2))]), &[(TP, json!(4))]),
            probe(set(&dense(), &[("num_query_groups", json!(2))]), &[(TP, json!(2))]),
        ),
        // 16 heads in 6 groups: 16 mod 6 = 4; in 8 groups, 2 heads each.
        case(
            "heads-not-divisible-by-query-groups",
            Kind::Error,
            probe(set(&dense(), &[("num_query_groups", json!(6))]), &[]),
            probe(dense(), &[]),
        ),
        // ffn 5630 at TP 4: 5630 mod 4 = 2 (5632 divides). 5630 = 2·5·563: the TPs passing every width rule are 1 and
        // 2, both dividing 8 GPUs → 2.
        case(
            "ffn-not-divisible-by-tp",
            Kind::Error,
            probe(set(&dense(), &[("ffn_hidden_size", json!(5630))]), &[(TP, json!(4))]),
            probe(dense(), &[(TP, json!(4))]),
        )
        .fix(&[(TP, json!(2))]),
        // vocab 32001 at TP 2: 32001 mod 2 = 1 (a warning: Megatron-LM pads, Bridge asserts). The fix pads to a
        // multiple of 128·2 = 256: ⌈32001/256⌉ = 126 → 32256, which divides by 2. 32000 divides as it is.
        case(
            "vocab-not-divisible-by-tp",
            Kind::Warning,
            probe(set(&dense(), &[("vocab_size", json!(32001))]), &[(TP, json!(2))]),
            probe(dense(), &[(TP, json!(2))]),
        )
        .fix(&[("model.vocab_size", json!(32256))]),
    ]
}

#[test]
fn codes() {
    run(cases());
}
