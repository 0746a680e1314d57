//! Explain a CUDA out-of-memory: read PyTorch's message, find the failing rank's pipeline stage and groups, set
//! meshplan's prediction for that stage term by term next to the message's numbers, tell fragmentation (the request
//! fits in memory PyTorch reserved but did not allocate) from a real overrun, and rank the cheapest fixes by predicted
//! step time: the plan re-planned with one nearby change each (micro-batch, recompute, VPP, TP/PP/CP one step, the
//! distributed optimizer, optimizer offload) through the same report function `meshplan plan` uses.
//!
//! The message forms read (PyTorch c10/cuda/CUDACachingAllocator.cpp):
//! - since 2.1: "Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.11 GiB of which 1.02 GiB is free. …
//!   Of the allocated memory 74.21 GiB is allocated by PyTorch, and 1.80 GiB is reserved by PyTorch but unallocated."
//!   (2.1 spelled "capacty"; "Process N has X memory in use" and "this process has X memory in use" may precede);
//! - before: "Tried to allocate 786.00 MiB (GPU 0; 31.74 GiB total capacity; 28.82 GiB already allocated; 577.12 MiB
//!   free; 29.97 GiB reserved in total by PyTorch)".

use crate::layout::{self, Coordinates, MeshSizes};
use crate::plan::InputError;
use crate::report::{Report, plan_value};
use crate::{Code, Severity};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The numbers of one out-of-memory message, in bytes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OomMessage {
    /// `"current"` (PyTorch ≥ 2.1) or `"legacy"`.
    pub form: String,
    pub requested_bytes: u64,
    /// The local CUDA device index (`GPU 3`).
    pub gpu_index: Option<u64>,
    /// The global rank of a `[rank5]:` prefix, when the launcher added one.
    pub rank: Option<u64>,
    pub capacity_bytes: Option<u64>,
    pub free_bytes: Option<u64>,
    /// Allocated by PyTorch (tensors alive).
    pub allocated_bytes: Option<u64>,
    /// Reserved by PyTorch's caching allocator in total (allocated + cached).
    pub reserved_bytes: Option<u64>,
    /// Reserved but not allocated (the allocator's cached, free blocks).
    pub reserved_unallocated_bytes: Option<u64>,
    /// Everything the failing process holds on the device, PyTorch's and not ("this process has X memory in use").
    pub process_bytes: Option<u64>,
}

/// `12.34 GiB`, `786.00 MiB`, `0 bytes` → bytes.
fn size(number: &str, unit: &str) -> Option<u64> {
    let x: f64 = number.trim().parse().ok().filter(|x: &f64| x.is_finite() && *x >= 0.0)?;
    let scale = match unit.trim_end_matches([',', ';', '.', ')']) {
        "bytes" | "B" | "byte" => 1.0,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        "TiB" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    let b = x * scale;
    (b < 1e18).then_some(b.round() as u64)
}

/// The size written right after `marker`.
fn size_after(text: &str, marker: &str) -> Option<u64> {
    let rest = &text[text.find(marker)? + marker.len()..];
    let mut words = rest.split_whitespace();
    size(words.next()?, words.next()?)
}

/// The size written right before `marker`.
fn size_before(text: &str, marker: &str) -> Option<u64> {
    let head = &text[..text.find(marker)?];
    let mut words = head.split_whitespace().rev();
    let unit = words.next()?;
    let number = words.next()?.trim_start_matches(['(', ';']);
    size(number, unit)
}

/// The number after `marker` (`GPU 3`, `[rank5]`).
fn number_after(text: &str, marker: &str) -> Option<u64> {
    let rest = &text[text.find(marker)? + marker.len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Reads the first out-of-memory message in `text` (a log excerpt may surround it).
pub fn parse_message(text: &str) -> Result<OomMessage, InputError> {
    let text = crate::limits::prefix(text, crate::limits::MAX_PLAN_BYTES);
    let unreadable = || {
        InputError::new(
            Code::NoOomMessage,
            "no CUDA out-of-memory message found: expected PyTorch's \"Tried to allocate X GiB. GPU N has a total capacity of …\" or \"Tried to allocate X GiB (GPU N; … total capacity; …)\"",
            "paste the whole torch.OutOfMemoryError line (its \"Tried to allocate\" sentence and the numbers after it)",
        )
    };
    let start = text.find("Tried to allocate ").ok_or_else(unreadable)?;
    // The message and a little before it (for a `[rank5]:` prefix on the same line).
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let msg = &text[start..];
    let msg = crate::limits::prefix(msg, msg.find("\n\n").unwrap_or(msg.len()).min(crate::limits::MAX_OOM_MESSAGE_BYTES));
    let requested = size_after(msg, "Tried to allocate ").ok_or_else(unreadable)?;
    let rank = number_after(&text[line_start..start], "[rank");
    let legacy = msg.contains("total capacity;") || msg.contains("already allocated");
    let m = if legacy {
        let reserved = size_before(msg, " reserved in total by PyTorch");
        let allocated = size_before(msg, " already allocated");
        OomMessage {
            form: "legacy".into(),
            requested_bytes: requested,
            gpu_index: number_after(msg, "(GPU "),
            rank,
            capacity_bytes: size_before(msg, " total capacity"),
            free_bytes: size_before(msg, " free;"),
            allocated_bytes: allocated,
            reserved_bytes: reserved,
            reserved_unallocated_bytes: reserved.zip(allocated).map(|(r, a)| r.saturating_sub(a)),
            process_bytes: None,
        }
    } else {
        let allocated = size_after(msg, "Of the allocated memory ").or_else(|| size_before(msg, " is allocated by PyTorch"));
        let unallocated = size_before(msg, " is reserved by PyTorch but unallocated");
        OomMessage {
            form: "current".into(),
            requested_bytes: requested,
            gpu_index: number_after(msg, "GPU "),
            rank,
            capacity_bytes: size_after(msg, "total capacity of ").or_else(|| size_after(msg, "total capacty of ")),
            free_bytes: size_after(msg, " of which "),
            allocated_bytes: allocated,
            reserved_bytes: allocated.zip(unallocated).map(|(a, u)| a.saturating_add(u)),
            reserved_unallocated_bytes: unallocated,
            process_bytes: size_after(msg, "this process has "),
        }
    };
    if m.capacity_bytes.is_none() && m.allocated_bytes.is_none() {
        return Err(unreadable());
    }
    Ok(m)
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

/// A nearby plan that fits.
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
}

/// Why it ran out of memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// The request is no larger than what PyTorch reserved and did not allocate: no free block was large enough.
    Fragmentation,
    /// The tensors alive plus the request exceed what the GPU has.
    Overrun,
}

/// The explanation.
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
    /// The fixes found, cheapest (least added step time) first.
    pub fixes: Vec<Fix>,
    pub notes: Vec<String>,
}

/// Explains `message_text` for the plan `plan` (plan-file JSON) and its report; `rank` overrides the message's.
pub fn explain(plan: &Value, report: &Report, message_text: &str, rank: Option<u64>) -> Result<Explanation, InputError> {
    let message = parse_message(message_text)?;
    let mut notes = Vec::new();
    let world = report.derived.world_size.max(1);
    let (rank, rank_source) = match (rank, message.rank, message.gpu_index) {
        (Some(r), _, _) => (r, "given".to_string()),
        (None, Some(r), _) => (r, "the message's [rank] prefix".to_string()),
        (None, None, Some(g)) => (g, "the message's GPU index (a local device: node 0 assumed; give --rank for another node)".to_string()),
        (None, None, None) => (0, "none in the message: rank 0 assumed".to_string()),
    };
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
    let stage = report.memory.stages.iter().find(|s| s.pipeline_rank == pipeline_stage).or(report.memory.stages.first());
    let compared = compare(&message, stage, report.memory.gpu_memory_bytes);
    let predicted_terms = stage
        .map(|s| {
            s.terms
                .iter()
                .map(|t| Term {
                    label: t.label.to_string(),
                    bytes: t.bytes,
                    phase: t.phase.label().into(),
                    location: format!("{:?}", t.location).to_ascii_lowercase(),
                })
                .collect()
        })
        .unwrap_or_default();
    let (cause, cause_text, shortfall) = cause(&message, stage.map(|s| s.total_bytes), report.memory.gpu_memory_bytes);
    let fixes = fixes(plan, report, cause, shortfall);
    if fixes.is_empty() {
        notes.push("no nearby plan meshplan tried fits: run `meshplan search` for every layout".into());
    }
    Ok(Explanation { message, rank, rank_source, coordinates, pipeline_stage, groups, compared, predicted_terms, cause, cause_text, shortfall_bytes: shortfall, fixes, notes })
}

fn compare(m: &OomMessage, stage: Option<&crate::memory::StageMemory>, gpu_bytes: u64) -> Vec<Compared> {
    let row = |what: &str, message_bytes: Option<u64>, predicted_bytes: Option<u64>| Compared { what: what.into(), message_bytes, predicted_bytes };
    vec![
        row("allocated by PyTorch (max allocated)", m.allocated_bytes, stage.map(|s| s.allocated_bytes)),
        row("reserved by PyTorch", m.reserved_bytes, stage.map(|s| s.reserved_bytes)),
        row("allocated + the request that failed", m.allocated_bytes.map(|a| a.saturating_add(m.requested_bytes)), stage.map(|s| s.allocated_bytes)),
        row("device memory in use (process)", m.process_bytes, stage.map(|s| s.total_bytes)),
        row("GPU capacity", m.capacity_bytes, Some(gpu_bytes)),
    ]
}

/// Fragmentation when the request fits in what PyTorch reserved but did not allocate plus what the device has free
/// (PyTorch's own hint: "If reserved but unallocated memory is large try setting
/// PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True": cached blocks in partly used segments cannot be returned to the
/// device, so neither part alone holds the request), else an overrun of `requested − free − reserved-unallocated`.
fn cause(m: &OomMessage, predicted_total: Option<u64>, gpu_bytes: u64) -> (Cause, String, u64) {
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    let unallocated = m.reserved_unallocated_bytes.unwrap_or(0);
    let prediction = match predicted_total {
        Some(p) if p > gpu_bytes => format!("meshplan predicts this: {:.2} GiB for the stage, over the {:.2} GiB GPU", gib(p), gib(gpu_bytes)),
        Some(p) => format!(
            "meshplan predicts {:.2} GiB for the stage, {:.2} GiB under the GPU's {:.2} GiB: the run holds more than the model estimates (workspace, fragmentation, a larger batch than planned?)",
            gib(p),
            gib(gpu_bytes - p),
            gib(gpu_bytes)
        ),
        None => String::new(),
    };
    let free = m.free_bytes.unwrap_or(0);
    if unallocated.saturating_add(free) >= m.requested_bytes && m.requested_bytes > 0 {
        let text = format!(
            "fragmentation: the {:.2} GiB request fits in the {:.2} GiB PyTorch reserved but did not allocate plus the {:.2} GiB free, but in no one block. Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; {prediction}",
            gib(m.requested_bytes),
            gib(unallocated),
            gib(free)
        );
        return (Cause::Fragmentation, text, 0);
    }
    let shortfall = m.requested_bytes.saturating_sub(free).saturating_sub(unallocated);
    let text = format!(
        "a real overrun: {:.2} GiB requested with {:.2} GiB free and {:.2} GiB reserved-unallocated — {:.2} GiB short; {prediction}",
        gib(m.requested_bytes),
        gib(free),
        gib(unallocated),
        gib(shortfall)
    );
    (Cause::Overrun, text, shortfall)
}

/// The nearby plans tried: (description, edits).
fn candidates(plan: &Value, report: &Report) -> Vec<(String, Vec<(String, Value)>)> {
    let p = &report.plan;
    let par = &p.parallelism;
    let s = &p.training.settings;
    let world = report.derived.world_size;
    let mut out: Vec<(String, Vec<(String, Value)>)> = Vec::new();
    let mut add = |what: String, edits: Vec<(&str, Value)>| out.push((what, edits.into_iter().map(|(k, v)| (k.to_string(), v)).collect()));
    let mbs = p.training.micro_batch_size;
    if mbs > 1 {
        add(format!("micro_batch_size {mbs} → {}", mbs / 2), vec![("training.micro_batch_size", json!(mbs / 2))]);
        if mbs > 2 {
            add(format!("micro_batch_size {mbs} → 1"), vec![("training.micro_batch_size", json!(1))]);
        }
    }
    use crate::settings::Recompute;
    if s.recompute_granularity == Recompute::None {
        add("recompute_granularity none → selective (core_attn)".into(), vec![("training.recompute_granularity", json!("selective"))]);
    }
    if s.recompute_granularity == Recompute::Selective && s.recompute_modules.is_none() {
        add(
            "recompute_modules core_attn → core_attn, mlp, layernorm".into(),
            vec![("training.recompute_granularity", json!("selective")), ("training.recompute_modules", json!(["core_attn", "mlp", "layernorm"]))],
        );
    }
    if s.recompute_granularity != Recompute::Full {
        add(
            "recompute_granularity → full (uniform, 1 layer)".into(),
            vec![("training.recompute_granularity", json!("full")), ("training.recompute_method", json!("uniform")), ("training.recompute_num_layers", json!(1))],
        );
    }
    if !s.use_distributed_optimizer && !s.use_megatron_fsdp {
        add("use_distributed_optimizer → true".into(), vec![("training.use_distributed_optimizer", json!(true))]);
    }
    if !s.optimizer_cpu_offload {
        let mut e = vec![("training.optimizer_cpu_offload", json!(true))];
        if !s.use_distributed_optimizer {
            e.push(("training.use_distributed_optimizer", json!(true)));
        }
        add("optimizer_cpu_offload → true".into(), e);
    }
    let layout_given = par.pipeline_model_parallel_layout.is_some() || p.model.hybrid_layer_pattern.is_some();
    if !layout_given {
        match par.virtual_pipeline_model_parallel_size {
            Some(v) if v > 1 => add(format!("virtual_pipeline_model_parallel_size {v} → none"), vec![("parallelism.virtual_pipeline_model_parallel_size", Value::Null)]),
            _ if par.pp() > 1 => add("virtual_pipeline_model_parallel_size → 2".into(), vec![("parallelism.virtual_pipeline_model_parallel_size", json!(2))]),
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
    let _ = plan;
    out
}

/// Each candidate re-planned; those valid whose peak fits under the target, by added step time.
fn fixes(plan: &Value, report: &Report, cause: Cause, shortfall: u64) -> Vec<Fix> {
    let current_time = report.performance.as_ref().map(|p| p.step_time_s);
    let gpu = report.memory.gpu_memory_bytes;
    // An overrun: the run held `shortfall` more than its free memory; a fix must lower the predicted peak by as much
    // (meshplan's estimate and the run differ by their own offset, which the change leaves as it is).
    let target = match cause {
        Cause::Fragmentation => gpu,
        Cause::Overrun => gpu.min(report.memory.peak_bytes.saturating_sub(shortfall)),
    };
    let mut out = Vec::new();
    if cause == Cause::Fragmentation {
        out.push(Fix {
            change: "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (the allocator grows segments instead of caching fixed blocks)".into(),
            edits: Vec::new(),
            peak_bytes: report.memory.peak_bytes,
            step_time_s: current_time,
            step_time_delta_s: Some(0.0),
            caveat: None,
        });
    }
    for (change, edits) in candidates(plan, report) {
        let mut v = plan.clone();
        for (path, value) in &edits {
            set_path(&mut v, path, value.clone());
        }
        let Ok(r) = plan_value(&v) else { continue };
        let errors = r.diagnostics.iter().any(|d| d.severity == Severity::Error);
        if errors || r.memory.peak_bytes > target {
            continue;
        }
        let t = r.performance.as_ref().map(|p| p.step_time_s);
        // perf.rs prices recompute by granularity (selective: core attention) and no host traffic.
        let caveat = if edits.iter().any(|(p, _)| p == "training.recompute_modules") {
            Some("the step-time model prices selective recompute as core attention only: recomputing more modules costs more than shown".to_string())
        } else if edits.iter().any(|(p, _)| p == "training.optimizer_cpu_offload") {
            Some("the step-time model does not price the optimizer step on the host or its PCIe traffic: the cost shown is a lower bound".to_string())
        } else {
            None
        };
        out.push(Fix { change, edits, peak_bytes: r.memory.peak_bytes, step_time_s: t, step_time_delta_s: t.zip(current_time).map(|(a, b)| a - b), caveat });
    }
    out.sort_by(|a, b| a.step_time_delta_s.unwrap_or(f64::MAX).total_cmp(&b.step_time_delta_s.unwrap_or(f64::MAX)));
    out
}

/// Sets `section.field` of a plan-file JSON object.
fn set_path(plan: &mut Value, path: &str, value: Value) {
    let Some((section, field)) = path.split_once('.') else { return };
    if let Some(obj) = plan.as_object_mut() {
        let sec = obj.entry(section.to_string()).or_insert_with(|| json!({}));
        if let Some(m) = sec.as_object_mut() {
            m.insert(field.to_string(), value);
        }
    }
}
