//! Memory fit (the memory model against the GPU) and topology (groups leaving the NVLink domain, seed "Decision by
//! Hardware Topology").

use super::*;

/// Four nodes of 4 GPUs: NVLink domains of 4 (the default domain is the node's GPUs on an HGX board).
fn domains_of_4(model: Value, edits: &[(&str, Value)]) -> Probe {
    probe(model, &[&[(PER_NODE, json!(4)), (NODES, json!(4))], edits].concat())
}

/// Llama-3.1-8B on 8 H100 80GB at TP 1, PP 4, VPP 4, DP 2, MBS 1, GBS 128, no recompute, distributed optimizer — the
/// plan whose memory search.rs `llama_8b_pp4_vpp4_fits_once_logits_count_once` works out by hand at seq 8192.
// The gradient buffer stated fp32 (the sums below count 4 B per gradient), not left to the perf recipe's bf16.
fn llama_8b_pp4_vpp4(seq: u64) -> Probe {
    probe(json!("llama-3.1-8b"), &[(PP, json!(4)), (VPP, json!(4)), (GBS, json!(128)), (RECOMPUTE, json!("none")), (SEQ, json!(seq)),
                                   ("training.grad_reduce_in_fp32", json!(true))])
}

/// The dense model with the whole optimizer shard offloaded (Bridge semantics: precision-aware optimizer off) on nodes
/// of `host_gib` GiB host memory.
fn offloaded(host_gib: u64) -> Probe {
    probe(dense(), &[
        ("training.optimizer_cpu_offload", json!(true)),
        ("training.optimizer_offload_fraction", json!(1.0)),
        ("cluster.host_memory_per_node_gb", json!(host_gib)),
    ])
}

/// Llama 3.1 8B in FP8 on 8 nodes of 8 H100, TP 1, PP 1, seq 8192, MBS 1, GBS 512, with Megatron-Core's plain defaults
/// and the H100 perf recipe's memory settings stated (distributed optimizer, full recompute of 5 layers per block:
/// perf_recipes/llama/h100/llama3.py), all but its bf16 gradient buffer.
fn plain_llama_8b_fp8(edits: &[(&str, Value)]) -> Probe {
    let plan = json!({"model": "llama-3.1-8b", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 8},
                      "training": {"seq_length": 8192, "global_batch_size": 512, "micro_batch_size": 1, "precision": "fp8",
                                   "use_distributed_optimizer": true, "recompute_granularity": "full",
                                   "recompute_method": "block", "recompute_num_layers": 5},
                      "defaults": "megatron-core"});
    Probe::Plan(set(&plan, edits))
}

pub fn cases() -> Vec<Case> {
    vec![
        // The dense model on 8 GPUs (TP 1, DP 8, selective recompute, seq t = 4096): one microbatch's activations per
        // layer are attention 2·t·h + t·(2048 + 2·1024) + t·2048 = 41,943,040 el = 83,886,080 B, MLP norms 2·t·h·2 =
        // 33,554,432 B, fc1 + SwiGLU out t·16896·2 = 138,412,032 B → 255,852,544 B; 16 layers 4,093,640,704 B, and the
        // output side (final norm 33,554,432 + logits and fp32 softmax t·32000·6 = 786,432,000) → 4,913,627,136 B.
        // MBS 16 (PP 1: one microbatch in flight): 78,618,034,176 B of activations plus 829,034,496 parameters ·
        // 7.5 B (2 + 4 + 12/8) = 6,217,758,720 B already pass 80 GiB = 85,899,345,920 B, before any overhead.
        // MBS 8: 39,309,017,088 + 6,217,758,720 + the LSE recompute working set + 1 GiB context + 128 MiB NCCL +
        // 5.825% fragmentation: fits (sums below).
        case("out-of-memory", Kind::Error, probe(dense(), &[(MBS, json!(16))]), probe(dense(), &[(MBS, json!(8))])),
        // Llama 3.1 8B in FP8 on 64 H100 (TP 1, PP 1, seq 8192, MBS 1) with plain defaults and the H100 perf recipe's
        // distributed optimizer and full recompute stated: the gradient buffer is assumed fp32 (Bridge's fp8
        // recipes: grad_reduce_in_fp32 = True) and stage 0 does not fit in 80 GiB; the parameter dtype instead saves
        // 8,030,261,248 × 2 B = 14.96 GiB, × 1.05825 with fragmentation = 15.83 GiB, and it fits: the verdict names
        // grad_reduce_in_fp32. Stated false, nothing is assumed of it and the plan fits.
        case("out-of-memory-assumed", Kind::Warning, plain_llama_8b_fp8(&[]), plain_llama_8b_fp8(&[("training.grad_reduce_in_fp32", json!(false))]))
            .fix(&[("training.grad_reduce_in_fp32", json!(false))]),
        // Stage 0 of llama_8b_pp4_vpp4 holds 8 layers at 139,392 B per token and layer (1,141,899,264 B at 8192) for
        // 4.75 stage-microbatches. At seq 8704: 139,392·8704·8·4.75 = 46,104,182,784 B; model state 27,242,790,912 B;
        // allocated 73,346,973,696 B; fragmentation 5.825% of it 4,272,461,217 B, 1 GiB context, 2·128 MiB NCCL →
        // 78,961,612,193 B = 91.9% of 80 GiB: 8.1% free, under 10%. At seq 8192 (43,392,172,032 B of activations) the
        // same sums give 76,091,626,815 B = 88.6%: 11.4% free.
        case("low-memory-headroom", Kind::Warning, llama_8b_pp4_vpp4(8704), llama_8b_pp4_vpp4(8192)),
        // The dense model holds 829,034,496 parameters per GPU (16 layers of 47,194,112 — QKV 2048·4096, proj 2048²,
        // SwiGLU 3·2048·5632, two LayerNorms 4·2048 — the tied embedding 32000·2048, a learned position table of
        // seq_length 4096 rows ·2048, the final LayerNorm 4096). DP 8 shards the optimizer: 103,629,312 elements per
        // GPU, each 16 B on the host when offloaded (fp32 master, fp32 moments, fp32 grad: hybrid_optimizer.py) =
        // 1,658,068,992 B; 8 GPUs per node: 13,264,551,936 B = 12.35 GiB. A 12 GiB node (12,884,901,888 B) is short;
        // 13 GiB holds it. The fix offloads 0.9 of the shard (⌊10 · 12/12.35⌋/10): 11,938,096,742 B, which fits.
        case("host-memory-exceeded", Kind::Warning, offloaded(12), offloaded(13)).fix(&[("training.optimizer_offload_fraction", json!(0.9))]),
        // TP 8 in domains of 4: each TP group [8k, 8k+8) spans 2 domains. The fix is the TP nearest 8 that divides the
        // domain and the widths: 4, whose groups [4k, 4k+4) sit in one domain each.
        case("tp-crosses-nvlink", Kind::Warning, domains_of_4(dense(), &[(TP, json!(8))]), domains_of_4(dense(), &[(TP, json!(4))])).fix(&[(TP, json!(4))]),
        // EP 8 (ETP 1): the expert mesh puts EP at stride ETP = 1, so each EP group is 8 consecutive ranks: 2 domains.
        // EP 4: 4 consecutive ranks, one domain.
        case("ep-crosses-nvlink", Kind::Warning, domains_of_4(moe(), &[(EP, json!(8))]), domains_of_4(moe(), &[(EP, json!(4))])),
        // ETP 8 (EP 1, TP 1) on 8 GPUs: the expert mesh puts ETP at stride 1, ranks 0–7: 2 domains of 4. The fix: the
        // divisor of moe_ffn_hidden_size 512 nearest 8 that divides the domain (4) and 8/(PP·EP) = 8: 1, 2, 4 → 4.
        case("etp-crosses-nvlink", Kind::Warning, domains_of_4(moe(), &[(ETP, json!(8))]), domains_of_4(moe(), &[(ETP, json!(4))]))
            .fix(&[(ETP, json!(4))]),
        // CP 8 at TP 1: CP groups are 8 consecutive ranks (stride TP = 1): 2 domains (an info). CP 4: one domain.
        case("cp-crosses-nvlink", Kind::Info, domains_of_4(dense(), &[(CP, json!(8))]), domains_of_4(dense(), &[(CP, json!(4))])),
    ]
}

/// The peaks the two memory cases rest on, summed by hand (the comments above give the parts).
#[test]
fn memory_cases_peak_where_worked_out() {
    let peak = |probe: Probe| match probe {
        Probe::Plan(v) => meshplan_core::plan_value(&v).map(|r| r.memory.peak_bytes).ok(),
        _ => None,
    };
    // MBS 16: allocated 78,618,034,176 + 6,217,758,720 + the core_attn recompute working set (one layer's fp32 LSE,
    // 16·4096 tokens · 16 heads · 4 B = 4,194,304) = 84,839,987,200; + 5.825% fragmentation 4,941,929,254 (rounded
    // down) + 1,073,741,824 + 134,217,728.
    assert_eq!(peak(probe(dense(), &[(MBS, json!(16))])), Some(90_989_876_006));
    // MBS 8: 39,309,017,088 + 6,217,758,720 + 2,097,152 = 45,528,872,960; + 2,652,056,849 + 1,073,741,824 + 134,217,728.
    assert_eq!(peak(probe(dense(), &[(MBS, json!(8))])), Some(49_388_889_361));
    assert_eq!(peak(llama_8b_pp4_vpp4(8704)), Some(78_961_612_193));
    assert_eq!(peak(llama_8b_pp4_vpp4(8192)), Some(76_091_626_815));
}

#[test]
fn codes() {
    run(cases());
}
