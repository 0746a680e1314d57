//! The search's activation memo keeps `Layers` by [`LayersKey`] across layouts: a layout that differs only in what the
//! key leaves out (PP, VPP, the split, EP, the dispatcher, the distributed optimizer, optimizer offload, full against
//! no recompute) must get the same `Layers` to the bit, and one that differs in a keyed size must not.

use super::{Layers, LayersKey, Run, Shape, activations};
use crate::plan::{Plan, Recompute, RecomputeMethod, parse_plan};
use crate::settings::DispatcherType;
use serde_json::json;

/// A plan on 512 of the catalogue's default GPU.
fn plan(model: &str, training: serde_json::Value) -> Plan {
    let mut t = json!({"seq_length": 4096, "global_batch_size": 1024, "micro_batch_size": 2});
    if let (Some(t), Some(extra)) = (t.as_object_mut(), training.as_object()) {
        t.extend(extra.clone());
    }
    // Megatron-Core's plain defaults, as the search plans (no recompute unless stated).
    let v = json!({"defaults": "megatron-core", "model": model, "cluster": {"gpus_per_node": 8, "num_nodes": 64}, "training": t,
                   "parallelism": {"tensor_model_parallel_size": 2, "context_parallel_size": 2, "expert_tensor_parallel_size": 1,
                                   "sequence_parallel": true}});
    parse_plan(&v).expect("a valid plan file").0
}

fn layers(p: &Plan) -> (LayersKey, Layers) {
    let (run, sh) = (Run::of(p), Shape::of(p));
    let kinds = p.model.kinds();
    let choices = activations::Choices::of(p);
    (LayersKey::of(p, &choices, 0), Layers::of(p, &run, &sh, &kinds))
}

/// Every change the key leaves out, one at a time.
fn unkeyed(p: &Plan) -> Vec<Plan> {
    let mut out = Vec::new();
    let mut with = |f: &dyn Fn(&mut Plan)| {
        let mut q = p.clone();
        f(&mut q);
        out.push(q);
    };
    with(&|q| q.parallelism.pipeline_model_parallel_size = 4);
    with(&|q| (q.parallelism.pipeline_model_parallel_size, q.parallelism.virtual_pipeline_model_parallel_size) = (4, Some(2)));
    with(&|q| (q.parallelism.pipeline_model_parallel_size, q.parallelism.num_layers_in_first_pipeline_stage) = (3, Some(1)));
    with(&|q| q.parallelism.expert_model_parallel_size = 8);
    with(&|q| q.parallelism.expert_model_parallel_size = 32);
    for d in DispatcherType::ALL {
        with(&|q| q.training.settings.moe_token_dispatcher_type = *d);
    }
    with(&|q| q.training.settings.use_distributed_optimizer = !q.training.settings.use_distributed_optimizer);
    with(&|q| (q.training.settings.optimizer_cpu_offload, q.training.settings.optimizer_offload_fraction) = (true, Some(0.5)));
    // Full recompute keeps the per-layer tables of no recompute (`Choices` names no module for either).
    with(&|q| {
        let s = &mut q.training.settings;
        if s.recompute_granularity != Recompute::None {
            return;
        }
        (s.recompute_granularity, s.recompute_method, s.recompute_num_layers) = (Recompute::Full, Some(RecomputeMethod::Uniform), Some(1));
    });
    out
}

#[test]
fn layers_depend_on_the_keyed_sizes_only() {
    let cases = [
        plan("deepseek-v3", json!({})),
        // FP8 with BF16 edge layers and per-layer CUDA graphs: the `bf16` and `graphs` tables are not zero.
        plan("qwen3-30b-a3b", json!({"precision": "fp8", "first_last_layers_bf16": true, "cuda_graph_impl": "transformer_engine"})),
        plan("llama-3.1-70b", json!({"recompute_granularity": "selective"})),
        plan("nemotron-h-56b", json!({})),
        plan("qwen3-next-80b-a3b", json!({"recompute_granularity": "selective", "recompute_modules": ["moe_act", "layernorm"]})),
    ];
    let (_, fp8) = layers(&cases[1]);
    assert!(fp8.graphs.iter().any(|&g| g > 0.0) && fp8.bf16[..fp8.n] != fp8.kinds[..fp8.n], "FP8 case: graphs and BF16 edge tables");
    for p in &cases {
        let (key, base) = layers(p);
        assert!(base.active().iter().any(|a| a.full > 0.0), "{}: activations counted", p.model_name);
        for (i, q) in unkeyed(p).iter().enumerate() {
            let (k, l) = layers(q);
            assert_eq!(k, key, "{}: change {i} moved the key", p.model_name);
            assert!(l == base, "{}: change {i} is not in the key but moved the activations", p.model_name);
        }
        // A keyed size moves both: the micro-batch (twice the tokens), TP, CP, SP.
        let mut keyed = Vec::new();
        for f in [
            |q: &mut Plan| q.training.micro_batch_size = 4,
            |q: &mut Plan| q.parallelism.tensor_model_parallel_size = 4,
            |q: &mut Plan| q.parallelism.context_parallel_size = 1,
            |q: &mut Plan| q.parallelism.sequence_parallel = false,
        ] {
            let mut q = p.clone();
            f(&mut q);
            keyed.push(layers(&q));
        }
        for (i, (k, l)) in keyed.iter().enumerate() {
            assert_ne!(*k, key, "{}: keyed change {i}", p.model_name);
            assert!(*l != base, "{}: keyed change {i} left the activations", p.model_name);
        }
    }
}
