//! The source guide's worked examples and rules (../shared/seed/parallelism-strategies.md), as tests.

mod common;
use common::*;

/// The guide's "Minimum GPU Count" table: (PP, TP, CP, EP, ETP) → PP·max(TP·CP, EP·ETP), and its "Wrong" column,
/// the full product PP·TP·CP·EP·ETP.
#[test]
fn min_gpus_table_rows() {
    // Each row worked by hand: e.g. PP=2, TP=2, CP=1, EP=8, ETP=1 → 2·max(2·1, 8·1) = 16, the wrong product 32.
    let rows = [(1, 2, 1, 8, 1, 8, 16), (1, 4, 1, 8, 1, 8, 32), (1, 2, 2, 8, 1, 8, 32), (1, 2, 4, 8, 1, 8, 64), (2, 2, 1, 8, 1, 16, 32), (1, 2, 1, 4, 2, 8, 16)];
    for (pp, tp, cp, ep, etp, want, wrong) in rows {
        let mut p = P::new(small_moe(), want);
        (p.pp, p.tp, p.cp, p.ep, p.etp) = (pp, tp, cp, ep, Some(etp));
        let r = p.run();
        assert_eq!(r.derived.min_gpus, want, "row {:?}", (pp, tp, cp, ep, etp));
        assert!(r.valid, "row {:?} errors {:?}", (pp, tp, cp, ep, etp), errors(&r));
        assert_eq!(r.derived.data_parallel_size, want / (tp * pp * cp));
        assert_eq!(r.derived.expert_data_parallel_size, want / (pp * ep * etp));
        // The min-gpus info names the guide's "Wrong" column as what the full product would over-allocate.
        let info = r.diagnostics.iter().find(|d| d.code == "min-gpus").expect("min-gpus info");
        assert!(info.message.ends_with(&format!("= {want}; the full product PP·TP·CP·EP·ETP = {wrong} would over-allocate")), "{}", info.message);
    }
}

/// "Scaling above the minimum": TP=2, EP=8 at 8/16/32 GPUs → dense DP 4/8/16, expert DP 1/2/4.
#[test]
fn scaling_above_minimum() {
    for (gpus, dp, edp) in [(8, 4, 1), (16, 8, 2), (32, 16, 4)] {
        let mut p = P::new(small_moe(), gpus);
        (p.tp, p.ep) = (2, 8);
        let r = p.run();
        assert!(r.valid, "{gpus}: {:?}", errors(&r));
        assert_eq!((r.derived.world_size, r.derived.data_parallel_size, r.derived.expert_data_parallel_size), (gpus, dp, edp));
    }
}

#[test]
fn seed_pitfalls_are_errors() {
    let dense = small_dense;
    // (code, plan, what the message must say with the plan's numbers, the nearest valid value the fix must name).
    let cases: Vec<(&str, P, &str, &str)> = vec![
        ("sp-requires-tp", P { sp: Some(true), ..P::new(dense(), 8) }, "sequence_parallel = true with tensor_model_parallel_size = 1", "set sequence_parallel = false"),
        // seq 4097 over 2·CP = 4 chunks: 4097 mod 4 = 1; the next multiple of 4 is 4100.
        ("cp-seq-not-divisible", P { cp: 2, seq: 4097, ..P::new(dense(), 8) }, "(4097 mod 4 = 1)", "set seq_length to 4100"),
        ("ep-requires-moe", P { ep: 2, ..P::new(dense(), 8) }, "expert_model_parallel_size = 2 on a dense model", "set expert_model_parallel_size = 1"),
        // 64 experts over EP 3; the divisors of 64 nearest 3 are 2 and 4, ties go low.
        ("experts-not-divisible-by-ep", P { ep: 3, ..P::new(small_moe(), 24) }, "num_moe_experts = 64 is not divisible by expert_model_parallel_size = 3", "set expert_model_parallel_size to 2"),
        ("vpp-requires-pp", P { vpp: Some(2), ..P::new(dense(), 8) }, "virtual_pipeline_model_parallel_size = 2 with pipeline_model_parallel_size = 1", "unset virtual_pipeline_model_parallel_size"),
        // 8 GPUs over TP·PP·CP = 3; TPs dividing 8 and the widths: 1, 2, 4, 8 → 2 (tied with 4, ties go low).
        ("world-not-divisible-dense", P { tp: 3, ..P::new(dense(), 8) }, "world size 8 is not a multiple of TP·PP·CP = 3·1·1 = 3", "set tensor_model_parallel_size to 2"),
        // 24 heads, 6 query groups, TP = 4: 6 mod 4 = 2 and 4 mod 6 = 4, neither divides (Megatron's exact rule).
        ("query-groups-not-divisible-by-tp", P { tp: 4, ..P::new(gqa_24_6(), 8) }, "(6 mod 4 = 2, 4 mod 6 = 4)", "set tensor_model_parallel_size to 2"),
        // GBS 1001 over MBS·DP = 1·8 = 8; the next multiple is 1008.
        ("gbs-not-divisible", P { gbs: 1001, ..P::new(dense(), 8) }, "global_batch_size = 1001 is not divisible by micro_batch_size × data_parallel_size = 1 × 8 = 8", "set global_batch_size to 1008"),
        // 8 GPUs over ETP·EP·PP = 16; the divisor of 8 nearest 16 is 8.
        ("world-not-divisible-expert", P { ep: 16, ..P::new(small_moe(), 8) }, "world size 8 is not a multiple of ETP·EP·PP = 1·16·1 = 16", "set expert_model_parallel_size to 8"),
    ];
    for (code, p, message, fix) in cases {
        let r = p.run();
        assert!(!r.valid, "{code} should make the plan invalid");
        let d = r.diagnostics.iter().find(|d| d.code == code).unwrap_or_else(|| panic!("{code} missing: {:?}", codes(&r)));
        assert!(d.is_error(), "{code}");
        assert!(d.message.contains(message), "{code}: {}", d.message);
        assert!(d.fix.contains(fix), "{code}: {}", d.fix);
    }
}

#[test]
fn fixes_name_the_nearest_valid_value() {
    // TP=3 on 8 GPUs: valid TPs divide 8 (1, 2, 4, 8); 2 and 4 are equally near, the fix takes 2.
    let r = P { tp: 3, ..P::new(small_dense(), 8) }.run();
    let d = r.diagnostics.iter().find(|d| d.code == "world-not-divisible-dense").unwrap();
    assert_eq!(d.apply[0].value, serde_json::json!(2));
    // GBS 1001 with DP 8, MBS 1: the next multiple of 8 is 1008.
    let r = P { gbs: 1001, ..P::new(small_dense(), 8) }.run();
    let d = r.diagnostics.iter().find(|d| d.code == "gbs-not-divisible").unwrap();
    assert!(d.fix.contains("1008"), "{}", d.fix);
    // seq 4097 with CP=2: next multiple of 4 is 4100.
    let r = P { cp: 2, seq: 4097, ..P::new(small_dense(), 8) }.run();
    let d = r.diagnostics.iter().find(|d| d.code == "cp-seq-not-divisible").unwrap();
    assert_eq!(d.apply[0].value, serde_json::json!(4100));
}

#[test]
fn tp_across_nvlink_is_a_warning() {
    let r = P { tp: 8, per_node: 4, domain: Some(4), ..P::new(small_dense(), 16) }.run();
    let d = r.diagnostics.iter().find(|d| d.code == "tp-crosses-nvlink").expect("warning");
    assert_eq!(d.severity, meshplan_core::Severity::Warning);
    // 16 GPUs, TP=8, domains of 4: both TP groups [0..8) and [8..16) span 2 domains.
    assert!(d.message.starts_with("2 of 2"), "{}", d.message);
}

#[test]
fn moe_with_tp_needs_sp() {
    let r = P { tp: 2, ep: 8, sp: Some(false), ..P::new(small_moe(), 8) }.run();
    assert!(errors(&r).contains(&"moe-tp-requires-sp"));
}

#[test]
fn interleaved_schedule_needs_microbatch_multiple_of_pp() {
    // 16 layers, PP=4, VPP=2 on 8 GPUs: DP=2; GBS 6 → 3 microbatches, not a multiple of PP=4.
    let r = P { pp: 4, vpp: Some(2), gbs: 6, ..P::new(small_dense(), 8) }.run();
    assert!(errors(&r).contains(&"interleaved-microbatches"), "{:?}", codes(&r));
    // GBS 8 → 4 microbatches: fine.
    let r = P { pp: 4, vpp: Some(2), gbs: 8, ..P::new(small_dense(), 8) }.run();
    assert!(!codes(&r).contains(&"interleaved-microbatches"));
}

#[test]
fn microbatches_and_bubble() {
    // 64 GPUs, TP=4, PP=4: DP=4; GBS 512, MBS 1 → m = 128; bubble (4−1)/128.
    let p = P { tp: 4, pp: 4, gbs: 512, ..P::new(small_dense(), 64) };
    let r = p.run();
    assert_eq!(r.derived.num_microbatches, 128);
    assert!((r.derived.pipeline_bubble_fraction - 3.0 / 128.0).abs() < 1e-12);
    // VPP=2 halves it: 3/256.
    let r = P { vpp: Some(2), ..p }.run();
    assert!((r.derived.pipeline_bubble_fraction - 3.0 / 256.0).abs() < 1e-12);
}

#[test]
fn deepseek_v3_guide_example_needs_1024_gpus() {
    // NOTES.md: TP=2, PP=16, EP=64 needs PP·EP·ETP = 16·64·1 = 1,024 GPUs, not 256; 61 layers need uneven stages.
    let plan = serde_json::json!({"model": "deepseek-v3", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 32},
        "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 1024, "use_distributed_optimizer": true},
        "parallelism": {"tensor_model_parallel_size": 2, "pipeline_model_parallel_size": 16, "expert_model_parallel_size": 64,
                        "expert_tensor_parallel_size": 1, "sequence_parallel": true}});
    let r = meshplan_core::plan_value(&plan).unwrap();
    let e = errors(&r);
    assert!(e.contains(&"world-not-divisible-expert"), "{e:?}");
    assert!(e.contains(&"layers-not-divisible-by-pp"), "{e:?}");
    assert_eq!(r.derived.min_gpus, 1024);
}

/// 24 heads, 6 query groups; hidden 1536 and ffn 4608 divide by 2, 3, 4, 6, 8, 12.
fn gqa_24_6() -> serde_json::Value {
    serde_json::json!({"num_layers": 16, "hidden_size": 1536, "ffn_hidden_size": 4608, "num_attention_heads": 24,
           "num_query_groups": 6, "kv_channels": 64, "vocab_size": 32000, "gated_linear_unit": true})
}

#[test]
fn query_groups_may_be_a_divisor_of_tp() {
    // megatron-core: num_query_groups must be a multiple OR a divisor of TP. 8 groups at TP = 16: 16 mod 8 = 0, so
    // each KV head is replicated on 16/8 = 2 ranks; valid, with an info.
    let r = P { tp: 16, per_node: 16, domain: Some(16), ..P::new(small_dense(), 16) }.run();
    assert!(!codes(&r).contains(&"query-groups-not-divisible-by-tp"), "{:?}", codes(&r));
    let d = r.diagnostics.iter().find(|d| d.code == "query-groups-replicated").expect("info");
    assert_eq!(d.severity, meshplan_core::Severity::Info);
    assert!(d.message.contains("16/8 = 2"), "{}", d.message);
    assert!(r.valid, "{:?}", errors(&r));
    // 6 groups at TP = 4 on 8 GPUs: neither divides. TPs dividing 24 heads and 8 GPUs (TP·PP·CP must divide 8):
    // 1, 2, 4, 8; of those a multiple or divisor of 6: 1, 2. Nearest to 4 is 2.
    let r = P { tp: 4, ..P::new(gqa_24_6(), 8) }.run();
    let d = r.diagnostics.iter().find(|d| d.code == "query-groups-not-divisible-by-tp").expect("error");
    assert!(d.message.contains("6 mod 4 = 2"), "{}", d.message);
    assert_eq!(d.apply[0].value, serde_json::json!(2));
    // TP = 12 on 12 GPUs: 12 mod 6 = 0 → replicated twice, valid.
    let r = P { tp: 12, per_node: 12, domain: Some(12), ..P::new(gqa_24_6(), 12) }.run();
    assert!(!codes(&r).contains(&"query-groups-not-divisible-by-tp") && codes(&r).contains(&"query-groups-replicated"), "{:?}", codes(&r));
}
