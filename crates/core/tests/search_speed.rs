//! The search plans each layout with the speed settings a tuned run would use (issue 23, ask 5): the perf recipe's
//! values where the plan leaves them open, each kept only where Megatron accepts it for that layout, a stated setting
//! never overridden, and every row's settings written out so that applying it plans the same run.
//!
//! The case: gpt-oss-120b on 64 GB200 (bf16). Its own perf recipe (Megatron Bridge
//! `gpt_oss_120b_pretrain_64gpu_gb200_bf16_config`, crates/core/data/bridge_recipes.json) sets the alltoall dispatcher,
//! `overlap_moe_expert_parallel_comm = true`, `overlap_grad_reduce` and `overlap_param_gather` on. What Megatron accepts
//! is worked from its asserts, not from meshplan's rules: megatron-core's `TransformerConfig.__post_init__` allows the
//! EP overlap only with EP > 1, the alltoall or flex dispatcher, VPP when PP > 1, no full recompute and at most one MTP
//! layer (gpt-oss has none).

use meshplan_core::plan::Recompute;
use meshplan_core::search::{self, Candidate, SearchOptions, SearchResult};
use meshplan_core::settings::{CudaGraphImpl, DispatcherType};
use serde_json::{Value, json};

fn gpt_oss(training: Value) -> Value {
    let mut t = json!({"seq_length": 4096, "global_batch_size": 512});
    for (k, v) in training.as_object().unwrap() {
        t[k] = v.clone();
    }
    json!({"model": "gpt-oss-120b", "cluster": {"gpu": "gb200", "num_gpus": 64}, "training": t})
}

fn run(v: &Value) -> SearchResult {
    let opts = SearchOptions { top: 200, max_tp: 8, max_cp: 1, micro_batch_sizes: vec![1, 2] };
    search::search_value(v, &opts).expect("searchable")
}

/// Whether megatron-core accepts the EP all-to-all overlap for this candidate (the asserts above).
fn ep_overlap_allowed(c: &Candidate) -> bool {
    let p = &c.parallelism;
    let d = c.plan.as_ref().unwrap().training.settings.moe_token_dispatcher_type;
    p.expert_model_parallel_size > 1
        && (p.pipeline_model_parallel_size == 1 || p.virtual_pipeline_model_parallel_size.is_some())
        && c.training.recompute_granularity != Recompute::Full
        && matches!(d, DispatcherType::Alltoall | DispatcherType::Flex)
}

#[test]
fn the_recipes_ep_overlap_is_kept_exactly_where_megatron_accepts_it() {
    let r = run(&gpt_oss(json!({})));
    assert!(r.candidates.len() > 20, "{:?}", r.rejected_by);
    let (mut on, mut off) = (0, 0);
    for c in &r.candidates {
        let plan = c.plan.as_ref().unwrap();
        let overlap = plan.training.settings.overlap_moe_expert_parallel_comm;
        assert_eq!(overlap, ep_overlap_allowed(c), "{:?} {:?}", c.parallelism, c.training);
        // The row states what it runs.
        assert_eq!(c.training.speed_settings.get("overlap_moe_expert_parallel_comm"), Some(&json!(overlap)));
        if c.parallelism.expert_model_parallel_size == 1 {
            assert!(!overlap, "EP 1 with the EP overlap: {:?}", c.parallelism);
        }
        // A row without the recipe's overlap says why.
        let says = c.why.iter().any(|w| w.starts_with("speed settings: ") && w.contains("overlap_moe_expert_parallel_comm"));
        assert_eq!(says, !overlap, "{:?}", c.why);
        // Not rejected: the recipe's overlap is withdrawn for the layouts Megatron refuses it for, not the layout.
        on += usize::from(overlap);
        off += usize::from(!overlap);
        // The DP overlaps of the recipe: overlap_param_gather needs the distributed optimizer (Megatron-LM asserts).
        assert!(plan.training.settings.overlap_grad_reduce);
        assert_eq!(plan.training.settings.overlap_param_gather, c.training.use_distributed_optimizer);
    }
    assert!(on > 0 && off > 0, "both kinds of layout among the picks: {on} with, {off} without");
    assert!(!r.rejected_by.contains_key("ep-overlap-invalid"), "{:?}", r.rejected_by);
}

#[test]
fn a_setting_the_plan_states_is_never_overridden() {
    // Stated off: no candidate runs it, and no row lists it among its tuned settings.
    let r = run(&gpt_oss(json!({"overlap_moe_expert_parallel_comm": false, "overlap_grad_reduce": false})));
    assert!(!r.candidates.is_empty());
    for c in &r.candidates {
        let s = &c.plan.as_ref().unwrap().training.settings;
        assert!(!s.overlap_moe_expert_parallel_comm && !s.overlap_grad_reduce, "{:?}", c.parallelism);
        assert!(!c.training.speed_settings.contains_key("overlap_moe_expert_parallel_comm"));
        assert!(!c.training.speed_settings.contains_key("overlap_grad_reduce"));
    }
    // Stated on: kept for every layout, so the rules reject the layouts Megatron refuses it for (EP 1), as for any plan.
    let r = run(&gpt_oss(json!({"overlap_moe_expert_parallel_comm": true})));
    assert!(r.rejected_by.get("ep-overlap-invalid").is_some_and(|&n| n > 0), "{:?}", r.rejected_by);
    assert!(r.candidates.iter().all(|c| c.plan.as_ref().unwrap().training.settings.overlap_moe_expert_parallel_comm));
    assert!(r.candidates.iter().all(|c| c.parallelism.expert_model_parallel_size > 1));
}

#[test]
fn plain_defaults_search_without_tuned_settings() {
    let r = run(&json!({"model": "gpt-oss-120b", "cluster": {"gpu": "gb200", "num_gpus": 64}, "defaults": "megatron-core",
                        "training": {"seq_length": 4096, "global_batch_size": 512}}));
    assert!(!r.candidates.is_empty());
    for c in &r.candidates {
        assert!(c.training.speed_settings.is_empty());
        let s = &c.plan.as_ref().unwrap().training.settings;
        assert!(!s.overlap_moe_expert_parallel_comm && !s.overlap_grad_reduce && s.cuda_graph_impl == CudaGraphImpl::None);
    }
}

#[test]
fn full_recompute_never_runs_per_layer_cuda_graphs() {
    // Qwen3-30B-A3B on 16 H100: its H100 perf recipe graphs moe_router and moe_preprocess with Transformer Engine, and
    // megatron-core asserts "full recompute is only supported with full iteration CUDA graph.": a candidate that
    // recomputes in full runs without the graphs; the others keep them.
    let v = json!({"model": "qwen3-30b-a3b", "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 16},
                   "training": {"seq_length": 4096, "global_batch_size": 256}});
    let opts = SearchOptions { top: 10_000, max_tp: 2, max_cp: 1, micro_batch_sizes: vec![1] };
    let r = search::search_value(&v, &opts).expect("searchable");
    let (mut full, mut graphed) = (0, 0);
    for c in &r.candidates {
        let s = &c.plan.as_ref().unwrap().training.settings;
        if c.training.recompute_granularity == Recompute::Full {
            full += 1;
            assert_eq!(s.cuda_graph_impl, CudaGraphImpl::None, "{:?}", c.parallelism);
            assert_eq!(c.training.speed_settings.get("cuda_graph_impl"), Some(&json!("none")));
        } else {
            graphed += usize::from(s.cuda_graph_impl == CudaGraphImpl::TransformerEngine);
        }
    }
    assert!(full > 0 && graphed > 0, "{full} full-recompute picks, {graphed} graphed");
    assert!(!r.rejected_by.contains_key("full-recompute-cuda-graphs"), "{:?}", r.rejected_by);
}

/// What Apply writes: the base plan with the row's layout, training fields and speed settings, and Megatron-Core's
/// plain defaults for the rest (what the search's base plan has). Planned, it is the row: valid, the same step time.
#[test]
fn a_row_written_into_the_plan_plans_the_same_run() {
    let base = gpt_oss(json!({}));
    let r = run(&base);
    for c in r.candidates.iter().take(10) {
        let mut v = base.clone();
        v["defaults"] = json!("megatron-core");
        v["parallelism"] = serde_json::to_value(c.parallelism.parallelism(true)).unwrap();
        let t = serde_json::to_value(&c.training).unwrap();
        for (k, x) in t.as_object().unwrap() {
            if k != "speed_settings" {
                v["training"][k] = x.clone();
            }
        }
        for (k, x) in &c.training.speed_settings {
            v["training"][k] = x.clone();
        }
        let rep = meshplan_core::plan_value(&v).expect("plannable");
        assert!(rep.valid, "{:?}: {:?}", c.parallelism, rep.diagnostics.iter().filter(|d| d.is_error()).map(|d| d.code).collect::<Vec<_>>());
        let step = rep.performance.expect("performance").step_time_s;
        assert!((step - c.step_time_s).abs() <= 1e-9 * step, "{:?}: {step} vs {}", c.parallelism, c.step_time_s);
    }
}

/// A searched setting that changes the ranking. Under Megatron-Core's defaults the data-parallel gradient reduction is
/// exposed (`overlap_grad_reduce = false`), so PP 2 × VPP 3, EP 32 — each stage holds half the layers, so half the
/// gradient bytes to reduce — ranks above PP 1, EP 16, which reduces all of them but has no pipeline bubble. The recipe
/// overlaps the reduction with the backward pass (`overlap_grad_reduce = true`, valid for every layout): the DP term
/// shrinks for both and the bubble decides, so PP 1, EP 16 ranks first of the two. (VPP 3: at VPP 9 the smaller bubble
/// and the interleaved schedule's overlapped p2p keep PP 2 ahead under both.)
#[test]
fn the_recipes_dp_overlap_turns_the_ranking_of_a_pipelined_and_an_unpipelined_layout() {
    let at = |r: &SearchResult, pp: u64, vpp: Option<u64>, ep: u64| {
        r.candidates
            .iter()
            .position(|c| {
                let p = &c.parallelism;
                (p.tensor_model_parallel_size, p.pipeline_model_parallel_size, p.virtual_pipeline_model_parallel_size, p.expert_model_parallel_size) == (1, pp, vpp, ep)
                    && c.training.micro_batch_size == 2
                    && c.training.recompute_granularity == Recompute::None
            })
            .unwrap_or_else(|| panic!("PP {pp} VPP {vpp:?} EP {ep} among the picks"))
    };
    let mut plain = gpt_oss(json!({}));
    plain["defaults"] = json!("megatron-core");
    let (plain, tuned) = (run(&plain), run(&gpt_oss(json!({}))));
    let (p_pp2, p_pp1) = (at(&plain, 2, Some(3), 32), at(&plain, 1, None, 16));
    let (t_pp2, t_pp1) = (at(&tuned, 2, Some(3), 32), at(&tuned, 1, None, 16));
    assert!(p_pp2 < p_pp1, "plain: PP 2 #{} vs PP 1 #{}", p_pp2 + 1, p_pp1 + 1);
    assert!(t_pp1 < t_pp2, "tuned: PP 1 #{} vs PP 2 #{}", t_pp1 + 1, t_pp2 + 1);
    // Why: PP 2 reduces fewer gradient bytes per GPU than PP 1 while exposed; overlapped, both expose less than before.
    let dp = |r: &SearchResult, i: usize| r.candidates[i].breakdown.dp_comm_s;
    assert!(dp(&plain, p_pp2) < dp(&plain, p_pp1));
    assert!(dp(&tuned, t_pp1) < dp(&plain, p_pp1) && dp(&tuned, t_pp2) < dp(&plain, p_pp2));
    assert!(tuned.candidates[t_pp1].plan.as_ref().unwrap().training.settings.overlap_grad_reduce);
}

/// The search sizes a layout as planning it does. Megatron Bridge's Llama 3 70B perf recipe on 64 GB300 in MXFP8 ran
/// TP 1, PP 4, VPP 5, micro-batch 1, seq 8,192, global batch 256, without recompute (Megatron Bridge performance
/// summary, 26.02–26.04.01); every perf recipe reduces gradients in bf16 (`grad_reduce_in_fp32 = False`), which the
/// plan takes as a tuned default. The search once sized that layout with Megatron's fp32 gradient buffer (2 more bytes
/// per local parameter: 17.6 B parameters per GPU at PP 4, +33 GiB) and rejected it as out of memory.
#[test]
fn the_search_sizes_the_recipes_gradient_buffer_as_the_plan_does() {
    let base = json!({"model": "llama-3.1-70b", "cluster": {"gpu": "gb300", "num_gpus": 64},
        "training": {"seq_length": 8192, "global_batch_size": 256, "precision": "fp8", "fp8_recipe": "mxfp8"}});
    let mut direct = base.clone();
    direct["parallelism"] = json!({"tensor_model_parallel_size": 1, "pipeline_model_parallel_size": 4, "virtual_pipeline_model_parallel_size": 5});
    direct["training"]["micro_batch_size"] = json!(1);
    direct["training"]["recompute_granularity"] = json!("none");
    let r = meshplan_core::plan_value(&direct).unwrap();
    assert!(r.memory.fits && r.valid, "planned directly it fits");
    assert!(r.assumptions.iter().any(|a| a.key == "grad_reduce_in_fp32" && a.value == json!(false)));
    let opts = SearchOptions { top: 10_000, max_tp: 1, max_cp: 1, micro_batch_sizes: vec![1] };
    let res = search::search_value(&base, &opts).expect("searchable");
    let c = res
        .candidates
        .iter()
        .find(|c| {
            let p = &c.parallelism;
            (p.pipeline_model_parallel_size, p.virtual_pipeline_model_parallel_size) == (4, Some(5))
                && c.training.recompute_granularity == Recompute::None
        })
        .expect("the published layout without recompute is among the picks");
    assert_eq!(c.training.speed_settings.get("grad_reduce_in_fp32"), Some(&json!(false)));
    let step = r.performance.as_ref().unwrap().step_time_s;
    assert!((c.step_time_s - step).abs() <= 1e-9 * step, "{} vs {step}", c.step_time_s);
}
