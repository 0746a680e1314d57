//! MoE token buffers: tokens reaching a rank's experts (capacity, padding, routing imbalance), the dispatcher's
//! working set, and the DeepEP / HybridEP buffers those libraries allocate outside PyTorch's allocator.

use super::shape::Shape;
use super::run::Run;
use crate::model::ModelConfig;
use crate::plan::Plan;
use crate::settings::{DispatcherType, FlexBackend};

/// Tokens of one microbatch that reach the experts of the busiest rank of an MoE layer.
// ML megatron/core/transformer/moe (memory-settings.md §7): each local token goes to topk experts and the dispatcher
// gathers over the expert-TP group, so the mean is T_loc·k·ETP. With a capacity factor every expert takes at most
// capacity = ceil(T_loc·k/E·cf) tokens (moe_utils.py get_capacity); padded, exactly that many from each of EP·ETP
// sources (token_dispatcher.py l.512-540): E·ETP·capacity on a rank. Dropless routing is data-dependent: the hot rank
// receives moe_routing_imbalance_factor × the mean, 1 when moe_router_force_load_balancing routes uniformly.
pub(crate) fn routed_tokens(m: &ModelConfig, p: &Plan, sh: &Shape) -> f64 {
    let s = &p.training.settings;
    let local = sh.local();
    let topk = m.moe_router_topk.max(1) as f64;
    let experts = m.num_experts().max(1) as f64;
    let mean = local * topk * sh.etp;
    let imbalance = if s.moe_router_force_load_balancing { 1.0 } else { s.moe_routing_imbalance_factor.max(1.0) };
    match s.moe_expert_capacity_factor {
        Some(cf) => {
            let capacity = (local * topk / experts * cf).ceil();
            let bound = experts * sh.etp * capacity;
            if s.moe_pad_expert_input_to_capacity { bound } else { (mean * imbalance).min(bound) }
        }
        None => mean * imbalance,
    }
}

/// The dispatcher's transient copies at an MoE layer, one layer at a time, with the label of the mechanism.
// Inferred from the dispatchers' sequence of copies (memory-settings.md §7): alltoall permutes the local tokens into a
// send buffer, receives T_r tokens and sorts them by expert (≈ 3·T_r·h); allgather gathers the tokens of the whole
// EP·ETP group before masking (ML moe/token_dispatcher.py MoEAllGatherTokenDispatcher); flex leaves the exchange to
// DeepEP / HybridEP buffers and keeps one permuted copy.
pub(crate) fn dispatcher_working_set(m: &ModelConfig, p: &Plan, run: &Run, sh: &Shape) -> (f64, &'static str) {
    let (copy, gathered) = dispatcher_copies(m, p, run, sh);
    match p.training.settings.moe_token_dispatcher_type {
        DispatcherType::Alltoall => (3.0 * copy, "MoE dispatcher working set (alltoall: send, receive and expert-sorted copies)"),
        DispatcherType::Allgather => (gathered + 2.0 * copy, "MoE dispatcher working set (allgather: the EP·ETP group's tokens, then the local copies)"),
        DispatcherType::Flex => (copy, "MoE dispatcher working set (flex: one permuted copy; the exchange runs in library buffers)"),
    }
}

/// The dispatcher's single allocations at an MoE layer, in bytes: one copy of the routed tokens (T_r·h: alltoall's
/// permuted send buffer, its all-to-all output and its expert-sorted copy are each one; flex's permuted copy), and
/// allgather's gather of the EP·ETP group's tokens (local·EP·ETP·h; 0 for the other dispatchers).
// ML megatron/core/transformer/moe/token_dispatcher.py MoEAlltoAllTokenDispatcher: permute (dispatch_preprocess),
// all_to_all (token_dispatch), sort_chunks_by_idxs (dispatch_postprocess); MoEAllGatherTokenDispatcher.token_dispatch:
// gather_from_sequence_parallel_region over the tp_ep group.
pub(crate) fn dispatcher_copies(m: &ModelConfig, p: &Plan, run: &Run, sh: &Shape) -> (f64, f64) {
    // Tokens travel at the expert width (the latent size for a latent MoE; token_dispatcher.py hidden_dim).
    let h = m.expert_width() as f64 * run.act;
    let routed = routed_tokens(m, p, sh);
    let group = (p.parallelism.ep().max(1) * p.parallelism.etp().max(1)) as f64;
    let gathered = if p.training.settings.moe_token_dispatcher_type == DispatcherType::Allgather { sh.local() * group * h } else { 0.0 };
    (routed * h, gathered)
}

/// DeepEP's ranks-and-receive-tokens table, (group size, NVL receive tokens, largest RDMA send chunk), for the
/// normal (high-throughput) kernels.
// deepseek-ai/DeepEP@dd758caf4518:deep_ep/buffers/legacy.py Buffer.get_dispatch_config / get_combine_config (the same
// receive sizes in both; RDMA receive 128 tokens aligned up to the send chunk).
const DEEPEP_CONFIGS: [(u64, f64, f64); 12] = [
    (2, 256.0, 6.0),
    (4, 256.0, 6.0),
    (8, 256.0, 6.0),
    (16, 288.0, 20.0),
    (24, 288.0, 8.0),
    (32, 288.0, 8.0),
    (48, 288.0, 8.0),
    (64, 288.0, 8.0),
    (96, 480.0, 12.0),
    (128, 560.0, 12.0),
    (144, 720.0, 12.0),
    (160, 720.0, 12.0),
];

/// DeepEP's NVLink and RDMA buffers for a group of `ranks` and a hidden size of `h`.
// deepseek-ai/DeepEP csrc/config.hpp Config::get_nvl_buffer_size_hint / get_rdma_buffer_size_hint with Megatron's
// hidden_bytes = h·2 (ML megatron/core/transformer/moe/fused_a2a.py get_hidden_bytes, get_buffer), 20 SMs (DeepEP's
// Buffer.num_sms, Megatron's historical moe_deepep_num_sms) = 10 channels, NVL peers 8, 128 top-k slots (int64 index +
// fp32 weight) and 128 fp32 scales per token, SourceMeta 8 B; the RDMA part doubles each (send + receive) and adds 1 MiB.
fn deepep_bytes(ranks: u64, h: f64) -> f64 {
    let (recv, rdma_send) = DEEPEP_CONFIGS.iter().find(|c| c.0 >= ranks).map_or((720.0, 12.0), |c| (c.1, c.2));
    let channels = 10.0;
    let nvl = ranks.min(8) as f64;
    let rdma = (ranks / 8).max(1) as f64;
    let hidden_bytes = 2.0 * h;
    let per_token = hidden_bytes + 8.0 + 128.0 * 8.0 + 128.0 * 4.0 + 128.0 * 4.0;
    let nvl_bytes = channels * nvl * (2.0 * rdma + 3.0) * 4.0 + channels * nvl * recv * per_token;
    if ranks <= 8 {
        return nvl_bytes;
    }
    let rdma_recv = (128.0 / rdma_send).ceil() * rdma_send;
    let rdma_bytes = channels * rdma * (8.0 * 2.0 + 2.0) * 2.0 * 4.0 + channels * rdma * rdma_recv * 2.0 * (per_token + 16.0) + 1_048_576.0;
    nvl_bytes + rdma_bytes
}

/// The flex dispatcher's library buffers per GPU (outside PyTorch's allocator), with their label; 0 otherwise.
// DeepEP: deepep_bytes above. HybridEP (deepseek-ai/DeepEP deep_ep/hybrid_ep_buffer.py, csrc/hybrid_ep DispatchBuffers /
// CombineBuffers): each rank's expert_output_token buffer holds up to max_num_of_tokens_per_rank tokens from every rank
// of its NVLink domain in the group, in bf16 (token_data_type UINT16), for dispatch and again for combine — inferred
// from the buffer structs, not from HybridEP's allocator.
pub(crate) fn library_buffers(m: &ModelConfig, p: &Plan, sh: &Shape) -> (f64, &'static str) {
    let s = &p.training.settings;
    if !m.is_moe() || s.moe_token_dispatcher_type != DispatcherType::Flex {
        return (0.0, "");
    }
    let group = p.parallelism.ep().max(1) * p.parallelism.etp().max(1);
    if group < 2 {
        return (0.0, "");
    }
    let h = m.hidden_size as f64;
    match s.moe_flex_dispatcher_backend {
        FlexBackend::Deepep => (deepep_bytes(group, h), "DeepEP dispatch/combine buffers (outside the allocator)"),
        FlexBackend::Hybridep => {
            let peers = group.min(p.cluster.nvlink_domain_size.max(1)) as f64;
            (2.0 * sh.local() * peers * h * 2.0, "HybridEP dispatch/combine buffers (outside the allocator)")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::deepep_bytes;

    #[test]
    fn deepep_buffers_by_hand() {
        // EP 4, h 2048: 10 channels · 4 peers · (2·1 + 3) · 4 B = 800; per token 4096 + 8 + 1024 + 512 + 512 = 6152 B;
        // 10 · 4 · 256 · 6152 = 62,996,480 → 62,997,280 B, NVLink only.
        assert_eq!(deepep_bytes(4, 2048.0), 62_997_280.0);
        // EP 16, h 7168: NVL 10 · 8 · (2·2 + 3) · 4 = 2,240 + 10 · 8 · 288 · (14,336 + 2,056) = 377,671,680;
        // RDMA: receive 128 aligned to send 20 = 140; 10 · 2 · 18 · 2 · 4 = 2,880 + 10 · 2 · 140 · 2 · (16,392 + 16)
        // = 91,884,800 + 1,048,576 → 470,609,920 B in all.
        assert_eq!(deepep_bytes(16, 7168.0), 2_240.0 + 377_671_680.0 + 2_880.0 + 91_884_800.0 + 1_048_576.0);
    }
}
