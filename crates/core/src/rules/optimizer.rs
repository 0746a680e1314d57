//! Optimizer, gradient, offloading and data-parallel buffer settings against each other and the mesh
//! (`OptimizerConfig` and `DistributedDataParallelConfig` checks, Megatron-LM's validate_args, Bridge's validate).

use super::findings::{Findings, d};
use crate::Code;
use crate::derive::Derived;
use crate::plan::Plan;
use crate::settings::{MainGradsDtype, MainParamsDtype, MomentDtype, Optimizer, Precision, ShardingStrategy};
use serde_json::Value;

const PA: &str = "training.use_precision_aware_optimizer";
const DISTOPT: &str = "training.use_distributed_optimizer";

/// precision-aware-optimizer-needs-adam, precision-aware-optimizer-needs-distributed-optimizer and
/// optimizer-dtype-needs-precision-aware: the precision-aware optimizer and the dtypes only it reads.
pub fn precision_aware(p: &Plan, out: &mut impl Findings) {
    let s = &p.training.settings;
    if s.use_precision_aware_optimizer && s.optimizer != Optimizer::Adam {
        out.add(Code::PrecisionAwareNeedsAdam, |code| {
            d(
                code,
                format!("use_precision_aware_optimizer with optimizer = {}: megatron-core's OptimizerConfig asserts \"--use-precision-aware-optimizer only supported with adam\" (Transformer Engine's FusedAdam keeps the low-precision states)", s.optimizer.key()),
                "set optimizer = \"adam\", or turn use_precision_aware_optimizer off".into(),
            )
            .with_apply("training.optimizer", "adam")
        });
    }
    if s.use_precision_aware_optimizer && !s.use_distributed_optimizer && !s.use_megatron_fsdp {
        out.add(Code::PrecisionAwareNeedsDistributedOptimizer, |code| {
            d(
                code,
                "use_precision_aware_optimizer without the distributed optimizer: megatron-core's get_megatron_optimizer raises \"--use-precision-aware-optimizer only supported with distributed optimizer\"".into(),
                "set use_distributed_optimizer = true".into(),
            )
            .with_apply(DISTOPT, true)
        });
    }
    let low: Vec<(&str, &str)> = [
        ("main_params_dtype", s.main_params_dtype.key(), s.main_params_dtype != MainParamsDtype::Fp32),
        ("main_grads_dtype", s.main_grads_dtype.key(), s.main_grads_dtype != MainGradsDtype::Fp32),
        ("exp_avg_dtype", s.exp_avg_dtype.key(), s.exp_avg_dtype != MomentDtype::Fp32),
        ("exp_avg_sq_dtype", s.exp_avg_sq_dtype.key(), s.exp_avg_sq_dtype != MomentDtype::Fp32),
    ]
    .into_iter()
    .filter(|(_, _, set)| *set)
    .map(|(k, v, _)| (k, v))
    .collect();
    if !s.use_precision_aware_optimizer && !low.is_empty() {
        out.add(Code::OptimizerDtypeNeedsPrecisionAware, |code| {
            let list: Vec<String> = low.iter().map(|(k, v)| format!("{k} = {v}")).collect();
            // The nearest valid plan keeps the dtypes when the precision-aware optimizer can run (adam over a sharded
            // optimizer); otherwise it sets them back to fp32.
            let can_run = s.optimizer == Optimizer::Adam && (s.use_distributed_optimizer || s.use_megatron_fsdp);
            let diag = d(
                code,
                format!(
                    "{} without use_precision_aware_optimizer: megatron-core's OptimizerConfig asserts \"{} can only be fp32 when not using precision-aware optimizer\"",
                    list.join(", "),
                    low[0].0
                ),
                if can_run { "set use_precision_aware_optimizer = true".into() } else { format!("set {} to fp32", low.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(", ")) },
            );
            if can_run {
                diag.with_apply(PA, true)
            } else {
                low.iter().fold(diag, |diag, (k, _)| diag.with_apply(&format!("training.{k}"), "fp32"))
            }
        });
    }
}

/// main-grads-bf16-fp32-grads-mlm: bf16 main grads over an fp32 grad buffer.
pub fn gradient_dtype(p: &Plan, out: &mut impl Findings) {
    let s = &p.training.settings;
    let grads_fp32 = s.low_precision(&p.gpu).grad_reduce_in_fp32;
    if s.main_grads_dtype == MainGradsDtype::Bf16 && grads_fp32 && s.precision != Precision::Fp32 {
        out.add(Code::MainGradsBf16Fp32GradsMlm, |code| {
            d(
                code,
                format!(
                    "main_grads_dtype = bf16 with grad_reduce_in_fp32 = true{}: Megatron-LM asserts \"--main-grads-dtype can only be fp32 when --accumulate-allreduce-grads-in-fp32 is set\" (without the flag it reduces in bf16); Megatron Bridge keeps the fp32 buffer, as this plan counts",
                    if s.grad_reduce_in_fp32.is_none() { " (the default of the precision's Bridge recipe)" } else { "" }
                ),
                "set grad_reduce_in_fp32 = false (bf16 gradient buffer, what Megatron-LM runs)".into(),
            )
            .with_apply("training.grad_reduce_in_fp32", false)
        });
    }
}

/// optimizer-offload-precision-aware-mlm, optimizer-offload-fp8-delayed-mlm and offload-fraction-without-offload.
pub fn offload(p: &Plan, out: &mut impl Findings) {
    let s = &p.training.settings;
    if s.optimizer_cpu_offload && !s.use_precision_aware_optimizer {
        out.add(Code::OptimizerOffloadPrecisionAwareMlm, |code| {
            d(
                code,
                "optimizer_cpu_offload without use_precision_aware_optimizer: Megatron-LM asserts \"The optimizer cpu offload must be used in conjunction with --use-precision-aware-optimizer\"; Megatron Bridge runs it, keeping megatron-core's fp32 master weights on the GPU and offloading the rest".into(),
                "set use_precision_aware_optimizer = true (needed under Megatron-LM; under Bridge it also moves the fp32 master weights to the host)".into(),
            )
            .with_apply(PA, true)
        });
    }
    let lp = s.low_precision(&p.gpu);
    if s.optimizer_cpu_offload && lp.fp8_param_gather && lp.fp8_recipe != Some(crate::settings::Fp8Recipe::Delayed) {
        out.add(Code::OptimizerOffloadFp8DelayedMlm, |code| {
            d(
                code,
                format!(
                    "optimizer_cpu_offload with FP8 weights (fp8_param_gather) and fp8_recipe = {}: Megatron-LM asserts \"When --fp8-param-gather is enabled, the optimizer cpu offload must be used in conjunction with --fp8-recipe delayed\"; Megatron Bridge does not check",
                    lp.fp8_recipe.map_or("none", |r| r.key())
                ),
                "set fp8_param_gather = false (bf16 weights), or fp8_recipe = \"delayed\"".into(),
            )
            .with_apply("training.fp8_param_gather", false)
        });
    }
    if !s.optimizer_cpu_offload && s.optimizer_offload_fraction.is_some() {
        out.add(Code::OffloadFractionWithoutOffload, |code| {
            d(
                code,
                format!("optimizer_offload_fraction = {} without optimizer_cpu_offload: nothing is offloaded", s.optimizer_offload_fraction.unwrap_or(0.0)),
                "set optimizer_cpu_offload = true to offload that share of the optimizer state".into(),
            )
            .with_apply("training.optimizer_cpu_offload", true)
        });
    }
}

/// optimizer-instances-not-divisible: the distributed optimizer's instances split DP·CP and expert DP evenly.
pub fn optimizer_instances(p: &Plan, dv: &Derived, out: &mut impl Findings) {
    let n = p.training.settings.num_distributed_optimizer_instances.max(1);
    let dp_cp = dv.data_parallel_size.saturating_mul(p.parallelism.cp());
    let edp = dv.expert_data_parallel_size;
    if n == 1 || dv.data_parallel_size == 0 {
        return;
    }
    let expert_bad = p.model.is_moe() && edp > 0 && edp % n != 0;
    if dp_cp % n != 0 || expert_bad {
        // The nearest count that divides both: a divisor of gcd(DP·CP, expert DP).
        let both = if p.model.is_moe() && edp > 0 { super::fixes::gcd(dp_cp, edp) } else { dp_cp };
        let good = super::fixes::nearest_divisor(both.max(1), n);
        out.add(Code::OptimizerInstancesNotDivisible, |code| {
            d(
                code,
                format!(
                    "num_distributed_optimizer_instances = {n} does not divide {}: megatron-core's initialize_model_parallel asserts \"{} should be divisible by partial DistOpt shard factor\"",
                    if dp_cp % n != 0 { format!("DP·CP = {}·{} = {dp_cp}", dv.data_parallel_size, p.parallelism.cp()) } else { format!("the expert data-parallel size {edp}") },
                    if dp_cp % n != 0 { "Data parallel size" } else { "Expert data parallel size" }
                ),
                format!("set num_distributed_optimizer_instances to {good}, the nearest count that divides both"),
            )
            .with_apply("training.num_distributed_optimizer_instances", good)
        });
    }
}

/// overlap-param-gather-distributed-optimizer-mlm, overlap-param-gather-grad-reduce-mlm, sharding-strategy-without-fsdp
/// and megatron-fsdp-distributed-optimizer: the data-parallel buffers' overlap and sharding switches.
pub fn data_parallel_buffers(p: &Plan, out: &mut impl Findings) {
    let s = &p.training.settings;
    if s.overlap_param_gather && !s.use_distributed_optimizer && !s.use_megatron_fsdp {
        out.add(Code::OverlapParamGatherDistributedOptimizerMlm, |code| {
            d(
                code,
                "overlap_param_gather without the distributed optimizer or Megatron-FSDP: Megatron-LM asserts \"--overlap-param-gather only supported with distributed optimizer, megatron fsdp, or dist_muon\"; the weights are not sharded, so there is no all-gather to overlap".into(),
                "set use_distributed_optimizer = true, or overlap_param_gather = false".into(),
            )
            .with_apply(DISTOPT, true)
        });
    }
    if s.overlap_param_gather && !s.overlap_grad_reduce {
        out.add(Code::OverlapParamGatherGradReduceMlm, |code| {
            d(
                code,
                "overlap_param_gather without overlap_grad_reduce: Megatron-LM asserts \"Must use --overlap-param-gather with --overlap-grad-reduce\"; Megatron Bridge does not check".into(),
                "set overlap_grad_reduce = true".into(),
            )
            .with_apply("training.overlap_grad_reduce", true)
        });
    }
    if !s.use_megatron_fsdp && s.data_parallel_sharding_strategy != ShardingStrategy::NoShard {
        out.add(Code::ShardingStrategyWithoutFsdp, |code| {
            d(
                code,
                format!("data_parallel_sharding_strategy = {} without use_megatron_fsdp: the standard data-parallel wrapper ignores it", s.data_parallel_sharding_strategy.key()),
                "set use_megatron_fsdp = true to shard with Megatron-FSDP".into(),
            )
            .with_apply("training.use_megatron_fsdp", true)
        });
    }
    if s.use_megatron_fsdp && !s.use_distributed_optimizer {
        out.add(Code::MegatronFsdpDistributedOptimizer, |code| {
            d(
                code,
                "use_megatron_fsdp without use_distributed_optimizer: Megatron-LM (\"Megatron-FSDP v1 is only compatible with --use-distributed-optimizer\") and Megatron Bridge (\"use_distributed_optimizer=True is required for Megatron-FSDP. Activating...\") both turn it on".into(),
                "set use_distributed_optimizer = true to say what runs".into(),
            )
            .with_apply(DISTOPT, true)
        });
    }
}

/// The value to write for a list setting in a one-click fix.
pub(super) fn list(items: &[&str]) -> Value {
    Value::Array(items.iter().map(|s| Value::from(*s)).collect())
}
