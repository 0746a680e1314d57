//! `meshplan search`: the JSON contract, the table, exit statuses 0 / 1 / 2.

mod common;
use common::{meshplan, run};
use serde_json::{Value, json};

fn search(plan: &Value, extra: &[&str]) -> (i32, String, String) {
    run(&[&["search", "-"], extra].concat(), Some(&plan.to_string()))
}

fn llama_8b() -> Value {
    json!({"model": "llama-3.1-8b", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 1},
           "training": {"seq_length": 8192, "global_batch_size": 128}})
}

#[test]
fn json_shape() {
    let (code, out, err) = search(&llama_8b(), &["--top", "3", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).expect("json");
    let evaluated = v["evaluated"].as_u64().unwrap();
    let valid = v["valid"].as_u64().unwrap();
    let cands = v["candidates"].as_array().unwrap();
    assert_eq!(cands.len(), 3);
    assert!(evaluated >= valid && valid >= 3);
    for (i, c) in cands.iter().enumerate() {
        for k in [
            "tensor_model_parallel_size",
            "pipeline_model_parallel_size",
            "virtual_pipeline_model_parallel_size",
            "context_parallel_size",
            "expert_model_parallel_size",
            "expert_tensor_parallel_size",
            "sequence_parallel",
        ] {
            assert!(c["parallelism"].get(k).is_some(), "parallelism.{k} in {c}");
        }
        for k in ["micro_batch_size", "recompute_granularity", "use_distributed_optimizer"] {
            assert!(c["training"].get(k).is_some(), "training.{k}");
        }
        // The rates follow from the step time: GBS 128 of 8192 tokens on 8 GPUs per step, and MFU over the H100's
        // dense BF16 peak of 989 TFLOP/s (NVIDIA H100 datasheet).
        let rate = |k: &str| c[k].as_f64().unwrap_or_else(|| panic!("{k} in {c}"));
        let close = |a: f64, b: f64| (a / b - 1.0).abs() < 1e-9;
        assert!(close(rate("tokens_per_s_per_gpu"), 128.0 * 8192.0 / (rate("step_time_s") * 8.0)), "{c}");
        assert!(close(rate("mfu"), rate("model_tflops_per_gpu") / 989.0), "{c}");
        assert!(c["peak_bytes"].as_u64().is_some());
        assert!(c["why"].as_array().is_some_and(|w| !w.is_empty() && w.iter().all(Value::is_string)));
        // Each pick is compared with another: #1 with #2, the rest with #1; its step-time gap is the two step times'.
        let vs = &c["versus"];
        let other = if i == 0 { &cands[1] } else { &cands[0] };
        assert_eq!(vs["rank"], if i == 0 { 2 } else { 1 }, "{c}");
        assert_eq!(vs["step_time_delta_s"].as_f64(), Some(rate("step_time_s") - other["step_time_s"].as_f64().unwrap()), "{c}");
        assert!(vs["terms"].as_array().is_some_and(|t| t.iter().all(|t| t["term"].is_string() && t["delta_s"].is_number() && t["cause"].is_string())), "{c}");
        assert!(c["breakdown"]["compute_s"].as_f64().is_some_and(|x| x > 0.0), "{c}");
    }
    assert!(v["pareto"].as_array().is_some_and(|p| !p.is_empty()));
    // The winning layout, written back as the plan's parallelism, is a valid plan.
    let mut plan = llama_8b();
    plan["parallelism"] = cands[0]["parallelism"].clone();
    // Its speed settings are training settings too (docs/advisor.md: a row applied writes them into `training`).
    for (k, val) in cands[0]["training"].as_object().unwrap() {
        match val.as_object().filter(|_| k == "speed_settings") {
            Some(speed) => speed.iter().for_each(|(s, x)| plan["training"][s] = x.clone()),
            None => plan["training"][k] = val.clone(),
        }
    }
    let status = meshplan(&["plan", "-", "--format", "json"], Some(&plan.to_string()));
    assert_eq!(status.status.code(), Some(0), "{plan}");
    let report: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(report["memory"]["peak_bytes"], cands[0]["peak_bytes"]);
}

#[test]
fn table_is_the_default() {
    let (code, out, _) = search(&llama_8b(), &[]);
    assert_eq!(code, 0);
    assert!(out.contains("layouts evaluated") && out.contains("tok/s/GPU") && out.contains("#1 why") && out.contains("Pareto"), "{out}");
}

#[test]
fn nothing_fits_exits_1_with_the_smallest_peak() {
    let plan = json!({"model": "llama-3.1-405b", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 1},
                      "training": {"seq_length": 8192, "global_batch_size": 64}});
    let (code, out, err) = search(&plan, &["--format", "json"]);
    assert_eq!(code, 1, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert!(v["candidates"].as_array().unwrap().is_empty());
    assert!(err.contains("smallest peak") && err.contains("GiB"), "{err}");
}

#[test]
fn missing_fields_exit_2() {
    for drop in ["global_batch_size", "seq_length"] {
        let mut plan = llama_8b();
        plan["training"].as_object_mut().unwrap().remove(drop);
        let (code, _, err) = search(&plan, &[]);
        assert_eq!(code, 2);
        assert!(err.contains(drop), "{err}");
    }
    let mut plan = llama_8b();
    plan.as_object_mut().unwrap().remove("model");
    assert_eq!(search(&plan, &[]).0, 2);
    let mut plan = llama_8b();
    plan.as_object_mut().unwrap().remove("cluster");
    assert_eq!(search(&plan, &[]).0, 2);
    assert_eq!(search(&llama_8b(), &["--top", "0"]).0, 2);
}

#[test]
fn a_huge_top_is_clamped_with_a_note() {
    // --top 2^64 − 1: the core returns at most limits::MAX_SEARCH_TOP (1,000) candidates and says so; Llama-3.1-8B on
    // 8 GPUs has fewer valid layouts than that, so every distinct one is listed, under the note.
    let (code, out, err) = search(&llama_8b(), &["--top", "18446744073709551615"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("note: top 18446744073709551615 was asked; the search returns at most 1000 candidates"), "{out}");
    let (code, out, _) = search(&llama_8b(), &["--top", "1000000000", "--format", "json"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert!(v["notes"][0].as_str().unwrap().contains("top 1000000000"), "{}", v["notes"]);
    // Without a clamp there is no `notes` key: the JSON of every earlier search is unchanged.
    let (_, out, _) = search(&llama_8b(), &["--top", "3", "--format", "json"]);
    assert!(serde_json::from_str::<Value>(&out).unwrap().get("notes").is_none());
}

#[test]
fn each_pick_states_its_speed_settings() {
    // Llama 3.1 8B on 8 H100 leaves its speed settings to tuned defaults: its H100 perf recipe overlaps the DP
    // gradient reduction, and overlap_param_gather runs only with the distributed optimizer (Megatron-LM asserts).
    let (code, out, err) = search(&llama_8b(), &["--top", "3", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).expect("json");
    for c in v["candidates"].as_array().unwrap() {
        let speed = &c["training"]["speed_settings"];
        assert_eq!(speed["overlap_grad_reduce"], json!(true), "{c}");
        assert_eq!(speed["overlap_param_gather"], c["training"]["use_distributed_optimizer"], "{c}");
    }
    let (code, out, _) = search(&llama_8b(), &["--top", "3"]);
    assert_eq!(code, 0);
    assert!(out.contains("  - runs with: ") && out.contains("overlap_grad_reduce true"), "{out}");
    // With Megatron-Core's plain defaults nothing is tuned, and the JSON has no such field.
    let mut plain = llama_8b();
    plain["defaults"] = json!("megatron-core");
    let (_, out, _) = search(&plain, &["--top", "3", "--format", "json"]);
    let v: Value = serde_json::from_str(&out).expect("json");
    assert!(v["candidates"].as_array().unwrap().iter().all(|c| c["training"].get("speed_settings").is_none()));
}
