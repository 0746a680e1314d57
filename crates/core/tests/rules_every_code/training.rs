//! Recompute and precision (transformer_config.py __post_init__, recompute.py, multi_token_prediction.py,
//! arguments.py validate_args, transformer_engine utils.assert_dim_for_fp8_exec, the GPU catalogue).

use super::*;

/// Full recompute with `method` and `layers` (None leaves the field out).
fn full(model: Value, method: Option<&str>, layers: Option<u64>) -> Probe {
    probe(model, &[(RECOMPUTE, json!("full")), (METHOD, json!(method)), (RECOMPUTE_LAYERS, json!(layers))])
}

/// The dense model with one MTP module (RoPE, so MTP raises nothing about positions).
fn mtp() -> Value {
    set(&dense(), &[("mtp_num_layers", json!(1)), ("position_embedding_type", json!("rope"))])
}

pub fn cases() -> Vec<Case> {
    vec![
        // The H100's dense BF16 peak is 989 TFLOP/s (gpus.json): a measured 1000 is above it; 980 is not.
        case(
            "measured-above-peak",
            Kind::Warning,
            probe(dense(), &[("training.measured_tflops_per_gpu", json!(1000.0))]),
            probe(dense(), &[("training.measured_tflops_per_gpu", json!(980.0))]),
        ),
        // Below 0.6 of the estimate: the estimate lies between 167 TFLOP/s (MFU 17%, below every calibrated dense
        // run) and the 989 peak, so 100 is below 0.6 × the estimate and 900 (≥ 0.6 × 989 = 593) is not.
        case(
            "measured-below-prediction",
            Kind::Warning,
            probe(dense(), &[("training.measured_tflops_per_gpu", json!(100.0))]),
            probe(dense(), &[("training.measured_tflops_per_gpu", json!(900.0))]),
        ),
        // Full recompute without recompute_method and recompute_num_layers; the fix is uniform, 1 (every layer).
        case("full-recompute-needs-method", Kind::Error, full(dense(), None, None), full(dense(), Some("uniform"), Some(1))).fix(&[(METHOD, json!("uniform")), (RECOMPUTE_LAYERS, json!(1))]),
        // Selective with recompute_num_layers 2: megatron-core requires None (the fix unsets it).
        case(
            "selective-recompute-forbids-method",
            Kind::Error,
            probe(dense(), &[(RECOMPUTE_LAYERS, json!(2))]),
            probe(dense(), &[(RECOMPUTE_LAYERS, Value::Null)]),
        )
        .fix(&[(RECOMPUTE_LAYERS, Value::Null)]),
        // Selective with recompute_method: only Megatron-LM asserts (a warning; the fix unsets it).
        case("selective-recompute-method-mlm", Kind::Warning, probe(dense(), &[(METHOD, json!("uniform"))]), probe(dense(), &[(METHOD, Value::Null)])).fix(&[(METHOD, Value::Null)]),
        // Uniform with 0 layers per unit: layer_idx += 0 never advances; 1 checkpoints every layer.
        case("recompute-num-layers-range", Kind::Error, full(dense(), Some("uniform"), Some(0)), full(dense(), Some("uniform"), Some(1))).fix(&[(RECOMPUTE_LAYERS, json!(1))]),
        // PP 1: one chunk of 16 layers. Uniform 17 is clipped to min(0 + 17, 16) = 16, which the fix writes; 16 is exact.
        case(
            "recompute-num-layers-clipped",
            Kind::Warning,
            full(dense(), Some("uniform"), Some(17)),
            full(dense(), Some("uniform"), Some(16)),
        )
        .fix(&[(RECOMPUTE_LAYERS, json!(16))]),
        // MTP with block recompute of 2 layers: megatron-core skips recomputing the MTP layers; the fix is uniform, 1.
        case("mtp-block-recompute-skipped", Kind::Warning, full(mtp(), Some("block"), Some(2)), full(mtp(), Some("uniform"), Some(1))).fix(&[(METHOD, json!("uniform")), (RECOMPUTE_LAYERS, json!(1))]),
        // MTP with uniform recompute of 2 layers: the MTP block asserts recompute_num_layers == 1.
        case("mtp-recompute-uniform-needs-one", Kind::Error, full(mtp(), Some("uniform"), Some(2)), full(mtp(), Some("uniform"), Some(1))).fix(&[(RECOMPUTE_LAYERS, json!(1))]),
        // The A100 has no FP8 tensor cores (no dense_fp8_tflops in the catalogue); the fix is bf16.
        case(
            "precision-unsupported",
            Kind::Error,
            probe(dense(), &[("cluster.gpu", json!("a100-sxm-80gb")), (PRECISION, json!("fp8"))]),
            probe(dense(), &[("cluster.gpu", json!("a100-sxm-80gb")), (PRECISION, json!("bf16"))]),
        )
        .fix(&[(PRECISION, json!("bf16"))]),
        // FP8 at TP 4 with SP, MBS 1: the rank-local token count is seq/TP = 4100/4 = 1025, and 1025 mod 8 = 1. seq
        // must be a multiple of TP·8 = 32: 4128 (1032 = 8·129 tokens). The weights align at TP 4: hidden 2048,
        // QKV out (16 + 2·8)·128/4 = 1024, proj in 2048/4 = 512, fc1 out 2·5632/4 = 2816, fc2 in 5632/4 = 1408 = 16·88.
        case(
            "fp8-dims-not-divisible",
            Kind::Error,
            probe(dense(), &[(PRECISION, json!("fp8")), (TP, json!(4)), (SP, json!(true)), (SEQ, json!(4100))]),
            probe(dense(), &[(PRECISION, json!("fp8")), (TP, json!(4)), (SP, json!(true)), (SEQ, json!(4128))]),
        )
        .fix(&[(SEQ, json!(4128))]),
    ]
}

#[test]
fn codes() {
    run(cases());
}
