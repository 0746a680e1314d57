//! Computed fixes: every diagnostic's one-click fixes (`apply`) as candidate plans, each re-planned by the same
//! report function `meshplan plan` uses, and ranked by how little they change the user's plan — so that the first
//! fix listed for an error is one that clears it, with its predicted peak memory and step time beside it.
//!
//! A rule knows the nearest value for its own concept; only the re-planned report knows whether that value clears the
//! error without raising another (DeepSeek-V3's TP 2 · PP 16 · EP 64 on 1,024 H100: the world rule's fix, "EP 32",
//! leaves the expert mesh short; the expert-TP advice's ETP = 1 clears it). An out-of-memory error's fixes are the
//! ones "Explain an OOM" ranks for a plan that does not fit ([`crate::oom::memory_fixes`]): one list for both, each
//! re-planned here as every other offer is. It reads reports; nothing imports it.

use crate::diag::FieldValue;
use crate::limits::MAX_REMEDIES;
use crate::report::{Report, plan_value};
use crate::{Code, Severity};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One candidate fix, re-planned.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Remedy {
    /// The plan edits (dotted plan paths and values), as the diagnostic that offered them carries them.
    pub edits: Vec<FieldValue>,
    /// The codes of the diagnostics that offered these edits.
    pub offered_by: Vec<Code>,
    /// The codes of the plan's errors that are gone once the edits are made.
    pub clears: Vec<Code>,
    /// Errors of the re-planned plan (0: it is valid).
    pub errors_after: usize,
    /// Whether every pipeline stage of the re-planned plan fits in the GPU's memory.
    pub fits: bool,
    /// The re-planned peak memory per GPU, bytes.
    pub peak_bytes: u64,
    /// The re-planned step time, seconds (none when its mesh does not divide the world).
    pub step_time_s: Option<f64>,
    /// How much of the user's plan the edits change: per edited field, |log2(new / old)| for positive numbers (a
    /// doubling or a halving is 1), else 1; half that for a field the plan file leaves to its default (writing out
    /// a default the user never chose moves less of what they typed); summed.
    pub distance: f64,
}

/// Every distinct `apply` of the report's diagnostics (at most [`MAX_REMEDIES`]), re-planned from `plan` (the plan
/// file's JSON the report was made from), sorted: fewer errors left first, then plans that fit, then the smallest
/// change, then the shorter predicted step.
/// An input that cannot be re-planned is left out.
pub fn ranked(plan: &Value, report: &Report) -> Vec<Remedy> {
    let errors_now: Vec<Code> = report.diagnostics.iter().filter(|d| d.severity == Severity::Error).map(|d| d.code).collect();
    let resolved = serde_json::to_value(&report.plan).unwrap_or(Value::Null);
    let mut offers: Vec<(Vec<FieldValue>, Vec<Code>)> = Vec::new();
    for d in report.diagnostics.iter().filter(|d| !d.apply.is_empty()) {
        if let Some((_, by)) = offers.iter_mut().find(|(edits, _)| *edits == d.apply) {
            by.push(d.code);
        } else if offers.len() < MAX_REMEDIES {
            offers.push((d.apply.clone(), vec![d.code]));
        }
    }
    if errors_now.contains(&Code::OutOfMemory) {
        for fix in crate::oom::memory_fixes(plan, report) {
            // An allocator setting has no plan edit to apply.
            if fix.edits.is_empty() {
                continue;
            }
            let edits: Vec<FieldValue> = fix.edits.into_iter().map(|(path, value)| FieldValue { path, value }).collect();
            if let Some((_, by)) = offers.iter_mut().find(|(e, _)| *e == edits) {
                if !by.contains(&Code::OutOfMemory) {
                    by.push(Code::OutOfMemory);
                }
            } else if offers.len() < MAX_REMEDIES {
                offers.push((edits, vec![Code::OutOfMemory]));
            }
        }
    }
    let mut out: Vec<Remedy> = offers
        .into_iter()
        .filter_map(|(edits, offered_by)| {
            let r = plan_value(&with_edits(plan, &edits)).ok()?;
            let after: Vec<Code> = r.diagnostics.iter().filter(|d| d.severity == Severity::Error).map(|d| d.code).collect();
            let mut clears: Vec<Code> = errors_now.iter().copied().filter(|c| !after.contains(c)).collect();
            clears.dedup();
            Some(Remedy {
                distance: edits
                    .iter()
                    .map(|e| step(lookup(&resolved, &e.path), &e.value) * if lookup(plan, &e.path).is_some() { 1.0 } else { 0.5 })
                    .sum(),
                offered_by,
                clears,
                errors_after: after.len(),
                fits: r.memory.fits,
                peak_bytes: r.memory.peak_bytes,
                step_time_s: r.performance.as_ref().map(|p| p.step_time_s),
                edits,
            })
        })
        .collect();
    // A stable sort: among equals, the order of the diagnostics (errors first, as the report sorts them).
    let time = |r: &Remedy| r.step_time_s.unwrap_or(f64::INFINITY);
    crate::sort::stable_by(&mut out, |a, b| {
        (a.errors_after, !a.fits).cmp(&(b.errors_after, !b.fits)).then(a.distance.total_cmp(&b.distance)).then(time(a).total_cmp(&time(b)))
    });
    out
}

/// The remedies that clear the error `code`, best first: what the page lists under that error.
pub fn clearing(remedies: &[Remedy], code: Code) -> impl Iterator<Item = &Remedy> {
    remedies.iter().filter(move |r| r.clears.contains(&code))
}

/// The most re-planned fixes listed under one error (the page and `meshplan plan` alike).
pub const FIXES_PER_ERROR: usize = 3;

/// The re-planned fixes listed under a diagnostic, best first: for an error, those that clear it (at most
/// [`FIXES_PER_ERROR`]); for a warning or an info, its own one-click fix re-planned. The one choice the page's
/// diagnostics and `meshplan plan` share, so they list the same fixes.
pub fn for_diagnostic<'a>(d: &crate::Diagnostic, all: &'a [Remedy]) -> Vec<&'a Remedy> {
    if d.severity == Severity::Error {
        clearing(all, d.code).take(FIXES_PER_ERROR).collect()
    } else {
        all.iter().filter(|r| r.edits == d.apply).take(1).collect()
    }
}

/// "tensor_model_parallel_size = 2, sequence_parallel = true": plan edits by field name.
pub fn edits_text(edits: &[FieldValue]) -> String {
    edits.iter().map(|a| format!("{} = {}", a.path.rsplit('.').next().unwrap_or(&a.path), a.value)).collect::<Vec<_>>().join(", ")
}

impl Remedy {
    /// "tensor_model_parallel_size = 2, sequence_parallel = true": the edits by field name.
    pub fn edits_text(&self) -> String {
        edits_text(&self.edits)
    }

    /// What the re-planned fix predicts: "valid · fits · peak 61.2 GiB · step 3.21 s" (GiB = 2^30 bytes; a step
    /// under a second in milliseconds).
    pub fn prediction(&self) -> String {
        let validity = match self.errors_after {
            0 => "valid".to_string(),
            n => format!("{n} error{} left", if n == 1 { "" } else { "s" }),
        };
        let fits = if self.fits { "fits" } else { "does not fit" };
        let step = self
            .step_time_s
            .map(|t| if t < 1.0 { format!(" · step {:.0} ms", t * 1e3) } else { format!(" · step {t:.2} s") })
            .unwrap_or_default();
        format!("{validity} · {fits} · peak {:.1} GiB{step}", self.peak_bytes as f64 / (1u64 << 30) as f64)
    }
}

/// How far one edit moves a field: |log2(new / old)| for two positive numbers (TP 8 → 4 is 1, 8 → 2 is 2), else 1.
fn step(old: Option<&Value>, new: &Value) -> f64 {
    match (old.and_then(Value::as_f64), new.as_f64()) {
        (Some(a), Some(b)) if a > 0.0 && b > 0.0 => (b / a).log2().abs(),
        _ if old == Some(new) => 0.0,
        _ => 1.0,
    }
}

/// The value at a dotted path of the resolved plan's JSON.
fn lookup<'a>(resolved: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(resolved, |v, key| v.get(key))
}

/// `plan` with each edit made: `section.field` set in its section (a section that is not an object, such as a preset
/// key as the model, becomes one that keeps it: `{"preset": key}`).
fn with_edits(plan: &Value, edits: &[FieldValue]) -> Value {
    let mut v = plan.clone();
    for e in edits {
        let (Some((section, field)), Some(obj)) = (e.path.split_once('.'), v.as_object_mut()) else { continue };
        let sec = obj.entry(section.to_string()).or_insert_with(|| Value::Object(Map::new()));
        if let Value::String(key) = sec {
            *sec = serde_json::json!({ "preset": key.clone() });
        }
        if let Some(m) = sec.as_object_mut() {
            m.insert(field.to_string(), e.value.clone());
        }
    }
    v
}
