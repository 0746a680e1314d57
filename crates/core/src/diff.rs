//! Compare two planned runs: which settings differ, what each memory term of each pipeline stage and each step-time
//! term becomes, which findings appear or disappear, and which rank-group kinds start or stop crossing NVLink domains.
//! It only reads two [`Report`]s; every number is the report's own.

use crate::report::Report;
use crate::settings::SETTINGS;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A plan or derived value that differs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// Dotted plan path (`parallelism.tensor_model_parallel_size`, `training.recompute_granularity`) or `derived.*`.
    pub path: String,
    pub a: Value,
    pub b: Value,
}

/// One memory term of one stage in both plans (bytes; 0 where the plan has no such term).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TermDelta {
    /// The term's stable key (`activations`, `optimizer_moments`, …) and `host:` before a host term's.
    pub key: String,
    pub label: String,
    pub a_bytes: u64,
    pub b_bytes: u64,
    pub delta_bytes: i64,
}

/// One pipeline stage in both plans (a stage only one plan has is 0 in the other).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageDelta {
    pub pipeline_rank: u64,
    pub a_total_bytes: u64,
    pub b_total_bytes: u64,
    pub delta_bytes: i64,
    /// The terms that change, largest change first.
    pub terms: Vec<TermDelta>,
}

/// One step-time term in both plans, seconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TimeDelta {
    pub term: String,
    pub a_s: f64,
    pub b_s: f64,
    pub delta_s: f64,
}

/// A finding only one plan has.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub code: String,
    pub severity: String,
    pub message: String,
}

/// A rank-group kind whose NVLink-domain crossing differs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CrossingDelta {
    pub kind: String,
    pub a_groups_crossing: u64,
    pub a_total_groups: u64,
    pub b_groups_crossing: u64,
    pub b_total_groups: u64,
}

/// Everything that differs from plan A to plan B.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Diff {
    pub a_valid: bool,
    pub b_valid: bool,
    pub settings: Vec<Change>,
    pub a_peak_bytes: u64,
    pub b_peak_bytes: u64,
    pub gpu_memory_bytes: (u64, u64),
    pub stages: Vec<StageDelta>,
    /// None when a plan has no step-time estimate (its mesh does not divide the world).
    pub a_step_time_s: Option<f64>,
    pub b_step_time_s: Option<f64>,
    pub step_time: Vec<TimeDelta>,
    pub findings_added: Vec<Finding>,
    pub findings_removed: Vec<Finding>,
    pub crossings: Vec<CrossingDelta>,
}

/// Compares plan `a` (the baseline) with plan `b`.
pub fn diff(a: &Report, b: &Report) -> Diff {
    Diff {
        a_valid: a.valid,
        b_valid: b.valid,
        settings: settings(a, b),
        a_peak_bytes: a.memory.peak_bytes,
        b_peak_bytes: b.memory.peak_bytes,
        gpu_memory_bytes: (a.memory.gpu_memory_bytes, b.memory.gpu_memory_bytes),
        stages: stages(a, b),
        a_step_time_s: a.performance.as_ref().map(|p| p.step_time_s),
        b_step_time_s: b.performance.as_ref().map(|p| p.step_time_s),
        step_time: step_time(a, b),
        findings_added: findings(b, a),
        findings_removed: findings(a, b),
        crossings: crossings(a, b),
    }
}

/// The plan as flat `path → value` pairs: the plan file's fields (the model's as its preset or its fields), every
/// setting at the value it runs with, and the derived sizes.
fn flat(r: &Report) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let file: Value = serde_json::from_str(&crate::export::plan_json(&r.plan)).unwrap_or_default();
    flatten("", &file, &mut out);
    for row in SETTINGS {
        let path = format!("training.{}", row.key);
        let v = r.plan.training.settings.resolved(row.key, &r.plan.gpu).unwrap_or(Value::Null);
        match out.iter_mut().find(|(p, _)| *p == path) {
            Some(slot) => slot.1 = v,
            None => out.push((path, v)),
        }
    }
    let d = &r.derived;
    for (k, v) in [
        ("world_size", d.world_size),
        ("data_parallel_size", d.data_parallel_size),
        ("expert_data_parallel_size", d.expert_data_parallel_size),
        ("num_microbatches", d.num_microbatches),
        ("global_batch_size", d.global_batch_size),
    ] {
        out.push((format!("derived.{k}"), Value::from(v)));
    }
    out
}

fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, Value)>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                let path = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                flatten(&path, child, out);
            }
        }
        other => out.push((prefix.to_string(), other.clone())),
    }
}

fn settings(a: &Report, b: &Report) -> Vec<Change> {
    let (fa, fb) = (flat(a), flat(b));
    let mut out: Vec<Change> = Vec::new();
    for (path, va) in &fa {
        let vb = fb.iter().find(|(p, _)| p == path).map_or(Value::Null, |(_, v)| v.clone());
        if *va != vb {
            out.push(Change { path: path.clone(), a: va.clone(), b: vb });
        }
    }
    for (path, vb) in &fb {
        if !fa.iter().any(|(p, _)| p == path) && !vb.is_null() {
            out.push(Change { path: path.clone(), a: Value::Null, b: vb.clone() });
        }
    }
    out
}

/// A stage's terms summed by key and place.
fn terms_of(s: Option<&crate::memory::StageMemory>) -> Vec<(String, String, u64)> {
    let mut out: Vec<(String, String, u64)> = Vec::new();
    for t in s.map(|s| s.terms.as_slice()).unwrap_or(&[]) {
        let key = serde_json::to_value(t.key).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        let key = if t.location == crate::memory::Location::Host { format!("host:{key}") } else { key };
        match out.iter_mut().find(|(k, _, _)| *k == key) {
            Some(slot) => slot.2 = slot.2.saturating_add(t.bytes),
            None => out.push((key, t.label.to_string(), t.bytes)),
        }
    }
    out
}

fn signed(a: u64, b: u64) -> i64 {
    (b as i128 - a as i128).clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

fn stages(a: &Report, b: &Report) -> Vec<StageDelta> {
    let n = a.memory.stages.len().max(b.memory.stages.len());
    (0..n)
        .map(|i| {
            let (sa, sb) = (a.memory.stages.get(i), b.memory.stages.get(i));
            let (ta, tb) = (terms_of(sa), terms_of(sb));
            let mut terms: Vec<TermDelta> = Vec::new();
            for (key, label, _) in ta.iter().chain(&tb) {
                if terms.iter().any(|t| t.key == *key) {
                    continue;
                }
                let get = |ts: &[(String, String, u64)]| ts.iter().find(|(k, _, _)| k == key).map_or(0, |t| t.2);
                let (x, y) = (get(&ta), get(&tb));
                if x != y {
                    terms.push(TermDelta { key: key.clone(), label: label.clone(), a_bytes: x, b_bytes: y, delta_bytes: signed(x, y) });
                }
            }
            terms.sort_by_key(|t| std::cmp::Reverse(t.delta_bytes.unsigned_abs()));
            let (x, y) = (sa.map_or(0, |s| s.total_bytes), sb.map_or(0, |s| s.total_bytes));
            StageDelta { pipeline_rank: i as u64, a_total_bytes: x, b_total_bytes: y, delta_bytes: signed(x, y), terms }
        })
        .collect()
}

fn step_time(a: &Report, b: &Report) -> Vec<TimeDelta> {
    let (Some(pa), Some(pb)) = (&a.performance, &b.performance) else { return Vec::new() };
    let mut out: Vec<TimeDelta> = pa
        .breakdown
        .terms()
        .iter()
        .zip(pb.breakdown.terms())
        .map(|((term, x), (_, y))| TimeDelta { term: term.to_string(), a_s: *x, b_s: y, delta_s: y - x })
        .collect();
    out.retain(|t| t.delta_s != 0.0);
    out
}

/// `r`'s findings whose code `other` does not report.
fn findings(r: &Report, other: &Report) -> Vec<Finding> {
    r.diagnostics
        .iter()
        .filter(|d| !other.diagnostics.iter().any(|o| o.code == d.code))
        .map(|d| Finding { code: d.code.as_str().to_string(), severity: format!("{:?}", d.severity).to_lowercase(), message: d.message.clone() })
        .collect()
}

fn crossings(a: &Report, b: &Report) -> Vec<CrossingDelta> {
    let get = |r: &Report, k: crate::layout::GroupKind| {
        let total = r.layout.as_ref().map_or(0, |l| l.groups.of(k).len() as u64);
        r.layout.as_ref().and_then(|l| l.crossings.iter().find(|c| c.kind == k.key())).map_or((0, total), |c| (c.groups_crossing, c.total_groups))
    };
    crate::layout::GroupKind::all()
        .iter()
        .filter_map(|&k| {
            let kind = k.key();
            let ((ac, at), (bc, bt)) = (get(a, k), get(b, k));
            (ac != bc).then(|| CrossingDelta { kind: kind.to_string(), a_groups_crossing: ac, a_total_groups: at, b_groups_crossing: bc, b_total_groups: bt })
        })
        .collect()
}
