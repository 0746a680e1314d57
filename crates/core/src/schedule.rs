//! The pipeline schedule of a plan, as time intervals: every forward and backward of every microbatch and virtual
//! chunk on every pipeline stage, in the order Megatron-Core runs them (1F1B, or the interleaved schedule with its
//! microbatch groups), timed from the step-time model's per-microbatch compute, and each stage's saved activations
//! over time (held from a chunk's forward to its backward). The idle time is the bubble.
//!
//! Order: megatron/core/pipeline_parallel/schedules.py — `forward_backward_pipelining_without_interleaving` (rank r:
//! PP − r − 1 warm-up forwards, then one forward and one backward at a time, then the cool-down backwards) and
//! `forward_backward_pipelining_with_interleaving` (warm-up (PP − r − 1)·2 + (VPP − 1)·N forwards, N =
//! microbatch_group_size_per_vp_stage; the k-th forward runs the (k mod N·VPP)/N-th chunk of a microbatch of its group of
//! N, `get_schedule_table`; backwards take the chunks in reverse).

use crate::diag::Diagnostic;
use crate::report::{Report, split_of};
use crate::{Code, pipeline};
use serde::{Deserialize, Serialize};

use crate::limits::MAX_SCHEDULE_OPS;

/// One forward or backward of one microbatch through one virtual chunk of a stage.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Op {
    /// `"F"` or `"B"`.
    pub kind: String,
    pub microbatch: u64,
    pub chunk: u64,
    pub start_s: f64,
    pub end_s: f64,
}

/// One pipeline stage's timeline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageSchedule {
    pub pipeline_rank: u64,
    pub ops: Vec<Op>,
    pub busy_s: f64,
    /// The stage's idle time within the step (its share of the bubble).
    pub idle_s: f64,
    /// Saved activations over time: (seconds, bytes) at each change.
    pub activation_bytes: Vec<(f64, u64)>,
    pub peak_activation_bytes: u64,
    /// The most microbatches' activations held at once (chunks held / VPP), from the timeline.
    pub peak_in_flight: f64,
    /// The memory model's in-flight count for the stage ([`crate::pipeline::microbatches_in_flight`]).
    pub memory_model_in_flight: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Schedule {
    /// `"1f1b"`, `"interleaved"` or `"none"` (PP = 1).
    pub kind: String,
    pub pp: u64,
    pub vpp: u64,
    pub microbatches: u64,
    /// microbatch_group_size_per_vp_stage (N).
    pub group: u64,
    /// A whole stage's forward and backward of one microbatch (backward with any recompute).
    pub forward_s: f64,
    pub backward_s: f64,
    /// From the first forward to the last backward.
    pub makespan_s: f64,
    /// Idle over busy time, the stage mean: Megatron's bubble, (PP − 1)/(VPP·m) for even stages.
    pub bubble_fraction: f64,
    /// The bubble of even stages, (PP − 1)/(VPP·m) (Narayanan et al. 2021 §2.2; `pipeline::bubble_fraction`), beside
    /// the laid-out schedule's `bubble_fraction`.
    #[serde(default)]
    pub even_bubble_fraction: f64,
    pub stages: Vec<StageSchedule>,
    /// The steady state left out of a drawn schedule ([`drawn`]); none in a whole one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut: Option<Break>,
}

/// A break in a drawn schedule: from `start_s` to `end_s` of the step, every stage runs `microbatches` more
/// microbatches of the steady state, not drawn; the operations after it are at their true times.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Break {
    pub start_s: f64,
    pub end_s: f64,
    pub microbatches: u64,
    /// Each stage's idle time within the break (0 when it is busy throughout).
    pub idle_s: Vec<f64>,
}

/// The schedule of the report's plan; an error when the plan has no step-time estimate or too many operations.
pub fn schedule(report: &Report) -> Result<Schedule, Diagnostic> {
    let p = &report.plan;
    let par = &p.parallelism;
    let ops = 2u64.saturating_mul(par.pp().max(1)).saturating_mul(par.vpp().max(1)).saturating_mul(report.derived.num_microbatches.max(1));
    if ops > MAX_SCHEDULE_OPS {
        return Err(too_large(ops));
    }
    let t = timing(report)?;
    let timed = lay_out(&t, t.m);
    let makespan = makespan_of(&timed);
    let stages: Vec<StageSchedule> = timed.into_iter().enumerate().map(|(r, ops)| stage(&t, r, ops, makespan)).collect();
    Ok(t.finish(makespan, stages, None))
}

/// The schedule to draw: the whole one when each stage has at most `max_ops_per_stage` operations (2·VPP·m); else the warm-up and the first steady
/// microbatches, a [`Break`] standing for the repeated steady state, then the last steady microbatches and the
/// cool-down, timed as the whole step is (its makespan, and each stage's busy and idle time, are the whole step's).
/// The work is bounded by the pipeline's shape, not by the microbatch count: the steady state repeats every N
/// microbatches (N = 1 for 1F1B, the group size when interleaved) with the same period, checked on two lay-outs
/// (m₁ and m₁ + N microbatches) before it is used, so a 10,000-microbatch step is as quick as a 40-microbatch one.
pub fn drawn(report: &Report, max_ops_per_stage: u64) -> Result<Schedule, Diagnostic> {
    let par = &report.plan.parallelism;
    let ops = 2u64.saturating_mul(par.vpp().max(1)).saturating_mul(report.derived.num_microbatches.max(1));
    if ops <= max_ops_per_stage {
        return schedule(report);
    }
    let t = timing(report)?;
    match compressed(&t) {
        Some(s) => Ok(s),
        None => schedule(report),
    }
}

fn too_large(ops: u64) -> Diagnostic {
    Diagnostic::new(
        Code::ScheduleTooLarge,
        format!("the schedule has 2·PP·VPP·microbatches = {ops} operations; meshplan lays out at most {MAX_SCHEDULE_OPS}"),
        "draw it for fewer microbatches (a smaller global batch): the pattern repeats after the warm-up",
    )
}

/// What times a schedule: the pipeline's shape, a whole stage's forward and backward per microbatch, each chunk's
/// share of its stage's time and of its saved activations.
struct Timing {
    pp: u64,
    vpp: u64,
    group: u64,
    m: u64,
    forward_s: f64,
    backward_s: f64,
    /// [rank][chunk]: the chunk's layers over the mean layers per stage.
    time_share: Vec<Vec<f64>>,
    /// [rank][chunk]: the chunk's share of the stage's saved activations.
    act_share: Vec<Vec<f64>>,
    /// [rank]: the stage's saved activations per microbatch.
    per_mb: Vec<u64>,
}

fn timing(report: &Report) -> Result<Timing, Diagnostic> {
    let p = &report.plan;
    let par = &p.parallelism;
    let (pp, vpp) = (par.pp().max(1), par.vpp().max(1));
    let m = report.derived.num_microbatches.max(1);
    let group = par.microbatch_group_size_per_vp_stage.unwrap_or(pp).max(1);
    let Some(perf) = &report.performance else {
        let d = &report.derived;
        return Err(Diagnostic::new(
            Code::ScheduleWithoutStepTime,
            format!(
                "the plan has no step-time estimate to time the schedule with: data parallel {}, expert data parallel {}, microbatches {}",
                d.data_parallel_size, d.expert_data_parallel_size, d.num_microbatches
            ),
            "fix the plan's errors first (`meshplan plan` names them): each of the three must be at least 1",
        ));
    };
    // A whole stage's work per microbatch: compute and the exposed TP/CP/EP communication it waits on; backward is
    // twice the forward's FLOPs (Narayanan et al. 2021 §3.5: 2 GEMMs per forward GEMM) plus the recomputed forward.
    let b = &perf.breakdown;
    let work = (b.compute_s + b.tp_comm_s + b.cp_comm_s + b.ep_comm_s) / m as f64;
    let (forward_s, backward_s) = (work / 3.0, 2.0 * work / 3.0 + b.recompute_s / m as f64);
    // Each chunk's share of its stage's time: its layers over the mean layers per stage.
    let split = split_of(p).unwrap_or_else(|_| pipeline::balanced_split(p.model.num_layers, pp));
    let mean_layers = (p.model.num_layers.max(1) as f64) / pp as f64;
    let (mut time_share, mut act_share, mut per_mb) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..pp as usize {
        let counts: Vec<u64> = (0..vpp as usize).map(|c| split.chunk_counts(r).nth(c).unwrap_or(0)).collect();
        time_share.push(counts.iter().map(|&l| if vpp == 1 && l == 0 { 1.0 } else { l.max(1) as f64 / mean_layers }).collect());
        // A chunk's share of the stage's saved activations: its layers over the stage's (1/VPP each when none build any).
        let stage_layers: u64 = counts.iter().sum();
        act_share.push(counts.iter().map(|&l| if stage_layers == 0 { 1.0 / vpp as f64 } else { l as f64 / stage_layers as f64 }).collect());
        per_mb.push(report.memory.stages.get(r).map_or(0, |s| s.activations_per_microbatch_bytes));
    }
    Ok(Timing { pp, vpp, group, m, forward_s, backward_s, time_share, act_share, per_mb })
}

impl Timing {
    fn finish(&self, makespan: f64, stages: Vec<StageSchedule>, cut: Option<Break>) -> Schedule {
        let busy: f64 = stages.iter().map(|s| s.busy_s).sum();
        let idle: f64 = stages.iter().map(|s| s.idle_s).sum();
        let kind = if self.pp == 1 { "none" } else if self.vpp > 1 { "interleaved" } else { "1f1b" };
        Schedule {
            kind: kind.into(),
            pp: self.pp,
            vpp: self.vpp,
            microbatches: self.m,
            group: self.group,
            forward_s: self.forward_s,
            backward_s: self.backward_s,
            makespan_s: makespan,
            bubble_fraction: if busy > 0.0 { idle / busy } else { 0.0 },
            even_bubble_fraction: pipeline::bubble_fraction(self.pp, self.vpp, self.m),
            stages,
            cut,
        }
    }
}

/// Every rank's operations for `m` microbatches, ordered and timed.
fn lay_out(t: &Timing, m: u64) -> Vec<Vec<Op>> {
    let orders: Vec<Vec<(bool, u64, u64)>> = (0..t.pp).map(|r| order(t.pp, t.vpp, t.group, r, m)).collect();
    let dur = |r: u64, forward: bool, c: u64| {
        let share = t.time_share[r as usize][c as usize];
        if forward { t.forward_s * share } else { t.backward_s * share }
    };
    simulate(t.pp, t.vpp, &orders, dur)
}

fn makespan_of(timed: &[Vec<Op>]) -> f64 {
    timed.iter().flatten().map(|o| o.end_s).fold(0.0, f64::max)
}

/// The schedule with its steady state cut out, or `None` when the step is too short to cut or no repeating steady
/// state shows within [`MAX_SCHEDULE_OPS`] laid-out operations.
fn compressed(t: &Timing) -> Option<Schedule> {
    // The steady state repeats every `n` microbatches: 1F1B takes one at a time; the interleaved schedule a group.
    let n = if t.vpp > 1 { t.group } else { 1 };
    let rem = t.m % n;
    // First try 2·(PP + N) microbatches (rank 0 warms up with 2·(PP − 1) + (VPP − 1)·N chunk forwards, under PP + N
    // microbatches), doubled until the steady middle repeats; rounded to the step's remainder so that the last
    // (partial) group is laid out as the step has it.
    let mut m1 = 2 * t.pp + 2 * n;
    loop {
        m1 = rem + m1.saturating_sub(rem).div_ceil(n) * n;
        if m1 + n >= t.m || 2 * t.pp * t.vpp * (m1 + n) > MAX_SCHEDULE_OPS {
            return None;
        }
        let a = lay_out(t, m1);
        let b = lay_out(t, m1 + n);
        if let Some(cut_s) = repeats(&a, &b, t.vpp, n) {
            let k = (t.m - m1) / n;
            return Some(cut_out(t, a, &b, cut_s, k, n));
        }
        m1 *= 2;
    }
}

/// The cut time when `b` (m₁ + N microbatches) is `a` (m₁) with one period of N microbatches inserted at it: every
/// operation of `a` that starts before the cut is `b`'s at the same place and time, and every one that ends after it
/// is `b`'s 2·VPP·N places later, N microbatches on and one period later (the period: `b`'s makespan less `a`'s).
/// The cut is where rank 0 starts the middle microbatch's first forward.
fn repeats(a: &[Vec<Op>], b: &[Vec<Op>], vpp: u64, n: u64) -> Option<f64> {
    let period = makespan_of(b) - makespan_of(a);
    let m1 = a.first()?.iter().filter(|o| o.kind == "F" && o.chunk == 0).count() as u64;
    let middle = m1 / 2 / n * n;
    let cut = a[0].iter().find(|o| o.kind == "F" && o.chunk == 0 && o.microbatch == middle)?.start_s;
    let tol = 1e-9 * makespan_of(b).max(f64::MIN_POSITIVE);
    let same = |x: &Op, y: &Op, dm: u64, dt: f64| {
        x.kind == y.kind && x.chunk == y.chunk && x.microbatch + dm == y.microbatch && (x.start_s + dt - y.start_s).abs() <= tol && (x.end_s + dt - y.end_s).abs() <= tol
    };
    let shift = (2 * vpp * n) as usize;
    for (ra, rb) in a.iter().zip(b) {
        if rb.len() != ra.len() + shift {
            return None;
        }
        for (i, o) in ra.iter().enumerate() {
            if o.start_s < cut && !same(o, &rb[i], 0, 0.0) {
                return None;
            }
            if o.end_s > cut && !same(o, &rb[i + shift], n, period) {
                return None;
            }
        }
    }
    Some(cut)
}

/// The whole step from `a` (m₁ microbatches) with `k` periods of `n` microbatches inserted at `cut_s`: the operations
/// before the cut as laid out, those after it `k·n` microbatches and `k` periods later (an operation across the cut is
/// kept on both sides, so the drawing clips it at the break's edges); busy time grows by `k` times a period's.
fn cut_out(t: &Timing, a: Vec<Vec<Op>>, b: &[Vec<Op>], cut_s: f64, k: u64, n: u64) -> Schedule {
    let period = makespan_of(b) - makespan_of(&a);
    let gap = period * k as f64;
    let makespan = makespan_of(&a) + gap;
    let (mut stages, mut idle_in_break) = (Vec::new(), Vec::new());
    for (r, ops) in a.into_iter().enumerate() {
        let busy_per_period = busy_of(&b[r]) - busy_of(&ops);
        let mut st = stage(t, r, ops, makespan);
        st.busy_s += busy_per_period * k as f64;
        st.idle_s = (makespan - st.busy_s).max(0.0);
        idle_in_break.push((gap - busy_per_period * k as f64).max(0.0));
        let mut kept: Vec<Op> = st.ops.iter().filter(|o| o.start_s < cut_s).cloned().collect();
        kept.extend(st.ops.iter().filter(|o| o.end_s > cut_s).map(|o| Op {
            microbatch: o.microbatch + k * n,
            start_s: o.start_s + gap,
            end_s: o.end_s + gap,
            ..o.clone()
        }));
        st.ops = kept;
        for e in st.activation_bytes.iter_mut().filter(|e| e.0 >= cut_s) {
            e.0 += gap;
        }
        stages.push(st);
    }
    let cut = Break { start_s: cut_s, end_s: cut_s + gap, microbatches: k * n, idle_s: idle_in_break };
    t.finish(makespan, stages, Some(cut))
}

fn busy_of(ops: &[Op]) -> f64 {
    ops.iter().map(|o| o.end_s - o.start_s).sum()
}

/// Rank `r`'s operations in order: (forward?, microbatch, chunk).
fn order(pp: u64, vpp: u64, group: u64, r: u64, m: u64) -> Vec<(bool, u64, u64)> {
    let total = m * vpp;
    // The forward order of (microbatch, chunk): groups of N microbatches, each chunk in turn (get_schedule_table); the
    // backward order is the same with the chunks reversed.
    let mut table = Vec::with_capacity(total as usize);
    let mut start = 0;
    while start < m {
        let end = (start + group).min(m);
        for c in 0..vpp {
            for j in start..end {
                table.push((j, c));
            }
        }
        start = end;
    }
    let warmup = if vpp == 1 { (pp - r - 1).min(m) } else { ((pp - r - 1) * 2 + (vpp - 1) * group).min(total) };
    let mut out = Vec::with_capacity(2 * total as usize);
    let f = |k: u64| (true, table[k as usize].0, table[k as usize].1);
    let bw = |k: u64| (false, table[k as usize].0, vpp - 1 - table[k as usize].1);
    for k in 0..warmup {
        out.push(f(k));
    }
    for k in 0..total - warmup {
        out.push(f(warmup + k));
        out.push(bw(k));
    }
    for k in total - warmup..total {
        out.push(bw(k));
    }
    out
}

/// Times every rank's operations in order, each starting when its rank is free and its input has arrived: a forward
/// after the previous stage's forward of the same microbatch and chunk (rank 0's chunk c after the last rank's chunk
/// c − 1), a backward after the next stage's backward (the last rank's last chunk after its own forward).
fn simulate(pp: u64, vpp: u64, orders: &[Vec<(bool, u64, u64)>], dur: impl Fn(u64, bool, u64) -> f64) -> Vec<Vec<Op>> {
    use std::collections::HashMap;
    let mut done: HashMap<(bool, u64, u64, u64), f64> = HashMap::new();
    let mut next = vec![0usize; pp as usize];
    let mut free = vec![0.0f64; pp as usize];
    let mut out: Vec<Vec<Op>> = vec![Vec::new(); pp as usize];
    loop {
        let mut progressed = false;
        for r in 0..pp {
            let ri = r as usize;
            while let Some(&(fwd, j, c)) = orders[ri].get(next[ri]) {
                let dep = if fwd {
                    match (r, c) {
                        (0, 0) => Some(0.0),
                        (0, c) => done.get(&(true, j, c - 1, pp - 1)).copied(),
                        (r, c) => done.get(&(true, j, c, r - 1)).copied(),
                    }
                } else if r == pp - 1 {
                    if c == vpp - 1 { done.get(&(true, j, c, r)).copied() } else { done.get(&(false, j, c + 1, 0)).copied() }
                } else {
                    done.get(&(false, j, c, r + 1)).copied()
                };
                let Some(ready) = dep else { break };
                let start = ready.max(free[ri]);
                let end = start + dur(r, fwd, c);
                free[ri] = end;
                done.insert((fwd, j, c, r), end);
                out[ri].push(Op { kind: if fwd { "F" } else { "B" }.into(), microbatch: j, chunk: c, start_s: start, end_s: end });
                next[ri] += 1;
                progressed = true;
            }
        }
        if !progressed {
            break;
        }
    }
    out
}

/// Rank `r`'s timeline from its operations: busy and idle time, saved activations over time and at the peak.
fn stage(t: &Timing, r: usize, ops: Vec<Op>, makespan: f64) -> StageSchedule {
    let busy = busy_of(&ops);
    // Saved activations: a chunk's share of the stage's per-microbatch activations, from its forward's end to its
    // backward's end.
    let mut events: Vec<(f64, i64, i64)> = Vec::new();
    for o in &ops {
        let share = t.act_share[r].get(o.chunk as usize).copied().unwrap_or(0.0);
        let bytes = (t.per_mb[r] as f64 * share).round() as i64;
        if o.kind == "F" {
            events.push((o.end_s, bytes, 1));
        } else {
            events.push((o.end_s, -bytes, -1));
        }
    }
    crate::sort::stable_by(&mut events, |a, b| a.0.total_cmp(&b.0).then(b.2.cmp(&a.2)));
    let (mut bytes, mut held, mut peak_bytes, mut peak_held) = (0i64, 0i64, 0i64, 0i64);
    let mut timeline = vec![(0.0, 0u64)];
    for (time, db, dh) in events {
        bytes += db;
        held += dh;
        peak_bytes = peak_bytes.max(bytes);
        peak_held = peak_held.max(held);
        timeline.push((time, bytes.max(0) as u64));
    }
    StageSchedule {
        pipeline_rank: r as u64,
        ops,
        busy_s: busy,
        idle_s: (makespan - busy).max(0.0),
        activation_bytes: timeline,
        peak_activation_bytes: peak_bytes.max(0) as u64,
        peak_in_flight: peak_held as f64 / t.vpp as f64,
        memory_model_in_flight: pipeline::microbatches_in_flight(t.pp, t.vpp, t.group, r as u64, t.m),
    }
}
