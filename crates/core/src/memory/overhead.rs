//! Device memory outside PyTorch's allocator and between its blocks: the CUDA context, communication-library buffers
//! and allocator fragmentation.

use crate::derive::Derived;
use crate::plan::Plan;

/// CUDA context, cuBLAS / cuDNN / Transformer Engine workspaces: a stated 1 GiB (memory-settings.md §9: ~0.5–1 GB, not
/// in the sources read).
pub const CUDA_CONTEXT_BYTES: f64 = (1u64 << 30) as f64;

/// NCCL_BUFFSIZE is 4 MiB per channel and direction; 16 channels × 2 directions ≈ 128 MiB per communicator.
pub const NCCL_BYTES_PER_GROUP: f64 = (128u64 << 20) as f64;

/// Reserved − allocated as a share of the allocated peak, with `expandable_segments:True` (which Bridge's performance
/// recipes set, MB src/megatron/bridge/perf_recipes/_common.py env_vars): the mean of the four published
/// reserved/allocated pairs, 65.609/63.076, 79.266/73.693, 249.25/235.15, 214.4/202.75 = 1.040, 1.076, 1.060, 1.057
/// (Megatron-LM PRs #6311/#6429, Megatron Bridge PR #3364; memory-settings.md §9).
pub const FRAGMENTATION: f64 = (0.040 + 0.076 + 0.060 + 0.057) / 4.0;

/// Group kinds of size > 1 a rank belongs to: each holds an NCCL communicator.
pub fn communicators(p: &Plan, d: &Derived) -> u64 {
    let par = &p.parallelism;
    let moe = p.model.is_moe();
    let sizes = [
        par.tp(),
        par.cp(),
        d.data_parallel_size.saturating_mul(par.cp()),
        par.pp(),
        if moe { par.ep() } else { 1 },
        if moe { par.etp() } else { 1 },
        if moe { d.expert_data_parallel_size } else { 1 },
    ];
    sizes.iter().filter(|&&n| n > 1).count() as u64
}
