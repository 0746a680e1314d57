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

/// The README plan and its report.
fn readme() -> (Value, meshplan_core::Report) {
    let plan = example();
    let report = plan_value(&plan).unwrap();
    (plan, report)
}

/// Issue 13's message on the README's Llama 3.1 70B plan (TP 8, PP 4, DP 2 on 64 GPUs, order tp-cp-ep-dp-pp):
/// GPU 3 → rank 3 on node 0: tp digit 3, dp digit 0, pp = 3 / (TP·CP·DP = 16) = 0, so stage 0; its TP group is ranks
/// 0–7, its DP group {3, 3+8} (stride TP = 8), its PP group {3, 19, 35, 51} (stride 16). The 2.00 GiB request fits in
/// 1.80 GiB reserved-unallocated + 1.02 GiB free (2.82 GiB), but the message's 74.21 GiB allocated is more than the
/// plan's predicted stage-0 allocation by over the 15% band (the README plan's stage 0 is predicted near 50 GiB): the
/// run holds more than the plan, so it is not called fragmentation.
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
    // The stage-0 prediction is the report's own.
    let predicted = x.compared.iter().find(|c| c.what.starts_with("allocated by PyTorch")).unwrap().predicted_bytes;
    assert_eq!(predicted, Some(report.memory.stages[0].allocated_bytes));
    assert!((74.21 * GIB) > 1.15 * report.memory.stages[0].allocated_bytes as f64);
    assert_eq!(x.cause, Cause::Overrun, "{}", x.cause_text);
    assert!(x.cause_text.contains("PyTorch had allocated 74.21 GiB"), "{}", x.cause_text);
}

/// Fragmentation when every condition holds: the same rank 3 on the README plan with 48.00 GiB allocated (within 15% of
/// the prediction), the 2.00 GiB request under 1.80 reserved-unallocated + 1.02 free = 2.82 GiB, and the plan's peak
/// under the 79.11 GiB device. The allocator setting comes first, at no step-time cost.
#[test]
fn fragmentation_only_when_the_plan_fits_and_the_run_is_the_plan() {
    let plan = example();
    let report = plan_value(&plan).unwrap();
    let msg = "Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.11 GiB of which 1.02 GiB is free. Of the allocated memory 48.00 GiB is allocated by PyTorch, and 1.80 GiB is reserved by PyTorch but unallocated.";
    let x = explain(&plan, &report, msg, None).unwrap();
    assert!(report.memory.stages[0].total_bytes as f64 <= 79.11 * GIB && 48.0 * GIB <= 1.15 * report.memory.stages[0].allocated_bytes as f64);
    assert_eq!(x.cause, Cause::Fragmentation, "{}", x.cause_text);
    assert!(x.fixes[0].change.contains("expandable_segments") && x.fixes[0].step_time_delta_s == Some(0.0));
}

/// A real overrun on the same plan, for rank 35 (given): pp = 35 / 16 = 2, stage 2. 10 GiB requested with 1 GiB free and
/// 1 GiB reserved-unallocated is 8 GiB short; the fixes that fit lower the predicted peak by at least 8 GiB and come
/// first, cheapest first; none is invalid.
#[test]
fn an_overrun_gets_fixes_that_free_the_shortfall() {
    let plan = example();
    let report = plan_value(&plan).unwrap();
    let msg = "Tried to allocate 10.00 GiB. GPU 3 has a total capacity of 79.11 GiB of which 1.00 GiB is free. Of the allocated memory 67.00 GiB is allocated by PyTorch, and 1.00 GiB is reserved by PyTorch but unallocated.";
    let x = explain(&plan, &report, msg, Some(35)).unwrap();
    assert_eq!((x.rank, x.pipeline_stage), (35, 2));
    assert_eq!(x.cause, Cause::Overrun);
    assert!(close(Some(x.shortfall_bytes), 8.0 * GIB));
    assert!(x.fixes[0].fits);
    let fitting: Vec<_> = x.fixes.iter().take_while(|f| f.fits).collect();
    assert!(x.fixes[fitting.len()..].iter().all(|f| !f.fits));
    for f in &fitting {
        assert!(f.peak_bytes + x.shortfall_bytes <= report.memory.peak_bytes, "{}", f.change);
    }
    // Among the fitting ones, none shrinks a named tensor (10.00 GiB is no tensor of stage 2): cheapest first.
    let costs: Vec<f64> = fitting.iter().map(|f| f.step_time_delta_s.unwrap()).collect();
    assert!(costs.windows(2).all(|w| w[0] <= w[1]), "{costs:?}");
}

/// Megatron-LM #92 (a 305,664-token vocabulary on one GPU, out of memory in the cross-entropy over the logits), pre-2.1
/// form, read by hand: 9.33 GiB requested on GPU 0; 10.76 GiB total, 5.17 allocated, 4.48 free, 5.28 reserved in total.
/// Reserved − allocated = 0.11 GiB; with the 4.48 GiB free that is 4.59 GiB < 9.33 GiB: a real overrun, 9.33 − 4.48 −
/// 0.11 = 4.74 GiB short. On the README plan's 70B stage 0 (predicted far over a 10.76 GiB device) the verdict is
/// that the plan does not fit; the shortfall is the message's alone.
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
    assert_eq!(x.cause, Cause::DoesNotFit);
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
        let mut t = json!({"seq_length": 4096, "global_batch_size": 8});
        for (k, v) in training.as_object().unwrap() {
            t[k] = v.clone();
        }
        llama_8b(1, t)
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

// ---------------------------------------------------------------------------------------------------
// Naming the allocation, verdicts and fixes: messages written for these tests, one per form and culprit class.
// ---------------------------------------------------------------------------------------------------

use meshplan_core::memory::TensorKind;
use meshplan_core::oom::{explain_all, parse_messages};

/// A message in PyTorch ≥ 2.4's form on `gpu`, sizes in GiB with two decimals as PyTorch prints them.
fn current(rank: Option<u64>, gpu: u64, request: &str, capacity: f64, free: f64, allocated: f64, unallocated: f64) -> String {
    let prefix = rank.map(|r| format!("[rank{r}]: ")).unwrap_or_default();
    format!(
        "{prefix}torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {request}. GPU {gpu} has a total capacity of {capacity:.2} GiB of which {free:.2} GiB is free. Including non-PyTorch memory, this process has {:.2} GiB memory in use. Of the allocated memory {allocated:.2} GiB is allocated by PyTorch, and {unallocated:.2} GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.",
        capacity - free
    )
}

/// Issue 22's first case with the run's own configuration (fp16, `--transformer-impl local`, GPT-2's vocabulary padded
/// to 50,304) and the thread's message (Megatron-LM #525: 786.00 MiB requested on a 31.74 GiB V100). The request is
/// the loss's fp32 copy of the logits, b·s·V·4 B = 4 × 1,024 × 50,304 × 4 = 824,180,736 B = 786.00 MiB exactly, in the
/// forward, on the only stage. The plan does not fit the 31.74 GiB device — by hand, a lower bound: its 774M
/// parameters at 16 B (fp16 weights and grads, fp32 master, Adam) are 11.5 GiB, the saved s² scores 36 × 400 MiB =
/// 14.1 GiB, the logits and their fp32 copy 4·1,024·50,304 × 6 B = 1.15 GiB, the layers' other activations
/// (≈ 34·s·b·h B = 170 MiB a layer) 6 GiB: 32.7 GiB > 31.74 GiB — so not fragmentation, though the request fits in the
/// 1.15 GiB reserved-unallocated. The first fix brings the peak under 31.74 GiB and shrinks the logits (a smaller
/// micro-batch: the logits are b·s·V).
#[test]
fn case_1_gpt2_logits_named_and_the_plan_does_not_fit() {
    let plan = gpt2(json!({"transformer_impl": "local"}));
    let report = plan_value(&plan).unwrap();
    let x = explain(&plan, &report, &fixture("megatron_lm_issue525.txt"), None).unwrap();
    let c = x.named.culprit.as_ref().expect("named");
    assert_eq!((c.kind, c.predicted_bytes, x.pipeline_stage), (TensorKind::LogitsFp32, 824_180_736, 0));
    assert!(c.phase.starts_with("forward"), "{}", c.phase);
    assert!(x.named.implied.is_none());
    assert_eq!(x.cause, Cause::DoesNotFit, "{}", x.cause_text);
    assert!(close(Some(x.capacity_bytes), 31.74 * GIB));
    assert!(!x.over_budget.is_empty());
    let first = &x.fixes[0];
    assert!(first.fits && first.shrinks_culprit && first.peak_bytes as f64 <= 31.74 * GIB, "{first:?}");
    assert!(first.change.starts_with("micro_batch_size"), "{}", first.change);
}

/// The same message on the plan meshplan had (its default 32,000-token vocabulary, fused attention): the request is no
/// tensor of that plan, but at b·s·4 B = 16,384 B a vocabulary entry it implies 824,180,736 / 16,384 = 50,304 — a
/// multiple of 128, so a padded vocabulary the run can hold. The explanation says so, re-plans at it, and does not call
/// it fragmentation: PyTorch had 28.82 GiB allocated, far more than the plan predicts (it lacks the s² scores), so the
/// plan's "fits" is not the run's. Its assumptions name the vocabulary and the attention backend.
#[test]
fn case_1_on_the_default_plan_the_request_bounds_the_vocabulary() {
    let mut plan = gpt2(json!({}));
    plan["model"].as_object_mut().unwrap().remove("vocab_size");
    let report = plan_value(&plan).unwrap();
    assert_eq!(report.derived.padded_vocab_size, 32_000);
    let x = explain(&plan, &report, &fixture("megatron_lm_issue525.txt"), None).unwrap();
    let i = x.named.implied.as_ref().expect("implied");
    assert_eq!((i.name.as_str(), i.plan_value, i.implied_value), ("padded_vocab_size", 32_000, 50_304));
    assert!(i.text.starts_with("the 786.00 MiB request implies a padded vocabulary of 50,304 at micro-batch 4, seq 1024, fp32 logits"), "{}", i.text);
    assert!(i.text.ends_with("the plan assumed 32,000"), "{}", i.text);
    assert_eq!(x.corrections, vec![("model.vocab_size".to_string(), json!(50_304))]);
    assert_eq!(x.named.culprit.as_ref().unwrap().kind, TensorKind::LogitsFp32);
    assert_ne!(x.cause, Cause::Fragmentation, "{}", x.cause_text);
    assert!(x.assumptions.iter().any(|a| a.starts_with("vocabulary 32,000")), "{:?}", x.assumptions);
    assert!(x.assumptions.iter().any(|a| a.contains("attention_backend auto")), "{:?}", x.assumptions);
}

/// Issue 22's second case, built to its description: an RL trainer's actor (a 1.5B Qwen2-shaped model, 151,936-token
/// vocabulary, TP 1, 8 GPUs) whose log-probability pass runs 25 sequences of 4,096 at once while the plan says
/// micro-batch 8. The logits' fp32 copy is then 25 × 4,096 × 151,936 × 4 B = 62,232,985,600 B = 57.96 GiB; at the
/// plan's micro-batch 8 it would be 19,914,555,392 B, so the request implies a micro-batch of 25 (62,232,985,600 /
/// 2,489,319,424 B a sequence = 25.000). Re-planned at 25 the stage's saved logits alone (25·4,096·151,936 × 6 B =
/// 86.9 GiB) are over the 79.11 GiB device: the plan does not fit, and the first fix shrinks the logits, not the
/// optimizer state.
#[test]
fn case_2_rl_logits_imply_the_micro_batch() {
    let plan = json!({
        "model": {"name": "qwen2-1.5b-like", "num_layers": 28, "hidden_size": 1536, "num_attention_heads": 12, "num_query_groups": 2,
                  "kv_channels": 128, "ffn_hidden_size": 8960, "gated_linear_unit": true, "activation_func": "silu", "add_bias_linear": false,
                  "add_qkv_bias": true, "normalization": "RMSNorm", "position_embedding_type": "rope", "vocab_size": 151936},
        "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 1},
        "training": {"seq_length": 4096, "micro_batch_size": 8, "global_batch_size": 256, "use_distributed_optimizer": true},
        "parallelism": {"tensor_model_parallel_size": 1}
    });
    let report = plan_value(&plan).unwrap();
    let msg = current(Some(3), 3, "57.96 GiB", 79.11, 41.20, 36.80, 0.40);
    let x = explain(&plan, &report, &msg, None).unwrap();
    let i = x.named.implied.as_ref().expect("implied");
    assert_eq!((i.name.as_str(), i.plan_value, i.implied_value), ("micro_batch_size", 8, 25), "{}", i.text);
    assert_eq!(x.named.culprit.as_ref().unwrap().kind, TensorKind::LogitsFp32);
    assert_eq!(x.cause, Cause::DoesNotFit, "{}", x.cause_text);
    assert!(x.predicted_peak_bytes as f64 > 86.9 * GIB);
    let first = &x.fixes[0];
    assert!(first.shrinks_culprit && !first.change.contains("optimizer"), "{first:?}");
}

/// Issue 22's third case: Qwen3-235B-A22B with LoRA (rank 8, the wrapper's --lora_rank; ms-swift's --train_type lora)
/// on 32 H100s, TP 4, PP 2 (47 layers a stage), EP 8, ETP 1. Trained in full the stage holds its share of 235B parameters with 4 B fp32 grads and
/// the distributed optimizer's state: over the 79.11 GiB device, so the verdict is "the plan does not fit", never
/// fragmentation, though the 2.50 GiB request is under the 0.90 GiB free + 1.80 GiB cached. Under LoRA the frozen base
/// has no gradients, master weights or optimizer state: the adapters' grads are under 1% of the full run's, and the
/// plan fits. Either way the first fix fits whenever any does.
#[test]
fn case_3_moe_lora_is_modelled() {
    let plan = |training: Value| {
        let mut t = json!({"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 64, "use_distributed_optimizer": true});
        for (k, v) in training.as_object().unwrap() {
            t[k] = v.clone();
        }
        json!({
            "model": "qwen3-235b-a22b",
            "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 4},
            "training": t,
            "parallelism": {"tensor_model_parallel_size": 4, "pipeline_model_parallel_size": 2, "expert_model_parallel_size": 8,
                            "expert_tensor_parallel_size": 1, "sequence_parallel": true}
        })
    };
    let full_plan = plan(json!({}));
    let full = plan_value(&full_plan).unwrap();
    let lora_plan = plan(json!({"peft": "lora", "lora_dim": 8}));
    let lora = plan_value(&lora_plan).unwrap();
    // The LoRA plan is valid: only the full run's out-of-memory is an error.
    assert!(lora.diagnostics.iter().all(|d| d.severity != meshplan_core::Severity::Error));
    let grads = |r: &meshplan_core::Report| r.memory.stages[0].gradients_bytes;
    assert!(grads(&lora) * 100 < grads(&full), "{} vs {}", grads(&lora), grads(&full));
    let msg = current(Some(3), 3, "2.50 GiB", 79.11, 0.90, 74.00, 1.80);
    let x = explain(&full_plan, &full, &msg, None).unwrap();
    assert!(x.predicted_peak_bytes > x.capacity_bytes);
    assert_eq!(x.cause, Cause::DoesNotFit, "{}", x.cause_text);
    let y = explain(&lora_plan, &lora, &msg, None).unwrap();
    assert!(y.predicted_peak_bytes < y.capacity_bytes, "{}", y.predicted_peak_bytes);
    assert!(y.assumptions.iter().all(|a| !a.starts_with("full training")));
    for e in [&x, &y] {
        if e.fixes.iter().any(|f| f.fits) {
            assert!(e.fixes[0].fits, "{:?}", e.fixes[0]);
        }
    }
}

/// Each form of the message, written for this test, read to the same numbers: PyTorch 2.1's "capacty", 1.x's
/// parenthesised form and its pre-1.5 "cached", ROCm's HIP, Intel's XPU and Ascend's NPU (torch_npu's "current active").
#[test]
fn every_message_form_is_read() {
    let v21 = "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacty of 39.39 GiB of which 512.00 MiB is free. Including non-PyTorch memory, this process has 38.87 GiB memory in use. Of the allocated memory 36.00 GiB is allocated by PyTorch, and 1.50 GiB is reserved by PyTorch but unallocated.";
    let m = parse_message(v21).unwrap();
    assert_eq!((m.form.as_str(), m.device.as_str(), m.gpu_index), ("current", "CUDA", Some(0)));
    assert!(close(m.capacity_bytes, 39.39 * GIB) && close(m.free_bytes, 512.0 * MIB) && close(m.process_bytes, 38.87 * GIB));
    let cached = "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 1; 11.17 GiB total capacity; 10.66 GiB already allocated; 2.81 MiB free; 10.86 GiB cached)";
    let m = parse_message(cached).unwrap();
    assert_eq!((m.form.as_str(), m.gpu_index), ("legacy", Some(1)));
    assert!(close(m.reserved_bytes, 10.86 * GIB) && close(Some(m.requested_bytes), 20.0 * MIB));
    let hip = "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 4.00 GiB. GPU 2 has a total capacity of 191.98 GiB of which 2.00 GiB is free. Of the allocated memory 180.00 GiB is allocated by PyTorch, and 6.00 GiB is reserved by PyTorch but unallocated.";
    let m = parse_message(hip).unwrap();
    assert_eq!((m.device.as_str(), m.gpu_index), ("HIP", Some(2)));
    assert!(close(m.capacity_bytes, 191.98 * GIB) && close(m.reserved_bytes, 186.0 * GIB));
    let xpu = "RuntimeError: XPU out of memory. Tried to allocate 2.00 GiB (GPU 0; 64.00 GiB total capacity; 60.00 GiB already allocated; 61.00 GiB reserved in total by PyTorch)";
    let m = parse_message(xpu).unwrap();
    assert_eq!((m.device.as_str(), m.form.as_str()), ("XPU", "legacy"));
    assert!(close(m.reserved_unallocated_bytes, GIB));
    let npu = "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 5; 60.97 GiB total capacity; 56.10 GiB already allocated; 56.10 GiB current active; 1.02 GiB free; 58.50 GiB reserved in total by PyTorch)";
    let m = parse_message(npu).unwrap();
    assert_eq!((m.device.as_str(), m.gpu_index), ("NPU", Some(5)));
    assert!(close(m.free_bytes, 1.02 * GIB) && close(m.allocated_bytes, 56.10 * GIB));
    // The CUDA-graph pools clause of ms-swift #5943's message: 50.00 MiB in private pools.
    let m = parse_message(&fixture("ms_swift_issue5943.txt")).unwrap();
    assert!(close(m.private_pool_bytes, 50.0 * MIB));
}

/// cuBLAS's and NCCL's allocation failures carry no sizes: read as out-of-memory-like, with a note, per rank; the
/// verdict is a failure outside the allocator, never fragmentation.
#[test]
fn cublas_and_nccl_allocation_failures_are_named_with_a_note() {
    let log = "[rank2]: RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`\n\
               [rank6]: node1:4242:4300 [6] include/alloc.h:103 NCCL WARN Cuda failure 'out of memory'\n";
    let all = parse_messages(log).unwrap();
    assert_eq!(all.iter().map(|m| (m.form.as_str(), m.rank)).collect::<Vec<_>>(), vec![("cublas", Some(2)), ("nccl", Some(6))]);
    assert!(all.iter().all(|m| m.requested_bytes == 0 && m.note.is_some()));
    let plan = example();
    let report = plan_value(&plan).unwrap();
    let xs = explain_all(&plan, &report, log, None).unwrap();
    assert!(xs.iter().all(|x| x.cause == Cause::OutsideAllocator), "{:?}", xs.iter().map(|x| x.cause).collect::<Vec<_>>());
}

/// Two failing ranks in one log, `[rank5]:` and `[rank53]:` on the README plan (TP 8, PP 4, DP 2: pp = rank / 16):
/// rank 5 is stage 0, rank 53 stage 3, the stage with the output layer, where 252.00 MiB is one microbatch's 16-bit
/// logits: 8,192 tokens × 129,024 / 8 (Llama 3.1's 128,256 padded to a multiple of 128·8 = 1,024) × 2 B = 264,241,152 B.
#[test]
fn each_failing_rank_gets_its_explanation() {
    let log = format!(
        "{}\n{}\n",
        current(Some(5), 5, "2.00 GiB", 79.11, 1.02, 74.21, 1.80),
        current(Some(53), 5, "252.00 MiB", 79.11, 0.10, 70.00, 0.05)
    );
    let plan = example();
    let report = plan_value(&plan).unwrap();
    let xs = explain_all(&plan, &report, &log, None).unwrap();
    assert_eq!(xs.iter().map(|x| (x.rank, x.pipeline_stage)).collect::<Vec<_>>(), vec![(5, 0), (53, 3)]);
    let c = xs[1].named.culprit.as_ref().unwrap();
    assert_eq!((c.kind, c.predicted_bytes), (TensorKind::Logits, 264_241_152));
}

/// A log with multi-byte characters around the message (a progress bar's █, an ellipsis, CJK text) and the message
/// after 1.5 MiB of log lines is found in one linear pass; a text cut inside a character does not panic.
#[test]
fn a_message_inside_a_long_log_with_multibyte_characters() {
    let mut log = String::new();
    while log.len() < 3 << 19 {
        log.push_str("iteration 12/1000 |████████░░| 训练中… loss 2.31 █\n");
    }
    log.push_str("[rank0]: ");
    log.push_str(&fixture("megatron_lm_issue525.txt"));
    log.push_str("\n日志结束 █\n");
    let t = std::time::Instant::now();
    let m = parse_message(&log).unwrap();
    assert!(close(Some(m.requested_bytes), 786.0 * MIB) && m.rank == Some(0));
    eprintln!("1.5 MiB log read in {:?}", t.elapsed());
    // Past the 16 MiB read limit, the cut falls inside a █ (3 bytes from an offset ≡ 0 mod 3; 16 MiB ≡ 1 mod 3).
    let mut big = fixture("megatron_lm_issue525.txt");
    while big.len() % 3 != 0 {
        big.push('x');
    }
    big.push_str(&"█".repeat((17 << 20) / 3));
    let t = std::time::Instant::now();
    assert!(close(Some(parse_message(&big).unwrap().requested_bytes), 786.0 * MIB));
    eprintln!("17 MiB log read in {:?}", t.elapsed());
}

/// The culprit classes sized by hand, each a request equal to one tensor of the plan:
/// - unfused attention scores, GPT-2 plan with `transformer_impl` local: 4 × 20 × 1,024² × 2 B = 167,772,160 B = 160.00 MiB;
/// - a gradient bucket, the same model with `overlap_grad_reduce` on 2 GPUs (DP 2): max(4·10⁷, 10⁶·2) = 4·10⁷ elements
///   × 2 B (fp16 grads) = 80,000,000 B = 76.29 MiB;
/// - CUDA-graph buffers, `cuda_graph_impl` local on the whole layer: each layer's static input, 4,096 tokens × 1,280 ×
///   2 B = 10,485,760 B a layer × 36 layers × 1 microbatch in flight = 377,487,360 B = 360.00 MiB;
/// - optimizer state, the LoRA test's Llama-8B shape at rank 16: Adam's 8 B × 35,651,584 adapters = 285,212,672 B =
///   272.00 MiB.
#[test]
fn each_culprit_class_is_named() {
    let named = |plan: Value, request: &str| {
        let report = plan_value(&plan).unwrap();
        let msg = current(None, 0, request, 79.11, 0.10, 70.00, 0.05);
        let x = explain(&plan, &report, &msg, None).unwrap();
        x.named.culprit.map(|c| c.kind)
    };
    assert_eq!(named(gpt2(json!({"transformer_impl": "local"})), "160.00 MiB"), Some(TensorKind::AttentionScores));
    let mut two = gpt2(json!({"overlap_grad_reduce": true}));
    two["cluster"]["gpus_per_node"] = json!(2);
    two["training"]["global_batch_size"] = json!(8);
    assert_eq!(named(two, "76.29 MiB"), Some(TensorKind::GradBucket));
    assert_eq!(named(gpt2(json!({"cuda_graph_impl": "local"})), "360.00 MiB"), Some(TensorKind::CudaGraphs));
    // A request no tensor is: none named, the three nearest shown.
    let plan = gpt2(json!({}));
    let report = plan_value(&plan).unwrap();
    let x = explain(&plan, &report, &current(None, 0, "3.33 MiB", 79.11, 0.0, 70.0, 0.0), None).unwrap();
    assert!(x.named.culprit.is_none() && x.named.nearest.len() == 3);
}

/// The assumptions come from what the run's own launch line says: ms-swift's Megatron trainer (`megatron sft`) with
/// `--train_type lora --lora_rank 8` reads as LoRA at rank 8 (names::WRAPPER_SETTINGS); Megatron-LM's
/// `--transformer-impl local` and `--attention-dropout 0.0` through the settings rows' flags; `--train_type full`
/// trains every parameter.
#[test]
fn lora_and_the_attention_kernel_are_read_from_launch_lines() {
    use meshplan_core::imports::{ImportOptions, import};
    let plan = |text: &str| import(text, &ImportOptions::default()).unwrap().plan;
    let p = plan("megatron sft --model Qwen/Qwen3-8B --train_type lora --lora_rank 8 --tensor_model_parallel_size 2 --micro_batch_size 1");
    assert_eq!((p["training"]["peft"].as_str(), p["training"]["lora_dim"].as_u64()), (Some("lora"), Some(8)), "{p}");
    let p = plan("megatron sft --model Qwen/Qwen3-8B --train_type full --micro_batch_size 1");
    assert_eq!(p["training"]["peft"].as_str(), Some("none"), "{p}");
    let p = plan("torchrun pretrain_gpt.py --num-layers 36 --hidden-size 1280 --num-attention-heads 20 --seq-length 1024 --max-position-embeddings 1024 --micro-batch-size 4 --fp16 --transformer-impl local --attention-dropout 0.0");
    assert_eq!((p["training"]["transformer_impl"].as_str(), p["training"]["attention_dropout"].as_f64()), (Some("local"), Some(0.0)), "{p}");
}

// ---------------------------------------------------------------------------------------------------
// Every culprit class, each in another form of the message: the plan, the request worked by hand from it, and what
// the explanation must say (the tensor's kind, its phase, the failing stage, a first fix that shrinks it or fits).
// ---------------------------------------------------------------------------------------------------

/// The explanation of `msg` on `plan`, checked: the named tensor is `kind` in a phase starting with `phase`, at
/// `stage`, of `bytes` (± 1 B: the request was worked out to the byte, the message prints it rounded); the first fix
/// shrinks it or brings the peak under the target (and then under the device). The plan may be over its GPU (the
/// out-of-memory error), never otherwise invalid.
fn named_as(plan: &Value, msg: &str, (kind, bytes, phase, stage): (TensorKind, u64, &str, u64)) -> meshplan_core::oom::Explanation {
    let report = plan_value(plan).unwrap();
    assert!(report.diagnostics.iter().all(|d| d.severity != meshplan_core::Severity::Error || d.code.to_string() == "out-of-memory"), "{:?}", report.diagnostics);
    let x = explain(plan, &report, msg, None).unwrap();
    let c = x.named.culprit.as_ref().unwrap_or_else(|| panic!("nothing named; nearest {:?}", x.named.nearest));
    assert_eq!((c.kind, x.pipeline_stage), (kind, stage), "{}", c.label);
    assert!(c.predicted_bytes.abs_diff(bytes) <= 1, "{} predicted {} B, by hand {bytes} B", c.label, c.predicted_bytes);
    assert!(x.named.implied.is_none());
    assert!(c.phase.starts_with(phase) && x.phase.as_deref() == Some(c.phase.as_str()), "{}", c.phase);
    let first = &x.fixes[0];
    assert!(first.shrinks_culprit || first.fits, "{first:?}");
    if first.fits {
        assert!(first.peak_bytes <= x.capacity_bytes, "{first:?}");
    }
    x
}

/// The Llama-3-8B shape of `lora_trains_the_adapters_only` on `gpus` H100s at TP 1, bf16, micro-batch 1, with `training`.
fn llama_8b(gpus: u64, training: Value) -> Value {
    let mut t = json!({"micro_batch_size": 1, "precision": "bf16"});
    for (k, v) in training.as_object().unwrap() {
        t[k] = v.clone();
    }
    json!({
        "model": {"name": "llama-3-8b-like", "num_layers": 32, "hidden_size": 4096, "num_attention_heads": 32, "num_query_groups": 8,
                  "kv_channels": 128, "ffn_hidden_size": 14336, "gated_linear_unit": true, "activation_func": "silu",
                  "add_bias_linear": false, "normalization": "RMSNorm", "position_embedding_type": "rope", "vocab_size": 128256},
        "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": gpus, "num_nodes": 1},
        "training": t,
        "parallelism": {"tensor_model_parallel_size": 1},
        // Megatron-Core's plain defaults: the requests are worked out by hand at them (no perf recipe's settings).
        "defaults": "megatron-core"
    })
}

/// One layer's saved activations, PyTorch 1.x's `RuntimeError: CUDA out of memory … (GPU 0; …)` form, on the GPT-2
/// plan with fused attention (fp16, 2 B; b·s = 4·1,024 = 4,096 tokens, h 1,280, 20 heads of 64, FFN 5,120, TP 1, no SP).
/// By the memory model's tensor list (activations.rs attention, the dense MLP):
///   the layer input 4,096·1,280·2 B = 10,485,760; linear_qkv's input (norm fused in) 10,485,760;
///   Q, K, V 4,096·(20·64 + 20·(64 + 64))·2 B = 31,457,280; O (linear_proj's input) 10,485,760;
///   flash attention's fp32 log-sum-exp 4,096·20·4 B = 327,680;
///   the MLP's residual 10,485,760 and fc1's input 10,485,760; fc1's output 4,096·5,120·2 B = 41,943,040; the GELU's
///   output 41,943,040 — in all 168,099,840 B = 160.31 MiB (under Korthikanti et al.'s 34·s·b·h = 178,257,920 B,
///   which also counts dropout masks). Halving the micro-batch halves it.
#[test]
fn one_layers_saved_activations_in_the_1x_form() {
    let plan = gpt2(json!({}));
    let msg = "RuntimeError: CUDA out of memory. Tried to allocate 160.31 MiB (GPU 0; 39.39 GiB total capacity; 37.80 GiB already allocated; 100.00 MiB free; 38.90 GiB reserved in total by PyTorch)";
    let x = named_as(&plan, msg, (TensorKind::LayerActivations, 168_099_840, "forward", 0));
    assert_eq!(x.message.form, "legacy");
    assert_eq!(x.cause, Cause::Overrun, "{}", x.cause_text);
    assert!(x.fixes[0].shrinks_culprit && x.fixes[0].change.starts_with("micro_batch_size 4 → 2"), "{:?}", x.fixes[0]);
}

/// Unfused attention scores in PyTorch 2.1's form (`torch.cuda.OutOfMemoryError`, "total capacty"), GPT-2 plan with
/// `transformer_impl` local: b·heads/TP·s² = 4·20/1·1,024² = 83,886,080 scores × 2 B = 167,772,160 B = 160.00 MiB, in
/// core attention's forward. The first fix is fused/flash attention, which saves no s² scores.
#[test]
fn unfused_attention_scores_in_the_2_1_form() {
    let plan = gpt2(json!({"transformer_impl": "local"}));
    let msg = "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 160.00 MiB. GPU 0 has a total capacty of 39.39 GiB of which 60.00 MiB is free. Process 4242 has 39.33 GiB memory in use. Of the allocated memory 38.10 GiB is allocated by PyTorch, and 700.00 MiB is reserved by PyTorch but unallocated.";
    let x = named_as(&plan, msg, (TensorKind::AttentionScores, 167_772_160, "forward (core attention)", 0));
    assert!(x.fixes[0].change.starts_with("fused/flash attention") && x.fixes[0].shrinks_culprit, "{:?}", x.fixes[0]);
}

/// A Mixtral-8x7B-shaped MoE (32 layers, h 4,096, 8 experts, top-2, FFN 14,336) on 8 MI300X, TP 2 with SP, EP 4,
/// alltoall dispatcher, micro-batch 1, seq 4,096, bf16, in ROCm's `HIP out of memory` wording. One dispatched copy of
/// the routed tokens (token_dispatcher.py: the permuted send buffer, the all-to-all's output and the expert-sorted copy
/// are each one allocation of T_r·h): the rank's local tokens b·s/SP = 4,096/2 = 2,048, routed to top-2 experts with
/// ETP 1 and an even routing (moe_routing_imbalance_factor 1): T_r = 2,048·2 = 4,096 tokens × 4,096 × 2 B = 33,554,432
/// B = 32.00 MiB. (The whole working set, three copies, is 96.00 MiB: no single request is that.)
#[test]
fn moe_dispatch_copy_in_the_hip_form() {
    let plan = json!({
        "model": {"name": "mixtral-like", "num_layers": 32, "hidden_size": 4096, "num_attention_heads": 32, "num_query_groups": 8,
                  "kv_channels": 128, "ffn_hidden_size": 14336, "moe_ffn_hidden_size": 14336, "num_moe_experts": 8, "moe_router_topk": 2,
                  "gated_linear_unit": true, "activation_func": "silu", "add_bias_linear": false, "normalization": "RMSNorm",
                  "position_embedding_type": "rope", "vocab_size": 32000},
        "cluster": {"gpu": "mi300x", "gpus_per_node": 8, "num_nodes": 1},
        "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 64, "precision": "bf16",
                     "moe_token_dispatcher_type": "alltoall", "use_distributed_optimizer": true},
        "parallelism": {"tensor_model_parallel_size": 2, "sequence_parallel": true, "expert_model_parallel_size": 4,
                        "expert_tensor_parallel_size": 1}
    });
    let msg = "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 32.00 MiB. GPU 2 has a total capacity of 191.98 GiB of which 20.00 MiB is free. Of the allocated memory 185.00 GiB is allocated by PyTorch, and 12.00 MiB is reserved by PyTorch but unallocated.";
    let x = named_as(&plan, msg, (TensorKind::MoeDispatch, 33_554_432, "forward / backward (token dispatch)", 0));
    assert_eq!((x.message.device.as_str(), x.rank), ("HIP", 2));
    // 40.00 MiB is no tensor of this plan. It is 10,240 vocabulary entries of the 16-bit logits (b·s/TP·2 B = 4,096 B
    // an entry, 10,240 = 40 × 256, a multiple of make_vocab_size_divisible_by 128 × TP 2), but the plan states its
    // vocabulary: nothing is named, and no correction is offered.
    let report = plan_value(&plan).unwrap();
    let y = explain(&plan, &report, &msg.replace("32.00 MiB", "40.00 MiB"), None).unwrap();
    assert!(y.named.culprit.is_none() && y.named.implied.is_none() && y.corrections.is_empty(), "{:?}", y.named);
    assert_eq!(y.named.nearest.len(), 3);
}

/// A Llama-3-8B-shaped model (the LoRA test's) under Megatron-FSDP (`use_megatron_fsdp`, optim_grads_params) on 8
/// H100s, bf16, with `[rank6]:` prefixes — PyTorch ≥ 2.4's wording. One unit, a transformer layer, all-gathered:
/// linear_qkv 4,096·(4,096 + 2·8·128) = 25,165,824, linear_proj 4,096² = 16,777,216, linear_fc1 4,096·2·14,336 =
/// 117,440,512, linear_fc2 14,336·4,096 = 58,720,256, the two RMSNorm weights 2·4,096 = 8,192: 218,112,000
/// parameters × 2 B = 436,224,000 B = 416.02 MiB (32 layers of it and the 128,256 × 4,096 embedding and output layer are
/// 8.03B, Llama 3 8B's count). Its unsharded fp32 grads before the reduce-scatter: × 4 B = 872,448,000 B = 832.03 MiB.
#[test]
fn a_layers_all_gathered_parameters_under_megatron_fsdp() {
    let plan = llama_8b(8, json!({"seq_length": 8192, "global_batch_size": 64, "use_megatron_fsdp": true, "data_parallel_sharding_strategy": "optim_grads_params"}));
    let msg = current(Some(6), 6, "416.02 MiB", 79.11, 0.30, 77.50, 0.10);
    let x = named_as(&plan, &msg, (TensorKind::ParamAllGather, 436_224_000, "forward / backward (unit all-gather)", 0));
    assert_eq!((x.rank, x.rank_source.as_str()), (6, "the message's [rank] prefix"));
    let msg = current(Some(6), 6, "832.03 MiB", 79.11, 0.30, 77.50, 0.10);
    named_as(&plan, &msg, (TensorKind::GradBucket, 872_448_000, "backward", 0));
}

/// LoRA adapters (Bridge's LoRA(dim=16) on the four default targets of the Llama-3-8B shape, one device, no
/// overlap_grad_reduce), in torch_npu's wording: the adapters' main-grad buffer, one allocation of every trained
/// parameter (param_and_grad_buffer.py: torch.zeros of the buffer; the frozen base has none) — 35,651,584 adapters
/// (1,114,112 a layer, worked in `lora_trains_the_adapters_only`) × 4 B = 142,606,336 B = 136.00 MiB. Their fp32
/// master weights are as large but one allocation per adapter: the buffer is named.
#[test]
fn lora_adapters_grad_buffer_in_the_npu_form() {
    let plan = llama_8b(1, json!({"seq_length": 4096, "global_batch_size": 8, "peft": "lora", "lora_dim": 16}));
    let msg = "RuntimeError: NPU out of memory. Tried to allocate 136.00 MiB (NPU 0; 60.97 GiB total capacity; 60.20 GiB already allocated; 60.20 GiB current active; 90.00 MiB free; 60.50 GiB reserved in total by PyTorch)";
    let x = named_as(&plan, msg, (TensorKind::GradBucket, 142_606_336, "backward", 0));
    assert_eq!(x.message.device, "NPU");
}

/// CUDA-graph buffers, `torch.cuda.OutOfMemoryError` (PyTorch 2.0–2.3's name) without a rank prefix: the GPT-2 plan
/// with `cuda_graph_impl` local on the whole layer keeps each layer's static input (a graph writes its output into the
/// next one's input), b·s·h = 4·1,024·1,280 × 2 B = 10,485,760 B a layer (worked in `each_culprit_class_is_named`)
/// × 36 layers × 1 microbatch in flight = 377,487,360 B = 360.00 MiB, at capture in the first iteration. Turning the
/// graphs off frees them.
#[test]
fn cuda_graph_buffers_at_capture() {
    let plan = gpt2(json!({"cuda_graph_impl": "local"}));
    let msg = "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 360.00 MiB. GPU 0 has a total capacity of 39.39 GiB of which 300.00 MiB is free. Of the allocated memory 37.90 GiB is allocated by PyTorch, and 200.00 MiB is reserved by PyTorch but unallocated.";
    let x = named_as(&plan, msg, (TensorKind::CudaGraphs, 377_487_360, "first iteration", 0));
    assert!(x.fixes.iter().any(|f| f.change.starts_with("cuda_graph_impl local → none") && f.shrinks_culprit));
}

/// The 16-bit logits (or their gradient) on the README plan's last stage, `[rank53]:` (worked in
/// `each_failing_rank_gets_its_explanation`: 8,192 · 129,024/8 · 2 B = 264,241,152 B = 252.00 MiB), stage 3.
#[test]
fn logits_on_the_last_stage() {
    let msg = current(Some(53), 5, "252.00 MiB", 79.11, 0.10, 70.00, 0.05);
    let x = named_as(&example(), &msg, (TensorKind::Logits, 264_241_152, "forward (output layer)", 3));
    assert_eq!(x.rank, 53);
}

/// Megatron-LM #60 (2.29 GiB requested in DDP's `_flatten_dense_tensors` over the fp16 grads, as the thread's
/// traceback shows: one copy of the whole gradient buffer) on the Megatron-LM paper's 2.5B GPT-2 (h 1,920, 54 layers,
/// 20 heads, seq 1,024, fp16, TP 2; the thread says "2.6B, mp=2"; micro-batch 8 assumed). A TP rank's parameters, by
/// hand: a layer's qkv and fc1 weights and biases and proj/fc2 weights split over TP, 12h²/2 + (3h + 4h)/2, plus the
/// replicated proj and fc2 biases and two LayerNorms, h + h + 4h: 6h² + 9.5h = 22,136,640 × 54 = 1,195,378,560; the
/// embedding padded to a multiple of 128·2, 50,432 × 1,920 / 2 = 48,414,720; position embeddings 1,024 × 1,920 =
/// 1,966,080; the final LayerNorm 3,840: 1,245,763,200 × 2 B = 2,491,526,400 B = 2.32 GiB, the request 1.3% under it.
#[test]
fn megatron_lm_issue_60_is_the_gradient_buffer() {
    let plan = json!({
        "model": {"name": "gpt2-2.5b-like", "num_layers": 54, "hidden_size": 1920, "num_attention_heads": 20, "ffn_hidden_size": 7680,
                  "vocab_size": 50257, "make_vocab_size_divisible_by": 128, "position_embedding_type": "learned_absolute",
                  "max_position_embeddings": 1024, "normalization": "LayerNorm", "gated_linear_unit": false, "activation_func": "gelu"},
        "cluster": {"gpu": "v100-sxm2-32gb", "gpus_per_node": 8, "num_nodes": 2},
        "training": {"seq_length": 1024, "micro_batch_size": 8, "global_batch_size": 512, "precision": "fp16"},
        "parallelism": {"tensor_model_parallel_size": 2}
    });
    let x = named_as(&plan, &fixture("megatron_lm_issue60.txt"), (TensorKind::GradBucket, 2_491_526_400, "backward", 0));
    assert_eq!(x.message.form, "legacy");
}

/// Optimizer state at the first step, `[rank4]:` in PyTorch ≥ 2.4's form: the Llama-3-8B shape on 8 H100s (DP 8) with
/// the distributed optimizer and TE's precision-aware FusedAdam keeping both moments in bf16. The state is allocated one
/// tensor per parameter shard (optimizer/__init__.py init_state_fn: zeros_like each main shard), the largest the word
/// embedding's: 128,256 × 4,096 = 525,336,576 elements / DP 8 = 65,667,072 × 2 B = 131,334,144 B = 125.25 MiB.
#[test]
fn optimizer_state_is_one_parameters_shard() {
    let plan = llama_8b(8, json!({"seq_length": 4096, "global_batch_size": 64, "use_distributed_optimizer": true,
                                   "use_precision_aware_optimizer": true, "exp_avg_dtype": "bf16", "exp_avg_sq_dtype": "bf16"}));
    let msg = current(Some(4), 4, "125.25 MiB", 79.11, 0.05, 77.90, 0.02);
    named_as(&plan, &msg, (TensorKind::OptimizerState, 131_334_144, "first optimizer step", 0));
}

/// Master weights at the optimizer's set-up, PyTorch before 1.5 ("… cached)"): the same model on 8 GPUs without the
/// distributed optimizer, each rank cloning every parameter to fp32 (distrib_optimizer.py's Float16 sibling: one
/// tensor per parameter), the largest the word embedding, 525,336,576 × 4 B = 2,101,346,304 B = 1.96 GiB (as large as
/// one fp32 Adam moment of it; the master copy comes first, at set-up). The distributed optimizer shards it by 8. At seq
/// 2,048: b·s·V·4 B (the fp32 logits) is V·h·4 B at s = h = 4,096, and the 16-bit logits are at s = 8,192 — one size,
/// which no matcher can tell apart.
#[test]
fn master_weights_are_one_parameters_copy() {
    let plan = llama_8b(8, json!({"seq_length": 2048, "global_batch_size": 64}));
    let msg = "RuntimeError: CUDA out of memory. Tried to allocate 1.96 GiB (GPU 1; 79.11 GiB total capacity; 76.50 GiB already allocated; 1.20 GiB free; 77.00 GiB cached)";
    let x = named_as(&plan, msg, (TensorKind::MasterWeights, 2_101_346_304, "first iteration", 0));
    assert!(x.fixes.iter().any(|f| f.change.starts_with("use_distributed_optimizer") && f.shrinks_culprit), "{:?}", x.fixes);
}

/// "RuntimeError: CUDA error: out of memory" (PyTorch's C10_CUDA_CHECK on a CUDA runtime call that is not the caching
/// allocator's; Transformer Engine's NVTE_CHECK_CUDA spells it "CUDA Error: out of memory") carries no size. It was
/// refused as "no CUDA out-of-memory message found". Now it is read, with a note on where such calls come from; on the
/// README plan (which fits) the verdict is a failure outside the allocator, and on a plan that cannot fit — Llama 3 8B
/// (8.03 B parameters) on one H100 without the distributed optimizer: bf16 weights 2 B + fp32 gradients 4 B + fp32
/// master weights and two Adam moments 12 B = 18 B per parameter ≈ 134.6 GiB before any activation, over 80 GiB —
/// the verdict is that the plan does not fit, the failed call only being where it ran out. Messages written here.
#[test]
fn a_cuda_runtime_out_of_memory_without_sizes() {
    let log = "[rank1]: Traceback (most recent call last):\n[rank1]: RuntimeError: CUDA error: out of memory\n[rank1]: CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\n";
    let all = parse_messages(log).unwrap();
    assert_eq!(all.iter().map(|m| (m.form.as_str(), m.rank, m.requested_bytes)).collect::<Vec<_>>(), vec![("cuda-runtime", Some(1), 0)]);
    let plan = example();
    let report = plan_value(&plan).unwrap();
    let xs = explain_all(&plan, &report, log, None).unwrap();
    assert_eq!(xs.iter().map(|x| x.cause).collect::<Vec<_>>(), vec![Cause::OutsideAllocator]);

    let te = "RuntimeError: /opt/TransformerEngine/transformer_engine/common/util/cuda_runtime.cpp:42 in function foo: CUDA Error: out of memory";
    let small = llama_8b(1, json!({"global_batch_size": 8, "seq_length": 4096}));
    let report = plan_value(&small).unwrap();
    let xs = explain_all(&small, &report, te, None).unwrap();
    assert_eq!(xs.len(), 1);
    assert_eq!(xs[0].cause, Cause::DoesNotFit, "{}", xs[0].cause_text);
    assert!(xs[0].cause_text.contains("does not fit"), "{}", xs[0].cause_text);
}

/// The traceback before a message says where the allocation ran, and a size alone can name a tensor of another phase.
/// On the README plan, rank 53 (stage 3, with the output layer), a 252.00 MiB request is one microbatch's 16-bit logits
/// by size (8,192 tokens × 129,024 / 8 × 2 B = 264,241,152 B: `each_failing_rank_gets_its_explanation`). Printed
/// after a traceback whose innermost Megatron frame is the distributed optimizer's step, the request is named among the
/// optimizer's tensors instead, with a note; after one in the cross entropy, it stays the logits. The frame is read
/// from the rank's own lines only (another rank's frames interleaved). Logs written here.
#[test]
fn the_traceback_places_the_allocation() {
    let frame = |rank: u64, file: &str, line: u64, func: &str| format!("[rank{rank}]:   File \"/opt/megatron-lm/{file}\", line {line}, in {func}\n");
    let msg = current(Some(53), 5, "252.00 MiB", 79.11, 0.10, 70.00, 0.05);
    let plan = example();
    let report = plan_value(&plan).unwrap();
    let at_optimizer = format!(
        "[rank53]: Traceback (most recent call last):\n{}{}{}{msg}\n",
        frame(53, "megatron/training/training.py", 1200, "train_step"),
        frame(53, "megatron/core/optimizer/distrib_optimizer.py", 2100, "step_with_ready_grads"),
        frame(12, "megatron/core/transformer/moe/experts.py", 250, "forward"),
    );
    let xs = explain_all(&plan, &report, &at_optimizer, None).unwrap();
    let loc = xs[0].message.location.as_ref().unwrap();
    assert_eq!((loc.file.ends_with("optimizer/distrib_optimizer.py"), loc.line), (true, 2100));
    let kinds = [TensorKind::OptimizerState, TensorKind::MasterWeights, TensorKind::GradCopies];
    let named = &xs[0].named;
    assert!(named.culprit.iter().chain(&named.nearest).all(|c| kinds.contains(&c.kind)), "{named:?}");
    assert!(xs[0].notes.iter().any(|n| n.contains("traceback places it in the optimizer")), "{:?}", xs[0].notes);

    let at_loss = format!("{}{msg}\n", frame(53, "megatron/core/tensor_parallel/cross_entropy.py", 40, "forward"));
    let xs = explain_all(&plan, &report, &at_loss, None).unwrap();
    let c = xs[0].named.culprit.as_ref().unwrap();
    assert_eq!((c.kind, c.predicted_bytes), (TensorKind::Logits, 264_241_152));
    assert!(xs[0].notes.iter().all(|n| !n.contains("traceback")));
}

/// A log with no out-of-memory but the run's memory reports is compared, not refused: Megatron-LM's `[Rank 0] (after N
/// iterations) memory (MB) | allocated: … | max allocated: … | reserved: … | max reserved: …` (MiB;
/// megatron/training/utils/common_utils.py report_memory) and Megatron Bridge's `memory (GB) | … | peak_allocated_mem:
/// … | peak_reserved_mem: … | alloc_retries: …` (10⁹ bytes; training/utils/train_utils.py report_memory). The latest
/// report of a rank is the one read; an out-of-memory in the same log is the subject instead. By hand: 62,345.60 MiB
/// = 62,345 × 1,048,576 + 0.6 × 1,048,576 = 65,373,470,720 + 629,145.6 → 65,374,099,866 B; 45.678 GB = 45,678,000,000 B. Logs written here.
#[test]
fn memory_reports_are_compared_when_nothing_ran_out() {
    let mlm = "[Rank 0] (after 10 iterations) memory (MB) | allocated: 31012.25 | max allocated: 52345.60 | reserved: 56000.00 | max reserved: 58000.00\n\
               [Rank 0] (after 20 iterations) memory (MB) | allocated: 31012.25 | max allocated: 62345.60 | reserved: 64000.00 | max reserved: 66000.00\n";
    let all = parse_messages(mlm).unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!((all[0].form.as_str(), all[0].rank, all[0].allocated_bytes, all[0].requested_bytes), ("memory-report", Some(0), Some(65_374_099_866), 0));
    assert_eq!(all[0].reserved_bytes, Some(66_000 * 1_048_576));
    let plan = example();
    let report = plan_value(&plan).unwrap();
    let x = &explain_all(&plan, &report, mlm, None).unwrap()[0];
    assert_eq!(x.cause, Cause::MemoryReport);
    assert!(x.fixes.is_empty() && x.cause_text.starts_with("no out-of-memory"), "{}", x.cause_text);

    let bridge = "[Rank 48] (after 2 iterations) memory (GB) | current_allocated_mem: 30.1 | peak_allocated_mem: 45.678 | peak_reserved_mem: 50.5 | alloc_retries: 3\n";
    let all = parse_messages(bridge).unwrap();
    assert_eq!((all[0].rank, all[0].allocated_bytes, all[0].reserved_bytes), (Some(48), Some(45_678_000_000), Some(50_500_000_000)));
    assert!(all[0].note.as_deref().is_some_and(|n| n.contains("retried 3 times")));

    let both = format!("{mlm}{}\n", current(Some(0), 0, "2.00 GiB", 79.11, 1.02, 74.21, 1.80));
    assert_eq!(parse_messages(&both).unwrap()[0].form, "current");
}

/// A set-up failure, written here after the Megatron-LM OOM threads whose tracebacks stop in
/// `setup_model_and_optimizer` (NVIDIA/Megatron-LM issue #606: a Llama 2 7B shape, TP 1, on A100 40GB; MoFHeka/LLaMA-
/// Megatron issue #1: the frame `get_megatron_optimizer`). The plan: 32 layers, hidden 4096, FFN 11,008, 32 heads,
/// 32,000-token vocabulary, untied, bf16, Megatron-LM's plain optimizer (fp32 grads: validate_args turns
/// accumulate_allreduce_grads_in_fp32 on for bf16). By hand: 32 × (4·4096² + 3·4096·11,008 + 2·4096) + 2 × 32,000·4096
/// + 4096 = 6,738,415,616 parameters; weights 2 B each = 12.55 GiB, the fp32 main-gradient buffer 25.10 GiB: 37.65 GiB
/// built when the optimizer starts its fp32 copies — the message's 37.61 GiB allocated. The next allocation, the fp32
/// master weights (25.10 GiB), is the one that fails. Without the traceback the 1.00 GiB request is no tensor of the plan;
/// it is 131.07 × a 64-token micro-batch's fp32 logits (64 × 32,000 × 4 B), a coincidence, not a micro-batch of 131.
#[test]
fn a_set_up_failure_is_read_against_what_the_set_up_allocates() {
    use meshplan_core::oom::SETUP_PHASE;
    let plan = serde_json::json!({
        "model": {"num_layers": 32, "hidden_size": 4096, "ffn_hidden_size": 11008, "num_attention_heads": 32, "num_query_groups": 32,
                  "vocab_size": 32000, "gated_linear_unit": true, "activation_func": "silu", "add_bias_linear": false,
                  "normalization": "RMSNorm", "position_embedding_type": "rope", "share_embeddings_and_output_weights": false},
        "cluster": {"gpu": "a100-sxm-40gb", "gpus_per_node": 8, "num_nodes": 1},
        "training": {"seq_length": 64, "micro_batch_size": 1, "global_batch_size": 8, "precision": "bf16", "grad_reduce_in_fp32": true,
                     "use_distributed_optimizer": false},
        "parallelism": {"tensor_model_parallel_size": 1},
        "defaults": "megatron-core"
    });
    let report = plan_value(&plan).unwrap();
    assert_eq!(report.derived.total_parameters, 6_738_415_616);
    let frames = "[rank3]:   File \"/w/megatron/megatron/training/training.py\", line 290, in pretrain\n\
        [rank3]:   File \"/w/megatron/megatron/training/training.py\", line 2800, in setup_model_and_optimizer\n\
        [rank3]:   File \"/w/megatron/megatron/core/optimizer/__init__.py\", line 610, in get_megatron_optimizer\n\
        [rank3]:   File \"/w/megatron/megatron/core/optimizer/optimizer.py\", line 730, in __init__\n";
    let message = current(Some(3), 3, "1.00 GiB", 39.39, 0.60, 37.61, 0.02);
    let x = explain(&plan, &report, &format!("{frames}{message}"), None).unwrap();
    assert_eq!(x.phase.as_deref(), Some(SETUP_PHASE));
    assert!(x.named.implied.is_none() && x.corrections.is_empty());
    let note = x.notes.iter().find(|n| n.starts_with("the traceback places the failure at core/optimizer/optimizer.py:730 in __init__, the set-up")).expect("set-up note");
    assert!(note.contains("37.61 GiB allocated is the weights and the main-gradient buffer (predicted 37.65 GiB"), "{note}");
    assert!(note.contains("the next to allocate, the fp32 master weights (25.10 GiB), did not fit"), "{note}");
    assert_eq!(x.cause, Cause::DoesNotFit, "{}", x.cause_text);
    // The frame of the set-up alone (a traceback cut above the optimizer) says the same.
    let cut = frames.lines().take(2).collect::<Vec<_>>().join("\n");
    let x = explain(&plan, &report, &format!("{cut}\n{message}"), None).unwrap();
    assert_eq!(x.phase.as_deref(), Some(SETUP_PHASE));
    // No traceback: the request names nothing, and implies no micro-batch of 131.
    let x = explain(&plan, &report, &message, None).unwrap();
    assert!(x.named.implied.is_none(), "{:?}", x.named.implied);
    assert!(x.named.culprit.is_none());
    assert_ne!(x.phase.as_deref(), Some(SETUP_PHASE));
}

/// A GPU shared with other processes, in PyTorch's current form, which lists every process NVML sees on the device
/// (pytorch/pytorch PR #99699: "Process N has X memory in use", then "Including non-PyTorch memory, this process has Y").
/// The plan (the README's Llama 3.1 70B, TP 8 · PP 4 on 64 H100) predicts about 45 GiB allocated for rank 0's stage, a
/// peak that fits 79.11 GiB; the message's 2.00 GiB request had 0.30 GiB free and 0.50 GiB cached, 1.20 GiB short, while
/// the run itself holds what the plan predicts (46.00 GiB allocated) and another process holds 25.00 GiB: the cause is the
/// other process — not an overrun. A run holding far more than the plan (75 GiB) is its own overrun, the other processes
/// said beside it. Seven other processes of 528 MiB each (other ranks' CUDA contexts on GPU 0) beside a run near the
/// device (the same plan at seq 16,384: about 69 GiB allocated predicted, 72 held) are named as such. Written here.
#[test]
fn another_process_on_the_gpu_is_the_cause() {
    let (plan, report) = readme();
    let msg = |others: &str, mine: f64, allocated: f64| {
        format!(
            "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.11 GiB of which 0.30 GiB is free. {others}Including non-PyTorch memory, this process has {mine:.2} GiB memory in use. Of the allocated memory {allocated:.2} GiB is allocated by PyTorch, and 0.50 GiB is reserved by PyTorch but unallocated."
        )
    };
    let x = explain(&plan, &report, &msg("Process 81234 has 25.00 GiB memory in use. ", 47.50, 46.00), None).unwrap();
    assert_eq!(x.message.other_process_bytes, vec![25 << 30]);
    assert!(close(x.message.process_bytes, 47.5 * GIB));
    assert_eq!(x.cause, Cause::SharedDevice, "{}", x.cause_text);
    assert!(x.cause_text.contains("1 other process holds 25.00 GiB on this GPU"), "{}", x.cause_text);
    assert!(x.cause_text.contains("a process left from an earlier run"), "{}", x.cause_text);
    // In a container NVML lists the failing process by its id too, with no "this process": the one just above PyTorch's
    // reserved figure (46.50 GiB) is it — 47.50 GiB — and the other holds 25.00 GiB.
    let listed = msg("Process 81234 has 25.00 GiB memory in use. Process 7 has 47.50 GiB memory in use. ", 0.0, 46.00)
        .replace("Including non-PyTorch memory, this process has 0.00 GiB memory in use. ", "");
    let x = explain(&plan, &report, &listed, None).unwrap();
    assert_eq!(x.message.other_process_bytes, vec![25 << 30]);
    assert!(close(x.message.process_bytes, 47.5 * GIB));
    assert_eq!(x.cause, Cause::SharedDevice, "{}", x.cause_text);
    // The run holding 75 GiB where the plan predicts about 45: its own overrun, the others beside it.
    let x = explain(&plan, &report, &msg("Process 81234 has 1.50 GiB memory in use. ", 77.00, 75.00), None).unwrap();
    assert_eq!(x.cause, Cause::Overrun, "{}", x.cause_text);
    assert!(x.cause_text.ends_with("besides, 1 other process holds 1.50 GiB on this GPU (1.50 GiB)"), "{}", x.cause_text);
    // Other ranks' CUDA contexts beside a run near the device.
    let mut near = plan.clone();
    near["training"]["seq_length"] = serde_json::json!(16384);
    let near_report = plan_value(&near).unwrap();
    let contexts = "Process 11 has 528.00 MiB memory in use. ".repeat(7);
    let x = explain(&near, &near_report, &msg(&contexts, 74.00, 72.00), None).unwrap();
    assert_eq!(x.message.other_process_bytes.len(), 7);
    assert_eq!(x.cause, Cause::SharedDevice, "{}", x.cause_text);
    assert!(x.cause_text.contains("each about one CUDA context"), "{}", x.cause_text);
    // Without other processes the same numbers are the run's own.
    let x = explain(&plan, &report, &msg("", 47.50, 46.00), None).unwrap();
    assert!(x.message.other_process_bytes.is_empty());
    assert_ne!(x.cause, Cause::SharedDevice);
}

/// The host's out-of-memory, which users paste as "OOM" too: torchrun reporting a rank ended by SIGKILL ("failed
/// (exitcode: -9) local_rank: 0", torch/distributed/elastic/multiprocessing/api.py), the kernel's "Out of memory: Killed
/// process", Kubernetes' OOMKilled. It was "no CUDA out-of-memory message found"; now the verdict is the host's memory,
/// with the plan's host memory per node (the README plan keeps nothing there) beside the node's, and what meshplan does
/// not size there: this model's checkpoint, 70.55B parameters × 2 B = 131.4 GiB in bf16 (× 14 B = 919.8 GiB with the
/// fp32 optimizer state). No fixes: the plan's GPU memory is not the cause. Written here.
#[test]
fn the_hosts_out_of_memory_is_said() {
    let (plan, report) = readme();
    let torchrun = "E1207 12:00:02.000000 140 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: -9) local_rank: 3 (pid: 1234) of binary: /usr/bin/python3\n";
    let x = explain(&plan, &report, torchrun, None).unwrap();
    assert_eq!((x.message.form.as_str(), x.cause, x.rank), ("host", Cause::HostMemory, 3));
    assert!(x.cause_text.contains("SIGKILL") && x.cause_text.contains("meshplan predicts nothing of host memory per node"), "{}", x.cause_text);
    let params = report.derived.total_parameters as f64;
    assert!((params / 1e9 - 70.55).abs() < 0.01, "{params}");
    assert!(x.cause_text.contains(&format!("this model is {:.2} GiB of bf16 weights", params * 2.0 / GIB)), "{}", x.cause_text);
    assert!(x.fixes.is_empty());
    for text in ["[12345.678] Out of memory: Killed process 4242 (python3) total-vm:900000000kB", "Last State: Terminated\n  Reason: OOMKilled\n"] {
        let x = explain(&plan, &report, text, None).unwrap();
        assert_eq!(x.cause, Cause::HostMemory, "{text}");
    }
    // A GPU out-of-memory in the same log is the one explained.
    let both = format!("{torchrun}{}", current(Some(0), 0, "2.00 GiB", 79.11, 1.02, 74.21, 1.80));
    assert_ne!(explain(&plan, &report, &both, None).unwrap().cause, Cause::HostMemory);
}

/// Before the first optimizer step the Adam moments do not exist: Megatron-Core's optimizer creates no state at set-up
/// (optimizer/__init__.py init_state_fn runs only to load a checkpoint) and Adam fills it in its first `step()`. Llama 3
/// 8B's shape with tied embeddings (8,030,261,248 − 128,256 × 4,096 = 7,504,924,672 parameters) on 8 H100s, DP 8, without
/// the distributed optimizer, by hand: bf16 weights 2 B, the fp32 main-gradient buffer 4 B and the fp32 master weights
/// 4 B a parameter = 75,049,246,720 B = 69.90 GiB before the first step; the two fp32 moments add 8 B = 55.92 GiB,
/// 125.81 GiB from then on. A run that holds 76.10 GiB (+8.9%) is in
/// its first iteration; a log that printed an iteration first is past it; a failure in Transformer Engine's FusedAdam
/// is the first step creating the moments. Logs written here (the construct of threads where "the first iteration runs
/// out of memory").
#[test]
fn the_first_iteration_holds_no_adam_moments() {
    let plan = llama_8b(8, json!({"seq_length": 4096, "global_batch_size": 64, "use_distributed_optimizer": false}));
    let report = plan_value(&plan).unwrap();
    let frame = |file: &str, func: &str| format!("[rank0]:   File \"{file}\", line 100, in {func}\n");
    let msg = current(Some(0), 0, "448.00 MiB", 79.11, 0.20, 76.10, 0.50);
    let forward = format!("{}{msg}\n", frame("/opt/megatron-lm/megatron/core/transformer/mlp.py", "forward"));
    let xs = explain_all(&plan, &report, &forward, None).unwrap();
    assert_eq!(xs[0].phase.as_deref(), Some(meshplan_core::oom::FIRST_ITERATION_PHASE));
    let note = xs[0].notes.iter().find(|n| n.contains("first iteration")).expect("a first-iteration note");
    assert!(note.contains("69.90 GiB") && note.contains("55.92 GiB") && note.contains("125.81 GiB"), "{note}");
    assert!(!note.contains("use_distributed_optimizer"), "the plan states it: {note}");
    assert_eq!(xs[0].cause, Cause::DoesNotFit, "{}", xs[0].cause_text);

    // A logged iteration: the moments exist, whatever the figures.
    let later = format!(" [2026-01-01 10:00:00] iteration        1/     100 | consumed samples: 64 |\n{forward}");
    let xs = explain_all(&plan, &report, &later, None).unwrap();
    assert_eq!(xs[0].message.iterations_logged, Some(1));
    assert!(xs[0].notes.iter().all(|n| !n.contains("first iteration")), "{:?}", xs[0].notes);

    // In the fused Adam's step: the first step creating them.
    let adam = format!("{}{msg}\n", frame("/usr/local/lib/python3.12/dist-packages/transformer_engine/pytorch/optimizers/fused_adam.py", "step"));
    let xs = explain_all(&plan, &report, &adam, None).unwrap();
    assert_eq!(xs[0].phase.as_deref(), Some(meshplan_core::oom::FIRST_STEP_PHASE));

    // Left unstated, the same shortfall may be a sharded optimizer: said.
    let mut open = plan.clone();
    open["training"].as_object_mut().unwrap().remove("use_distributed_optimizer");
    let r = plan_value(&open).unwrap();
    let xs = explain_all(&open, &r, &forward, None).unwrap();
    assert!(xs[0].notes.iter().any(|n| n.contains("first iteration") && n.contains("use_distributed_optimizer = false assumed")), "{:?}", xs[0].notes);

    // With the distributed optimizer the moments are 1 B a parameter of 7.5 (13%, under the memory model's 15% band): too
    // little to tell the two apart, no reading (at 44 GiB, between the state without them and with them).
    let sharded = llama_8b(8, json!({"seq_length": 4096, "global_batch_size": 64, "use_distributed_optimizer": true}));
    let r = plan_value(&sharded).unwrap();
    let msg = current(Some(0), 0, "448.00 MiB", 79.11, 0.20, 44.00, 0.50);
    let xs = explain_all(&sharded, &r, &format!("{}{msg}\n", frame("/opt/megatron-lm/megatron/core/transformer/mlp.py", "forward")), None).unwrap();
    assert!(xs[0].notes.iter().all(|n| !n.contains("first iteration")), "{:?}", xs[0].notes);
}

/// A plan read from a log (or the script beside it) that names no GPU takes the one whose memory the message's device
/// capacity is: PyTorch reports an A100 40GB as 39.39 GiB (the catalogue's 40: 0.985 of it), which no other catalogue GPU
/// has; 47.50 GiB is both the A40's and the L40S's 48 (0.990), so the default stays and both are named; 79.11 GiB is the
/// default H100's 80 (0.989): nothing to say; 12.00 GiB is no catalogue GPU's.
#[test]
fn a_logs_device_capacity_names_its_gpu() {
    let msg = |cap: f64| current(Some(0), 0, "1.00 GiB", cap, 0.10, cap - 2.0, 0.10);
    let (key, note) = meshplan_core::oom::gpu_of_log(&msg(39.39), "h100-sxm-80gb").unwrap();
    assert_eq!(key, "a100-sxm-40gb");
    assert!(note.contains("39.39 GiB") && note.contains("by memory alone"), "{note}");
    let (key, note) = meshplan_core::oom::gpu_of_log(&msg(47.50), "h100-sxm-80gb").unwrap();
    assert_eq!(key, "h100-sxm-80gb");
    assert!(note.contains("a40") && note.contains("l40s"), "{note}");
    assert_eq!(meshplan_core::oom::gpu_of_log(&msg(79.11), "h100-sxm-80gb"), None);
    let (key, note) = meshplan_core::oom::gpu_of_log(&msg(12.0), "h100-sxm-80gb").unwrap();
    assert_eq!(key, "h100-sxm-80gb");
    assert!(note.contains("no GPU in meshplan's catalogue"), "{note}");
    // No capacity (a message without sizes): nothing.
    assert_eq!(meshplan_core::oom::gpu_of_log("RuntimeError: CUDA error: out of memory", "h100-sxm-80gb"), None);
}

/// A message without a `[rankN]` prefix, and torchrun's failure summary at the end of the log (torch's elastic
/// `ChildFailedError`: `rank      : 24 (local_rank: 0)` under each failure): the process that failed on the message's
/// GPU is the global rank explained. On the README plan (TP 8, DP 2, PP 4: 16 ranks a stage) rank 24 is stage 1, rank
/// 25 too; before, GPU 0 was read as rank 0 of node 0 (stage 0). Two failures are told apart by the message's
/// `[defaultN]` prefix only; two nodes' summaries that both list local rank 0 leave it to the GPU index, as before. Logs written here in torchrun's format.
#[test]
fn torchruns_failure_summary_gives_the_global_rank() {
    let (plan, report) = readme();
    let msg = |gpu: u64| current(None, gpu, "10.00 GiB", 79.11, 1.00, 67.00, 1.00);
    let failure = |rank: u64, local: u64| format!("[0]:\n  time      : 2026-12-07_10:00:00\n  host      : node-3\n  rank      : {rank} (local_rank: {local})\n  exitcode  : 1 (pid: 4242)\n  error_file: <N/A>\n");
    let log = format!("{}\ntorch.distributed.elastic.multiprocessing.errors.ChildFailedError:\nRoot Cause (first observed failure):\n{}", msg(0), failure(24, 0));
    let xs = explain_all(&plan, &report, &log, None).unwrap();
    assert_eq!((xs[0].rank, xs[0].pipeline_stage), (24, 1));
    assert!(xs[0].rank_source.contains("failure summary"), "{}", xs[0].rank_source);
    // Two failures: the message's own `[defaultN]` prefix says which; without it, its GPU index cannot (a launcher
    // that gives each process its own GPU prints GPU 0 in all).
    let two = format!("[default1]:{}\nFailures:\n{}Root Cause (first observed failure):\n{}", msg(1), failure(25, 1), failure(24, 0));
    assert_eq!(explain_all(&plan, &report, &two, None).unwrap()[0].rank, 25);
    let unprefixed = format!("{}\nFailures:\n{}Root Cause (first observed failure):\n{}", msg(1), failure(25, 1), failure(24, 0));
    assert!(explain_all(&plan, &report, &unprefixed, None).unwrap()[0].rank_source.contains("GPU index"));
    let nodes = format!("{}\n{}{}", msg(0), failure(8, 0), failure(24, 0));
    let xs = explain_all(&plan, &report, &nodes, None).unwrap();
    assert_eq!(xs[0].rank, 0);
    assert!(xs[0].rank_source.contains("GPU index"), "{}", xs[0].rank_source);
}

/// Outer frames say when the allocation ran; the innermost one names the tensors. Written here after three threads:
/// ms-swift #9191 (the traceback runs through `get_model` into Transformer Engine's grouped_linear.py `__init__`, the
/// experts' weights being built: explained before as "a Transformer Engine linear layer's forward or backward", no
/// phase), Megatron-LM #380 (`setup_model_and_optimizer` → checkpointing.py `load_checkpoint` → torch's
/// `Optimizer.load_state_dict`: before, "the optimizer", no phase, layout fixes) and ms-swift #5966 (a CUDA error in
/// `checkpoint_and_decide_exit` → `save_checkpoint` → the distributed optimizer's `sharded_state_dict`: before, the
/// save unsaid and layout changes that only made the step faster offered as fixes).
#[test]
fn outer_frames_give_the_phase() {
    use meshplan_core::oom::{CHECKPOINT_LOAD_PHASE, CHECKPOINT_SAVE_PHASE, SETUP_PHASE};
    // A traceback of rank 3 through `frames` (file, line, function), then `tail`.
    let trace = |frames: &[(&str, u64, &str)], tail: &str| {
        let lines: String = frames.iter().map(|(file, line, func)| format!("[rank3]:   File \"{file}\", line {line}, in {func}\n")).collect();
        format!("{lines}{tail}\n")
    };
    let (plan, report) = readme();

    let build = trace(
        &[
            ("/opt/megatron-lm/megatron/training/training.py", 2400, "get_model"),
            ("/opt/megatron-lm/megatron/core/transformer/spec_utils.py", 120, "build_module"),
            ("/usr/lib/python3/site-packages/transformer_engine/pytorch/module/grouped_linear.py", 696, "__init__"),
        ],
        &current(Some(3), 3, "52.00 MiB", 79.11, 0.03, 1.50, 0.01),
    );
    let x = &explain_all(&plan, &report, &build, None).unwrap()[0];
    assert_eq!(x.phase.as_deref(), Some(SETUP_PHASE));
    let at = x.message.location.as_ref().unwrap();
    assert!(at.file.ends_with("grouped_linear.py") && at.what.starts_with("building the model"), "{at:?}");
    // 1.50 GiB allocated is less than the stage's weights: nothing after them is said to be "next".
    let note = x.notes.iter().find(|n| n.contains("traceback places the failure")).unwrap();
    assert!(note.contains("less than the weights alone") && !note.contains("next to allocate"), "{note}");

    // 1.45 GiB requested; 1.02 free + 0.80 reserved-unallocated hold it together, in no one block; 76.80 GiB allocated
    // is far more than the step's prediction: an overrun, in the load.
    let load = trace(
        &[
            ("/opt/megatron-lm/megatron/training/training.py", 2868, "setup_model_and_optimizer"),
            ("/opt/megatron-lm/megatron/training/checkpointing.py", 2600, "load_checkpoint"),
            ("/opt/conda/lib/python3.10/site-packages/torch/optim/optimizer.py", 379, "load_state_dict"),
        ],
        &current(Some(3), 3, "1.45 GiB", 79.11, 1.02, 76.80, 0.80),
    );
    let x = &explain_all(&plan, &report, &load, None).unwrap()[0];
    assert_eq!(x.phase.as_deref(), Some(format!("{CHECKPOINT_LOAD_PHASE} ({SETUP_PHASE})").as_str()));
    assert_eq!(x.cause, Cause::Overrun);
    assert!(x.cause_text.contains("in no one block") && !x.cause_text.contains("0.00 KiB"), "{}", x.cause_text);
    assert!(x.fixes.is_empty(), "{:?}", x.fixes);
    assert!(x.notes.iter().any(|n| n.contains("in loading a checkpoint") && n.contains("load_checkpoint")), "{:?}", x.notes);

    let save = trace(
        &[
            ("/opt/megatron-lm/megatron/training/training.py", 4100, "checkpoint_and_decide_exit"),
            ("/opt/megatron-lm/megatron/training/training.py", 3820, "save_checkpoint_and_time"),
            ("/opt/megatron-lm/megatron/training/checkpointing.py", 700, "save_checkpoint"),
            ("/opt/megatron-lm/megatron/core/optimizer/distrib_optimizer.py", 1100, "sharded_state_dict"),
        ],
        "[rank3]: RuntimeError: CUDA error: out of memory",
    );
    let x = &explain_all(&plan, &report, &save, None).unwrap()[0];
    assert_eq!((x.phase.as_deref(), x.cause), (Some(CHECKPOINT_SAVE_PHASE), Cause::OutsideAllocator));
    assert!(x.fixes.is_empty(), "{:?}", x.fixes);
    // The same failure in the training step's own code keeps its fixes (the plan fits: ranked against the device).
    let step = trace(&[("/opt/megatron-lm/megatron/core/transformer/moe/experts.py", 250, "forward")], "[rank3]: RuntimeError: CUDA error: out of memory");
    let x = &explain_all(&plan, &report, &step, None).unwrap()[0];
    assert!(x.phase.as_deref() != Some(CHECKPOINT_SAVE_PHASE) && x.message.context.is_empty());
}

/// One request larger than the device (Megatron-DeepSpeed PR #384's thread: 37,631.79 GiB asked in
/// `get_ltor_masks_and_position_ids` on a 79.21 GiB GPU, a data shape bug) is no layout's overrun: before, "a real
/// overrun" with ten layout fixes, each "still over". By hand, as one s×s matrix of 4-byte elements:
/// s = √(37,631.79 × 2³⁰ / 4) = 3,178,318.2; of 1-byte elements 6,356,636.4.
#[test]
fn a_request_larger_than_the_device_is_a_shape() {

    let (plan, report) = readme();
    let text = format!(
        "[rank3]:   File \"/mnt/Megatron-DeepSpeed/megatron/utils.py\", line 180, in get_ltor_masks_and_position_ids\n{}\n",
        current(Some(3), 3, "37631.79 GiB", 79.21, 28.00, 50.52, 1.80)
    );
    let x = &explain_all(&plan, &report, &text, None).unwrap()[0];
    assert_eq!(x.cause, Cause::OversizedRequest);
    assert!(x.fixes.is_empty() && x.corrections.is_empty(), "{:?} {:?}", x.fixes, x.corrections);
    assert!(x.cause_text.contains("s = 6,356,636 at 1 byte") && x.cause_text.contains("3,178,318 at 4"), "{}", x.cause_text);
    assert!(x.message.location.as_ref().is_some_and(|f| f.what.contains("attention mask")));

    // A request larger than the device that is a tensor of the plan is the plan's own: the README plan at micro-batch
    // 256 on its last stage (rank 53), the loss's fp32 logits. By hand: the vocabulary 128,256 padded to a multiple of
    // 128 · TP 8 = 129,024, 16,128 a TP rank; 256 · 8,192 · 16,128 · 4 B = 135,291,469,824 B = 126.00 GiB.
    let mut plan = plan;
    plan["training"]["micro_batch_size"] = serde_json::json!(256);
    let report = plan_value(&plan).unwrap();
    let text = format!(
        "[rank53]:   File \"/opt/megatron-lm/megatron/core/models/common/language_module/language_module.py\", line 90, in compute_language_model_loss\n{}\n",
        current(Some(53), 5, "126.00 GiB", 79.11, 10.00, 60.00, 1.00)
    );
    let x = &explain_all(&plan, &report, &text, None).unwrap()[0];
    assert_eq!(x.named.culprit.as_ref().map(|c| c.kind), Some(TensorKind::LogitsFp32));
    assert_eq!(x.cause, Cause::DoesNotFit, "{}", x.cause_text);
    assert!(!x.fixes.is_empty());
}

/// A log can hold an earlier traceback of an exception the run handled (a checkpoint load that failed and was
/// retried), then iterations, then the out-of-memory's own traceback: only the frames after the message's own
/// "Traceback (most recent call last):" are its. Before, the earlier load's frames made it "loading a checkpoint", with
/// no fixes. Log written here.
#[test]
fn an_earlier_traceback_is_not_the_messages() {
    let (plan, report) = readme();
    let f = |file: &str, line: u64, func: &str| format!("[rank3]:   File \"/opt/megatron-lm/megatron/{file}\", line {line}, in {func}\n");
    let text = format!(
        "[rank3]: Traceback (most recent call last):\n{}{}[rank3]: FileNotFoundError: latest_checkpointed_iteration.txt\n\
         [rank3]:  iteration        1/     100 | consumed samples: 512\n[rank3]:  iteration        2/     100 | consumed samples: 1024\n\
         [rank3]: Traceback (most recent call last):\n{}{}\n",
        f("training/training.py", 2868, "setup_model_and_optimizer"),
        f("training/checkpointing.py", 2600, "load_checkpoint"),
        f("core/transformer/transformer_layer.py", 700, "forward"),
        current(Some(3), 3, "2.00 GiB", 79.11, 0.10, 74.00, 0.05)
    );
    let x = &explain_all(&plan, &report, &text, None).unwrap()[0];
    assert!(x.message.context.is_empty(), "{:?}", x.message.context);
    assert!(x.phase.as_deref().is_none_or(|p| !p.contains("checkpoint")), "{:?}", x.phase);
    assert!(x.message.location.as_ref().is_some_and(|l| l.file.ends_with("transformer_layer.py")));
}

/// Float16Module's forward upcasts the last stage's output to fp32 (megatron/core/transformer/module.py
/// float16_to_fp32 → conversion_helper → float_conversion @ d98e8a64dd): the logits, which RL frameworks take without
/// labels (the traceback slime #1767, NeMo-RL #2859 and Megatron-Bridge #4402 print). Before, the catch-all
/// `megatron/core/transformer/` row called it a transformer layer and its kinds left the fp32 logits unnamed. On the
/// README plan's last stage (rank 53) at micro-batch 1, by hand: 1 · 8,192 · 16,128 (the padded vocabulary / TP 8) ·
/// 4 B = 528,482,304 B = 504.00 MiB. Frames written here in the threads' order.
#[test]
fn float16_module_s_upcast_is_the_fp32_logits() {
    let (plan, report) = readme();
    assert_eq!(plan["training"]["micro_batch_size"], 1);
    let f = |func: &str, line: u64| format!("[rank53]:   File \"/opt/megatron-lm/megatron/core/transformer/module.py\", line {line}, in {func}\n");
    let text = format!(
        "[rank53]: Traceback (most recent call last):\n{}{}{}{}{}\n",
        f("forward", 567),
        f("float16_to_fp32", 80),
        f("conversion_helper", 60),
        f("float_conversion", 373),
        current(Some(53), 5, "504.00 MiB", 79.11, 0.30, 70.00, 0.10)
    );
    let x = &explain_all(&plan, &report, &text, None).unwrap()[0];
    assert!(x.message.location.as_ref().is_some_and(|l| l.what.contains("Float16Module")), "{:?}", x.message.location);
    assert_eq!(x.named.culprit.as_ref().map(|c| c.kind), Some(TensorKind::LogitsFp32), "{:?}", x.named);
}

/// An overrun whose one request is larger than the plan's whole predicted step is a tensor of a shape the plan does
/// not have (slime #1951: 58.15 GiB of log-prob logits beside a 27.47 GiB prediction); ranking layouts against it made
/// every fix "still over" — 19.5 GiB on a 139.8 GiB GPU. Now no layout change, and a note that says why and what to
/// give. The README plan (its stage 0 predicted near 50 GiB, under the 79.11 GiB device) with a 75.00 GiB request.
#[test]
fn a_request_larger_than_the_whole_step_ranks_no_layout() {
    let (plan, report) = readme();
    let text = format!("{}\n", current(Some(3), 3, "75.00 GiB", 79.11, 4.00, 74.21, 0.50));
    let x = &explain_all(&plan, &report, &text, None).unwrap()[0];
    assert_eq!(x.cause, Cause::Overrun, "{}", x.cause_text);
    assert!(x.fixes.is_empty(), "{:?}", x.fixes);
    assert!(x.notes.iter().any(|n| n.contains("larger than the plan's whole predicted step")), "{:?}", x.notes);
    // A request the step holds keeps its ranked fixes (issue 13's 2.00 GiB on the same stage).
    let text = format!("{}\n", current(Some(3), 3, "20.00 GiB", 79.11, 4.00, 74.21, 0.50));
    let x = &explain_all(&plan, &report, &text, None).unwrap()[0];
    assert!(!x.notes.iter().any(|n| n.contains("larger than the plan's whole predicted step")), "{:?}", x.notes);
}

/// A request exactly one copy of the stage's weights is a second copy of them (a checkpoint load or conversion, a LoRA
/// merge, an export: ms-swift #9403's 26.44 GiB, a Qwen3-235B stage's local experts in bf16), named instead of
/// "no tensor of the plan". By hand on the README plan's stage 0 (Llama 3.1 70B, TP 8, PP 4: 20 layers and the
/// embedding): a layer's GEMMs 8192·(8192 + 2·1024 + 8192) + 3·8192·28672 = 855,638,016, its two norms 16,384 (not
/// sharded); the embedding 129,024 (128,256 padded to a multiple of 128 · TP 8) · 8192 = 1,056,964,608. Per GPU:
/// 20·855,638,016/8 + 20·16,384 + 1,056,964,608/8 = 2,271,543,296 parameters × 2 B = 4.23 GiB. (Without the
/// distributed optimizer: its fp32 master shard over DP 2 is that size too, and is named first.)
#[test]
fn a_request_of_the_stage_s_weights_is_a_second_copy() {
    let (mut plan, _) = readme();
    plan["training"]["use_distributed_optimizer"] = serde_json::json!(false);
    let report = plan_value(&plan).unwrap();
    let text = format!("{}\n", current(Some(3), 3, "4.23 GiB", 79.11, 2.00, 70.00, 0.50));
    let x = &explain_all(&plan, &report, &text, None).unwrap()[0];
    let c = x.named.culprit.as_ref().expect("named");
    assert_eq!(c.kind, TensorKind::StageWeights, "{c:?}");
    assert!(c.label.contains("second copy") && c.phase.contains("outside the training step"), "{c:?}");
}

/// A request larger than the stage's fp32 logits that names no tensor: the tokens one micro-batch would have held were
/// it their fp32 copy, said as a bound (slime #1951: 58.15 GiB, 205,280 tokens at V/TP 76,032 against a 9,216-token
/// budget). By hand on the README plan's last stage (rank 53; V/TP = 16,128, 64,512 B a token in fp32): 16.00 GiB =
/// 17,179,869,184 B / 64,512 = 266,305.02 → about 266,305 tokens, where the plan has 1 × 8,192.
#[test]
fn a_request_beyond_the_logits_bounds_the_tokens_of_a_micro_batch() {
    let (plan, report) = readme();
    let text = format!("{}\n", current(Some(53), 5, "16.00 GiB", 79.11, 2.00, 70.00, 0.50));
    let x = &explain_all(&plan, &report, &text, None).unwrap()[0];
    assert!(x.named.culprit.is_none(), "{:?}", x.named);
    assert!(x.notes.iter().any(|n| n.contains("about 266,305 tokens where the plan has 8,192")), "{:?}", x.notes);
    // A traceback in code that holds no logits (an optimizer step) says nothing of tokens.
    let text = format!("[rank53]:   File \"/opt/megatron-lm/megatron/core/optimizer/distrib_optimizer.py\", line 700, in step\n{}\n", current(Some(53), 5, "16.00 GiB", 79.11, 2.00, 70.00, 0.50));
    let x = &explain_all(&plan, &report, &text, None).unwrap()[0];
    assert!(!x.notes.iter().any(|n| n.contains("tokens where the plan has")), "{:?}", x.notes);
}
