//! The pipeline schedule: its order, timing and memory against the 1F1B / interleaved results worked by hand and the
//! memory model's in-flight counts.

use meshplan_core::plan_value;
use meshplan_core::schedule::{Schedule, drawn, schedule};
use serde_json::json;

/// Llama 3.1 8B (32 layers) on 4 GPUs: TP 1, PP 4 (8 layers a stage), DP 1, micro-batch 1, global batch 8 → m = 8.
fn plan(vpp: Option<u64>, gbs: u64) -> serde_json::Value {
    json!({
        "model": "llama-3.1-8b",
        "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 4, "num_nodes": 1},
        "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": gbs, "recompute_granularity": "none"},
        "parallelism": {"tensor_model_parallel_size": 1, "pipeline_model_parallel_size": 4, "virtual_pipeline_model_parallel_size": vpp}
    })
}

/// 1F1B with equal stages, backward = 2 × forward, no transfer time: the last microbatch's backward leaves stage 0 after
/// (m + PP − 1)·(t_f + t_b) = 11·(t_f + t_b); each stage is busy m·(t_f + t_b) = 8·(t_f + t_b), so its idle time over
/// busy time is (PP − 1)/m = 3/8 — Narayanan et al. 2021 §2.2.1's bubble. Stage r holds PP − r microbatches at its peak.
#[test]
fn one_f_one_b_matches_the_closed_form() {
    let r = plan_value(&plan(None, 8)).unwrap();
    let s = schedule(&r).unwrap();
    assert_eq!((s.kind.as_str(), s.pp, s.vpp, s.microbatches), ("1f1b", 4, 1, 8));
    let t = s.forward_s + s.backward_s;
    assert!((s.backward_s - 2.0 * s.forward_s).abs() < 1e-12 * t);
    assert!((s.makespan_s - 11.0 * t).abs() < 1e-9 * t, "{} vs {}", s.makespan_s, 11.0 * t);
    assert!((s.bubble_fraction - 3.0 / 8.0).abs() < 1e-9);
    // The closed form beside it (what `meshplan schedule` prints next to the laid-out bubble): (4 − 1)/(1·8).
    assert_eq!(s.even_bubble_fraction, 3.0 / 8.0);
    for st in &s.stages {
        assert_eq!(st.ops.len(), 16);
        assert_eq!(st.peak_in_flight, (4 - st.pipeline_rank) as f64);
        assert_eq!(st.peak_in_flight, st.memory_model_in_flight);
        // The saved activations at the peak: that many microbatches' worth (to a byte per microbatch of rounding).
        let per_mb = r.memory.stages[st.pipeline_rank as usize].activations_per_microbatch_bytes as f64;
        assert!((st.peak_activation_bytes as f64 - per_mb * st.peak_in_flight).abs() <= 8.0);
    }
}

/// Every forward starts after the previous stage's forward of the same microbatch and chunk ends (rank 0's chunk c after
/// the last rank's chunk c − 1); every backward after the next stage's; no two operations of a stage overlap.
#[test]
fn dependencies_and_order_hold_for_the_interleaved_schedule() {
    let r = plan_value(&plan(Some(2), 8)).unwrap();
    let s = schedule(&r).unwrap();
    assert_eq!(s.kind, "interleaved");
    let end = |kind: &str, rank: u64, j: u64, c: u64| {
        s.stages[rank as usize].ops.iter().find(|o| o.kind == kind && o.microbatch == j && o.chunk == c).unwrap().end_s
    };
    for st in &s.stages {
        assert_eq!(st.ops.len(), 2 * 8 * 2);
        for w in st.ops.windows(2) {
            assert!(w[1].start_s >= w[0].end_s - 1e-12);
        }
        for o in &st.ops {
            let r = st.pipeline_rank;
            let dep = match (o.kind.as_str(), r, o.chunk) {
                ("F", 0, 0) => 0.0,
                ("F", 0, c) => end("F", 3, o.microbatch, c - 1),
                ("F", r, c) => end("F", r - 1, o.microbatch, c),
                ("B", 3, 1) => end("F", 3, o.microbatch, 1),
                ("B", 3, c) => end("B", 0, o.microbatch, c + 1),
                ("B", r, c) => end("B", r + 1, o.microbatch, c),
                _ => unreachable!(),
            };
            assert!(o.start_s >= dep - 1e-12);
        }
    }
}

/// Interleaving with VPP 2 (N = PP = 4): rank r warms up with (PP − r − 1)·2 + (VPP − 1)·N chunk forwards and holds one
/// more at its peak, (W + 1)/VPP microbatches: 5.5, 4.5, 3.5, 2.5 — the memory model's counts; and the bubble is smaller
/// than 1F1B's at the same m.
#[test]
fn interleaved_peak_in_flight_is_the_memory_models() {
    let r = plan_value(&plan(Some(2), 16)).unwrap();
    let s = schedule(&r).unwrap();
    let peaks: Vec<f64> = s.stages.iter().map(|st| st.peak_in_flight).collect();
    assert_eq!(peaks, [5.5, 4.5, 3.5, 2.5]);
    for st in &s.stages {
        assert_eq!(st.peak_in_flight, st.memory_model_in_flight);
        assert_eq!(st.memory_model_in_flight, r.memory.stages[st.pipeline_rank as usize].microbatches_in_flight);
    }
    let plain = schedule(&plan_value(&plan(None, 16)).unwrap()).unwrap();
    assert!(s.bubble_fraction < plain.bubble_fraction, "{} vs {}", s.bubble_fraction, plain.bubble_fraction);
}

/// 2·PP·VPP·m = 2·4·2·32,768 = 524,288 operations is over the 2^16 laid out: an error naming the count, not a long run.
#[test]
fn too_many_operations_is_refused() {
    let r = plan_value(&plan(Some(2), 32768)).unwrap();
    let e = schedule(&r).unwrap_err();
    assert!(e.message.contains("524288"), "{}", e.message);
}

/// Llama 3.1 8B (32 layers) on `pp` GPUs, DP 1, micro-batch 1: m = the global batch; `first` layers on the first stage.
fn long(pp: u64, vpp: Option<u64>, group: Option<u64>, first: Option<u64>, m: u64) -> meshplan_core::Report {
    plan_value(&json!({
        "model": "llama-3.1-8b",
        "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": pp.min(8), "num_nodes": pp.div_ceil(8)},
        "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": m, "recompute_granularity": "none"},
        "parallelism": {"tensor_model_parallel_size": 1, "pipeline_model_parallel_size": pp, "virtual_pipeline_model_parallel_size": vpp,
                        "microbatch_group_size_per_vp_stage": group, "num_layers_in_first_pipeline_stage": first}
    }))
    .unwrap()
}


/// PP 4, 8 microbatches, 1F1B, equal stages (8 layers each), t = t_f + t_b: each stage is busy 8·t and the step takes
/// (m + PP − 1)·t = 11·t, so each stage idles (PP − 1)·t = 3·t — in its warm-up and cool-down, none in between.
#[test]
fn each_stage_idles_the_bubble_worked_by_hand() {
    let s = schedule(&long(4, None, None, None, 8)).unwrap();
    let t = s.forward_s + s.backward_s;
    for st in &s.stages {
        assert!((st.busy_s - 8.0 * t).abs() < 1e-9 * t, "stage {}: busy {} vs {}", st.pipeline_rank, st.busy_s, 8.0 * t);
        assert!((st.idle_s - 3.0 * t).abs() < 1e-9 * t, "stage {}: idle {} vs {}", st.pipeline_rank, st.idle_s, 3.0 * t);
    }
    // Drawn whole when small: no break.
    assert_eq!(drawn(&long(4, None, None, None, 8), 256).unwrap(), s);
}

/// 1,000 microbatches on PP 4 (2,000 operations a stage) drawn within 256 a stage: the same hand-worked step as above with m = 1,000
/// — (1,000 + 3)·t long, each stage idle 3·t, the break busy throughout (no stage idles in 1F1B's steady state) and
/// `microbatches`·t long; the first forward starts at 0 and the last stage's last backward (microbatch 999) is drawn.
#[test]
fn a_long_1f1b_step_is_drawn_with_a_labelled_break() {
    let r = long(4, None, None, None, 1000);
    let s = drawn(&r, 256).unwrap();
    let t = s.forward_s + s.backward_s;
    assert_eq!(s.microbatches, 1000);
    assert!((s.makespan_s - 1003.0 * t).abs() < 1e-9 * s.makespan_s, "{} vs {}", s.makespan_s, 1003.0 * t);
    let cut = s.cut.as_ref().expect("a break");
    assert!((cut.end_s - cut.start_s - cut.microbatches as f64 * t).abs() < 1e-9 * s.makespan_s);
    assert!(cut.microbatches > 900 && cut.start_s > 0.0 && cut.end_s < s.makespan_s);
    for (st, idle) in s.stages.iter().zip(&cut.idle_s) {
        assert!((st.idle_s - 3.0 * t).abs() < 1e-9 * s.makespan_s, "stage {}: idle {}", st.pipeline_rank, st.idle_s / t);
        assert!(*idle < 1e-9 * s.makespan_s, "stage {} idles {} in the break", st.pipeline_rank, idle);
        // Every microbatch's forward is drawn or stands in the break, once.
        let forwards = st.ops.iter().filter(|o| o.kind == "F" && o.end_s <= cut.start_s || o.kind == "F" && o.start_s >= cut.end_s).count() as u64;
        let across = st.ops.iter().filter(|o| o.kind == "F" && o.start_s < cut.start_s && o.end_s > cut.start_s).count() as u64;
        assert_eq!(forwards + across + cut.microbatches, 1000, "stage {}", st.pipeline_rank);
        assert!(st.ops.len() <= 256);
    }
    let last = s.stages[3].ops.iter().filter(|o| o.kind == "B").map(|o| o.microbatch).max();
    assert_eq!(last, Some(999));
    let end = s.stages[0].ops.last().unwrap();
    assert_eq!((end.kind.as_str(), end.microbatch), ("B", 999));
    assert!((end.end_s - s.makespan_s).abs() < 1e-9 * s.makespan_s);
    assert_eq!(s.stages[0].ops[0].start_s, 0.0);
}

/// Interleaved, 20,000 microbatches on PP 8 · VPP 4 (1,280,000 operations, over the 2^16 `schedule` lays out): drawn
/// from a few hundred operations a stage. Equal chunks (1 layer each): the step is (m + (PP − 1)/VPP)·t =
/// (20,000 + 7/4)·t (Narayanan et al. 2021 §2.2: the interleaved bubble is (PP − 1)/VPP microbatches' time).
#[test]
fn ten_thousands_of_microbatches_stay_bounded() {
    let r = long(8, Some(4), None, None, 20_000);
    assert!(schedule(&r).is_err());
    let s = drawn(&r, 256).unwrap();
    let t = s.forward_s + s.backward_s;
    assert!((s.makespan_s - 20_001.75 * t).abs() < 1e-9 * s.makespan_s, "{} vs {}", s.makespan_s / t, 20_001.75);
    let ops: usize = s.stages.iter().map(|st| st.ops.len()).sum();
    assert!(ops <= 8 * 1024, "{ops} operations drawn");
    assert!(s.cut.as_ref().unwrap().microbatches % 8 == 0, "whole groups of N = PP = 8");
    assert!((s.bubble_fraction - s.even_bubble_fraction).abs() < 1e-9);
}

/// The cut schedule is the whole one: the same makespan, each stage's busy and idle time and peak activations, and
/// every drawn operation where the whole schedule has it — for 1F1B and interleaved, uneven stages (a first stage of
/// 5, 11 or 14 layers), a group size other than PP, and a microbatch count that is no multiple of the group.
#[test]
fn the_cut_schedule_is_the_whole_one() {
    let cases = [
        (4, None, None, None, 200),
        (4, None, None, Some(5), 200),
        (4, Some(2), None, None, 96),
        (4, Some(2), None, Some(14), 96),
        (4, Some(2), Some(3), None, 97),
        (8, Some(2), None, None, 130),
        (2, None, None, None, 300),
        (2, Some(4), None, None, 64),
        (8, None, None, Some(11), 100),
    ];
    for (pp, vpp, group, first, m) in cases {
        let r = long(pp, vpp, group, first, m);
        let whole = schedule(&r).unwrap();
        let cut = drawn(&r, 0).unwrap();
        let what = format!("PP {pp} VPP {vpp:?} N {group:?} first {first:?} m {m}");
        let b = cut.cut.as_ref().unwrap_or_else(|| panic!("{what}: no break"));
        let close = |x: f64, y: f64| (x - y).abs() <= 1e-9 * whole.makespan_s;
        assert!(close(cut.makespan_s, whole.makespan_s), "{what}: {} vs {}", cut.makespan_s, whole.makespan_s);
        assert!((cut.bubble_fraction - whole.bubble_fraction).abs() < 1e-9, "{what}");
        for (c, w) in cut.stages.iter().zip(&whole.stages) {
            assert!(close(c.busy_s, w.busy_s) && close(c.idle_s, w.idle_s), "{what} stage {}", w.pipeline_rank);
            assert_eq!((c.peak_activation_bytes, c.peak_in_flight), (w.peak_activation_bytes, w.peak_in_flight), "{what}");
            for o in &c.ops {
                let same = w.ops.iter().find(|x| x.kind == o.kind && x.microbatch == o.microbatch && x.chunk == o.chunk).unwrap();
                assert!(close(o.start_s, same.start_s) && close(o.end_s, same.end_s), "{what}: {o:?} vs {same:?}");
            }
            // The break's idle time is what the whole schedule's stage idles between its edges.
            let busy_inside: f64 = w.ops.iter().map(|o| (o.end_s.min(b.end_s) - o.start_s.max(b.start_s)).max(0.0)).sum();
            assert!(close(b.idle_s[w.pipeline_rank as usize], b.end_s - b.start_s - busy_inside), "{what}");
        }
        // A first stage of 5 layers beside stages of 9: the steady state goes at the 9-layer stages' pace, so stage 0
        // is busy 5/9 of the break and idles 4/9 of it.
        if (pp, vpp, first) == (4, None, Some(5)) {
            assert!(close(b.idle_s[0], 4.0 / 9.0 * (b.end_s - b.start_s)), "{what}: {} of {}", b.idle_s[0], b.end_s - b.start_s);
        }
    }
}

/// The JSON of a whole schedule is as before: no `cut` field.
#[test]
fn a_whole_schedule_has_no_cut_in_its_json() {
    let s: Schedule = schedule(&long(4, None, None, None, 8)).unwrap();
    assert!(!serde_json::to_string(&s).unwrap().contains("\"cut\""));
}
