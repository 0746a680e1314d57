//! Compare two planned runs: which settings differ, what each memory term of each pipeline stage and each step-time
//! term becomes, which findings appear or disappear, and which rank-group kinds start or stop crossing NVLink domains.
//! It only reads two [`Report`]s; every number is the report's own.
//!
//! Stages are compared twice: by pipeline rank (`stages`, the report's order), and by the decoder layers they hold
//! (`stages_by_layers`), which is the comparison that means something when PP, VPP or the layout changes — PP 4 → 8
//! moves layers 10–19 from stage 0 to stage 1, so B's stage 1 is compared with A's stage 0, not A's stage 1 — and
//! each plan's peak stage against the other's (`peak_stages`).

use crate::pipeline::{self, StageSplit};
use crate::report::{Report, split_of};
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

/// One pipeline stage of A beside one of B (a stage only one plan has is 0 in the other).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageDelta {
    /// B's stage (A's when B has none): in `stages`, the rank both stages have.
    pub pipeline_rank: u64,
    pub a_total_bytes: u64,
    pub b_total_bytes: u64,
    pub delta_bytes: i64,
    /// The terms that change, largest change first.
    pub terms: Vec<TermDelta>,
    /// The stage of each plan compared; none where that plan has no such stage.
    #[serde(default)]
    pub a_pipeline_rank: Option<u64>,
    #[serde(default)]
    pub b_pipeline_rank: Option<u64>,
    /// Each stage's decoder layers as half-open ranges [start, end) in model order (adjacent chunks merged).
    #[serde(default)]
    pub a_layers: Vec<[u64; 2]>,
    #[serde(default)]
    pub b_layers: Vec<[u64; 2]>,
    /// Decoder layers both stages hold.
    #[serde(default)]
    pub shared_layers: u64,
    /// How the two stages were paired: `rank` (the same pipeline rank), `layers` (the stage of one plan holding
    /// the most of the other's layers), `peak` (each plan's peak stage).
    #[serde(default)]
    pub paired_by: String,
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
    /// Stage by stage, paired by pipeline rank.
    pub stages: Vec<StageDelta>,
    /// Stage by stage, paired by the decoder layers they hold: every stage of B beside the stage of A holding the most
    /// of its layers, then each stage of A no stage of B was paired with, beside the stage of B holding the most of
    /// its layers; ordered by B's rank. The same pairs as `stages` when both plans split the layers alike.
    #[serde(default)]
    pub stages_by_layers: Vec<StageDelta>,
    /// A's peak stage (the most device memory, the first of equals) beside B's.
    #[serde(default)]
    pub peak_stages: Option<StageDelta>,
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
        stages_by_layers: stages_by_layers(a, b),
        peak_stages: peak_stages(a, b),
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

/// Stage `ia` of A beside stage `ib` of B.
fn pair(a: &Report, b: &Report, (ia, ib): (Option<usize>, Option<usize>), splits: (&StageSplit, &StageSplit), paired_by: &str) -> StageDelta {
    let (sa, sb) = (ia.and_then(|i| a.memory.stages.get(i)), ib.and_then(|i| b.memory.stages.get(i)));
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
    crate::sort::stable_by_key(&mut terms, |t| std::cmp::Reverse(t.delta_bytes.unsigned_abs()));
    let (x, y) = (sa.map_or(0, |s| s.total_bytes), sb.map_or(0, |s| s.total_bytes));
    let (a_layers, b_layers) = (ia.map(|i| layer_ranges(splits.0, i)).unwrap_or_default(), ib.map(|i| layer_ranges(splits.1, i)).unwrap_or_default());
    StageDelta {
        pipeline_rank: ib.or(ia).unwrap_or(0) as u64,
        a_total_bytes: x,
        b_total_bytes: y,
        delta_bytes: signed(x, y),
        terms,
        a_pipeline_rank: ia.map(|i| i as u64),
        b_pipeline_rank: ib.map(|i| i as u64),
        shared_layers: shared(&a_layers, &b_layers),
        a_layers,
        b_layers,
        paired_by: paired_by.to_string(),
    }
}

/// The report's layer split (the nearest even split when the plan's own is invalid, as its memory is estimated).
fn split_for(r: &Report) -> StageSplit {
    split_of(&r.plan).unwrap_or_else(|_| pipeline::balanced_split(r.plan.model.num_layers, r.plan.parallelism.pp()))
}

/// Stage `i`'s decoder layers as sorted half-open ranges, adjacent chunks merged.
fn layer_ranges(split: &StageSplit, i: usize) -> Vec<[u64; 2]> {
    let mut chunks: Vec<[u64; 2]> = split.stages.get(i).into_iter().flatten().filter(|c| c.count > 0).map(|c| [c.start, c.start.saturating_add(c.count)]).collect();
    crate::sort::stable_by(&mut chunks, Ord::cmp);
    let mut out: Vec<[u64; 2]> = Vec::with_capacity(chunks.len());
    for c in chunks {
        match out.last_mut() {
            Some(last) if last[1] >= c[0] => last[1] = last[1].max(c[1]),
            _ => out.push(c),
        }
    }
    out
}

/// Layers two sorted lists of ranges both cover.
fn shared(x: &[[u64; 2]], y: &[[u64; 2]]) -> u64 {
    let (mut i, mut j, mut n) = (0, 0, 0u64);
    while i < x.len() && j < y.len() {
        let (lo, hi) = (x[i][0].max(y[j][0]), x[i][1].min(y[j][1]));
        n += hi.saturating_sub(lo);
        if x[i][1] <= y[j][1] { i += 1 } else { j += 1 }
    }
    n
}

fn stages(a: &Report, b: &Report) -> Vec<StageDelta> {
    let (sa, sb) = (split_for(a), split_for(b));
    let n = a.memory.stages.len().max(b.memory.stages.len());
    let has = |r: &Report, i: usize| (i < r.memory.stages.len()).then_some(i);
    (0..n).map(|i| pair(a, b, (has(a, i), has(b, i)), (&sa, &sb), "rank")).collect()
}

/// The layers each pair of stages (A's rank, B's rank) shares, from one sweep over both splits' chunks in layer
/// order: O(chunks of A + chunks of B), the pairs merged.
fn overlaps(sa: &StageSplit, sb: &StageSplit) -> Vec<((usize, usize), u64)> {
    let chunks = |s: &StageSplit| {
        let mut v: Vec<(u64, u64, usize)> =
            s.stages.iter().enumerate().flat_map(|(r, cs)| cs.iter().filter(|c| c.count > 0).map(move |c| (c.start, c.start.saturating_add(c.count), r))).collect();
        crate::sort::stable_by(&mut v, Ord::cmp);
        v
    };
    let (ca, cb) = (chunks(sa), chunks(sb));
    let (mut i, mut j) = (0, 0);
    let mut out: Vec<((usize, usize), u64)> = Vec::new();
    while i < ca.len() && j < cb.len() {
        let (lo, hi) = (ca[i].0.max(cb[j].0), ca[i].1.min(cb[j].1));
        if hi > lo {
            out.push(((ca[i].2, cb[j].2), hi - lo));
        }
        if ca[i].1 <= cb[j].1 { i += 1 } else { j += 1 }
    }
    // Pairs of one key are merged (their layers summed) below, so their order does not matter.
    crate::sort::stable_by_key(&mut out, |&(k, _)| k);
    out.dedup_by(|later, first| {
        let same = later.0 == first.0;
        if same {
            first.1 += later.1;
        }
        same
    });
    out
}

fn stages_by_layers(a: &Report, b: &Report) -> Vec<StageDelta> {
    let (sa, sb) = (split_for(a), split_for(b));
    let (na, nb) = (a.memory.stages.len(), b.memory.stages.len());
    // Each stage's counterpart holding the most shared layers, the lowest rank of equals (one pass over the pairs);
    // none shared: the same rank.
    let (mut best_of_a, mut best_of_b) = (vec![None::<(usize, u64)>; na], vec![None::<(usize, u64)>; nb]);
    for ((ra, rb), n) in overlaps(&sa, &sb) {
        for (slot, other) in [(best_of_a.get_mut(ra), rb), (best_of_b.get_mut(rb), ra)] {
            if let Some(slot) = slot.filter(|s| s.is_none_or(|(o, m)| n > m || (n == m && other < o))) {
                *slot = Some((other, n));
            }
        }
    }
    let best = |top: Option<(usize, u64)>, mine: usize, n_other: usize| match top {
        Some((o, _)) => (Some(o), "layers"),
        None => ((mine < n_other).then_some(mine), "rank"),
    };
    let mut rows: Vec<(Option<usize>, Option<usize>, &str)> = Vec::with_capacity(na.max(nb));
    let mut taken = vec![false; na];
    for (rb, &top) in best_of_b.iter().enumerate() {
        let (ra, by) = best(top, rb, na);
        if let Some(t) = ra.and_then(|r| taken.get_mut(r)) {
            *t = true;
        }
        rows.push((ra, Some(rb), by));
    }
    for ra in (0..na).filter(|&r| !taken[r]) {
        let (rb, by) = best(best_of_a[ra], ra, nb);
        rows.push((Some(ra), rb, by));
    }
    crate::sort::stable_by_key(&mut rows, |&(ra, rb, _)| (rb.unwrap_or(usize::MAX), ra));
    rows.into_iter().map(|(ra, rb, by)| pair(a, b, (ra, rb), (&sa, &sb), by)).collect()
}

/// The index of a report's peak stage: the most device memory, the first of equals.
fn peak_stage(r: &Report) -> Option<usize> {
    let top = r.memory.stages.iter().map(|s| s.total_bytes).max()?;
    r.memory.stages.iter().position(|s| s.total_bytes == top)
}

fn peak_stages(a: &Report, b: &Report) -> Option<StageDelta> {
    let (pa, pb) = (peak_stage(a), peak_stage(b));
    (pa.is_some() || pb.is_some()).then(|| pair(a, b, (pa, pb), (&split_for(a), &split_for(b)), "peak"))
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
        .map(|d| Finding { code: d.code.as_str().to_string(), severity: format!("{:?}", d.severity).to_ascii_lowercase(), message: d.message.clone() })
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
