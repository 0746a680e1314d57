//! Sequence parallelism, context parallelism and the sequence length (model_parallel_config.py, moe_layer.py,
//! arguments.py validate_args, tensor_parallel/mappings.py).

use super::*;

fn positions(kind: &str, max: Option<u64>) -> Value {
    let mut m = set(&dense(), &[("position_embedding_type", json!(kind))]);
    if let Some(max) = max {
        m["max_position_embeddings"] = json!(max);
    }
    m
}

pub fn cases() -> Vec<Case> {
    vec![
        // SP splits activations over the TP group, which has one rank at TP 1.
        case("sp-requires-tp", Kind::Error, probe(dense(), &[(SP, json!(true))]), probe(dense(), &[(SP, json!(false))])).fix(&[(SP, json!(false))]),
        // An MoE model at TP 2 without SP: MoELayer.forward raises at the first step (EP = 1 here).
        case(
            "moe-tp-requires-sp",
            Kind::Error,
            probe(moe(), &[(TP, json!(2)), (SP, json!(false))]),
            probe(moe(), &[(TP, json!(2)), (SP, json!(true))]),
        )
        .fix(&[(SP, json!(true))]),
        // CP 2: seq must divide by 2·CP = 4; 4097 mod 4 = 1. Without SP the needed multiple is 4 alone: 4100.
        case(
            "cp-seq-not-divisible",
            Kind::Error,
            probe(dense(), &[(CP, json!(2)), (SEQ, json!(4097))]),
            probe(dense(), &[(CP, json!(2)), (SEQ, json!(4100))]),
        )
        .fix(&[(SEQ, json!(4100))]),
        // TP 4 with SP, CP 1: each rank scatters seq/TP tokens; 4098 mod 4 = 2. Next multiple of CP·TP = 4: 4100.
        case(
            "sp-seq-not-divisible",
            Kind::Error,
            probe(dense(), &[(TP, json!(4)), (SP, json!(true)), (SEQ, json!(4098))]),
            probe(dense(), &[(TP, json!(4)), (SP, json!(true)), (SEQ, json!(4100))]),
        )
        .fix(&[(SEQ, json!(4100))]),
        // Learned absolute positions: a table of max_position_embeddings = 2048 rows cannot index position 4096.
        case(
            "seq-exceeds-max-position",
            Kind::Error,
            probe(positions("learned_absolute", Some(2048)), &[(SEQ, json!(4096))]),
            probe(positions("learned_absolute", Some(2048)), &[(SEQ, json!(2048))]),
        ),
        // RoPE with max_position_embeddings 2048 < seq 4096: Megatron-LM asserts, Bridge does not check (a warning).
        case(
            "seq-exceeds-max-position-mlm",
            Kind::Warning,
            probe(positions("rope", Some(2048)), &[(SEQ, json!(4096))]),
            probe(positions("rope", Some(2048)), &[(SEQ, json!(2048))]),
        ),
        // One MTP module with learned absolute positions: Megatron-LM asserts rope or none; the fix is rope.
        case(
            "mtp-position-embedding-mlm",
            Kind::Warning,
            probe(set(&positions("learned_absolute", None), &[("mtp_num_layers", json!(1))]), &[]),
            probe(set(&positions("rope", None), &[("mtp_num_layers", json!(1))]), &[]),
        )
        .fix(&[("model.position_embedding_type", json!("rope"))]),
    ]
}

#[test]
fn codes() {
    run(cases());
}
