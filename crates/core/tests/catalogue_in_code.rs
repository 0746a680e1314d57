//! Catalogue facts are data (ARCHITECTURE.md, `presets.rs`): which GPU is the default and which GPUs are Grace-Blackwell
//! superchips are fields of `data/gpus.json`, so a new row needs no code (issue 20, ask 5).

use meshplan_core::{Code, plan_resolved, plan_str, presets};
use std::path::Path;

/// Every `.rs` file under `dir`, with the text before its first `#[cfg(test)]` (unit tests may name a GPU).
fn sources(dir: &Path, out: &mut Vec<(String, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let path = e.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or_default().to_string();
            out.push((path.display().to_string(), code));
        }
    }
}

#[test]
fn no_gpu_key_is_written_in_the_code_of_the_core_or_the_cli() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for dir in ["crates/core/src", "crates/cli/src", "crates/search-worker/src"] {
        sources(&root.join(dir), &mut files);
    }
    assert!(files.len() > 50, "read {} files", files.len());
    let mut found = Vec::new();
    for g in presets::gpus() {
        // A key as a string literal, or inside one (`\"gb200\"` in a message, `"gb200" | "gb300"` in a match).
        let (quoted, escaped) = (format!("\"{}\"", g.key), format!("\\\"{}\\\"", g.key));
        for (path, code) in &files {
            if code.contains(&quoted) || code.contains(&escaped) {
                found.push(format!("{path}: {}", g.key));
            }
        }
    }
    assert!(found.is_empty(), "GPU keys written in code instead of read from data/gpus.json: {found:#?}");
}

#[test]
fn the_catalogue_has_exactly_one_default_gpu_and_a_plan_without_one_gets_it() {
    let defaults: Vec<&str> = presets::gpus().iter().filter(|g| g.default).map(|g| g.key.as_str()).collect();
    assert_eq!(defaults, ["h100-sxm-80gb"]);
    let r = plan_str(r#"{"model": "llama-3.1-8b", "cluster": {"gpus_per_node": 8, "num_nodes": 1}}"#).unwrap();
    assert_eq!(r.plan.cluster.gpu, "h100-sxm-80gb");
}

#[test]
fn grace_blackwell_is_a_field_of_the_gpu_rows() {
    let gb: Vec<&str> = presets::gpus().iter().filter(|g| g.grace_blackwell).map(|g| g.key.as_str()).collect();
    assert_eq!(gb, ["gb200", "gb300"]);
}

/// Bridge's DeepEP check (flex_dispatcher_backend.py validate_flex_dispatcher_backend) refuses a compute-capability-10
/// device not named B200/B300: a new Grace-Blackwell row (here GB200's row renamed "gb400-nvl72", as a new line of
/// gpus.json would be) gets the warning with no code change; the same row without the field does not.
#[test]
fn a_new_grace_blackwell_row_gets_the_deepep_warning_without_code() {
    // Megatron-Core's default backend (deepep): plain defaults, not the GB200 perf recipe's.
    let text = r#"{"defaults": "megatron-core", "model": "deepseek-v3", "cluster": {"gpu": "gb200", "gpus_per_node": 4, "num_nodes": 64},
        "parallelism": {"tensor_model_parallel_size": 1, "pipeline_model_parallel_size": 16, "expert_model_parallel_size": 16},
        "training": {"seq_length": 4096, "global_batch_size": 1024, "moe_token_dispatcher_type": "flex"}}"#;
    let r = plan_str(text).unwrap();
    let warned = |r: &meshplan_core::Report| r.diagnostics.iter().any(|d| d.code == Code::FlexBackendGpuBridge);
    assert!(warned(&r), "gb200 with deepep: {:?}", r.diagnostics.iter().map(|d| d.code.as_str()).collect::<Vec<_>>());
    let mut p = r.plan.clone();
    p.gpu.key = "gb400-nvl72".into();
    p.gpu.name = "NVIDIA GB400 (a row not in the catalogue)".into();
    p.cluster.gpu = p.gpu.key.clone();
    assert!(warned(&plan_resolved(&p, Vec::new())), "a new Grace-Blackwell row");
    p.gpu.grace_blackwell = false;
    assert!(!warned(&plan_resolved(&p, Vec::new())), "a row not marked Grace-Blackwell");
}

/// Issue 21: a V100 run in bf16 is said, not planned silently. Volta's tensor cores take FP16 only (BF16 arrived with
/// Ampere; the catalogue's `no_bf16_tensor_cores`, with its source): a bf16 plan on the V100 is `precision-unsupported`
/// with fp16 as its one-click fix; the same plan in fp16 is not; an A100 (Ampere) in bf16 is not.
#[test]
fn bf16_on_a_gpu_without_bf16_tensor_cores_is_said() {
    let plan = |gpu: &str, precision: &str| {
        format!(
            r#"{{"model": "llama-3.2-1b", "cluster": {{"gpu": "{gpu}", "gpus_per_node": 8, "num_nodes": 1}},
                 "training": {{"seq_length": 2048, "global_batch_size": 64, "precision": "{precision}"}},
                 "parallelism": {{"tensor_model_parallel_size": 1}}}}"#
        )
    };
    let flagged = |text: String| plan_str(&text).unwrap().diagnostics.into_iter().find(|d| d.code == Code::PrecisionUnsupported);
    let d = flagged(plan("v100-sxm2-32gb", "bf16")).expect("bf16 on V100 is said");
    assert!(d.message.contains("no bf16 tensor cores"), "{}", d.message);
    assert_eq!(d.apply.len(), 1);
    assert_eq!((d.apply[0].path.as_str(), &d.apply[0].value), ("training.precision", &serde_json::json!("fp16")));
    assert!(flagged(plan("v100-sxm2-32gb", "fp16")).is_none());
    assert!(flagged(plan("a100-sxm-80gb", "bf16")).is_none());
    assert!(presets::gpu("v100-sxm2-32gb").unwrap().no_bf16_tensor_cores && !presets::gpu("a100-sxm-80gb").unwrap().no_bf16_tensor_cores);
}
