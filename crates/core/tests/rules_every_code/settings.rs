//! The run settings of issue 10 (rules/optimizer.rs, rules/model_settings.rs): optimizer and gradient dtypes,
//! offloading, data-parallel buffers, low-precision weights, recompute modules, activation offloading, CUDA graphs,
//! the MoE dispatcher and TP overlap. Each trigger sets the one conflicting pair on the shared 8-GPU plan (DP 8,
//! distributed optimizer on, bf16, selective recompute); the silent plan is the nearest one the source accepts.

use super::*;

const PA: &str = "training.use_precision_aware_optimizer";
const DISTOPT: &str = "training.use_distributed_optimizer";
const OFFLOAD: &str = "training.optimizer_cpu_offload";
const FP8_GATHER: &str = "training.fp8_param_gather";
const REUSE: &str = "training.reuse_grad_buf_for_mxfp8_param_ag";
const FP8_RECIPE: &str = "training.fp8_recipe";
const MODULES: &str = "training.recompute_modules";
const FINE: &str = "training.fine_grained_activation_offloading";
const CPU: &str = "training.cpu_offloading";
const CPU_LAYERS: &str = "training.cpu_offloading_num_layers";
const OFFLOAD_MODULES: &str = "training.offload_modules";
const GRAPH_IMPL: &str = "training.cuda_graph_impl";
const GRAPH_SCOPE: &str = "training.cuda_graph_scope";
const DISPATCHER: &str = "training.moe_token_dispatcher_type";
const BACKEND: &str = "training.moe_flex_dispatcher_backend";
const PAD: &str = "training.moe_pad_expert_input_to_capacity";
const CAPACITY: &str = "training.moe_expert_capacity_factor";
const EP_OVERLAP: &str = "training.overlap_moe_expert_parallel_comm";

fn optimizer_cases() -> Vec<Case> {
    vec![
        // OptimizerConfig asserts adam under the precision-aware optimizer; the fix is adam.
        case("precision-aware-optimizer-needs-adam", Kind::Error, probe(dense(), &[(PA, json!(true)), ("training.optimizer", json!("sgd"))]), probe(dense(), &[(PA, json!(true)), ("training.optimizer", json!("adam"))]))
            .fix(&[("training.optimizer", json!("adam"))]),
        // get_megatron_optimizer raises without the distributed optimizer; the fix turns it on.
        case("precision-aware-optimizer-needs-distributed-optimizer", Kind::Error, probe(dense(), &[(PA, json!(true)), (DISTOPT, json!(false))]), probe(dense(), &[(PA, json!(true))]))
            .fix(&[(DISTOPT, json!(true))]),
        // bf16 Adam moments without the precision-aware optimizer; adam with the distributed optimizer can run it, so
        // the fix turns it on (rather than dropping the dtype).
        case("optimizer-dtype-needs-precision-aware", Kind::Error, probe(dense(), &[("training.exp_avg_dtype", json!("bf16"))]), probe(dense(), &[("training.exp_avg_dtype", json!("bf16")), (PA, json!(true))]))
            .fix(&[(PA, json!(true))]),
        // bf16 main grads over bf16_mixed's fp32 grad buffer: Megatron-LM asserts; the fix is a bf16 buffer.
        case(
            "main-grads-bf16-fp32-grads-mlm",
            Kind::Warning,
            probe(dense(), &[(PA, json!(true)), ("training.main_grads_dtype", json!("bf16"))]),
            probe(dense(), &[(PA, json!(true)), ("training.main_grads_dtype", json!("bf16")), ("training.grad_reduce_in_fp32", json!(false))]),
        )
        .fix(&[("training.grad_reduce_in_fp32", json!(false))]),
        // Transformer Engine's fused loss: Megatron-LM asserts, Bridge runs it; the fix is Megatron-Core's own kernel.
        case(
            "cross-entropy-te-mlm",
            Kind::Info,
            probe(dense(), &[("training.cross_entropy_loss_fusion", json!(true)), ("training.cross_entropy_fusion_impl", json!("te"))]),
            probe(dense(), &[("training.cross_entropy_loss_fusion", json!(true)), ("training.cross_entropy_fusion_impl", json!("native"))]),
        )
        .fix(&[("training.cross_entropy_fusion_impl", json!("native"))]),
        // Offload without the precision-aware optimizer: Megatron-LM asserts, Bridge runs it.
        case("optimizer-offload-precision-aware-mlm", Kind::Warning, probe(dense(), &[(OFFLOAD, json!(true))]), probe(dense(), &[(OFFLOAD, json!(true)), (PA, json!(true))])).fix(&[(PA, json!(true))]),
        // fp8 on H100 with the distributed optimizer gathers FP8 weights (tensorwise); offloading needs delayed under
        // Megatron-LM. The fix keeps bf16 weights; the delayed recipe is the silent plan.
        case(
            "optimizer-offload-fp8-delayed-mlm",
            Kind::Warning,
            probe(dense(), &[(OFFLOAD, json!(true)), (PA, json!(true)), (PRECISION, json!("fp8"))]),
            probe(dense(), &[(OFFLOAD, json!(true)), (PA, json!(true)), (PRECISION, json!("fp8")), (FP8_RECIPE, json!("delayed"))]),
        )
        .fix(&[(FP8_GATHER, json!(false))]),
        // A fraction without offloading does nothing; the fix turns offloading on.
        case("offload-fraction-without-offload", Kind::Info, probe(dense(), &[("training.optimizer_offload_fraction", json!(0.5))]), probe(dense(), &[(OFFLOAD, json!(true)), (PA, json!(true)), ("training.optimizer_offload_fraction", json!(0.5))]))
            .fix(&[(OFFLOAD, json!(true))]),
        // DP·CP = 8·1 = 8 is not divisible by 3 instances; 2 and 4 are equally near, the smaller wins.
        case("optimizer-instances-not-divisible", Kind::Error, probe(dense(), &[("training.num_distributed_optimizer_instances", json!(3))]), probe(dense(), &[("training.num_distributed_optimizer_instances", json!(2))]))
            .fix(&[("training.num_distributed_optimizer_instances", json!(2))]),
        case(
            "overlap-param-gather-distributed-optimizer-mlm",
            Kind::Warning,
            probe(dense(), &[("training.overlap_param_gather", json!(true)), ("training.overlap_grad_reduce", json!(true)), (DISTOPT, json!(false))]),
            probe(dense(), &[("training.overlap_param_gather", json!(true)), ("training.overlap_grad_reduce", json!(true))]),
        )
        .fix(&[(DISTOPT, json!(true))]),
        case("overlap-param-gather-grad-reduce-mlm", Kind::Warning, probe(dense(), &[("training.overlap_param_gather", json!(true))]), probe(dense(), &[("training.overlap_param_gather", json!(true)), ("training.overlap_grad_reduce", json!(true))]))
            .fix(&[("training.overlap_grad_reduce", json!(true))]),
        case(
            "sharding-strategy-without-fsdp",
            Kind::Info,
            probe(dense(), &[("training.data_parallel_sharding_strategy", json!("optim"))]),
            probe(dense(), &[("training.data_parallel_sharding_strategy", json!("optim")), ("training.use_megatron_fsdp", json!(true))]),
        )
        .fix(&[("training.use_megatron_fsdp", json!(true))]),
        case("megatron-fsdp-distributed-optimizer", Kind::Info, probe(dense(), &[("training.use_megatron_fsdp", json!(true)), (DISTOPT, json!(false))]), probe(dense(), &[("training.use_megatron_fsdp", json!(true))]))
            .fix(&[(DISTOPT, json!(true))]),
    ]
}

fn low_precision_cases() -> Vec<Case> {
    let b200 = |edits: &[(&str, Value)]| {
        let mut all = vec![("cluster.gpu", json!("b200")), (PRECISION, json!("fp8"))];
        all.extend(edits.iter().cloned());
        probe(dense(), &all)
    };
    vec![
        // FP8 weights in a bf16 run; the fix unsets the field (its default follows the precision).
        case("fp8-param-gather-without-fp8", Kind::Error, probe(dense(), &[(FP8_GATHER, json!(true))]), probe(dense(), &[(FP8_GATHER, Value::Null)])).fix(&[(FP8_GATHER, Value::Null)]),
        case("fp4-param-gather-without-fp4", Kind::Error, probe(dense(), &[("training.fp4_param_gather", json!(true))]), probe(dense(), &[("training.fp4_param_gather", Value::Null)]))
            .fix(&[("training.fp4_param_gather", Value::Null)]),
        // FP8 weights given without the distributed optimizer: Megatron-LM asserts.
        case(
            "param-gather-distributed-optimizer-mlm",
            Kind::Warning,
            probe(dense(), &[(PRECISION, json!("fp8")), (FP8_GATHER, json!(true)), (DISTOPT, json!(false))]),
            probe(dense(), &[(PRECISION, json!("fp8")), (FP8_GATHER, json!(true))]),
        )
        .fix(&[(DISTOPT, json!(true))]),
        // B200 FP8 is mxfp8 with FP8 weights; turning the grad-buffer reuse off is what Bridge rejects.
        case("mxfp8-param-gather-reuse-bridge", Kind::Warning, b200(&[(REUSE, json!(false))]), b200(&[])).fix(&[(REUSE, json!(true))]),
        // Reuse without FP8 weights: the DDP config asserts.
        case("reuse-grad-buf-needs-param-gather", Kind::Error, b200(&[(FP8_GATHER, json!(false)), (REUSE, json!(true))]), b200(&[(FP8_GATHER, json!(false)), (REUSE, json!(false))]))
            .fix(&[(REUSE, json!(false))]),
        // mxfp8 with bf16 weights: megatron-core's memory warning; the fix is Bridge's bf16_with_mxfp8_mixed.
        case("mxfp8-without-param-gather", Kind::Warning, b200(&[(FP8_GATHER, json!(false))]), b200(&[])).fix(&[(FP8_GATHER, json!(true)), (REUSE, json!(true))]),
        case(
            "first-last-bf16-with-delayed",
            Kind::Error,
            probe(dense(), &[(PRECISION, json!("fp8")), (FP8_RECIPE, json!("delayed")), ("training.first_last_layers_bf16", json!(true))]),
            probe(dense(), &[(PRECISION, json!("fp8")), (FP8_RECIPE, json!("delayed"))]),
        )
        .fix(&[("training.first_last_layers_bf16", json!(false))]),
        // H100 fp8 keeps first/last layers in BF16 (current scaling); 16 layers at PP 1 allow at most 16 // 1 = 16.
        case(
            "bf16-layers-out-of-range",
            Kind::Error,
            probe(dense(), &[(PRECISION, json!("fp8")), ("training.num_layers_at_start_in_bf16", json!(17))]),
            probe(dense(), &[(PRECISION, json!("fp8")), ("training.num_layers_at_start_in_bf16", json!(16))]),
        )
        .fix(&[("training.num_layers_at_start_in_bf16", json!(16))]),
        case("fp8-recipe-without-fp8", Kind::Info, probe(dense(), &[(FP8_RECIPE, json!("tensorwise"))]), probe(dense(), &[(FP8_RECIPE, json!("tensorwise")), (PRECISION, json!("fp8"))]))
            .fix(&[(FP8_RECIPE, Value::Null)]),
    ]
}

fn recompute_cases() -> Vec<Case> {
    vec![
        case("recompute-modules-need-selective", Kind::Warning, probe(dense(), &[(RECOMPUTE, json!("none")), (MODULES, json!(["mlp"]))]), probe(dense(), &[(MODULES, json!(["mlp"]))]))
            .fix(&[(RECOMPUTE, json!("selective"))]),
        case("mla-up-proj-needs-mla", Kind::Error, probe(dense(), &[(MODULES, json!(["mla_up_proj", "core_attn"]))]), probe(dense(), &[(MODULES, json!(["core_attn"]))]))
            .fix(&[(MODULES, json!(["core_attn"]))]),
        // The dense model has no MoE layer for `moe` to wrap.
        case("recompute-module-no-layer", Kind::Warning, probe(dense(), &[(MODULES, json!(["moe", "core_attn"]))]), probe(dense(), &[(MODULES, json!(["core_attn"]))]))
            .fix(&[(MODULES, json!(["core_attn"]))]),
        case(
            "delayed-fp8-recompute-modules",
            Kind::Error,
            probe(dense(), &[(PRECISION, json!("fp8")), (FP8_RECIPE, json!("delayed")), (MODULES, json!(["layernorm", "core_attn"]))]),
            probe(dense(), &[(PRECISION, json!("fp8")), (FP8_RECIPE, json!("delayed")), (MODULES, json!(["core_attn"]))]),
        )
        .fix(&[(MODULES, json!(["core_attn"]))]),
        // TP 1 has no TP group to distribute over (Megatron-LM); TP 2 with full uniform recompute and no SP is valid.
        case(
            "distribute-saved-activations-invalid",
            Kind::Error,
            probe(dense(), &[("training.distribute_saved_activations", json!(true))]),
            probe(dense(), &[("training.distribute_saved_activations", json!(true)), (TP, json!(2)), (RECOMPUTE, json!("full")), (METHOD, json!("uniform")), (RECOMPUTE_LAYERS, json!(1))]),
        )
        .fix(&[("training.distribute_saved_activations", json!(false))]),
        case(
            "full-recompute-cuda-graphs",
            Kind::Error,
            probe(dense(), &[(RECOMPUTE, json!("full")), (METHOD, json!("uniform")), (RECOMPUTE_LAYERS, json!(1)), (GRAPH_IMPL, json!("transformer_engine"))]),
            probe(dense(), &[(RECOMPUTE, json!("full")), (METHOD, json!("uniform")), (RECOMPUTE_LAYERS, json!(1)), (GRAPH_IMPL, json!("full_iteration"))]),
        )
        .fix(&[(GRAPH_IMPL, json!("none"))]),
    ]
}

fn offload_graph_moe_cases() -> Vec<Case> {
    // Layer-level CPU offloading of 8 of the 16 layers, without recompute (the shared plan's selective recompute
    // cleared), PP 1: the silent plan Megatron-Core accepts (transformer_config.py l.1884-1899).
    let cpu = |extra: &[(&'static str, Value)]| {
        let mut e = vec![(CPU, json!(true)), (CPU_LAYERS, json!(8)), (RECOMPUTE, Value::Null)];
        e.extend_from_slice(extra);
        probe(dense(), &e)
    };
    let mut cases = vec![
        // 16 layers: offloading 16 is out of range, 15 (the nearest valid) is the fix.
        case("cpu-offload-layers-range", Kind::Error, cpu(&[(CPU_LAYERS, json!(16))]), cpu(&[(CPU_LAYERS, json!(15))])).fix(&[(CPU_LAYERS, json!(15))]),
        // PP 2 on the 8 GPUs (DP 4): Megatron-Core raises; the fix turns the offloading off.
        case("cpu-offload-with-pipeline", Kind::Error, cpu(&[(PP, json!(2))]), cpu(&[])).fix(&[(CPU, json!(false))]),
        case("cpu-offload-with-recompute", Kind::Error, cpu(&[(RECOMPUTE, json!("selective"))]), cpu(&[])).fix(&[(RECOMPUTE, Value::Null)]),
        case("cpu-offload-with-fine-grained", Kind::Error, cpu(&[(FINE, json!(true)), (OFFLOAD_MODULES, json!(["core_attn"]))]), cpu(&[]))
            .fix(&[(FINE, json!(false))]),
        // A per-layer graph under offloading raises; the full-iteration graph is allowed (the silent plan).
        case("cpu-offload-with-cuda-graphs", Kind::Error, cpu(&[(GRAPH_IMPL, json!("transformer_engine"))]), cpu(&[(GRAPH_IMPL, json!("full_iteration"))]))
            .fix(&[(GRAPH_IMPL, json!("none"))]),
        // Layers named without the switch: Megatron-Core offloads nothing (Megatron-LM's flag would turn it on).
        case("cpu-offload-layers-without-offloading", Kind::Warning, probe(dense(), &[(CPU_LAYERS, json!(8)), (RECOMPUTE, Value::Null)]), cpu(&[]))
            .fix(&[(CPU, json!(true))]),
    ];
    cases.extend(vec![
        case("activation-offload-needs-modules", Kind::Error, probe(dense(), &[(FINE, json!(true))]), probe(dense(), &[(FINE, json!(true)), (OFFLOAD_MODULES, json!(["core_attn"]))]))
            .fix(&[(FINE, json!(false))]),
        case("offload-modules-without-offloading", Kind::Warning, probe(dense(), &[(OFFLOAD_MODULES, json!(["core_attn"]))]), probe(dense(), &[(FINE, json!(true)), (OFFLOAD_MODULES, json!(["core_attn"]))]))
            .fix(&[(FINE, json!(true))]),
        // Offloading on: the launch environment needs NVTE_CPU_OFFLOAD_V1=1 (Bridge raises without it on TE >= 2.10);
        // advice only. Off, nothing to say.
        case("activation-offload-env", Kind::Info, probe(dense(), &[(FINE, json!(true)), (OFFLOAD_MODULES, json!(["core_attn"]))]), probe(dense(), &[])),
        case("attn-proj-offload-needs-core-attn", Kind::Error, probe(dense(), &[(FINE, json!(true)), (OFFLOAD_MODULES, json!(["attn_proj"]))]), probe(dense(), &[(FINE, json!(true)), (OFFLOAD_MODULES, json!(["attn_proj", "core_attn"]))]))
            .fix(&[(OFFLOAD_MODULES, json!(["attn_proj", "core_attn"]))]),
        // moe_act offloaded inside a recomputed MoE layer; with no other module to offload, the fix drops `moe` from the
        // recompute list (leaving none).
        case(
            "activation-offload-moe-recompute",
            Kind::Error,
            probe(moe(), &[(MODULES, json!(["moe"])), (FINE, json!(true)), (OFFLOAD_MODULES, json!(["moe_act"]))]),
            probe(moe(), &[(MODULES, json!(["moe_act"])), (FINE, json!(true)), (OFFLOAD_MODULES, json!(["moe_act"]))]),
        )
        .fix(&[(MODULES, json!([]))]),
        // Per-layer graphs of the local implementation: Bridge raises; the fix is TE's graphs of the same layers.
        // EP all-to-all overlap with the default allgather dispatcher: megatron-core asserts alltoall or flex; the fix
        // is alltoall (EP 4 > 1, bf16, PP 1, selective recompute of core_attn: nothing else in the way).
        case(
            "ep-overlap-invalid",
            Kind::Error,
            probe(moe(), &[(EP_OVERLAP, json!(true)), (EP, json!(4))]),
            probe(moe(), &[(EP_OVERLAP, json!(true)), (EP, json!(4)), (DISPATCHER, json!("alltoall"))]),
        )
        .fix(&[(DISPATCHER, json!("alltoall"))]),
        case("cuda-graph-local-bridge", Kind::Warning, probe(dense(), &[(GRAPH_IMPL, json!("local"))]), probe(dense(), &[(GRAPH_IMPL, json!("transformer_engine"))]))
            .fix(&[(GRAPH_IMPL, json!("transformer_engine"))]),
        case("cuda-graph-scope-without-impl", Kind::Info, probe(dense(), &[(GRAPH_SCOPE, json!(["attn"]))]), probe(dense(), &[(GRAPH_SCOPE, json!(["attn"])), (GRAPH_IMPL, json!("transformer_engine"))]))
            .fix(&[(GRAPH_IMPL, json!("transformer_engine"))]),
        // The dense model has no MoE layer to graph.
        case(
            "cuda-graph-scope-invalid",
            Kind::Error,
            probe(dense(), &[(GRAPH_IMPL, json!("transformer_engine")), (GRAPH_SCOPE, json!(["moe", "attn"]))]),
            probe(dense(), &[(GRAPH_IMPL, json!("transformer_engine")), (GRAPH_SCOPE, json!(["attn"]))]),
        )
        .fix(&[(GRAPH_SCOPE, json!(["attn"]))]),
        case("pad-to-capacity-needs-capacity-factor", Kind::Error, probe(moe(), &[(PAD, json!(true))]), probe(moe(), &[(PAD, json!(true)), (CAPACITY, json!(1.0))])).fix(&[(CAPACITY, json!(1.0))]),
        case(
            "deepep-pad-to-capacity",
            Kind::Error,
            probe(moe(), &[("parallelism.expert_model_parallel_size", json!(8)), (DISPATCHER, json!("flex")), (PAD, json!(true)), (CAPACITY, json!(1.0))]),
            probe(moe(), &[("parallelism.expert_model_parallel_size", json!(8)), (DISPATCHER, json!("flex")), (BACKEND, json!("hybridep")), (PAD, json!(true)), (CAPACITY, json!(1.0))]),
        )
        .fix(&[(BACKEND, json!("hybridep"))]),
        // Flex at expert TP 1 × EP 1 (the base plan): megatron-core's MoEFlexTokenDispatcher asserts TP × EP > 1; the
        // fix is the alltoall dispatcher. EP 8 on the node's 8 GPUs passes.
        case(
            "flex-dispatcher-needs-tp-ep",
            Kind::Error,
            probe(moe(), &[(DISPATCHER, json!("flex"))]),
            probe(moe(), &[(DISPATCHER, json!("flex")), ("parallelism.expert_model_parallel_size", json!(8))]),
        )
        .fix(&[(DISPATCHER, json!("alltoall"))]),
        case("flex-backend-without-flex", Kind::Info, probe(moe(), &[("parallelism.expert_model_parallel_size", json!(8)), (BACKEND, json!("hybridep"))]), probe(moe(), &[("parallelism.expert_model_parallel_size", json!(8)), (BACKEND, json!("hybridep")), (DISPATCHER, json!("flex"))]))
            .fix(&[(DISPATCHER, json!("flex"))]),
        // DeepEP's Bridge check rejects the GB300 superchip (compute capability 10, not named B200/B300).
        case(
            "flex-backend-gpu-bridge",
            Kind::Warning,
            probe(moe(), &[("parallelism.expert_model_parallel_size", json!(8)), ("cluster.gpu", json!("gb300")), (DISPATCHER, json!("flex"))]),
            probe(moe(), &[("parallelism.expert_model_parallel_size", json!(8)), ("cluster.gpu", json!("gb300")), (DISPATCHER, json!("flex")), (BACKEND, json!("hybridep"))]),
        )
        .fix(&[(BACKEND, json!("hybridep"))]),
        // TP 2 without SP: Megatron-LM asserts; the fix is SP (seq 4096 divides by TP 2).
        case(
            "tp-comm-overlap-needs-sp",
            Kind::Warning,
            probe(dense(), &[(TP, json!(2)), ("training.tp_comm_overlap", json!(true))]),
            probe(dense(), &[(TP, json!(2)), (SP, json!(true)), ("training.tp_comm_overlap", json!(true))]),
        )
        .fix(&[(SP, json!(true))]),
    ]);
    cases
}

pub fn cases() -> Vec<Case> {
    [optimizer_cases(), low_precision_cases(), recompute_cases(), offload_graph_moe_cases()].into_iter().flatten().collect()
}

#[test]
fn codes() {
    run(cases());
}
