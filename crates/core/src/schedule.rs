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
}

/// The schedule of the report's plan; an error when the plan has no step-time estimate or too many operations.
pub fn schedule(report: &Report) -> Result<Schedule, Diagnostic> {
    let p = &report.plan;
    let par = &p.parallelism;
    let (pp, vpp) = (par.pp().max(1), par.vpp().max(1));
    let m = report.derived.num_microbatches.max(1);
    let group = par.microbatch_group_size_per_vp_stage.unwrap_or(pp).max(1);
    let ops = 2u64.saturating_mul(pp).saturating_mul(vpp).saturating_mul(m);
    if ops > MAX_SCHEDULE_OPS {
        return Err(Diagnostic::new(
            Code::ScheduleTooLarge,
            format!("the schedule has 2·PP·VPP·microbatches = {ops} operations; meshplan lays out at most {MAX_SCHEDULE_OPS}"),
            "draw it for fewer microbatches (a smaller global batch): the pattern repeats after the warm-up",
        ));
    }
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
    let share = |rank: u64, chunk: u64| -> f64 {
        let layers = split.chunk_counts(rank as usize).nth(chunk as usize).unwrap_or(0);
        if vpp == 1 && layers == 0 { 1.0 } else { layers.max(1) as f64 / mean_layers }
    };
    let orders: Vec<Vec<(bool, u64, u64)>> = (0..pp).map(|r| order(pp, vpp, group, r, m)).collect();
    let timed = simulate(pp, vpp, &orders, |r, forward, c| if forward { forward_s * share(r, c) } else { backward_s * share(r, c) });
    let makespan = timed.iter().flatten().map(|o| o.end_s).fold(0.0, f64::max);
    let mut stages = Vec::new();
    for (r, ops) in timed.into_iter().enumerate() {
        let mem = report.memory.stages.get(r);
        let per_mb = mem.map_or(0, |s| s.activations_per_microbatch_bytes);
        // A chunk's share of the stage's saved activations: its layers over the stage's (1/VPP each when none build any).
        let counts: Vec<u64> = split.chunk_counts(r).collect();
        let stage_layers: u64 = counts.iter().sum();
        let act_share = |c: u64| match stage_layers {
            0 => 1.0 / vpp as f64,
            n => counts.get(c as usize).copied().unwrap_or(0) as f64 / n as f64,
        };
        stages.push(stage(r as u64, ops, makespan, per_mb, act_share, vpp, pp, group, m));
    }
    let busy: f64 = stages.iter().map(|s| s.busy_s).sum();
    let idle: f64 = stages.iter().map(|s| s.idle_s).sum();
    let kind = if pp == 1 { "none" } else if vpp > 1 { "interleaved" } else { "1f1b" };
    Ok(Schedule {
        kind: kind.into(),
        pp,
        vpp,
        microbatches: m,
        group,
        forward_s,
        backward_s,
        makespan_s: makespan,
        bubble_fraction: if busy > 0.0 { idle / busy } else { 0.0 },
        even_bubble_fraction: pipeline::bubble_fraction(pp, vpp, m),
        stages,
    })
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

#[allow(clippy::too_many_arguments)]
fn stage(rank: u64, ops: Vec<Op>, makespan: f64, per_mb: u64, chunk_share: impl Fn(u64) -> f64, vpp: u64, pp: u64, group: u64, m: u64) -> StageSchedule {
    let busy: f64 = ops.iter().map(|o| o.end_s - o.start_s).sum();
    // Saved activations: a chunk's share of the stage's per-microbatch activations, from its forward's end to its
    // backward's end.
    let mut events: Vec<(f64, i64, i64)> = Vec::new();
    for o in &ops {
        let bytes = (per_mb as f64 * chunk_share(o.chunk)).round() as i64;
        if o.kind == "F" {
            events.push((o.end_s, bytes, 1));
        } else {
            events.push((o.end_s, -bytes, -1));
        }
    }
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.2.cmp(&a.2)));
    let (mut bytes, mut held, mut peak_bytes, mut peak_held) = (0i64, 0i64, 0i64, 0i64);
    let mut timeline = vec![(0.0, 0u64)];
    for (t, db, dh) in events {
        bytes += db;
        held += dh;
        peak_bytes = peak_bytes.max(bytes);
        peak_held = peak_held.max(held);
        timeline.push((t, bytes.max(0) as u64));
    }
    StageSchedule {
        pipeline_rank: rank,
        ops,
        busy_s: busy,
        idle_s: (makespan - busy).max(0.0),
        activation_bytes: timeline,
        peak_activation_bytes: peak_bytes.max(0) as u64,
        peak_in_flight: peak_held as f64 / vpp as f64,
        memory_model_in_flight: pipeline::microbatches_in_flight(pp, vpp, group, rank, m),
    }
}
