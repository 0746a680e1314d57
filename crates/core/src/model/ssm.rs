//! The state-space mixers: Mamba-2 and Gated DeltaNet. Their sizes with Megatron's defaults, parameters, the tensors
//! they save for backward per local token, and their FLOPs per token.

use super::{LayerParams, ModelConfig};

/// Mamba-2's depthwise convolution width: a `MambaMixer.__init__` argument (`d_conv=4`), not a config field.
// Source: megatron/core/ssm/mamba_mixer.py MambaMixer.__init__ (d_conv: int = 4; expand: int = 2).
pub const MAMBA_D_CONV: u64 = 4;
/// Mamba-2's expansion factor, used for `d_inner = expand · hidden_size` when `mamba_num_heads` is not set.
pub const MAMBA_EXPAND: u64 = 2;

/// One tensor a layer keeps for its backward pass: elements per local token (one of the s·b/CP tokens a CP rank
/// owns) on one GPU, whether it is kept in fp32 rather than the activation dtype, and whether it is a GEMM's input
/// (which Transformer Engine saves quantized in FP8/FP4 layers).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SavedTensor {
    pub name: &'static str,
    pub elements: f64,
    pub fp32: bool,
    pub gemm_input: bool,
}

/// What splits a layer's saved tensors on one GPU.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Split {
    pub tp: f64,
    /// The sequence-parallel divisor: TP with `sequence_parallel`, else 1.
    pub sp: f64,
    pub cp: f64,
}

fn saved(name: &'static str, elements: f64) -> SavedTensor {
    SavedTensor { name, elements, fp32: false, gemm_input: false }
}

fn gemm_input(name: &'static str, elements: f64) -> SavedTensor {
    SavedTensor { name, elements, fp32: false, gemm_input: true }
}

fn fp32(name: &'static str, elements: f64) -> SavedTensor {
    SavedTensor { name, elements, fp32: true, gemm_input: false }
}

impl ModelConfig {
    /// `mamba_state_dim` (N), default 128.
    // Source: megatron/core/transformer/transformer_config.py (mamba_state_dim = 128, mamba_head_dim = 64,
    // mamba_num_groups = 8, mamba_num_heads = None).
    pub fn mamba_state(&self) -> u64 {
        self.mamba_state_dim.unwrap_or(128)
    }
    /// `mamba_head_dim` (P), default 64.
    pub fn mamba_head(&self) -> u64 {
        self.mamba_head_dim.unwrap_or(64).max(1)
    }
    /// `mamba_num_groups` (G), default 8.
    pub fn mamba_groups(&self) -> u64 {
        self.mamba_num_groups.unwrap_or(8)
    }
    /// `mamba_num_heads` (H); without it, `d_inner / P` with `d_inner = int(expand · hidden_size)`.
    // Source: mamba_mixer.py l.245–250: d_inner = nheads · headdim if mamba_num_heads is set, else expand · d_model.
    pub fn mamba_heads(&self) -> u64 {
        self.mamba_num_heads.unwrap_or(MAMBA_EXPAND.saturating_mul(self.hidden_size) / self.mamba_head())
    }
    /// `d_inner` = H · P.
    pub fn mamba_inner(&self) -> u64 {
        self.mamba_heads().saturating_mul(self.mamba_head())
    }

    /// Parameters of a Mamba-2 mixer with its pre-norm (fused into in_proj). All but the norm split over TP; CP keeps
    /// every parameter on each rank.
    // Source: megatron/core/ssm/mamba_mixer.py MambaMixer.__init__ l.174–472: in_proj h × (2d + 2GN + H) for z, x, B, C,
    // dt (TELayerNormColumnParallelLinear, no bias); conv1d over x, B, C, (d + 2GN) × d_conv plus bias; dt_bias, A_log,
    // D (H each); gated RMSNorm weight d; out_proj d × h (TERowParallelLinear, no bias).
    pub fn mamba_params(&self) -> LayerParams {
        let h = self.hidden_size as u128;
        let (d, gn, heads) = (self.mamba_inner() as u128, self.mamba_groups() as u128 * self.mamba_state() as u128, self.mamba_heads() as u128);
        let conv_channels = d + 2 * gn;
        LayerParams {
            tp_sharded: h * (2 * d + 2 * gn + heads) + conv_channels * (MAMBA_D_CONV as u128 + 1) + 3 * heads + d + d * h,
            replicated: self.norm_params(self.hidden_size),
            ..Default::default()
        }
    }

    /// Tensors a Mamba-2 layer saves for backward, per local token.
    // Inferred from mamba_ssm's MambaSplitConv1dScanCombinedFn.forward `ctx.save_for_backward(zxbcdt, conv1d_weight,
    // conv1d_bias, out_x, A, D, dt_bias, …)` (called from mamba_mixer.py _ssm_training), the LN-fused in_proj (input
    // and norm output, sequence-sharded under SP), the gated RMSNorm (input, rstd) and out_proj (input). After the CP
    // all-to-all each rank holds H/(TP·CP) heads of the whole sequence, i.e. dims/TP per local token; with fewer B/C
    // groups than TP·CP ranks each rank holds one whole group (mamba_context_parallel.py group_repeat_count).
    pub fn mamba_saved(&self, s: Split) -> [SavedTensor; 7] {
        let h = self.hidden_size as f64;
        let (d, heads, groups, n) = (self.mamba_inner() as f64, self.mamba_heads() as f64, self.mamba_groups() as f64, self.mamba_state() as f64);
        let groups_per_rank = (groups / (s.tp * s.cp)).max(1.0) * s.cp;
        [
            saved("in_proj layernorm input", h / s.sp),
            gemm_input("in_proj input (layernorm output)", h / s.sp),
            saved("zxBCdt (in_proj output)", (2.0 * d + heads) / s.tp + 2.0 * n * groups_per_rank),
            saved("scan output", d / s.tp),
            saved("gated norm input", d / s.tp),
            gemm_input("out_proj input", d / s.tp),
            fp32("gated norm rstd", groups_per_rank),
        ]
    }

    /// Forward FLOPs per token of a Mamba-2 mixer: (GEMMs, scan). Megatron's counter takes d_inner = 2h; meshplan
    /// takes H · P, which is what the layer builds.
    // Source: megatron/training/training.py mamba_layer_flops l.885–905: 2·h·(2d + 2GN + H) (in_proj) + 7·d·N (SSD
    // scan) + 2·d·h (out_proj) per token, forward.
    pub fn mamba_flops(&self) -> (f64, f64) {
        let h = self.hidden_size as f64;
        let (d, gn, heads) = (self.mamba_inner() as f64, self.mamba_groups() as f64 * self.mamba_state() as f64, self.mamba_heads() as f64);
        (2.0 * h * (2.0 * d + 2.0 * gn + heads) + 2.0 * d * h, 7.0 * d * self.mamba_state() as f64)
    }

    /// `linear_key_head_dim` (dk), `linear_value_head_dim` (dv), `linear_num_key_heads` (Hk), `linear_num_value_heads`
    /// (Hv), `linear_conv_kernel_dim` (K), with Megatron's defaults 128, 128, 16, 32, 4.
    // Source: megatron/core/transformer/transformer_config.py (Gated DeltaNet fields and defaults).
    pub fn gdn_dims(&self) -> (u64, u64, u64, u64, u64) {
        (
            self.linear_key_head_dim.unwrap_or(128),
            self.linear_value_head_dim.unwrap_or(128),
            self.linear_num_key_heads.unwrap_or(16),
            self.linear_num_value_heads.unwrap_or(32),
            self.linear_conv_kernel_dim.unwrap_or(4),
        )
    }

    /// Parameters of a Gated DeltaNet mixer with its pre-norm (fused into in_proj).
    // Source: megatron/core/ssm/gated_delta_net/common.py _GDNBase.__init__ l.113–285: in_proj h × (2qk + 2v + 2Hv)
    // for q, k, v, z, β, α (column-parallel); depthwise conv1d over q, k, v, (2qk + v) × K, no bias; dt_bias and
    // A_log (Hv each); out_norm TENorm(dv) shared by the heads (replicated); out_proj v × h (row-parallel).
    pub fn gdn_params(&self) -> LayerParams {
        let h = self.hidden_size as u128;
        let (dk, dv, hk, hv, k) = self.gdn_dims();
        let (qk, v, hv) = (dk as u128 * hk as u128, dv as u128 * hv as u128, hv as u128);
        LayerParams {
            tp_sharded: h * (2 * qk + 2 * v + 2 * hv) + k as u128 * (2 * qk + v) + 2 * hv + v * h,
            replicated: self.norm_params(self.hidden_size) + self.norm_params(dv),
            ..Default::default()
        }
    }

    /// Tensors a Gated DeltaNet layer saves for backward, per local token (heads split over TP, then over CP by an
    /// all-to-all, so dims/TP per local token).
    // Inferred (an estimate): the LN-fused in_proj (input, norm output), the projection output kept by the conv and the
    // z gate, the conv output, q and k after L2 norm repeated to Hv heads (common.py
    // _prepare_input_for_gated_delta_rule), v, g (fp32) and β, and what fla's ChunkGatedDeltaRuleFunction.forward saves
    // (`ctx.save_for_backward(q, q_rstd, k, k_rstd, v, g, beta, A, …)`, A of chunk size 64 per head, counted in the
    // activation dtype), the kernel output and the gated norm's output (out_proj input).
    pub fn gdn_saved(&self, s: Split) -> [SavedTensor; 11] {
        let h = self.hidden_size as f64;
        let (dk, dv, hk, hv, _) = self.gdn_dims();
        let (dk, hv) = (dk as f64, hv as f64);
        let (qk, v) = (dk * hk as f64, dv as f64 * hv);
        [
            saved("in_proj layernorm input", h / s.sp),
            gemm_input("in_proj input (layernorm output)", h / s.sp),
            saved("qkvzba (in_proj output)", (2.0 * qk + 2.0 * v + 2.0 * hv) / s.tp),
            saved("conv output", (2.0 * qk + v) / s.tp),
            saved("q, k normalised, repeated to the value heads", 2.0 * hv * dk / s.tp),
            saved("v", v / s.tp),
            fp32("g", hv / s.tp),
            saved("beta", hv / s.tp),
            saved("chunk A (64 per head)", 64.0 * hv / s.tp),
            saved("kernel output (gated norm input)", v / s.tp),
            gemm_input("out_proj input (gated norm output)", v / s.tp),
        ]
    }

    /// Forward FLOPs per token of a Gated DeltaNet mixer: (GEMMs, conv and recurrence).
    // Source: megatron/training/training.py gdn_layer_flops l.938–962: 2·[h·(2qk + 2v + 2Hv) + K·(2qk + v) + 4·Hv·dv² +
    // h·v] per token, forward.
    pub fn gdn_flops(&self) -> (f64, f64) {
        let h = self.hidden_size as f64;
        let (dk, dv, hk, hv, k) = self.gdn_dims();
        let (qk, v, hv, dv, k) = (dk as f64 * hk as f64, dv as f64 * hv as f64, hv as f64, dv as f64, k as f64);
        (2.0 * (h * (2.0 * qk + 2.0 * v + 2.0 * hv) + h * v), 2.0 * (k * (2.0 * qk + v) + 4.0 * hv * dv * dv))
    }
}
