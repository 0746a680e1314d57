//! Fixes: the plan re-planned with one nearby change each, through the same report function `meshplan plan` uses,
//! ranked so that the first brings the peak under the target whenever any single change can, changes that shrink the
//! named tensor before others, and the cheapest (least added step time) first among equals. The page's
//! out-of-memory diagnostic and "Explain an OOM" both list [`ranked`]'s answer.

use crate::memory::{Tensor, TensorKind};
use crate::report::{Report, plan_value, split_of};
use crate::settings::Recompute;
use crate::Severity;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// A nearby plan, re-planned.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fix {
    pub change: String,
    /// The plan edits, by plan path (empty for an allocator setting).
    pub edits: Vec<(String, Value)>,
    pub peak_bytes: u64,
    pub step_time_s: Option<f64>,
    /// Predicted step time minus the current plan's (its cost).
    pub step_time_delta_s: Option<f64>,
    /// What the step-time model leaves out of this change's cost, if anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caveat: Option<String>,
    /// Whether the re-planned peak is under the target (the device, less what the run showed the plan leaves out).
    #[serde(default = "yes")]
    pub fits: bool,
    /// Whether the change shrinks the tensor the explanation named.
    #[serde(default)]
    pub shrinks_culprit: bool,
}

fn yes() -> bool {
    true
}

type Edits = Vec<(String, Value)>;

fn edit(what: String, edits: &[(&str, Value)]) -> (String, Edits) {
    (what, edits.iter().map(|(k, v)| (k.to_string(), v.clone())).collect())
}

/// The changes that shrink a tensor of `kind`, first (each one plan change).
fn targeted(report: &Report, kind: Option<TensorKind>, out: &mut Vec<(String, Edits)>) {
    use crate::settings::{AttnBackend, CudaGraphImpl, TransformerImpl};
    let p = &report.plan;
    let s = &p.training.settings;
    match kind {
        Some(TensorKind::AttentionScores) => {
            let mut e = vec![("training.attention_backend", json!("auto"))];
            if s.transformer_impl == TransformerImpl::Local {
                e.push(("training.transformer_impl", json!("transformer_engine")));
            }
            if s.attention_backend != AttnBackend::Auto || s.transformer_impl == TransformerImpl::Local {
                out.push(edit("fused/flash attention: transformer_impl transformer_engine, attention_backend auto (no s² scores saved)".into(), &e));
            }
        }
        Some(TensorKind::CudaGraphs) if s.cuda_graph_impl != CudaGraphImpl::None => {
            out.push(edit(format!("cuda_graph_impl {} → none", s.cuda_graph_impl.key()), &[("training.cuda_graph_impl", json!("none"))]));
        }
        _ => {}
    }
}

/// The nearby plans tried: (description, edits), the changes aimed at `kind` first.
pub(crate) fn candidates(report: &Report, kind: Option<TensorKind>) -> Vec<(String, Edits)> {
    let p = &report.plan;
    let par = &p.parallelism;
    let s = &p.training.settings;
    let world = report.derived.world_size;
    let mut out: Vec<(String, Edits)> = Vec::new();
    targeted(report, kind, &mut out);
    let mbs = p.training.micro_batch_size;
    if mbs > 1 {
        out.push(edit(format!("micro_batch_size {mbs} → {}", mbs / 2), &[("training.micro_batch_size", json!(mbs / 2))]));
        if mbs > 2 {
            out.push(edit(format!("micro_batch_size {mbs} → 1"), &[("training.micro_batch_size", json!(1))]));
        }
    }
    if s.recompute_granularity == Recompute::None {
        out.push(edit("recompute_granularity none → selective (core_attn)".into(), &[("training.recompute_granularity", json!("selective"))]));
    }
    if s.recompute_granularity == Recompute::Selective && s.recompute_modules.is_none() {
        out.push(edit(
            "recompute_modules core_attn → core_attn, mlp, layernorm".into(),
            &[("training.recompute_granularity", json!("selective")), ("training.recompute_modules", json!(["core_attn", "mlp", "layernorm"]))],
        ));
    }
    if s.recompute_granularity != Recompute::Full {
        out.push(edit(
            "recompute_granularity → full (uniform, 1 layer)".into(),
            &[("training.recompute_granularity", json!("full")), ("training.recompute_method", json!("uniform")), ("training.recompute_num_layers", json!(1))],
        ));
    }
    if !s.use_distributed_optimizer && !s.use_megatron_fsdp {
        out.push(edit("use_distributed_optimizer → true".into(), &[("training.use_distributed_optimizer", json!(true))]));
    }
    if !s.optimizer_cpu_offload {
        let mut e = vec![("training.optimizer_cpu_offload", json!(true))];
        if !s.use_distributed_optimizer {
            e.push(("training.use_distributed_optimizer", json!(true)));
        }
        out.push(edit("optimizer_cpu_offload → true".into(), &e));
    }
    let layout_given = par.pipeline_model_parallel_layout.is_some() || p.model.hybrid_layer_pattern.is_some();
    if !layout_given {
        match par.virtual_pipeline_model_parallel_size {
            Some(v) if v > 1 => out.push(edit(format!("virtual_pipeline_model_parallel_size {v} → none"), &[("parallelism.virtual_pipeline_model_parallel_size", Value::Null)])),
            _ if par.pp() > 1 => out.push(edit("virtual_pipeline_model_parallel_size → 2".into(), &[("parallelism.virtual_pipeline_model_parallel_size", json!(2))])),
            _ => {}
        }
    }
    // One step of TP, PP or CP on the same GPUs (DP absorbs the difference).
    let steps: [(&str, u64); 3] = [("tensor_model_parallel_size", par.tp()), ("pipeline_model_parallel_size", par.pp()), ("context_parallel_size", par.cp())];
    for (key, v) in steps {
        if key == "pipeline_model_parallel_size" && layout_given {
            continue;
        }
        for n in [v.saturating_mul(2), v / 2] {
            if n >= 1 && n != v && world % n == 0 {
                let mut e = vec![(format!("parallelism.{key}"), json!(n))];
                if key == "tensor_model_parallel_size" {
                    e.push(("parallelism.sequence_parallel".into(), json!(n > 1)));
                }
                out.push((format!("{key} {v} → {n}"), e));
            }
        }
    }
    out
}

/// Sets `section.field` of a plan-file JSON object.
pub fn set_path(plan: &mut Value, path: &str, value: Value) {
    let Some((section, field)) = path.split_once('.') else { return };
    if let Some(obj) = plan.as_object_mut() {
        let sec = obj.entry(section.to_string()).or_insert_with(|| json!({}));
        if !sec.is_object() {
            // A preset model named by a string: keep it as the preset and set the field beside it.
            let preset = sec.take();
            *sec = json!({ "preset": preset });
        }
        if let Some(m) = sec.as_object_mut() {
            m.insert(field.to_string(), value);
        }
    }
}

/// What the step-time model leaves out of a change's cost.
fn caveat(edits: &Edits) -> Option<String> {
    // perf.rs prices recompute by granularity (selective: core attention) and no host traffic.
    if edits.iter().any(|(p, _)| p == "training.recompute_modules") {
        Some("the step-time model prices selective recompute as core attention only: recomputing more modules costs more than shown".to_string())
    } else if edits.iter().any(|(p, _)| p == "training.optimizer_cpu_offload") {
        Some("the step-time model does not price the optimizer step on the host or its PCIe traffic: the cost shown is a lower bound".to_string())
    } else {
        None
    }
}

/// The target a fix must bring the peak under, and the culprit's size a fix must shrink, for [`ranked`].
#[derive(Clone, Copy, Debug)]
pub struct Target {
    /// The peak (device bytes) a fix must reach to count as fitting.
    pub peak_bytes: u64,
    /// The named tensor: its kind and size under the plan, and a function sizing it under a re-planned report.
    pub culprit: Option<(TensorKind, u64)>,
    /// The failing pipeline stage (the culprit is sized there).
    pub stage: u64,
}

/// Every candidate of `plan` (plan-file JSON, its report `report`) re-planned: valid ones only; those under
/// `target.peak_bytes` first (those that shrink the culprit first among them, then by added step time), then the rest by
/// their peak. Capped at `keep`.
pub fn ranked(plan: &Value, report: &Report, target: Target, keep: usize) -> Vec<Fix> {
    let current_time = report.performance.as_ref().map(|p| p.step_time_s);
    let mut out = Vec::new();
    for (change, edits) in candidates(report, target.culprit.map(|c| c.0)) {
        let mut v = plan.clone();
        for (path, value) in &edits {
            set_path(&mut v, path, value.clone());
        }
        let Ok(r) = plan_value(&v) else { continue };
        if r.diagnostics.iter().any(|d| d.severity == Severity::Error) {
            continue;
        }
        let t = r.performance.as_ref().map(|p| p.step_time_s);
        let shrinks_culprit = target.culprit.is_some_and(|(kind, bytes)| largest_of(&r, target.stage, kind) < bytes);
        out.push(Fix {
            change,
            caveat: caveat(&edits),
            edits,
            peak_bytes: r.memory.peak_bytes,
            step_time_s: t,
            step_time_delta_s: t.zip(current_time).map(|(a, b)| a - b),
            fits: r.memory.peak_bytes <= target.peak_bytes,
            shrinks_culprit,
        });
    }
    // Fitting fixes: those that shrink the named tensor first, then the cheapest; the others: the lowest peak first.
    crate::sort::stable_by(&mut out, |a, b| {
        let time = |f: &Fix| f.step_time_delta_s.unwrap_or(f64::MAX);
        match (a.fits, b.fits) {
            (true, true) => (!a.shrinks_culprit).cmp(&!b.shrinks_culprit).then(time(a).total_cmp(&time(b))),
            (false, false) => a.peak_bytes.cmp(&b.peak_bytes).then(time(a).total_cmp(&time(b))),
            (fa, fb) => fb.cmp(&fa),
        }
    });
    out.truncate(keep);
    out
}

/// The largest tensor of `kind` on stage `stage` of `report` (0 when the stage has none).
pub(crate) fn largest_of(report: &Report, stage: u64, kind: TensorKind) -> u64 {
    stage_tensors(report, stage).iter().filter(|t| t.kind == kind).map(|t| t.bytes).max().unwrap_or(0)
}

/// The single allocations of stage `stage` (memory::tensors), through the report's own split.
pub(crate) fn stage_tensors(report: &Report, stage: u64) -> Vec<Tensor> {
    let p = &report.plan;
    let Ok(split) = split_of(p) else { return Vec::new() };
    let kinds = p.model.kinds();
    let params = crate::memory::stage_params(p, &report.derived, &split, &kinds);
    let (Some(st), Some(sm)) = (params.get(stage as usize), report.memory.stages.iter().find(|s| s.pipeline_rank == stage)) else {
        return Vec::new();
    };
    crate::memory::tensors(p, &report.derived, st, sm)
}
