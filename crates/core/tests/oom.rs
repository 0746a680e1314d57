//! Out-of-memory messages from issue trackers, parsed and explained against plans; values worked by hand.

use meshplan_core::oom::{Cause, explain, parse_message};
use meshplan_core::plan_value;
use serde_json::Value;

const GIB: f64 = (1u64 << 30) as f64;
const MIB: f64 = (1u64 << 20) as f64;

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{}/tests/data/oom/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn close(bytes: Option<u64>, want: f64) -> bool {
    bytes.is_some_and(|b| (b as f64 - want).abs() <= 1.0)
}

/// Megatron-LM #525, pre-2.1 form: 786.00 MiB requested; 31.74 GiB total, 28.82 allocated, 577.12 MiB free, 29.97 GiB
/// reserved in total → reserved − allocated = 1.15 GiB ≥ 0.77 GiB requested: fragmentation.
#[test]
fn legacy_form_from_megatron_lm_issue_525() {
    let m = parse_message(&fixture("megatron_lm_issue525.txt")).unwrap();
    assert_eq!(m.form, "legacy");
    assert!(close(Some(m.requested_bytes), 786.0 * MIB));
    assert_eq!(m.gpu_index, Some(0));
    assert!(close(m.capacity_bytes, 31.74 * GIB) && close(m.allocated_bytes, 28.82 * GIB) && close(m.free_bytes, 577.12 * MIB));
    assert!(close(m.reserved_bytes, 29.97 * GIB));
    assert!(close(m.reserved_unallocated_bytes, (29.97 * GIB).round() - (28.82 * GIB).round()));
}

/// The current form with a `[rank15]:` prefix (ms-swift #5943): 2.63 GiB requested on GPU 7; 48.15 GiB allocated,
/// 3.49 GiB reserved-unallocated (so 51.64 GiB reserved), 2.61 GiB free; the CUDA-graph pool clause between is skipped.
#[test]
fn current_form_with_a_rank_prefix() {
    let m = parse_message(&fixture("ms_swift_issue5943.txt")).unwrap();
    assert_eq!((m.form.as_str(), m.gpu_index, m.rank), ("current", Some(7), Some(15)));
    assert!(close(Some(m.requested_bytes), 2.63 * GIB) && close(m.capacity_bytes, 79.11 * GIB) && close(m.free_bytes, 2.61 * GIB));
    assert!(close(m.allocated_bytes, 48.15 * GIB) && close(m.reserved_unallocated_bytes, 3.49 * GIB));
    assert!(close(m.reserved_bytes, (48.15 * GIB).round() + (3.49 * GIB).round()));
    assert_eq!(m.process_bytes, Some(0));
}

#[test]
fn text_without_a_message_is_an_input_error() {
    assert!(parse_message("Traceback: RuntimeError: NCCL error").is_err());
    assert!(parse_message("Tried to allocate lots").is_err());
}

fn example() -> Value {
    serde_json::from_str(&std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/llama-3.1-70b.json")).unwrap()).unwrap()
}

/// Issue 13's message on the README's Llama 3.1 70B plan (TP 8, PP 4, DP 2 on 64 GPUs, order tp-cp-ep-dp-pp):
/// GPU 3 → rank 3 on node 0: tp digit 3, dp digit 0, pp = 3 / (TP·CP·DP = 16) = 0, so stage 0; its TP group is ranks
/// 0–7, its DP group {3, 3+8} (stride TP = 8), its PP group {3, 19, 35, 51} (stride 16). The 2.00 GiB request fits in
/// 1.80 GiB reserved-unallocated + 1.02 GiB free (2.82 GiB): fragmentation; the allocator setting is among the fixes at
/// no step-time cost.
#[test]
fn issue_13_message_on_the_readme_plan() {
    let plan = example();
    let report = plan_value(&plan).unwrap();
    let x = explain(&plan, &report, &fixture("meshplan_issue13.txt"), None).unwrap();
    assert_eq!((x.rank, x.pipeline_stage), (3, 0));
    let group = |k: &str| x.groups.iter().find(|(kind, _)| kind == k).map(|(_, g)| g.clone()).unwrap();
    assert_eq!(group("tp"), (0..8).collect::<Vec<u32>>());
    assert_eq!(group("dp"), vec![3, 11]);
    assert_eq!(group("pp"), vec![3, 19, 35, 51]);
    assert_eq!(x.cause, Cause::Fragmentation);
    assert!(x.fixes.iter().any(|f| f.change.contains("expandable_segments") && f.step_time_delta_s == Some(0.0)));
    // The stage-0 prediction is the report's own.
    let predicted = x.compared.iter().find(|c| c.what.starts_with("allocated by PyTorch")).unwrap().predicted_bytes;
    assert_eq!(predicted, Some(report.memory.stages[0].allocated_bytes));
}

/// A real overrun on the same plan, for rank 35 (given): pp = 35 / 16 = 2, stage 2. 10 GiB requested with 1 GiB free and
/// 1 GiB reserved-unallocated is 8 GiB short; every fix listed lowers the predicted peak by at least 8 GiB, none is
/// invalid, and they come cheapest first.
#[test]
fn an_overrun_gets_fixes_that_free_the_shortfall() {
    let plan = example();
    let report = plan_value(&plan).unwrap();
    let msg = "Tried to allocate 10.00 GiB. GPU 3 has a total capacity of 79.11 GiB of which 1.00 GiB is free. Of the allocated memory 67.00 GiB is allocated by PyTorch, and 1.00 GiB is reserved by PyTorch but unallocated.";
    let x = explain(&plan, &report, msg, Some(35)).unwrap();
    assert_eq!((x.rank, x.pipeline_stage), (35, 2));
    assert_eq!(x.cause, Cause::Overrun);
    assert!(close(Some(x.shortfall_bytes), 8.0 * GIB));
    assert!(!x.fixes.is_empty());
    for f in &x.fixes {
        assert!(f.peak_bytes + x.shortfall_bytes <= report.memory.peak_bytes, "{}", f.change);
    }
    let costs: Vec<f64> = x.fixes.iter().map(|f| f.step_time_delta_s.unwrap()).collect();
    assert!(costs.windows(2).all(|w| w[0] <= w[1]), "{costs:?}");
}

/// Megatron-LM #92 (a 305,664-token vocabulary on one GPU, out of memory in the cross-entropy over the logits), pre-2.1
/// form, read by hand: 9.33 GiB requested on GPU 0; 10.76 GiB total, 5.17 allocated, 4.48 free, 5.28 reserved in total.
/// Reserved − allocated = 0.11 GiB; with the 4.48 GiB free that is 4.59 GiB < 9.33 GiB: a real overrun, 9.33 − 4.48 −
/// 0.11 = 4.74 GiB short. (The cause and the shortfall are the message's alone; the README plan only places rank 0.)
#[test]
fn a_real_overrun_from_megatron_lm_issue_92() {
    let text = fixture("megatron_lm_issue92.txt");
    let m = parse_message(&text).unwrap();
    assert_eq!((m.form.as_str(), m.gpu_index), ("legacy", Some(0)));
    assert!(close(Some(m.requested_bytes), 9.33 * GIB) && close(m.capacity_bytes, 10.76 * GIB) && close(m.free_bytes, 4.48 * GIB));
    assert!(close(m.allocated_bytes, 5.17 * GIB) && close(m.reserved_bytes, 5.28 * GIB));
    let plan = example();
    let report = plan_value(&plan).unwrap();
    let x = explain(&plan, &report, &text, Some(0)).unwrap();
    assert_eq!(x.cause, Cause::Overrun);
    let short = (9.33 * GIB).round() - (4.48 * GIB).round() - ((5.28 * GIB).round() - (5.17 * GIB).round());
    assert!((x.shortfall_bytes as f64 - short).abs() <= 2.0, "{} vs {short}", x.shortfall_bytes);
    assert!((x.shortfall_bytes as f64 / GIB - 4.74).abs() < 0.005);
}

// ---------------------------------------------------------------------------------------------------
// The memory terms the threads showed missing: unfused attention's s² scores and LoRA's frozen base.
// ---------------------------------------------------------------------------------------------------

use meshplan_core::memory::TermKey;
use serde_json::json;

/// Issue 22's first case: a GPT-2-size model (36 layers, h 1,280, 20 heads, GPT-2's 50,257-token vocabulary padded to
/// a multiple of 128: 50,304), fp16, micro-batch 4, seq 1,024, on one GPU.
fn gpt2(training: Value) -> Value {
    let mut t = json!({"seq_length": 1024, "micro_batch_size": 4, "global_batch_size": 4, "precision": "fp16"});
    for (k, v) in training.as_object().unwrap() {
        t[k] = v.clone();
    }
    json!({
        "model": {"name": "gpt2-large-like", "num_layers": 36, "hidden_size": 1280, "num_attention_heads": 20, "ffn_hidden_size": 5120,
                  "vocab_size": 50257, "make_vocab_size_divisible_by": 128, "position_embedding_type": "learned_absolute",
                  "max_position_embeddings": 1024, "normalization": "LayerNorm", "gated_linear_unit": false, "activation_func": "gelu"},
        "cluster": {"gpu": "a100-sxm-40gb", "gpus_per_node": 1, "num_nodes": 1},
        "training": t,
        "parallelism": {"tensor_model_parallel_size": 1}
    })
}

fn term(r: &meshplan_core::Report, key: TermKey) -> u64 {
    r.memory.stages[0].terms.iter().filter(|t| t.key == key).map(|t| t.bytes).sum()
}

/// `--transformer-impl local` runs Megatron-Core's DotProductAttention, which saves per layer the softmax output
/// (b·heads·s² at 2 B), the dropout mask (1 B) and the dropped-out probabilities (2 B) with attention_dropout 0.1, and no
/// flash log-sum-exp (b·s·heads × 4 B). Per layer: 4·20·1,024² = 83,886,080 scores × 5 B = 419,430,400 B, less the
/// 4·1,024·20·4 = 327,680 B of the log-sum-exp: 419,102,720 B; × 36 layers = 15,087,697,920 B more per microbatch.
/// With attention_dropout 0: 83,886,080 × 2 B − 327,680 = 167,444,480 B a layer, 6,028,001,280 B in all. The raw scores
/// of one layer (Megatron-Core's global buffer) are a working set of 83,886,080 × 2 B = 167,772,160 B.
#[test]
fn unfused_attention_saves_the_s2_scores() {
    let fused = plan_value(&gpt2(json!({}))).unwrap();
    let local = plan_value(&gpt2(json!({"transformer_impl": "local"}))).unwrap();
    let per_mb = |r: &meshplan_core::Report| r.memory.stages[0].activations_per_microbatch_bytes as i64;
    assert!((per_mb(&local) - per_mb(&fused) - 15_087_697_920).abs() <= 36, "{}", per_mb(&local) - per_mb(&fused));
    assert_eq!(term(&local, TermKey::AttentionScoresWorkingSet), 167_772_160);
    assert_eq!(term(&fused, TermKey::AttentionScoresWorkingSet), 0);
    let no_dropout = plan_value(&gpt2(json!({"transformer_impl": "local", "attention_dropout": 0.0}))).unwrap();
    assert!((per_mb(&no_dropout) - per_mb(&fused) - 6_028_001_280).abs() <= 36);
    // TE's unfused backend saves the same; core_attn recompute frees them again.
    let te_unfused = plan_value(&gpt2(json!({"attention_backend": "unfused"}))).unwrap();
    assert_eq!(per_mb(&te_unfused), per_mb(&local));
    let recomputed = plan_value(&gpt2(json!({"attention_backend": "unfused", "recompute_granularity": "selective"}))).unwrap();
    let fused_recomputed = plan_value(&gpt2(json!({"recompute_granularity": "selective"}))).unwrap();
    assert_eq!(per_mb(&recomputed), per_mb(&fused_recomputed));
}

/// LoRA (Bridge's cfg.peft = LoRA(dim=16), all four default targets) on a Llama-3-8B-shaped model (32 layers, h 4,096,
/// 32 heads of 128, 8 query groups, SwiGLU FFN 14,336) at TP 1: per layer linear_qkv 16·(4,096 + 4,096 + 2·8·128) =
/// 163,840, linear_proj 16·(4,096 + 4,096) = 131,072, linear_fc1 16·(4,096 + 2·14,336) = 524,288, linear_fc2
/// 16·(14,336 + 4,096) = 294,912: 1,114,112 a layer, 35,651,584 in all. Only they are trained: the main grads (fp32 in
/// bf16 runs) 4 B each = 142,606,336 B, fp32 master weights 142,606,336 B, Adam moments 8 B = 285,212,672 B (no
/// distributed optimizer, one GPU); the weights gain the adapters at 2 B = 71,303,168 B.
#[test]
fn lora_trains_the_adapters_only() {
    let plan = |training: Value| {
        let mut t = json!({"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 8, "precision": "bf16"});
        for (k, v) in training.as_object().unwrap() {
            t[k] = v.clone();
        }
        json!({
            "model": {"name": "llama-3-8b-like", "num_layers": 32, "hidden_size": 4096, "num_attention_heads": 32, "num_query_groups": 8,
                      "kv_channels": 128, "ffn_hidden_size": 14336, "gated_linear_unit": true, "activation_func": "silu",
                      "add_bias_linear": false, "normalization": "RMSNorm", "position_embedding_type": "rope", "vocab_size": 128256},
            "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 1, "num_nodes": 1},
            "training": t,
            "parallelism": {"tensor_model_parallel_size": 1}
        })
    };
    let full = plan_value(&plan(json!({}))).unwrap();
    let lora = plan_value(&plan(json!({"peft": "lora", "lora_dim": 16}))).unwrap();
    assert_eq!(term(&lora, TermKey::Gradients), 142_606_336);
    assert_eq!(term(&lora, TermKey::MasterWeights), 142_606_336);
    assert_eq!(term(&lora, TermKey::OptimizerMoments), 285_212_672);
    assert_eq!(term(&lora, TermKey::Weights) - term(&full, TermKey::Weights), 71_303_168);
    // Only linear_qkv: 163,840 × 32 = 5,242,880 adapters, 4 B of grads each.
    let qkv = plan_value(&plan(json!({"peft": "lora", "lora_dim": 16, "lora_target_modules": ["linear_qkv"]}))).unwrap();
    assert_eq!(term(&qkv, TermKey::Gradients), 20_971_520);
}
