//! Step-time and MFU estimate: model FLOPs as Megatron counts them, an achieved GEMM rate, the exposed part of each
//! parallel group's communication, the pipeline bubble and the optimizer step.
//!
//! Pure, deterministic, allocation-free and panic-free. The few free constants are fitted by
//! `cargo run --release -p meshplan-core --example calibrate` on published runs and embedded from
//! `data/perf_constants.json` (see docs/calibration.md).
//!
//! Conventions: `model_tflops_per_gpu` counts model FLOPs only (no recompute), as Megatron's reported TFLOP/s does;
//! `mfu` is that rate over the dense (no-sparsity) peak of the precision trained in (BF16 peak for bf16/fp16, FP8
//! peak for fp8, FP4 peak for fp4). Breakdown terms are the time each adds to the step (communication: the exposed,
//! non-overlapped part), so they sum to `step_time_s`.

use crate::plan::{Plan, Precision, Recompute, RecomputeMethod};
use crate::derive::Derived;
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Breakdown {
    pub compute_s: f64,
    pub recompute_s: f64,
    pub tp_comm_s: f64,
    pub cp_comm_s: f64,
    pub ep_comm_s: f64,
    pub pp_comm_s: f64,
    pub dp_comm_s: f64,
    pub bubble_s: f64,
    pub optimizer_s: f64,
}

/// The breakdown's terms in display order; communication terms are the exposed share.
pub const BREAKDOWN_TERMS: [&str; 9] = ["compute", "recompute", "TP comm", "CP comm", "EP comm", "PP comm", "DP comm", "bubble", "optimizer"];

impl Breakdown {
    /// Every term with its label from [`BREAKDOWN_TERMS`], in seconds; they sum to the step time.
    pub fn terms(&self) -> [(&'static str, f64); 9] {
        let t = [
            self.compute_s,
            self.recompute_s,
            self.tp_comm_s,
            self.cp_comm_s,
            self.ep_comm_s,
            self.pp_comm_s,
            self.dp_comm_s,
            self.bubble_s,
            self.optimizer_s,
        ];
        std::array::from_fn(|i| (BREAKDOWN_TERMS[i], t[i]))
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Performance {
    pub step_time_s: f64,
    pub tokens_per_s_per_gpu: f64,
    pub model_tflops_per_gpu: f64,
    pub mfu: f64,
    pub breakdown: Breakdown,
    pub model_flops_per_step: f64,
    pub gpu_hours_per_trillion_tokens: f64,
}

/// The fitted constants (data/perf_constants.json).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Constants {
    /// Achieved fraction of the dense BF16 peak for large GEMMs.
    pub bf16_efficiency: f64,
    /// Achieved fraction of the dense FP8/FP4 peak for large GEMMs (scaling, casts and amax reduce cost more).
    pub fp8_efficiency: f64,
    /// Per-GPU GEMM width (hidden / TP) at which the efficiency halves: eff · w / (w + w0).
    pub gemm_width_half: f64,
    /// Extra efficiency factor for MoE expert GEMMs (grouped GEMMs, routing, permutation).
    pub moe_efficiency: f64,
    /// Fraction of link bandwidth collectives achieve.
    pub bandwidth_efficiency: f64,
    /// Exposed fraction of TP/SP collectives inside the NVLink domain (tp-comm-overlap hides the rest; across it: 1).
    pub tp_exposed: f64,
    /// Exposed fraction of the CP ring KV exchange (overlapped with attention of the previous chunk).
    pub cp_exposed: f64,
    /// Exposed fraction of EP all-to-all.
    pub ep_exposed: f64,
    /// Exposed fraction of DP gradient reduce-scatter / param all-gather (overlap-grad-reduce/param-gather).
    pub dp_exposed: f64,
    /// Fixed per-step overhead in seconds (data loading, logging, launch latency).
    pub step_overhead_s: f64,
}

/// Values used when the embedded file cannot be read (tests check it can).
pub const DEFAULT_CONSTANTS: Constants = Constants {
    bf16_efficiency: 0.65,
    fp8_efficiency: 0.45,
    gemm_width_half: 256.0,
    moe_efficiency: 0.7,
    bandwidth_efficiency: 0.7,
    tp_exposed: 0.3,
    cp_exposed: 0.2,
    ep_exposed: 0.7,
    dp_exposed: 0.1,
    step_overhead_s: 0.0,
};

#[derive(Deserialize)]
struct ConstantsFile {
    constants: Constants,
}

static CONSTANTS: OnceLock<Constants> = OnceLock::new();

/// The embedded, fitted constants.
pub fn constants() -> &'static Constants {
    CONSTANTS.get_or_init(|| {
        serde_json::from_str::<ConstantsFile>(include_str!("../data/perf_constants.json"))
            .map(|f| f.constants)
            .unwrap_or(DEFAULT_CONSTANTS)
    })
}

/// FLOPs by kind, per global batch.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FlopSplit {
    /// Dense transformer GEMMs: attention projections, dense MLPs, shared experts, MTP projections.
    pub dense_gemm: f64,
    /// Routed-expert GEMMs.
    pub expert_gemm: f64,
    /// Attention scores and values (S² term); run in BF16 by FlashAttention / cuDNN even under FP8.
    pub attention_core: f64,
    /// Output-layer logits (kept in BF16 by Transformer Engine recipes).
    pub logits: f64,
}

impl FlopSplit {
    pub fn total(&self) -> f64 {
        self.dense_gemm + self.expert_gemm + self.attention_core + self.logits
    }
}

/// Model FLOPs of one global batch, split by kind.
// Source: megatron/training/training.py `num_floating_point_operations` / `transformer_flops()`
// (research notes megatron-rules.md §3.1): T = B·s tokens, S₂ = B·s², factor 6 = 3 (fwd+bwd) × 2 (FMA).
pub fn flop_split(plan: &Plan, derived: &Derived) -> FlopSplit {
    let m = &plan.model;
    let s = plan.training.seq_length as f64;
    let b = derived.global_batch_size as f64;
    let t = b * s; // total_real_tokens_in_batch default
    let s2 = b * s * s; // seqlen_squared_sum_in_batch default
    let h = m.hidden_size as f64;
    let a = m.num_attention_heads as f64;
    // r = 3 for SwiGLU (gate, up, down), 2 otherwise.
    let r = if m.gated_linear_unit { 3.0 } else { 2.0 };
    let d = m.mtp_num_layers as f64;
    let n_moe_decoder = m.num_moe_layers() as f64;
    // MTP layers copy the last decoder layer's MLP kind.
    let last_moe = m.num_layers > 0 && m.layer_is_moe(m.num_layers - 1);
    let n_moe = n_moe_decoder + if last_moe { d } else { 0.0 };
    let n_dense = (m.num_layers as f64 - n_moe_decoder) + if last_moe { 0.0 } else { d };
    let n_attn = m.num_layers as f64 + d;
    let f = m.ffn_hidden_size as f64;
    let fe = m.moe_ffn() as f64;
    let k = if m.is_moe() { m.moe_router_topk as f64 } else { 0.0 };
    let fs = m.moe_shared_expert_intermediate_size.unwrap_or(0) as f64;
    // A_lin: token-linear attention projections; A_core: per-token² scores, /2 causal, ×2 for QKᵀ and PV.
    let (a_lin, a_core) = if m.multi_latent_attention {
        let qk = (m.qk_head_dim + m.qk_pos_emb_head_dim) as f64;
        let q_term = match m.q_lora_rank {
            None => h * a * qk,
            Some(ql) => ql as f64 * (h + a * qk + 1.0),
        };
        let kvl = m.kv_lora_rank as f64;
        let lin = 6.0
            * (q_term
                + kvl * (h + a * (m.qk_head_dim + m.v_head_dim) as f64 + 1.0)
                + h * m.qk_pos_emb_head_dim as f64
                + a * m.v_head_dim as f64 * h);
        let core = 6.0 * (a * qk / 2.0 + a * m.v_head_dim as f64 / 2.0);
        (lin, core)
    } else {
        let q = m.kv_channels as f64 * a;
        let kv = m.kv_channels as f64 * m.num_query_groups as f64;
        (6.0 * (h * (q + 2.0 * kv) + q * h), 6.0 * q)
    };
    let v = derived.padded_vocab_size as f64;
    FlopSplit {
        dense_gemm: t * (6.0 * h * (f * r * n_dense + fs * r * n_moe) + a_lin * n_attn + 6.0 * d * (3.0 * h + 2.0 * h * h)),
        expert_gemm: t * 6.0 * h * fe * k * r * n_moe,
        attention_core: s2 * a_core * n_attn,
        // logits: the final head plus one per MTP depth.
        logits: t * 6.0 * h * v * (d + 1.0),
    }
}

/// Model FLOPs per step (one global batch) as Megatron's reported TFLOP/s counts them.
pub fn model_flops_per_step(plan: &Plan, derived: &Derived) -> f64 {
    flop_split(plan, derived).total()
}

/// Dense peak FLOP/s of the precision trained in, and of BF16.
fn peaks(plan: &Plan) -> (f64, f64) {
    let g = &plan.gpu;
    let bf16 = g.dense_bf16_tflops.max(0.0) * 1e12;
    let p = match plan.training.settings.precision {
        // TF32 tensor cores run at half the BF16 rate.
        Precision::Fp32 => bf16 / 2.0,
        Precision::Fp16 | Precision::Bf16 => bf16,
        Precision::Fp8 => g.dense_fp8_tflops.map_or(bf16, |x| x * 1e12),
        Precision::Fp4 => g.dense_fp4_tflops.or(g.dense_fp8_tflops).map_or(bf16, |x| x * 1e12),
    };
    (p, bf16)
}

/// Whether a group of `size` ranks, `stride` apart, fits in one NVLink domain of contiguous ranks.
fn fits_domain(stride: u64, size: u64, domain: u64) -> bool {
    size <= 1 || stride.saturating_mul(size) <= domain.max(1)
}

/// Strides of tp, cp, ep, dp, pp in the dense rank order (EP counts as 1 there) and etp, ep, edp in the expert order.
// Source: megatron/core/parallel_state.py RankGenerator: the first dimension in `order` varies fastest;
// the expert grid uses the same order with cp dropped and tp replaced by etp.
fn strides(plan: &Plan, derived: &Derived) -> ([u64; 5], [u64; 3]) {
    let par = &plan.parallelism;
    let mut dense = [1u64; 5]; // tp, cp, ep(unused), dp, pp
    let mut expert = [1u64; 3]; // etp, ep, edp
    let (mut sd, mut se) = (1u64, 1u64);
    for token in par.order.split('-') {
        match token {
            "tp" => {
                dense[0] = sd;
                sd = sd.saturating_mul(par.tp());
                expert[0] = se;
                se = se.saturating_mul(par.etp());
            }
            "cp" => {
                dense[1] = sd;
                sd = sd.saturating_mul(par.cp());
            }
            "ep" => {
                expert[1] = se;
                se = se.saturating_mul(par.ep());
            }
            "dp" => {
                dense[3] = sd;
                sd = sd.saturating_mul(derived.data_parallel_size.max(1));
                expert[2] = se;
                se = se.saturating_mul(derived.expert_data_parallel_size.max(1));
            }
            "pp" => {
                dense[4] = sd;
                sd = sd.saturating_mul(par.pp());
            }
            _ => {}
        }
    }
    (dense, expert)
}

/// Step-time estimate with the embedded constants.
pub fn estimate(plan: &Plan, derived: &Derived) -> Performance {
    estimate_with(plan, derived, constants())
}

fn finite(x: f64) -> f64 {
    if x.is_finite() { x } else { 0.0 }
}

/// Step-time estimate with given constants (the calibration fits them).
pub fn estimate_with(plan: &Plan, derived: &Derived, c: &Constants) -> Performance {
    let par = &plan.parallelism;
    let m = &plan.model;
    let tr = &plan.training;
    let world = derived.world_size.max(1) as f64;
    let (tp, pp, cp, ep, etp) = (par.tp() as f64, par.pp() as f64, par.cp() as f64, par.ep() as f64, par.etp() as f64);
    let vpp = par.vpp() as f64;
    let dp = derived.data_parallel_size.max(1) as f64;
    let edp = derived.expert_data_parallel_size.max(1) as f64;
    let mb = derived.num_microbatches.max(1) as f64;
    let s = tr.seq_length as f64;
    let b = tr.micro_batch_size as f64;
    let h = m.hidden_size as f64;
    let layers = m.num_layers as f64 + m.mtp_num_layers as f64;
    let moe_layers = m.num_moe_layers() as f64;

    // --- compute -------------------------------------------------------------------------------------------
    let fl = flop_split(plan, derived);
    let model_flops = fl.total();
    let (peak, bf16_peak) = peaks(plan);
    let low_precision = matches!(tr.settings.precision, Precision::Fp8 | Precision::Fp4);
    // Achieved rate: peak × fitted efficiency × w/(w+w0), w = per-GPU GEMM width after TP (narrow GEMMs run slower).
    let width = |w: f64| w / (w + c.gemm_width_half.max(0.0));
    let eff_hi = c.bf16_efficiency * width(h / tp);
    let eff_lo = if low_precision { c.fp8_efficiency * width(h / tp) } else { eff_hi };
    let gemm_rate = (peak * eff_lo).max(1.0);
    let bf16_rate = (bf16_peak * eff_hi).max(1.0);
    let expert_rate = (peak * if low_precision { c.fp8_efficiency } else { c.bf16_efficiency } * width(m.moe_ffn() as f64 / etp)
        * c.moe_efficiency)
        .max(1.0);
    // Every GPU does 1/W of the batch's FLOPs (stages balanced; TP/CP/EP shard the work evenly).
    let t_dense = fl.dense_gemm / gemm_rate / world;
    let t_expert = fl.expert_gemm / expert_rate / world;
    let t_core = fl.attention_core / bf16_rate / world;
    let t_logits = fl.logits / bf16_rate / world;
    let compute_s = t_dense + t_expert + t_core + t_logits;
    // Forward is 1/3 of fwd+bwd: full recompute re-runs the forward of the recomputed layers (×4/3 on the layers);
    // selective recomputes the attention core only (Korthikanti 2022 §5).
    let layer_time = t_dense + t_expert + t_core;
    let recompute_s = match tr.settings.recompute_granularity {
        Recompute::None => 0.0,
        Recompute::Selective => t_core / 3.0,
        Recompute::Full => {
            let per_chunk = (m.num_layers as f64 / (pp * vpp)).max(1.0);
            let share = match (tr.settings.recompute_method, tr.settings.recompute_num_layers) {
                (Some(RecomputeMethod::Block), Some(n)) => (n as f64 / per_chunk).min(1.0),
                _ => 1.0,
            };
            layer_time / 3.0 * share
        }
    };
    let fwd_passes = if tr.settings.recompute_granularity == Recompute::Full { 3.0 } else { 2.0 }; // fwd(+refwd) + bwd

    // --- communication ------------------------------------------------------------------------------------
    let domain = plan.cluster.nvlink_domain_size;
    let up_bw = plan.gpu.scale_up_bw_gbps.unwrap_or(150.0) * 1e9 * c.bandwidth_efficiency; // GB/s per direction
    let out_bw = plan.gpu.scale_out_gbit_per_gpu.unwrap_or(200.0) / 8.0 * 1e9 * c.bandwidth_efficiency; // Gb/s → B/s
    let (ds, es) = strides(plan, derived);
    let bw = |stride: u64, size: f64| if fits_domain(stride, size as u64, domain) { up_bw } else { out_bw };
    let act_bytes = 2.0; // BF16 activations
    let ring = |n: f64| if n > 1.0 { (n - 1.0) / n } else { 0.0 };
    let layers_per_gpu = layers / pp; // all virtual chunks of one stage
    // TP/SP: per layer, attention and MLP each all-gather + reduce-scatter (or all-reduce) the s/cp·b·h activation:
    // ring 2(n−1)/n·bytes/bw, in forward and again in backward (and in the recomputed forward).
    let tp_bytes = s / cp * b * h * act_bytes;
    let tp_blocks = layers_per_gpu * 2.0 - if etp < tp { moe_layers / pp } else { 0.0 };
    let tp_raw = tp_blocks * fwd_passes * 2.0 * ring(tp) * tp_bytes / bw(ds[0], tp) * mb;
    // tp-comm-overlap (Transformer Engine userbuffers) pipelines TP collectives with GEMMs only over NVLink; a TP
    // group that leaves the NVLink domain is fully exposed.
    let tp_comm_s = tp_raw * if fits_domain(ds[0], par.tp(), domain) { c.tp_exposed } else { 1.0 };
    // CP: ring exchange of K and V of the local s/cp chunk, (cp−1) steps, forward; backward also returns dK, dV (×2).
    let kv_width = if m.multi_latent_attention {
        m.num_attention_heads as f64 * (m.qk_head_dim + m.qk_pos_emb_head_dim + m.v_head_dim) as f64
    } else {
        2.0 * m.num_query_groups as f64 * m.kv_channels as f64
    } / tp;
    let cp_raw = if cp > 1.0 {
        layers_per_gpu * (fwd_passes - 1.0 + 2.0) * (cp - 1.0) * (s / cp * b * kv_width * act_bytes) / bw(ds[1], cp) * mb
    } else {
        0.0
    };
    let cp_comm_s = cp_raw * c.cp_exposed;
    // EP: dispatch + combine all-to-all of the rank's tokens × topk × h, forward and backward.
    let ep_tokens = s / cp * b / tp;
    let ep_raw = if ep > 1.0 && m.is_moe() {
        (moe_layers / pp) * fwd_passes * 2.0 * ring(ep) * ep_tokens * m.moe_router_topk as f64 * h * act_bytes
            / bw(es[1], ep)
            * mb
    } else {
        0.0
    };
    let ep_comm_s = ep_raw * c.ep_exposed;
    // PP: each stage boundary sends one s/cp·b·h activation forward and its gradient back per microbatch per chunk
    // (with SP, the TP ranks each send 1/TP of it); not hidden by the 1F1B schedule's compute.
    let pp_comm_s = if pp > 1.0 {
        let bytes = s / cp * b * h * act_bytes / if par.sequence_parallel { tp } else { 1.0 };
        2.0 * vpp * mb * bytes / bw(ds[4], pp)
    } else {
        0.0
    };
    // DP: gradients (FP32 main grads, 4 B) reduce-scatter + BF16 params (2 B) all-gather with the distributed
    // optimizer, else an all-reduce 2(n−1)/n of the gradients; dense parameters over DP·CP, experts over EDP.
    // Routed experts of the decoder layers; everything else (incl. MTP) is dense. Totals as report::derive counted them.
    let expert_total = moe_layers * m.kind_params(true).routed_experts as f64;
    let dense_params = (derived.total_parameters as f64 + derived.mtp_parameters as f64 - expert_total).max(0.0) / (tp * pp);
    let expert_params = expert_total / (ep * etp * pp);
    let dp_dense = dp * cp;
    let dist = tr.settings.use_distributed_optimizer;
    let dp_bytes = |n: f64, params: f64| {
        if dist { ring(n) * params * (4.0 + 2.0) } else { 2.0 * ring(n) * params * 4.0 }
    };
    let dp_raw = dp_bytes(dp_dense, dense_params) / bw(ds[3].min(ds[1]), dp_dense) + dp_bytes(edp, expert_params) / bw(es[2], edp);
    let dp_comm_s = dp_raw * c.dp_exposed;

    // --- pipeline bubble ----------------------------------------------------------------------------------
    // Source: Narayanan 2021 §2.2: bubble = (PP−1)/(VPP·m) of the ideal pipelined time.
    let bubble_frac = crate::pipeline::bubble_fraction(par.pp(), par.vpp(), derived.num_microbatches);
    let bubble_s = bubble_frac * (compute_s + recompute_s + tp_comm_s + cp_comm_s + ep_comm_s);

    // --- optimizer ----------------------------------------------------------------------------------------
    // Adam over the local shard is memory-bound: ~16 B/param (FP32 param, grad, m, v) / HBM bandwidth.
    let shard = (dense_params / if dist { dp_dense } else { 1.0 }) + (expert_params / if dist { edp } else { 1.0 });
    let optimizer_s = shard * 16.0 / (plan.gpu.hbm_bandwidth_tbps.max(0.01) * 1e12);

    let breakdown = Breakdown {
        compute_s: finite(compute_s),
        recompute_s: finite(recompute_s),
        tp_comm_s: finite(tp_comm_s),
        cp_comm_s: finite(cp_comm_s),
        ep_comm_s: finite(ep_comm_s),
        pp_comm_s: finite(pp_comm_s),
        dp_comm_s: finite(dp_comm_s),
        bubble_s: finite(bubble_s),
        optimizer_s: finite(optimizer_s + c.step_overhead_s.max(0.0)),
    };
    let bd = &breakdown;
    let step = bd.compute_s + bd.recompute_s + bd.tp_comm_s + bd.cp_comm_s + bd.ep_comm_s + bd.pp_comm_s + bd.dp_comm_s
        + bd.bubble_s
        + bd.optimizer_s;
    let tokens = derived.tokens_per_step as f64;
    let (tps, tflops, mfu, gpu_h) = if step > 0.0 && step.is_finite() {
        let tps = tokens / step / world;
        let achieved = model_flops / step / world;
        (tps, achieved / 1e12, if peak > 0.0 { achieved / peak } else { 0.0 }, if tps > 0.0 { 1e12 / tps / 3600.0 } else { 0.0 })
    } else {
        (0.0, 0.0, 0.0, 0.0)
    };
    Performance {
        step_time_s: finite(step),
        tokens_per_s_per_gpu: finite(tps),
        model_tflops_per_gpu: finite(tflops),
        mfu: finite(mfu),
        breakdown,
        model_flops_per_step: finite(model_flops),
        gpu_hours_per_trillion_tokens: finite(gpu_h),
    }
}
