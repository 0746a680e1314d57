//! Model state per GPU of one stage: weights (and TE's quantized copies), the main-gradient buffer, master weights and
//! optimizer moments, sharded as Megatron shards them, and what optimizer offload moves to the host.

use super::params::StageParams;
use super::run::{Run, WeightStore};
use crate::settings::ShardingStrategy;

/// Bytes of model state one GPU of a stage holds, by buffer.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct State {
    /// Parameters as stored: the parameter dtype, or the quantized primary weights with their transpose and scales.
    pub weights: f64,
    /// TE's cached quantized workspace of BF16 weights under FP8/FP4, one per module.
    pub weight_cache: f64,
    /// One quantized copy of the stage's low-precision GEMM weights, per microbatch in flight
    /// (`disable_parameter_transpose_cache`).
    pub weight_copy_per_microbatch: f64,
    pub grads: f64,
    pub master: f64,
    pub moments: f64,
    /// fp32 copies of the grad shard, alive through the optimizer step.
    pub step_grad_copy: f64,
    /// Offloaded optimizer state on the host.
    pub host: f64,
    /// Megatron-FSDP's unsharded parameter / gradient buffers of the units in flight.
    pub fsdp_unsharded: f64,
    /// The vision encoder's share of `weights` (trained and frozen, at the parameter dtype).
    pub vision_weights: f64,
}

/// The optimizer's shard sizes: (dense, expert) data-parallel ranks each shard spans.
// ML megatron/core/distributed/distributed_data_parallel.py: dense params shard over the DP·CP group, experts over the
// expert-DP group; num_distributed_optimizer_instances divides each (distributed_data_parallel_config.py).
pub(crate) fn shards(run: &Run, dense_dp_cp: u64, expert_dp: u64) -> (f64, f64) {
    if !run.sharded_optimizer {
        return (1.0, 1.0);
    }
    ((dense_dp_cp as f64 / run.instances).max(1.0), (expert_dp as f64 / run.instances).max(1.0))
}

/// Model state of one stage, `shard` from [`shards`].
pub(crate) fn of(run: &Run, st: &StageParams, (dense_d, expert_d): (f64, f64)) -> State {
    let (w_low, cache) = run.weight_low();
    // Weights per part: the high-precision remainder at the parameter dtype, the low-precision GEMMs as stored.
    let dense_w = (st.dense - st.dense_low).max(0.0) * run.param + st.dense_low * w_low;
    let expert_w = (st.experts - st.experts_low).max(0.0) * run.param + st.experts_low * w_low;
    let low = st.dense_low + st.experts_low;
    // ML megatron/core/distributed/fsdp/src/megatron_fsdp/param_and_grad_buffer.py l.2326-2345, 2630-2735: optim shards
    // the optimizer state (ZeRO-1), optim_grads also the main grads (ZeRO-2), optim_grads_params also the weights.
    let (shard_grads, shard_weights) = match run.fsdp {
        Some(ShardingStrategy::OptimGrads) => (true, false),
        Some(ShardingStrategy::OptimGradsParams) => (true, true),
        _ => (false, false),
    };
    let split = |dense: f64, experts: f64, on: bool| if on { dense / dense_d + experts / expert_d } else { dense + experts };
    // What is trained: every parameter, or under LoRA the adapters only — the frozen base has requires_grad = False, so
    // Megatron-Core's DDP gives it no main-grad buffer and the optimizer no state (MB peft/base.py l.176-193 freeze_model;
    // ML megatron/core/distributed/distributed_data_parallel.py: buffers only for params that require grad).
    let (trained_dense, trained_experts) = if run.peft { (st.adapters, 0.0) } else { (st.dense, st.experts) };
    // The distributed optimizer's shard of this GPU: dense over DP·CP, experts over expert DP.
    let shard_elements = trained_dense / dense_d + trained_experts / expert_d;
    let (master, moments) = run.device_optimizer();
    // Megatron-FSDP all-gathers a unit's weights before its forward and backward and materialises its grads unsharded
    // before their reduce-scatter; "at least two FSDP units worth of un-sharded weight memory … and gradient memory"
    // (ML docs/user-guide/features/megatron_fsdp.md l.381-382). A unit is a transformer layer.
    let unit = 2.0 * st.largest_layer;
    let fsdp_unsharded = match (shard_grads, shard_weights) {
        (true, true) => unit * (run.param + run.grad),
        (true, false) => unit * run.grad,
        _ => 0.0,
    };
    // A frozen vision encoder's weights: stored, never sharded by the optimizer, no grads (memory/vision.rs).
    let frozen_w = st.vision_frozen * run.param;
    State {
        // LoRA adapters are stored at the parameter dtype (LoRA.lora_dtype None: the model's, MB peft/lora.py).
        weights: split(dense_w, expert_w, shard_weights) + frozen_w + st.adapters * run.param,
        weight_cache: low * cache,
        weight_copy_per_microbatch: if run.store == WeightStore::PerMicrobatch { low * run.quant } else { 0.0 },
        grads: split(trained_dense * run.grad, trained_experts * run.grad, shard_grads),
        master: shard_elements * master,
        moments: shard_elements * moments,
        step_grad_copy: shard_elements * run.device_step_copy(),
        host: shard_elements * run.offload * run.host_per_offloaded,
        fsdp_unsharded,
        vision_weights: if shard_weights { (st.vision - st.vision_frozen) / dense_d } else { st.vision - st.vision_frozen } * run.param + frozen_w,
    }
}
