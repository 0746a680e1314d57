//! Layout search: validity against the full report, determinism, counts, the Pareto front, sensible picks.

use meshplan_core::search::{self, SearchOptions, SearchResult};
use meshplan_core::{layout, plan_resolved};
use serde_json::{Value, json};

fn plan(model: &str, gpus: u64, seq: u64, gbs: u64) -> Value {
    json!({"model": model, "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": gpus.div_ceil(8)},
           "training": {"seq_length": seq, "global_batch_size": gbs}})
}

fn run(v: &Value, top: usize) -> SearchResult {
    search::search_value(v, &SearchOptions { top, ..SearchOptions::default() }).expect("plannable")
}

#[test]
fn print_llama_8b() {
    let r = run(&plan("llama-3.1-8b", 8, 8192, 128), 5);
    println!("evaluated {} valid {} pruned {} pareto {}", r.evaluated, r.valid, r.pruned_by_memory, r.pareto.len());
    println!("{}", serde_json::to_string_pretty(&r.candidates).unwrap());
    println!("{:?}", r.rejected_by);
}
