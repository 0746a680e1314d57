//! `diff`: what changes between two plans, checked against changes worked by hand.

use meshplan_core::diff::diff;
use meshplan_core::plan_value;
use serde_json::{Value, json};

fn example() -> Value {
    serde_json::from_str(&std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/llama-3.1-70b.json")).unwrap()).unwrap()
}

#[test]
fn a_plan_against_itself_differs_in_nothing() {
    let r = plan_value(&example()).unwrap();
    let d = diff(&r, &r);
    assert!(d.settings.is_empty() && d.step_time.is_empty() && d.findings_added.is_empty() && d.findings_removed.is_empty() && d.crossings.is_empty());
    assert!(d.stages.iter().all(|s| s.delta_bytes == 0 && s.terms.is_empty()));
}

/// Micro-batch 1 → 2 with the global batch 512 and DP 2 kept: microbatches 512/(2·1) = 256 → 512/(2·2) = 128; each
/// saved activation scales with the micro-batch while the 1F1B in-flight count stays, so every stage's saved
/// activations double exactly; nothing of the model state changes.
#[test]
fn doubling_the_micro_batch_doubles_saved_activations() {
    let a = example();
    let mut b = a.clone();
    b["training"]["micro_batch_size"] = json!(2);
    let (ra, rb) = (plan_value(&a).unwrap(), plan_value(&b).unwrap());
    let d = diff(&ra, &rb);
    let paths: Vec<&str> = d.settings.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(paths, ["training.micro_batch_size", "derived.num_microbatches"]);
    assert_eq!((d.settings[1].a.clone(), d.settings[1].b.clone()), (json!(256), json!(128)));
    for s in &d.stages {
        let act = s.terms.iter().find(|t| t.key == "activations").expect("saved activations change");
        // Integer byte counts per sub-layer: equal to within rounding.
        assert!((act.b_bytes as i64 - 2 * act.a_bytes as i64).abs() <= 2, "stage {}: {} vs 2·{}", s.pipeline_rank, act.b_bytes, act.a_bytes);
        for key in ["weights", "gradients", "optimizer_moments", "master_weights"] {
            assert!(!s.terms.iter().any(|t| t.key == key), "stage {}: {key} changed", s.pipeline_rank);
        }
    }
}

/// TP 8 → 4 on half the GPUs (8 → 4 nodes, DP stays 32/(4·4) = 2): each TP-sharded weight is twice as wide, so the
/// model state per GPU nearly doubles — b = 2·sharded/8 + replicated = 2a − replicated (norms are not sharded, and the
/// vocabulary pads to a multiple of 128·TP, less at TP 4), so 1.95a ≤ b ≤ 2a; stage 0, 53.7 GiB at TP 8, no longer fits
/// 80 GB. PP groups: one per (TP, DP) position, 8·2·... = world/PP: 64/4 = 16 → 32/4 = 8.
#[test]
fn halving_tp_doubles_the_model_state_and_runs_out_of_memory() {
    let a = example();
    let mut b = a.clone();
    b["parallelism"]["tensor_model_parallel_size"] = json!(4);
    b["cluster"]["num_nodes"] = json!(4);
    let (ra, rb) = (plan_value(&a).unwrap(), plan_value(&b).unwrap());
    let d = diff(&ra, &rb);
    for s in &d.stages {
        for key in ["weights", "gradients", "optimizer_moments", "master_weights"] {
            let t = s.terms.iter().find(|t| t.key == key).unwrap();
            let (a, b) = (t.a_bytes as f64, t.b_bytes as f64);
            assert!(b <= 2.0 * a && b >= 1.95 * a, "stage {} {key}: {b} vs {a}", s.pipeline_rank);
        }
    }
    assert!(d.findings_added.iter().any(|f| f.code == "out-of-memory"));
    assert!(d.a_valid && !d.b_valid);
    let pp = d.crossings.iter().find(|c| c.kind == "pp").unwrap();
    assert_eq!((pp.a_total_groups, pp.b_total_groups), (16, 8));
}

/// The README plan without VPP at PP 4, and at PP 8 on the same 64 GPUs (TP 8, DP 2 → 1).
fn pp(stages: u64) -> Value {
    let mut p = example();
    p["parallelism"]["pipeline_model_parallel_size"] = json!(stages);
    p["parallelism"]["virtual_pipeline_model_parallel_size"] = Value::Null;
    p
}

/// Llama 3.1 70B's 80 decoder layers: PP 4 gives stage r layers [20r, 20r + 20), PP 8 gives stage r [10r, 10r + 10), so
/// PP 8's stage r holds half of PP 4's stage ⌊r/2⌋ and none of any other: 8 pairs, (0,0) (0,1) (1,2) (1,3) … each
/// sharing 10 layers, every stage of both plans in one pair.
///
/// One decoder layer's weights per GPU at TP 8 (hidden 8192, 64 heads of 128, 8 query groups, FFN 28672, SwiGLU):
/// attention Q and O 8192·8192 each, K and V 8192·1024 each = 150,994,944; MLP 3·8192·28672 = 704,643,072; sharded
/// over TP 8: 855,638,016 / 8 = 106,954,752, plus the two layer norms' 2·8192 = 16,384 replicated: 106,971,136
/// parameters, 213,942,272 bytes in bf16. PP 8's stage 2 (layers 20–29, a middle stage: no embedding, no output layer)
/// holds 10 of them, 2,139,422,720 B; PP 4's stage 1 (layers 20–39) 20, 4,278,845,440 B: its weights change by
/// −2,139,422,720 B.
#[test]
fn pp_4_to_8_pairs_each_stage_with_the_one_that_held_its_layers() {
    let (ra, rb) = (plan_value(&pp(4)).unwrap(), plan_value(&pp(8)).unwrap());
    let d = diff(&ra, &rb);
    let pairs: Vec<(Option<u64>, Option<u64>)> = d.stages_by_layers.iter().map(|s| (s.a_pipeline_rank, s.b_pipeline_rank)).collect();
    let expected: Vec<(Option<u64>, Option<u64>)> = (0..8).map(|r| (Some(r / 2), Some(r))).collect();
    assert_eq!(pairs, expected);
    for s in &d.stages_by_layers {
        let r = s.b_pipeline_rank.unwrap();
        assert_eq!(s.paired_by, "layers");
        assert_eq!(s.shared_layers, 10);
        assert_eq!(s.b_layers, vec![[10 * r, 10 * r + 10]]);
        assert_eq!(s.a_layers, vec![[20 * (r / 2), 20 * (r / 2) + 20]]);
        assert_eq!(s.pipeline_rank, r);
    }
    let s2 = &d.stages_by_layers[2];
    let w = s2.terms.iter().find(|t| t.key == "weights").expect("weights change");
    assert_eq!((w.a_bytes, w.b_bytes, w.delta_bytes), (4_278_845_440, 2_139_422_720, -2_139_422_720));
    // By rank, PP 8's stage 2 was set beside PP 4's stage 2 (layers 40–59): the same weights (20 vs 10 layers alike),
    // but the wrong layers; and stages 4–7 had nothing to compare with.
    assert_eq!((d.stages[2].a_layers.clone(), d.stages[2].b_layers.clone()), (vec![[40, 60]], vec![[20, 30]]));
    assert_eq!(d.stages[2].paired_by, "rank");
    assert_eq!((d.stages[5].a_pipeline_rank, d.stages[5].a_total_bytes), (None, 0));
    // The peak stages: the first stage in both (the embedding, and PP − 0 microbatches in flight under 1F1B, the most).
    let peak = d.peak_stages.as_ref().unwrap();
    assert_eq!((peak.a_pipeline_rank, peak.b_pipeline_rank, peak.paired_by.as_str()), (Some(0), Some(0), "peak"));
    assert_eq!((peak.a_total_bytes, peak.b_total_bytes), (d.a_peak_bytes, d.b_peak_bytes));
}

/// The other way, PP 8 → 4: PP 4's stage r holds PP 8's stages 2r and 2r + 1, 10 layers of each; the lower rank of the
/// equals is its pair, and the stage left over (2r + 1) is listed beside the stage that now holds it, after it:
/// (A 0, B 0) (A 1, B 0) (A 2, B 1) (A 3, B 1) …
#[test]
fn pp_8_to_4_lists_every_stage_of_the_finer_plan() {
    let (ra, rb) = (plan_value(&pp(8)).unwrap(), plan_value(&pp(4)).unwrap());
    let d = diff(&ra, &rb);
    let pairs: Vec<(Option<u64>, Option<u64>)> = d.stages_by_layers.iter().map(|s| (s.a_pipeline_rank, s.b_pipeline_rank)).collect();
    let expected: Vec<(Option<u64>, Option<u64>)> = (0..8).map(|r| (Some(r), Some(r / 2))).collect();
    assert_eq!(pairs, expected);
    assert!(d.stages_by_layers.iter().all(|s| s.shared_layers == 10 && s.paired_by == "layers"));
}

/// Same split (a micro-batch change): the pairs by layers are the pairs by rank.
#[test]
fn the_same_split_pairs_by_layers_as_by_rank() {
    let a = example();
    let mut b = a.clone();
    b["training"]["micro_batch_size"] = json!(2);
    let d = diff(&plan_value(&a).unwrap(), &plan_value(&b).unwrap());
    // VPP 5 over PP 4, 80 layers: stage r's chunks are layers [4(r + 4c), 4(r + 4c) + 4) for c = 0..5, none adjacent.
    assert_eq!(d.stages_by_layers[1].b_layers, vec![[4, 8], [20, 24], [36, 40], [52, 56], [68, 72]]);
    assert_eq!(d.stages_by_layers.len(), 4);
    for (x, y) in d.stages_by_layers.iter().zip(&d.stages) {
        assert_eq!((x.a_pipeline_rank, x.b_pipeline_rank, x.shared_layers, &x.terms), (y.a_pipeline_rank, y.b_pipeline_rank, 20, &y.terms));
    }
}
