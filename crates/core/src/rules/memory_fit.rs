//! Memory fit: out of memory is an error, under 10% headroom a warning; offloading past the nodes' host memory a
//! warning.

use super::findings::{Findings, d};
use crate::Code;
use crate::memory::MemoryReport;
use crate::plan::{Plan, Recompute};

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// Memory rules: out of memory is an error, under 10% headroom a warning, host memory exceeded a warning.
pub fn check_memory(p: &Plan, mem: &MemoryReport, out: &mut impl Findings) {
    check_host_memory(p, mem, out);
    let cap = mem.gpu_memory_bytes;
    let Some(worst) = mem.stages.iter().max_by_key(|s| s.total_bytes) else { return };
    if !mem.fits {
        out.add(Code::OutOfMemory, |code| d(
            code,
            format!(
                "pipeline stage {} needs {} per GPU but {} has {}",
                worst.pipeline_rank,
                gib(worst.total_bytes),
                p.gpu.name,
                gib(cap)
            ),
            suggest_memory_fix(p),
        ));
    } else if (cap - mem.peak_bytes) as f64 <= 0.10 * cap as f64 {
        out.add(Code::LowMemoryHeadroom, |code| d(
            code,
            format!("peak {} of {} leaves {:.1}% free", gib(mem.peak_bytes), gib(cap), 100.0 * (cap - mem.peak_bytes) as f64 / cap as f64),
            "leave ≥ 10% for fragmentation and spikes: ".to_string() + &suggest_memory_fix(p),
        ));
    }
}

/// Host memory: offloaded optimizer state and activations of a node's GPUs against the node's host memory (a warning:
/// pinned host allocations that do not fit fail at start-up or swap, and the plan says nothing of other host users).
pub fn check_host_memory(p: &Plan, mem: &MemoryReport, out: &mut impl Findings) {
    let (Some(cap), Some(false)) = (mem.host_memory_per_node_bytes, mem.host_fits) else { return };
    let s = &p.training.settings;
    out.add(Code::HostMemoryExceeded, |code| {
        let mut fix = Vec::new();
        // Host bytes scale with the offloaded share: the fraction that fits, rounded down to a tenth.
        let now = s.offload_fraction();
        let fits = (now * cap as f64 / mem.host_bytes_per_node.max(1) as f64 * 10.0).floor() / 10.0;
        let lower = s.optimizer_cpu_offload && fits > 0.0 && fits < now;
        if lower {
            fix.push(format!("lower optimizer_offload_fraction from {now} to {fits}"));
        }
        if s.fine_grained_activation_offloading {
            fix.push("offload fewer offload_modules".to_string());
        }
        fix.push(format!("raise data parallelism (the offloaded optimizer shard shrinks with DP) or cluster.host_memory_per_node_gb above {}", gib(cap)));
        let diag = d(
            code,
            format!(
                "offloading needs {} of host memory per node ({} GPUs of {} each) but a node has {}",
                gib(mem.host_bytes_per_node),
                p.cluster.gpus_per_node,
                gib(mem.host_bytes_per_node / p.cluster.gpus_per_node.max(1)),
                gib(cap)
            ),
            fix.join(", or "),
        );
        if lower { diag.with_apply("training.optimizer_offload_fraction", fits) } else { diag }
    });
}

fn suggest_memory_fix(p: &Plan) -> String {
    let mut s = Vec::new();
    if !p.training.settings.use_distributed_optimizer {
        s.push("use_distributed_optimizer = true".to_string());
    }
    if p.training.settings.recompute_granularity == Recompute::None {
        s.push("recompute_granularity = \"selective\"".to_string());
    }
    s.push(format!("raise pipeline_model_parallel_size above {}", p.parallelism.pp()));
    if p.parallelism.tp() < p.cluster.nvlink_domain_size {
        s.push(format!("raise tensor_model_parallel_size above {} (inside the NVLink domain)", p.parallelism.tp()));
    }
    if p.model.is_moe() {
        s.push(format!("raise expert_model_parallel_size above {}", p.parallelism.ep()));
    }
    s.push("or lower micro_batch_size / seq_length".into());
    format!("try {}", s.join(", "))
}

