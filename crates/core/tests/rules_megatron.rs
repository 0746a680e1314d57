//! Megatron-exact rules: each case derived by hand from the Megatron-LM / megatron-core / Megatron Bridge source
//! cited in the rules table (see /work/research/megatron-rules.md for the line references).

mod common;
use common::*;
use meshplan_core::{Diagnostic, Report, Severity};
use serde_json::{Value, json};

fn find<'a>(r: &'a Report, code: &str) -> Option<&'a Diagnostic> {
    r.diagnostics.iter().find(|d| d.code == code)
}

fn applied(d: &Diagnostic, path: &str) -> Option<Value> {
    d.apply.iter().find(|a| a.path == path).map(|a| a.value.clone())
}

/// 24 heads, 6 query groups: TP = 3 divides the heads, the groups, ffn 4608 and hidden 1536.
fn tp3_model() -> Value {
    json!({"num_layers": 16, "hidden_size": 1536, "ffn_hidden_size": 4608, "num_attention_heads": 24,
           "num_query_groups": 6, "kv_channels": 64, "vocab_size": 32000, "gated_linear_unit": true})
}

const SEQ: &str = "training.seq_length";

#[test]
fn sp_cp_sequence_rule_is_cp_times_lcm_2_tp() {
    // TP=4, CP=2, SP on 8 GPUs, seq 4100: 4100 mod 2·CP=4 = 0, so the CP rule holds, but the CP-local share
    // 4100/2 = 2050 mod TP=4 = 2: the SP scatter fails. Needed multiple CP·lcm(2,4) = 8; next multiple 4104.
    let r = P { tp: 4, cp: 2, seq: 4100, ..P::new(small_dense(), 8) }.run();
    assert!(find(&r, "cp-seq-not-divisible").is_none(), "{:?}", codes(&r));
    let d = find(&r, "sp-seq-not-divisible").expect("sp rule fires");
    assert!(d.is_error() && d.message.contains("2050") && d.message.contains("4100"), "{}", d.message);
    assert_eq!(applied(d, SEQ), Some(json!(4104)));
    // 4104/2 = 2052 = 4·513: neither rule.
    let r = P { tp: 4, cp: 2, seq: 4104, ..P::new(small_dense(), 8) }.run();
    assert!(find(&r, "sp-seq-not-divisible").is_none() && find(&r, "cp-seq-not-divisible").is_none(), "{:?}", codes(&r));
}

#[test]
fn cp_fix_also_satisfies_sp_with_odd_tp() {
    // TP=3, CP=2, SP on 6 GPUs, seq 4098: 4098 mod 4 = 2, so the CP rule fires; 4098 mod CP·TP=6 = 0, so SP holds.
    // The fix must satisfy both: lcm(2·CP, CP·TP) = lcm(4, 6) = 12, next multiple 342·12 = 4104
    // (4100, the next multiple of 4 alone, gives 2050 per CP rank, not a multiple of 3).
    let r = P { tp: 3, cp: 2, seq: 4098, ..P::new(tp3_model(), 6) }.run();
    assert!(find(&r, "sp-seq-not-divisible").is_none(), "{:?}", codes(&r));
    let d = find(&r, "cp-seq-not-divisible").expect("cp rule fires");
    assert_eq!(applied(d, SEQ), Some(json!(4104)));
    let r = P { tp: 3, cp: 2, seq: 4104, ..P::new(tp3_model(), 6) }.run();
    assert!(find(&r, "sp-seq-not-divisible").is_none() && find(&r, "cp-seq-not-divisible").is_none(), "{:?}", codes(&r));
    // Without SP only 2·CP matters: seq 4100 mod 4 = 0 is fine even though 2050 mod 3 ≠ 0.
    let r = P { tp: 3, cp: 2, seq: 4100, sp: Some(false), ..P::new(tp3_model(), 6) }.run();
    assert!(find(&r, "sp-seq-not-divisible").is_none() && find(&r, "cp-seq-not-divisible").is_none(), "{:?}", codes(&r));
}

#[test]
fn sp_without_cp_needs_seq_multiple_of_tp() {
    // TP=4, CP=1, SP: 4098 mod 4 = 2 → fires, next multiple of 4 is 4100.
    let r = P { tp: 4, seq: 4098, ..P::new(small_dense(), 8) }.run();
    let d = find(&r, "sp-seq-not-divisible").expect("fires");
    assert_eq!(applied(d, SEQ), Some(json!(4100)));
    assert_eq!(d.severity, Severity::Error);
    let r = P { tp: 4, seq: 4100, ..P::new(small_dense(), 8) }.run();
    assert!(find(&r, "sp-seq-not-divisible").is_none());
}

fn run_with(p: &P, section: &str, key: &str, v: Value) -> Report {
    let mut j = p.json();
    j[section][key] = v;
    meshplan_core::plan_value(&j).expect("plan parses")
}

#[test]
fn interleaved_microbatch_rule_follows_the_schedule() {
    // PP=4, VPP=2 on 8 GPUs: DP = 8/4 = 2, MBS 1. Default N = PP = 4.
    // GBS 6 → M = 3 < N = 4: ValueError. Smallest valid M ≥ 4 is 4 → GBS 8.
    let base = P { pp: 4, vpp: Some(2), ..P::new(small_dense(), 8) };
    let r = P { gbs: 6, ..base.clone() }.run();
    let d = find(&r, "interleaved-microbatches").expect("fires");
    assert_eq!(applied(d, "training.global_batch_size"), Some(json!(8)));
    // GBS 8 → M = 4 = N: fine.
    assert!(find(&P { gbs: 8, ..base.clone() }.run(), "interleaved-microbatches").is_none());
    // N = 8, GBS 24 → M = 12: 12 mod 8 = 4 ≥ PP = 4, which megatron-core accepts (not a multiple of N).
    let r = run_with(&P { gbs: 24, ..base.clone() }, "parallelism", "microbatch_group_size_per_vp_stage", json!(8));
    assert!(find(&r, "interleaved-microbatches").is_none(), "{:?}", codes(&r));
    // N = 8, GBS 20 → M = 10: 10 mod 8 = 2 < 4 → RuntimeError. Next valid M: 12 (remainder 4) → GBS 24.
    let r = run_with(&P { gbs: 20, ..base.clone() }, "parallelism", "microbatch_group_size_per_vp_stage", json!(8));
    let d = find(&r, "interleaved-microbatches").expect("fires");
    assert!(d.message.contains("10 mod 8 = 2"), "{}", d.message);
    assert_eq!(applied(d, "training.global_batch_size"), Some(json!(24)));
    // N = 2 < PP = 4: out of [PP, M].
    let r = run_with(&P { gbs: 8, ..base.clone() }, "parallelism", "microbatch_group_size_per_vp_stage", json!(2));
    let d = find(&r, "vpp-microbatch-group-below-pp").expect("fires");
    assert!(d.is_error());
    assert_eq!(applied(d, "parallelism.microbatch_group_size_per_vp_stage"), Some(json!(4)));
}

#[test]
fn interleaving_at_pp2_warns_for_megatron_lm() {
    // PP=2, VPP=2 on 8 GPUs: 16 layers → 8 per stage → 4 per chunk; DP 4, GBS 1024 → M = 256 (a multiple of 2).
    let p = P { pp: 2, vpp: Some(2), ..P::new(small_dense(), 8) };
    let r = p.run();
    let d = find(&r, "vpp-pp2-needs-overlap-p2p").expect("warns");
    assert_eq!(d.severity, Severity::Warning);
    assert!(d.message.contains("Megatron-LM") && d.message.contains("Bridge"), "{}", d.message);
    assert_eq!(applied(d, "parallelism.overlap_p2p_comm"), Some(json!(true)));
    assert!(r.valid, "{:?}", errors(&r));
    let r = run_with(&p, "parallelism", "overlap_p2p_comm", json!(true));
    assert!(find(&r, "vpp-pp2-needs-overlap-p2p").is_none());
    // PP = 4 (> 2): Megatron-LM accepts it without the overlap.
    let r = P { pp: 4, vpp: Some(2), ..P::new(small_dense(), 8) }.run();
    assert!(find(&r, "vpp-pp2-needs-overlap-p2p").is_none());
}
