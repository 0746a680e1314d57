//! The memory terms issue 10's settings add, each worked out by hand on a small model (arithmetic in the comments),
//! and the invariants they must keep (proptest).

use meshplan_core::memory::{Location, MemoryReport, Phase, StageMemory, TermKey};
use meshplan_core::report::memory_value;
use proptest::prelude::*;
use serde_json::{Value, json};

/// 2 layers, h 1024, 8 heads = 8 query groups × 128, ffn 4096 (SwiGLU), RMSNorm, no biases, RoPE, untied, vocab 32000.
/// Per layer: QKV 1024·3072 = 3,145,728, proj 1,048,576, fc1 1024·8192 = 8,388,608, fc2 4,194,304 — GEMMs
/// 16,777,216 — and two RMSNorms 2048: 16,779,264. At TP 1: 2 layers 33,558,528, embedding and output layer
/// 32,768,000 each, final norm 1024 → P = 99,095,552 parameters per GPU, of which 33,554,432 are layer GEMMs (FP8/FP4
/// candidates) and 65,541,120 are not.
fn small() -> Value {
    json!({"num_layers": 2, "hidden_size": 1024, "ffn_hidden_size": 4096, "num_attention_heads": 8, "num_query_groups": 8,
           "kv_channels": 128, "vocab_size": 32000, "gated_linear_unit": true, "normalization": "RMSNorm",
           "add_bias_linear": false, "position_embedding_type": "rope", "share_embeddings_and_output_weights": false})
}

const P: u64 = 99_095_552;
const GEMMS: u64 = 33_554_432;
const OTHER: u64 = P - GEMMS;
/// The distributed optimizer's shard over DP 8: P / 8.
const SHARD: u64 = P / 8;

/// `small()` on one node of 8 `gpu`s (TP 1, PP 1, DP 8), seq 2048, mbs 1, GBS 8, no recompute, with `training` added.
fn plan_on(gpu: &str, training: Value) -> Value {
    let mut t = json!({"seq_length": 2048, "micro_batch_size": 1, "global_batch_size": 8, "recompute_granularity": "none"});
    for (k, v) in training.as_object().unwrap() {
        t[k] = v.clone();
    }
    // Megatron-Core's plain defaults: each term is worked out at them (a perf recipe's settings are tuned.rs's tests).
    json!({"model": small(), "defaults": "megatron-core", "cluster": {"gpu": gpu, "gpus_per_node": 8, "num_nodes": 1}, "training": t, "parallelism": {}})
}

fn mem(v: &Value) -> MemoryReport {
    memory_value(v).expect("plannable")
}

fn stage(training: Value) -> StageMemory {
    mem(&plan_on("h100-sxm-80gb", training)).stages[0].clone()
}

fn term(s: &StageMemory, key: TermKey) -> u64 {
    s.terms.iter().filter(|t| t.key == key).map(|t| t.bytes).sum()
}

#[test]
fn grad_buffer_dtype_and_the_fp32_copies_at_the_step() {
    // bf16_mixed keeps an fp32 grad buffer: 4 B per parameter, unsharded (ZeRO-1): 396,382,208 B, and the fp32 master
    // shard reads it as is. grad_reduce_in_fp32 false: 2 B (198,191,104 B), and the step copies the grad shard to
    // fp32 (main_grad.float()): 4 B per shard element, 4 · 12,386,944 = 49,547,776 B at the optimizer step only.
    let fp32 = stage(json!({"use_distributed_optimizer": true}));
    assert_eq!(fp32.gradients_bytes, 4 * P);
    assert_eq!(term(&fp32, TermKey::Fp32GradCopies), 0);
    let bf16 = stage(json!({"use_distributed_optimizer": true, "grad_reduce_in_fp32": false}));
    assert_eq!(bf16.gradients_bytes, 2 * P);
    let copy = bf16.terms.iter().find(|t| t.key == TermKey::Fp32GradCopies).unwrap();
    assert_eq!((copy.bytes, copy.phase), (4 * SHARD, Phase::OptimizerStep));
    assert_eq!(bf16.optimizer_step_bytes + term(&bf16, TermKey::Activations) - bf16.forward_backward_bytes, 4 * SHARD);
}

#[test]
fn the_optimizer_step_bounds_a_stage_whose_state_dominates() {
    // seq 256: activations per layer are an eighth of seq 2048's 83,951,616 B = 10,493,952 B, two layers 20,987,904
    // B, the output side 2·256·1024·2 + 256·32000·6 = 50,200,576 B: 71,188,480 B. Without the distributed optimizer and
    // with bf16 grads the step copies all P grads to fp32: 4 · P = 396,382,208 B > 71,188,480: the step bounds.
    let s = stage(json!({"seq_length": 256, "grad_reduce_in_fp32": false}));
    assert_eq!(s.activations_bytes, 71_188_480);
    assert_eq!(s.bound_by, Phase::OptimizerStep);
    // State: 2 + 2 + 4 + 8 = 16 B per parameter = 1,585,528,832; step + 4 B = 1,981,911,040 B.
    assert_eq!(s.optimizer_step_bytes, 20 * P);
    assert_eq!(s.allocated_bytes, 20 * P);
    assert_eq!(s.forward_backward_bytes, 16 * P + 71_188_480);
}

#[test]
fn precision_aware_optimizer_dtypes_follow_bridges_fp8_recipe() {
    // PA, fp32 main params, bf16 moments, distributed over DP 8. Bridge copies mixed_precision.fp8_recipe (default
    // "tensorwise", even for bf16) onto the optimizer config, so Megatron-Core's use_precision_aware_optimizer_no_fp8_or_ds_fp8
    // is false: Megatron-Core keeps an fp32 master shard (4 · 12,386,944 = 49,547,776 B) and TE FusedAdam only the
    // moments, 2 + 2 B: 49,547,776 B.
    let pa = json!({"use_distributed_optimizer": true, "use_precision_aware_optimizer": true, "exp_avg_dtype": "bf16", "exp_avg_sq_dtype": "bf16"});
    let s = stage(pa.clone());
    assert_eq!((term(&s, TermKey::MasterWeights), term(&s, TermKey::OptimizerMoments)), (4 * SHARD, 4 * SHARD));
    // With fp8_recipe "delayed" the flag holds and TE FusedAdam stores the fp32 master as 16-bit remainders over the
    // bf16 params: 2 B, 24,773,888 B; the grads are read as decoupled_grad, so even a bf16 grad buffer needs no copy.
    let mut delayed = pa.clone();
    delayed["fp8_recipe"] = json!("delayed");
    delayed["grad_reduce_in_fp32"] = json!(false);
    let s = stage(delayed);
    assert_eq!(term(&s, TermKey::MasterWeights), 2 * SHARD);
    assert_eq!(term(&s, TermKey::Fp32GradCopies), 0);
    // fp16 master params also set the flag: 2 B; FP8 moments (uint8) 1 + 1 B: 24,773,888 B each.
    let mut low = pa;
    low["main_params_dtype"] = json!("fp16");
    low["exp_avg_dtype"] = json!("fp8");
    low["exp_avg_sq_dtype"] = json!("fp8");
    let s = stage(low);
    assert_eq!((term(&s, TermKey::MasterWeights), term(&s, TermKey::OptimizerMoments)), (2 * SHARD, 2 * SHARD));
    // SGD without PA: fp32 master 4 B and one momentum buffer 4 B per shard element.
    let s = stage(json!({"use_distributed_optimizer": true, "optimizer": "sgd"}));
    assert_eq!(s.optimizer_bytes, 8 * SHARD);
}

#[test]
fn fp8_and_fp4_weights_per_recipe_and_gpu_generation() {
    let weights = |gpu: &str, training: Value| {
        let s = mem(&plan_on(gpu, training)).stages[0].clone();
        (s.parameters_bytes, term(&s, TermKey::WeightCache))
    };
    let fp8 = |recipe: &str, gather: bool| {
        json!({"precision": "fp8", "fp8_recipe": recipe, "use_distributed_optimizer": true, "fp8_param_gather": gather,
               "first_last_layers_bf16": false, "reuse_grad_buf_for_mxfp8_param_ag": gather && recipe == "mxfp8"})
    };
    // Non-GEMM parameters stay bf16: 65,541,120 · 2 = 131,082,240 B. H100, tensorwise FP8 primary weights: data +
    // transpose 2 B per GEMM weight → 67,108,864 B; 198,191,104 B in all, no cache.
    assert_eq!(weights("h100-sxm-80gb", fp8("tensorwise", true)), (2 * OTHER + 2 * GEMMS, 0));
    // B200 (Blackwell): non-TN FP8 GEMMs, no transpose: 1 B → 131,082,240 + 33,554,432 = 164,636,672 B.
    assert_eq!(weights("b200", fp8("tensorwise", true)), (2 * OTHER + GEMMS, 0));
    // MXFP8: data and columnwise data, each with an E8M0 scale per 32: 2.0625 B → 69,206,016 + 131,082,240.
    assert_eq!(weights("b200", fp8("mxfp8", true)), (2 * OTHER + 69_206_016, 0));
    // bf16 parameters under FP8 (fp8_param_gather false): 2 B weights and TE's cached quantized workspace per module,
    // 2 B per GEMM weight on Hopper: 67,108,864 B more, in the parameters.
    assert_eq!(weights("h100-sxm-80gb", fp8("tensorwise", false)), (2 * P + 2 * GEMMS, 2 * GEMMS));
    // NVFP4 primary weights: packed 4-bit data both ways with an E4M3 scale per 16: 1.125 B → 37,748,736 B.
    let fp4 = json!({"precision": "fp4", "use_distributed_optimizer": true, "fp4_param_gather": true});
    assert_eq!(weights("gb200", fp4), (2 * OTHER + 37_748_736, 0));
    // Without TE's cache (disable_parameter_transpose_cache) the weight is re-quantized each microbatch and saved for
    // backward: one 2 B copy per GEMM weight per microbatch in flight (1 at PP 1), in the forward/backward phase.
    let mut no_cache = fp8("tensorwise", false);
    no_cache["disable_parameter_transpose_cache"] = json!(true);
    let s = stage(no_cache);
    assert_eq!((s.parameters_bytes, term(&s, TermKey::QuantizedWeightCopies)), (2 * P, 2 * GEMMS));
    // Bridge's current-scaling default keeps the first and last layer in BF16: here both layers, nothing quantized.
    let s = stage(json!({"precision": "fp8", "fp8_recipe": "tensorwise", "use_distributed_optimizer": true, "fp8_param_gather": false}));
    assert_eq!((s.parameters_bytes, term(&s, TermKey::WeightCache)), (2 * P, 0));
}

#[test]
fn fp8_saves_gemm_inputs_at_one_byte() {
    // t = 2048, TP 1. BF16 layer: attention norm in + QKV in 2·t·1024·2 = 8,388,608; Q, K, V t·3072·2 = 12,582,912;
    //   O t·1024·2 = 4,194,304 (also the projection's input); LSE t·8·4 = 65,536 → 25,231,360. MLP: norm in + fc1 in
    //   8,388,608; fc1 out t·8192·2 = 33,554,432; fc2 in t·4096·2 = 16,777,216 → 58,720,256. Layer 83,951,616 B.
    // FP8 layer: the QKV, projection, fc1 and fc2 inputs are saved at 1 B; the projection's is a new copy (O stays
    //   bf16 for flash attention): attention 4,194,304 + 2,097,152 + 12,582,912 + 4,194,304 + 2,097,152 + 65,536 =
    //   25,231,360; MLP 4,194,304 + 2,097,152 + 33,554,432 + 8,388,608 = 48,234,496 → 73,465,856 B.
    // The output side stays BF16 (a ColumnParallelLinear): norm in/out 8,388,608 + logits and fp32 softmax
    //   t·32000·6 = 393,216,000 → 401,604,608 B.
    let bf16 = stage(json!({}));
    assert_eq!(bf16.activations_per_microbatch_bytes, 2 * 83_951_616 + 401_604_608);
    let fp8 = json!({"precision": "fp8", "fp8_recipe": "tensorwise", "first_last_layers_bf16": false});
    assert_eq!(stage(fp8.clone()).activations_per_microbatch_bytes, 2 * 73_465_856 + 401_604_608);
    // Selective core_attn under FP8 frees the LSE and flash attention's bf16 O (the projection keeps its FP8 copy):
    //   −65,536 − 4,194,304 per layer; its working set is one layer's: 4,259,840 B.
    let mut core = fp8.clone();
    core["recompute_granularity"] = json!("selective");
    let s = stage(core);
    assert_eq!(s.activations_per_microbatch_bytes, 2 * (73_465_856 - 4_259_840) + 401_604_608);
    assert_eq!(s.overhead.recompute_transient_bytes, 4_259_840);
    // `mlp` (a normal checkpoint) keeps the MLP's input only: frees fc1 in 2,097,152 + fc1 out 33,554,432 + fc2 in
    //   8,388,608 = 44,040,192 per layer, re-created for one layer in backward.
    let mut mlp = fp8;
    mlp["recompute_granularity"] = json!("selective");
    mlp["recompute_modules"] = json!(["mlp"]);
    let s = stage(mlp);
    assert_eq!(s.activations_per_microbatch_bytes, 2 * (73_465_856 - 44_040_192) + 401_604_608);
    assert_eq!(s.overhead.recompute_transient_bytes, 44_040_192);
    // `layernorm` is a no-op on dense TE layers (the norms are fused into linear_qkv and fc1).
    let ln = stage(json!({"recompute_granularity": "selective", "recompute_modules": ["layernorm"]}));
    assert_eq!(ln.activations_per_microbatch_bytes, bf16.activations_per_microbatch_bytes);
}

/// 2 MoE layers, h 1024, 8 heads × 128, 8 experts of width 512, top-2, EP 4 ETP 1 on 8 H100s (PP 1).
fn moe_plan(training: Value) -> Value {
    let mut v = plan_on("h100-sxm-80gb", training);
    v["model"] = json!({"num_layers": 2, "hidden_size": 1024, "ffn_hidden_size": 4096, "num_attention_heads": 8,
                        "num_query_groups": 8, "kv_channels": 128, "vocab_size": 32000, "gated_linear_unit": true,
                        "num_moe_experts": 8, "moe_router_topk": 2, "moe_ffn_hidden_size": 512, "position_embedding_type": "rope"});
    v["parallelism"] = json!({"expert_model_parallel_size": 4, "expert_tensor_parallel_size": 1});
    v
}

#[test]
fn routed_tokens_follow_capacity_padding_and_imbalance() {
    // t = 2048 local tokens, top-2: 4096 routed on average. Per routed token a MoE layer saves the expert input
    // 1024·2, fc1 out 1024·2, activation 512·2 and an fp32 probability 4 = 5,124 B.
    let per_mb = |training: Value| mem(&moe_plan(training)).stages[0].activations_per_microbatch_bytes;
    let base = per_mb(json!({}));
    // Imbalance 1.5 on the hot rank: 6144 tokens, 2048 more per layer: 2 · 2048 · 5,124 = 20,987,904 B.
    assert_eq!(per_mb(json!({"moe_routing_imbalance_factor": 1.5})) - base, 20_987_904);
    // Forced uniform routing ignores the factor.
    assert_eq!(per_mb(json!({"moe_routing_imbalance_factor": 1.5, "moe_router_force_load_balancing": true})), base);
    // Capacity factor 1.5 padded: capacity ⌈2048·2/8·1.5⌉ = 768 per expert from each source, 8 experts · 768 = 6144
    // tokens whatever the routing; capacity 1.0 without padding caps the hot rank at 4096.
    assert_eq!(per_mb(json!({"moe_expert_capacity_factor": 1.5, "moe_pad_expert_input_to_capacity": true})) - base, 20_987_904);
    assert_eq!(per_mb(json!({"moe_expert_capacity_factor": 1.0, "moe_routing_imbalance_factor": 2.0})), base);
}

#[test]
fn moe_and_mla_recompute_modules() {
    let per_mb = |training: Value| mem(&moe_plan(training)).stages[0].activations_per_microbatch_bytes;
    let sel = |modules: Value| per_mb(json!({"recompute_granularity": "selective", "recompute_modules": modules}));
    let none = per_mb(json!({}));
    // moe_act discards the activation output (fc2's input): 4096 routed tokens · 512 · 2 = 4,194,304 B per layer.
    assert_eq!(none - sel(json!(["moe_act"])), 2 * 4_194_304);
    // moe keeps only the block's input (the pre-MLP norm's input and output): it frees the fp32 router logits and
    // probabilities 2·2048·8·4 = 131,072, the experts' 4096·(2048 + 2048 + 1024) = 20,971,520 and the probabilities
    // 16,384: 21,118,976 B per layer.
    assert_eq!(none - sel(json!(["moe"])), 2 * 21_118_976);
    // layernorm discards the MoE layer's real pre-MLP norm output, t·1024·2 = 4,194,304 B (the attention norm is fused).
    assert_eq!(none - sel(json!(["layernorm"])), 2 * 4_194_304);
    // MLA (h 1024, 8 heads, q_lora 256, kv_lora 128, qk 64 + rope 32, v 64), dense, TP 1: mla_up_proj discards Q
    // t·8·96 = t·768 and K, V t·8·(96 + 64) = t·1280 (a K and V head per query head): t·2048 elements · 2 B =
    // 8,388,608, and the up-projections' inputs (the latent norms' outputs) t·(256 + 128)·2 = 1,572,864: 9,961,472 B
    // per layer.
    let mla = |modules: Value| {
        let mut v = plan_on("h100-sxm-80gb", json!({"recompute_granularity": "selective", "recompute_modules": modules}));
        v["model"] = json!({"num_layers": 2, "hidden_size": 1024, "ffn_hidden_size": 4096, "num_attention_heads": 8,
                            "vocab_size": 32000, "gated_linear_unit": true, "position_embedding_type": "rope",
                            "multi_latent_attention": true, "q_lora_rank": 256, "kv_lora_rank": 128, "qk_head_dim": 64,
                            "qk_pos_emb_head_dim": 32, "v_head_dim": 64});
        mem(&v).stages[0].clone()
    };
    let (plain, up) = (mla(json!(["core_attn"])), mla(json!(["core_attn", "mla_up_proj"])));
    assert_eq!(plain.activations_per_microbatch_bytes - up.activations_per_microbatch_bytes, 2 * 9_961_472);
}

#[test]
fn dispatcher_working_sets_and_library_buffers() {
    let s = |training: Value| mem(&moe_plan(training)).stages[0].clone();
    // alltoall: send, receive and sorted copies of the 4096 routed tokens, 3 · 4096 · 1024 · 2 = 25,165,824 B.
    let a2a = s(json!({"moe_token_dispatcher_type": "alltoall"}));
    assert_eq!(term(&a2a, TermKey::MoeDispatchWorkingSet), 25_165_824);
    // allgather: the EP group's 4 · 2048 tokens, then two local copies: (8192 + 8192) · 2048 = 33,554,432 B.
    assert_eq!(term(&s(json!({})), TermKey::MoeDispatchWorkingSet), 33_554_432);
    // flex + DeepEP: one permuted copy (8,388,608 B) and DeepEP's buffers outside the allocator, in nccl_bytes: EP 4,
    // h 1024: 10 · 4 · 5 · 4 = 800 + 10 · 4 · 256 · (2048 + 8 + 1024 + 512 + 512) = 42,025,760 B.
    let flex = s(json!({"moe_token_dispatcher_type": "flex"}));
    assert_eq!(term(&flex, TermKey::MoeDispatchWorkingSet), 8_388_608);
    let deepep = flex.terms.iter().find(|t| t.key == TermKey::MoeCommBuffers).unwrap();
    assert_eq!((deepep.bytes, deepep.allocated), (42_025_760, false));
    assert_eq!(flex.overhead.nccl_bytes - term(&flex, TermKey::NcclBuffers), 42_025_760);
}

#[test]
fn optimizer_offload_bridge_and_megatron_lm() {
    // DP 8 shard: 12,386,944 elements. Host per offloaded element: fp32 master 4 + fp32 moments 8 + fp32 grad 4.
    let off = |pa: bool, f: f64| {
        let mut t = json!({"use_distributed_optimizer": true, "optimizer_cpu_offload": true, "optimizer_offload_fraction": f});
        if pa {
            t["use_precision_aware_optimizer"] = json!(true);
        }
        let r = mem(&plan_on("h100-sxm-80gb", t));
        (r.stages[0].clone(), r.host_bytes_per_node)
    };
    // Bridge (precision-aware optimizer off): the fp32 master shard stays on the GPU, 49,547,776 B; the moments leave:
    // 0 on the GPU; host 16 · 12,386,944 = 198,191,104 B per GPU, 1,585,528,832 B per node of 8.
    let (s, node) = off(false, 1.0);
    assert_eq!((term(&s, TermKey::MasterWeights), term(&s, TermKey::OptimizerMoments)), (4 * SHARD, 0));
    assert_eq!((s.host_bytes, node), (16 * SHARD, 8 * 16 * SHARD));
    // A quarter offloaded: 3/4 of the 8 B moments stay (74,321,664 B), the host holds a quarter (49,547,776 B).
    let (s, _) = off(false, 0.25);
    assert_eq!((term(&s, TermKey::OptimizerMoments), s.host_bytes), (6 * SHARD, 4 * SHARD));
    // Megatron-LM (precision-aware optimizer on): no Megatron-Core master; everything of the shard leaves at F = 1.
    let (s, _) = off(true, 1.0);
    assert_eq!((s.optimizer_bytes, s.host_bytes), (0, 16 * SHARD));
    let host = s.terms.iter().find(|t| t.key == TermKey::HostOptimizerState).unwrap();
    assert_eq!(host.location, Location::Host);
}

#[test]
fn host_memory_per_node_against_the_cluster() {
    // The Bridge offload above needs 1,585,528,832 B per node: 1 GiB nodes (1,073,741,824 B) do not hold it, 2 GiB do.
    let with_host = |gib: f64| {
        let mut v = plan_on("h100-sxm-80gb", json!({"use_distributed_optimizer": true, "optimizer_cpu_offload": true}));
        v["cluster"]["host_memory_per_node_gb"] = json!(gib);
        mem(&v)
    };
    let small = with_host(1.0);
    assert_eq!((small.host_memory_per_node_bytes, small.host_fits), (Some(1 << 30), Some(false)));
    assert_eq!(with_host(2.0).host_fits, Some(true));
    // Without a cluster value the GPU's reference system gives it (gpus.json: DGX H100, 2,048 GiB per node).
    let dgx = mem(&plan_on("h100-sxm-80gb", json!({"use_distributed_optimizer": true, "optimizer_cpu_offload": true})));
    assert_eq!((dgx.host_memory_per_node_bytes, dgx.host_fits), (Some(2048 << 30), Some(true)));
    // Unknown host memory (the catalogue states none for the L40S): not judged.
    assert_eq!(stage_host_unknown().host_fits, None);
}

fn stage_host_unknown() -> MemoryReport {
    mem(&plan_on("l40s", json!({"use_distributed_optimizer": true, "optimizer_cpu_offload": true})))
}

#[test]
fn megatron_fsdp_shards_and_its_unsharded_units() {
    // optim_grads_params over DP 8: weights 2 · P / 8 = 24,773,888 B, grads 4 · P / 8 = 49,547,776 B; two units
    // (layers of 16,779,264 parameters) unsharded in bf16 weights + fp32 grads: 2 · 16,779,264 · 6 = 201,351,168 B.
    let s = stage(json!({"use_megatron_fsdp": true, "data_parallel_sharding_strategy": "optim_grads_params"}));
    assert_eq!((s.parameters_bytes, s.gradients_bytes), (2 * SHARD, 4 * SHARD));
    assert_eq!(term(&s, TermKey::FsdpUnshardedBuffers), 201_351_168);
    // optim (ZeRO-1): only the optimizer state is sharded, no unit buffers.
    let s = stage(json!({"use_megatron_fsdp": true, "data_parallel_sharding_strategy": "optim"}));
    assert_eq!((s.parameters_bytes, s.gradients_bytes, s.optimizer_bytes), (2 * P, 4 * P, 12 * SHARD));
    assert_eq!(term(&s, TermKey::FsdpUnshardedBuffers), 0);
}

#[test]
fn cuda_graph_buffers_and_deferred_wgrad() {
    // TE graphs of attn and mlp: one callable per layer covers both (transformer_layer.py _te_cuda_graph_capture), and
    // with TE's buffer reuse it keeps its static input only, 2048 · 1024 · 2 = 4,194,304 B; 2 layers, 1 microbatch in
    // flight: 8,388,608 B, held for the whole step.
    let s = stage(json!({"cuda_graph_impl": "transformer_engine", "cuda_graph_scope": ["attn", "mlp"]}));
    let g = s.terms.iter().find(|t| t.key == TermKey::CudaGraphBuffers).unwrap();
    assert_eq!((g.bytes, g.phase), (8_388_608, Phase::Persistent));
    // Deferred output-layer wgrad, GBS 32 (4 microbatches), limit 2: two microbatches' output-layer input
    // t·1024·2 = 4,194,304 and logits gradient t·32000·2 = 131,072,000: 270,532,608 B on the last stage.
    let s = stage(json!({"global_batch_size": 32, "defer_embedding_wgrad_compute": true, "wgrad_deferral_limit": 2}));
    assert_eq!(term(&s, TermKey::DeferredWgradBuffers), 270_532_608);
}

#[test]
fn activation_offloading_moves_module_inputs_to_the_host() {
    // BF16, offload qkv_linear (the norm output, t·1024 = 2,097,152 elements ≥ the 1,048,576 minimum, 4,194,304 B)
    // and core_attn (Q, K, V: 12,582,912 B) per layer: 16,777,216 B per layer, 33,554,432 B over the stage; the last
    // layer's groups stay on the GPU, so the host holds one layer's 16,777,216 B and the GPU saves that much less.
    let base = stage(json!({}));
    let s = stage(json!({"fine_grained_activation_offloading": true, "offload_modules": ["qkv_linear", "core_attn"]}));
    assert_eq!(s.host_bytes, 16_777_216);
    assert_eq!(base.activations_bytes - s.activations_bytes, 16_777_216);
}

#[test]
fn cpu_offloading_keeps_the_other_layers_and_one_in_flight() {
    // The small model at 8 layers, seq 2048: 83,951,616 B saved per layer (as above). Offloading n of the 8 layers
    // (TE's offload handler: each offloaded layer freed once its copy is done, one copy in flight) keeps 8 − n layers
    // and one offloaded layer on the GPU: n = 4 saves 3 layers, 251,854,848 B, which the host holds.
    let eight = |training: Value| {
        let mut v = plan_on("h100-sxm-80gb", training);
        v["model"]["num_layers"] = json!(8);
        mem(&v).stages[0].clone()
    };
    let base = eight(json!({}));
    let s = eight(json!({"cpu_offloading": true, "cpu_offloading_num_layers": 4}));
    assert_eq!(base.activations_bytes - s.activations_bytes, 251_854_848);
    assert_eq!(s.host_bytes, 251_854_848);
    // One layer offloaded: its copy is the one in flight, so nothing leaves the peak.
    let one = eight(json!({"cpu_offloading": true, "cpu_offloading_num_layers": 1}));
    assert_eq!((one.activations_bytes, one.host_bytes), (base.activations_bytes, 0));
    // The layer count without the switch offloads nothing (Megatron-Core builds no offload context).
    let off = eight(json!({"cpu_offloading_num_layers": 4}));
    assert_eq!((off.activations_bytes, off.host_bytes), (base.activations_bytes, 0));
}

// ---------------------------------------------------------------------------------------------------------------
// Invariants
// ---------------------------------------------------------------------------------------------------------------

fn peaks(v: &Value) -> (u64, u64) {
    let m = mem(v);
    (m.peak_bytes, m.allocated_peak_bytes)
}

fn models() -> Vec<(&'static str, Value, u64)> {
    // (name, model, GPUs): a small dense model and a small MoE, and two presets.
    vec![
        ("small", small(), 8),
        ("moe", moe_plan(json!({}))["model"].clone(), 8),
        ("llama-3.1-8b", json!("llama-3.1-8b"), 8),
        ("qwen3-30b-a3b", json!("qwen3-30b-a3b"), 16),
    ]
}

fn on(model: &Value, gpus: u64, training: Value) -> Value {
    let mut v = plan_on("h100-sxm-80gb", training);
    v["model"] = model.clone();
    v["cluster"]["num_nodes"] = json!(gpus / 8);
    if model.get("num_moe_experts").is_some() || model == "qwen3-30b-a3b" {
        v["parallelism"] = json!({"expert_model_parallel_size": 4, "expert_tensor_parallel_size": 1});
    }
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn lower_precision_optimizer_state_never_raises_memory(
        m in 0usize..4, step in 0usize..3, main_fp16 in any::<bool>(), grads_fp32 in any::<bool>(), recipe in 0usize..3,
    ) {
        let (name, model, gpus) = models().swap_remove(m);
        let dtypes = ["fp32", "bf16", "fp8"];
        let recipes = ["tensorwise", "delayed", "mxfp8"];
        let at = |d: usize, fp16: bool| on(&model, gpus, json!({
            "use_distributed_optimizer": true, "use_precision_aware_optimizer": true, "grad_reduce_in_fp32": grads_fp32,
            "exp_avg_dtype": dtypes[d], "exp_avg_sq_dtype": dtypes[d], "main_params_dtype": if fp16 { "fp16" } else { "fp32" },
            "fp8_recipe": recipes[recipe],
        }));
        // One moment dtype step down (fp32 → bf16 → fp8), and fp32 → fp16 master weights.
        let lower = (step + 1).min(2);
        let (a, b) = (peaks(&at(step, main_fp16)), peaks(&at(lower, main_fp16)));
        prop_assert!(b.0 <= a.0 && b.1 <= a.1, "{name}: moments {} → {}: {a:?} → {b:?}", dtypes[step], dtypes[lower]);
        let (a, b) = (peaks(&at(step, false)), peaks(&at(step, true)));
        prop_assert!(b.0 <= a.0 && b.1 <= a.1, "{name}: master fp32 → fp16: {a:?} → {b:?}");
    }

    #[test]
    fn full_offload_leaves_no_optimizer_state_on_the_device(m in 0usize..4, pa in any::<bool>(), distributed in any::<bool>()) {
        let (name, model, gpus) = models().swap_remove(m);
        let v = on(&model, gpus, json!({"use_distributed_optimizer": distributed || pa, "use_precision_aware_optimizer": pa,
                                        "optimizer_cpu_offload": true, "optimizer_offload_fraction": 1.0}));
        for s in mem(&v).stages {
            // No moments on the GPU ever; with the precision-aware optimizer (Megatron-LM's offload) no master either.
            // Bridge without it keeps Megatron-Core's fp32 master shard on the GPU (measured: memory-validation.md).
            prop_assert_eq!(term(&s, TermKey::OptimizerMoments), 0, "{}", name);
            if pa {
                prop_assert_eq!(s.optimizer_bytes, 0, "{}", name);
            }
            prop_assert!(s.host_bytes > 0);
        }
    }

    #[test]
    fn fp8_param_gather_never_adds_memory(
        m in 0usize..4, recipe in 0usize..4, gpu in 0usize..3, no_cache in any::<bool>(), first_last in any::<bool>(),
    ) {
        let (name, model, gpus) = models().swap_remove(m);
        let recipes = ["tensorwise", "delayed", "blockwise", "mxfp8"];
        let gpus_of = ["h100-sxm-80gb", "b200", "gb200"];
        let at = |gather: bool, precision: &str| {
            let mut v = on(&model, gpus, json!({
                "precision": precision, "fp8_recipe": recipes[recipe], "use_distributed_optimizer": true,
                "fp8_param_gather": gather, "fp4_param_gather": gather, "reuse_grad_buf_for_mxfp8_param_ag": gather && recipe == 3,
                "disable_parameter_transpose_cache": no_cache, "first_last_layers_bf16": first_last,
            }));
            v["cluster"]["gpu"] = json!(gpus_of[gpu]);
            v["cluster"]["gpus_per_node"] = json!(if gpu == 2 { 4 } else { 8 });
            v["cluster"]["num_nodes"] = json!(if gpu == 2 { gpus / 4 } else { gpus / 8 });
            peaks(&v)
        };
        for precision in ["fp8", "fp4"] {
            let (off, on_) = (at(false, precision), at(true, precision));
            prop_assert!(on_.0 <= off.0 && on_.1 <= off.1, "{name} {precision} {}: {off:?} → {on_:?}", recipes[recipe]);
        }
    }

    #[test]
    fn adding_a_recompute_module_never_raises_activations(m in 0usize..4, base in prop::collection::vec(0usize..7, 0..4), add in 0usize..7, fp8 in any::<bool>()) {
        let (name, model, gpus) = models().swap_remove(m);
        let modules = ["core_attn", "mlp", "moe", "moe_act", "shared_experts", "layernorm", "mla_up_proj"];
        let list = |extra: Option<usize>| -> Vec<&str> {
            let mut l: Vec<&str> = base.iter().map(|&i| modules[i]).collect();
            l.extend(extra.map(|i| modules[i]));
            l
        };
        let act = |l: Vec<&str>| {
            let v = on(&model, gpus, json!({"recompute_granularity": "selective", "recompute_modules": l,
                                            "precision": if fp8 { "fp8" } else { "bf16" }}));
            mem(&v).stages.iter().map(|s| s.activations_bytes).collect::<Vec<_>>()
        };
        let (before, after) = (act(list(None)), act(list(Some(add))));
        for (b, a) in before.iter().zip(&after) {
            prop_assert!(a <= b, "{name}: + {}: {before:?} → {after:?}", modules[add]);
        }
    }
}

/// Transformer Engine's fused loss writes the gradient over the bf16 logits it saves and keeps no fp32 copy
/// (transformer_engine/pytorch/cross_entropy.py); Megatron-Core's own fused kernel saves the fp32 exp_logits as the
/// unfused loss does (fusions/fused_cross_entropy.py l.119). `small()` at seq 2048, mbs 1, TP 1, PP 1 (one microbatch
/// in flight on the only stage): logits 2048 · 32000 = 65,536,000 elements, the fp32 copy 4 B each = 262,144,000 B.
#[test]
fn te_fused_cross_entropy_keeps_no_fp32_copy_of_the_logits() {
    let unfused = stage(json!({}));
    let native = stage(json!({"cross_entropy_loss_fusion": true, "cross_entropy_fusion_impl": "native"}));
    let te = stage(json!({"cross_entropy_loss_fusion": true, "cross_entropy_fusion_impl": "te"}));
    // te without the fusion switch is not run (language_module.py reads the impl only under cross_entropy_loss_fusion).
    let te_off = stage(json!({"cross_entropy_loss_fusion": false, "cross_entropy_fusion_impl": "te"}));
    assert_eq!(native.activations_bytes, unfused.activations_bytes);
    assert_eq!(te_off.activations_bytes, unfused.activations_bytes);
    assert_eq!(unfused.activations_bytes - te.activations_bytes, 262_144_000);
}
