//! Search, sizing and plan throughput: `cargo bench -p meshplan-core --bench search` (`-- size` for the sizing alone).

use criterion::{Criterion, criterion_group, criterion_main};
use meshplan_core::search::{self, SearchOptions};
use meshplan_core::size;
use meshplan_core::plan_str;
use serde_json::json;
use std::hint::black_box;
use std::time::Duration;

fn plan(model: &str, gpus: u64, seq: u64, gbs: u64) -> serde_json::Value {
    json!({"model": model, "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": gpus / 8},
           "training": {"seq_length": seq, "global_batch_size": gbs}})
}

fn benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("search");
    g.sample_size(10).measurement_time(Duration::from_secs(15)).warm_up_time(Duration::from_secs(2));
    for (name, model, gpus, gbs) in [
        ("deepseek-v3/2048", "deepseek-v3", 2048u64, 4096u64),
        ("deepseek-v3/16384", "deepseek-v3", 16384, 16384),
        ("llama-3.1-405b/16384", "llama-3.1-405b", 16384, 16384),
    ] {
        // As `meshplan search` and the page read the plan: plain defaults with the tuned speed settings settled per
        // candidate (search/speed.rs); `/plain` the search without them.
        let (p, tuning) = search::read_for_search(&plan(model, gpus, 4096, gbs)).expect("plan");
        let opts = SearchOptions::default();
        let run = |p: &_, t: &search::Tuning| search::search_counted(p, &opts, t, u64::MAX).map(|(r, _)| r).expect("within the budget");
        let r = run(&p, &tuning);
        eprintln!("{name}: evaluated {} valid {} skipped by memory {}", r.evaluated, r.valid, r.pruned_by_memory);
        g.bench_function(name, |b| b.iter(|| black_box(run(black_box(&p), &tuning))));
        let plain = search::Tuning { tuned: None, ..tuning.clone() };
        g.bench_function(format!("{name}/plain"), |b| b.iter(|| black_box(run(black_box(&p), &plain))));
    }
    g.finish();
    // Cluster sizing (issue 25): DeepSeek-V3 on 14.8T tokens (its paper's pre-training corpus), global batch 8,192 of
    // 4,096, over 16 … 2,048 nodes of 8 H100 (15 counts), with a 60-day deadline.
    let mut g = c.benchmark_group("size");
    g.sample_size(10).measurement_time(Duration::from_secs(20)).warm_up_time(Duration::from_secs(2));
    let request = size::SizeRequest { tokens: Some("14.8T".into()), deadline: Some("60d".into()), nodes: Some("16..2048".into()), ..Default::default() };
    let sizing = plan("deepseek-v3", 8, 4096, 8192);
    let r = size::size_value(&sizing, &request).expect("sizes");
    eprintln!("size deepseek-v3/16..2048: {} counts, work {}, fewest nodes meeting 60 d {:?}", r.points.len(), r.work, r.fewest_nodes_meeting_deadline);
    g.bench_function("deepseek-v3/16..2048", |b| b.iter(|| black_box(size::size_value(black_box(&sizing), &request).expect("sizes"))));
    g.finish();
    let mut g = c.benchmark_group("plan_str");
    g.sample_size(20);
    let text = json!({"model": "llama-3.1-405b", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 2048},
        "training": {"seq_length": 8192, "global_batch_size": 2048, "micro_batch_size": 1, "recompute_granularity": "selective", "use_distributed_optimizer": true},
        "parallelism": {"tensor_model_parallel_size": 8, "pipeline_model_parallel_size": 16, "virtual_pipeline_model_parallel_size": 2,
                        "context_parallel_size": 2, "sequence_parallel": true}})
    .to_string();
    g.bench_function("llama-3.1-405b/16384", |b| b.iter(|| black_box(plan_str(black_box(&text)).expect("plan"))));
    g.finish();
}

criterion_group!(search_benches, benches);
criterion_main!(search_benches);
