//! The search asks the rules which layouts are valid instead of restating them: within its bounds it finds exactly
//! the layouts the full report accepts, no more (a restated rule too loose) and no fewer (one too strict).

mod common;

use common::small_moe;
use meshplan_core::plan_value;
use meshplan_core::search::{self, SearchOptions};
use serde_json::{Value, json};

fn cluster_and_batch(model: Value) -> Value {
    json!({"model": model, "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 2},
           "training": {"seq_length": 4096, "global_batch_size": 256}})
}

/// The full report's verdict on one layout, with the search's first recompute / optimizer variant (full uniform
/// recompute of one layer, distributed optimizer) at micro-batch 1.
fn report_accepts(base: &Value, tp: u64, pp: u64, vpp: u64, cp: u64, ep: u64, etp: u64, sp: bool) -> bool {
    let mut v = base.clone();
    v["training"]["micro_batch_size"] = json!(1);
    v["training"]["recompute_granularity"] = json!("full");
    v["training"]["recompute_method"] = json!("uniform");
    v["training"]["recompute_num_layers"] = json!(1);
    v["training"]["use_distributed_optimizer"] = json!(true);
    v["parallelism"] = json!({"tensor_model_parallel_size": tp, "pipeline_model_parallel_size": pp,
        "virtual_pipeline_model_parallel_size": if vpp > 1 { json!(vpp) } else { Value::Null },
        "context_parallel_size": cp, "expert_model_parallel_size": ep, "expert_tensor_parallel_size": etp, "sequence_parallel": sp});
    plan_value(&v).expect("plan parses").valid
}

#[test]
fn the_search_finds_exactly_the_layouts_the_report_accepts() {
    // small_moe: 16 layers, 64 experts, tiny widths, so memory never decides and nothing is pruned by it. 16 layers
    // divide over every PP up to 16, so the search proposes no uneven first/last stages.
    let base = cluster_and_batch(small_moe());
    let opts = SearchOptions { micro_batch_sizes: vec![1], max_tp: 8, max_cp: 2, ..SearchOptions::default() };
    let r = search::search_value(&base, &opts).expect("search");
    assert_eq!(r.pruned_by_memory, 0);

    // The search's bounds, not its rules: TP up to the NVLink domain of 8, CP up to 2, PP up to the 16 layers,
    // VPP up to a stage's layers, EP up to the 64 experts, ETP at 1 or TP; every size from 1 to the bound.
    let mut accepted = 0u64;
    for tp in 1..=8 {
        for cp in 1..=2 {
            for pp in 1..=16 {
                for vpp in 1..=16 / pp {
                    for etp in if tp > 1 { vec![1, tp] } else { vec![1] } {
                        for ep in 1..=16 {
                            for sp in [true, false] {
                                accepted += u64::from(report_accepts(&base, tp, pp, vpp, cp, ep, etp, sp));
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(accepted > 50, "only {accepted} layouts accepted");
    // Six recompute / optimizer variants per layout, each valid: the rules the variants touch all pass here.
    assert_eq!(r.valid, 6 * accepted, "search {} valid vs report {} layouts × 6", r.valid, accepted);
}
