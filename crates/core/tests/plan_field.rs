//! `Plan::field` reads each cluster, training and parallelism field as serde's derived serializer writes the plan (the
//! oracle: what `report::published` compared before it read the typed plan), for every model preset, every perf
//! recipe's plan (the plans whose published throughput `published` compares) and a plan that sets what they leave alone.

use meshplan_core::parallelism::PARALLELISM;
use meshplan_core::{plan_value, presets, recipes, settings};
use serde_json::{Value, json};

fn compare(plan: &Value, seen: &mut usize) {
    let Ok(report) = plan_value(plan) else { return };
    let p = &report.plan;
    let by_serde = serde_json::to_value(p).unwrap();
    // Every key serde writes, and every row of the settings and parallelism tables (which serde may leave out).
    let rows = settings::all().map(|r| ("training", r.key)).chain(PARALLELISM.iter().filter_map(|r| r.path.split_once('.')));
    let written = ["cluster", "training", "parallelism"].into_iter().flat_map(|s| by_serde[s].as_object().unwrap().keys().map(move |k| (s, k.as_str())));
    for (section, key) in written.chain(rows) {
        assert_eq!(p.field(section, key).as_ref(), by_serde[section].get(key), "{section}.{key} of {plan}");
        *seen += 1;
    }
    // A key that is no field of the section (nor of any) is none.
    assert_eq!(p.field("training", "tensor_model_parallel_size"), None);
    assert_eq!(p.field("model", "num_layers"), None);
}

#[test]
fn every_field_reads_as_serde_writes_it() {
    let mut seen = 0;
    for m in presets::models() {
        compare(&json!({"model": m.key, "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 4}}), &mut seen);
    }
    let perf: Vec<_> = recipes::all().iter().filter(|r| r.name.starts_with("perf.")).collect();
    assert!(perf.len() >= 20, "{} perf recipes", perf.len());
    for r in perf {
        compare(&json!({"recipe": r.name}), &mut seen);
    }
    compare(
        &json!({"model": "deepseek-v3", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 128, "host_memory_per_node_gb": 2048},
                "training": {"seq_length": 4096, "micro_batch_size": 1, "recompute_granularity": "full", "recompute_num_layers": 2, "precision": "fp8"},
                "parallelism": {"tensor_model_parallel_size": 2, "pipeline_model_parallel_size": 16, "expert_model_parallel_size": 64,
                                "pipeline_model_parallel_layout": "Et*3|(tt|)*29,m|L"}}),
        &mut seen,
    );
    assert!(seen > 5_000, "{seen} fields compared");
}
