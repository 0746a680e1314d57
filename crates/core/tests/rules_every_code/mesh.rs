//! World size against both meshes, and the rank order (megatron/core/parallel_state.py initialize_model_parallel,
//! RankGenerator).

use super::*;
use meshplan_core::layout::{self, MAX_LAYOUT_WORLD, MeshSizes};

const ONE: MeshSizes = MeshSizes { tp: 1, pp: 1, cp: 1, ep: 1, etp: 1 };

fn diagnostic<T>(r: Result<T, meshplan_core::Diagnostic>) -> Option<Value> {
    r.err().map(|d| serde_json::to_value(d).unwrap_or_default())
}

pub fn cases() -> Vec<Case> {
    vec![
        // 8 GPUs at TP·PP·CP = 3·1·1: 8 mod 3 = 2, dense DP 8/3 is not whole. The TPs that divide 8/(PP·CP) = 8 and
        // the widths (16 heads, 8 groups, ffn 5632 = 2⁹·11) are 1, 2, 4, 8; 2 and 4 are both 1 from 3, ties go low: 2.
        case("world-not-divisible-dense", Kind::Error, probe(dense(), &[(TP, json!(3))]), probe(dense(), &[(TP, json!(2))])).fix(&[(TP, json!(2))]),
        // 8 GPUs at ETP·EP·PP = 1·16·1 = 16: 8 mod 16 = 8. The fix: the divisor of 8/(PP·ETP) = 8 nearest 16, i.e. 8.
        case("world-not-divisible-expert", Kind::Error, probe(moe(), &[(EP, json!(16))]), probe(moe(), &[(EP, json!(8))])).fix(&[(EP, json!(8))]),
        // One node of 8 past the listing limit (limits.rs: 2^16 ranks): 8·(2^16/8 + 1) = 2^16 + 8 ranks, a warning —
        // the layout keeps its order and crossings without the group lists. The silent plan stays at 1,024 nodes.
        case(
            "world-too-large-to-lay-out",
            Kind::Warning,
            probe(dense(), &[(NODES, json!(MAX_LAYOUT_WORLD / 8 + 1))]),
            probe(dense(), &[(NODES, json!(1024))]),
        ),
        // "xp" is no dimension of RankGenerator (tp, cp, ep, dp, pp).
        case("order-invalid", Kind::Error, probe(dense(), &[(ORDER, json!("tp-cp-xp-dp-pp"))]), probe(dense(), &[(ORDER, json!("tp-cp-ep-dp-pp"))])),
        // "tp-cp-ep-pp" leaves out dp; RankGenerator appends only size-1 dimensions and DP = 8 on 8 GPUs. On one GPU
        // DP = 1, and the same order is completed to tp-cp-ep-pp-dp.
        case(
            "order-missing-dimension",
            Kind::Error,
            probe(dense(), &[(ORDER, json!("tp-cp-ep-pp"))]),
            probe(dense(), &[(ORDER, json!("tp-cp-ep-pp")), (PER_NODE, json!(1))]),
        ),
        // PP 2, EP 4 on 8 GPUs: dense DP = 8/(1·2·1) = 4, expert DP = 8/(1·4·2) = 1. An order not ending in "pp" needs
        // them equal. Ending in pp, both meshes put PP at stride 4 (dense 1·1·1·4, expert 1·1·4·1): accepted.
        case(
            "order-pp-not-last",
            Kind::Error,
            probe(moe(), &[(PP, json!(2)), (EP, json!(4)), (ORDER, json!("tp-cp-ep-pp-dp"))]),
            probe(moe(), &[(PP, json!(2)), (EP, json!(4)), (ORDER, json!("tp-cp-ep-dp-pp"))]),
        ),
        // TP 2 (SP), PP 2, EP 2, ETP 1 on 8 GPUs: DP = 8/4 = 2 = expert DP 8/(1·2·2), so pp need not be last. With
        // "tp-pp-cp-ep-dp" PP sits right after tp: stride TP = 2 in the dense mesh, ETP = 1 in the expert mesh —
        // different PP groups. With "tp-cp-ep-pp-dp" the strides are TP·CP·1 = 2 and ETP·1·EP = 2: the same groups.
        case(
            "order-pp-groups-differ",
            Kind::Error,
            probe(moe(), &[(TP, json!(2)), (SP, json!(true)), (PP, json!(2)), (EP, json!(2)), (ORDER, json!("tp-pp-cp-ep-dp"))]),
            probe(moe(), &[(TP, json!(2)), (SP, json!(true)), (PP, json!(2)), (EP, json!(2)), (ORDER, json!("tp-cp-ep-pp-dp"))]),
        ),
        // The plan reader refuses sizes below 1, so a zero reaches only the layout API: TP 0 against TP 1.
        case(
            "mesh-size-zero",
            Kind::Error,
            Probe::Call(|| diagnostic(layout::build_layout(8, &MeshSizes { tp: 0, ..ONE }, layout::DEFAULT_ORDER, 8))),
            Probe::Call(|| diagnostic(layout::build_layout(8, &ONE, layout::DEFAULT_ORDER, 8))),
        ),
        // A world of 8 has ranks 0..=7: rank 8 is outside, rank 7 the last one inside.
        case(
            "rank-out-of-range",
            Kind::Error,
            Probe::Call(|| diagnostic(layout::coordinates(8, 8, &ONE, layout::DEFAULT_ORDER))),
            Probe::Call(|| diagnostic(layout::coordinates(7, 8, &ONE, layout::DEFAULT_ORDER))),
        ),
    ]
}

#[test]
fn codes() {
    run(cases());
}
