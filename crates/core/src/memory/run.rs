//! What the plan's settings make of each byte: element sizes of weights, gradients, optimizer state and saved
//! activations, resolved once per plan from [`crate::settings::Settings`] and the GPU.
//!
//! Sources (cite as repo@commit:path): ML = NVIDIA/Megatron-LM@d98e8a64ddf3, MB = NVIDIA-NeMo/Megatron-Bridge@067f987df03b,
//! TE = NVIDIA/TransformerEngine@d0067d0da6cb; the research note `memory-settings.md` §1–§5 works each buffer out.

use crate::plan::Plan;
use crate::settings::{Fp8Recipe, MainParamsDtype, MomentDtype, Optimizer, Precision, ShardingStrategy};

/// How the weights of the GEMMs in low-precision layers are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WeightStore {
    /// The parameter dtype: no FP8/FP4 (or a layer kept in BF16).
    HighPrecision,
    /// FP8 / FP4 primary weights (`fp8_param_gather` / `fp4_param_gather`): the parameter IS the quantized tensor.
    Primary,
    /// BF16 parameters with one cached quantized copy per module (Transformer Engine's `_fp8_workspaces`).
    Cached,
    /// BF16 parameters re-quantized every microbatch (`disable_parameter_transpose_cache`): one quantized copy per
    /// microbatch in flight, saved for backward.
    PerMicrobatch,
}

/// Where the optimizer step runs for the offloaded share, and which tool's behaviour that is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OffloadPath {
    None,
    /// Precision-aware optimizer on (Megatron-LM requires it): no Megatron-Core fp32 master; HybridDeviceOptimizer
    /// keeps an fp32 copy and fp32 moments of the on-GPU share only.
    MegatronLm,
    /// Precision-aware optimizer off (Bridge does not require it): Megatron-Core's fp32 master shard stays on the GPU;
    /// only the moments of the offloaded share leave.
    Bridge,
}

/// The settings of one plan as they size memory. All byte counts are per element.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Run {
    pub precision: Precision,
    /// The FP8 recipe the GEMMs run (precision fp8 only): the plan's `fp8_recipe`, else the GPU's default.
    pub fp8_recipe: Option<Fp8Recipe>,
    /// The GPU runs non-TN FP8 GEMMs (Blackwell; gpus.json `fp8_gemm_needs_transpose`), so TE keeps no transpose of a
    /// tensorwise FP8 weight.
    pub non_tn_fp8_gemm: bool,
    /// A saved activation that is not a GEMM input (norm inputs, Q/K/V, SwiGLU input): 2 B, 4 B in fp32.
    pub act: f64,
    /// A saved GEMM input in a low-precision layer: FP8 1 B, MXFP8 1 + 1/32 B, NVFP4 0.5 + 1/16 B; else `act`.
    pub gemm_in: f64,
    /// A high-precision parameter: 2 B (bf16 / fp16), 4 B (fp32).
    pub param: f64,
    /// A quantized GEMM weight with the usages TE keeps (rowwise, columnwise, scales).
    pub quant: f64,
    pub store: WeightStore,
    /// The main-gradient buffer.
    pub grad: f64,
    /// Master weights per optimizer-shard element on the GPU (before offload).
    pub master: f64,
    /// Optimizer moments per shard element on the GPU (before offload).
    pub moments: f64,
    /// Bytes per element of the larger single moment tensor (Adam's exp_avg or exp_avg_sq, SGD's momentum): the state
    /// is allocated one tensor per parameter and moment.
    pub moment: f64,
    /// fp32 copies of the grad shard made at the optimizer step.
    pub step_grad_copy: f64,
    /// Share of the optimizer shard offloaded to the host (0 without `optimizer_cpu_offload`).
    pub offload: f64,
    pub offload_path: OffloadPath,
    /// Host bytes per offloaded shard element: fp32 master, fp32 moments, fp32 grad.
    pub host_per_offloaded: f64,
    /// Megatron-FSDP's sharding strategy, when on.
    pub fsdp: Option<ShardingStrategy>,
    /// Whether optimizer state is sharded over data parallelism (distributed optimizer, or FSDP beyond no_shard).
    pub sharded_optimizer: bool,
    pub instances: f64,
    pub precision_aware: bool,
    /// Megatron-Core's `use_precision_aware_optimizer_no_fp8_or_ds_fp8`: TE FusedAdam owns the master weights.
    pub te_master: bool,
    /// Layers kept in BF16 at the start and end of the model (first_last_layers_bf16), under FP8/FP4 only.
    pub bf16_first: u64,
    pub bf16_last: u64,
    /// LoRA (PEFT): the base is frozen; only the adapters carry gradients and optimizer state (memory/peft.rs).
    pub peft: bool,
}

fn moment_bytes(d: MomentDtype) -> f64 {
    match d {
        MomentDtype::Fp32 => 4.0,
        MomentDtype::Fp16 | MomentDtype::Bf16 => 2.0,
        // "fp8" is stored as torch.uint8 (ML megatron/training/arguments.py validate_args dtype_map).
        MomentDtype::Fp8 => 1.0,
    }
}

/// Bytes per GEMM-weight element of a quantized weight with the usages TE keeps after the parameter all-gather.
// TE@d0067d0:transformer_engine/pytorch/tensor/utils.py post_all_gather_processing l.1404-1450: tensorwise / delayed
// keep a transpose only where non-TN FP8 GEMMs are unsupported (Hopper), blockwise always creates the columnwise
// copy, MXFP8 keeps both usages with an E8M0 scale per 32 values each, NVFP4 packs 4-bit rowwise and columnwise data
// with an E4M3 scale per 16 values each.
fn quantized_weight_bytes(precision: Precision, recipe: Option<Fp8Recipe>, non_tn_fp8_gemm: bool) -> f64 {
    match (precision, recipe) {
        (Precision::Fp4, _) => 0.5 + 0.5 + 2.0 / 16.0,
        (Precision::Fp8, Some(Fp8Recipe::Mxfp8)) => 1.0 + 1.0 + 2.0 / 32.0,
        (Precision::Fp8, Some(Fp8Recipe::Blockwise)) => 2.0,
        (Precision::Fp8, _) if non_tn_fp8_gemm => 1.0,
        (Precision::Fp8, _) => 2.0,
        _ => 0.0,
    }
}

/// Bytes of a saved GEMM input in a low-precision layer: the wgrad GEMM keeps only the columnwise usage.
// TE@d0067d0:transformer_engine/pytorch/module/linear.py l.596-621 ("Discard row-wise data since it is not needed in
// backward pass"): FP8 1 B per element, MXFP8 + an E8M0 scale per 32, NVFP4 0.5 B + an E4M3 scale per 16.
fn gemm_input_bytes(precision: Precision, recipe: Option<Fp8Recipe>, act: f64) -> f64 {
    match (precision, recipe) {
        (Precision::Fp4, _) => 0.5 + 1.0 / 16.0,
        (Precision::Fp8, Some(Fp8Recipe::Mxfp8)) => 1.0 + 1.0 / 32.0,
        (Precision::Fp8, _) => 1.0,
        _ => act,
    }
}

impl Run {
    pub fn of(p: &Plan) -> Run {
        let s = &p.training.settings;
        let precision = s.precision;
        let lp = s.low_precision(&p.gpu);
        let low = precision.is_low();
        // The plan's fp8_recipe, else the GPU's (gpus.json), else per-tensor current scaling, which every FP8 GPU runs.
        let fp8_recipe = (precision == Precision::Fp8).then(|| s.fp8_recipe.or(p.gpu.fp8_recipe).unwrap_or(Fp8Recipe::Tensorwise));
        // gpus.json: GPUs before Blackwell keep a transposed FP8 weight for their TN-only FP8 GEMMs.
        let non_tn_fp8_gemm = !p.gpu.fp8_gemm_needs_transpose.unwrap_or(true);
        let act = if precision == Precision::Fp32 { 4.0 } else { 2.0 };
        let param = act;
        let primary = match precision {
            Precision::Fp8 => lp.fp8_param_gather,
            Precision::Fp4 => lp.fp4_param_gather,
            _ => false,
        };
        let store = match (low, primary, s.disable_parameter_transpose_cache) {
            (false, _, _) => WeightStore::HighPrecision,
            (true, true, _) => WeightStore::Primary,
            (true, false, false) => WeightStore::Cached,
            (true, false, true) => WeightStore::PerMicrobatch,
        };
        // ML@d98e8a6:megatron/core/distributed/param_and_grad_buffer.py l.921-924, 1190-1195: grad_dtype = fp32 when
        // grad_reduce_in_fp32, else the parameter dtype (bf16 for FP8/FP4 params, whose "fake" dtype is bf16).
        let grad = if precision == Precision::Fp32 || lp.grad_reduce_in_fp32 { 4.0 } else { param };
        let fsdp = s.use_megatron_fsdp.then_some(s.data_parallel_sharding_strategy);
        let sharded_optimizer = match fsdp {
            Some(ShardingStrategy::NoShard) => false,
            Some(_) => true,
            None => s.use_distributed_optimizer,
        };
        let offload = s.offload_fraction().clamp(0.0, 1.0);
        let adam = s.optimizer == Optimizer::Adam;
        let precision_aware = s.use_precision_aware_optimizer && adam;
        // ML@d98e8a6:megatron/core/optimizer/optimizer_config.py __post_init__: the flag is PA and (main params not
        // fp32, or fp8_recipe None/delayed, or CPU offload). Bridge copies mixed_precision.fp8_recipe (dataclass default
        // "tensorwise", also in bf16 and NVFP4 runs) onto the optimizer config (MB training/mixed_precision.py
        // update_config_with_precision_overrides), so only an explicit "delayed" sets it through the recipe.
        let optimizer_fp8_recipe = fp8_recipe.or(s.fp8_recipe).unwrap_or(Fp8Recipe::Tensorwise);
        let te_master = precision_aware
            && (s.main_params_dtype != MainParamsDtype::Fp32 || optimizer_fp8_recipe == Fp8Recipe::Delayed || s.optimizer_cpu_offload);
        let offload_path = match (s.optimizer_cpu_offload && offload > 0.0, precision_aware) {
            (false, _) => OffloadPath::None,
            (true, true) => OffloadPath::MegatronLm,
            (true, false) => OffloadPath::Bridge,
        };
        let fp32_params = precision == Precision::Fp32;
        let master = if fp32_params {
            // ML distrib_optimizer.py: fp32 params are their own main params (no copy).
            0.0
        } else if offload_path == OffloadPath::MegatronLm {
            // ML@d98e8a6:megatron/core/optimizer/cpu_offloading/hybrid_optimizer.py: param_to_fp32_param, an fp32 copy.
            4.0
        } else if te_master {
            // TE@d0067d0:transformer_engine/pytorch/optimizers/fused_adam.py l.213-215, 414-415: int16 remainders of
            // fp32 master weights over bf16 params with store_param_remainders; else the master dtype.
            match s.main_params_dtype {
                MainParamsDtype::Fp16 => 2.0,
                MainParamsDtype::Fp32 if s.store_param_remainders && precision != Precision::Fp16 => 2.0,
                MainParamsDtype::Fp32 => 4.0,
            }
        } else {
            // ML@d98e8a6:megatron/core/optimizer/distrib_optimizer.py l.417-451: shard_model_param.clone().float().
            4.0
        };
        let moments = if !adam {
            // SGD with momentum: one fp32 momentum buffer (torch.optim.SGD / apex).
            4.0
        } else if offload_path != OffloadPath::None {
            // hybrid_optimizer.py: the on-GPU share runs FusedAdam with fp32 states; exp_avg_dtype is not used there.
            8.0
        } else if precision_aware {
            // TE FusedAdam keeps exp_avg / exp_avg_sq in their dtypes (fused_adam.py docstring l.84-93).
            moment_bytes(s.exp_avg_dtype) + moment_bytes(s.exp_avg_sq_dtype)
        } else {
            // ML@d98e8a6:megatron/core/optimizer/__init__.py init_state_fn l.591-600: zeros_like the fp32 main shard.
            8.0
        };
        let moment = if adam && precision_aware && offload_path == OffloadPath::None {
            moment_bytes(s.exp_avg_dtype).max(moment_bytes(s.exp_avg_sq_dtype))
        } else {
            4.0
        };
        // ML@d98e8a6:megatron/core/optimizer/distrib_optimizer.py _copy_model_grads_to_main_grads l.2790-2792:
        // shard_main_param.grad = shard_model_grad.float() allocates when the grad buffer is not fp32; the TE-master
        // path reads the grad buffer as decoupled_grad instead (l.2784-2790).
        let step_grad_copy = if grad < 4.0 && !fp32_params && !(te_master && offload_path == OffloadPath::None) { 4.0 } else { 0.0 };
        // hybrid_optimizer.py _set_sub_optimizer_grads l.83-115: per offloaded element a pinned fp32 master copy, the
        // CPU optimizer's fp32 states and a pinned fp32 grad.
        let host_per_offloaded = 4.0 + if adam { 8.0 } else { 4.0 } + 4.0;
        let (bf16_first, bf16_last) = lp.bf16_edge_layers(low);
        Run {
            precision,
            fp8_recipe,
            non_tn_fp8_gemm,
            act,
            gemm_in: if low { gemm_input_bytes(precision, fp8_recipe, act) } else { act },
            param,
            quant: quantized_weight_bytes(precision, fp8_recipe, non_tn_fp8_gemm),
            store,
            grad,
            master,
            moments,
            moment,
            step_grad_copy,
            offload: if offload_path == OffloadPath::None { 0.0 } else { offload },
            offload_path,
            host_per_offloaded,
            fsdp,
            sharded_optimizer,
            instances: s.num_distributed_optimizer_instances.max(1) as f64,
            precision_aware,
            te_master,
            bf16_first,
            bf16_last,
            peft: s.peft != crate::settings::Peft::None,
        }
    }

    /// Whether GEMMs run in FP8 / FP4.
    pub fn low(&self) -> bool {
        self.precision.is_low()
    }

    /// Bytes per GEMM weight element of a quantized layer as held for the whole step: the stored weight and, for
    /// cached BF16 weights, TE's quantized workspace.
    pub fn weight_low(&self) -> (f64, f64) {
        match self.store {
            WeightStore::HighPrecision => (self.param, 0.0),
            WeightStore::Primary => (self.quant, 0.0),
            WeightStore::Cached => (self.param, self.quant),
            WeightStore::PerMicrobatch => (self.param, 0.0),
        }
    }

    /// Master weights and moments per shard element left on the GPU, after offload.
    pub fn device_optimizer(&self) -> (f64, f64) {
        let keep = 1.0 - self.offload;
        match self.offload_path {
            OffloadPath::None => (self.master, self.moments),
            // MB@067f987:src/megatron/bridge/training/optim.py l.245-262 (the level-1 fp32 GPU shards stay).
            OffloadPath::Bridge => (self.master, keep * self.moments),
            OffloadPath::MegatronLm => (keep * self.master, keep * self.moments),
        }
    }

    /// The grad shard's fp32 copies at the step, per shard element on the GPU.
    pub fn device_step_copy(&self) -> f64 {
        match self.offload_path {
            OffloadPath::MegatronLm => (1.0 - self.offload) * self.step_grad_copy,
            _ => self.step_grad_copy,
        }
    }
}
