//! Hybrid layer patterns (megatron/core/models/hybrid/hybrid_layer_allocation.py, megatron/training/arguments.py,
//! Megatron Bridge hybrid_provider.py) and the state-space mixers against TP and CP (megatron/core/ssm/mamba_mixer.py,
//! mamba_context_parallel.py; transformer_config.py for Gated DeltaNet).

use super::*;

/// A small Mamba hybrid: "M-M*M-M*" (8 layers: 4 Mamba, 2 MLP, 2 attention), hidden 1024, 32 Mamba heads of 64 in 8
/// groups, state 128; 16 attention heads in 8 query groups of 64; squared-ReLU MLP 4096; no position embeddings.
fn hybrid() -> Value {
    json!({"hybrid_layer_pattern": "M-M*M-M*", "hidden_size": 1024, "ffn_hidden_size": 4096, "num_attention_heads": 16,
           "num_query_groups": 8, "kv_channels": 64, "vocab_size": 32000, "gated_linear_unit": false,
           "activation_func": "squared_relu", "normalization": "RMSNorm", "add_bias_linear": false,
           "position_embedding_type": "none", "mamba_num_heads": 32, "mamba_head_dim": 64, "mamba_num_groups": 8,
           "mamba_state_dim": 128})
}

/// The seed's dense model with Gated DeltaNet layers (every 4th layer full attention), Megatron's GDN sizes unless set.
fn gdn() -> Value {
    set(&dense(), &[("experimental_attention_variant", json!("gated_delta_net")), ("linear_attention_freq", json!(4))])
}

const PATTERN: &str = "model.hybrid_layer_pattern";

pub fn cases() -> Vec<Case> {
    vec![
        // 'X' is not one of M G * D + - E (Megatron's _validate_pattern).
        case("hybrid-pattern-symbol", Kind::Error, probe(hybrid(), &[(PATTERN, json!("M-X*"))]), probe(hybrid(), &[(PATTERN, json!("M-M*"))])),
        // * (attention) with + (MLA) in one pattern.
        case(
            "hybrid-pattern-attention-mla-mix",
            Kind::Error,
            probe(hybrid(), &[(PATTERN, json!("M*M+"))]),
            probe(hybrid(), &[(PATTERN, json!("M*M*"))]),
        ),
        // Depth 2's pattern "MM" differs from depth 1's "M*".
        case(
            "hybrid-mtp-patterns-differ",
            Kind::Error,
            probe(hybrid(), &[(PATTERN, json!("M-M*/M*/MM"))]),
            probe(hybrid(), &[(PATTERN, json!("M-M*/M*/M*"))]),
        ),
        // Both names at once; the new name alone is silent.
        case(
            "hybrid-pattern-names-both",
            Kind::Error,
            probe(hybrid(), &[("model.hybrid_override_pattern", json!("M-M*"))]),
            probe(hybrid(), &[]),
        ),
        // The deprecated name alone is read (an info).
        case(
            "hybrid-override-pattern-deprecated",
            Kind::Info,
            probe(set(&hybrid(), &[("hybrid_layer_pattern", Value::Null)]), &[("model.hybrid_override_pattern", json!("M-M*M-M*"))]),
            probe(hybrid(), &[]),
        ),
        // num_layers 10 against the pattern's 8 layers; 8 agrees.
        case(
            "hybrid-num-layers-mismatch",
            Kind::Warning,
            probe(hybrid(), &[("model.num_layers", json!(10))]),
            probe(hybrid(), &[("model.num_layers", json!(8))]),
        ),
        // mtp_num_layers 3 against the pattern's 2 depths; 2 agrees.
        case(
            "hybrid-mtp-depths-mismatch",
            Kind::Warning,
            probe(hybrid(), &[(PATTERN, json!("M-M*/M*/M*")), ("model.mtp_num_layers", json!(3))]),
            probe(hybrid(), &[(PATTERN, json!("M-M*/M*/M*")), ("model.mtp_num_layers", json!(2))]),
        ),
        // D (DSA attention) is a layer kind meshplan does not size.
        case("layer-kind-unsized", Kind::Error, probe(hybrid(), &[(PATTERN, json!("M-MD"))]), probe(hybrid(), &[(PATTERN, json!("M-M+"))])),
        // 12 Mamba heads (4 groups) at TP 8: 12 mod 8 = 4. TPs dividing the 16 attention heads and passing every width
        // rule (8 query groups, ffn 4096, Mamba heads 12 and groups 4): 1, 2, 4; nearest 8 → 4, dividing 8 GPUs.
        case(
            "mamba-heads-not-divisible-by-tp",
            Kind::Error,
            probe(set(&hybrid(), &[("mamba_num_heads", json!(12)), ("mamba_num_groups", json!(4))]), &[(TP, json!(8))]),
            probe(set(&hybrid(), &[("mamba_num_heads", json!(12)), ("mamba_num_groups", json!(4))]), &[(TP, json!(4))]),
        )
        .fix(&[(TP, json!(4))]),
        // 2 groups at TP 4: 2 mod 4 = 2 (32 heads divide). TPs dividing the 2 groups: 1, 2 → 2.
        case(
            "mamba-groups-not-divisible-by-tp",
            Kind::Error,
            probe(set(&hybrid(), &[("mamba_num_groups", json!(2))]), &[(TP, json!(4))]),
            probe(set(&hybrid(), &[("mamba_num_groups", json!(2))]), &[(TP, json!(2))]),
        )
        .fix(&[(TP, json!(2))]),
        // 32 heads in 6 groups: 32 mod 6 = 2; in 8 groups, 4 heads each.
        case(
            "mamba-heads-not-divisible-by-groups",
            Kind::Error,
            probe(set(&hybrid(), &[("mamba_num_groups", json!(6))]), &[]),
            probe(hybrid(), &[]),
        ),
        // 24 heads (8 groups) at TP 2 on 16 GPUs: 12 heads per TP rank, CP 8: 12 mod 8 = 4 (4 groups per rank divide
        // CP 8). CPs dividing 16/TP = 8 that split 12 heads and 4 groups (and seq 4096 into 2·CP): 1, 2, 4 → 4.
        case(
            "mamba-heads-not-divisible-by-tp-cp",
            Kind::Error,
            probe(set(&hybrid(), &[("mamba_num_heads", json!(24))]), &[(TP, json!(2)), (CP, json!(8)), (NODES, json!(2))]),
            probe(set(&hybrid(), &[("mamba_num_heads", json!(24))]), &[(TP, json!(2)), (CP, json!(4)), (NODES, json!(2))]),
        )
        .fix(&[(CP, json!(4))]),
        // 24 heads in 12 groups at TP 2 on 16 GPUs: 6 groups per TP rank against CP 4: 6 ≥ 4 and 6 mod 4 = 2 (12 heads
        // per rank divide by 4). CPs dividing 8 that split 12 heads and 6 groups: 1, 2 → 2.
        case(
            "mamba-groups-not-divisible-by-cp",
            Kind::Error,
            probe(set(&hybrid(), &[("mamba_num_heads", json!(24)), ("mamba_num_groups", json!(12))]), &[(TP, json!(2)), (CP, json!(4)), (NODES, json!(2))]),
            probe(set(&hybrid(), &[("mamba_num_heads", json!(24)), ("mamba_num_groups", json!(12))]), &[(TP, json!(2)), (CP, json!(2)), (NODES, json!(2))]),
        )
        .fix(&[(CP, json!(2))]),
        // The Gated DeltaNet variant without linear_attention_freq.
        case(
            "gdn-needs-linear-attention-freq",
            Kind::Error,
            probe(set(&gdn(), &[("linear_attention_freq", Value::Null)]), &[]),
            probe(gdn(), &[]),
        ),
        // 24 value heads over 16 key heads: 24 mod 16 = 8; 32 is a multiple.
        case(
            "gdn-value-heads-not-multiple-of-key-heads",
            Kind::Error,
            probe(set(&gdn(), &[("linear_num_value_heads", json!(24))]), &[]),
            probe(gdn(), &[]),
        ),
        // 4 key heads (8 value heads) at TP 8: 4 mod 8 = 4. TPs dividing 16 attention heads, 8 groups, ffn 5632 and both
        // head counts: 1, 2, 4 → 4.
        case(
            "gdn-key-heads-not-divisible-by-tp-cp",
            Kind::Error,
            probe(set(&gdn(), &[("linear_num_key_heads", json!(4)), ("linear_num_value_heads", json!(8))]), &[(TP, json!(8))]),
            probe(set(&gdn(), &[("linear_num_key_heads", json!(4)), ("linear_num_value_heads", json!(8))]), &[(TP, json!(4))]),
        )
        .fix(&[(TP, json!(4))]),
        // 12 value heads (4 key heads) at CP 8: 12 mod 8 = 4, a TP·CP problem with TP 1. CPs dividing 8 GPUs and both
        // head counts: 1, 2, 4 → 4.
        case(
            "gdn-value-heads-not-divisible-by-tp-cp",
            Kind::Error,
            probe(set(&gdn(), &[("linear_num_key_heads", json!(4)), ("linear_num_value_heads", json!(12))]), &[(CP, json!(8))]),
            probe(set(&gdn(), &[("linear_num_key_heads", json!(4)), ("linear_num_value_heads", json!(12))]), &[(CP, json!(4))]),
        )
        .fix(&[(CP, json!(4))]),
    ]
}

#[test]
fn codes() {
    run(cases());
}
