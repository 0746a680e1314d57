//! Computed fixes (`remedy::ranked`, issue 24): every diagnostic's one-click fix re-planned, the first listed for an
//! error one that clears it.

use meshplan_core::remedy::{clearing, ranked};
use meshplan_core::rules::pipeline::uneven_edges;
use meshplan_core::{Code, plan_value};
use serde_json::{Value, json};

/// The guide's DeepSeek-V3 layout (seed/parallelism-strategies.md: TP 2, PP 16, EP 64) on 1,024 H100, ETP left to
/// Megatron-Core's default (= TP = 2) and SP off, as a first-time user typed it (issue 24, item 2).
fn deepseek_v3_guide() -> Value {
    json!({
        "model": "deepseek-v3",
        "cluster": { "gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 128 },
        "training": { "global_batch_size": 4096, "seq_length": 4096, "micro_batch_size": 1 },
        "parallelism": { "tensor_model_parallel_size": 2, "pipeline_model_parallel_size": 16, "expert_model_parallel_size": 64 }
    })
}

fn set(plan: &Value, edits: &[(&str, Value)]) -> Value {
    let mut v = plan.clone();
    for (path, value) in edits {
        let (section, field) = path.split_once('.').unwrap();
        v[section][field] = value.clone();
    }
    v
}

fn errors(plan: &Value) -> Vec<Code> {
    plan_value(plan).unwrap().diagnostics.iter().filter(|d| d.is_error()).map(|d| d.code).collect()
}

#[test]
fn the_first_fix_listed_for_each_error_clears_it() {
    let plan = deepseek_v3_guide();
    let report = plan_value(&plan).unwrap();
    let now = errors(&plan);
    assert!(now.contains(&Code::WorldNotDivisibleExpert) && now.contains(&Code::LayersNotDivisibleByPp), "{now:?}");
    let all = ranked(&plan, &report);
    for code in &now {
        let Some(first) = clearing(&all, *code).next() else { continue };
        // Re-planned here from the edits alone: the error is gone.
        let edits: Vec<(&str, Value)> = first.edits.iter().map(|e| (e.path.as_str(), e.value.clone())).collect();
        assert!(!errors(&set(&plan, &edits)).contains(code), "{code:?}: {:?}", first.edits);
    }
    // The expert mesh: ETP·EP·PP must divide the world. ETP = 1 gives 1·64·16 = 1,024 = the world, and writes out a
    // default the user never typed; EP = 32 (2·32·16 = 1,024) changes what they typed: ETP = 1 first.
    let expert = clearing(&all, Code::WorldNotDivisibleExpert).next().expect("a fix for the expert mesh");
    assert_eq!(expert.edits.len(), 1);
    assert_eq!((expert.edits[0].path.as_str(), &expert.edits[0].value), ("parallelism.expert_tensor_parallel_size", &json!(1)));
    // 61 layers on 16 stages: first 3, last 2, 14 middle stages of 4 (3 + 14·4 + 2 = 61), not "PP 1".
    let layers = clearing(&all, Code::LayersNotDivisibleByPp).next().expect("a fix for the layer split");
    let got: Vec<(&str, &Value)> = layers.edits.iter().map(|e| (e.path.as_str(), &e.value)).collect();
    assert_eq!(
        got,
        [("parallelism.num_layers_in_first_pipeline_stage", &json!(3)), ("parallelism.num_layers_in_last_pipeline_stage", &json!(2))]
    );
}

#[test]
fn remedies_are_sorted_by_errors_left_then_change() {
    let plan = deepseek_v3_guide();
    let all = ranked(&plan, &plan_value(&plan).unwrap());
    assert!(all.len() >= 3, "{all:?}");
    for w in all.windows(2) {
        assert!((w[0].errors_after, !w[0].fits) <= (w[1].errors_after, !w[1].fits), "{w:?}");
        if (w[0].errors_after, w[0].fits) == (w[1].errors_after, w[1].fits) {
            assert!(w[0].distance <= w[1].distance, "{w:?}");
        }
    }
    // A plan with nothing to fix offers nothing but its diagnostics' one-click fixes. (TP 8: at TP 1 the 8B model's
    // 8.03 B parameters at 18 B each, 145 GB, do not fit in 80 GB, and the out-of-memory error offers its own fixes.)
    let fine = json!({"model": "llama-3.1-8b", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 1},
                      "training": {"global_batch_size": 8, "seq_length": 4096}, "parallelism": {"tensor_model_parallel_size": 8}});
    let r = plan_value(&fine).unwrap();
    assert_eq!(ranked(&fine, &r).len(), r.diagnostics.iter().filter(|d| !d.apply.is_empty()).count());
}

#[test]
fn uneven_edges_by_hand() {
    // 61 over 16: middle 4 leaves 61 − 14·4 = 5 = 3 + 2; middle 3 would leave 19 (10 + 9).
    assert_eq!(uneven_edges(61, 16), Some((3, 2, 4)));
    // 62 over 16: 62 − 56 = 6 = 3 + 3.
    assert_eq!(uneven_edges(62, 16), Some((3, 3, 4)));
    // Two stages are the edges alone: 61 = 31 + 30.
    assert_eq!(uneven_edges(61, 2).map(|(f, l, _)| (f, l)), Some((31, 30)));
    assert_eq!(uneven_edges(5, 1), None);
    assert_eq!(uneven_edges(3, 4), None);
}

/// Issue 22: the page's out-of-memory diagnostic lists the same fixes "Explain an OOM" ranks for a plan that does not
/// fit, and the first it lists brings the peak under the GPU whenever one change can. Llama 3.1 70B on 64 H100, TP 8,
/// PP 4, DP 2, seq 8192, no distributed optimizer and no recompute: 70.55 B parameters / (TP 8 · PP 4) = 2.2 B per GPU
/// at 18 B each (bf16 weight 2, fp32 gradient 4, Adam's fp32 master weight and two moments 12) is 39.7 GB of state;
/// the first stage holds the activations of 4 microbatches in flight (1F1B) of 8,192 tokens, no recompute: over the
/// 80 GB device, and recomputing them is one change that frees most of it.
#[test]
fn the_out_of_memory_error_lists_the_fixes_explain_an_oom_ranks() {
    let plan = json!({
        "defaults": "megatron-core",
        "model": "llama-3.1-70b",
        "cluster": { "gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 8 },
        "training": { "global_batch_size": 512, "seq_length": 8192, "micro_batch_size": 1, "use_distributed_optimizer": false },
        "parallelism": { "tensor_model_parallel_size": 8, "pipeline_model_parallel_size": 4 }
    });
    let report = plan_value(&plan).unwrap();
    assert!(errors(&plan).contains(&Code::OutOfMemory), "{:?}", errors(&plan));
    let fixes = meshplan_core::oom::memory_fixes(&plan, &report);
    let fitting: Vec<_> = fixes.iter().filter(|f| f.fits && !f.edits.is_empty()).collect();
    assert!(!fitting.is_empty(), "one change fits: {fixes:?}");
    let all = ranked(&plan, &report);
    // Every fitting fix of the explanation is among the diagnostic's, as the same edits.
    for f in &fitting {
        let edits: Vec<(String, Value)> = f.edits.clone();
        assert!(
            all.iter().any(|r| r.edits.iter().map(|e| (e.path.clone(), e.value.clone())).collect::<Vec<_>>() == edits),
            "{} is not offered",
            f.change
        );
    }
    // The first fix listed under the error fits, and re-planned from its edits alone the error is gone.
    let first = clearing(&all, Code::OutOfMemory).next().expect("a fix that clears out-of-memory");
    assert!(first.fits, "{first:?}");
    let edits: Vec<(&str, Value)> = first.edits.iter().map(|e| (e.path.as_str(), e.value.clone())).collect();
    assert!(!errors(&set(&plan, &edits)).contains(&Code::OutOfMemory), "{:?}", first.edits);
}

