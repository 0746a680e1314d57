//! Cluster sizing: how many GPUs, and how long, to train a model on a number of tokens.
//!
//! Given a plan (model, GPU, node size, sequence length, global batch) and what to train (tokens or steps), it runs
//! the layout search ([`search::search_counted`], the Advisor's engine, not a copy of it) at a bounded list of whole-node
//! GPU counts ([`counts`]) and reports, per count, the best layout with its time to train, GPU-hours, MFU and peak
//! memory, or why no layout holds the model there; then the fewest nodes that meet a deadline, the fastest run inside a
//! GPU-hour budget, and where the throughput per GPU falls below a chosen share of the best smaller count's.
//!
//! Time to train is Megatron's: `train_iters = ⌈tokens / (global batch × seq_length)⌉` whole steps
//! (megatron/training/training.py trains `args.train_iters` steps of `global_batch_size` samples), each taking the
//! search's step time. **Invariant: it sizes nothing itself** — every figure of a count is the search's pick at that
//! count; the total work over all counts is bounded by [`MAX_SIZE_WORK`].

use crate::Code;
use crate::fields::clip_to;
use crate::limits::{
    DEFAULT_SIZE_GPUS, MAX_SEARCH_WORLD, MAX_SIZE_COUNTS, MAX_SIZE_DEADLINE_S, MAX_SIZE_GPU_HOURS, MAX_SIZE_STEPS, MAX_SIZE_TOKENS,
    MAX_SIZE_WORK,
};
use crate::plan::{InputError, Plan};
use crate::search::{self, Candidate, SearchOptions, SearchResult, gib};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What to size, as text: the CLI's flags and the JS API's fields, read by one parser ([`SizeRequest::read`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SizeRequest {
    /// Tokens to train: `15T`, `500B`, `1.5e12` (suffixes K, M, B or G, T, P: powers of 1,000).
    pub tokens: Option<String>,
    /// Or training steps (Megatron's `train_iters`) at the plan's global batch.
    pub steps: Option<String>,
    /// The wall-clock deadline: `30d`, `12h`, `90m`, `2w`, `3600s`.
    pub deadline: Option<String>,
    /// A budget in GPU-hours: `500k`, `2M`.
    pub gpu_hours: Option<String>,
    /// The node counts to try: `16..512`, or one count.
    pub nodes: Option<String>,
    /// The global batch the run accepts, in tokens per step: `4M..16M` (instead of the plan's global batch).
    pub batch_tokens: Option<String>,
    /// The share of the best smaller count's throughput per GPU below which adding nodes stops paying (default 0.8).
    pub efficiency: Option<String>,
}

/// The JS API's field names of [`SizeRequest`], in its order.
pub const REQUEST_FIELDS: [&str; 7] = ["tokens", "steps", "deadline", "gpu_hours", "nodes", "batch_tokens", "efficiency"];

/// What a sizing read from its request.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SizeOptions {
    pub tokens: Option<f64>,
    pub steps: Option<u64>,
    pub deadline_s: Option<f64>,
    pub gpu_hours: Option<f64>,
    /// First and last node count (inclusive).
    pub nodes: Option<(u64, u64)>,
    /// Smallest and largest global batch accepted, in tokens.
    pub batch_tokens: Option<(u64, u64)>,
    pub efficiency: Option<f64>,
}

/// The scaling efficiency threshold when none is given: 80% of the best smaller count's throughput per GPU, the usual
/// line for "still scaling well" (NVIDIA's Megatron-LM scaling plots report weak-scaling efficiency against it).
pub const DEFAULT_EFFICIENCY: f64 = 0.8;

/// Why no layout runs at a GPU count: the code that rejected most of its layouts and the numbers behind it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NoFit {
    pub code: Code,
    pub message: String,
}

/// One GPU count and its best layout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SizePoint {
    pub num_nodes: u64,
    pub gpus: u64,
    pub global_batch_size: u64,
    /// Whole training steps to train the tokens: ⌈tokens / (global batch × seq_length)⌉ (or the steps asked for).
    pub train_iters: u64,
    /// Layouts the search evaluated and found valid at this count.
    pub evaluated: u64,
    pub valid: u64,
    /// The search's best layout at this count (its plan: the request's plan at this count with the layout applied).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best: Option<Candidate>,
    /// train_iters × the best layout's step time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_to_train_s: Option<f64>,
    /// gpus × time_to_train_s / 3,600.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_hours: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_s_per_gpu: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mfu: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_bytes: Option<u64>,
    /// Throughput per GPU over the highest of any count up to this one ([`scaling_efficiency`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scaling_efficiency: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meets_deadline: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within_budget: Option<bool>,
    /// Why no layout runs here (no best layout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_fit: Option<NoFit>,
}

/// What the sizing did and found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SizeResult {
    pub model: String,
    pub gpu: String,
    pub gpus_per_node: u64,
    pub gpu_memory_bytes: u64,
    pub seq_length: u64,
    pub options: SizeOptions,
    /// The node counts tried, first and last.
    pub node_range: (u64, u64),
    pub efficiency_threshold: f64,
    /// One per count tried, ascending.
    pub points: Vec<SizePoint>,
    /// The fewest nodes whose best layout trains the tokens within the deadline.
    pub fewest_nodes_meeting_deadline: Option<u64>,
    /// The nodes of the fastest run within the GPU-hour budget (fewer nodes on a tie).
    pub fastest_within_budget: Option<u64>,
    /// The nodes of the fastest run tried.
    pub fastest: Option<u64>,
    /// The fewest GPUs tried on which a layout holds the model.
    pub min_gpus: Option<u64>,
    /// The first count whose scaling efficiency is below the threshold.
    pub efficiency_below_threshold_at: Option<u64>,
    /// Units of search work spent ([`MAX_SIZE_WORK`]'s units).
    pub work: u64,
    /// Every value the sizing chose rather than read from the request.
    pub assumptions: Vec<String>,
    /// Where it stopped early and why.
    pub notes: Vec<String>,
}

fn invalid(what: &str, text: &str, forms: &str) -> InputError {
    InputError::new(
        Code::SizeInvalidValue,
        format!("{what} {:?} is not a value meshplan reads", clip_to(text.trim(), 40)),
        format!("write {what} as {forms}"),
    )
}

/// A number with an optional power-of-1,000 suffix (K, M, B or G, T, P; case-insensitive): `15T` = 1.5·10^13.
pub fn read_quantity(text: &str) -> Option<f64> {
    let t: String = text.trim().chars().filter(|c| *c != '_' && *c != ',').collect();
    let (num, scale) = match t.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&t[..t.len() - 1], 1e3),
        Some('M') => (&t[..t.len() - 1], 1e6),
        Some('B' | 'G') => (&t[..t.len() - 1], 1e9),
        Some('T') => (&t[..t.len() - 1], 1e12),
        Some('P') => (&t[..t.len() - 1], 1e15),
        _ => (&t[..], 1.0),
    };
    let x = num.trim().parse::<f64>().ok()? * scale;
    (x.is_finite() && x >= 0.0).then_some(x)
}

/// A duration in seconds: a number and a unit, `s`, `m`/`min`, `h`, `d`, `w` (`30d` = 2,592,000 s).
pub fn read_duration(text: &str) -> Option<f64> {
    let t = text.trim().to_ascii_lowercase();
    let split = t.find(|c: char| c.is_ascii_alphabetic())?;
    let (num, unit) = t.split_at(split);
    let scale = match unit.trim() {
        "s" | "sec" | "secs" | "second" | "seconds" => 1.0,
        "m" | "min" | "mins" | "minute" | "minutes" => 60.0,
        "h" | "hr" | "hrs" | "hour" | "hours" => 3_600.0,
        "d" | "day" | "days" => 86_400.0,
        "w" | "wk" | "week" | "weeks" => 604_800.0,
        _ => return None,
    };
    let x = num.trim().parse::<f64>().ok()? * scale;
    (x.is_finite() && x >= 0.0).then_some(x)
}

/// `a..b` (or `a-b`) of quantities, or one quantity for both ends.
fn read_range(text: &str) -> Option<(f64, f64)> {
    let t = text.trim();
    match t.split_once("..").or_else(|| t.split_once('-')) {
        Some((a, b)) => Some((read_quantity(a)?, read_quantity(b.trim_start_matches('=').trim())?)),
        None => read_quantity(t).map(|x| (x, x)),
    }
}

fn whole(x: f64) -> Option<u64> {
    (x.fract() == 0.0 && x <= u64::MAX as f64).then_some(x as u64)
}

impl SizeRequest {
    /// The JS API's request object: each field a string or a number ([`REQUEST_FIELDS`]).
    pub fn from_value(v: &Value) -> Result<SizeRequest, InputError> {
        let Some(map) = v.as_object() else {
            return Err(InputError::new(Code::SizeInvalidValue, "the sizing request is not a JSON object", "pass {\"tokens\": \"15T\", \"deadline\": \"30d\"}"));
        };
        let mut r = SizeRequest::default();
        for (key, value) in map {
            let text = match value {
                Value::String(s) => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                Value::Null => None,
                _ => return Err(invalid(&format!("`{}`", clip_to(key, 40)), &value.to_string(), "a string or a number")),
            };
            let slot = match key.as_str() {
                "tokens" => &mut r.tokens,
                "steps" => &mut r.steps,
                "deadline" => &mut r.deadline,
                "gpu_hours" => &mut r.gpu_hours,
                "nodes" => &mut r.nodes,
                "batch_tokens" => &mut r.batch_tokens,
                "efficiency" => &mut r.efficiency,
                _ => {
                    let hint = crate::fields::nearest(key, &REQUEST_FIELDS).map(|n| format!("`{n}`")).unwrap_or_else(|| REQUEST_FIELDS.join(", "));
                    return Err(InputError::new(
                        Code::SizeInvalidValue,
                        format!("the sizing request has no field `{}`", clip_to(key, 40)),
                        format!("use {hint}"),
                    ));
                }
            };
            *slot = text;
        }
        Ok(r)
    }

    /// The options the text says, or the first value that cannot be read.
    pub fn read(&self) -> Result<SizeOptions, InputError> {
        let mut o = SizeOptions::default();
        if let Some(t) = &self.tokens {
            let x = read_quantity(t).ok_or_else(|| invalid("the tokens", t, "a count such as 15T, 500B or 1.5e12"))?;
            if x < 1.0 {
                return Err(zero_tokens(&format!("the tokens to train are {t:?}"), "--tokens 15T"));
            }
            if x > MAX_SIZE_TOKENS {
                return Err(invalid("the tokens", t, &format!("at most {MAX_SIZE_TOKENS:e}")));
            }
            o.tokens = Some(x.round());
        }
        if let Some(t) = &self.steps {
            let x = read_quantity(t).and_then(whole).ok_or_else(|| invalid("the steps", t, "a whole number such as 100000 or 250k"))?;
            if x == 0 {
                return Err(zero_tokens("the training steps are 0", "--steps 100000"));
            }
            if x > MAX_SIZE_STEPS {
                return Err(invalid("the steps", t, &format!("at most {MAX_SIZE_STEPS}")));
            }
            o.steps = Some(x);
        }
        o.deadline_s = self.deadline.as_deref().map(|t| positive(t, read_duration(t), "the deadline", "a duration such as 30d, 12h or 2w", MAX_SIZE_DEADLINE_S)).transpose()?;
        o.gpu_hours = self.gpu_hours.as_deref().map(|t| positive(t, read_quantity(t), "the GPU-hour budget", "a count such as 500k or 2M", MAX_SIZE_GPU_HOURS)).transpose()?;
        if let Some(t) = &self.nodes {
            let (a, b) = read_range(t).and_then(|(a, b)| Some((whole(a)?, whole(b)?))).ok_or_else(|| invalid("the node range", t, "16..512 or one count, e.g. 64"))?;
            o.nodes = Some((a, b));
        }
        if let Some(t) = &self.batch_tokens {
            let (a, b) = read_range(t).ok_or_else(|| invalid("the batch range", t, "tokens per step, e.g. 4M..16M"))?;
            o.batch_tokens = Some((a.ceil() as u64, b.floor() as u64));
        }
        if let Some(t) = &self.efficiency {
            let x = t.trim().parse::<f64>().ok().filter(|x| *x > 0.0 && *x <= 1.0).ok_or_else(|| invalid("the efficiency threshold", t, "a share above 0 and at most 1, e.g. 0.8"))?;
            o.efficiency = Some(x);
        }
        Ok(o)
    }
}

fn zero_tokens(message: &str, fix: &str) -> InputError {
    InputError::new(Code::SizeZeroTokens, format!("{message}: there is nothing to train"), format!("give what to train, e.g. {fix}"))
}

/// A deadline or budget: above 0 and at most `max`.
fn positive(text: &str, x: Option<f64>, what: &str, forms: &str, max: f64) -> Result<f64, InputError> {
    let x = x.ok_or_else(|| invalid(what, text, forms))?;
    if x <= 0.0 {
        return Err(InputError::new(Code::SizeZeroDeadline, format!("{what} is {:?}: no run meets it", clip_to(text.trim(), 40)), format!("give {what} above 0, as {forms}")));
    }
    if x > max {
        return Err(invalid(what, text, &format!("{forms}, at most {max:e}")));
    }
    Ok(x)
}

/// The node counts tried between `lo` and `hi` (inclusive), ascending: the ends, the powers of two and three times the
/// powers of two between them — a step of 1.5× or 1.33× from one to the next, at most [`MAX_SIZE_COUNTS`] counts.
pub fn counts(lo: u64, hi: u64) -> Vec<u64> {
    let mut out = vec![lo, hi];
    for a in 0..63u32 {
        for m in [1u64, 3] {
            let n = m.saturating_mul(1u64 << a);
            if n > lo && n < hi {
                out.push(n);
            }
        }
    }
    crate::sort::stable_by(&mut out, Ord::cmp);
    out.dedup();
    out.truncate(MAX_SIZE_COUNTS);
    out
}

/// The global batch (samples) at `world` GPUs within `[lo, hi]`: the largest multiple of `world / 2^j` in it, for the
/// smallest `j` that has one — so that every data-parallel size of the world, or as many as the range allows, divides
/// it at micro-batch 1 — else `hi`. A larger batch is never slower per token (fewer steps, a smaller pipeline bubble).
pub fn batch_for(world: u64, lo: u64, hi: u64) -> u64 {
    let mut step = world.max(1);
    loop {
        let m = hi / step * step;
        if m >= lo.max(1) {
            return m;
        }
        if step % 2 != 0 {
            return hi;
        }
        step /= 2;
    }
}

/// Sizes the cluster for a plan file (JSON text; its `cluster.num_nodes` and `parallelism` are ignored).
pub fn size_str(text: &str, req: &SizeRequest) -> Result<SizeResult, InputError> {
    size_value(&crate::plan::read_json(text)?, req)
}

/// As [`size_str`], from a JSON value. The request is read first, then the plan as the search reads it
/// ([`search::read_for_search`]); with a batch range the plan needs no `training.global_batch_size`.
pub fn size_value(value: &Value, req: &SizeRequest) -> Result<SizeResult, InputError> {
    let opts = req.read()?;
    let mut value = value.clone();
    if let Some(obj) = value.as_object_mut() {
        // The counts replace the plan's nodes; its parallelism is searched.
        if let Some(cluster) = obj.get_mut("cluster").and_then(Value::as_object_mut) {
            cluster.remove("num_gpus");
            cluster.insert("num_nodes".into(), 1.into());
        }
        obj.remove("parallelism");
        if opts.batch_tokens.is_some() {
            // Replaced at every count ([`batch_for`]).
            if let Some(t) = obj.entry("training").or_insert_with(|| Value::Object(Default::default())).as_object_mut() {
                t.insert("global_batch_size".into(), 1.into());
            }
        }
    }
    let (base, tuning) = search::read_for_search(&value)?;
    size(&base, &opts, &tuning)
}

/// What a sizing reads of its options once checked against the plan.
struct Bounds {
    nodes: (u64, u64),
    /// Global batch in samples: fixed, or the range accepted.
    batch: (u64, u64),
    stop_after_deadline: bool,
}

fn bounds(base: &Plan, o: &SizeOptions, notes: &mut Vec<String>) -> Result<Bounds, InputError> {
    let gpn = base.cluster.gpus_per_node.max(1);
    let seq = base.training.seq_length.max(1);
    match (o.tokens, o.steps) {
        (None, None) => {
            return Err(InputError::new(Code::SizeNeedsTokens, "the sizing needs what to train: the tokens or the training steps", "add --tokens 15T (or --steps 100000)"));
        }
        (Some(_), Some(_)) => return Err(invalid("what to train", "tokens and steps", "either the tokens or the steps, not both")),
        _ => {}
    }
    if o.steps.is_some() && o.batch_tokens.is_some() {
        return Err(InputError::new(
            Code::SizeInvalidValue,
            "steps with a batch range: the tokens trained would depend on the batch each count chooses",
            "give the tokens to train (--tokens) with a batch range, or the steps with the plan's global batch",
        ));
    }
    let most = MAX_SEARCH_WORLD / gpn;
    let nodes = match o.nodes {
        Some((lo, hi)) if lo == 0 || lo > hi || hi > most => {
            let fix_hi = hi.clamp(1, most.max(1));
            return Err(InputError::new(
                Code::SizeNodesOutOfRange,
                format!("the node range {lo}..{hi} of {gpn}-GPU nodes is not one the sizing tries: it must start at 1 or more, end at or after its start and reach at most {most} nodes ({MAX_SEARCH_WORLD} GPUs, the most the layout search lays out)"),
                format!("try --nodes {}..{fix_hi}", lo.clamp(1, fix_hi)),
            ));
        }
        Some(r) => r,
        None => {
            let hi = (DEFAULT_SIZE_GPUS / gpn).clamp(1, most.max(1));
            notes.push(format!("node range 1..{hi}: the default, up to {DEFAULT_SIZE_GPUS} GPUs (no --nodes given)"));
            (1, hi)
        }
    };
    let batch = match o.batch_tokens {
        Some((lo, hi)) => {
            let (a, b) = (lo.div_ceil(seq).max(1), hi / seq);
            if a > b {
                return Err(InputError::new(
                    Code::SizeInvalidValue,
                    format!("the batch range {lo}..{hi} tokens holds no whole number of {seq}-token sequences"),
                    format!("accept at least one sequence per step: a range reaching {} tokens or more", a.saturating_mul(seq)),
                ));
            }
            (a, b)
        }
        None => {
            let g = base.training.global_batch_size.unwrap_or(1).max(1);
            (g, g)
        }
    };
    Ok(Bounds { nodes, batch, stop_after_deadline: o.deadline_s.is_some() && o.nodes.is_none() })
}

/// Sizes the cluster for `base` (model, GPU, node size, sequence length, global batch; nodes and layout ignored).
/// `tuning`: what the search may choose beside the layout, the tuned speed settings among it
/// ([`search::read_for_search`]; read once, at the plan's own GPU count).
pub fn size(base: &Plan, o: &SizeOptions, tuning: &search::Tuning) -> Result<SizeResult, InputError> {
    let mut assumptions = Vec::new();
    let b = bounds(base, o, &mut assumptions)?;
    let gpn = base.cluster.gpus_per_node.max(1);
    let list = counts(b.nodes.0, b.nodes.1);
    let mut p = base.clone();
    let search_opts = SearchOptions { top: 1, ..Default::default() };
    let mut points: Vec<SizePoint> = Vec::with_capacity(list.len());
    let (mut work, mut notes, mut met) = (0u64, Vec::new(), None);
    for (i, &n) in list.iter().enumerate() {
        let world = n.saturating_mul(gpn);
        let gbs = batch_for(world, b.batch.0, b.batch.1);
        p.cluster.num_nodes = n;
        p.training.global_batch_size = Some(gbs);
        let allowance = MAX_SIZE_WORK.saturating_sub(work);
        let r = match search::search_counted(&p, &search_opts, tuning, allowance) {
            Ok((r, w)) => {
                work = work.saturating_add(w);
                r
            }
            Err(w) if points.is_empty() => return Err(too_large(base, n, world, w)),
            Err(_) => {
                notes.push(format!("stopped before {n} nodes: the counts up to it took {work} of the {MAX_SIZE_WORK} units of work a sizing does (about a second); give a smaller --nodes range to see more"));
                break;
            }
        };
        points.push(point_of(&p, o, n, gbs, r));
        if met.is_none() && points.last().and_then(|q| q.meets_deadline) == Some(true) {
            met = Some(i);
        }
        if b.stop_after_deadline && met.is_some_and(|m| i >= m + 2) && i + 1 < list.len() {
            notes.push(format!("stopped at {n} nodes, two counts past the fewest that meets the deadline (no --nodes range given)"));
            break;
        }
    }
    if points.iter().all(|q| q.no_fit.as_ref().is_some_and(|f| f.code == Code::GbsNotDivisible)) && b.batch.0 == b.batch.1 {
        return Err(indivisible(b.batch.0, b.nodes, gpn));
    }
    say_assumptions(&mut assumptions, base, o, &b, &list);
    Ok(finish(base, o, b.nodes, points, work, assumptions, notes))
}

fn too_large(base: &Plan, n: u64, world: u64, w: u64) -> InputError {
    InputError::new(
        Code::SizeTooLarge,
        format!(
            "searching the layouts of {} on {n} nodes ({world} GPUs) alone would take more than the {MAX_SIZE_WORK} units of work a sizing does in about a second (at least {w})",
            base.model_name
        ),
        "size a node range of fewer GPUs (--nodes), or search one cluster with `meshplan search`",
    )
}

fn indivisible(gbs: u64, (lo, hi): (u64, u64), gpn: u64) -> InputError {
    let w = lo.saturating_mul(gpn).max(1);
    let nearest = gbs.saturating_add(w / 2) / w * w;
    InputError::new(
        Code::SizeBatchIndivisible,
        format!("the global batch {gbs} divides by the micro-batch × data-parallel size of no valid layout on any count of {lo}..{hi} nodes of {gpn} GPUs"),
        format!("use a global batch of {} (a multiple of {w} GPUs), or give a batch range (--batch-tokens) the sizing chooses from", nearest.max(w)),
    )
}

/// One count's point from its search: the best layout's time to train and GPU-hours, or why none runs.
fn point_of(p: &Plan, o: &SizeOptions, n: u64, gbs: u64, r: SearchResult) -> SizePoint {
    let gpus = p.world_size();
    let seq = p.training.seq_length.max(1);
    let tokens_per_step = gbs as f64 * seq as f64;
    // megatron/training/training.py: `train_iters` whole steps of `global_batch_size` sequences.
    let train_iters = o.steps.unwrap_or_else(|| (o.tokens.unwrap_or(0.0) / tokens_per_step).ceil() as u64);
    let no_fit = r.candidates.is_empty().then(|| no_fit(&r, gbs, gpus));
    let mut point = SizePoint {
        num_nodes: n,
        gpus,
        global_batch_size: gbs,
        train_iters,
        evaluated: r.evaluated,
        valid: r.valid,
        best: None,
        time_to_train_s: None,
        gpu_hours: None,
        tokens_per_s: None,
        tokens_per_s_per_gpu: None,
        mfu: None,
        peak_bytes: None,
        scaling_efficiency: None,
        meets_deadline: None,
        within_budget: None,
        no_fit,
    };
    if let Some(best) = r.candidates.into_iter().next() {
        // Time to train: whole steps × the step time; GPU-hours: every GPU for that long.
        let time = train_iters as f64 * best.step_time_s;
        let gpu_hours = gpus as f64 * time / 3_600.0;
        point.time_to_train_s = Some(time);
        point.gpu_hours = Some(gpu_hours);
        point.tokens_per_s = Some(best.tokens_per_s_per_gpu * gpus as f64);
        point.tokens_per_s_per_gpu = Some(best.tokens_per_s_per_gpu);
        point.mfu = Some(best.mfu);
        point.peak_bytes = Some(best.peak_bytes);
        point.meets_deadline = o.deadline_s.map(|d| time <= d);
        point.within_budget = o.gpu_hours.map(|h| gpu_hours <= h);
        point.best = Some(best);
    }
    point
}

/// Why no layout runs on `gpus`: memory when every layout the rules accept is over the GPU's, else the rule that
/// rejected most layouts (its first error per layout, as the search counts them).
fn no_fit(r: &SearchResult, gbs: u64, gpus: u64) -> NoFit {
    if let Some(peak) = r.smallest_peak_bytes.filter(|&b| b > r.gpu_memory_bytes) {
        return NoFit {
            code: Code::OutOfMemory,
            message: format!(
                "no layout fits on {gpus} GPUs: the smallest peak of any layout the rules accept is {:.1} GiB, over the GPU's {:.1} GiB",
                gib(peak),
                gib(r.gpu_memory_bytes)
            ),
        };
    }
    let top = r.rejected_by.iter().max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)));
    match top.and_then(|(c, k)| Some((Code::parse(c)?, *k))) {
        Some((Code::GbsNotDivisible, k)) => NoFit {
            code: Code::GbsNotDivisible,
            message: format!("the global batch {gbs} divides by the micro-batch × data-parallel size of no valid layout on {gpus} GPUs ({k} of {} layouts)", r.evaluated),
        },
        Some((code, k)) => NoFit { code, message: format!("no valid layout on {gpus} GPUs: {k} of {} layouts fail `{code}` first", r.evaluated) },
        None => NoFit {
            code: Code::WorldNotDivisibleDense,
            message: format!("no layout within the search's bounds (TP, PP, CP, EP) divides {gpus} GPUs"),
        },
    }
}

/// The picks over the points: fewest nodes meeting the deadline, fastest within the budget, fastest, the fewest GPUs
/// that hold the model, and the scaling efficiency of each point against the smallest that fits.
fn finish(base: &Plan, o: &SizeOptions, nodes: (u64, u64), mut points: Vec<SizePoint>, work: u64, assumptions: Vec<String>, notes: Vec<String>) -> SizeResult {
    let threshold = o.efficiency.unwrap_or(DEFAULT_EFFICIENCY);
    let min_gpus = points.iter().find(|q| q.best.is_some()).map(|q| q.gpus);
    let rates: Vec<Option<f64>> = points.iter().map(|q| q.tokens_per_s_per_gpu).collect();
    let mut below = None;
    for (q, e) in points.iter_mut().zip(scaling_efficiency(&rates)) {
        q.scaling_efficiency = e;
        if below.is_none() && e.is_some_and(|e| e < threshold) {
            below = Some(q.num_nodes);
        }
        if let (Some(f), Some(min)) = (q.no_fit.as_mut(), min_gpus) {
            if f.code == Code::OutOfMemory && q.gpus < min {
                f.message += &format!("; the model holds from {min} GPUs ({} nodes), the fewest tried that fit", min / base.cluster.gpus_per_node.max(1));
            }
        }
    }
    // Ascending counts: a strict comparison keeps the fewer nodes on a tie.
    let fastest_of = |keep: &dyn Fn(&SizePoint) -> bool| {
        let mut best: Option<(f64, u64)> = None;
        for q in points.iter().filter(|q| keep(q)) {
            if let Some(t) = q.time_to_train_s {
                if best.is_none_or(|(bt, _)| t < bt) {
                    best = Some((t, q.num_nodes));
                }
            }
        }
        best.map(|(_, n)| n)
    };
    let fastest = fastest_of(&|_| true);
    let fastest_within_budget = o.gpu_hours.and_then(|_| fastest_of(&|q| q.within_budget == Some(true)));
    let fewest_nodes_meeting_deadline = points.iter().find(|q| q.meets_deadline == Some(true)).map(|q| q.num_nodes);
    SizeResult {
        model: base.model_name.clone(),
        gpu: base.cluster.gpu.clone(),
        gpus_per_node: base.cluster.gpus_per_node,
        gpu_memory_bytes: base.gpu.memory_bytes(),
        seq_length: base.training.seq_length,
        options: o.clone(),
        node_range: nodes,
        efficiency_threshold: threshold,
        points,
        fewest_nodes_meeting_deadline,
        fastest_within_budget,
        fastest,
        min_gpus,
        efficiency_below_threshold_at: below,
        work,
        assumptions,
        notes,
    }
}

/// Each count's throughput per GPU over the highest of any count up to it (ascending counts; None where no layout
/// runs): how much of the per-GPU rate a smaller cluster reached this one keeps. Against the best so far rather than
/// the smallest count, so that one count with an awkward factor (a PP of 3 for 61 layers) does not set the scale.
pub fn scaling_efficiency(tokens_per_s_per_gpu: &[Option<f64>]) -> Vec<Option<f64>> {
    let mut best = 0.0f64;
    tokens_per_s_per_gpu
        .iter()
        .map(|t| {
            let t = (*t).filter(|t| t.is_finite() && *t > 0.0)?;
            best = best.max(t);
            Some(t / best)
        })
        .collect()
}

/// Every value the sizing chose rather than read from the request, with where it comes from.
fn say_assumptions(out: &mut Vec<String>, base: &Plan, o: &SizeOptions, b: &Bounds, list: &[u64]) {
    let listed: Vec<String> = list.iter().map(u64::to_string).collect();
    out.push(format!("node counts tried: {} (the range's ends, the powers of two and three times the powers of two between them)", listed.join(", ")));
    let seq = base.training.seq_length;
    if o.batch_tokens.is_some() {
        out.push(format!(
            "global batch per count: the largest multiple of the GPU count (else of its half, quarter, …) within {}..{} sequences of {seq} tokens, the accepted range",
            b.batch.0, b.batch.1
        ));
    } else {
        out.push(format!("global batch {} sequences of {seq} tokens at every count: the plan's", b.batch.0));
    }
    out.push("time to train: whole steps, ⌈tokens ÷ (global batch × seq_length)⌉, times the best layout's step time; no checkpointing, evaluation, restarts or failures".into());
    out.push("each count's layout: the layout search's best by throughput per GPU (meshplan search: TP within the NVLink domain, CP ≤ 16, micro-batch 1, 2, 4 or 8, recompute and optimizer offload only where needed to fit)".into());
    if o.efficiency.is_none() {
        out.push(format!("efficiency threshold {DEFAULT_EFFICIENCY}: the default share of the best throughput per GPU of any smaller count"));
    }
}
