//! `derived.layer_runs_per_chunk`: the decoder layers of every (pipeline rank, virtual chunk) as runs of one kind,
//! written in Megatron-Core's hybrid-pattern symbols. Expected strips are worked by hand from the model's pattern or
//! its `moe_layer_freq` and the split's boundaries.

use meshplan_core::plan_value;
use meshplan_core::report::KindRun;
use serde_json::{Value, json};

fn plan(model: Value, par: Value) -> Value {
    json!({"model": model, "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 8},
           "training": {"global_batch_size": 512}, "parallelism": par})
}

/// A chunk's runs spelled out one symbol group per layer, so that it compares with a slice of a pattern.
fn spelled(runs: &[KindRun]) -> String {
    runs.iter().map(|r| r.symbols.repeat(r.count as usize)).collect()
}

fn runs(list: &[(&str, u64)]) -> Vec<KindRun> {
    list.iter().map(|&(s, n)| KindRun { symbols: s.into(), count: n }).collect()
}

#[test]
fn a_hybrid_pattern_on_pp_4_is_cut_at_the_even_split() {
    // Nemotron 3 Nano 30B-A3B's 52-symbol pattern (data/models.json, the model's config.json): no `|`, so PP 4 takes
    // Megatron's even split, 52 / 4 = 13 layers per rank; rank i holds pattern[13 i .. 13 i + 13].
    let pattern = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME";
    assert_eq!(pattern.len(), 52);
    let r = plan_value(&plan(json!("nemotron-3-nano-30b-a3b"), json!({"pipeline_model_parallel_size": 4, "expert_model_parallel_size": 8})))
        .unwrap();
    let strip = &r.derived.layer_runs_per_chunk;
    assert_eq!(strip.len(), 4);
    for (rank, chunks) in strip.iter().enumerate() {
        assert_eq!(chunks.len(), 1, "one chunk per rank without VPP");
        assert_eq!(spelled(&chunks[0]), pattern[13 * rank..13 * rank + 13], "rank {rank}");
    }
    // Rank 0 by hand: M E M E M * E M E M E M * — thirteen runs of one layer (no two neighbours alike).
    assert_eq!(strip[0][0].len(), 13);
    assert!(strip[0][0].iter().all(|r| r.count == 1));
}

#[test]
fn gpt_layers_are_mixer_and_mlp_symbols_and_follow_a_layout() {
    // DeepSeek-V3: MLA (`+`) in every layer; moe_layer_freq makes layers 0–2 dense (`-`) and 3–60 MoE (`E`).
    // Bridge's PP 2 layout Et*4|(t*4|)*14tmL: stage i on rank i mod 2, chunk i div 2; stages 0–14 hold 4 layers,
    // stage 15 one. Stage 0 (rank 0, chunk 0) = layers 0–3: three dense, one MoE; stage 1 (rank 1, chunk 0) = layers
    // 4–7, all MoE; stage 15 (rank 1, chunk 7) = layer 60.
    let r = plan_value(&plan(
        json!("deepseek-v3"),
        json!({"pipeline_model_parallel_size": 2, "expert_model_parallel_size": 32, "pipeline_model_parallel_layout": "Et*4|(t*4|)*14tmL"}),
    ))
    .unwrap();
    let strip = &r.derived.layer_runs_per_chunk;
    assert_eq!((strip.len(), strip[0].len(), strip[1].len()), (2, 8, 8));
    assert_eq!(strip[0][0], runs(&[("+-", 3), ("+E", 1)]));
    assert_eq!(strip[1][0], runs(&[("+E", 4)]));
    assert_eq!(strip[0][7], runs(&[("+E", 4)]));
    assert_eq!(strip[1][7], runs(&[("+E", 1)]));
    // Every chunk's runs add up to its layer count.
    for (rank, chunks) in strip.iter().enumerate() {
        let counts: Vec<u64> = chunks.iter().map(|c| c.iter().map(|r| r.count).sum()).collect();
        assert_eq!(counts, r.derived.layers_per_chunk[rank]);
    }
}

#[test]
fn a_dense_model_is_one_run_per_chunk() {
    // Llama 3.1 70B on PP 4 · VPP 5: 80 / 20 chunks = 4 attention + dense MLP layers each (`*-`).
    let r = plan_value(&plan(json!("llama-3.1-70b"), json!({"tensor_model_parallel_size": 8, "pipeline_model_parallel_size": 4,
        "virtual_pipeline_model_parallel_size": 5}))).unwrap();
    let strip = &r.derived.layer_runs_per_chunk;
    assert_eq!(strip.len(), 4);
    assert!(strip.iter().all(|chunks| chunks.len() == 5 && chunks.iter().all(|c| *c == runs(&[("*-", 4)]))));
    // The JSON carries it as lists of {symbols, count}.
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["derived"]["layer_runs_per_chunk"][3][4], json!([{"symbols": "*-", "count": 4}]));
}

#[test]
fn a_broken_split_leaves_the_field_out() {
    // 80 layers on PP 3 with no uneven stages do not split: the report has no split, and no strip.
    let r = plan_value(&plan(json!("llama-3.1-70b"), json!({"tensor_model_parallel_size": 8, "pipeline_model_parallel_size": 3,
        "pipeline_model_parallel_layout": "Et*40|t*41L"}))).unwrap();
    assert!(r.derived.layer_runs_per_chunk.is_empty());
    let v = serde_json::to_value(&r).unwrap();
    assert!(v["derived"].get("layer_runs_per_chunk").is_none());
}
