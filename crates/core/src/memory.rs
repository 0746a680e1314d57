//! Memory per GPU for every pipeline stage: parameters, gradients, optimizer states, activations, overheads.

use crate::pipeline::StageSplit;
use crate::plan::Plan;
use crate::report::Derived;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StageMemory {
    pub pipeline_rank: u64,
    pub num_layers: u64,
    pub parameters_bytes: u64,
    pub gradients_bytes: u64,
    pub optimizer_bytes: u64,
    pub activations_bytes: u64,
    pub overhead_bytes: u64,
    pub total_bytes: u64,
    /// Parameters held by one GPU of this stage: dense part (sharded over TP) and routed experts (over EP·ETP).
    pub dense_parameters: u64,
    pub expert_parameters: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryReport {
    pub stages: Vec<StageMemory>,
    pub peak_bytes: u64,
    pub gpu_memory_bytes: u64,
    pub fits: bool,
}

/// Per-parameter bytes under Megatron's mixed-precision Adam.
// Source: Korthikanti et al. / megatron/training/theoretical_memory_usage.py: 18 B/param
// (2 bf16 weight + 4 fp32 grad + 4 fp32 main weight + 8 Adam moments), or 6 + 12/shard with the distributed optimizer.
pub fn bytes_per_param(distributed: bool, shard: u64) -> (f64, f64, f64) {
    let (weight, grad) = (2.0, 4.0);
    let optim = if distributed { 12.0 / shard.max(1) as f64 } else { 12.0 };
    (weight, grad, optim)
}

/// Estimates memory for every stage.
pub fn estimate(p: &Plan, d: &Derived, split: &StageSplit) -> MemoryReport {
    let par = &p.parallelism;
    let tp = par.tp().max(1) as f64;
    let expert_shard = (par.ep().max(1) * par.etp().max(1)) as f64;
    let vocab = d.padded_vocab_size;
    let mut stages = Vec::with_capacity(split.stages.len());
    for (rank, _) in split.stages.iter().enumerate() {
        let mut dense = 0f64;
        let mut experts = 0f64;
        let mut layers = 0u64;
        for i in split.layer_indices(rank) {
            let lp = p.model.layer_params(i);
            dense += lp.tp_sharded as f64 / tp + lp.replicated as f64;
            experts += lp.routed_experts as f64 / expert_shard;
            layers += 1;
        }
        if rank == 0 {
            dense += p.model.embedding_params(vocab) as f64 / tp;
        }
        if rank + 1 == split.stages.len() {
            dense += vocab as f64 * p.model.hidden_size as f64 / tp;
        }
        let dense_shard = d.data_parallel_size.max(1) * par.cp().max(1);
        let (w, g, o_dense) = bytes_per_param(p.training.use_distributed_optimizer, dense_shard);
        let (_, _, o_expert) = bytes_per_param(p.training.use_distributed_optimizer, d.expert_data_parallel_size.max(1));
        let params = dense + experts;
        let s = StageMemory {
            pipeline_rank: rank as u64,
            num_layers: layers,
            parameters_bytes: (params * w) as u64,
            gradients_bytes: (params * g) as u64,
            optimizer_bytes: (dense * o_dense + experts * o_expert) as u64,
            dense_parameters: dense as u64,
            expert_parameters: experts as u64,
            ..Default::default()
        };
        stages.push(s);
    }
    for s in &mut stages {
        s.total_bytes = s.parameters_bytes + s.gradients_bytes + s.optimizer_bytes + s.activations_bytes + s.overhead_bytes;
    }
    let peak_bytes = stages.iter().map(|s| s.total_bytes).max().unwrap_or(0);
    let gpu_memory_bytes = p.gpu.memory_bytes();
    MemoryReport { stages, peak_bytes, gpu_memory_bytes, fits: peak_bytes <= gpu_memory_bytes }
}
