//! The pipeline schedule: its order, timing and memory against the 1F1B / interleaved results worked by hand and the
//! memory model's in-flight counts.

use meshplan_core::plan_value;
use meshplan_core::schedule::schedule;
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
