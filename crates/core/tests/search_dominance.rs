//! The search's pruning assumptions, checked against the memory and performance models they rely on:
//! without the distributed optimizer a layout never needs less memory nor runs faster (so the search does not rank
//! it), and a larger micro-batch never needs less memory (so the search stops at the first that does not fit).

use meshplan_core::{memory, parse_plan, perf, pipeline, report};
use serde_json::json;

fn peak_and_step(v: &serde_json::Value) -> (u64, f64) {
    let (p, _) = parse_plan(v).unwrap();
    let par = &p.parallelism;
    let split = pipeline::split_layers(p.model.num_layers, par.pp(), par.vpp(), par.num_layers_in_first_pipeline_stage, par.num_layers_in_last_pipeline_stage)
        .unwrap();
    let d = report::derive(&p, Some(&split));
    (memory::estimate(&p, &d, &split).peak_bytes, perf::estimate(&p, &d).step_time_s)
}

#[test]
fn distributed_optimizer_and_small_micro_batches_dominate() {
    let layouts = [
        ("llama-3.1-8b", 8u64, json!({"tensor_model_parallel_size": 2, "sequence_parallel": true})),
        ("llama-3.1-70b", 64, json!({"tensor_model_parallel_size": 4, "pipeline_model_parallel_size": 4, "virtual_pipeline_model_parallel_size": 2, "sequence_parallel": true})),
        ("mixtral-8x7b", 32, json!({"tensor_model_parallel_size": 2, "expert_model_parallel_size": 8, "expert_tensor_parallel_size": 1, "sequence_parallel": true})),
        ("deepseek-v3", 1024, json!({"tensor_model_parallel_size": 2, "pipeline_model_parallel_size": 16, "expert_model_parallel_size": 64,
                                      "expert_tensor_parallel_size": 1, "sequence_parallel": true, "num_layers_in_first_pipeline_stage": 1})),
        ("llama-3.1-405b", 2048, json!({"tensor_model_parallel_size": 8, "pipeline_model_parallel_size": 2, "context_parallel_size": 2, "sequence_parallel": true})),
    ];
    for (model, gpus, par) in layouts {
        for recompute in ["none", "selective", "full"] {
            let mut last_peak = 0u64;
            for mbs in [1u64, 2, 4, 8] {
                let mut t = json!({"seq_length": 4096, "global_batch_size": 4096, "micro_batch_size": mbs, "recompute_granularity": recompute});
                if recompute == "full" {
                    t["recompute_method"] = json!("uniform");
                    t["recompute_num_layers"] = json!(1);
                }
                let v = |dist: bool| {
                    let mut t = t.clone();
                    t["use_distributed_optimizer"] = json!(dist);
                    json!({"model": model, "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": gpus / 8}, "training": t, "parallelism": par})
                };
                let (peak_d, step_d) = peak_and_step(&v(true));
                let (peak_n, step_n) = peak_and_step(&v(false));
                assert!(peak_n >= peak_d, "{model} {recompute} mbs {mbs}: {peak_n} < {peak_d}");
                assert!(step_n >= step_d, "{model} {recompute} mbs {mbs}: {step_n} < {step_d}");
                assert!(peak_d >= last_peak, "{model} {recompute}: mbs {mbs} needs less memory than mbs {}", mbs / 2);
                last_peak = peak_d;
            }
        }
    }
}
