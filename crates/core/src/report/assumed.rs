//! An out-of-memory verdict that rests on a setting the plan left unstated says so: each memory setting the report
//! assumed (a perf recipe's value or Megatron-Core's default, `crate::tuned`) is flipped in turn to the value that
//! saves memory, and the plan's memory is estimated again; the first flip that fits is named with what it saves
//! (`out-of-memory-assumed`), else every applicable flip together if they fit; else nothing is said (the verdict does
//! not rest on an unstated setting).

use super::{Report, derive, memory_of, split_of};
use crate::plan::{self, Plan};
use crate::{Code, Diagnostic};
use serde_json::{Value, json};

/// The memory settings a verdict may rest on, each with the value that saves memory, in the order tried (the
/// gradient buffer, the optimizer's sharding, FP8 weights, then recompute). Each flip is tried only when every key it
/// sets is unstated and the assumed value differs.
fn flips() -> [(&'static str, Vec<(&'static str, Value)>); 6] {
    [
        // param_and_grad_buffer.py: the main-grad buffer in the parameter dtype (2 B) instead of fp32 (4 B).
        ("grad_reduce_in_fp32", vec![("grad_reduce_in_fp32", json!(false))]),
        // distrib_optimizer.py: master weights and moments sharded over DP.
        ("use_distributed_optimizer", vec![("use_distributed_optimizer", json!(true))]),
        // FP8 primary weights (fp8_param_gather): no bf16 copy beside the quantized one.
        ("fp8_param_gather", vec![("fp8_param_gather", json!(true))]),
        // transformer_engine.py is_first_microbatch: no cached quantized copy per module.
        ("disable_parameter_transpose_cache", vec![("disable_parameter_transpose_cache", json!(true))]),
        // transformer_config.py: selective recompute of core attention (Megatron-Core's default module list).
        ("recompute_granularity", vec![("recompute_granularity", json!("selective"))]),
        // Full recompute of every layer, one at a time (uniform, 1 layer).
        (
            "recompute_granularity",
            vec![("recompute_granularity", json!("full")), ("recompute_method", json!("uniform")), ("recompute_num_layers", json!(1))],
        ),
    ]
}

/// The memory of `value` with `set` written into its training section (planned as the report was: the same excluded
/// assumptions). None when the plan no longer reads.
fn memory_with(value: &Value, excluded: &[String], set: &[(&str, Value)]) -> Option<(Plan, crate::memory::MemoryReport)> {
    let mut v = value.clone();
    let t = v.as_object_mut()?.entry("training").or_insert_with(|| json!({}));
    for (k, x) in set {
        t.as_object_mut()?.insert(k.to_string(), x.clone());
    }
    let (p, ..) = plan::parse_plan_excluding(&v, excluded).ok()?;
    let split = split_of(&p);
    let derived = derive(&p, split.as_ref().ok());
    let m = memory_of(&p, &derived, &split);
    Some((p, m))
}

fn gib(b: u64) -> f64 {
    b as f64 / (1u64 << 30) as f64
}

/// The diagnostic naming the assumed settings an out-of-memory verdict rests on, if the report has that verdict and
/// the plan left any memory setting unstated.
pub fn verdict(value: &Value, excluded: &[String], report: &Report) -> Option<Diagnostic> {
    if report.memory.fits || !report.diagnostics.iter().any(|d| d.code == Code::OutOfMemory) {
        return None;
    }
    let assumed = |k: &str| report.assumptions.iter().find(|a| a.key == k);
    // FP8 weights matter only under FP8 / FP4 GEMMs.
    let low = report.plan.training.settings.precision.is_low();
    let applicable: Vec<(&str, Vec<(&str, Value)>)> = flips()
        .into_iter()
        .filter(|(key, _)| low || !matches!(*key, "fp8_param_gather" | "disable_parameter_transpose_cache"))
        .filter(|(_, set)| set.iter().all(|(k, x)| assumed(k).is_some_and(|a| a.value != *x)))
        .collect();
    if applicable.is_empty() {
        return None;
    }
    let cap = report.memory.gpu_memory_bytes;
    let peak = report.memory.peak_bytes;
    let was = |k: &str| assumed(k).map_or(String::new(), |a| format!("{k} = {} ({})", a.value, short_source(&a.source)));
    for (key, set) in &applicable {
        let Some((_, m)) = memory_with(value, excluded, set) else { continue };
        if m.fits {
            let to: Vec<String> = set.iter().map(|(k, x)| format!("{k} = {x}")).collect();
            let mut d = Diagnostic::new(
                Code::OutOfMemoryAssumed,
                format!(
                    "does not fit with {} (assumed: the plan does not state it); fits with {} (−{:.1} GiB: peak {:.1} of {:.1} GiB)",
                    was(key),
                    to.join(", "),
                    gib(peak.saturating_sub(m.peak_bytes)),
                    gib(m.peak_bytes),
                    gib(cap)
                ),
                format!("state what your run uses: {}", to.join(", ")),
            );
            for (k, x) in set {
                d = d.with_apply(&format!("training.{k}"), x.clone());
            }
            return Some(d);
        }
    }
    // No single flip fits: all of them together (the last recompute flip supersedes the selective one). If even that
    // does not fit, the verdict does not rest on an unstated setting and nothing is said.
    let mut together: Vec<(&str, Value)> = Vec::new();
    for (_, set) in &applicable {
        for (k, x) in set {
            together.retain(|(t, _)| t != k);
            together.push((k, x.clone()));
        }
    }
    let (_, m) = memory_with(value, excluded, &together)?;
    if !m.fits {
        return None;
    }
    let keys: Vec<String> = applicable.iter().map(|(k, _)| was(k)).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
    let to: Vec<String> = together.iter().map(|(k, x)| format!("{k} = {x}")).collect();
    let message = format!(
        "does not fit with {} (assumed: the plan does not state them); fits with {} together (−{:.1} GiB: peak {:.1} of {:.1} GiB)",
        keys.join(", "),
        to.join(", "),
        gib(peak.saturating_sub(m.peak_bytes)),
        gib(m.peak_bytes),
        gib(cap)
    );
    let mut d = Diagnostic::new(Code::OutOfMemoryAssumed, message, format!("state what your run uses: {}", to.join(", ")));
    for (k, x) in &together {
        d = d.with_apply(&format!("training.{k}"), x.clone());
    }
    Some(d)
}

/// "Megatron-Core default" or "perf.<recipe>": an assumption's source, short enough for a message.
fn short_source(source: &str) -> &str {
    source.split_whitespace().find(|w| w.starts_with("perf.")).unwrap_or(source)
}
