//! Explain an out-of-memory: read every failing rank's message in a log (`message`), find the rank's pipeline stage
//! and groups, name the allocation that failed against the stage's own tensors (`culprit`, over `memory::tensors`),
//! give a verdict that cannot contradict the prediction — the plan does not fit (its predicted peak is over the
//! device), fragmentation (the request fits in what PyTorch reserved and did not allocate, and the plan fits), a real
//! overrun the plan does not predict, or a failure outside the allocator — and rank fixes that shrink the named tensor
//! first, each re-planned through the same report function `meshplan plan` uses (`fixes`).

mod culprit;
mod fixes;
pub mod frames;
mod message;

pub use culprit::{Candidate, IMPLIED_TOLERANCE, Implied, MATCH_TOLERANCE, Named};
pub use fixes::{Fix, Target, set_path};
use fixes::{largest_of, stage_tensors};
pub use message::{MAX_MESSAGES, MESSAGE_WINDOW, OomMessage};

use crate::layout::{self, Coordinates, MeshSizes};
use crate::memory::{StageMemory, TensorKind, TermKey};
use crate::plan::InputError;
use crate::report::{Report, plan_value};
use crate::Code;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The most fixes an explanation lists.
pub const MAX_FIXES: usize = 12;

/// The text holds no message meshplan reads.
fn unreadable() -> InputError {
    InputError::new(
        Code::NoOomMessage,
        "no CUDA out-of-memory message found (nor its HIP, XPU or NPU form): expected PyTorch's \"Tried to allocate X GiB. GPU N has a total capacity of …\" or \"Tried to allocate X GiB (GPU N; … total capacity; …)\" (CUDA, HIP, XPU or NPU), or a cuBLAS / NCCL allocation failure, or a CUDA runtime \"CUDA error: out of memory\"; or, with none, Megatron-LM's or Megatron Bridge's memory report (\"memory (MB) | … max allocated: …\")",
        "paste the whole torch.OutOfMemoryError line (its \"Tried to allocate\" sentence and the numbers after it)",
    )
}

/// Reads the first out-of-memory message in `text` (a log may surround it).
pub fn parse_message(text: &str) -> Result<OomMessage, InputError> {
    parse_messages(text)?.into_iter().next().ok_or_else(unreadable)
}

/// Reads every failing rank's message in `text`, in the log's order (at most [`MAX_MESSAGES`]); the text is read up
/// to [`crate::limits::MAX_OOM_LOG_BYTES`].
pub fn parse_messages(text: &str) -> Result<Vec<OomMessage>, InputError> {
    let text = crate::limits::prefix(text, crate::limits::MAX_OOM_LOG_BYTES);
    let found = message::scan(text);
    if found.is_empty() { Err(unreadable()) } else { Ok(found) }
}

/// A device's total capacity as PyTorch reports it, over the catalogue's memory size (GiB): the driver and ECC keep a
/// little back (an H100 80GB reports 79.11–79.15 GiB, an A100 40GB 39.39, a 24 GB A10 22.05).
const CAPACITY_OF_MEMORY: (f64, f64) = (0.90, 1.01);

/// The GPU a log's device is, by the total capacity its first out-of-memory message states, for a plan read from that
/// log (or the launch script beside it) that does not name its GPU: None when the message states no capacity or
/// `assumed` (the GPU the plan would otherwise take) has that memory; else the one catalogue GPU of that memory (or
/// `assumed` when none or several have it), with the note that says which and why. The capacity tells the memory, not
/// the model of GPU: another GPU of that memory is sized the same.
pub fn gpu_of_log(text: &str, assumed: &str) -> Option<(String, String)> {
    let capacity = parse_messages(text).ok()?.iter().find_map(|m| m.capacity_bytes)?;
    let gib = capacity as f64 / (1u64 << 30) as f64;
    let fits = |g: &crate::presets::GpuSpec| g.memory_gb > 0.0 && (CAPACITY_OF_MEMORY.0..=CAPACITY_OF_MEMORY.1).contains(&(gib / g.memory_gb));
    if crate::presets::gpu(assumed).is_some_and(fits) {
        return None;
    }
    let matches: Vec<&str> = crate::presets::gpus().iter().filter(|g| fits(g)).map(|g| g.key.as_str()).collect();
    Some(match matches.as_slice() {
        [one] => (
            one.to_string(),
            format!("cluster: the input does not name the GPU; the message's device has {gib:.2} GiB, the memory of the {one}, taken (by memory alone: another GPU of that memory is sized the same, not timed the same)"),
        ),
        [] => (assumed.to_string(), format!("cluster: the input does not name the GPU, and the message's device ({gib:.2} GiB) has the memory of no GPU in meshplan's catalogue: {assumed} assumed, the verdict on the message's capacity")),
        many => (assumed.to_string(), format!("cluster: the input does not name the GPU; the message's device ({gib:.2} GiB) has the memory of the {}: {assumed} assumed (name the GPU)", many.join(", "))),
    })
}

/// One number of the message beside meshplan's prediction for the failing stage.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Compared {
    pub what: String,
    pub message_bytes: Option<u64>,
    pub predicted_bytes: Option<u64>,
}

/// One memory term of the failing stage's prediction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Term {
    pub label: String,
    pub bytes: u64,
    pub phase: String,
    pub location: String,
}

/// Why it ran out of memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// The request is no larger than what PyTorch reserved and did not allocate plus what is free, and the plan's
    /// predicted peak fits: no free block was large enough.
    Fragmentation,
    /// The plan fits by its prediction, but the run held more: the tensors alive plus the request exceed the device.
    Overrun,
    /// The plan's predicted peak for the failing stage is over the device: the plan does not fit.
    DoesNotFit,
    /// An allocation outside PyTorch's allocator failed (cuBLAS, NCCL): the message carries no sizes.
    OutsideAllocator,
    /// No out-of-memory: the log's memory report (Megatron-LM's or Megatron Bridge's), its peaks beside the prediction.
    MemoryReport,
    /// Other processes hold memory on the failing GPU, at least what the request was short by, and the plan fits: the
    /// GPU is shared (another job, a process left running, other ranks' stray CUDA contexts).
    SharedDevice,
    /// The host ran out of memory (the kernel's OOM killer, a SIGKILL exit, Kubernetes' OOMKilled), not the GPU: the
    /// plan's host memory per node beside the node's.
    HostMemory,
    /// One request larger than the whole device: a tensor of a shape the plan does not have (a batch or sequence the
    /// data gave, an s×s mask), which no layout holds.
    OversizedRequest,
}

/// The explanation of one failing rank.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Explanation {
    pub message: OomMessage,
    pub rank: u64,
    /// Where the rank came from: `given`, `message rank prefix`, `message GPU index (node 0 assumed)`.
    pub rank_source: String,
    pub coordinates: Option<Coordinates>,
    pub pipeline_stage: u64,
    /// The rank's groups: kind and its ranks.
    pub groups: Vec<(String, Vec<u32>)>,
    pub compared: Vec<Compared>,
    pub predicted_terms: Vec<Term>,
    pub cause: Cause,
    pub cause_text: String,
    /// Bytes the request exceeded the free memory by (0 for fragmentation).
    pub shortfall_bytes: u64,
    /// The fixes, ranked: those that bring the peak under the device first, those that shrink the named tensor next,
    /// the cheapest (least added step time) first among equals.
    pub fixes: Vec<Fix>,
    pub notes: Vec<String>,
    /// The allocation that failed, as the plan's tensors name it (and the nearest ones when none matches).
    #[serde(default)]
    pub named: Named,
    /// The phase the failing allocation belongs to (forward, backward, optimizer step, first iteration), when named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// The device capacity the verdict used: the message's, else the plan's GPU.
    #[serde(default)]
    pub capacity_bytes: u64,
    /// The failing stage's predicted device peak the verdict used (re-planned at an implied value, if any).
    #[serde(default)]
    pub predicted_peak_bytes: u64,
    /// With "does not fit": the stage's largest terms, which together are over the budget.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub over_budget: Vec<Term>,
    /// The values the numbers rest on that the plan did not state (meshplan's defaults, preset values), with their source.
    #[serde(default)]
    pub assumptions: Vec<String>,
    /// Plan edits the message's numbers imply (the padded vocabulary a request implies), each appliable.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub corrections: Vec<(String, Value)>,
}

/// Explains the first failing rank's message in `message_text` for the plan `plan` (plan-file JSON) and its report;
/// `rank` overrides the message's.
pub fn explain(plan: &Value, report: &Report, message_text: &str, rank: Option<u64>) -> Result<Explanation, InputError> {
    let message = parse_message(message_text)?;
    Ok(explain_message(plan, report, message, rank))
}

/// Explains every failing rank's message in `message_text` (one explanation each, in the log's order); `rank`
/// overrides the first message's rank. Ranks that share a stage, a verdict and a named tensor share their fixes
/// (re-planned once).
pub fn explain_all(plan: &Value, report: &Report, message_text: &str, rank: Option<u64>) -> Result<Vec<Explanation>, InputError> {
    let messages = parse_messages(message_text)?;
    let mut cache = FixCache::default();
    Ok(messages.into_iter().enumerate().map(|(i, m)| explain_with(plan, report, m, rank.filter(|_| i == 0), &mut cache)).collect())
}

/// Every failing rank of a log explained: the first one as [`explain`] gives it (its fields at the top level, so
/// `meshplan oom --format json` keeps its shape), and the others.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LogExplanation {
    #[serde(flatten)]
    pub first: Explanation,
    /// The other failing ranks' explanations, in the log's order.
    #[serde(default)]
    pub other_ranks: Vec<Explanation>,
}

/// [`explain_all`] as one value: the first rank and the others.
pub fn explain_log(plan: &Value, report: &Report, message_text: &str, rank: Option<u64>) -> Result<LogExplanation, InputError> {
    let mut all = explain_all(plan, report, message_text, rank)?.into_iter();
    let first = all.next().ok_or_else(unreadable)?;
    Ok(LogExplanation { first, other_ranks: all.collect() })
}

/// Fixes already ranked, by what they depend on: the stage, the target, the named tensor and the plan edits the
/// message implied.
#[derive(Default)]
struct FixCache {
    entries: Vec<((u64, u64, Option<(TensorKind, u64)>, Vec<(String, Value)>), Vec<Fix>)>,
}

/// The rank a message is about and where that came from.
fn rank_of(message: &OomMessage, rank: Option<u64>) -> (u64, String) {
    match (rank, message.rank.or(message.summary_rank), message.local_rank, message.gpu_index) {
        (Some(r), ..) => (r, "given".to_string()),
        (None, Some(r), ..) if message.rank.is_none() => {
            (r, "torchrun's failure summary (the process that failed on the message's local rank)".to_string())
        }
        (None, Some(r), ..) => (r, "the message's [rank] prefix".to_string()),
        (None, None, Some(l), _) => (l, "the message's local rank (a [defaultN] prefix, or torchrun's local_rank: N; node 0 assumed; give the failing global rank for another node)".to_string()),
        (None, None, None, Some(g)) => (g, "the message's GPU index (a local device: node 0 assumed; give the failing global rank for another node)".to_string()),
        (None, None, None, None) => (0, "none in the message: rank 0 assumed".to_string()),
    }
}

/// Explains one message.
pub fn explain_message(plan: &Value, report: &Report, message: OomMessage, rank: Option<u64>) -> Explanation {
    explain_with(plan, report, message, rank, &mut FixCache::default())
}

fn explain_with(plan: &Value, report: &Report, message: OomMessage, rank: Option<u64>, cache: &mut FixCache) -> Explanation {
    let mut notes = Vec::new();
    let world = report.derived.world_size.max(1);
    let (rank, rank_source) = rank_of(&message, rank);
    if rank >= world {
        notes.push(format!("rank {rank} is outside the plan's world of {world} GPUs; rank {} (the same local GPU on node 0) is used", rank % world));
    }
    let rank = rank % world;
    let par = &report.plan.parallelism;
    let sizes = MeshSizes { tp: par.tp(), pp: par.pp(), cp: par.cp(), ep: par.ep(), etp: par.etp() };
    let coordinates = layout::coordinates(rank, world, &sizes, &par.order).ok();
    let pipeline_stage = coordinates.map_or(0, |c| c.pp);
    let groups = match (&report.layout, u32::try_from(rank)) {
        (Some(l), Ok(r)) => l.groups_of_rank(r).into_iter().map(|(k, _, ranks)| (k.key().to_string(), ranks.to_vec())).collect(),
        _ => Vec::new(),
    };
    let capacity = message.capacity_bytes.unwrap_or(report.memory.gpu_memory_bytes);
    if message.capacity_bytes.is_some_and(|c| c.abs_diff(report.memory.gpu_memory_bytes) > report.memory.gpu_memory_bytes / 20) {
        notes.push(format!(
            "the message's device has {} and the plan's GPU {}: the verdict uses the message's",
            culprit::shown(capacity),
            culprit::shown(report.memory.gpu_memory_bytes)
        ));
    }
    // The traceback's innermost Megatron frame says which tensors the request can be: named among those, when the stage
    // has any (a size alone can match a tensor of another phase).
    let tensors = stage_tensors(report, pipeline_stage);
    let at = message.location.as_ref().map(frames::kinds).unwrap_or(&[]);
    let located: Vec<_> = tensors.iter().filter(|t| at.contains(&t.kind)).cloned().collect();
    let named = if message.requested_bytes == 0 {
        Named::default()
    } else if located.is_empty() {
        culprit::name(&tensors, message.requested_bytes, &assumed_levers(plan))
    } else {
        let by_place = culprit::name(&located, message.requested_bytes, &assumed_levers(plan));
        let by_size = culprit::name(&tensors, message.requested_bytes, &assumed_levers(plan));
        if let (Some(s), Some(f)) = (by_size.culprit.as_ref(), message.location.as_ref()) {
            if !at.contains(&s.kind) {
                notes.push(format!(
                    "the request is the size of {}, but the traceback places it in {} ({}:{} in {}): named among that code's tensors instead",
                    s.label, f.what, f.file.rsplit("megatron/").next().unwrap_or(&f.file), f.line, f.function
                ));
            }
        }
        by_place
    };
    let planned_tokens = report.plan.training.micro_batch_size.max(1).saturating_mul(report.plan.training.seq_length.max(1));
    notes.extend(logits_tokens_note(&tensors, &named, at, (message.requested_bytes, planned_tokens)));
    // The message's numbers bound the unknowns: re-plan at the value the request implies.
    // (Not for a request larger than the device that no tensor of the plan is: no plan value makes it fit.) A request
    // the plan names (the logits at a large micro-batch) is the plan's own, with its verdict and fixes; the device's
    // size must be the message's, not an assumed GPU's.
    let oversized = message.requested_bytes > capacity && message.capacity_bytes.is_some() && named.culprit.is_none();
    let corrections = named.implied.as_ref().filter(|_| !oversized).and_then(|i| correction(i)).into_iter().collect::<Vec<_>>();
    let replanned = if corrections.is_empty() { None } else { replan(plan, &corrections) };
    let (basis_plan, basis) = match &replanned {
        Some((v, r)) => (v, r),
        None => (plan, report),
    };
    let stage = basis.memory.stages.iter().find(|s| s.pipeline_rank == pipeline_stage).or(basis.memory.stages.first());
    let predicted_peak = stage.map_or(0, |s| s.total_bytes);
    if replanned.is_some() {
        notes.push(format!("predictions below are re-planned at the value the message implies ({}); Apply the correction to keep it", corrections.iter().map(|(k, v)| format!("{k} = {v}")).collect::<Vec<_>>().join(", ")));
    }
    // A failure in the set-up (the traceback says so, in its innermost frame or an outer one): what PyTorch had
    // allocated is the state built so far.
    let in_frames = || message.location.iter().chain(&message.context);
    let setup_frame = in_frames().find(|f| frames::is_setup(f));
    let setup = setup_frame.and_then(|f| setup_note(&message, stage, f));
    notes.extend(setup.clone());
    // A checkpoint's load or save: transient copies the training step's prediction does not hold.
    let checkpoint = in_frames().find_map(|f| frames::checkpoint(f).map(|c| (c, f)));
    notes.extend(checkpoint.map(|(c, f)| checkpoint_note(c, f, predicted_peak, capacity)));
    // A request named as the master weights is the set-up's (they are created before the first iteration).
    let in_setup = setup_frame.is_some() || checkpoint.is_some() || named.culprit.as_ref().is_some_and(|c| c.kind == TensorKind::MasterWeights);
    let first_step = if in_setup { None } else { first_step_note(&message, stage, report) };
    notes.extend(first_step.as_ref().map(|(n, _)| n.clone()));
    let compared = compare(&message, stage, capacity);
    let predicted_terms = stage.map(terms_of).unwrap_or_default();
    let predicted_allocated = stage.map_or(0, |s| s.allocated_bytes);
    let (cause, cause_text, shortfall) = if message.form == "host" {
        host_verdict(&message, &basis.memory, basis.derived.total_parameters)
    } else if oversized {
        oversized_verdict(&message, &named, predicted_peak, capacity)
    } else {
        verdict(&message, &named, (predicted_peak, predicted_allocated), capacity)
    };
    let over_budget = if cause == Cause::DoesNotFit { over_budget(stage, predicted_peak.saturating_sub(capacity)) } else { Vec::new() };
    // An overrun the plan does not predict: a fix must free at least what the run could not get (the shortfall, and at
    // least the request itself when free and cached memory add up to it but hold it in no block).
    let target = match cause {
        Cause::Overrun => capacity.min(basis.memory.peak_bytes.saturating_sub(shortfall.max(message.requested_bytes))),
        // Beside the other processes, a fix fits in what they leave.
        Cause::SharedDevice => capacity.saturating_sub(message.other_process_bytes.iter().sum()),
        _ => capacity,
    };
    let culprit = named.culprit.as_ref().map(|c| (c.kind, largest_of(basis, pipeline_stage, c.kind)));
    let mut fixes = Vec::new();
    if cause == Cause::Fragmentation {
        fixes.push(allocator_fix(basis));
    }
    let key = (pipeline_stage, target, culprit, corrections.clone());
    let outside_step = outside_step(cause, checkpoint.is_some(), (predicted_peak, capacity), &mut notes)
        || larger_than_the_step(cause, message.requested_bytes, predicted_peak, &mut notes);
    match cache.entries.iter().find(|(k, _)| *k == key) {
        // A run that did not run out needs no fix: a memory report is compared, not repaired. A request larger than the
        // device is a shape no layout holds.
        _ if matches!(cause, Cause::MemoryReport | Cause::HostMemory | Cause::OversizedRequest) || outside_step => {}
        Some((_, f)) => fixes.extend(f.iter().cloned()),
        None => {
            let ranked = fixes::ranked(basis_plan, basis, Target { peak_bytes: target, culprit, stage: pipeline_stage }, MAX_FIXES);
            fixes.extend(ranked.iter().cloned());
            cache.entries.push((key, ranked));
        }
    }
    if !matches!(cause, Cause::MemoryReport | Cause::OversizedRequest) && !outside_step && !fixes.iter().any(|f| f.fits) {
        notes.push("no single nearby change meshplan tried brings the peak under the device: a search over every layout may find one".into());
    }
    let phase = phase_of(checkpoint.map(|c| c.0), setup_frame.is_some(), first_step.as_ref().map(|f| f.1), &named);
    Explanation {
        assumptions: assumptions(plan, report),
        message,
        rank,
        rank_source,
        coordinates,
        pipeline_stage,
        groups,
        compared,
        predicted_terms,
        cause,
        cause_text,
        shortfall_bytes: shortfall,
        fixes,
        notes,
        named,
        phase,
        capacity_bytes: capacity,
        predicted_peak_bytes: predicted_peak,
        over_budget,
        corrections,
    }
}

/// The phase: a checkpoint's load or save, the set-up, the first iteration (the traceback or the numbers say so), else
/// the named tensor's.
fn phase_of(checkpoint: Option<frames::Checkpoint>, setup: bool, first_step: Option<&str>, named: &Named) -> Option<String> {
    Some(match (checkpoint, setup, first_step) {
        (Some(frames::Checkpoint::Load), true, _) => format!("{CHECKPOINT_LOAD_PHASE} ({SETUP_PHASE})"),
        (Some(frames::Checkpoint::Load), false, _) => CHECKPOINT_LOAD_PHASE.to_string(),
        (Some(frames::Checkpoint::Save), ..) => CHECKPOINT_SAVE_PHASE.to_string(),
        (None, true, _) => SETUP_PHASE.to_string(),
        (None, false, Some(p)) => p.to_string(),
        (None, false, None) => return named.culprit.as_ref().map(|c| c.phase.clone()),
    })
}

/// Whether the failure is outside the step meshplan sizes while the plan fits — a checkpoint's load or save, an
/// allocation outside PyTorch's allocator — so that no layout change is ranked: against the device every change would
/// "fit" and the list would be sorted by speed alone. Says so in a note (not for fragmentation, whose fix is the
/// allocator's).
fn outside_step(cause: Cause, checkpoint: bool, (predicted_peak, capacity): (u64, u64), notes: &mut Vec<String>) -> bool {
    let outside = cause != Cause::DoesNotFit && (checkpoint || cause == Cause::OutsideAllocator);
    if outside && cause != Cause::Fragmentation {
        notes.push(format!(
            "no layout change is ranked: the plan fits (meshplan predicts {} of {} for the training step), and what failed allocated beside the step's own state — a checkpoint's transient copies, or a library's allocation outside PyTorch's cached blocks — so a smaller layout only leaves it more room; the cause says what to look at",
            culprit::shown(predicted_peak),
            culprit::shown(capacity)
        ));
    }
    outside
}

/// One request larger than the plan's whole predicted step, in an overrun: a tensor of a shape the plan does not have
/// (a longer sequence, a larger or packed micro-batch than planned — slime #1951's 58.15 GiB log-prob logits of a
/// 205,280-token micro-batch beside a 27.47 GiB prediction), so no layout change is ranked against it: each would be
/// "still over" a target the plan cannot reach. Said in a note; true when it applies.
fn larger_than_the_step(cause: Cause, requested: u64, predicted_peak: u64, notes: &mut Vec<String>) -> bool {
    let larger = cause == Cause::Overrun && predicted_peak > 0 && requested > predicted_peak;
    if larger {
        notes.push(format!(
            "no layout change is ranked: the {} request is larger than the plan's whole predicted step ({}), so it is a tensor of a shape the plan does not have — a longer sequence or a larger (or packed) micro-batch than planned; give the plan the run's sequence length and micro-batch (or tokens per micro-batch) and explain again",
            culprit::shown(requested),
            culprit::shown(predicted_peak)
        ));
    }
    larger
}

/// A request larger than the stage's fp32 logits that names no tensor, where the code could be the logits' (no known
/// frame, or one whose tensors include them): the tokens one micro-batch would have held were it their fp32 copy,
/// b·s = request / (V/TP × 4 B) — a bound, not a match (a token is a few hundred kilobytes, under the message's
/// rounding). RL frameworks pack micro-batches by tokens (slime's --max-tokens-per-gpu, verl's dynamic batch) and take
/// log-probs from the whole logits: slime #1951's 58.15 GiB is 205,280 tokens at V/TP 76,032, about 20× its budget.
fn logits_tokens_note(tensors: &[crate::memory::Tensor], named: &Named, at: &[TensorKind], (requested, planned): (u64, u64)) -> Option<String> {
    if named.culprit.is_some() || !(at.is_empty() || at.contains(&TensorKind::LogitsFp32)) {
        return None;
    }
    let logits = tensors.iter().find(|t| t.kind == TensorKind::LogitsFp32)?;
    let per = logits.bytes as f64 / planned.max(1) as f64;
    if requested <= logits.bytes || per < 1.0 {
        return None;
    }
    let tokens = (requested as f64 / per).round() as u64;
    Some(format!(
        "if the request is the fp32 logits (b·s·V/TP × 4 B, {} a token here), one micro-batch held about {} tokens where the plan has {} (micro-batch × sequence): a longer or packed micro-batch than planned — a wrapper's token budget (slime's --max-tokens-per-gpu, verl's ppo_max_token_len_per_gpu) or an over-long sample; a bound from the size, not a match",
        culprit::shown(per as u64),
        culprit::thousands(tokens),
        culprit::thousands(planned)
    ))
}

/// The phase of a failure the traceback places in the set-up.
pub const SETUP_PHASE: &str = "set-up, before the first step";
/// The phases of a failure the traceback places in a checkpoint's load or save.
pub const CHECKPOINT_LOAD_PHASE: &str = "loading a checkpoint";
pub const CHECKPOINT_SAVE_PHASE: &str = "saving a checkpoint";

/// A failure in a checkpoint's load or save: what the load or save holds besides the step's state, and the step's
/// prediction beside the device.
// Source: megatron/training/checkpointing.py load_checkpoint (the state read from the file, then the model's and the
// optimizer's load_state_dict copy it in) and save_checkpoint (generate_state_dict, the distributed optimizer's
// sharded state built for the writer) @ NVIDIA/Megatron-LM d98e8a64dd.
fn checkpoint_note(c: frames::Checkpoint, f: &frames::Frame, predicted_peak: u64, capacity: u64) -> String {
    let place = format!("{}:{} in {}", f.file.rsplit("megatron/").next().unwrap_or(&f.file), f.line, f.function);
    let gib = culprit::shown;
    let (what, helps) = match c {
        frames::Checkpoint::Load => (
            "a load holds what it read from the file beside the model's and optimizer's own tensors until they are copied in, and creates the Adam moments the first step would",
            "loading once without the optimizer state (--no-load-optim) tells whether its copy is what did not fit",
        ),
        frames::Checkpoint::Save => (
            "a save builds the state it writes (the model's and optimizer's tensors gathered or re-laid out for the file, staged for the writer) beside the step's own",
            "an asynchronous save (--async-save) stages the tensors in host memory, and a save format that writes each rank's own shards (torch_dist) gathers less than one that gathers the optimizer state on a rank",
        ),
    };
    format!(
        "the traceback places the failure in {} ({place}): {what}, which meshplan's prediction of the training step ({} of {}) does not hold; what helps is the checkpoint's, not the layout's: {helps}",
        if c == frames::Checkpoint::Load { CHECKPOINT_LOAD_PHASE } else { CHECKPOINT_SAVE_PHASE },
        gib(predicted_peak),
        gib(capacity)
    )
}

/// The set-up's allocations in the order Megatron makes them: the weights on the GPU (get_model), the DDP main-gradient
/// buffer (the DistributedDataParallel wrapper), the optimizer's fp32 main weights (get_megatron_optimizer), and the
/// Adam moments (loaded with a checkpoint, else at the first step).
// Source: megatron/training/training.py get_model (l.2465 `model_module.cuda`, then the DDP wrapper) and
// setup_model_and_optimizer (l.2800 get_megatron_optimizer) @ NVIDIA/Megatron-LM d98e8a64dd.
const SETUP_ORDER: [(&[TermKey], &str); 4] = [
    (&[TermKey::Weights, TermKey::VisionEncoderWeights], "the weights"),
    (&[TermKey::Gradients], "the main-gradient buffer"),
    (&[TermKey::MasterWeights], "the fp32 master weights"),
    (&[TermKey::OptimizerMoments], "the Adam moments"),
];

/// A set-up failure read against [`SETUP_ORDER`]: the allocations the message's allocated figure covers (within
/// [`ALLOCATED_BAND`]) and the one that did not fit. None without the figures.
fn setup_note(m: &OomMessage, stage: Option<&StageMemory>, f: &frames::Frame) -> Option<String> {
    let (allocated, s) = (m.allocated_bytes?, stage?);
    let gib = culprit::shown;
    let mut steps: Vec<(&str, u64)> = Vec::new();
    for (keys, name) in SETUP_ORDER {
        let bytes: u64 = s.terms.iter().filter(|t| keys.contains(&t.key) && t.allocated).map(|t| t.bytes).sum();
        if bytes > 0 {
            steps.push((name, bytes));
        }
    }
    let (mut done, mut cum) = (0, 0u64);
    for (_, b) in &steps {
        if (cum + b) as f64 > allocated as f64 * (1.0 + ALLOCATED_BAND) {
            break;
        }
        cum += b;
        done += 1;
    }
    let place = format!("{}:{} in {}, {}", f.file.rsplit("megatron/").next().unwrap_or(&f.file), f.line, f.function, f.what);
    // "a", "a and b", "a, b and c".
    let names = |k: usize| match steps[..k].split_last() {
        Some((last, [])) => last.0.to_string(),
        Some((last, rest)) => format!("{} and {}", rest.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", "), last.0),
        None => String::new(),
    };
    // (With nothing covered, the covered text already names the weights as what did not fit.)
    let next = if done == 0 {
        String::new()
    } else {
        steps.get(done).map(|(n, b)| format!("; the next to allocate, {n} ({}), did not fit", gib(*b))).unwrap_or_else(|| {
        "; that is all the set-up builds, so the failing allocation is outside meshplan's terms (a checkpoint's buffers, a framework's own)".into()
    })
    };
    let covered = if done == 0 {
        format!("less than the weights alone ({}): it failed while the model was being placed", gib(steps.first().map_or(0, |s| s.1)))
    } else {
        format!("{} (predicted {}, {:+.1}%)", names(done), gib(cum), (allocated as f64 / cum.max(1) as f64 - 1.0) * 100.0)
    };
    Some(format!("the traceback places the failure at {place}: PyTorch's {} allocated is {covered}{next}", gib(allocated)))
}

/// The phase of a failure before the first optimizer step has created the Adam moments.
pub const FIRST_ITERATION_PHASE: &str = "first iteration, before the first optimizer step";
/// The phase of a failure in the first optimizer step, creating the Adam moments.
pub const FIRST_STEP_PHASE: &str = "first optimizer step, creating the Adam moments";

/// A failure in the training step whose allocated figure is short of what the plan holds from the first optimizer step
/// on, by about the Adam moments: Megatron creates them at the first step (PyTorch's and Transformer Engine's Adam
/// fill `optimizer.state` in their first `step()`; Megatron's init_state_fn runs only to load a checkpoint), so before
/// it the run holds the weights, gradient buffers and fp32 master weights alone. Read only where the figures tell the two
/// apart — from the first step on a failing forward or backward holds at least the persistent state (less
/// [`ALLOCATED_BAND`]); before it, that state less the moments, plus at most one iteration's activations (within the
/// band) — and not after a logged iteration (the moments then exist). The note, and the phase: in the optimizer (the
/// first step creating them) or before it.
// Source: megatron/core/optimizer/__init__.py l.592 init_state_fn and optimizer.py l.1129/l.1146 (called only
// `if is_loading`) @ NVIDIA/Megatron-LM d98e8a64dd; torch/optim/adam.py `_init_group` (state created when empty, in
// step); transformer_engine/pytorch/optimizers/fused_adam.py step (initialize_state when the state is empty).
fn first_step_note(m: &OomMessage, stage: Option<&StageMemory>, report: &Report) -> Option<(String, &'static str)> {
    let (allocated, s) = (m.allocated_bytes?, stage?);
    if m.iterations_logged.is_some_and(|n| n > 0) || m.form == "memory-report" {
        return None;
    }
    let on_device = |t: &&crate::memory::MemoryTerm| t.allocated && t.location == crate::memory::Location::Device;
    let persistent: u64 = s.terms.iter().filter(on_device).filter(|t| t.phase == crate::memory::Phase::Persistent).map(|t| t.bytes).sum();
    let moments: u64 = s.terms.iter().filter(on_device).filter(|t| t.key == TermKey::OptimizerMoments).map(|t| t.bytes).sum();
    let transient: u64 = s.terms.iter().filter(on_device).filter(|t| t.phase == crate::memory::Phase::ForwardBackward).map(|t| t.bytes).sum();
    let without = persistent.saturating_sub(moments);
    let a = allocated as f64;
    // From the first step on, a failing forward or backward holds at least the persistent state; before it, the state
    // without the moments and up to one iteration's activations.
    let with_moments = a >= persistent as f64 * (1.0 - ALLOCATED_BAND);
    let before_step = a >= without as f64 * (1.0 - ALLOCATED_BAND) && a <= (without + transient) as f64 * (1.0 + ALLOCATED_BAND);
    // Moments smaller than the memory model's own band on the state cannot be told from its error (the distributed
    // optimizer at DP 8 keeps 1 B a parameter of 7.5).
    let tellable = moments as f64 >= persistent as f64 * ALLOCATED_BAND;
    if !tellable || with_moments || !before_step {
        return None;
    }
    let gib = culprit::shown;
    let in_optimizer = m.location.as_ref().is_some_and(|f| frames::kinds(f).contains(&TensorKind::OptimizerState));
    let held = format!(
        "PyTorch's {} allocated is less than the plan holds from the first optimizer step on ({} of weights, gradient buffers and optimizer state) and is what it holds without the Adam moments ({}), plus at most one iteration's activations ({})",
        gib(allocated),
        gib(persistent),
        gib(without),
        gib(transient)
    );
    let why = "Adam creates its moments in its first step (unless a checkpoint's optimizer state was loaded)";
    // The same shortfall is a run that shards its optimizer state where the report assumed it does not.
    let unsharded = report.assumptions.iter().find(|a| a.key == "use_distributed_optimizer" && a.value == Value::Bool(false));
    let why = if let Some(a) = unsharded.filter(|_| report.derived.data_parallel_size > 1 && !report.plan.training.settings.use_megatron_fsdp) {
        format!("{why}. Or the run shards its optimizer state over data parallelism, which the plan does not say (use_distributed_optimizer = false assumed: {}): state what the run uses", a.source)
    } else {
        // The log printed no iteration here; were the run past its first step, it would hold less state than predicted.
        format!("{why}; had the run taken a step already, it holds less state than the plan predicts (see what the numbers assume)")
    };
    Some(if in_optimizer {
        (format!("{held}: the failure is the first optimizer step creating the moments ({} predicted): {why}", gib(moments)), FIRST_STEP_PHASE)
    } else {
        (
            format!("{held}: the run failed in its first iteration, before the first optimizer step, which needs the moments' {} more: {why}", gib(moments)),
            FIRST_ITERATION_PHASE,
        )
    })
}

/// A host out-of-memory: what the plan keeps on each node's host beside its memory, and what meshplan does not size.
fn host_verdict(m: &OomMessage, memory: &crate::memory::MemoryReport, parameters: u64) -> (Cause, String, u64) {
    let gib = culprit::shown;
    let what = m.note.clone().unwrap_or_else(|| "the host ran out of memory".into());
    let host = if memory.host_bytes_per_node == 0 { "nothing".to_string() } else { gib(memory.host_bytes_per_node) };
    let planned = match (memory.host_memory_per_node_bytes, memory.host_fits) {
        (Some(cap), Some(false)) => format!("meshplan predicts {host} of host memory per node for what the plan keeps there (offloaded optimizer state or activations), over the node's {}: the plan itself does not fit the host", gib(cap)),
        (Some(cap), _) => format!("meshplan predicts {host} of host memory per node for what the plan keeps there (offloaded optimizer state or activations) of the node's {}", gib(cap)),
        (None, _) => format!("meshplan predicts {host} of host memory per node for what the plan keeps there (the node's memory is not known)"),
    };
    // A checkpoint's size: 2 B a parameter for bf16 weights, 12 more for fp32 master weights and Adam's two moments.
    let checkpoint = format!("{} of bf16 weights, {} with the fp32 optimizer state", gib(parameters.saturating_mul(2)), gib(parameters.saturating_mul(14)));
    let text = format!(
        "{what}. The GPUs' memory is not what ran out: {planned}. What meshplan does not size on the host: a checkpoint loaded into CPU memory by every rank of the node at once (this model is {checkpoint}), data-loader workers and their prefetch, pinned staging buffers, and other jobs on the node"
    );
    (Cause::HostMemory, text, 0)
}

/// The plan edit an implied value stands for.
fn correction(i: &Implied) -> Option<(String, Value)> {
    match i.name.as_str() {
        // A multiple of make_vocab_size_divisible_by · TP pads to itself (model.rs padded_vocab_size).
        "padded_vocab_size" => Some(("model.vocab_size".into(), json!(i.implied_value))),
        "micro_batch_size" => Some(("training.micro_batch_size".into(), json!(i.implied_value))),
        _ => None,
    }
}

/// `plan` with `edits`, re-planned (None when it no longer plans).
fn replan(plan: &Value, edits: &[(String, Value)]) -> Option<(Value, Report)> {
    let mut v = plan.clone();
    for (path, value) in edits {
        set_path(&mut v, path, value.clone());
    }
    let r = plan_value(&v).ok()?;
    Some((v, r))
}

fn terms_of(s: &StageMemory) -> Vec<Term> {
    s.terms
        .iter()
        .map(|t| Term { label: t.label.to_string(), bytes: t.bytes, phase: t.phase.label().into(), location: format!("{:?}", t.location).to_ascii_lowercase() })
        .collect()
}

/// The stage's device terms, largest first, until they cover `excess` (at least one).
fn over_budget(stage: Option<&StageMemory>, excess: u64) -> Vec<Term> {
    let Some(s) = stage else { return Vec::new() };
    let mut t: Vec<Term> = terms_of(s).into_iter().filter(|t| t.location == "device").collect();
    crate::sort::stable_by(&mut t, |a, b| b.bytes.cmp(&a.bytes));
    let mut sum = 0u64;
    let n = t.iter().take_while(|x| {
        let before = sum;
        sum = sum.saturating_add(x.bytes);
        before < excess
    });
    let n = n.count().max(1);
    t.truncate(n.min(4));
    t
}

fn allocator_fix(report: &Report) -> Fix {
    Fix {
        change: "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (the allocator grows segments instead of caching fixed blocks)".into(),
        edits: Vec::new(),
        peak_bytes: report.memory.peak_bytes,
        step_time_s: report.performance.as_ref().map(|p| p.step_time_s),
        step_time_delta_s: Some(0.0),
        caveat: None,
        fits: true,
        shrinks_culprit: false,
    }
}

fn compare(m: &OomMessage, stage: Option<&StageMemory>, capacity: u64) -> Vec<Compared> {
    let row = |what: &str, message_bytes: Option<u64>, predicted_bytes: Option<u64>| Compared { what: what.into(), message_bytes, predicted_bytes };
    vec![
        row("allocated by PyTorch (max allocated)", m.allocated_bytes, stage.map(|s| s.allocated_bytes)),
        row("reserved by PyTorch", m.reserved_bytes, stage.map(|s| s.reserved_bytes)),
        row("allocated + the request that failed", m.allocated_bytes.map(|a| a.saturating_add(m.requested_bytes)), stage.map(|s| s.allocated_bytes)),
        row("device memory in use (process)", m.process_bytes, stage.map(|s| s.total_bytes)),
        row("device capacity", m.capacity_bytes, Some(capacity)),
    ]
}

/// How much more than the predicted allocated peak a message may show and still be the plan's run: the memory model's
/// validation band (docs/memory-validation.md). 15%.
pub const ALLOCATED_BAND: f64 = 0.15;

/// The verdict, in this order so that none contradicts the prediction: outside the allocator (no sizes); the plan does
/// not fit (predicted peak over the device); fragmentation (the request fits in reserved-unallocated plus free memory,
/// PyTorch's own hint "If reserved but unallocated memory is large try setting
/// PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", the plan fits, and the message's allocated figure is within
/// [`ALLOCATED_BAND`] of the prediction); else a real overrun the plan does not predict.
fn verdict(m: &OomMessage, named: &Named, (predicted_peak, predicted_allocated): (u64, u64), capacity: u64) -> (Cause, String, u64) {
    let gib = |b: u64| culprit::shown(b);
    let what = named.culprit.as_ref().map(|c| format!("; the request is {} ({})", c.label, c.phase)).unwrap_or_default();
    if m.form == "memory-report" {
        let measured = m.allocated_bytes.unwrap_or(0);
        let off = measured as f64 / predicted_allocated.max(1) as f64 - 1.0;
        let band = if off.abs() <= ALLOCATED_BAND {
            format!("within the memory model's {:.0}% band", ALLOCATED_BAND * 100.0)
        } else if off > 0.0 {
            "more than the plan by over the memory model's band: the run holds what the plan does not (its assumptions below, a larger batch or sequence)".into()
        } else {
            "less than the plan by over the memory model's band: the run holds less than planned (recompute, offload or a smaller batch the plan does not state)".into()
        };
        let reserved = m.reserved_bytes.map_or(String::new(), |r| format!("; max reserved {} on a {} device", gib(r), gib(capacity)));
        let text = format!(
            "no out-of-memory: the run's max allocated {} against meshplan's predicted {} ({:+.1}%), {band}{reserved}; meshplan predicts a device peak of {} with what lives outside the allocator",
            gib(measured),
            gib(predicted_allocated),
            off * 100.0,
            gib(predicted_peak)
        );
        return (Cause::MemoryReport, text, 0);
    }
    if m.requested_bytes == 0 {
        let text = m.note.clone().unwrap_or_else(|| "an allocation outside PyTorch's allocator failed".into());
        // A plan that does not fit runs out wherever the next allocation happens to be: the plan is the cause.
        if predicted_peak > capacity {
            let short = predicted_peak - capacity;
            return (
                Cause::DoesNotFit,
                format!("{text}. The plan does not fit: meshplan predicts {} for the stage on a {} device ({} over), so some allocation fails; this one is only where it did", gib(predicted_peak), gib(capacity), gib(short)),
                short,
            );
        }
        return (Cause::OutsideAllocator, format!("{text}. meshplan predicts {} for the stage on a {} device", gib(predicted_peak), gib(capacity)), 0);
    }
    let unallocated = m.reserved_unallocated_bytes.unwrap_or(0);
    let free = m.free_bytes.unwrap_or(0);
    let shortfall = m.requested_bytes.saturating_sub(free).saturating_sub(unallocated);
    let others: u64 = m.other_process_bytes.iter().sum();
    let others_text = |m: &OomMessage| {
        let each: Vec<String> = m.other_process_bytes.iter().take(4).map(|&b| gib(b)).collect();
        let more = if m.other_process_bytes.len() > 4 { format!(" and {} more", m.other_process_bytes.len() - 4) } else { String::new() };
        let n = m.other_process_bytes.len();
        let who = if n == 1 { "1 other process holds".to_string() } else { format!("{n} other processes hold") };
        format!("{who} {} on this GPU ({}{more})", gib(others), each.join(", "))
    };
    if predicted_peak > capacity {
        let shared = if others > 0 { format!("; besides, {}", others_text(m)) } else { String::new() };
        let text = format!(
            "the plan does not fit: meshplan predicts {} for the stage, {} over the {} device{what}{shared}",
            gib(predicted_peak),
            gib(predicted_peak - capacity),
            gib(capacity)
        );
        return (Cause::DoesNotFit, text, shortfall);
    }
    let held_more = m.allocated_bytes.filter(|&a| a as f64 > predicted_allocated as f64 * (1.0 + ALLOCATED_BAND));
    // The request was short by what other processes hold, and the run holds what the plan predicts: the plan fits a
    // GPU of its own. (A run that holds more than the plan is its own overrun, the others said beside it.)
    if shortfall > 0 && others >= shortfall && held_more.is_none() {
        // A CUDA context with its library workspaces is about 0.3–1 GiB; several that size are other ranks' contexts.
        let contexts = m.other_process_bytes.len() >= 2 && m.other_process_bytes.iter().all(|&b| b <= 3 << 29);
        let why = if contexts {
            "each about one CUDA context: other ranks created a context on this GPU — each must select its own device (torch.cuda.set_device(LOCAL_RANK)) before any CUDA call"
        } else {
            "another job, a process left from an earlier run (nvidia-smi lists it), or two ranks on one GPU (more processes per node than GPUs, or CUDA_VISIBLE_DEVICES)"
        };
        let text = format!(
            "the GPU is shared: {}, and the {} request was {} short; without them it fits, and meshplan predicts {} of {} for the stage: {why}{what}",
            others_text(m),
            gib(m.requested_bytes),
            gib(shortfall),
            gib(predicted_peak),
            gib(capacity)
        );
        return (Cause::SharedDevice, text, shortfall);
    }
    if unallocated.saturating_add(free) >= m.requested_bytes && held_more.is_none() {
        let text = format!(
            "fragmentation: the {} request fits in the {} PyTorch reserved but did not allocate plus the {} free, but in no one block, and the plan fits ({} predicted of {}). Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True{what}",
            gib(m.requested_bytes),
            gib(unallocated),
            gib(free),
            gib(predicted_peak),
            gib(capacity)
        );
        return (Cause::Fragmentation, text, 0);
    }
    // Free and cached memory together held the request, in no one block (the run held more than the plan besides).
    let short = if shortfall == 0 { "enough together, but in no one block".to_string() } else { format!("{} short", gib(shortfall)) };
    let held = held_more.map(|a| format!(", and PyTorch had allocated {} where the plan predicts at most {}", gib(a), gib(predicted_allocated))).unwrap_or_default();
    let shared = if others > 0 { format!("; besides, {}", others_text(m)) } else { String::new() };
    let text = format!(
        "a real overrun the plan does not predict: {} requested with {} free and {} reserved-unallocated ({short}){held}; meshplan predicts {} of {} for the stage, so the run holds more than the plan (a larger batch, vocabulary or sequence than planned, or what the assumptions below leave out){what}{shared}",
        gib(m.requested_bytes),
        gib(free),
        gib(unallocated),
        gib(predicted_peak),
        gib(capacity)
    );
    (Cause::Overrun, text, shortfall)
}

/// One request larger than the device: no layout holds it, so it is a shape the plan does not have. What the
/// request would be as the plan's tensors scaled (the culprit's implied value), and as an s×s tensor (an attention mask
/// or scores, b·s² elements: what s it implies at one byte and at four).
// Source: megatron/core/datasets/gpt_dataset.py _get_ltor_masks_and_position_ids builds a [1, s, s] attention mask
// when create_attention_mask_in_dataloader is set (its default) @ NVIDIA/Megatron-LM d98e8a64dd.
fn oversized_verdict(m: &OomMessage, named: &Named, predicted_peak: u64, capacity: u64) -> (Cause, String, u64) {
    let gib = culprit::shown;
    let implied = named.implied.as_ref().map(|i| format!("; {}", i.text)).unwrap_or_default();
    let side = |bytes_per: f64| ((m.requested_bytes as f64 / bytes_per).sqrt()).round() as u64;
    let text = format!(
        "one request of {} is larger than the whole {} device: no layout holds a single tensor that size, so it is a shape the plan does not have — a batch or sequence from the data other than the planned one, or a tensor quadratic in the sequence (as one s×s mask or score matrix it is s = {} at 1 byte an element, {} at 4){implied}; meshplan predicts {} for the stage's planned step. Check the sequence length and micro-batch the data loader gives, and whether an attention mask is built (create_attention_mask_in_dataloader)",
        gib(m.requested_bytes),
        gib(capacity),
        culprit::thousands(side(1.0)),
        culprit::thousands(side(4.0)),
        gib(predicted_peak)
    );
    (Cause::OversizedRequest, text, m.requested_bytes.saturating_sub(m.free_bytes.unwrap_or(0)))
}

/// The plan values a request may bound that the plan file does not state (a custom model without its vocabulary, a
/// training section without its micro-batch).
fn assumed_levers(plan: &Value) -> Vec<&'static str> {
    let model = plan.get("model");
    let custom = model.is_some_and(|m| m.is_object() && m.get("preset").is_none() && m.get("hf_config").is_none());
    let mut out = Vec::new();
    if custom && model.and_then(|m| m.get("vocab_size")).is_none() {
        out.push("padded_vocab_size");
    }
    if plan.get("training").and_then(|t| t.get("micro_batch_size")).is_none() {
        out.push("micro_batch_size");
    }
    out
}

/// The values the explanation's numbers rest on that the plan file does not state, with where they came from.
pub fn assumptions(plan: &Value, report: &Report) -> Vec<String> {
    let p = &report.plan;
    let m = &p.model;
    let model = plan.get("model");
    let custom = model.is_some_and(Value::is_object) && model.and_then(|v| v.get("preset")).is_none() && model.and_then(|v| v.get("hf_config")).is_none();
    let given = |section: &str, key: &str| plan.get(section).and_then(|s| s.get(key)).is_some();
    let source = if custom { "meshplan's default: not in the plan".to_string() } else { format!("the {} preset or config", p.model_key) };
    let mut out = Vec::new();
    if !given("model", "vocab_size") {
        out.push(format!("vocabulary {} (padded {}): {source}", culprit::thousands(m.vocab_size), culprit::thousands(report.derived.padded_vocab_size)));
    }
    if !given("model", "ffn_hidden_size") {
        out.push(format!("FFN width {}: {source}", culprit::thousands(m.ffn_hidden_size)));
    }
    let s = &p.training.settings;
    if !given("training", "transformer_impl") && !given("training", "attention_backend") {
        out.push(format!(
            "attention: transformer_impl {}, attention_backend {} (fused or flash: no s² scores saved): Megatron-Core's defaults, not in the plan",
            s.transformer_impl.key(),
            s.attention_backend.key()
        ));
    }
    if !given("training", "precision") {
        out.push(format!("precision {} (the loss's fp32 copy of the logits counted either way): meshplan's default, not in the plan", s.precision.key()));
    }
    if !given("training", "peft") {
        out.push("full training (no LoRA: every parameter has gradients and optimizer state): not in the plan".into());
    } else if s.peft != crate::settings::Peft::None && !given("training", "lora_dim") {
        out.push(format!("LoRA rank {}: Megatron Bridge's LoRA.dim default, not in the plan", s.lora_dim));
    }
    // The settings the report itself assumed (a performance recipe's value or Megatron-Core's default, crate::tuned).
    out.extend(report.assumptions.iter().map(|a| format!("{} = {}: {}", a.key, a.value, a.source)));
    out
}

/// Fixes for a plan whose predicted peak is over its GPU, without a message: the same ranked fixes "Explain an OOM"
/// gives for "the plan does not fit" at the peak stage, its largest single tensor named — the one list the page's
/// out-of-memory diagnostic and the explanation share.
pub fn memory_fixes(plan: &Value, report: &Report) -> Vec<Fix> {
    let Some(stage) = report.memory.stages.iter().max_by_key(|s| s.total_bytes) else { return Vec::new() };
    let culprit = stage_tensors(report, stage.pipeline_rank).into_iter().max_by_key(|t| t.bytes).map(|t| (t.kind, t.bytes));
    let target = Target { peak_bytes: report.memory.gpu_memory_bytes, culprit, stage: stage.pipeline_rank };
    fixes::ranked(plan, report, target, MAX_FIXES)
}
