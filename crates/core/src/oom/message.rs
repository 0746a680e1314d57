//! Reading out-of-memory messages out of a log: every form PyTorch's caching allocator writes (CUDA and ROCm's HIP
//! alike, and the same wording from Intel's XPU and Ascend's NPU backends), one per failing rank, and allocation
//! failures outside the allocator (cuBLAS, NCCL) that carry no sizes.
//!
//! The forms (PyTorch c10/cuda/CUDACachingAllocator.cpp, the message its `OutOfMemoryError` carries):
//! - since 2.1: "Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.11 GiB of which 1.02 GiB is free. …
//!   Of the allocated memory 74.21 GiB is allocated by PyTorch, [with X allocated in private pools (e.g., CUDA
//!   Graphs),] and 1.80 GiB is reserved by PyTorch but unallocated." (2.1 spelled "capacty"; "Process N has X memory
//!   in use" and "Including non-PyTorch memory, this process has X memory in use" may precede); raised as
//!   `torch.OutOfMemoryError` (`torch.cuda.OutOfMemoryError` before 2.4);
//! - 1.x: "RuntimeError: CUDA out of memory. Tried to allocate 786.00 MiB (GPU 0; 31.74 GiB total capacity; 28.82 GiB
//!   already allocated; 577.12 MiB free; 29.97 GiB reserved in total by PyTorch)" (before 1.5: "… 5.28 GiB cached)");
//!   torch_npu adds "X current active" and names the device "NPU 0".
//!
//! The scan is linear in the text: one pass over the occurrences of each marker, each message read within a bounded
//! window ([`MESSAGE_WINDOW`]), at most [`MAX_MESSAGES`] kept.

use crate::limits::prefix;
use serde::{Deserialize, Serialize};

/// The longest stretch of text one message is read from, in bytes: limits.rs `MAX_OOM_MESSAGE_BYTES`.
pub use crate::limits::MAX_OOM_MESSAGE_BYTES as MESSAGE_WINDOW;

/// The most failing ranks one log explains (limits.rs).
pub use crate::limits::MAX_OOM_MESSAGES as MAX_MESSAGES;

/// The numbers of one out-of-memory message, in bytes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OomMessage {
    /// `"current"` (PyTorch ≥ 2.1), `"legacy"` (1.x), or a failure without sizes: `"cublas"`, `"nccl"`,
    /// `"cuda-runtime"` (a CUDA runtime call's "out of memory" error); or `"memory-report"`, a run's memory report in a
    /// log without an out-of-memory (its peaks as the allocated and reserved figures, no request).
    pub form: String,
    pub requested_bytes: u64,
    /// The local device index (`GPU 3`, `NPU 0`).
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
    /// What each other process on the device holds ("Process 41230 has 40.12 GiB memory in use", which PyTorch ≥ 2.1
    /// lists from NVML beside "this process"), at most [`MAX_OTHER_PROCESSES`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_process_bytes: Vec<u64>,
    /// The device's backend as the message names it: CUDA, HIP (ROCm), XPU, NPU.
    #[serde(default)]
    pub device: String,
    /// Allocated in private pools (CUDA graphs), part of `allocated_bytes` ("with X allocated in private pools").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_pool_bytes: Option<u64>,
    /// The local rank of a `[default5]:` prefix (torchrun's per-process log prefix).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_rank: Option<u64>,
    /// What the failure is when it is not the allocator's (cuBLAS, NCCL), in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The innermost frame of the traceback printed before the message, where it names Megatron or Transformer Engine
    /// code (`frames::innermost`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<super::frames::Frame>,
    /// The traceback's outer frames that place the failure in a phase the innermost frame does not say: a checkpoint's
    /// load or save, the set-up (`frames::read`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context: Vec<super::frames::Frame>,
    /// The last training iteration the log printed before the message (Megatron-LM's and Megatron Bridge's
    /// ` iteration N/ M |` line), when it printed one: the run had taken N steps, so the optimizer's state exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations_logged: Option<u64>,
    /// The global rank torchrun's failure summary gives the process that failed on this message's local rank (or GPU
    /// index), when the message has no `[rankN]` prefix and the summary names one such process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_rank: Option<u64>,
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

/// The most other processes one message's figures are read for.
pub const MAX_OTHER_PROCESSES: usize = 64;

/// "Process 41230 has 40.12 GiB memory in use." for every process on the device but the failing one, which PyTorch's
/// message lists from NVML ("Including non-PyTorch memory, this process has …" is the failing one).
// Source: pytorch/pytorch PR #99699 (c10/cuda/CUDACachingAllocator.cpp: NVML's processes on the device, to tell "another
// process (such as a data loader) has also allocated memory on the device").
fn other_processes(msg: &str) -> Vec<u64> {
    let mut out = Vec::new();
    for (i, _) in msg.match_indices("Process ").take(MAX_OTHER_PROCESSES) {
        let rest = &msg[i + "Process ".len()..];
        let mut words = rest.split_whitespace();
        let (id, has, number, unit) = (words.next(), words.next(), words.next(), words.next());
        let in_use = words.next() == Some("memory") && words.next().is_some_and(|w| w == "in");
        if id.is_some_and(|id| id.bytes().all(|c| c.is_ascii_digit())) && has == Some("has") && in_use {
            if let Some(b) = number.zip(unit).and_then(|(n, u)| size(n, u)) {
                out.push(b);
            }
        }
    }
    out
}

/// The size written right before `marker`.
fn size_before(text: &str, marker: &str) -> Option<u64> {
    let head = &text[..text.find(marker)?];
    let mut words = head.split_whitespace().rev();
    let unit = words.next()?;
    let number = words.next()?.trim_start_matches(['(', ';', ',']);
    size(number, unit)
}

/// The number after `marker` (`GPU 3`, `[rank5]`).
fn number_after(text: &str, marker: &str) -> Option<u64> {
    let rest = &text[text.find(marker)? + marker.len()..];
    let digits = &rest[..rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len())];
    digits.get(..digits.len().min(18))?.parse().ok()
}

/// The backend a message names: the word before "out of memory" (CUDA, HIP, XPU, NPU), CUDA when it says none.
fn device(line: &str) -> String {
    for d in ["HIP", "XPU", "NPU", "CUDA"] {
        if line.contains(&format!("{d} out of memory")) || line.contains(&format!("({d} ")) {
            return d.into();
        }
    }
    "CUDA".into()
}

/// The `[rank5]:` / `[default5]:` prefix of the line `start` sits on.
fn prefixes(text: &str, start: usize) -> (Option<u64>, Option<u64>) {
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let head = &text[line_start..start];
    (number_after(head, "[rank"), number_after(head, "[default"))
}

/// One sized message starting at `start` ("Tried to allocate"); `msg` runs to the next message or the window's end.
fn sized(text: &str, start: usize, msg: &str) -> Option<OomMessage> {
    let requested = size_after(msg, "Tried to allocate ")?;
    let (rank, local_rank) = prefixes(text, start);
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    // The line's head and the message's first 200 bytes, cut on a character boundary (a byte cut panicked on a
    // multi-byte character across byte 200: tests/limits.rs).
    let device = device(prefix(&text[line_start..], start - line_start + msg.len().min(200)));
    let legacy = msg.contains("total capacity;") || msg.contains("already allocated");
    let m = if legacy {
        let reserved = size_before(msg, " reserved in total by PyTorch").or_else(|| size_before(msg, " cached)"));
        let allocated = size_before(msg, " already allocated");
        OomMessage {
            form: "legacy".into(),
            requested_bytes: requested,
            gpu_index: number_after(msg, &format!("({} ", if device == "NPU" { "NPU" } else { "GPU" })),
            rank,
            capacity_bytes: size_before(msg, " total capacity"),
            free_bytes: size_before(msg, " free;"),
            allocated_bytes: allocated,
            reserved_bytes: reserved,
            reserved_unallocated_bytes: reserved.zip(allocated).map(|(r, a)| r.saturating_sub(a)),
            device,
            local_rank,
            ..OomMessage::default()
        }
    } else {
        let allocated = size_after(msg, "Of the allocated memory ").or_else(|| size_before(msg, " is allocated by PyTorch"));
        let unallocated = size_before(msg, " is reserved by PyTorch but unallocated");
        OomMessage {
            form: "current".into(),
            requested_bytes: requested,
            gpu_index: number_after(msg, "GPU ").or_else(|| number_after(msg, "NPU ")),
            rank,
            capacity_bytes: size_after(msg, "total capacity of ").or_else(|| size_after(msg, "total capacty of ")),
            free_bytes: size_after(msg, " of which "),
            allocated_bytes: allocated,
            reserved_bytes: allocated.zip(unallocated).map(|(a, u)| a.saturating_add(u)),
            reserved_unallocated_bytes: unallocated,
            process_bytes: size_after(msg, "this process has "),
            other_process_bytes: other_processes(msg),
            device,
            private_pool_bytes: size_after(msg, "PyTorch, with ").filter(|_| msg.contains("in private pools")),
            local_rank,
            ..OomMessage::default()
        }
    };
    let mut m = m;
    own_process(&mut m);
    (m.capacity_bytes.is_some() || m.allocated_bytes.is_some()).then_some(m)
}

/// A message without "this process has …" lists the failing process by its id too when NVML sees another pid namespace
/// (a container): the listed process that holds the least above PyTorch's reserved figure (its own cache plus its
/// CUDA context) is taken for it.
fn own_process(m: &mut OomMessage) {
    let Some(reserved) = m.reserved_bytes.filter(|_| m.process_bytes.is_none() && !m.other_process_bytes.is_empty()) else { return };
    let own = m.other_process_bytes.iter().enumerate().filter(|(_, b)| **b >= reserved).min_by_key(|(_, b)| **b - reserved).map(|(i, _)| i);
    if let Some(i) = own {
        m.process_bytes = Some(m.other_process_bytes.remove(i));
    }
}

/// Allocation failures outside PyTorch's allocator that carry no sizes: (marker, form, note).
// cuBLAS: CUBLAS_STATUS_ALLOC_FAILED when cublasCreate or its workspace cannot get device memory (PyTorch's
// CUDABlas.cpp TORCH_CUDABLAS_CHECK); NCCL: "Cuda failure 'out of memory'" / "Failed to CUDA calloc" when a
// communicator's buffers cannot be allocated (NCCL's WARN lines, and ncclUnhandledCudaError).
const OUTSIDE: &[(&str, &str, &str)] = &[
    ("CUBLAS_STATUS_ALLOC_FAILED", "cublas", "cuBLAS could not allocate its handle or workspace (CUBLAS_STATUS_ALLOC_FAILED): an out-of-memory outside PyTorch's allocator, whose cached blocks hold the device"),
    ("Cuda failure 'out of memory'", "nccl", "NCCL could not allocate a communicator's buffers (Cuda failure 'out of memory'): an out-of-memory outside PyTorch's allocator, often at the first collective of a new group"),
    ("Cuda failure 2 'out of memory'", "nccl", "NCCL could not allocate a communicator's buffers (Cuda failure 2 'out of memory'): an out-of-memory outside PyTorch's allocator"),
    ("Failed to CUDA calloc", "nccl", "NCCL could not allocate device memory (Failed to CUDA calloc): an out-of-memory outside PyTorch's allocator"),
    // A CUDA runtime call that is not the caching allocator's (PyTorch's C10_CUDA_CHECK: "CUDA error: out of memory";
    // Transformer Engine's NVTE_CHECK_CUDA: "CUDA Error: out of memory"; the enum's name in other libraries), or an
    // asynchronous error surfacing at a later call (PyTorch's own text then adds "CUDA kernel errors might be
    // asynchronously reported at some other API call").
    ("CUDA error: out of memory", "cuda-runtime", "a CUDA runtime call outside PyTorch's caching allocator could not get device memory (CUDA error: out of memory): a library's own allocation (Transformer Engine or cuDNN workspaces, a CUDA graph's instantiation, a new CUDA context) or an error reported late from an earlier call (CUDA_LAUNCH_BLOCKING=1 finds the call); the caching allocator's blocks are what hold the device"),
    ("CUDA Error: out of memory", "cuda-runtime", "a CUDA runtime call in Transformer Engine could not get device memory (CUDA Error: out of memory): an allocation outside PyTorch's caching allocator, whose blocks hold the device"),
    ("cudaErrorMemoryAllocation", "cuda-runtime", "a CUDA runtime allocation outside PyTorch's caching allocator failed (cudaErrorMemoryAllocation)"),
    ("HIP error: out of memory", "cuda-runtime", "a HIP runtime call outside PyTorch's caching allocator could not get device memory (HIP error: out of memory)"),
];

/// The number written after `marker` in `field` (`max allocated: 23456.70`).
fn value_after(field: &str, marker: &str) -> Option<f64> {
    let rest = field.trim().strip_prefix(marker)?.trim();
    rest.split_whitespace().next()?.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0)
}

/// The memory reports a run prints each log interval, when a log has no out-of-memory: the last one per rank, as a
/// message of form `memory-report` (no request; its peaks as the allocated and reserved figures). Megatron-LM's
/// `[Rank 0] (after 10 iterations) memory (MB) | allocated: … | max allocated: … | reserved: … | max reserved: …`
/// (megatron/training/utils/common_utils.py report_memory, MiB) and Megatron Bridge's `… memory (GB) | … |
/// peak_allocated_mem: … | … | peak_reserved_mem: … | alloc_retries: …` (training/utils/train_utils.py report_memory:
/// torch.cuda.memory_stats in 10⁹ bytes).
fn reports(text: &str) -> Vec<OomMessage> {
    let mut out: Vec<OomMessage> = Vec::new();
    let lines = text.lines().filter(|l| l.contains(" memory (MB) | ") || l.contains(" memory (GB) | ")).take(64 * MAX_MESSAGES);
    for line in lines {
        let gb = line.contains(" memory (GB) | ");
        let (unit, allocated_key, reserved_key) = if gb { (1e9, "peak_allocated_mem:", "peak_reserved_mem:") } else { (1024.0 * 1024.0, "max allocated:", "max reserved:") };
        let fields: Vec<&str> = line.split(" | ").take(32).collect();
        let find = |key: &str| fields.iter().find_map(|f| value_after(f, key));
        let bytes = |x: f64| (x * unit < 1e18).then(|| (x * unit).round() as u64);
        let Some(allocated) = find(allocated_key).and_then(bytes) else { continue };
        let reserved = find(reserved_key).and_then(bytes);
        // Megatron's own `[Rank N]`, else a launcher's `[rankN]:` prefix.
        let rank = number_after(line, "[Rank ").or_else(|| number_after(line, "[rank"));
        let after = number_after(line, "(after ").map_or(String::new(), |n| format!(" after {n} iterations"));
        let retries = find("alloc_retries:").filter(|&r| r > 0.0).map_or(String::new(), |r| {
            format!("; the allocator freed its cache and retried {r:.0} times (cudaMalloc failed): the run is at the device's limit, where fragmentation costs")
        });
        let who = if gb { "Megatron Bridge's" } else { "Megatron-LM's" };
        let m = OomMessage {
            form: "memory-report".into(),
            device: "CUDA".into(),
            rank,
            allocated_bytes: Some(allocated),
            reserved_bytes: reserved,
            note: Some(format!("{who} memory report{after} (no out-of-memory in the log): its max allocated and max reserved are the run's peaks{retries}")),
            ..OomMessage::default()
        };
        // The latest report of a rank replaces its earlier ones.
        match out.iter().position(|o| o.rank == m.rank) {
            Some(i) => out[i] = m,
            None if out.len() < MAX_MESSAGES => out.push(m),
            None => {}
        }
    }
    out
}

/// Every out-of-memory message in `text` (a log may surround them), the first per rank, in the log's order; at most
/// [`MAX_MESSAGES`]; with none, the run's memory reports (`reports`). Empty when there is neither.
pub fn scan(text: &str) -> Vec<OomMessage> {
    let mut out: Vec<OomMessage> = Vec::new();
    let keep = |m: OomMessage, out: &mut Vec<OomMessage>| {
        let same = |o: &OomMessage| o.rank == m.rank && o.local_rank == m.local_rank && (o.rank.is_some() || o.local_rank.is_some() || o.gpu_index == m.gpu_index);
        if out.len() < MAX_MESSAGES && !out.iter().any(same) {
            out.push(m);
        }
    };
    const MARKER: &str = "Tried to allocate ";
    let starts: Vec<usize> = text.match_indices(MARKER).map(|(i, _)| i).take(16 * MAX_MESSAGES).collect();
    let iterations = iteration_lines(text);
    let logged = |at: usize| iterations.partition_point(|(i, _)| *i < at).checked_sub(1).map(|k| iterations[k].1);
    // The traceback before a message runs from the previous message's line (or the window's start) to its own line.
    let line_start = |i: usize| text[..i].rfind('\n').map_or(0, |j| j + 1);
    for (n, &start) in starts.iter().enumerate() {
        let end = starts.get(n + 1).copied().unwrap_or(text.len());
        let window = prefix(&text[start..end], MESSAGE_WINDOW);
        let msg = &window[..window.find("\n\n").unwrap_or(window.len())];
        if let Some(mut m) = sized(text, start, msg) {
            let begin = n.checked_sub(1).map_or(0, |p| starts[p]);
            (m.location, m.context) = super::frames::read(text, begin, line_start(start), m.rank, m.local_rank);
            m.iterations_logged = logged(start);
            keep(m, &mut out);
        }
    }
    for &(marker, form, note) in OUTSIDE {
        for (start, _) in text.match_indices(marker).take(MAX_MESSAGES) {
            let (rank, local_rank) = prefixes(text, start);
            let (location, context) = super::frames::read(text, 0, line_start(start), rank, local_rank);
            let m = OomMessage { form: form.into(), device: "CUDA".into(), rank, local_rank, note: Some(note.into()), location, context, ..OomMessage::default() };
            keep(m, &mut out);
        }
    }
    // With no GPU out-of-memory: the host's (the kernel's OOM killer, torchrun's SIGKILL exit, Kubernetes' OOMKilled).
    if out.is_empty() {
        for &(marker, note) in HOST {
            if let Some(start) = text.find(marker) {
                let line = &text[text[..start].rfind('\n').map_or(0, |i| i + 1)..];
                let line = &line[..line.find('\n').unwrap_or(line.len())];
                let (rank, local_rank) = prefixes(text, start);
                let local_rank = local_rank.or_else(|| number_after(line, "local_rank: "));
                keep(OomMessage { form: "host".into(), device: "host".into(), rank, local_rank, note: Some(note.into()), ..OomMessage::default() }, &mut out);
                break;
            }
        }
    }
    if out.is_empty() {
        return reports(text);
    }
    summary_ranks(text, &mut out);
    out
}

/// torchrun's failure summary (torch/distributed/elastic/multiprocessing/errors/__init__.py `_FAILURE_FORMAT_TEMPLATE`:
/// `  rank      : 24 (local_rank: 0)` under each failure and the root cause): each message without a `[rankN]` prefix
/// gets the global rank of the one failure whose local rank is its `[defaultN]` prefix's; a message with neither
/// prefix, that of a summary listing one failure, when it is the only such message; none when the summaries (one per
/// node's torchrun) list several or none. One pass over the text.
fn summary_ranks(text: &str, out: &mut [OomMessage]) {
    const MARKER: &str = "rank      : ";
    let mut failures: Vec<(u64, u64)> = Vec::new();
    for (i, _) in text.match_indices(MARKER).take(4 * MAX_MESSAGES) {
        // The template's line is `24 (local_rank: 0)`: 64 bytes hold any of them.
        let rest = crate::limits::prefix(&text[i + MARKER.len()..], 64);
        let line = &rest[..rest.find('\n').unwrap_or(rest.len())];
        let digits = &line[..line.find(|c: char| !c.is_ascii_digit()).unwrap_or(line.len())];
        if let (Ok(rank), Some(local)) = (digits.get(..digits.len().min(12)).unwrap_or("").parse::<u64>(), number_after(line, "(local_rank: ")) {
            if !failures.contains(&(rank, local)) {
                failures.push((rank, local));
            }
        }
    }
    // A message's GPU index is its local rank only when each process sees every GPU of its node; a launcher that gives
    // each process its own GPU prints GPU 0 in all of them. So without a `[defaultN]` prefix, only a summary of one
    // failure beside one such message is that message's.
    let unprefixed = out.iter().filter(|m| m.rank.is_none() && m.local_rank.is_none()).count();
    for m in out.iter_mut().filter(|m| m.rank.is_none()) {
        let rank = match m.local_rank {
            Some(local) => {
                let mut of = failures.iter().filter(|(_, l)| *l == local);
                match (of.next(), of.next()) {
                    (Some(&(rank, _)), None) => Some(rank),
                    _ => None,
                }
            }
            None => match failures.as_slice() {
                [(rank, _)] if unprefixed == 1 => Some(*rank),
                _ => None,
            },
        };
        m.summary_rank = rank;
    }
}

/// The training log's iteration lines, in the log's order: (offset, N) of each ` iteration N/ M |`.
// Source: megatron/training/training.py l.3568 training_log `' iteration {:8d}/{:8d} |'` @ NVIDIA/Megatron-LM
// d98e8a64dd; Megatron Bridge training/utils/train_utils.py l.1089 (the same format) @ 067f987df03b. One pass over the
// text; a number is at most 12 digits.
fn iteration_lines(text: &str) -> Vec<(usize, u64)> {
    let mut out = Vec::new();
    for (i, w) in text.match_indices(" iteration ") {
        let rest = text[i + w.len()..].trim_start_matches(' ');
        let digits = &rest[..rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len())];
        if digits.is_empty() || digits.len() > 12 || !rest[digits.len()..].starts_with('/') {
            continue;
        }
        if let Ok(n) = digits.parse() {
            out.push((i, n));
        }
    }
    out
}

/// The host running out of memory, which users report as an out-of-memory too: (marker, what it says).
// Sources: torch/distributed/elastic/multiprocessing/api.py ("failed (exitcode: -9)": the worker ended by SIGKILL, the
// Linux OOM killer's signal); the kernel's oom_kill.c ("Out of memory: Killed process"); Kubernetes' container status
// reason OOMKilled (its cgroup memory limit); torch/utils/data/_utils/signal_handling.py ("DataLoader worker (pid X) is
// killed by signal: Killed").
const HOST: &[(&str, &str)] = &[
    ("Out of memory: Killed process", "the kernel's out-of-memory killer ended a process: the host ran out of memory"),
    ("OOMKilled", "Kubernetes ended the container for exceeding its memory limit (OOMKilled): the host's memory, not the GPU's"),
    ("is killed by signal: Killed", "a DataLoader worker was killed (signal: Killed), as the host's out-of-memory killer does"),
    ("exitcode: -9", "a rank ended by SIGKILL (torchrun: exitcode -9), the signal of the host's out-of-memory killer (or of a scheduler enforcing a memory limit)"),
];
