//! The parallelism table: every row a typed field read from `parallelism`, the plan JSON's keys exactly the rows (and
//! the one derived field), each row's bounds enforced, and every row read back from every export and import.

use meshplan_core::parallelism::{Kind, PARALLELISM, PARALLELISM_DOCS, Parallelism};
use meshplan_core::{Code, plan_value};
use serde_json::{Value, json};

fn plan(parallelism: Value) -> Value {
    json!({"model": "qwen3-30b-a3b", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 4},
           "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 256},
           "parallelism": parallelism})
}

/// A value of each row other than its default, valid together on 32 GPUs for Qwen3-30B-A3B (48 layers, 128 experts):
/// TP 2 · PP 4 · CP 2 = 16, DP 2; the expert mesh ETP 1 · EP 8 · PP 4 = 32, expert DP 1. 48 layers on 4 stages × VPP 2
/// with 5 on the first and 7 on the last: the middle 2 stages hold (48 − 12) / 2 = 18, 9 a chunk.
fn non_default(key: &str) -> Value {
    match key {
        "tensor_model_parallel_size" => json!(2),
        "pipeline_model_parallel_size" => json!(4),
        "virtual_pipeline_model_parallel_size" => json!(2),
        "context_parallel_size" => json!(2),
        "expert_model_parallel_size" => json!(8),
        "expert_tensor_parallel_size" => json!(1),
        "sequence_parallel" => json!(true),
        "order" => json!("tp-cp-ep-pp-dp"),
        "num_layers_in_first_pipeline_stage" => json!(5),
        "num_layers_in_last_pipeline_stage" => json!(7),
        "microbatch_group_size_per_vp_stage" => json!(4),
        "overlap_p2p_comm" => json!(false),
        "pipeline_model_parallel_layout" => json!("Et*11|t*12|t*12|t*13L"),
        "account_for_embedding_in_pipeline_split" => json!(true),
        "account_for_loss_in_pipeline_split" => json!(true),
        other => panic!("row {other} has no test value: add one here"),
    }
}

#[test]
fn rows_are_unique_documented_and_each_is_a_field() {
    let mut keys: Vec<&str> = PARALLELISM.iter().map(|r| r.key).collect();
    let n = keys.len();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), n, "a key twice");
    assert_eq!(PARALLELISM_DOCS.len(), PARALLELISM.len());
    let p = Parallelism::default();
    for r in PARALLELISM {
        assert!(p.get(r.key).is_some(), "{} is not a field", r.key);
        assert_eq!(r.path, format!("parallelism.{}", r.key));
        assert_eq!(r.doc().name.plan, r.path, "the docs are row for row");
        assert!(!r.label.is_empty() && !r.help.is_empty() && !r.default.is_empty(), "{}", r.key);
        assert!(!r.doc().megatron_core.is_empty() && !r.doc().source.is_empty(), "{}", r.key);
        if let Some((lo, hi)) = r.bounds {
            assert!(lo <= hi && matches!(r.kind, Kind::UInt | Kind::OptUInt), "{}", r.key);
        }
    }
    // The labels the page and the exports' headers show.
    let label = |k: &str| PARALLELISM.iter().find(|r| r.key == k).unwrap().label;
    assert_eq!(
        ["TP", "PP", "VPP", "CP", "EP", "ETP"],
        [
            "tensor_model_parallel_size",
            "pipeline_model_parallel_size",
            "virtual_pipeline_model_parallel_size",
            "context_parallel_size",
            "expert_model_parallel_size",
            "expert_tensor_parallel_size"
        ]
        .map(label)
    );
}

#[test]
fn the_plan_json_keys_are_the_rows_in_order_and_the_derived_flag() {
    // Every row set (the layout too, which is left out of the JSON when absent).
    let given: serde_json::Map<String, Value> = PARALLELISM.iter().map(|r| (r.key.to_string(), non_default(r.key))).collect();
    let r = plan_value(&plan(Value::Object(given))).unwrap();
    // The keys in the order the report writes them (serde_json's map would sort them).
    let text = serde_json::to_string(&r.plan.parallelism).unwrap();
    let out: Value = serde_json::from_str(&text).unwrap();
    let mut keys: Vec<&str> = out.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_by_key(|k| text.find(&format!("\"{k}\":")));
    let mut rows: Vec<&str> = PARALLELISM.iter().map(|r| r.key).collect();
    // The one field that is not an input: whether ETP took Megatron-Core's default, right after ETP.
    let etp = rows.iter().position(|k| *k == "expert_tensor_parallel_size").unwrap();
    rows.insert(etp + 1, "expert_tensor_parallel_size_defaulted");
    assert_eq!(keys, rows);
}

#[test]
fn every_row_reads_its_value() {
    for row in PARALLELISM {
        let v = non_default(row.key);
        // Each row alone beside the sizes it needs to be meaningful.
        let r = plan_value(&plan(json!({row.key: v.clone()}))).unwrap();
        assert_eq!(r.plan.parallelism.get(row.key), Some(v.clone()), "{}", row.key);
        assert!(!r.diagnostics.iter().any(|d| matches!(d.code, Code::InvalidValue | Code::UnknownField)), "{}: {:?}", row.key, r.diagnostics);
    }
    // Unset: Megatron-Core's defaults (ETP = TP, the default order).
    let r = plan_value(&plan(json!({"tensor_model_parallel_size": 4}))).unwrap();
    let p = &r.plan.parallelism;
    assert_eq!((p.etp(), p.expert_tensor_parallel_size_defaulted, p.order.as_str()), (4, true, "tp-cp-ep-dp-pp"));
}

#[test]
fn each_integer_row_refuses_a_value_past_its_bounds_and_keeps_the_default() {
    for row in PARALLELISM.iter().filter(|r| r.bounds.is_some()) {
        let (_, hi) = row.bounds.unwrap();
        let r = plan_value(&plan(json!({row.key: hi + 1}))).unwrap();
        let d = r.diagnostics.iter().find(|d| d.code == Code::InvalidValue).unwrap_or_else(|| panic!("{}: no invalid-value", row.key));
        assert!(d.message.contains(row.path), "{}: {}", row.key, d.message);
        let default = Parallelism::default();
        // ETP's default is TP (1 here).
        assert_eq!(r.plan.parallelism.get(row.key), default.get(row.key), "{}", row.key);
    }
}

/// Every row, set to a value other than its default, is written by every export that takes it and read back by the
/// importer of that export as the same value — so a row a consumer misses fails here.
#[test]
fn every_row_round_trips_through_every_export_and_import() {
    use meshplan_core::imports::{ImportOptions, import_plan};
    use meshplan_core::{ExportKind, export};
    let mut failures = Vec::new();
    for row in PARALLELISM {
        let v = non_default(row.key);
        let mut given = json!({row.key: v.clone()});
        // Megatron-LM's validate_args turns sequence parallelism off at TP 1 (megatron/training/arguments.py), and the
        // importer normalises as it does: SP is tried at TP 2.
        if row.key == "sequence_parallel" {
            given["tensor_model_parallel_size"] = json!(2);
        }
        let report = plan_value(&plan(given)).unwrap();
        for kind in [ExportKind::Bridge, ExportKind::BridgeCli, ExportKind::MegatronLm, ExportKind::Plan] {
            let text = export(kind, &report.plan, &report);
            let opts = ImportOptions { gpu: Some("h100-sxm-80gb".into()), ..ImportOptions::default() };
            match import_plan(&text, &opts) {
                Ok((_, plan, _)) => {
                    let got = plan.parallelism.get(row.key);
                    if got.as_ref() != Some(&v) {
                        failures.push(format!("{} via {}: wrote {v}, read back {got:?}", row.key, kind.key()));
                    }
                }
                Err(e) => failures.push(format!("{} via {}: {}", row.key, kind.key(), e.message)),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
