//! Experts (transformer_config.py __post_init__, moe_layer.py, moe/experts.py, parallel_state.py).

use super::*;

fn moe_with(fields: &[(&str, Value)]) -> Value {
    set(&moe(), fields)
}

pub fn cases() -> Vec<Case> {
    let dense_etp = |etp: u64| probe(dense(), &[(ETP, json!(etp))]);
    vec![
        // The small MoE model with keys as values (Gemma 4's MoE signature) and selective recompute of layernorm: Megatron
        // Bridge's Gemma4ModelProvider refuses it; recomputing core_attn only is fine. The fix keeps the other modules.
        case(
            "gemma4-moe-unsupported-setting",
            Kind::Error,
            probe(moe_with(&[("attention_k_eq_v", json!(true))]), &[("training.recompute_modules", json!(["layernorm", "core_attn"]))]),
            probe(moe_with(&[("attention_k_eq_v", json!(true))]), &[("training.recompute_modules", json!(["core_attn"]))]),
        )
        .fix(&[("training.recompute_modules", json!(["core_attn"]))]),
        // EP 2 on a dense model has no experts to place; the fix is EP 1.
        case("ep-requires-moe", Kind::Error, probe(dense(), &[(EP, json!(2))]), probe(dense(), &[(EP, json!(1))])).fix(&[(EP, json!(1))]),
        // ETP 2, given, on a dense model at TP 1: no effect (an info). ETP 1 given is the default's value.
        case("etp-without-moe", Kind::Info, dense_etp(2), dense_etp(1)),
        // 64 experts over EP 3 (24 GPUs, DP 24, GBS 960 = 24·40): 64 mod 3 = 1. Divisors of 64 nearest 3: 2 and 4, ties go low: 2.
        // EP 4 on 24 GPUs holds 16 experts per rank.
        case(
            "experts-not-divisible-by-ep",
            Kind::Error,
            probe(moe(), &[(EP, json!(3)), (NODES, json!(3)), (GBS, json!(960))]),
            probe(moe(), &[(EP, json!(4)), (NODES, json!(3)), (GBS, json!(960))]),
        )
        .fix(&[(EP, json!(2))]),
        // 4 experts, top-8: 8 > 4 routing slots cannot be filled; top-4 uses every expert.
        case(
            "topk-exceeds-experts",
            Kind::Error,
            probe(moe_with(&[("num_moe_experts", json!(4)), ("moe_router_topk", json!(8))]), &[]),
            probe(moe_with(&[("num_moe_experts", json!(4)), ("moe_router_topk", json!(4))]), &[]),
        ),
        // Top-1 with softmax after the top-k (moe_router_pre_softmax false): the one weight is always 1.
        case(
            "topk-one-needs-pre-softmax",
            Kind::Error,
            probe(moe_with(&[("moe_router_topk", json!(1))]), &[]),
            probe(moe_with(&[("moe_router_topk", json!(1)), ("moe_router_pre_softmax", json!(true))]), &[]),
        ),
        // Linear biases with ETP 2 (EP 4: 2·4 = 8 GPUs): grouped experts support biases only at ETP 1.
        case(
            "moe-bias-needs-etp1",
            Kind::Error,
            probe(moe_with(&[("add_bias_linear", json!(true))]), &[(EP, json!(4)), (ETP, json!(2))]),
            probe(moe_with(&[("add_bias_linear", json!(true))]), &[(EP, json!(4)), (ETP, json!(1))]),
        )
        .fix(&[(ETP, json!(1))]),
        // TP 2 (SP), EP 2 with ETP not given: megatron-core takes ETP = TP = 2, Bridge 1 (EP > 1): an info whose fix
        // writes ETP 1. Given as 2, both launchers build the same mesh.
        case(
            "etp-default",
            Kind::Info,
            probe(moe(), &[(TP, json!(2)), (SP, json!(true)), (EP, json!(2)), (ETP, Value::Null)]),
            probe(moe(), &[(TP, json!(2)), (SP, json!(true)), (EP, json!(2)), (ETP, json!(2))]),
        )
        .fix(&[(ETP, json!(1))]),
        // moe_ffn_hidden_size 510 over ETP 4 (EP 2: 4·2 = 8 GPUs): 510 mod 4 = 2. The fix is the divisor of 510 = 2·3·5·17
        // nearest 4 among those that also divide 8/(PP·EP) = 4, so expert DP stays whole: 1 and 2 → 2 (3 and 5 divide
        // 510 but not 4). The silent plan is 512 = 4·128.
        case(
            "moe-ffn-not-divisible-by-etp",
            Kind::Error,
            probe(moe_with(&[("moe_ffn_hidden_size", json!(510))]), &[(EP, json!(2)), (ETP, json!(4))]),
            probe(moe(), &[(EP, json!(2)), (ETP, json!(4))]),
        )
        .fix(&[(ETP, json!(2))]),
    ]
}

#[test]
fn codes() {
    run(cases());
}
