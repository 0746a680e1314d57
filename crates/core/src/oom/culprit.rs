//! Naming the allocation: a request matched against the failing stage's own tensors (`memory::tensors`, sized by the
//! memory model's functions), and where none matches, the plan value the request implies for a tensor whose size is
//! proportional to one (the padded vocabulary of the logits, the micro-batch of the attention scores).

use crate::memory::{Lever, Tensor, TensorKind};
use serde::{Deserialize, Serialize};

/// How far a request may sit from a tensor's size and still be that tensor: PyTorch prints the request with two
/// decimals of its unit (786.00 MiB: ±0.005 MiB, under 0.01%) and rounds it up to its 512-byte blocks; the rest is
/// what the model's shapes leave out (padding, a bias). 1.5%.
pub const MATCH_TOLERANCE: f64 = 0.015;

/// A tensor of the plan set beside a request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub kind: TensorKind,
    pub label: String,
    /// Its size under the plan.
    pub predicted_bytes: u64,
    /// When it is allocated.
    pub phase: String,
    /// request ÷ predicted.
    pub ratio: f64,
}

/// A plan value the request implies: the tensor would be the request's size at this value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Implied {
    /// Megatron's name of the value (`padded_vocab_size`, `micro_batch_size`).
    pub name: String,
    pub plan_value: u64,
    pub implied_value: u64,
    /// "the 786.00 MiB request implies a padded vocabulary of 50,304 at micro-batch 4, seq 1,024, fp32 logits; the
    /// plan assumed 32,000".
    pub text: String,
}

/// What the request was, if the plan can say.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Named {
    /// The tensor the request is (within [`MATCH_TOLERANCE`]), as planned or at an implied value.
    pub culprit: Option<Candidate>,
    /// The plan value the request implies, when the culprit matches only at another value.
    pub implied: Option<Implied>,
    /// The tensors nearest the request by size, when none matches (at most three).
    pub nearest: Vec<Candidate>,
}

fn candidate(t: &Tensor, request: u64) -> Candidate {
    Candidate { kind: t.kind, label: t.label.clone(), predicted_bytes: t.bytes, phase: t.phase.clone(), ratio: request as f64 / t.bytes.max(1) as f64 }
}

/// 50304 → "50,304".
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A size as PyTorch prints it: 786.00 MiB, 2.63 GiB.
pub fn shown(bytes: u64) -> String {
    let b = bytes as f64;
    let (x, unit) = if b >= (1u64 << 30) as f64 {
        (b / (1u64 << 30) as f64, "GiB")
    } else if b >= (1u64 << 20) as f64 {
        (b / (1u64 << 20) as f64, "MiB")
    } else {
        (b / 1024.0, "KiB")
    };
    format!("{x:.2} {unit}")
}

/// How far a request may sit from a tensor's size at an implied value: the message prints four significant digits or
/// more (57.96 GiB, 786.00 MiB), and the size is exactly proportional to the value. 0.2%.
pub const IMPLIED_TOLERANCE: f64 = 0.002;

use crate::limits::MAX_IMPLIED_MICRO_BATCH;

/// The value the request implies through `lever`, if it is a value the plan could hold: a multiple of the lever's
/// step (a padded vocabulary: make_vocab_size_divisible_by · TP; a micro-batch: an integer up to 1,024) within
/// [`IMPLIED_TOLERANCE`], other than the plan's own.
fn implied_by(lever: &Lever, request: u64) -> Option<u64> {
    if lever.bytes_per_unit <= 0.0 {
        return None;
    }
    let x = request as f64 / lever.bytes_per_unit;
    let max = if lever.name == "micro_batch_size" { MAX_IMPLIED_MICRO_BATCH } else { 1 << 32 };
    if !(1.0..=max as f64).contains(&x) {
        return None;
    }
    let step = lever.step.max(1) as f64;
    let v = (x / step).round().max(1.0) * step;
    // A micro-batch far above one step is a coincidence more often than a finding: the ± tolerance window around the
    // request covers 2·tol·x/step of a step, the chance that an unrelated request lands that close to some value (a
    // 1.00 GiB request is 131.07 micro-batches of a 64-token sequence's logits). Implied only while that chance is at
    // most [`MAX_COINCIDENCE`]. The vocabulary is implied only when the plan leaves it open (`name`), a prior of its own.
    let by_chance = 2.0 * IMPLIED_TOLERANCE * x / step;
    if lever.name == "micro_batch_size" && by_chance > MAX_COINCIDENCE {
        return None;
    }
    ((x - v).abs() <= IMPLIED_TOLERANCE * v && v as u64 != lever.plan_value).then_some(v as u64)
}

/// The largest chance, for an implied micro-batch, that a request matches some value by coincidence: one in eight (up to
/// a micro-batch of 31 at [`IMPLIED_TOLERANCE`]).
pub const MAX_COINCIDENCE: f64 = 0.125;

/// Matches `request` against `tensors`: a tensor within the tolerance (the closest), else one whose lever implies a
/// value the plan could hold (the vocabulary only when the plan does not state it), else the three nearest by size
/// ratio. Among implied values, one the plan did not state
/// (`assumed`: lever names) first, then the micro-batch (a run's batch differs from its plan more often than a stated
/// vocabulary does), then the least change from the plan's value.
pub fn name(tensors: &[Tensor], request: u64, assumed: &[&str]) -> Named {
    let off = |c: &Candidate| c.ratio.ln().abs();
    let mut exact: Vec<Candidate> = tensors.iter().map(|t| candidate(t, request)).filter(|c| (c.ratio - 1.0).abs() <= MATCH_TOLERANCE).collect();
    crate::sort::stable_by(&mut exact, |a, b| off(a).total_cmp(&off(b)));
    if let Some(c) = exact.into_iter().next() {
        return Named { culprit: Some(c), ..Named::default() };
    }
    // Implied values only for single tensors whose size one plan value sets: the logits (vocabulary) and the scores.
    let mut implied: Vec<((bool, bool, f64), Candidate, Implied)> = Vec::new();
    for t in tensors.iter().filter(|t| matches!(t.kind, TensorKind::LogitsFp32 | TensorKind::Logits | TensorKind::AttentionScores)) {
        // A vocabulary the plan states (a preset's, a config's or the file's) is not bounded from a request: at b·s·step
        // bytes a step (4 MiB at micro-batch 1, seq 4,096, step 256) nearly every round request is some multiple.
        for lever in t.levers.iter().filter(|l| l.name != "padded_vocab_size" || assumed.contains(&"padded_vocab_size")) {
            let Some(v) = implied_by(lever, request) else { continue };
            let what = match lever.name.as_str() {
                "padded_vocab_size" => "a padded vocabulary",
                "micro_batch_size" => "a micro-batch",
                other => other,
            };
            let text = format!(
                "the {} request implies {what} of {} at {} ({}); the plan assumed {}",
                shown(request),
                thousands(v),
                lever.at,
                t.label.split(':').next().unwrap_or(""),
                thousands(lever.plan_value)
            );
            let change = (!assumed.contains(&lever.name.as_str()), lever.name != "micro_batch_size", (v as f64 / lever.plan_value.max(1) as f64).ln().abs());
            let c = Candidate { ratio: request as f64 / (lever.bytes_per_unit * v as f64), ..candidate(t, request) };
            implied.push((change, c, Implied { name: lever.name.clone(), plan_value: lever.plan_value, implied_value: v, text }));
        }
    }
    crate::sort::stable_by(&mut implied, |a, b| (a.0.0, a.0.1).cmp(&(b.0.0, b.0.1)).then(a.0.2.total_cmp(&b.0.2)));
    if let Some((_, c, i)) = implied.into_iter().next() {
        return Named { culprit: Some(c), implied: Some(i), nearest: Vec::new() };
    }
    let mut all: Vec<Candidate> = tensors.iter().map(|t| candidate(t, request)).collect();
    crate::sort::stable_by(&mut all, |a, b| off(a).total_cmp(&off(b)));
    all.truncate(3);
    Named { culprit: None, implied: None, nearest: all }
}
