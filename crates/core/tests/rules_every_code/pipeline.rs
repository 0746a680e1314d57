//! Pipeline stages, virtual stages, the layer split and the microbatches (arguments.py validate_args,
//! transformer_config.py, transformer_block.py, pipeline_parallel/schedules.py, num_microbatches_calculator.py).

use super::*;

fn pp(stages: u64, edits: &[(&str, Value)]) -> Probe {
    probe(dense(), &[&[(PP, json!(stages))], edits].concat())
}

pub fn cases() -> Vec<Case> {
    let without_gbs = {
        let mut v = plan(dense());
        v["training"].as_object_mut().map(|t| t.remove("global_batch_size"));
        v
    };
    vec![
        // VPP 2 at PP 1: nothing to interleave (the fix unsets it); VPP 1 means no interleaving.
        case("vpp-requires-pp", Kind::Error, probe(dense(), &[(VPP, json!(2))]), probe(dense(), &[(VPP, json!(1))])).fix(&[(VPP, Value::Null)]),
        // 15 layers over PP 2: 15 mod 2 = 1; 16 layers give 8 per stage. The fix: uneven edges, first 8 + last 7 = 15
        // (two stages are the edges alone; the first takes the odd layer).
        case(
            "layers-not-divisible-by-pp",
            Kind::Error,
            probe(set(&dense(), &[("num_layers", json!(15))]), &[(PP, json!(2))]),
            pp(2, &[]),
        )
        .fix(&[(FIRST, json!(8)), (LAST, json!(7))]),
        // PP 2: 8 layers per stage, which do not split into VPP 3 chunks (8 mod 3 = 2). Divisors of 8 nearest 3:
        // 2 and 4, ties go low → 2 (overlap_p2p_comm on, so PP 2 interleaving raises nothing else).
        case(
            "layers-not-divisible-by-vpp",
            Kind::Error,
            pp(2, &[(VPP, json!(3)), (OVERLAP, json!(true))]),
            pp(2, &[(VPP, json!(2)), (OVERLAP, json!(true))]),
        )
        .fix(&[(VPP, json!(2))]),
        // PP 2 with first 10 + last 10 = 20 > 16 layers; first 10 + last 6 = 16 leaves no middle stage to fill.
        case("uneven-stages-too-many-layers", Kind::Error, pp(2, &[(FIRST, json!(10)), (LAST, json!(10))]), pp(2, &[(FIRST, json!(10)), (LAST, json!(6))])),
        // num_layers_in_first_pipeline_stage = 0 at PP 2 (megatron-core: must be > 0; the fix unsets it); 1 is the least.
        case("uneven-stage-zero-layers", Kind::Error, pp(2, &[(FIRST, json!(0))]), pp(2, &[(FIRST, json!(1))])).fix(&[(FIRST, Value::Null)]),
        // PP 3 on 6 GPUs (DP 2, GBS 960): first 8 + last 8 take all 16 layers, the 1 middle stage gets 0; first 8 + last 7 leave it 1.
        case(
            "uneven-stages-empty-middle",
            Kind::Error,
            pp(3, &[(PER_NODE, json!(6)), (GBS, json!(960)), (FIRST, json!(8)), (LAST, json!(8))]),
            pp(3, &[(PER_NODE, json!(6)), (GBS, json!(960)), (FIRST, json!(8)), (LAST, json!(7))]),
        ),
        // A first-stage count at PP 1 has no other stage; at PP 2 the first stage gets 4 layers, the last 12.
        case("uneven-stages-need-pp", Kind::Error, pp(1, &[(FIRST, json!(4))]), pp(2, &[(FIRST, json!(4))])),
        // PP 4, VPP 2 on 8 GPUs: DP 2, GBS 6 → M = 3 microbatches < N = PP = 4 (ValueError). The least valid M is 4,
        // GBS 4·1·2 = 8.
        case(
            "interleaved-microbatches",
            Kind::Error,
            pp(4, &[(VPP, json!(2)), (GBS, json!(6))]),
            pp(4, &[(VPP, json!(2)), (GBS, json!(8))]),
        )
        .fix(&[(GBS, json!(8))]),
        // microbatch_group_size_per_vp_stage = 2 < PP = 4: outside [PP, M] = [4, 4]; the fix is PP, 4.
        case(
            "vpp-microbatch-group-below-pp",
            Kind::Error,
            pp(4, &[(VPP, json!(2)), (GBS, json!(8)), (GROUP, json!(2))]),
            pp(4, &[(VPP, json!(2)), (GBS, json!(8)), (GROUP, json!(4))]),
        )
        .fix(&[(GROUP, json!(4))]),
        // PP 2 with VPP 2 and --no-overlap-p2p-communication: Megatron-LM asserts PP > 2 without the overlap (a warning).
        case("vpp-pp2-needs-overlap-p2p", Kind::Warning, pp(2, &[(VPP, json!(2)), (OVERLAP, json!(false))]), pp(2, &[(VPP, json!(2)), (OVERLAP, json!(true))]))
            .fix(&[(OVERLAP, json!(true))]),
        // No global_batch_size: Megatron-LM's default MBS·DP = 1·8 = 8, written back by the fix.
        case("gbs-default", Kind::Info, Probe::Plan(without_gbs), probe(dense(), &[(GBS, json!(8))])).fix(&[(GBS, json!(8))]),
        // GBS 1001 over MBS·DP = 1·8: 1001 mod 8 = 1; the next multiple is 1008.
        case("gbs-not-divisible", Kind::Error, probe(dense(), &[(GBS, json!(1001))]), probe(dense(), &[(GBS, json!(1008))])).fix(&[(GBS, json!(1008))]),
        // PP 4 on 8 GPUs: DP 2, GBS 4 → 2 microbatches < 4 stages; GBS 8 → 4 microbatches fill them.
        case("few-microbatches", Kind::Warning, pp(4, &[(GBS, json!(4))]), pp(4, &[(GBS, json!(8))])),
        // PP 2 without interleaving: 8 layers per stage could take VPP 2 (an info); with VPP 2 it is interleaved.
        case("pp-without-vpp", Kind::Info, pp(2, &[]), pp(2, &[(VPP, json!(2)), (OVERLAP, json!(true))])),
    ]
}

#[test]
fn codes() {
    run(cases());
}
