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
