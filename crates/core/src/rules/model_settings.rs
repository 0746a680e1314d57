//! TransformerConfig run settings against each other and the model: low-precision weights, recompute modules,
//! fine-grained activation offloading, CUDA graphs, the MoE dispatcher and TP communication overlap
//! (megatron-core `TransformerConfig.__post_init__` and DDP config checks, Megatron-LM's validate_args, Bridge's
//! ConfigContainer.validate and flex-dispatcher check).

use super::optimizer::list;
use super::findings::{Findings, SP, d};
use crate::Code;
use crate::derive::Derived;
use crate::model::Ffn;
use crate::plan::Plan;
use crate::settings::{
    CudaGraphImpl, CudaGraphScope, DispatcherType, FlexBackend, Fp8Recipe, OffloadModule, Precision, Recompute, RecomputeModule,
};

const FP8_GATHER: &str = "training.fp8_param_gather";
const REUSE: &str = "training.reuse_grad_buf_for_mxfp8_param_ag";
const MODULES: &str = "training.recompute_modules";
const OFFLOAD_MODULES: &str = "training.offload_modules";
const GRAPH_SCOPE: &str = "training.cuda_graph_scope";

/// fp8-param-gather-without-fp8, fp4-param-gather-without-fp4, param-gather-distributed-optimizer-mlm,
/// mxfp8-param-gather-reuse-bridge, reuse-grad-buf-needs-param-gather and mxfp8-without-param-gather: which weights
/// are kept in FP8/FP4 and where they are gathered.
pub fn low_precision_weights(p: &Plan, out: &mut impl Findings) {
    let s = &p.training.settings;
    let lp = s.low_precision(&p.gpu);
    let sharded = s.use_distributed_optimizer || s.use_megatron_fsdp;
    if lp.fp8_param_gather && s.precision != Precision::Fp8 {
        out.add(Code::Fp8ParamGatherWithoutFp8, |code| {
            d(code, format!("fp8_param_gather = true with precision = {}: megatron-core asserts \"fp8_param must be used together with fp8 mode.\"", s.precision.key()), "remove fp8_param_gather (its default follows the precision)".into())
                .with_apply(FP8_GATHER, serde_json::Value::Null)
        });
    }
    if lp.fp4_param_gather && s.precision != Precision::Fp4 {
        out.add(Code::Fp4ParamGatherWithoutFp4, |code| {
            d(code, format!("fp4_param_gather = true with precision = {}: megatron-core asserts \"fp4_param must be used together with fp4 mode.\" (Megatron-LM: \"--fp4-param-gather must be used together with --fp4-format.\")", s.precision.key()), "remove fp4_param_gather (its default follows the precision)".into())
                .with_apply("training.fp4_param_gather", serde_json::Value::Null)
        });
    }
    let gathers = (lp.fp8_param_gather && s.precision == Precision::Fp8) || (lp.fp4_param_gather && s.precision == Precision::Fp4);
    if gathers && !sharded {
        let field = if s.precision == Precision::Fp8 { "fp8_param_gather" } else { "fp4_param_gather" };
        out.add(Code::ParamGatherDistributedOptimizerMlm, |code| {
            d(code, format!("{field} = true without the distributed optimizer or Megatron-FSDP: Megatron-LM asserts \"--fp8-param-gather only supported with distributed optimizer, torch fsdp2, megatron fsdp, or inference mode\"; Megatron Bridge does not check"), "set use_distributed_optimizer = true".into())
                .with_apply("training.use_distributed_optimizer", true)
        });
    }
    let mxfp8 = lp.fp8_recipe == Some(Fp8Recipe::Mxfp8);
    if mxfp8 && lp.fp8_param_gather && !lp.reuse_grad_buf_for_mxfp8_param_ag && !s.use_megatron_fsdp {
        out.add(Code::Mxfp8ParamGatherReuseBridge, |code| {
            d(code, "fp8_param_gather with fp8_recipe = mxfp8 and reuse_grad_buf_for_mxfp8_param_ag = false: Megatron Bridge asserts \"When fp8_param_gather=True and fp8_recipe='mxfp8', reuse_grad_buf_for_mxfp8_param_ag must be set to True\"; Megatron-LM runs it with a separate parameter buffer".into(), "set reuse_grad_buf_for_mxfp8_param_ag = true".into())
                .with_apply(REUSE, true)
        });
    }
    if lp.reuse_grad_buf_for_mxfp8_param_ag && !lp.fp8_param_gather {
        out.add(Code::ReuseGradBufNeedsParamGather, |code| {
            d(code, "reuse_grad_buf_for_mxfp8_param_ag = true without fp8_param_gather: megatron-core's DDP config asserts \"Reuse grad buffer only when keeping params in MXFP8.\"".into(), "set reuse_grad_buf_for_mxfp8_param_ag = false".into())
                .with_apply(REUSE, false)
        });
    }
    // The other halves of megatron-core's condition are the two rules above.
    if s.precision == Precision::Fp8 && mxfp8 && !lp.fp8_param_gather && !lp.reuse_grad_buf_for_mxfp8_param_ag {
        out.add(Code::Mxfp8WithoutParamGather, |code| {
            let diag = d(code, "fp8_recipe = mxfp8 without FP8 weights gathered into the grad buffer: megatron-core warns \"mxfp8 without using reuse_grad_buf_for_mxfp8_param_ag and fp8_param_gather will use significant amount additional GPU memory\" (bf16 weights plus a cached MXFP8 copy)".into(), if sharded { "set fp8_param_gather = true and reuse_grad_buf_for_mxfp8_param_ag = true (Bridge's bf16_with_mxfp8_mixed)".into() } else { "with the distributed optimizer, set fp8_param_gather and reuse_grad_buf_for_mxfp8_param_ag (Bridge's bf16_with_mxfp8_mixed)".into() });
            if sharded { diag.with_apply(FP8_GATHER, true).with_apply(REUSE, true) } else { diag }
        });
    }
}

/// first-last-bf16-with-delayed, bf16-layers-out-of-range and fp8-recipe-without-fp8: the FP8 recipe and the layers
/// kept in BF16.
pub fn fp8_layers(p: &Plan, out: &mut impl Findings) {
    let s = &p.training.settings;
    let lp = s.low_precision(&p.gpu);
    if s.fp8_recipe.is_some() && s.precision != Precision::Fp8 {
        out.add(Code::Fp8RecipeWithoutFp8, |code| {
            d(code, format!("fp8_recipe = {} with precision = {}: the recipe is read only with FP8", s.fp8_recipe.map_or("", |r| r.key()), s.precision.key()), "remove fp8_recipe, or set precision = \"fp8\"".into())
                .with_apply("training.fp8_recipe", serde_json::Value::Null)
        });
    }
    if !s.precision.is_low() || !lp.first_last_layers_bf16 {
        return;
    }
    if lp.fp8_recipe == Some(Fp8Recipe::Delayed) {
        out.add(Code::FirstLastBf16WithDelayed, |code| {
            d(code, "first_last_layers_bf16 with fp8_recipe = delayed: megatron-core raises \"Delayed scaling does not support first / last layer in BF16.\"".into(), "set first_last_layers_bf16 = false".into())
                .with_apply("training.first_last_layers_bf16", false)
        });
    }
    let max = p.model.num_layers / p.parallelism.pp().max(1);
    for (key, n) in [("num_layers_at_start_in_bf16", lp.num_layers_at_start_in_bf16), ("num_layers_at_end_in_bf16", lp.num_layers_at_end_in_bf16)] {
        if n > max {
            out.add(Code::Bf16LayersOutOfRange, |code| {
                d(code, format!("{key} = {n} with num_layers // PP = {} // {} = {max}: megatron-core raises \"{key} ({n}) must be between 0 and number of layers per pipeline stage ({max}).\"", p.model.num_layers, p.parallelism.pp()), format!("set {key} to {max}"))
                    .with_apply(&format!("training.{key}"), max)
            });
        }
    }
}

/// The entries of `modules` that recompute nothing on this model: (entry, why).
fn modules_without_layer(p: &Plan, dv: &Derived, modules: &[RecomputeModule]) -> Vec<(RecomputeModule, &'static str)> {
    let m = &p.model;
    // Counted only for an `mlp` entry of a MoE model, from the derived sizes' layer counts (model.rs num_moe_layers):
    // the layout search asks for every candidate's list.
    let dense_layers = || !m.is_moe() || m.num_layers > dv.kinds(m).decoder_where(|k| k.ffn == Ffn::Moe);
    let shared = m.is_moe() && m.moe_shared_expert_intermediate_size.is_some_and(|s| s > 0);
    modules
        .iter()
        .filter_map(|&x| {
            let why = match x {
                RecomputeModule::Moe | RecomputeModule::MoeAct if !m.is_moe() => "the model has no MoE layers",
                RecomputeModule::SharedExperts if !shared => "the model has no shared experts",
                RecomputeModule::Mlp if !dense_layers() => "every layer is MoE (mlp wraps dense MLPs only)",
                RecomputeModule::Mhc if !m.enable_hyper_connections => "the model has no hyper-connections (enable_hyper_connections)",
                RecomputeModule::Mhc => return None,
                RecomputeModule::GdnNormOut | RecomputeModule::GdpInProj | RecomputeModule::GdpQkv => {
                    "the model has no such layer (gated delta net / gated delta product are not in meshplan's models yet)"
                }
                _ => return None,
            };
            Some((x, why))
        })
        .collect()
}

/// recompute-modules-need-selective, mla-up-proj-needs-mla, recompute-module-no-layer, delayed-fp8-recompute-modules:
/// what each recompute_modules entry can wrap.
pub fn recompute_modules(p: &Plan, dv: &Derived, out: &mut impl Findings) {
    let s = &p.training.settings;
    let Some(given) = &s.recompute_modules else { return };
    if s.recompute_granularity != Recompute::Selective {
        out.add(Code::RecomputeModulesNeedSelective, |code| {
            let diag = d(
                code,
                format!("recompute_modules = [{}] with recompute_granularity = {}: megatron-core reads the modules only with selective recompute", keys(given), s.recompute_granularity.key()),
                if s.recompute_granularity == Recompute::None { "set recompute_granularity = \"selective\"".into() } else { "remove recompute_modules (full recompute checkpoints whole layers)".into() },
            );
            if s.recompute_granularity == Recompute::None {
                diag.with_apply("training.recompute_granularity", "selective")
            } else {
                diag.with_apply(MODULES, serde_json::Value::Null)
            }
        });
        return;
    }
    let kept = |drop: &[RecomputeModule]| list(&given.iter().filter(|x| !drop.contains(x)).map(|x| x.key()).collect::<Vec<_>>());
    if given.contains(&RecomputeModule::MlaUpProj) && !p.model.multi_latent_attention {
        out.add(Code::MlaUpProjNeedsMla, |code| {
            d(code, "recompute_modules has mla_up_proj but the model has no multi-latent attention: megatron-core raises \"mla_up_proj in recompute_modules is only supported with multi_latent_attention.\"".into(), "remove mla_up_proj from recompute_modules".into())
                .with_apply(MODULES, kept(&[RecomputeModule::MlaUpProj]))
        });
    }
    let idle = modules_without_layer(p, dv, given);
    if !idle.is_empty() {
        out.add(Code::RecomputeModuleNoLayer, |code| {
            let list_: Vec<String> = idle.iter().map(|(x, why)| format!("{} ({why})", x.key())).collect();
            let drop: Vec<RecomputeModule> = idle.iter().map(|(x, _)| *x).collect();
            d(code, format!("recompute_modules entries that recompute nothing here: {}", list_.join("; ")), "remove them from recompute_modules".into()).with_apply(MODULES, kept(&drop))
        });
    }
    let lp = s.low_precision(&p.gpu);
    let bad: Vec<RecomputeModule> = given.iter().copied().filter(|x| matches!(x, RecomputeModule::MoeAct | RecomputeModule::Layernorm)).collect();
    if s.precision == Precision::Fp8 && lp.fp8_recipe == Some(Fp8Recipe::Delayed) && !bad.is_empty() {
        out.add(Code::DelayedFp8RecomputeModules, |code| {
            d(code, format!("recompute_modules has {} with fp8_recipe = delayed: megatron-core raises \"Delayed scaling does not support moe_act and layernorm recompute for fp8.\"", keys(&bad)), "remove moe_act and layernorm from recompute_modules, or use fp8_recipe = \"tensorwise\"".into())
                .with_apply(MODULES, kept(&bad))
        });
    }
}

fn keys<T: crate::settings::Choice>(xs: &[T]) -> String {
    xs.iter().map(|x| x.as_str()).collect::<Vec<_>>().join(", ")
}

/// distribute-saved-activations-invalid and full-recompute-cuda-graphs: full recompute's companions.
pub fn full_recompute(p: &Plan, out: &mut impl Findings) {
    let s = &p.training.settings;
    let par = &p.parallelism;
    if s.distribute_saved_activations {
        let why = if par.sequence_parallel {
            Some("megatron-core raises \"distribute_saved_activations: True must be false when sequence parallel is enabled: True\"")
        } else if par.tp() <= 1 {
            Some("Megatron-LM asserts \"can distribute recomputed activations only across tensor model parallel groups\" (TP = 1)")
        } else if s.recompute_granularity != Recompute::Full {
            Some("Megatron-LM asserts \"distributed recompute activations is only application to full recompute granularity\"")
        } else if s.recompute_method.is_none() {
            Some("Megatron-LM asserts \"for distributed recompute activations to work you need to use a recompute method\"")
        } else {
            None
        };
        if let Some(why) = why {
            out.add(Code::DistributeSavedActivationsInvalid, |code| {
                d(code, format!("distribute_saved_activations = true: {why}"), "set distribute_saved_activations = false".into())
                    .with_apply("training.distribute_saved_activations", false)
            });
        }
    }
    let graphs = matches!(s.cuda_graph_impl, CudaGraphImpl::Local | CudaGraphImpl::TransformerEngine);
    if s.recompute_granularity == Recompute::Full && graphs {
        out.add(Code::FullRecomputeCudaGraphs, |code| {
            d(code, format!("recompute_granularity = full with cuda_graph_impl = {}: megatron-core asserts \"full recompute is only supported with full iteration CUDA graph.\"", s.cuda_graph_impl.key()), "set cuda_graph_impl = \"none\", or use selective recompute".into())
                .with_apply("training.cuda_graph_impl", "none")
        });
    }
}

/// cpu-offload-layers-range, cpu-offload-with-pipeline, cpu-offload-with-recompute, cpu-offload-with-fine-grained,
/// cpu-offload-with-cuda-graphs and cpu-offload-layers-without-offloading: layer-level activation offloading.
// Source: megatron/core/transformer/transformer_config.py __post_init__ l.1884-1899, 2129, 2800 (@ d98e8a64dd).
pub fn cpu_offload(p: &Plan, out: &mut impl Findings) {
    let s = &p.training.settings;
    let n = s.cpu_offloading_num_layers;
    if !s.cpu_offloading {
        if n > 0 {
            out.add(Code::CpuOffloadLayersWithoutOffloading, |code| {
                d(code, format!("cpu_offloading_num_layers = {n} without cpu_offloading: nothing is offloaded (Megatron-LM's --cpu-offloading-num-layers turns it on; Megatron-Core and Bridge do not)"), "set cpu_offloading = true".into())
                    .with_apply("training.cpu_offloading", true)
            });
        }
        return;
    }
    let layers = p.model.num_layers;
    if n >= layers {
        let fix = layers.saturating_sub(1);
        out.add(Code::CpuOffloadLayersRange, |code| {
            d(code, format!("cpu_offloading_num_layers = {n} with {layers} layers: megatron-core offloads only fewer layers than the model has"), format!("set cpu_offloading_num_layers = {fix}"))
                .with_apply("training.cpu_offloading_num_layers", fix)
        });
    }
    let pp = p.parallelism.pp();
    if pp > 1 {
        out.add(Code::CpuOffloadWithPipeline, |code| {
            d(code, format!("cpu_offloading with PP = {pp}: megatron-core raises \"Currently there is no support for Pipeline parallelism with CPU offloading\""), "set pipeline_model_parallel_size = 1, or offload per module with fine_grained_activation_offloading (it works with PP)".into())
                .with_apply("training.cpu_offloading", false)
        });
    }
    if s.recompute_granularity != Recompute::None {
        out.add(Code::CpuOffloadWithRecompute, |code| {
            d(code, format!("cpu_offloading with recompute_granularity = {}: megatron-core raises \"CPU offloading does not work when activation recomputation is enabled\"", s.recompute_granularity.key()), "set recompute_granularity = null, or turn cpu_offloading off".into())
                .with_apply("training.recompute_granularity", serde_json::Value::Null)
        });
    }
    if s.fine_grained_activation_offloading {
        out.add(Code::CpuOffloadWithFineGrained, |code| {
            d(code, "cpu_offloading with fine_grained_activation_offloading: megatron-core asserts they exclude each other".into(), "keep one: turn fine_grained_activation_offloading off".into())
                .with_apply("training.fine_grained_activation_offloading", false)
        });
    }
    if matches!(s.cuda_graph_impl, CudaGraphImpl::Local | CudaGraphImpl::TransformerEngine) {
        out.add(Code::CpuOffloadWithCudaGraphs, |code| {
            d(code, format!("cpu_offloading with cuda_graph_impl = {}: megatron-core raises \"CUDA graphs not supported with CPU offloading.\"", s.cuda_graph_impl.key()), "set cuda_graph_impl = \"none\" (or full_iteration)".into())
                .with_apply("training.cuda_graph_impl", "none")
        });
    }
}

/// activation-offload-needs-modules, offload-modules-without-offloading, activation-offload-env,
/// attn-proj-offload-needs-core-attn and activation-offload-moe-recompute: fine-grained activation offloading.
pub fn activation_offload(p: &Plan, out: &mut impl Findings) {
    let s = &p.training.settings;
    let mods = &s.offload_modules;
    if s.fine_grained_activation_offloading && mods.is_empty() {
        out.add(Code::ActivationOffloadNeedsModules, |code| {
            d(code, "fine_grained_activation_offloading with no offload_modules: megatron-core asserts offload_modules is not empty".into(), "list the modules to offload, e.g. offload_modules = [\"core_attn\"], or turn the offloading off".into())
                .with_apply("training.fine_grained_activation_offloading", false)
        });
    }
    if !s.fine_grained_activation_offloading && !mods.is_empty() {
        out.add(Code::OffloadModulesWithoutOffloading, |code| {
            d(code, format!("offload_modules = [{}] without fine_grained_activation_offloading: nothing is offloaded", keys(mods)), "set fine_grained_activation_offloading = true".into())
                .with_apply("training.fine_grained_activation_offloading", true)
        });
    }
    if !s.fine_grained_activation_offloading {
        return;
    }
    if !mods.is_empty() {
        out.add(Code::ActivationOffloadEnv, |code| {
            d(code, "fine_grained_activation_offloading: with Transformer Engine 2.10 or later Megatron Bridge and Megatron-LM refuse to start unless NVTE_CPU_OFFLOAD_V1=1 is set (so that TE does not offload the weights too); the exports set it".into(), "export NVTE_CPU_OFFLOAD_V1=1 in the launch environment".into())
        });
    }
    if mods.contains(&OffloadModule::AttnProj) && !mods.contains(&OffloadModule::CoreAttn) {
        out.add(Code::AttnProjOffloadNeedsCoreAttn, |code| {
            let mut with: Vec<&str> = mods.iter().map(|m| m.key()).collect();
            with.push(OffloadModule::CoreAttn.key());
            d(code, "offload_modules has attn_proj without core_attn: megatron-core raises \"attn_proj cannot be set to offload_modules alone without core_attn because the input of attn_proj is the output of core_attn\"".into(), "add core_attn to offload_modules".into())
                .with_apply(OFFLOAD_MODULES, list(&with))
        });
    }
    let inside: Vec<OffloadModule> = mods.iter().copied().filter(|m| matches!(m, OffloadModule::MoeAct | OffloadModule::ExpertFc1 | OffloadModule::FusedGroupMlp)).collect();
    if s.recompute_modules_run().contains(&RecomputeModule::Moe) && !inside.is_empty() {
        out.add(Code::ActivationOffloadMoeRecompute, |code| {
            let rest: Vec<&str> = mods.iter().filter(|m| !inside.contains(m)).map(|m| m.key()).collect();
            let diag = d(
                code,
                format!("offload_modules has {} while recompute_modules has moe: megatron-core asserts \"Cannot offload {{…}} while recomputing the entire MoE layer.\"", keys(&inside)),
                format!("remove {} from offload_modules, or moe from recompute_modules", keys(&inside)),
            );
            // Offloading needs a module left to offload; with none, the nearest valid plan drops moe from recompute.
            if rest.is_empty() {
                let modules: Vec<&str> = s.recompute_modules_run().iter().filter(|m| **m != RecomputeModule::Moe).map(|m| m.key()).collect();
                diag.with_apply(MODULES, list(&modules))
            } else {
                diag.with_apply(OFFLOAD_MODULES, list(&rest))
            }
        });
    }
}

/// ep-overlap-invalid: what the EP all-to-all overlap (1F1B-interleaved MoE dispatch) needs. One diagnostic, for the
/// first assert megatron-core's `__post_init__` (and Bridge's comm-overlap setup before it) would raise.
pub fn ep_overlap(p: &Plan, out: &mut impl Findings) {
    let s = &p.training.settings;
    if !s.overlap_moe_expert_parallel_comm {
        return;
    }
    const OVERLAP: &str = "training.overlap_moe_expert_parallel_comm";
    let off = |why: String, fix: &str| (why, fix.to_string(), OVERLAP, serde_json::Value::Bool(false));
    let par = &p.parallelism;
    let modules = s.recompute_modules_run();
    let problem = if par.ep() <= 1 {
        Some(off(format!("expert_model_parallel_size = {}: \"overlap_moe_expert_parallel_comm is only supported with expert model parallelism\"", par.ep()), "turn the overlap off, or set expert_model_parallel_size > 1"))
    } else if !matches!(s.moe_token_dispatcher_type, DispatcherType::Alltoall | DispatcherType::Flex) {
        Some((
            format!("moe_token_dispatcher_type = {}: \"overlap_moe_expert_parallel_comm is supported with alltoall/flex token dispatcher\"", s.moe_token_dispatcher_type.key()),
            "set moe_token_dispatcher_type = \"alltoall\"".to_string(),
            "training.moe_token_dispatcher_type",
            serde_json::Value::from("alltoall"),
        ))
    } else if matches!(s.precision, Precision::Fp32) {
        Some(off("precision = fp32: \"overlap_moe_expert_parallel_comm is only supported with bf16 or fp16 model\"".into(), "turn the overlap off, or train in bf16"))
    } else if par.pp() > 1 && par.virtual_pipeline_model_parallel_size.is_none() {
        Some(off(format!("pipeline_model_parallel_size = {} without virtual pipeline stages: \"virtual_pipeline_model_parallel_size must be specified when pipeline_model_parallel_size > 1\"", par.pp()), "turn the overlap off, or set virtual_pipeline_model_parallel_size"))
    } else if s.recompute_granularity == Recompute::Full || s.recompute_method.is_some() || s.recompute_num_layers.is_some() {
        Some(off("full recompute (recompute_granularity, recompute_method or recompute_num_layers set): \"disable full recomputation when enabling overlap_moe_expert_parallel_comm\"".into(), "turn the overlap off, or use selective recompute without a method or layer count"))
    } else if s.recompute_granularity == Recompute::Selective && modules.contains(&RecomputeModule::Moe) {
        let keep: Vec<&str> = modules.iter().filter(|m| **m != RecomputeModule::Moe).map(|m| m.key()).collect();
        Some((
            "recompute_modules has moe: \"disable moe in recompute_modules when enabling overlap_moe_expert_parallel_comm\"".to_string(),
            "remove moe from recompute_modules".to_string(),
            MODULES,
            list(&keep),
        ))
    } else if p.model.mtp_num_layers > 1 {
        Some(off(format!("mtp_num_layers = {}: \"MTP supports at most one layer when enabling overlap_moe_expert_parallel_comm\"", p.model.mtp_num_layers), "turn the overlap off"))
    } else {
        None
    };
    if let Some((why, fix, path, value)) = problem {
        out.add(Code::EpOverlapInvalid, |code| {
            d(code, format!("overlap_moe_expert_parallel_comm with {why} (megatron-core asserts it; Bridge checks it first)"), fix).with_apply(path, value)
        });
    }
}

/// cuda-graph-local-bridge: which implementation Bridge accepts; cuda-graph-scope-without-impl and
/// cuda-graph-scope-invalid: what the CUDA graph scope can capture.
pub fn cuda_graphs(p: &Plan, out: &mut impl Findings) {
    let s = &p.training.settings;
    if s.cuda_graph_impl == CudaGraphImpl::Local {
        // Bridge's validate_cuda_graph_configuration: "local" is accepted only with a full_iteration module, which
        // meshplan spells as its own implementation (cuda_graph_impl = full_iteration, as Bridge's current API does).
        out.add(Code::CudaGraphLocalBridge, |code| {
            d(code, "cuda_graph_impl = local: Megatron Bridge supports the local implementation only for full-iteration CUDA graphs and raises for per-layer ones (Megatron-LM runs them)".into(), "set cuda_graph_impl = \"transformer_engine\" for per-layer graphs, or \"full_iteration\"".into())
                .with_apply("training.cuda_graph_impl", "transformer_engine")
        });
    }
    let scope = &s.cuda_graph_scope;
    if scope.is_empty() {
        return;
    }
    if s.cuda_graph_impl == CudaGraphImpl::None {
        out.add(Code::CudaGraphScopeWithoutImpl, |code| {
            d(code, format!("cuda_graph_scope = [{}] with cuda_graph_impl = none: nothing is graphed (Bridge's benchmark setup clears the scope)", keys(scope)), "set cuda_graph_impl = \"transformer_engine\" to graph that scope".into())
                .with_apply("training.cuda_graph_impl", "transformer_engine")
        });
        return;
    }
    if let Some((why, keep)) = scope_problem(p) {
        out.add(Code::CudaGraphScopeInvalid, |code| {
            d(code, format!("cuda_graph_scope = [{}] with cuda_graph_impl = {}: megatron-core asserts \"{why}\"", keys(scope), s.cuda_graph_impl.key()), format!("set cuda_graph_scope to [{}]", keep.join(", ")))
                .with_apply(GRAPH_SCOPE, list(&keep))
        });
    }
}

/// The first scope assert megatron-core's `__post_init__` raises, and the scope without the offending entries.
fn scope_problem(p: &Plan) -> Option<(&'static str, Vec<&'static str>)> {
    let (s, m) = (&p.training.settings, &p.model);
    let scope = &s.cuda_graph_scope;
    let has = |x: CudaGraphScope| scope.contains(&x);
    let without = |drop: &[CudaGraphScope]| scope.iter().filter(|x| !drop.contains(x)).map(|x| x.key()).collect::<Vec<_>>();
    if s.cuda_graph_impl == CudaGraphImpl::FullIteration {
        return Some(("cuda_graph_modules must be empty when cuda_graph_impl=\"full_iteration\".", Vec::new()));
    }
    if has(CudaGraphScope::Moe) && has(CudaGraphScope::MoeRouter) {
        return Some(("cuda_graph_modules must not contain both moe and moe_router.", without(&[CudaGraphScope::Moe])));
    }
    // The local implementation adds moe_router itself when moe_preprocess is listed.
    if has(CudaGraphScope::MoePreprocess) && !has(CudaGraphScope::MoeRouter) && s.cuda_graph_impl == CudaGraphImpl::TransformerEngine {
        return Some(("moe_preprocess cuda graph is only supported with moe_router cuda graph.", without(&[CudaGraphScope::MoePreprocess])));
    }
    if !m.is_moe() && (has(CudaGraphScope::Moe) || has(CudaGraphScope::MoeRouter) || has(CudaGraphScope::MoePreprocess)) {
        return Some(("moe cuda graph is only supported for MoE.", without(&[CudaGraphScope::Moe, CudaGraphScope::MoeRouter, CudaGraphScope::MoePreprocess])));
    }
    if m.is_moe() && m.num_moe_layers() >= m.num_layers && has(CudaGraphScope::Mlp) {
        return Some(("mlp cuda graph is only supported for dense layers, but not found in the model.", without(&[CudaGraphScope::Mlp])));
    }
    let drop_pad = s.moe_expert_capacity_factor.is_some() && s.moe_pad_expert_input_to_capacity;
    if m.is_moe() && has(CudaGraphScope::Moe) && !drop_pad {
        return Some(("moe cuda graph is only supported with drop-padding MoE.", without(&[CudaGraphScope::Moe])));
    }
    None
}

/// pad-to-capacity-needs-capacity-factor, deepep-pad-to-capacity, flex-backend-without-flex and
/// flex-backend-gpu-bridge: the MoE token dispatcher.
pub fn moe_dispatch(p: &Plan, out: &mut impl Findings) {
    let s = &p.training.settings;
    if !p.model.is_moe() {
        return;
    }
    if s.moe_pad_expert_input_to_capacity && s.moe_expert_capacity_factor.is_none() {
        out.add(Code::PadToCapacityNeedsCapacityFactor, |code| {
            d(code, "moe_pad_expert_input_to_capacity without moe_expert_capacity_factor: megatron-core asserts \"moe_expert_capacity_factor must be set to use moe_pad_expert_input_to_capacity\"".into(), "set moe_expert_capacity_factor (1.0 gives each expert its balanced share), or turn padding off".into())
                .with_apply("training.moe_expert_capacity_factor", 1.0)
        });
    }
    let flex = s.moe_token_dispatcher_type == DispatcherType::Flex;
    let (etp, ep) = (p.parallelism.etp(), p.parallelism.ep());
    if flex && etp.saturating_mul(ep) <= 1 {
        out.add(Code::FlexDispatcherNeedsTpEp, |code| {
            d(code, format!("moe_token_dispatcher_type = flex with expert_tensor_parallel_size = {etp} and expert_model_parallel_size = {ep}: megatron-core asserts \"Flex token dispatcher requires TPxEP > 1\""), "set moe_token_dispatcher_type = \"alltoall\", or expert_model_parallel_size > 1".into())
                .with_apply("training.moe_token_dispatcher_type", "alltoall")
        });
    }
    if flex && s.moe_flex_dispatcher_backend == FlexBackend::Deepep && s.moe_pad_expert_input_to_capacity {
        out.add(Code::DeepepPadToCapacity, |code| {
            d(code, "moe_pad_expert_input_to_capacity with the flex dispatcher's deepep backend: megatron-core raises \"Flex token dispatcher with deepep backend does not support moe_pad_expert_input_to_capacity\"".into(), "use moe_flex_dispatcher_backend = \"hybridep\", or the alltoall dispatcher".into())
                .with_apply("training.moe_flex_dispatcher_backend", "hybridep")
        });
    }
    if !flex && s.moe_flex_dispatcher_backend != FlexBackend::Deepep {
        out.add(Code::FlexBackendWithoutFlex, |code| {
            d(code, format!("moe_flex_dispatcher_backend = {} with moe_token_dispatcher_type = {}: the backend is read only by the flex dispatcher", s.moe_flex_dispatcher_backend.key(), s.moe_token_dispatcher_type.key()), "set moe_token_dispatcher_type = \"flex\"".into())
                .with_apply("training.moe_token_dispatcher_type", "flex")
        });
    }
    // Bridge's validate_flex_dispatcher_backend: DeepEP needs compute capability 8.x/9.x or a device named B200/B300;
    // the GB200/GB300 superchips (capability 10, other names) fail it. HybridEP accepts capability 8-10. Which GPUs are
    // Grace-Blackwell superchips is data (gpus.json `grace_blackwell`), so a new one needs no code.
    if flex && s.moe_flex_dispatcher_backend == FlexBackend::Deepep && p.gpu.grace_blackwell {
        out.add(Code::FlexBackendGpuBridge, |code| {
            d(code, format!("the flex dispatcher's deepep backend on {}: Megatron Bridge raises \"DeepEP is supported for Ampere, Hopper, and Blackwell (B200/B300) GPUs.\"; Megatron-LM does not check", p.gpu.name), "set moe_flex_dispatcher_backend = \"hybridep\" (Bridge's choice on GB200/GB300 NVL72)".into())
                .with_apply("training.moe_flex_dispatcher_backend", "hybridep")
        });
    }
}

/// cross-entropy-te-mlm: Transformer Engine's fused loss, which Megatron-LM refuses.
pub fn cross_entropy(p: &Plan, out: &mut impl Findings) {
    if p.training.settings.te_fused_loss() {
        out.add(Code::CrossEntropyTeMlm, |code| {
            d(
                code,
                "cross_entropy_loss_fusion with cross_entropy_fusion_impl = te: Megatron-LM asserts \"Transformer Engine cross entropy loss fusion is disabled due to stability issues\"; Megatron Bridge runs it (its performance recipes do), keeping only the bf16 logits, as this plan counts".into(),
                "set cross_entropy_fusion_impl = native to launch with Megatron-LM (the last stage then also keeps the loss's fp32 copy of the logits)".into(),
            )
            .with_apply("training.cross_entropy_fusion_impl", "native")
        });
    }
}

/// tp-comm-overlap-needs-sp: TE userbuffer overlap needs sequence parallelism over TP > 1.
pub fn tp_comm_overlap(p: &Plan, out: &mut impl Findings) {
    let (s, par) = (&p.training.settings, &p.parallelism);
    if s.tp_comm_overlap && (!par.sequence_parallel || par.tp() < 2) {
        out.add(Code::TpCommOverlapNeedsSp, |code| {
            let diag = d(
                code,
                format!(
                    "tp_comm_overlap with TP = {} and sequence_parallel = {}: Megatron-LM asserts \"Tensor parallel communication/GEMM overlap can happen only when sequence parallelism is enabled\"; Megatron Bridge turns tp_comm_overlap off with a warning",
                    par.tp(),
                    par.sequence_parallel
                ),
                if par.tp() >= 2 { "set sequence_parallel = true".into() } else { "set tp_comm_overlap = false (there is no TP communication at TP = 1)".into() },
            );
            if par.tp() >= 2 { diag.with_apply(SP, true) } else { diag.with_apply("training.tp_comm_overlap", false) }
        });
    }
}

/// gemma4-moe-unsupported-setting: Gemma 4's MoE forward feeds the router, the shared expert and the routed experts
/// separate inputs, which the CUDA-graphed, layernorm-recomputing and mlp_norm-offloading paths bypass.
// Source: Megatron Bridge src/megatron/bridge/models/gemma/gemma4_provider.py _validate_gemma4_moe_orchestration
// (raises ValueError "Gemma 4 MoE's separate router/shared/routed inputs do not yet support: …").
pub fn gemma4_moe(p: &Plan, out: &mut impl Findings) {
    let (m, s) = (&p.model, &p.training.settings);
    if !(m.is_moe() && m.attention_k_eq_v) {
        return;
    }
    let layernorm = s.recompute_granularity == Recompute::Selective
        && s.recompute_modules.as_ref().is_some_and(|x| x.contains(&RecomputeModule::Layernorm));
    let mlp_norm = s.fine_grained_activation_offloading && s.offload_modules.contains(&OffloadModule::MlpNorm);
    let graphs = s.cuda_graph_impl != CudaGraphImpl::None;
    let found: Vec<String> = [
        graphs.then(|| format!("cuda_graph_impl = {}", s.cuda_graph_impl.key())),
        layernorm.then(|| "selective recompute of layernorm".to_string()),
        mlp_norm.then(|| "offloading mlp_norm activations".to_string()),
    ]
    .into_iter()
    .flatten()
    .collect();
    if found.is_empty() {
        return;
    }
    out.add(Code::Gemma4MoeUnsupportedSetting, |code| {
        let diag = d(
            code,
            format!("Gemma 4 MoE with {}: Megatron Bridge's Gemma4ModelProvider raises \"Gemma 4 MoE's separate router/shared/routed inputs do not yet support\" it", found.join(", ")),
            "set cuda_graph_impl = \"none\", and drop layernorm from recompute_modules and mlp_norm from offload_modules".into(),
        );
        if graphs {
            diag.with_apply("training.cuda_graph_impl", "none")
        } else if layernorm {
            let kept: Vec<&str> = s.recompute_modules.iter().flatten().filter(|x| **x != RecomputeModule::Layernorm).map(|x| x.key()).collect();
            diag.with_apply(MODULES, list(&kept))
        } else {
            let kept: Vec<&str> = s.offload_modules.iter().filter(|x| **x != OffloadModule::MlpNorm).map(|x| x.key()).collect();
            diag.with_apply("training.offload_modules", list(&kept))
        }
    });
}
