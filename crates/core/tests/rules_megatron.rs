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
fn interleaving_at_pp2_warns_only_with_p2p_overlap_turned_off() {
    // PP=2, VPP=2 on 8 GPUs: 16 layers → 8 per stage → 4 per chunk; DP 4, GBS 1024 → M = 256 (a multiple of 2).
    // Megatron-LM's overlap_p2p_comm is on unless --no-overlap-p2p-communication (arguments.py:3118, store_false), and
    // validate_args asserts PP > 2 for the interleaved schedule only when it is off (arguments.py:1000-1009).
    let p = P { pp: 2, vpp: Some(2), ..P::new(small_dense(), 8) };
    assert!(find(&p.run(), "vpp-pp2-needs-overlap-p2p").is_none(), "unset: on by default");
    let r = run_with(&p, "parallelism", "overlap_p2p_comm", json!(false));
    let d = find(&r, "vpp-pp2-needs-overlap-p2p").expect("warns");
    assert_eq!(d.severity, Severity::Warning);
    assert!(d.message.contains("Megatron-LM") && d.fix.contains("--no-overlap-p2p-communication"), "{} / {}", d.message, d.fix);
    assert_eq!(applied(d, "parallelism.overlap_p2p_comm"), Some(json!(true)));
    assert!(r.valid, "{:?}", errors(&r));
    let r = run_with(&p, "parallelism", "overlap_p2p_comm", json!(true));
    assert!(find(&r, "vpp-pp2-needs-overlap-p2p").is_none());
    // PP = 4 (> 2): Megatron-LM accepts it without the overlap.
    let r = run_with(&P { pp: 4, vpp: Some(2), ..P::new(small_dense(), 8) }, "parallelism", "overlap_p2p_comm", json!(false));
    assert!(find(&r, "vpp-pp2-needs-overlap-p2p").is_none());
}

#[test]
fn moe_tp_needs_sp_even_without_ep() {
    // TP=2, EP=1 on 8 GPUs: MoELayer.forward raises in training whenever TP > 1 without SP, not only for EP > 1.
    let r = P { tp: 2, ep: 1, sp: Some(false), ..P::new(small_moe(), 8) }.run();
    let d = find(&r, "moe-tp-requires-sp").expect("fires at EP = 1");
    assert!(d.is_error() && d.message.contains("expert_model_parallel_size = 1"), "{}", d.message);
    assert_eq!(applied(d, "parallelism.sequence_parallel"), Some(json!(true)));
    let r = P { tp: 2, ep: 1, sp: Some(true), ..P::new(small_moe(), 8) }.run();
    assert!(find(&r, "moe-tp-requires-sp").is_none());
    // TP = 1: no SP needed.
    assert!(find(&P { tp: 1, ep: 8, ..P::new(small_moe(), 8) }.run(), "moe-tp-requires-sp").is_none());
}

fn full_recompute(p: &P, method: &str, n: u64, model_extra: Option<(&str, Value)>) -> Report {
    let mut j = P { recompute: "full", ..p.clone() }.json();
    j["training"]["recompute_method"] = json!(method);
    j["training"]["recompute_num_layers"] = json!(n);
    if let Some((k, v)) = model_extra {
        j["model"][k] = v;
    }
    meshplan_core::plan_value(&j).expect("plan parses")
}

#[test]
fn recompute_num_layers_follows_recompute_py() {
    // 16 layers, PP=2, VPP=2 on 8 GPUs: 16/(2·2) = 4 layers per chunk.
    let p = P { pp: 2, vpp: Some(2), ..P::new(small_dense(), 8) };
    // 6 > 4: Megatron clips (uniform: units [0, min(0 + 6, 4))) or recomputes all (block: every i < 6): accepted, but
    // not what was written — a warning, not an error; the fix names 4, which is what runs.
    for (method, runs) in [("uniform", "min(layer_idx + 6, 4)"), ("block", "layer_idx < 6 for all 4")] {
        let r = full_recompute(&p, method, 6, None);
        assert!(find(&r, "recompute-num-layers-range").is_none(), "{method}");
        let d = find(&r, "recompute-num-layers-clipped").unwrap_or_else(|| panic!("{method}: {:?}", codes(&r)));
        assert_eq!(d.severity, Severity::Warning);
        assert!(d.message.contains(runs), "{}", d.message);
        assert_eq!(applied(d, "training.recompute_num_layers"), Some(json!(4)));
        assert!(r.valid, "{:?}", errors(&r));
    }
    // 4 = the chunk: nothing.
    let r = full_recompute(&p, "uniform", 4, None);
    assert!(find(&r, "recompute-num-layers-clipped").is_none() && find(&r, "recompute-num-layers-range").is_none());
    // 0 with uniform: layer_idx += 0 never ends → error, fix 1.
    let r = full_recompute(&p, "uniform", 0, None);
    let d = find(&r, "recompute-num-layers-range").expect("uniform 0 is an error");
    assert!(d.is_error());
    assert_eq!(applied(d, "training.recompute_num_layers"), Some(json!(1)));
    // 0 with block: recomputes nothing (layer_idx < 0 never holds), accepted; the fix is the least that recomputes.
    let r = full_recompute(&p, "block", 0, None);
    assert!(find(&r, "recompute-num-layers-range").is_none());
    let d = find(&r, "recompute-num-layers-clipped").expect("warns");
    assert!(d.message.contains("no layer"), "{}", d.message);
    assert_eq!(applied(d, "training.recompute_num_layers"), Some(json!(1)));
}

#[test]
fn mtp_with_uniform_recompute_needs_one_layer() {
    let p = P::new(small_dense(), 8);
    let r = full_recompute(&p, "uniform", 2, Some(("mtp_num_layers", json!(1))));
    let d = find(&r, "mtp-recompute-uniform-needs-one").expect("fires");
    assert_eq!(applied(d, "training.recompute_num_layers"), Some(json!(1)));
    assert!(find(&full_recompute(&p, "uniform", 1, Some(("mtp_num_layers", json!(1)))), "mtp-recompute-uniform-needs-one").is_none());
    assert!(find(&full_recompute(&p, "block", 2, Some(("mtp_num_layers", json!(1)))), "mtp-recompute-uniform-needs-one").is_none());
    assert!(find(&full_recompute(&p, "uniform", 2, None), "mtp-recompute-uniform-needs-one").is_none());
}

fn fp8(p: &P) -> Report {
    let mut j = p.json();
    j["training"]["precision"] = json!("fp8");
    meshplan_core::plan_value(&j).expect("plan parses")
}

#[test]
fn fp8_tokens_need_multiple_of_8_not_16() {
    // TP=4 with SP, CP=1, MBS 1: seq 4128 → 4128/4 = 1032 local tokens = 8·129 (not a multiple of 16): TE accepts it.
    let r = fp8(&P { tp: 4, seq: 4128, ..P::new(small_dense(), 8) });
    assert!(find(&r, "fp8-dims-not-divisible").is_none(), "{:?}", codes(&r));
    // seq 4100 → 1025 local tokens, 1025 mod 8 = 1: fires. seq must be a multiple of TP·8 = 32: 4128.
    let r = fp8(&P { tp: 4, seq: 4100, ..P::new(small_dense(), 8) });
    let d = find(&r, "fp8-dims-not-divisible").expect("fires");
    assert!(d.message.contains("1025"), "{}", d.message);
    assert_eq!(applied(d, SEQ), Some(json!(4128)));
    // MBS 8 makes any whole local count a multiple of 8: 1025·8 = 8200.
    let r = fp8(&P { tp: 4, seq: 4100, mbs: 8, gbs: 1024, ..P::new(small_dense(), 8) });
    assert!(find(&r, "fp8-dims-not-divisible").is_none(), "{:?}", codes(&r));
}

#[test]
fn fp8_local_widths_align() {
    // ffn 5696 = 64·89: at TP=8, fc2's local input 5696/8 = 712, 712 mod 16 = 8 → fires; at TP=4 it is 1424 = 16·89
    // and fc1's local output 2·5696/4 = 2848 = 8·356: aligned. TP=16: 356 mod 16 = 4. So the nearest is 4.
    let mut model = small_dense();
    model["ffn_hidden_size"] = json!(5696);
    let r = fp8(&P { tp: 8, ..P::new(model.clone(), 8) });
    let d = find(&r, "fp8-dims-not-divisible").expect("fires");
    assert!(d.message.contains("712"), "{}", d.message);
    assert_eq!(applied(d, "parallelism.tensor_model_parallel_size"), Some(json!(4)));
    assert!(find(&fp8(&P { tp: 4, ..P::new(model.clone(), 8) }), "fp8-dims-not-divisible").is_none());
    // bf16: no FP8 rule at all.
    assert!(find(&P { tp: 8, ..P::new(model, 8) }.run(), "fp8-dims-not-divisible").is_none());
}

fn with_par(p: &P, kv: &[(&str, Value)]) -> Report {
    let mut j = p.json();
    for (k, v) in kv {
        j["parallelism"][*k] = v.clone();
    }
    meshplan_core::plan_value(&j).expect("plan parses")
}

#[test]
fn uneven_stages_follow_transformer_config() {
    // 16 layers, PP=3 on 6 GPUs (DP 2): first 8 + last 8 = 16 leaves 0 layers for the 1 middle stage → Mismatch.
    let p = P { pp: 3, ..P::new(small_dense(), 6) };
    let r = with_par(&p, &[("num_layers_in_first_pipeline_stage", json!(8)), ("num_layers_in_last_pipeline_stage", json!(8))]);
    let d = find(&r, "uneven-stages-empty-middle").unwrap_or_else(|| panic!("{:?}", codes(&r)));
    assert!(d.is_error() && d.message.contains("8 + 8"), "{}", d.message);
    // first 4 + last 4: 8 middle layers on 1 middle stage.
    let r = with_par(&p, &[("num_layers_in_first_pipeline_stage", json!(4)), ("num_layers_in_last_pipeline_stage", json!(4))]);
    assert!(find(&r, "uneven-stages-empty-middle").is_none() && r.valid, "{:?}", errors(&r));
    // PP=2 with first = 0: megatron-core rejects a zero count even though the rest (16 on 1 stage) divides.
    let r = with_par(&P { pp: 2, ..P::new(small_dense(), 8) }, &[("num_layers_in_first_pipeline_stage", json!(0))]);
    let d = find(&r, "uneven-stage-zero-layers").expect("fires");
    assert_eq!(applied(d, "parallelism.num_layers_in_first_pipeline_stage"), Some(Value::Null));
    let r = with_par(&P { pp: 2, ..P::new(small_dense(), 8) }, &[("num_layers_in_first_pipeline_stage", json!(6))]);
    assert!(find(&r, "uneven-stage-zero-layers").is_none());
    // Uneven + VPP: first 6 with VPP 2 → 3 per chunk; the last stage's 10 → 5 per chunk: fine. First 5: 5 mod 2 ≠ 0.
    let pv = P { pp: 2, vpp: Some(2), ..P::new(small_dense(), 8) };
    let r = with_par(&pv, &[("num_layers_in_first_pipeline_stage", json!(6)), ("overlap_p2p_comm", json!(true))]);
    assert!(r.valid, "{:?}", errors(&r));
    let r = with_par(&pv, &[("num_layers_in_first_pipeline_stage", json!(5)), ("overlap_p2p_comm", json!(true))]);
    assert!(errors(&r).contains(&"layers-not-divisible-by-vpp"), "{:?}", codes(&r));
}

#[test]
fn max_position_with_rope_is_a_megatron_lm_warning() {
    // RoPE, max_position_embeddings 2048 < seq 4096: Megatron-LM asserts, Bridge does not look: a warning.
    let mut model = small_dense();
    model["position_embedding_type"] = json!("rope");
    model["max_position_embeddings"] = json!(2048);
    let r = P::new(model.clone(), 8).run();
    let d = find(&r, "seq-exceeds-max-position-mlm").expect("warns");
    assert_eq!(d.severity, Severity::Warning);
    assert!(d.fix.contains("4096"), "{}", d.fix);
    assert!(find(&r, "seq-exceeds-max-position").is_none());
    // seq 2048 = max: fine.
    assert!(find(&P { seq: 2048, ..P::new(model.clone(), 8) }.run(), "seq-exceeds-max-position-mlm").is_none());
    // Learned absolute positions: the error, as before.
    model["position_embedding_type"] = json!("learned_absolute");
    assert!(errors(&P::new(model, 8).run()).contains(&"seq-exceeds-max-position"));
}

#[test]
fn fp8_tp_fix_respects_the_other_tp_rules() {
    // glm-4.5-air (first layer dense, ffn 10944; 96 heads, 8 query groups) at TP=8 on 64 GPUs, PP=2:
    // fc2's local input 10944/8 = 1368, 1368 mod 16 = 8 → fires. Divisors of 96 near 8: 6 gives 1824 = 16·114 but
    // 8 groups is neither a multiple nor a divisor of 6, and 6 does not divide 64/2 = 32; 4 gives 2736 = 16·171: the fix.
    let plan = json!({"model": "glm-4.5-air", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 8},
        "training": {"seq_length": 8192, "precision": "fp8", "global_batch_size": 512},
        "parallelism": {"tensor_model_parallel_size": 8, "pipeline_model_parallel_size": 2, "sequence_parallel": true}});
    let r = meshplan_core::plan_value(&plan).unwrap();
    let d = find(&r, "fp8-dims-not-divisible").expect("fires");
    assert!(d.message.contains("1368"), "{}", d.message);
    assert_eq!(applied(d, "parallelism.tensor_model_parallel_size"), Some(json!(4)));
}

#[test]
fn selective_recompute_extras_split_by_launcher() {
    let with = |method: Option<&str>, n: Option<u64>| {
        let mut j = P::new(small_dense(), 8).json();
        if let Some(m) = method {
            j["training"]["recompute_method"] = json!(m);
        }
        if let Some(n) = n {
            j["training"]["recompute_num_layers"] = json!(n);
        }
        meshplan_core::plan_value(&j).unwrap()
    };
    // recompute_num_layers with selective: megatron-core ValueError.
    let r = with(None, Some(2));
    let d = find(&r, "selective-recompute-forbids-method").expect("error");
    assert!(d.is_error());
    assert_eq!(applied(d, "training.recompute_num_layers"), Some(Value::Null));
    // recompute_method alone: only Megatron-LM asserts → warning, plan stays valid.
    let r = with(Some("uniform"), None);
    assert!(find(&r, "selective-recompute-forbids-method").is_none());
    assert_eq!(find(&r, "selective-recompute-method-mlm").expect("warns").severity, Severity::Warning);
    assert!(r.valid, "{:?}", errors(&r));
    let r = with(None, None);
    assert!(find(&r, "selective-recompute-method-mlm").is_none() && find(&r, "selective-recompute-forbids-method").is_none());
}

/// The TP = 3 model with 8 query groups: 24 heads, ffn 4608 = 2⁹·9. TPs that pass every width rule are the divisors
/// of 24 that are a multiple or divisor of 8 (1, 2, 4, 8, 24) and divide 4608 (all of them).
fn heads24_groups8() -> Value {
    let mut m = tp3_model();
    m["num_query_groups"] = json!(8);
    m
}

const TP: &str = "parallelism.tensor_model_parallel_size";

#[test]
fn tp_fixes_share_one_nearest_valid_tp() {
    // TP 16 on 16 GPUs: 24 mod 16 = 8, heads fire (8 groups divide 16, ffn 4608/16 = 288: those hold). The nearest
    // divisor of 24 alone is 12 (|12−16| = 4), but 8 groups are neither a multiple nor a divisor of 12. Of 1, 2, 4, 8,
    // 24 those dividing 16/(PP·CP) = 16 are 1, 2, 4, 8: the nearest is 8.
    let p = P { tp: 16, per_node: 16, domain: Some(16), ..P::new(heads24_groups8(), 16) };
    let r = p.run();
    let d = find(&r, "heads-not-divisible-by-tp").expect("fires");
    assert_eq!(applied(d, TP), Some(json!(8)));
    // Applying it leaves no TP rule firing.
    let fixed = P { tp: 8, ..p.clone() }.run();
    assert!(fixed.valid, "{:?}", errors(&fixed));
    // World divisibility picks from the same TPs: 12 GPUs (3 nodes of 4) at TP 8: TPs dividing 12 are 1, 2, 3, 4, 6, 12;
    // passing the widths too: 1, 2, 4. Nearest to 8: 4 (6, the nearest divisor of 12, fails the 8 query groups).
    let r = P { tp: 8, per_node: 4, domain: Some(4), ..P::new(heads24_groups8(), 12) }.run();
    let d = find(&r, "world-not-divisible-dense").expect("fires");
    assert_eq!(applied(d, TP), Some(json!(4)));
    assert!(d.fix.contains("set tensor_model_parallel_size to 4"), "{}", d.fix);
    // The NVLink fix too (16 GPUs in domains of 4, TP 8): TPs dividing the domain and passing the widths: 1, 2, 4 → 4.
    let r = P { tp: 8, per_node: 4, domain: Some(4), ..P::new(heads24_groups8(), 16) }.run();
    let d = find(&r, "tp-crosses-nvlink").expect("warns");
    assert_eq!(applied(d, TP), Some(json!(4)));
    // PP·CP = 8 does not divide 12: no TP makes the dense grid whole, so no TP is applied.
    let r = P { pp: 8, per_node: 4, domain: Some(4), ..P::new(heads24_groups8(), 12) }.run();
    let d = find(&r, "world-not-divisible-dense").expect("fires");
    assert!(d.apply.is_empty() && d.fix.contains("use 16 GPUs"), "{:?} {}", d.apply, d.fix);
}

#[test]
fn ffn_fix_is_a_tp_that_divides_the_heads_too() {
    // 16 heads, 16 groups, ffn 5000 = 2³·5⁴ at TP 16 on 16 GPUs: 5000 mod 16 = 8 fires. The divisor of 5000 nearest 16
    // is 20, which does not divide 16 heads; TPs passing everything: divisors of 16 that divide 5000: 1, 2, 4, 8 → 8.
    let mut model = small_dense();
    model["ffn_hidden_size"] = json!(5000);
    model["num_query_groups"] = json!(16);
    let p = P { tp: 16, per_node: 16, domain: Some(16), ..P::new(model, 16) };
    let d = find(&p.run(), "ffn-not-divisible-by-tp").cloned().expect("fires");
    assert!(d.message.contains("5000 mod 16 = 8"), "{}", d.message);
    assert_eq!(applied(&d, TP), Some(json!(8)));
    assert!(P { tp: 8, ..p }.run().valid);
}

#[test]
fn vocab_not_divisible_by_tp_warns_with_the_padded_size() {
    // GPT-2's 50257 tokens at TP 2: 50257 mod 2 = 1. Megatron-LM pads to a multiple of 128·2 = 256:
    // ⌈50257/256⌉ = 197 → 197·256 = 50432. Megatron Bridge builds a set vocab_size unpadded and asserts: a warning,
    // whose fix pads the vocabulary as Megatron-LM does.
    let mut model = small_dense();
    model["vocab_size"] = json!(50257);
    let r = P { tp: 2, ..P::new(model.clone(), 8) }.run();
    let d = find(&r, "vocab-not-divisible-by-tp").expect("warns");
    assert_eq!(d.severity, Severity::Warning);
    assert!(d.message.contains("50257 mod 2 = 1") && d.message.contains("50432"), "{}", d.message);
    assert_eq!(applied(d, "model.vocab_size"), Some(json!(50432)));
    assert_eq!(r.derived.padded_vocab_size, 50432);
    assert!(r.valid, "{:?}", errors(&r));
    // The padded size divides over TP: applied, the warning is gone and memory unchanged (the plan already sized 50432).
    model["vocab_size"] = json!(50432);
    let fixed = P { tp: 2, ..P::new(model.clone(), 8) }.run();
    assert!(find(&fixed, "vocab-not-divisible-by-tp").is_none());
    assert_eq!(fixed.memory.peak_bytes, r.memory.peak_bytes);
    // TP 1 always divides; 32000 at TP 8 divides too (Bridge builds 32000 rows, 4000 per rank), though Megatron-LM
    // pads it to 32768.
    model["vocab_size"] = json!(50257);
    assert!(find(&P::new(model, 8).run(), "vocab-not-divisible-by-tp").is_none());
    assert!(find(&P { tp: 8, ..P::new(small_dense(), 8) }.run(), "vocab-not-divisible-by-tp").is_none());
}

#[test]
fn mtp_position_embedding_is_a_megatron_lm_rule() {
    // Megatron-LM validate_args: MTP only with rope or none; Bridge builds any. A warning, valid plan.
    let mtp = |pos: &str| {
        let mut m = small_dense();
        m["mtp_num_layers"] = json!(1);
        m["position_embedding_type"] = json!(pos);
        m["max_position_embeddings"] = json!(4096);
        P::new(m, 8).run()
    };
    for pos in ["learned_absolute", "yarn"] {
        let r = mtp(pos);
        let d = find(&r, "mtp-position-embedding-mlm").expect("warns");
        assert_eq!(d.severity, Severity::Warning);
        assert!(d.message.contains(pos), "{}", d.message);
        assert_eq!(applied(d, "model.position_embedding_type"), Some(json!("rope")));
        assert!(r.valid, "{:?}", errors(&r));
    }
    for pos in ["rope", "none"] {
        assert!(find(&mtp(pos), "mtp-position-embedding-mlm").is_none(), "{pos}");
    }
    // Without MTP, learned positions are fine.
    let mut m = small_dense();
    m["position_embedding_type"] = json!("learned_absolute");
    m["max_position_embeddings"] = json!(4096);
    assert!(find(&P::new(m, 8).run(), "mtp-position-embedding-mlm").is_none());
}

#[test]
fn mtp_layers_are_not_recomputed_under_block_recompute() {
    let mut mtp = small_dense();
    mtp["mtp_num_layers"] = json!(1);
    mtp["position_embedding_type"] = json!("rope");
    let full = |model: &Value, method: &str, n: u64| full_recompute(&P::new(model.clone(), 8), method, n, None);
    let r = full(&mtp, "block", 2);
    let d = find(&r, "mtp-block-recompute-skipped").expect("warns");
    assert_eq!(d.severity, Severity::Warning);
    assert_eq!(applied(d, "training.recompute_method"), Some(json!("uniform")));
    assert_eq!(applied(d, "training.recompute_num_layers"), Some(json!(1)));
    assert!(r.valid, "{:?}", errors(&r));
    // Uniform with 1 layer recomputes the MTP layers; a dense model without MTP has nothing to skip.
    assert!(find(&full(&mtp, "uniform", 1), "mtp-block-recompute-skipped").is_none());
    let mut no_mtp = mtp.clone();
    no_mtp["mtp_num_layers"] = json!(0);
    assert!(find(&full(&no_mtp, "block", 2), "mtp-block-recompute-skipped").is_none());
}

#[test]
fn absent_global_batch_size_defaults_to_one_microbatch_per_step() {
    // 8 GPUs, TP 2, PP 2: DP = 8/(2·2) = 2; MBS 2 → Megatron-LM's default GBS = 2·2 = 4, one microbatch per step.
    let mut j = P { tp: 2, pp: 2, mbs: 2, ..P::new(small_dense(), 8) }.json();
    j["training"].as_object_mut().unwrap().remove("global_batch_size");
    let r = meshplan_core::plan_value(&j).unwrap();
    let d = find(&r, "gbs-default").expect("info");
    assert_eq!(d.severity, Severity::Info);
    assert!(d.message.contains("2·2 = 4") && d.message.contains("Bridge"), "{}", d.message);
    assert_eq!(applied(d, "training.global_batch_size"), Some(json!(4)));
    assert_eq!((r.derived.global_batch_size, r.derived.num_microbatches), (4, 1));
    // Given explicitly: no info.
    assert!(find(&P { tp: 2, pp: 2, mbs: 2, ..P::new(small_dense(), 8) }.run(), "gbs-default").is_none());
}

