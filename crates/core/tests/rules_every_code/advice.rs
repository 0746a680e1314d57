//! The source guide's tables and notes (seed: Minimum GPU Count, Scaling above the minimum, Decision by Sequence
//! Length, Decision by Model Size, Pitfall 7; shared/seed/NOTES.md for the lcm).

use super::*;

/// The MoE model with 48 experts (divisible by 4 and by 6) at TP 4 with SP on 3 nodes of 8 (DP 6, GBS 960 = 6·160).
fn moe48_tp4(ep: u64) -> Probe {
    probe(set(&moe(), &[("num_moe_experts", json!(48))]), &[(TP, json!(4)), (SP, json!(true)), (EP, json!(ep)), (NODES, json!(3)), (GBS, json!(960))])
}

pub fn cases() -> Vec<Case> {
    vec![
        // TP 8 on 16 GPUs: min_gpus = PP·max(TP·CP, EP·ETP) = 1·max(8, 8) = 8, and 16 = 2·8 gives DP 2. On 8 GPUs the
        // world is the minimum (DP 1).
        case(
            "world-exceeds-need",
            Kind::Info,
            probe(dense(), &[(TP, json!(8)), (NODES, json!(2))]),
            probe(dense(), &[(TP, json!(8)), (NODES, json!(1))]),
        ),
        // EP 8 on an MoE model: the guide's min_gpus = 1·max(1·1, 8·1) = 8 is worth saying; at EP = ETP = 1 it is not.
        case("min-gpus", Kind::Info, probe(moe(), &[(EP, json!(8))]), probe(moe(), &[])),
        // TP·CP = 4 and EP·ETP = 6: max = 6, but Megatron needs a multiple of lcm(4, 6) = 12 (24 GPUs are one).
        // EP 4: lcm(4, 4) = 4 = max.
        case("min-gpus-lcm", Kind::Warning, moe48_tp4(6), moe48_tp4(4)),
        // seq 8192 is in the guide's 8K–32K row (add CP = 2); with CP 2 the advice is taken (8192 mod 2·2 = 0).
        case(
            "seq-length-advice",
            Kind::Info,
            probe(dense(), &[(SEQ, json!(8192))]),
            probe(dense(), &[(SEQ, json!(8192)), (CP, json!(2))]),
        ),
        // The dense model (0.83B parameters: < 1B, "DP only") gets a row of the model-size table; every model does
        // (see model_size_advice_fires_on_every_plan), so there is no silent plan.
        Case { code: "model-size-advice", kind: Kind::Info, trigger: probe(dense(), &[]), silent: None, fix: Vec::new() },
        // TP 2: TP communication overlap needs CUDA_DEVICE_MAX_CONNECTIONS=1; TP 1 (and CP 1) has none to overlap.
        case(
            "cuda-device-max-connections",
            Kind::Info,
            probe(dense(), &[(TP, json!(2))]),
            probe(dense(), &[(TP, json!(1))]),
        ),
    ]
}

#[test]
fn codes() {
    run(cases());
}
