//! Performance model: FLOPs, MFU range, communication placement and the pipeline bubble.

use meshplan_core::{Report, perf, plan_value};
use serde_json::{Value, json};

/// A plan on H100 nodes with Megatron-Core's plain defaults: the figures below are worked by hand under them.
fn plan(model: &str, nodes: u64, training: Value, par: Value) -> Report {
    plan_value(&json!({"model": model, "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": nodes},
                       "training": training, "parallelism": par, "defaults": "megatron-core"}))
    .expect("plan parses")
}

#[test]
fn llama_3_1_8b_flops_match_hand_calculation() {
    // Llama-3.1-8B: L=32, h=4096, a=32, g=8, d=128, F=14336 (SwiGLU, r=3), V=128256 (a multiple of 128, so TP=1 leaves it unpadded;
    // TP=8 would pad it to 129024).
    // One sequence of s=8192 (B=1): T=8192, S₂=8192².
    //   A_lin = 6·[h·(q+2kv) + q·h] = 6·[4096·(4096+2·1024) + 4096·4096] = 251,658,240 per token per layer
    //   MLP   = 6·h·F·3 = 6·4096·14336·3 = 1,056,964,608 per token per layer
    //   32 layers: 32·1,308,622,848 = 41,875,931,136; logits 6·h·V = 3,152,019,456  → 45,027,950,592 per token
    //   × T: 368,868,971,249,664;  core: S₂·6·q·L = 67,108,864·24,576·32 = 52,776,558,133,248
    //   total = 421,645,529,382,912 FLOPs
    let r = plan("llama-3.1-8b", 1, json!({"seq_length": 8192, "micro_batch_size": 1, "global_batch_size": 8}),
                 json!({"tensor_model_parallel_size": 1}));
    // Eight GPUs, DP = 8: a global batch of 8 sequences (one microbatch each).
    let f = perf::model_flops_per_step(&r.plan, &r.derived);
    assert_eq!(f, 8.0 * 421_645_529_382_912.0);
    assert_eq!(r.performance.as_ref().map(|p| p.model_flops_per_step), Some(f));
}

#[test]
fn mfu_is_a_fraction() {
    for (model, nodes, tp, pp) in [("llama-3.1-8b", 1, 1, 1), ("llama-3.1-70b", 8, 4, 4), ("deepseek-v3", 32, 2, 16), ("gpt3-175b", 16, 8, 8)] {
        let mut par = json!({"tensor_model_parallel_size": tp, "pipeline_model_parallel_size": pp, "sequence_parallel": tp > 1});
        if model == "deepseek-v3" {
            par["expert_model_parallel_size"] = json!(16);
            par["expert_tensor_parallel_size"] = json!(1);
        }
        let r = plan(model, nodes, json!({"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 512,
                                          "recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 1}), par);
        let p = r.performance.expect("divides");
        assert!(p.mfu > 0.0 && p.mfu < 1.0, "{model}: mfu {}", p.mfu);
        // The rates follow from the step time by their definitions: a step is 512 sequences of 4096 tokens on
        // 8·nodes GPUs; MFU is the model TFLOP/s over the H100's dense BF16 peak, 989 TFLOP/s (NVIDIA H100 datasheet).
        let gpus = (8 * nodes) as f64;
        let close = |a: f64, b: f64| (a / b - 1.0).abs() < 1e-9;
        assert!(close(p.tokens_per_s_per_gpu, 512.0 * 4096.0 / (p.step_time_s * gpus)), "{model}: {p:?}");
        assert!(close(p.model_tflops_per_gpu, p.model_flops_per_step / (p.step_time_s * gpus) / 1e12), "{model}: {p:?}");
        assert!(close(p.mfu, p.model_tflops_per_gpu / 989.0), "{model}: {p:?}");
        let b = &p.breakdown;
        let sum = b.compute_s + b.recompute_s + b.tp_comm_s + b.cp_comm_s + b.ep_comm_s + b.pp_comm_s + b.dp_comm_s + b.bubble_s + b.optimizer_s
            + b.moe_routing_s
            + b.memory_bound_s
            + b.quantize_s
            + b.launch_s;
        assert!((sum - p.step_time_s).abs() < 1e-9 * p.step_time_s);
        // terms() lists the same thirteen fields once each.
        assert_eq!(b.terms().iter().map(|t| t.1).sum::<f64>(), sum);
        assert!(b.recompute_s > 0.0);
    }
}

#[test]
fn tp_across_nodes_costs_more_than_inside_one() {
    let training = json!({"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 64});
    let inside = plan("llama-3.1-70b", 2, training.clone(), json!({"tensor_model_parallel_size": 8, "sequence_parallel": true}));
    let across = plan("llama-3.1-70b", 2, training, json!({"tensor_model_parallel_size": 16, "sequence_parallel": true}));
    let (a, b) = (inside.performance.unwrap(), across.performance.unwrap());
    assert!(b.breakdown.tp_comm_s > 2.0 * a.breakdown.tp_comm_s, "{} vs {}", b.breakdown.tp_comm_s, a.breakdown.tp_comm_s);
}

#[test]
fn bubble_share_follows_pp_vpp_and_microbatches() {
    let training = json!({"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 32});
    let r = plan("llama-3.1-70b", 4, training.clone(), json!({"tensor_model_parallel_size": 4, "pipeline_model_parallel_size": 8}));
    let p = r.performance.unwrap();
    let b = &p.breakdown;
    // DP = 1, m = 32: bubble = (8−1)/32 of a stage's pipelined compute.
    // Pipelined: every per-micro-batch term (compute, recompute, exposed TP/CP/EP, MoE routing, memory-bound,
    // quantize, launch); DP, PP p2p and the optimizer are outside the pipeline.
    let pipelined = |b: &perf::Breakdown| {
        b.compute_s + b.recompute_s + b.tp_comm_s + b.cp_comm_s + b.ep_comm_s + b.moe_routing_s + b.memory_bound_s + b.quantize_s + b.launch_s
    };
    // The bubble is the fill and drain through the stages other than the slowest (perf/stages.rs): the last stage
    // (10 layers and the output layer) is the slowest, the others hold 10 layers each. BF16, so time ∝ FLOPs; per
    // token, as in the_slowest_pipeline_stage_sets_the_step: a layer 6·(8192·(8192 + 2·1024) + 8192·8192 +
    // 3·8192·28672) + 6·8192·4096 = 5,133,828,096 + 201,326,592 = 5,335,154,688; the output layer 6·8192·128,512 =
    // 6,316,621,824 (the vocabulary 128,256 padded to a multiple of 128·TP = 512); the last stage 10 layers
    // (53,351,546,880) + logits. A stage without the logits: the pipelined terms less the logits' share of the last
    // stage's compute.
    // The output layer runs at the rate of its width V/TP = 32,128 against the layers' h/TP = 2048 (perf.rs: the
    // vocabulary-parallel GEMM), so in layer-rate FLOPs it is G' = 6,316,621,824·w(2048)/w(32,128), w(x) = x/(x + w₀).
    let w0 = perf::constants().gemm_width_half;
    let w = |x: f64| x / (x + w0);
    let g = 6_316_621_824.0 * w(2048.0) / w(32_128.0);
    let other = |b: &perf::Breakdown| pipelined(b) - b.compute_s * g / (53_351_546_880.0 + g);
    assert!((b.bubble_s / other(b) - 7.0 / 32.0).abs() < 1e-12, "{} {}", b.bubble_s, other(b));
    let v = plan("llama-3.1-70b", 4, training, json!({"tensor_model_parallel_size": 4, "pipeline_model_parallel_size": 8,
                                                      "virtual_pipeline_model_parallel_size": 5}));
    let vb = &v.performance.unwrap().breakdown;
    // Interleaved: the logits sit in the last rank's last chunk, on neither the fill's nor the drain's path; the
    // bubble is 1/VPP as long.
    assert!((vb.bubble_s / other(vb) - 7.0 / 160.0).abs() < 1e-12);
}

#[test]
fn no_performance_when_world_does_not_divide() {
    let r = plan("llama-3.1-8b", 1, json!({"seq_length": 4096}), json!({"tensor_model_parallel_size": 3}));
    assert!(r.performance.is_none());
}

#[test]
fn embedded_constants_parse() {
    let embedded: Value = serde_json::from_str(include_str!("../data/perf_constants.json")).unwrap();
    let c: perf::Constants = serde_json::from_value(embedded["constants"].clone()).unwrap();
    assert_eq!(&c, perf::constants());
}

#[test]
fn upper_case_order_prices_cross_node_dp_at_the_nic() {
    // Megatron lowercases the order, so "TP-CP-EP-DP-PP" is the default order. 64 H100 (8 per node, NVLink domain 8),
    // TP 8 → DP 8: a DP group is {r, r+8, …, r+56}, one rank per node, so its gradients go over the NIC.
    let training = json!({"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 64, "use_distributed_optimizer": true});
    let par = |order: &str| json!({"tensor_model_parallel_size": 8, "sequence_parallel": true, "order": order});
    let upper = plan("llama-3.1-8b", 8, training.clone(), par("TP-CP-EP-DP-PP"));
    let lower = plan("llama-3.1-8b", 8, training, par("tp-cp-ep-dp-pp"));
    let (u, l) = (upper.performance.unwrap(), lower.performance.unwrap());
    assert_eq!(u.breakdown.dp_comm_s, l.breakdown.dp_comm_s);
    assert_eq!(u, l);
    // Distributed optimizer: FP32 grads reduce-scattered (4 B) + BF16 params all-gathered (2 B), ring (n−1)/n over
    // DP·CP = 8 ranks, of the TP-sharded parameters P/8, at the NIC's 400 Gb/s = 50 GB/s × bandwidth efficiency;
    // without overlap_grad_reduce all of it shows. No routed experts, so the expert term is 0.
    let c = perf::constants();
    let params = upper.derived.total_parameters as f64 / 8.0;
    let expected = 7.0 / 8.0 * params * 6.0 / (50e9 * c.bandwidth_efficiency);
    assert!((u.breakdown.dp_comm_s - expected).abs() < 1e-12 * expected, "{} vs {expected}", u.breakdown.dp_comm_s);
}

#[test]
fn dp_groups_strided_by_pp_leave_the_node() {
    // --use-tp-pp-dp-mapping order tp-cp-ep-pp-dp on 16 H100 (2 nodes of 8): TP 1, PP 2 → DP 8 with stride TP·CP·PP = 2,
    // so a DP group is {r, r+2, …, r+14}, over both nodes: NIC bandwidth. With the default order tp-cp-ep-dp-pp the DP
    // stride is 1 and a group {r, …, r+7} is one node: NVLink.
    let training = json!({"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 64, "use_distributed_optimizer": true});
    let par = |order: &str| json!({"tensor_model_parallel_size": 1, "pipeline_model_parallel_size": 2, "order": order});
    let strided = plan("llama-3.1-8b", 2, training.clone(), par("tp-cp-ep-pp-dp")).performance.unwrap();
    let inside = plan("llama-3.1-8b", 2, training, par("tp-cp-ep-dp-pp")).performance.unwrap();
    // Same bytes; NVLink 450 GB/s against the NIC's 400 Gb/s = 50 GB/s: 9 times the time.
    let ratio = strided.breakdown.dp_comm_s / inside.breakdown.dp_comm_s;
    assert!((ratio - 9.0).abs() < 1e-9, "{ratio}");
}

#[test]
fn embedded_assumptions_parse_and_name_their_source() {
    let file: Value = serde_json::from_str(include_str!("../data/perf_assumptions.json")).unwrap();
    let a = perf::assumptions();
    for (key, value) in [
        ("tf32_per_bf16", a.tf32_per_bf16.value),
        ("scale_up_bw_gbps_when_unknown", a.scale_up_bw_gbps_when_unknown.value),
        ("scale_out_gbit_per_gpu_when_unknown", a.scale_out_gbit_per_gpu_when_unknown.value),
        ("gemm_fraction_when_unmeasured", a.gemm_fraction_when_unmeasured.value),
        ("nvfp4_gemm_per_tensorwise_fp8", a.nvfp4_gemm_per_tensorwise_fp8.value),
        ("fp8_blockwise_gemm_per_tensorwise", a.fp8_blockwise_gemm_per_tensorwise.value),
        ("mxfp8_gemm_per_tensorwise", a.mxfp8_gemm_per_tensorwise.value),
        ("quantize_bytes_per_tensor", a.quantize_bytes_per_tensor.value),
        ("quantize_bytes_blockwise", a.quantize_bytes_blockwise.value),
        ("quantize_bytes_mxfp8", a.quantize_bytes_mxfp8.value),
        ("quantize_bytes_nvfp4", a.quantize_bytes_nvfp4.value),
        ("cuda_graph_share_whole_layer", a.cuda_graph_share_whole_layer.value),
        ("cuda_graph_share_per_scope", a.cuda_graph_share_per_scope.value),
        ("flex_dispatcher_bandwidth_fraction", a.flex_dispatcher_bandwidth_fraction.value),
        ("ep_a2a_overlap_hidden", a.ep_a2a_overlap_hidden.value),
        ("moe_permute_bytes_full_iteration_graph", a.moe_permute_bytes_full_iteration_graph.value),
        ("host_optimizer_tbps_per_gpu", a.host_optimizer_tbps_per_gpu.value),
        ("host_link_gbps_per_gpu", a.host_link_gbps_per_gpu.value),
    ] {
        assert_eq!(file[key]["value"].as_f64(), Some(value), "{key}");
        assert!(value > 0.0, "{key}");
        assert!(file[key]["source"].as_str().is_some_and(|s| s.len() > 20), "{key} names no source");
    }
}

#[test]
fn cp_comm_type_prices_each_exchange() {
    // Llama-3.1-8B on 8 H100 (one NVLink domain), CP 2, TP 1, seq 8192, MBS 1, GBS 8: DP 4, 2 micro-batches. The CP
    // group fits the domain: NVLink 450 GB/s × bandwidth_efficiency. Per attention layer (32, PP 1), per micro-batch,
    // a local chunk of 8192/2 = 4096 tokens × 2 B. K,V width 2·8·128 = 2048; Q and output width 32·128 = 4096.
    //   all_gather: (1 fwd + 2 bwd) × (cp−1 = 1) × 2048 × chunk, not overlapped;
    //   a2a (Ulysses): 2 passes × (cp−1)/cp = 1/2 × (2·4096 + 2048) × chunk, not overlapped;
    //   p2p: the all_gather volume × cp_exposed (overlapped with attention).
    let c = perf::constants();
    let chunk = 4096.0 * 2.0 / (450e9 * c.bandwidth_efficiency) * 2.0;
    let cp = |kind: &str| {
        let r = plan("llama-3.1-8b", 1, json!({"seq_length": 8192, "micro_batch_size": 1, "global_batch_size": 8, "cp_comm_type": kind}),
                     json!({"tensor_model_parallel_size": 1, "context_parallel_size": 2}));
        r.performance.unwrap().breakdown.cp_comm_s
    };
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs().max(1e-30);
    let gather = 32.0 * 3.0 * 1.0 * 2048.0 * chunk;
    assert!(close(cp("all_gather"), gather), "{} vs {gather}", cp("all_gather"));
    let a2a = 32.0 * 2.0 * 0.5 * (2.0 * 4096.0 + 2048.0) * chunk;
    assert!(close(cp("a2a"), a2a), "{} vs {a2a}", cp("a2a"));
    // p2p also pays its ring steps (cp_ring_steps_cost_time_so_cp_sizes_do_not_tie): per layer and micro-batch, forward
    // 2·20 µs + 4096·4096·10/3.35e12 = 90.081 µs, backward 40 µs + 4096·6144·8/3.35e12 = 100.10 µs; × 32 × 2 = 12.172 ms.
    assert!((cp("p2p") - gather * c.cp_exposed - 0.012172).abs() <= 1e-4 * 0.012172, "p2p {}", cp("p2p"));
    // Not given: p2p, Megatron-LM's default.
    let r = plan("llama-3.1-8b", 1, json!({"seq_length": 8192, "micro_batch_size": 1, "global_batch_size": 8}),
                 json!({"tensor_model_parallel_size": 1, "context_parallel_size": 2}));
    assert_eq!(r.performance.unwrap().breakdown.cp_comm_s, cp("p2p"));
}

#[test]
fn speed_settings_move_the_step_time_the_way_their_mechanism_says() {
    // One MoE plan, changed one setting at a time; each change acts on its own term only.
    let training = json!({"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 256, "use_distributed_optimizer": true,
                          "moe_token_dispatcher_type": "alltoall"});
    let par = json!({"tensor_model_parallel_size": 1, "expert_model_parallel_size": 8, "expert_tensor_parallel_size": 1});
    let base = plan("qwen3-30b-a3b", 2, training.clone(), par.clone()).performance.unwrap();
    let with = |k: &str, v: Value| {
        let mut t = training.clone();
        t[k] = v;
        plan("qwen3-30b-a3b", 2, t, par.clone()).performance.unwrap()
    };
    let b = &base.breakdown;
    // EP all-to-all overlap hides ep_a2a_overlap_hidden of the EP term (data: 0.7).
    let o = with("overlap_moe_expert_parallel_comm", json!(true)).breakdown;
    let hidden = perf::assumptions().ep_a2a_overlap_hidden.value;
    assert!((o.ep_comm_s - b.ep_comm_s * (1.0 - hidden)).abs() <= 1e-12 * b.ep_comm_s, "{} vs {}", o.ep_comm_s, b.ep_comm_s);
    // Routing imbalance 2: the busiest rank's expert GEMMs and permutation take twice as long.
    let i = with("moe_routing_imbalance_factor", json!(2.0)).breakdown;
    assert!(i.compute_s > b.compute_s && i.moe_routing_s > b.moe_routing_s);
    // Selective recompute of the MoE block re-runs its forward (a third of expert GEMMs and routing).
    let r = with("recompute_granularity", json!("selective"));
    let r2 = with("recompute_modules", json!(["moe"]));
    assert_eq!(r2.breakdown.recompute_s, 0.0, "modules without selective granularity recompute nothing");
    let mut t = training.clone();
    t["recompute_granularity"] = json!("selective");
    t["recompute_modules"] = json!(["moe"]);
    let m = plan("qwen3-30b-a3b", 2, t, par.clone()).performance.unwrap().breakdown;
    assert!(m.recompute_s > r.breakdown.recompute_s, "moe recompute {} vs core_attn {}", m.recompute_s, r.breakdown.recompute_s);
    // Optimizer offload: the step moves to host memory bandwidth, slower than HBM.
    let off = with("optimizer_cpu_offload", json!(true)).breakdown;
    assert!(off.optimizer_s > b.optimizer_s);
    // A whole-iteration CUDA graph removes every exposed launch.
    let g = with("cuda_graph_impl", json!("full_iteration")).breakdown;
    assert_eq!(g.launch_s, 0.0);
}

#[test]
fn ep_dispatch_is_priced_by_the_link_each_copy_crosses() {
    // Qwen3-30B-A3B (48 MoE layers, h 2048, 128 experts, top-8) on 2 × 8 H100, TP 1, EP 16, seq 4096, MBS 1, GBS 16:
    // one micro-batch, and each EP group spans both 8-GPU NVLink domains (N = 2, n = 16). A rank dispatches its 4096
    // tokens of h × 2 B: B = 4096 · 4096 bytes per copy per token. Links: NIC 400 Gb/s = 50 GB/s, NVLink 450 GB/s, both
    // × 0.7 (NCCL) or × 0.9 (DeepEP's measured fraction, perf_assumptions.json). Per dispatch the slower link sets the
    // time; ×48 layers × 2 (dispatch, combine) × 2 (forward, backward) = 192 dispatches.
    //   allgather: 16 − 16/2 = 8 token copies to the other domain, 7 inside: max(8B/35e9, 7B/315e9) = 3.8348 ms;
    //   alltoall:  8·(1 − 1/2) = 4 copies out, 8·(1/2 − 1/16) = 3.5 in: max(4B/35e9, 3.5B/315e9) = 1.9174 ms;
    //   flex:      once per remote domain touched: 1 − C(64,8)/C(128,8) = 0.99690 out; once per other rank of the
    //              domain touched: 7·(1 − C(120,8)/C(128,8)) = 7·0.41228 = 2.88597 in: max(0.99690·B/45e9,
    //              2.88597·B/405e9) = 0.37167 ms.
    // Per step ×192: 0.73628 s, 0.36814 s, 0.071361 s.
    let ep = |dispatcher: &str| {
        let t = json!({"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 16, "moe_token_dispatcher_type": dispatcher});
        let r = plan("qwen3-30b-a3b", 2, t, json!({"tensor_model_parallel_size": 1, "expert_model_parallel_size": 16, "expert_tensor_parallel_size": 1}));
        r.performance.expect("the layout divides").breakdown.ep_comm_s
    };
    assert_eq!(perf::constants().ep_exposed, 1.0, "no overlap without overlap_moe_expert_parallel_comm");
    let close = |a: f64, b: f64| (a - b).abs() <= 2e-4 * b;
    assert!(close(ep("allgather"), 0.73628), "allgather {}", ep("allgather"));
    assert!(close(ep("alltoall"), 0.36814), "alltoall {}", ep("alltoall"));
    assert!(close(ep("flex"), 0.071361), "flex {}", ep("flex"));
    // EP 8 fits one domain: alltoall's 8·7/8 = 7 copies all over NVLink, 7B/315e9 per dispatch × 192 = 0.10226 s.
    let t = json!({"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 16, "moe_token_dispatcher_type": "alltoall"});
    let r = plan("qwen3-30b-a3b", 2, t, json!({"tensor_model_parallel_size": 1, "expert_model_parallel_size": 8, "expert_tensor_parallel_size": 1}));
    let inside = r.performance.unwrap().breakdown.ep_comm_s;
    assert!(close(inside, 0.071583), "EP 8 inside NVLink {inside}");
}

#[test]
fn cp_ring_steps_cost_time_so_cp_sizes_do_not_tie() {
    // Llama-3.1-8B (32 layers, 32 heads × 128 = Q width 4096, K,V width 2·8·128 = 2048) on 8 H100 (HBM 3.35 TB/s),
    // seq 32768, TP 1, MBS 1, GBS 8, p2p: CP 2 → DP 4, 2 micro-batches, 16384 local tokens; CP 4 → DP 2, 4 micro-batches,
    // 8192 tokens. Besides the exchange, each attention layer's ring pays per pass CP steps × 20 µs
    // (perf_assumptions.json) and CP − 1 merges: forward 10 B per Q element, backward 8 B per Q and K,V element.
    //   CP 2: fwd 2·20 µs + 16384·4096·10/3.35e12 = 0.24032 ms; bwd 40 µs + 16384·6144·8/3.35e12 = 0.28039 ms;
    //         × 32 layers × 2 micro-batches = 33.326 ms.
    //   CP 4: fwd 80 µs + 3·8192·4096·10/3.35e12 = 0.38049 ms; bwd 80 µs + 3·8192·6144·8/3.35e12 = 0.44058 ms;
    //         × 32 × 4 = 105.10 ms.
    // The exchange itself (the all_gather volume × cp_exposed) comes on top; compute is the same 1/8 of the FLOPs
    // whatever CP, so without these costs CP 1, 2 and 4 would tie.
    let a = perf::assumptions();
    assert_eq!((a.cp_ring_step_overhead_s.value, a.cp_merge_bytes_fwd.value, a.cp_merge_bytes_bwd.value), (2e-5, 10.0, 8.0));
    let c = perf::constants();
    let run = |cp: u64| {
        plan("llama-3.1-8b", 1, json!({"seq_length": 32768, "micro_batch_size": 1, "global_batch_size": 8}),
             json!({"tensor_model_parallel_size": 1, "context_parallel_size": cp}))
        .performance
        .unwrap()
    };
    let exchange = |cp: f64, mb: f64| 32.0 * 3.0 * (cp - 1.0) * 2048.0 * (32768.0 / cp * 2.0 / (450e9 * c.bandwidth_efficiency) * mb) * c.cp_exposed;
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-4 * b;
    let (p1, p2, p4) = (run(1), run(2), run(4));
    assert!(close(p2.breakdown.cp_comm_s - exchange(2.0, 2.0), 0.033326), "CP 2 {}", p2.breakdown.cp_comm_s);
    assert!(close(p4.breakdown.cp_comm_s - exchange(4.0, 4.0), 0.10510), "CP 4 {}", p4.breakdown.cp_comm_s);
    assert_eq!(p1.breakdown.cp_comm_s, 0.0);
    assert!(p1.step_time_s < p2.step_time_s && p2.step_time_s < p4.step_time_s, "{} {} {}", p1.step_time_s, p2.step_time_s, p4.step_time_s);
}

#[test]
fn block_scaled_and_nvfp4_gemms_run_at_their_measured_share_of_the_tensorwise_rate() {
    // Llama-3.1-8B on 8 B200, TP 1, seq 4096, MBS 1, GBS 8. Only the low-precision GEMMs (dense_gemm FLOPs) change with
    // the recipe; attention core and logits stay BF16. Tensorwise FP8 runs the dense GEMMs at
    //   3432.5e12 (gpus.json b200 measured FP8 matmul) × fp8_efficiency × 4096/(4096 + w0) FLOP/s per GPU, where B200's
    //   w0 is the fitted (H100) gemm_width_half × 148 SMs · 256-wide tiles / (132 · 128) = × 37,888/16,896,
    // MXFP8 at 0.924 of that (TE's two pre-quantized B300 runs: 1.74/1.94 and 6.812/7.161), FP8 block scaling at 0.968
    // (DeepGEMM 1358 over the H100 MAMF 1402.6), NVFP4 at 1.82 × that (3.55/1.94 and 6.812/3.764; B200's FP4 peak is
    // 2 × its FP8 peak, so the share cap 9000/4500 × the FP8 share does not bind).
    let run = |precision: &str, recipe: Option<&str>| {
        let mut training = json!({"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 8, "precision": precision});
        if let Some(r) = recipe {
            training["fp8_recipe"] = json!(r);
        }
        let r = plan_value(&json!({"model": "llama-3.1-8b", "cluster": {"gpu": "b200", "gpus_per_node": 8, "num_nodes": 1},
                                  "training": training, "parallelism": {"tensor_model_parallel_size": 1}}))
        .expect("plan parses");
        let dense = perf::flop_split(&r.plan, &r.derived).dense_gemm / 8.0;
        (r.performance.unwrap().breakdown.compute_s, dense)
    };
    let c = perf::constants();
    let (tw, dense) = run("fp8", Some("tensorwise"));
    let w0 = c.gemm_width_half * 37_888.0 / 16_896.0;
    let t_dense = dense / (3432.5e12 * c.fp8_efficiency * 4096.0 / (4096.0 + w0));
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b;
    let (mx, _) = run("fp8", Some("mxfp8"));
    assert!(close(mx - tw, t_dense * (1.0 / 0.924 - 1.0)), "mxfp8 {mx} tensorwise {tw}");
    let (bw, _) = run("fp8", Some("blockwise"));
    assert!(close(bw - tw, t_dense * (1.0 / 0.968 - 1.0)), "blockwise {bw} tensorwise {tw}");
    let (fp4, _) = run("fp4", None);
    assert!(close(tw - fp4, t_dense * (1.0 - 1.0 / 1.82)), "nvfp4 {fp4} tensorwise {tw}");
}

#[test]
fn the_slowest_pipeline_stage_sets_the_step() {
    // Llama-3.1-8B, s = 8192, BF16 (every GEMM and the attention core at one rate, so their time is proportional to
    // FLOPs). Per token, worked by hand as in llama_3_1_8b_flops_match_hand_calculation:
    //   a layer: A_lin + MLP = 1,308,622,848, core 6·q·s = 24,576·8192 = 201,326,592 → L = 1,509,949,440
    //   the output layer: 6·h·V = G = 3,152,019,456.
    // The output layer is vocabulary-parallel, so its GEMM width is V/TP = 128,256 against the layers' h/TP = 4096:
    // it runs at w(128,256)/w(4096) of their rate, w(x) = x/(x + w₀) (perf.rs); in layer-rate FLOPs G' = G·w(4096)/w(128,256).
    // On 8 GPUs, TP 1, PP 1, one sequence per GPU per step: compute is an even 1/8 of the batch's work, ∝ 32·L + G'.
    let w0 = perf::constants().gemm_width_half;
    let w = |x: f64| x / (x + w0);
    let (l, g) = (1_509_949_440.0, 3_152_019_456.0 * w(4096.0) / w(128_256.0));
    let total = 32.0 * l + g;
    let training = json!({"seq_length": 8192, "micro_batch_size": 1, "global_batch_size": 8});
    let even = plan("llama-3.1-8b", 1, training.clone(), json!({"tensor_model_parallel_size": 1})).performance.unwrap();
    let split = |first: u64| {
        plan("llama-3.1-8b", 1, training.clone(), json!({"tensor_model_parallel_size": 1, "pipeline_model_parallel_size": 2,
                                                         "num_layers_in_first_pipeline_stage": first}))
        .performance
        .unwrap()
    };
    // The output layer's logits run where the loss is, the last stage (perf/stages.rs). PP 2 with 12 | 20 layers:
    // first 12·L, last 20·L + G', against an even half of 32·L + G': compute × 2·(20·L + G')/(32·L + G') (1.2959… at
    // w₀ = 256), and its per-layer terms × 20/16 = 1.25.
    let last = split(12);
    let close = |a: f64, b: f64| (a / b - 1.0).abs() < 1e-9;
    assert!(close(last.breakdown.compute_s / even.breakdown.compute_s, 2.0 * (20.0 * l + g) / total), "{last:?}");
    assert!(close(last.breakdown.memory_bound_s / even.breakdown.memory_bound_s, 1.25));
    // 20 | 12: the first stage's 20 layers (30,198,988,800) outweigh the last's 12 + logits (≈ 21.3e9).
    let first = split(20);
    assert!(close(first.breakdown.compute_s / even.breakdown.compute_s, 2.0 * 20.0 * l / total), "{first:?}");
    // 16 | 16 is no longer even: the last stage carries the logits, 16·L + G'.
    let balanced = split(16);
    assert!(close(balanced.breakdown.compute_s / even.breakdown.compute_s, 2.0 * (16.0 * l + g) / total));
    // num_layers_in_last_pipeline_stage moves a layer off the last stage and shows its benefit: 17 | 15 gives
    // 17·L = 25,669,140,480 | 15·L + G' ≈ 25.79e9, both under 16 | 16's 16·L + G' ≈ 27.30e9.
    let moved = split(17);
    assert!(moved.step_time_s < balanced.step_time_s, "17|15 {} 16|16 {}", moved.step_time_s, balanced.step_time_s);
    assert!(moved.breakdown.compute_s < balanced.breakdown.compute_s);
    // The bubble: the fill and drain pass the stages other than the slowest (perf/stages.rs), here the first with
    // 12 layers. m = DP-local microbatches = 8 / (8 / 2) = 2, so the bubble is (PP − 1)/m = 1/2 of the first stage's
    // pipelined time: its compute, 12·L/(20·L + G') of the last's, and its per-layer terms, 12/20 of the last's.
    // (Even stages: (m + PP − 1) × a stage's time, as before.)
    let b = &last.breakdown;
    let layer_terms = b.recompute_s + b.tp_comm_s + b.cp_comm_s + b.ep_comm_s + b.moe_routing_s + b.memory_bound_s + b.quantize_s + b.launch_s;
    let first_stage = b.compute_s * 12.0 * l / (20.0 * l + g) + layer_terms * 12.0 / 20.0;
    assert!(close(b.bubble_s, first_stage / 2.0), "bubble {} first stage {first_stage}", b.bubble_s);
    assert!(balanced.step_time_s < last.step_time_s);
}

#[test]
fn account_for_loss_in_pipeline_split_lightens_the_last_stage() {
    // Llama-3.1-8B (32 layers), PP 3 on 24 GPUs. account_for_loss_in_pipeline_split counts the loss as a layer:
    // 33 / 3 = 11 per stage, the last building 10 layers and the output layer (Megatron-Core
    // transformer_block.get_num_layers_to_build): [11, 11, 10]. Against it, the last stage given 12 layers
    // (num_layers_in_last_pipeline_stage 12: [10, 10, 12]). Per token (the_slowest_pipeline_stage_sets_the_step):
    // a layer L = 1,509,949,440, the output layer at the layers' rate G' ≈ 1.97·L, so the last stage holds ≈ 11.97·L
    // with the loss counted, ≈ 13.97·L without: the accounted split's slowest stage has ~14% less compute.
    let training = json!({"seq_length": 8192, "micro_batch_size": 1, "global_batch_size": 24});
    let run = |par: Value| plan("llama-3.1-8b", 3, training.clone(), par);
    let counted = run(json!({"tensor_model_parallel_size": 1, "pipeline_model_parallel_size": 3, "account_for_loss_in_pipeline_split": true}));
    let heavy = run(json!({"tensor_model_parallel_size": 1, "pipeline_model_parallel_size": 3, "num_layers_in_last_pipeline_stage": 12}));
    assert_eq!(counted.derived.layers_per_stage, vec![11, 11, 10]);
    assert_eq!(heavy.derived.layers_per_stage, vec![10, 10, 12]);
    let (c, h) = (counted.performance.unwrap(), heavy.performance.unwrap());
    let w0 = perf::constants().gemm_width_half;
    let w = |x: f64| x / (x + w0);
    let (l, g) = (1_509_949_440.0, 3_152_019_456.0 * w(4096.0) / w(128_256.0));
    // Compute is the slowest stage's in both (the heavy split: its last stage; the counted split: the larger of 11·L
    // and 10·L + G', the latter).
    let ratio = c.breakdown.compute_s / h.breakdown.compute_s;
    assert!((ratio - (10.0 * l + g) / (12.0 * l + g)).abs() < 1e-9, "{ratio}");
    assert!(c.step_time_s < h.step_time_s, "{} vs {}", c.step_time_s, h.step_time_s);
}

#[test]
fn blackwell_gemms_need_wider_shapes_for_their_tiles() {
    // Qwen3-30B-A3B (h 2048, 128 experts of width 768, top-8) on 8 B200 in BF16, TP 1, EP 8, seq 4096, MBS 1, GBS 8:
    // one micro-batch per GPU, PP 1. Every GEMM runs at 1745e12 (gpus.json b200 measured BF16 matmul) × bf16_efficiency
    // × w/(w + w0): B200's w0 is the fitted (H100) gemm_width_half × 148 SMs · 256-wide tiles / (132 · 128)
    // = × 37,888/16,896; the layers' GEMMs at w = h = 2048, the output layer at w = its padded vocabulary, the experts
    // at w = 768 and also × m/(m + 2·m0): m = 4096 tokens · EP 8 · top-8 / 128 experts = 2048 rows per expert, and a
    // Blackwell CTA pair's 256-row tile doubles the fitted (128-row) m0.
    let r = plan_value(&json!({"model": "qwen3-30b-a3b", "cluster": {"gpu": "b200", "gpus_per_node": 8, "num_nodes": 1},
                              "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 8, "precision": "bf16"},
                              "parallelism": {"tensor_model_parallel_size": 1, "expert_model_parallel_size": 8,
                                              "expert_tensor_parallel_size": 1}}))
    .expect("plan parses");
    let c = perf::constants();
    let fl = perf::flop_split(&r.plan, &r.derived);
    let w0 = c.gemm_width_half * 37_888.0 / 16_896.0;
    let rate = |w: f64| 1745e12 * c.bf16_efficiency * w / (w + w0);
    let vocab = r.derived.padded_vocab_size as f64;
    let layers = (fl.dense_gemm + fl.attention_core) / rate(2048.0) / 8.0;
    let logits = fl.logits / rate(vocab) / 8.0;
    let experts = fl.expert_gemm / (rate(768.0) * 2048.0 / (2048.0 + 2.0 * c.expert_tokens_half)) / 8.0;
    let compute = r.performance.unwrap().breakdown.compute_s;
    assert!((compute - (layers + logits + experts)).abs() <= 1e-9 * compute, "compute {compute} by hand {}", layers + logits + experts);
}

#[test]
fn the_kind_totals_memo_changes_no_estimate() {
    // Derived carries the model's kind totals, counted once by derive_into; a Derived without them (read back from JSON,
    // or built by hand) counts them afresh. Both must give the same step time, to the bit, for every kind of model:
    // dense, MoE with MTP, hybrid Mamba, Gated DeltaNet, window attention, heterogeneous blocks, a vision encoder.
    for (model, nodes, par) in [
        ("llama-3.1-8b", 1, json!({"tensor_model_parallel_size": 2, "pipeline_model_parallel_size": 2})),
        ("deepseek-v3", 32, json!({"pipeline_model_parallel_size": 8, "expert_model_parallel_size": 32, "expert_tensor_parallel_size": 1})),
        ("nemotron-h-56b", 4, json!({"tensor_model_parallel_size": 4, "pipeline_model_parallel_size": 2})),
        ("qwen3-next-80b-a3b", 4, json!({"expert_model_parallel_size": 8, "pipeline_model_parallel_size": 2})),
        ("gemma-4-31b", 2, json!({"tensor_model_parallel_size": 8})),
        ("llama-3.3-nemotron-super-49b", 2, json!({"tensor_model_parallel_size": 8, "pipeline_model_parallel_size": 2})),
        ("llama-4-scout-17b-16e", 4, json!({"tensor_model_parallel_size": 4, "expert_model_parallel_size": 8})),
    ] {
        for training in [json!({"seq_length": 4096, "global_batch_size": 256}),
                         json!({"seq_length": 4096, "global_batch_size": 256, "precision": "fp8", "recompute_granularity": "selective",
                                "recompute_modules": ["mlp", "core_attn"]})] {
            let r = plan(model, nodes, training, par.clone());
            let mut fresh = r.derived.clone();
            fresh.kinds = Default::default();
            let (memo, counted) = (perf::estimate(&r.plan, &r.derived), perf::estimate(&r.plan, &fresh));
            assert_eq!(format!("{memo:?}"), format!("{counted:?}"), "{model}");
            assert!(memo.step_time_s > 0.0, "{model}: a step time to compare");
        }
    }
    the_search_memos_change_no_estimate();
}

/// The layout search counts what a layout fixes once and reuses it for every micro-batch, recompute and optimizer
/// variant: each stage's parameters and MoE layers, the saved activations of a stage with its predecessor's layers,
/// the links each group kind runs on, each pipeline rank's layers. Every candidate it ranks must carry the step time,
/// rates and peak memory the full report of its plan computes from scratch, to the bit: dense, uneven pipeline layouts
/// with VPP, MoE with MTP and a dense first stage, hybrid Mamba, window attention, FP8 with BF16 edge layers and
/// activation offloading, on HGX and NVL72 domains.
fn the_search_memos_change_no_estimate() {
    use meshplan_core::search::{self, SearchOptions};
    let offload = json!({"precision": "fp8", "first_last_layers_bf16": true, "fine_grained_activation_offloading": true,
                         "offload_modules": ["qkv_linear", "core_attn", "expert_fc1"]});
    for (model, gpu, gpus, seq, gbs, extra) in [
        ("llama-3.1-8b", "h100-sxm-80gb", 8u64, 8192u64, 128u64, json!({})),
        ("llama-3.1-70b", "h100-sxm-80gb", 48, 4096, 96, json!({})),
        ("deepseek-v3", "h100-sxm-80gb", 256, 4096, 512, json!({})),
        ("nemotron-h-8b", "h100-sxm-80gb", 16, 8192, 64, json!({})),
        ("gemma-4-31b", "h100-sxm-80gb", 16, 8192, 64, json!({})),
        ("qwen3-30b-a3b", "gb200", 16, 4096, 128, offload),
    ] {
        let mut training = json!({"seq_length": seq, "global_batch_size": gbs});
        training.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        let gpus_per_node = if gpu == "gb200" { 4 } else { 8 };
        let v = json!({"model": model, "cluster": {"gpu": gpu, "gpus_per_node": gpus_per_node, "num_nodes": gpus / gpus_per_node},
                       "training": training});
        let r = search::search_value(&v, &SearchOptions { top: 40, ..SearchOptions::default() }).expect("searchable");
        assert!(r.candidates.len() >= 5, "{model}: {} candidates to compare ({:?})", r.candidates.len(), r.rejected_by);
        for c in &r.candidates {
            let full = meshplan_core::plan_resolved(c.plan.as_ref().expect("plan"), Vec::new());
            let perf = full.performance.as_ref().expect("a step time");
            let at = format!("{model}: {:?} {:?}", c.parallelism, c.training);
            assert!(full.valid, "{at}: {:?}", full.diagnostics.iter().filter(|d| d.is_error()).map(|d| &d.code).collect::<Vec<_>>());
            assert_eq!(c.step_time_s.to_bits(), perf.step_time_s.to_bits(), "{at}");
            assert_eq!(c.tokens_per_s_per_gpu.to_bits(), perf.tokens_per_s_per_gpu.to_bits(), "{at}");
            assert_eq!(c.model_tflops_per_gpu.to_bits(), perf.model_tflops_per_gpu.to_bits(), "{at}");
            assert_eq!(c.mfu.to_bits(), perf.mfu.to_bits(), "{at}");
            assert_eq!(c.peak_bytes, full.memory.peak_bytes, "{at}");
        }
    }
}

/// Layers Megatron keeps in BF16 under FP8 (first_last_layers_bf16) run their GEMMs at the BF16 rate: a layer outside
/// the FP8 context is a BF16 layer (megatron/core/fp8_utils.py:711 is_first_last_bf16_layer, get_fp8_context returns
/// nullcontext). So with every layer of Llama 3.1 8B kept in BF16 (16 at the start, 16 at the end of 32) an FP8 plan
/// computes exactly as long as the BF16 plan (its attention core and output layer run in BF16 either way), and with the
/// first and the last kept (2 of 32 identical layers) it takes 30/32 of the FP8 plan's layer GEMM time and 2/32 of the
/// BF16 plan's: compute(2 in BF16) = compute(FP8) + 2/32 · (compute(BF16) − compute(FP8)).
#[test]
fn layers_kept_in_bf16_compute_at_the_bf16_rate() {
    let compute = |precision: &str, bf16: Option<(u64, u64)>| {
        let mut t = json!({"seq_length": 8192, "micro_batch_size": 1, "global_batch_size": 8, "precision": precision,
                           "fp8_recipe": if precision == "fp8" { json!("tensorwise") } else { Value::Null },
                           "first_last_layers_bf16": bf16.is_some()});
        if let Some((start, end)) = bf16 {
            t["num_layers_at_start_in_bf16"] = json!(start);
            t["num_layers_at_end_in_bf16"] = json!(end);
        }
        let r = plan("llama-3.1-8b", 1, t, json!({"tensor_model_parallel_size": 1}));
        r.performance.expect("performance").breakdown.compute_s
    };
    let (fp8, bf16) = (compute("fp8", None), compute("bf16", None));
    assert!(bf16 > fp8 * 1.2, "BF16 {bf16} s vs FP8 {fp8} s");
    let all = compute("fp8", Some((16, 16)));
    assert!((all - bf16).abs() <= 1e-9 * bf16, "all layers in BF16: {all} vs the BF16 plan's {bf16}");
    let two = compute("fp8", Some((1, 1)));
    let want = fp8 + 2.0 / 32.0 * (bf16 - fp8);
    assert!((two - want).abs() <= 1e-9 * want, "first and last in BF16: {two} vs {want}");
}

#[test]
fn a_full_iteration_graph_charges_the_moe_permutation_its_kernel_traffic() {
    // Qwen3-30B-A3B (48 MoE layers, h 2048, 128 experts, top-8) on 8 GB200 (8 TB/s HBM, gpus.json), EP 8, MBS 4,
    // seq 4096, GBS 512: DP 8, so 512 / (4 · 8) = 16 micro-batches of 16,384 tokens; no recompute (forward + backward).
    // Per token and MoE layer: the permutation's kernel count, 12 B per routed activation byte (perf_assumptions.json)
    // × top-8 × 2048 × 2 B = 393,216 B, plus the router's 128 scores × 4 B × 3 passes = 1,536 B: 394,752 B.
    // × 16,384 tokens × 16 micro-batches × 48 layers / 8e12 B/s = 0.620906 s.
    let routing = |graph: &str| {
        let r = plan_value(&json!({"model": "qwen3-30b-a3b", "cluster": {"gpu": "gb200", "num_gpus": 8},
            "training": {"seq_length": 4096, "micro_batch_size": 4, "global_batch_size": 512, "precision": "fp8",
                         "fp8_recipe": "mxfp8", "moe_token_dispatcher_type": "flex", "moe_flex_dispatcher_backend": "hybridep",
                         "cuda_graph_impl": graph, "recompute_granularity": "none"},
            "parallelism": {"tensor_model_parallel_size": 1, "expert_model_parallel_size": 8, "expert_tensor_parallel_size": 1}}))
        .expect("plan parses");
        r.performance.expect("performance").breakdown.moe_routing_s
    };
    let want = 394_752.0 * 16_384.0 * 16.0 * 48.0 / 8e12;
    let graphed = routing("full_iteration");
    assert!((graphed - want).abs() <= 1e-9 * want, "full-iteration graph: {graphed} s, by hand {want} s");
    // Eagerly the fitted permute_bytes prices the routed bytes instead (host-bound gaps included).
    let c = perf::constants();
    let eager = (8.0 * 2048.0 * 2.0 * c.permute_bytes + 1_536.0) * 16_384.0 * 16.0 * 48.0 / 8e12;
    let te = routing("transformer_engine");
    assert!((te - eager).abs() <= 1e-9 * eager, "TE-scoped graphs: {te} s, by hand {eager} s");
}

#[test]
fn the_interleaved_schedule_hides_its_p2p_but_the_fill_and_drain() {
    // Llama 3.1 70B (80 layers) on 32 H100: TP 8, PP 4, DP 1, GBS 16 of MBS 1 → m = 16 microbatches.
    // Without overlap every chunk's activation and gradient is exchanged in the open: 2 · VPP · m transfers per stage.
    // With overlap_p2p_comm (Megatron-Core schedules.py, the interleaved schedule's async send/recv waited before the
    // dependent chunk) only the fill's and the drain's PP − 1 each stay on the critical path, plus the fitted
    // pp_exposed share of the other 2 · VPP · m − 2 (PP − 1).
    let run = |vpp: Option<u64>, overlap: Option<bool>| {
        let mut par = json!({"tensor_model_parallel_size": 8, "pipeline_model_parallel_size": 4, "sequence_parallel": true});
        if let Some(v) = vpp {
            par["virtual_pipeline_model_parallel_size"] = json!(v);
        }
        if let Some(o) = overlap {
            par["overlap_p2p_comm"] = json!(o);
        }
        plan("llama-3.1-70b", 4, json!({"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 16}), par)
    };
    let pp = |r: &Report| r.performance.as_ref().expect("divides").breakdown.pp_comm_s;
    let e = perf::constants().pp_exposed;
    // VPP 2: 2·2·16 = 64 transfers exposed without overlap; with it 2·3 = 6 plus e of the other 58.
    let (off, on) = (pp(&run(Some(2), Some(false))), pp(&run(Some(2), Some(true))));
    assert!(off > 0.0);
    assert!((on / off - (6.0 + e * 58.0) / 64.0).abs() < 1e-9, "{on} / {off}, pp_exposed {e}");
    // Unstated, it runs as both launchers run it: on with virtual stages, and the report says it assumed so.
    let unstated = run(Some(2), None);
    assert_eq!(pp(&unstated), on);
    let a = unstated.assumptions.iter().find(|a| a.key == "parallelism.overlap_p2p_comm").expect("listed");
    assert_eq!(a.value, json!(true));
    assert_eq!(a.source, meshplan_core::tuned::LAUNCHER_SOURCE);
    assert!(meshplan_core::tuned::is_default_source(&a.source));
    assert!(run(Some(2), Some(false)).assumptions.iter().all(|a| a.key != "parallelism.overlap_p2p_comm"));
    // The 1F1B schedule without virtual stages blocks on every exchange (Megatron-LM turns the overlap off there):
    // 2 · m = 32 transfers, whatever the plan says, and nothing is assumed.
    let plain = run(None, None);
    assert_eq!(pp(&plain), pp(&run(None, Some(true))));
    assert!((pp(&plain) / off - 32.0 / 64.0).abs() < 1e-9);
    assert!(plain.assumptions.iter().all(|a| a.key != "parallelism.overlap_p2p_comm"));
}
