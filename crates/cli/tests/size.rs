//! `meshplan size`: the JSON contract, the table, exit statuses 0 / 1 / 2.

mod common;
use common::run;
use serde_json::{Value, json};

fn size(plan: &Value, extra: &[&str]) -> (i32, String, String) {
    run(&[&["size", "-"], extra].concat(), Some(&plan.to_string()))
}

fn llama_8b() -> Value {
    json!({"model": "llama-3.1-8b", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 1},
           "training": {"seq_length": 8192, "global_batch_size": 128}})
}

#[test]
fn json_shape_and_arithmetic() {
    // 128 × 8,192 = 1,048,576 tokens a step; 1,048,576,000 tokens are 1,000 steps.
    let (code, out, err) = size(&llama_8b(), &["--tokens", "1048576000", "--nodes", "1..2", "--deadline", "30d", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).expect("json");
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    for q in points {
        assert_eq!(q["train_iters"], 1000);
        let step = q["best"]["step_time_s"].as_f64().unwrap();
        let time = q["time_to_train_s"].as_f64().unwrap();
        assert!((time / (1000.0 * step) - 1.0).abs() < 1e-12, "{q}");
        let gpus = q["gpus"].as_f64().unwrap();
        assert!((q["gpu_hours"].as_f64().unwrap() / (gpus * time / 3600.0) - 1.0).abs() < 1e-12);
        assert!(q["best"]["parallelism"]["tensor_model_parallel_size"].is_u64());
        assert!(q["peak_bytes"].is_u64() && q["mfu"].is_f64());
    }
    // Minutes of training on 1 node meet 30 days: the fewest nodes is 1.
    assert_eq!(v["fewest_nodes_meeting_deadline"], 1);
    assert_eq!(v["min_gpus"], 8);
    assert!(v["assumptions"].as_array().is_some_and(|a| !a.is_empty()));
}

#[test]
fn table_names_the_answers() {
    let (code, out, err) = size(&llama_8b(), &["--tokens", "1B", "--nodes", "1..2", "--deadline", "30d", "--gpu-hours", "1M"]);
    assert_eq!(code, 0, "{err}");
    for want in ["nodes", "GPU-hours", "Fewest GPUs that hold the model: 8", "Fewest nodes meeting the 30.0-day deadline: 1 nodes", "Fastest run within 1000000 GPU-hours", "Assumed:"] {
        assert!(out.contains(want), "no {want:?} in:\n{out}");
    }
}

#[test]
fn exit_1_when_no_count_meets_the_deadline_and_2_on_bad_input() {
    // 15T tokens on one node of 8 H100: years, not a minute.
    let (code, out, err) = size(&llama_8b(), &["--tokens", "15T", "--nodes", "1", "--deadline", "1m"]);
    assert_eq!(code, 1, "{out}");
    assert!(err.contains("no count tried meets the deadline"), "{err}");
    for (args, code_name) in [
        (vec!["--tokens", "0", "--nodes", "1"], "size-zero-tokens"),
        (vec!["--tokens", "1B", "--deadline", "0d"], "size-zero-deadline"),
        (vec!["--tokens", "1B", "--nodes", "0..4"], "size-nodes-out-of-range"),
        (vec!["--nodes", "1"], "size-needs-tokens"),
    ] {
        let (code, _, err) = size(&llama_8b(), &args);
        assert_eq!(code, 2, "{args:?}");
        assert!(err.contains(code_name), "{args:?}: {err}");
    }
}
