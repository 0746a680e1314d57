//! Memory per stage against values worked out by hand (arithmetic in each comment) and Korthikanti et al. 2022.

mod common;
use common::{P, small_dense, small_moe};
use meshplan_core::memory::{Location, Phase, TermKey};
use meshplan_core::{Report, plan_value};
use proptest::prelude::*;
use serde_json::{Value, json};

fn report(v: &Value) -> Report {
    plan_value(v).expect("plannable")
}

/// A plan on H200 nodes with Megatron-Core's plain defaults: the memory below is worked by hand under them.
fn plan(model: Value, gpus: u64, training: Value, parallelism: Value) -> Value {
    json!({"model": model, "cluster": {"gpu": "h200-sxm-141gb", "gpus_per_node": 8, "num_nodes": gpus.div_ceil(8)},
           "training": training, "parallelism": parallelism, "defaults": "megatron-core"})
}

/// Llama-3.1-8B on 8 GPUs, TP 2 with SP, PP 1, seq 4096, mbs 1, no recompute.
fn llama8b(recompute: &str) -> Value {
    let mut training = json!({"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 32,
                              "recompute_granularity": recompute});
    if recompute == "full" {
        training["recompute_method"] = json!("uniform");
        training["recompute_num_layers"] = json!(1);
    }
    plan(json!("llama-3.1-8b"), 8, training, json!({"tensor_model_parallel_size": 2, "sequence_parallel": true}))
}

#[test]
fn dense_gqa_llama8b_by_hand() {
    // h 4096, 32 heads, 8 query groups, head dim 128, ffn 14336 (SwiGLU), 32 layers, vocab 128256
    // (already a multiple of 128·TP = 256). t = 4096 tokens, TP = SP = 2, bf16 (2 B).
    // Attention: norm input + QKV input 2·t·h/2 = 16,777,216; Q,K,V t·(32·128 + 2·8·128)/2 = 12,582,912;
    //   O t·4096/2 = 8,388,608 → 37,748,736 elements = 75,497,472 B; fp32 LSE t·32/2·4 = 262,144 B.
    // MLP: norm input + fc1 input 2·t·h/2·2 = 33,554,432 B; fc1 output 2·14336 and SwiGLU output 14336:
    //   t·43008/2·2 = 176,160,768 B. Layer: 75,759,616 + 33,554,432 + 176,160,768 = 285,474,816 B.
    // 32 layers: 9,135,194,112. Output: final norm in/out 2·t·h/2·2 = 33,554,432; logits bf16 + fp32 softmax
    //   t·128256/2·(2+4) = 1,576,009,728. Sum: 10,744,758,272 B; PP = 1 holds one microbatch.
    let r = report(&llama8b("none"));
    let s = &r.memory.stages[0];
    assert_eq!(s.activations_per_microbatch_bytes, 10_744_758_272);
    assert_eq!(s.microbatches_in_flight, 1.0);
    assert_eq!(s.activations_bytes, 10_744_758_272);
    // Parameters per GPU at TP 2: embedding and (untied) output layer 128256·4096/2 = 262,668,288 each; per layer QKV
    // 4096·(4096 + 2·1024)/2 = 12,582,912, proj 4096²/2 = 8,388,608, fc1 4096·2·14336/2 = 58,720,256, fc2
    // 14336·4096/2 = 29,360,128, two RMSNorms 2·4096 (whole on every rank) → 109,060,096; 32 layers 3,489,923,072;
    // final norm 4096 → 4,015,263,744. Without the distributed optimizer: bf16 weight 2 B, fp32 grad buffer 4 B
    // (bf16_mixed: grad_reduce_in_fp32), fp32 master 4 B + Adam moments 8 B = 18 B each = 72,274,747,392 B.
    assert_eq!(s.dense_parameters, 4_015_263_744);
    assert_eq!((s.parameters_bytes, s.gradients_bytes, s.optimizer_bytes), (8_030_527_488, 16_061_054_976, 48_183_164_928));
    // Forward/backward peak: state + activations = 72,274,747,392 + 10,744,758,272 = 83,019,505,664 B; the optimizer
    // step adds nothing (fp32 grads need no fp32 copy), so forward/backward bounds the stage and is the allocator peak.
    assert_eq!((s.forward_backward_bytes, s.optimizer_step_bytes), (83_019_505_664, 72_274_747_392));
    assert_eq!((s.allocated_bytes, s.bound_by), (83_019_505_664, Phase::ForwardBackward));
    // Outside the allocator: 1 GiB context, NCCL for TP and DP (DP 4) = 2 · 128 MiB; fragmentation 5.825% of the
    // allocated peak (the mean of 1.040, 1.076, 1.060, 1.057): 4,835,886,204 B.
    assert_eq!(s.overhead.cuda_context_bytes, 1 << 30);
    assert_eq!(s.overhead.nccl_bytes, 2 * (128 << 20));
    assert_eq!(s.overhead.allocator_bytes, 4_835_886_204);
    assert_eq!(s.reserved_bytes, 83_019_505_664 + 4_835_886_204);
    // Device peak: 83,019,505,664 + 4,835,886,204 + 1,073,741,824 + 268,435,456 = 89,197,569,148 B; memory.py's
    // allocated = total − context − NCCL − fragmentation gives back the allocator peak.
    assert_eq!(s.total_bytes, 89_197_569_148);
    assert_eq!(s.total_bytes - s.overhead.cuda_context_bytes - s.overhead.nccl_bytes - s.overhead.allocator_bytes, s.allocated_bytes);
    // The labelled device terms add up to the device peak in the bounding phase.
    let device: u64 = s.terms.iter().filter(|t| t.location == Location::Device && t.phase != Phase::OptimizerStep).map(|t| t.bytes).sum();
    assert!(device.abs_diff(s.total_bytes) <= s.terms.len() as u64, "{device} vs {}", s.total_bytes);
}

#[test]
fn recompute_full_keeps_layer_inputs_only() {
    // Full, uniform, 1 layer per group: each layer keeps its input t·h/SP·2 = 4096·4096/2·2 = 16,777,216 B;
    // 32 layers = 536,870,912, plus the output side 1,609,564,160 (as above) = 2,146,435,072 B.
    // Backward re-runs one layer at a time: the working set is one layer's full activations, 285,474,816 B.
    let full = report(&llama8b("full"));
    let s = &full.memory.stages[0];
    assert_eq!(s.activations_bytes, 2_146_435_072);
    assert_eq!(s.overhead.recompute_transient_bytes, 285_474_816);
    // Selective recompute of core_attn drops only flash attention's LSE: 32 · 262,144 B less than none.
    let selective = report(&llama8b("selective")).memory.stages[0].activations_bytes;
    let none = report(&llama8b("none")).memory.stages[0].activations_bytes;
    assert_eq!(none - selective, 32 * 262_144);
    assert!(full.memory.peak_bytes < report(&llama8b("selective")).memory.peak_bytes);
}

#[test]
fn block_recompute_counts_what_megatron_runs() {
    // recompute.py checkpointed_forward, block: layer i is checkpointed when i < recompute_num_layers.
    let block = |n: u64| {
        let mut v = llama8b("full");
        v["training"]["recompute_method"] = json!("block");
        v["training"]["recompute_num_layers"] = json!(n);
        report(&v).memory.stages[0].clone()
    };
    // 0: no layer checkpointed — the activations of no recompute, 10,744,758,272 B (worked out above), no working set.
    let s = block(0);
    assert_eq!(s.activations_bytes, 10_744_758_272);
    assert_eq!(s.overhead.recompute_transient_bytes, 0);
    // 40 > 32 layers: every layer checkpointed, as uniform with 1: 32 inputs + output side = 2,146,435,072 B, and
    // backward re-runs one layer at a time (285,474,816 B).
    let s = block(40);
    assert_eq!(s.activations_bytes, 2_146_435_072);
    assert_eq!(s.overhead.recompute_transient_bytes, 285_474_816);
}

#[test]
fn gpt_style_layer_matches_korthikanti() {
    // Korthikanti et al. 2022 eq. 2 (TP, no SP): s·b·h·(10 + 24/t + 5·a·s/(h·t)) bytes per layer. With flash
    // attention the 5as/h score terms are gone, and with dropout 0 the two 1-byte masks (2sbh) too:
    // s·b·h·(8 + 24/t). eq. 4 (TP + SP): s·b·h·34/t, minus masks: 32·s·b·h/t. Selective drops the LSE here.
    let model = json!({"num_layers": 4, "hidden_size": 1024, "ffn_hidden_size": 4096, "num_attention_heads": 16,
                       "num_query_groups": 16, "vocab_size": 32000, "gated_linear_unit": false,
                       "normalization": "LayerNorm", "add_bias_linear": true, "position_embedding_type": "rope"});
    let training = json!({"seq_length": 2048, "micro_batch_size": 2, "global_batch_size": 64, "recompute_granularity": "selective"});
    let sbh = 2048.0 * 2.0 * 1024.0;
    for (t, sp, expected) in [(1u64, false, 32.0 * sbh), (4, false, sbh * (8.0 + 24.0 / 4.0)), (4, true, 32.0 * sbh / 4.0)] {
        let v = plan(model.clone(), 8, training.clone(),
                     json!({"tensor_model_parallel_size": t, "pipeline_model_parallel_size": 2, "sequence_parallel": sp}));
        // Stage 0 holds layers 0 and 1 and no output layer.
        let got = report(&v).memory.stages[0].activations_per_microbatch_bytes as f64;
        assert_eq!(got, 2.0 * expected, "t={t} sp={sp}");
    }
}

#[test]
fn moe_layer_by_hand() {
    // 2 MoE layers, h 1024, 8 heads = 8 groups × 128, 8 experts top-2 of width 512 (SwiGLU), EP 4, TP 1, PP 2.
    // t = 2048 tokens, no recompute. Attention: 2·t·h = 4,194,304; QKV t·(1024 + 2·1024) = 6,291,456;
    //   O t·1024 = 2,097,152 → 12,582,912 el = 25,165,824 B; LSE t·8·4 = 65,536 B.
    // MLP norm in/out: 2·t·h·2 = 8,388,608 B. Router logits + probs fp32: 2·t·8·4 = 131,072 B.
    // Routed tokens t·2 = 4096: permuted input 1024 + fc1 out 1024 + act 512 = 2560 → 10,485,760 el = 20,971,520 B;
    //   the router probabilities are applied inside the activation (experts.py weighted_bias_swiglu_impl), so the
    //   expert output is not saved — only the routed tokens' fp32 probabilities, 4096·4 = 16,384 B.
    // Layer: 25,165,824 + 65,536 + 8,388,608 + 131,072 + 20,971,520 + 16,384 = 54,738,944 B.
    let model = json!({"num_layers": 2, "hidden_size": 1024, "ffn_hidden_size": 4096, "num_attention_heads": 8,
                       "num_query_groups": 8, "kv_channels": 128, "vocab_size": 32000, "gated_linear_unit": true,
                       "num_moe_experts": 8, "moe_router_topk": 2, "moe_ffn_hidden_size": 512});
    let v = plan(model, 8, json!({"seq_length": 2048, "micro_batch_size": 1, "global_batch_size": 16}),
                 json!({"pipeline_model_parallel_size": 2, "expert_model_parallel_size": 4, "expert_tensor_parallel_size": 1}));
    let r = report(&v);
    assert!(r.valid, "{:?}", r.diagnostics);
    let s = &r.memory.stages[0];
    assert_eq!(s.activations_per_microbatch_bytes, 54_738_944);
    // 1F1B, PP 2, 4 microbatches: stage 0 holds 2.
    assert_eq!(s.microbatches_in_flight, 2.0);
    assert_eq!(s.activations_bytes, 2 * 54_738_944);
}

#[test]
fn mtp_activations_follow_the_last_decoder_layer_kind() {
    // The MoE model above with moe_layer_freq [1, 0] (layer 1 dense, ffn 4096 SwiGLU) or [0, 1], one MTP module, PP 2:
    // stage 1 holds layer 1, the output side and the MTP module. t = 2048, TP 1, no recompute, bf16.
    // Dense layer: attention 25,165,824 + LSE 65,536; MLP norm in/out 8,388,608; fc1 out 2·4096 + act 4096 = 12288:
    //   t·12288·2 = 50,331,648 → 83,951,616 B. MoE layer 54,738,944 B (above).
    // Output side: final norm in/out 2·t·1024·2 = 8,388,608 + logits bf16 + fp32 softmax t·32000·6 = 393,216,000 →
    //   401,604,608 B. MTP module: its layer + its own output side.
    // Last layer dense: 401,604,608 + 83,951,616 + 401,604,608 = 887,160,832 B.
    // Last layer MoE:   401,604,608 + 54,738,944 + 401,604,608 = 857,948,160 B.
    let output = |freq: Value| {
        let model = json!({"num_layers": 2, "hidden_size": 1024, "ffn_hidden_size": 4096, "num_attention_heads": 8,
                           "num_query_groups": 8, "kv_channels": 128, "vocab_size": 32000, "gated_linear_unit": true,
                           "num_moe_experts": 8, "moe_router_topk": 2, "moe_ffn_hidden_size": 512, "moe_layer_freq": freq,
                           "mtp_num_layers": 1, "position_embedding_type": "rope"});
        let v = plan(model, 8, json!({"seq_length": 2048, "micro_batch_size": 1, "global_batch_size": 16}),
                     json!({"pipeline_model_parallel_size": 2, "expert_model_parallel_size": 4, "expert_tensor_parallel_size": 1}));
        report(&v).memory.stages[1].output_activations_bytes
    };
    assert_eq!(output(json!([1, 0])), 887_160_832);
    assert_eq!(output(json!([0, 1])), 857_948_160);
}

#[test]
fn context_parallel_halves_and_micro_batch_doubles_activations() {
    let base = llama8b("none");
    let a = report(&base).memory.stages[0].activations_per_microbatch_bytes;
    let mut cp = base.clone();
    cp["cluster"]["num_nodes"] = json!(2);
    cp["parallelism"]["context_parallel_size"] = json!(2);
    assert_eq!(report(&cp).memory.stages[0].activations_per_microbatch_bytes * 2, a);
    let mut mbs = base;
    mbs["training"]["micro_batch_size"] = json!(2);
    assert_eq!(report(&mbs).memory.stages[0].activations_per_microbatch_bytes, 2 * a);
}

#[test]
fn tied_embeddings_get_a_copy_on_the_last_stage_only_with_pipelining() {
    // 2 layers, h 512, vocab 32000 (already a multiple of 128 · TP 1); tied embeddings.
    let model = json!({"num_layers": 2, "hidden_size": 512, "ffn_hidden_size": 1024, "num_attention_heads": 8,
                       "vocab_size": 32000, "share_embeddings_and_output_weights": true, "position_embedding_type": "rope"});
    let training = json!({"seq_length": 1024, "micro_batch_size": 1, "global_batch_size": 8});
    let one = report(&plan(model.clone(), 8, training.clone(), json!({})));
    let two = report(&plan(model, 8, training, json!({"pipeline_model_parallel_size": 2})));
    // The final LayerNorm (weight + bias, 2·512 = 1,024) sits on the last stage.
    let (emb, final_norm) = (32000 * 512, 1024);
    let layer = (one.memory.stages[0].dense_parameters - emb - final_norm) / 2;
    // PP 1: one copy of the embedding; PP 2: the embedding on stage 0 and its tied copy on stage 1.
    assert_eq!(two.memory.stages[0].dense_parameters, emb + layer);
    assert_eq!(two.memory.stages[1].dense_parameters, emb + layer + final_norm);
}

#[test]
fn learned_position_embeddings_are_replicated_over_tp() {
    // 2 layers, h 1024, vocab 32000 (a multiple of 128·TP = 256), TP 2, PP 2: stage 0 holds layer 0 and the embedding.
    // Word embeddings split by vocabulary: 32000·1024/2 = 16,384,000 per rank. A learned position table of
    // max_position_embeddings = 2048 rows is a plain torch.nn.Embedding on every TP rank: 2048·1024 = 2,097,152
    // parameters per GPU (not 1,048,576). RoPE has no table; the layers are the same in both.
    let model = |pos: &str| json!({"num_layers": 2, "hidden_size": 1024, "ffn_hidden_size": 4096, "num_attention_heads": 16,
                                  "vocab_size": 32000, "max_position_embeddings": 2048, "position_embedding_type": pos,
                                  "share_embeddings_and_output_weights": false});
    let training = json!({"seq_length": 2048, "micro_batch_size": 1, "global_batch_size": 8});
    let par = json!({"tensor_model_parallel_size": 2, "pipeline_model_parallel_size": 2, "sequence_parallel": true});
    let learned = report(&plan(model("learned_absolute"), 8, training.clone(), par.clone()));
    let rope = report(&plan(model("rope"), 8, training, par.clone()));
    assert_eq!(learned.memory.stages[0].dense_parameters - rope.memory.stages[0].dense_parameters, 2_097_152);
    // The last stage has no input embedding without MTP.
    assert_eq!(learned.memory.stages[1].dense_parameters, rope.memory.stages[1].dense_parameters);
    // Without max_position_embeddings the table has seq_length rows (Megatron Bridge: max_sequence_length =
    // seq_length): seq 1024 → 1024·1024 = 1,048,576 per GPU.
    let mut short = plan(model("learned_absolute"), 8, json!({"seq_length": 1024, "micro_batch_size": 1, "global_batch_size": 8}), par);
    short["model"].as_object_mut().unwrap().remove("max_position_embeddings");
    assert_eq!(report(&short).memory.stages[0].dense_parameters - rope.memory.stages[0].dense_parameters, 1_048_576);
}

#[test]
fn last_stage_holds_the_final_norm_and_with_mtp_an_embedding_copy() {
    // 2 layers, h 64, 4 heads = 4 groups × 16, ffn 256 (not gated), no biases, LayerNorm (weight + bias = 2h),
    // vocab 1024 (a multiple of 128), RoPE, untied, TP 1.
    // Layer: QKV 64·(4+2·4)·16 = 12,288; proj 64·64 = 4,096; fc1 64·256 = 16,384; fc2 16,384; two norms 2·128 →
    //   49,408. Output layer 1024·64 = 65,536; final LayerNorm 128.
    // PP 2, last stage: 49,408 + 65,536 + 128 = 115,072.
    let model = |mtp: u64, tied: bool| json!({"num_layers": 2, "hidden_size": 64, "ffn_hidden_size": 256, "num_attention_heads": 4,
        "num_query_groups": 4, "kv_channels": 16, "vocab_size": 1024, "gated_linear_unit": false, "add_bias_linear": false,
        "normalization": "LayerNorm", "position_embedding_type": "rope", "share_embeddings_and_output_weights": tied,
        "mtp_num_layers": mtp});
    let training = json!({"seq_length": 1024, "micro_batch_size": 1, "global_batch_size": 8});
    let last = |mtp: u64, tied: bool, pp: u64| {
        let r = report(&plan(model(mtp, tied), 8, training.clone(), json!({"pipeline_model_parallel_size": pp})));
        r.memory.stages.last().unwrap().dense_parameters
    };
    assert_eq!(last(0, false, 2), 115_072);
    // One MTP module: enorm + hnorm 2·128, eh_proj 2h·h = 8,192, a layer like the last one 49,408, its final norm
    // 128 → 57,984; and, with PP > 1, the last stage's own word embeddings 65,536: 115,072 + 57,984 + 65,536 = 238,592.
    assert_eq!(last(1, false, 2), 238_592);
    // Tied weights: the last stage still allocates output_layer.weight (pre_process is false) besides the MTP
    // embedding, so the same 238,592.
    assert_eq!(last(1, true, 2), 238_592);
    // PP 1: one stage, one embedding (the MTP reuses it): 65,536 + 2·49,408 + 65,536 + 128 + 57,984 = 288,000.
    assert_eq!(last(1, false, 1), 288_000);
}

#[test]
fn bytes_per_parameter_follow_the_buffers_for_fp32_bf16_and_fp16() {
    // The 2-layer model above on one stage (PP 1, TP 1, 8 GPUs: DP 8): embedding 65,536 + 2 layers 98,816 + output
    // layer 65,536 + final norm 128 = 230,016 parameters per GPU.
    let model = json!({"num_layers": 2, "hidden_size": 64, "ffn_hidden_size": 256, "num_attention_heads": 4,
        "num_query_groups": 4, "kv_channels": 16, "vocab_size": 1024, "gated_linear_unit": false, "add_bias_linear": false,
        "normalization": "LayerNorm", "position_embedding_type": "rope", "share_embeddings_and_output_weights": false});
    let state = |precision: &str, distributed: bool| {
        let training = json!({"seq_length": 1024, "micro_batch_size": 1, "global_batch_size": 8,
                              "precision": precision, "use_distributed_optimizer": distributed});
        let s = report(&plan(model.clone(), 8, training, json!({}))).memory.stages[0].clone();
        (s.parameters_bytes, s.gradients_bytes, s.optimizer_bytes)
    };
    // fp32: 4 B weight, 4 B grad, 8 B Adam moments (no separate main weights) = 16 B: 920,064 / 920,064 / 1,840,128.
    assert_eq!(state("fp32", false), (920_064, 920_064, 1_840_128));
    // Distributed optimizer over DP 8 shards the moments: 8/8 = 1 B/param = 230,016 (Megatron's 8 + 8/d).
    assert_eq!(state("fp32", true), (920_064, 920_064, 230_016));
    // bf16 for comparison: 2 + 4 + 12 = 18 B (460,032 / 920,064 / 2,760,192), distributed 12/8 = 1.5 B → 345,024.
    assert_eq!(state("bf16", false), (460_032, 920_064, 2_760_192));
    assert_eq!(state("bf16", true), (460_032, 920_064, 345_024));
    // fp16: 2 B weight, 2 B grad (fp16_mixed: grad_reduce_in_fp32 false), 4 B master + 8 B moments = 12 B held
    // (460,032 / 460,032 / 2,760,192); distributed, 12/8 = 1.5 B → 345,024. Megatron's table counts 20 B: the fifth
    // 4 B is the fp32 main grad, which main_grad.float() makes at the optimizer step (distrib_optimizer.py
    // _copy_model_grads_to_main_grads) — a step term: 230,016 · 4 = 920,064 B, 4/8 B distributed = 115,008.
    assert_eq!(state("fp16", false), (460_032, 460_032, 2_760_192));
    assert_eq!(state("fp16", true), (460_032, 460_032, 345_024));
    let step_copy = |distributed: bool| {
        let training = json!({"seq_length": 1024, "micro_batch_size": 1, "global_batch_size": 8,
                              "precision": "fp16", "use_distributed_optimizer": distributed});
        let s = report(&plan(model.clone(), 8, training, json!({}))).memory.stages[0].clone();
        s.terms.iter().find(|t| t.key == TermKey::Fp32GradCopies).map(|t| (t.bytes, t.phase))
    };
    assert_eq!(step_copy(false), Some((920_064, Phase::OptimizerStep)));
    assert_eq!(step_copy(true), Some((115_008, Phase::OptimizerStep)));
}

#[test]
fn one_f_one_b_and_interleaved_microbatches_in_flight() {
    // Llama-3.1-70B, TP 8, PP 4, 256 microbatches. 1F1B: stage p holds PP − p (Narayanan 2021 §2.2.1).
    // Interleaved, VPP 5: stage 0 holds PP + (PP − 1)/VPP = 4.6 (Korthikanti 2022 §4.2.3).
    let mut v = plan(json!("llama-3.1-70b"), 64,
                     json!({"seq_length": 8192, "micro_batch_size": 1, "global_batch_size": 512, "recompute_granularity": "selective"}),
                     json!({"tensor_model_parallel_size": 8, "pipeline_model_parallel_size": 4, "sequence_parallel": true}));
    let r = report(&v);
    let flight: Vec<f64> = r.memory.stages.iter().map(|s| s.microbatches_in_flight).collect();
    assert_eq!(flight, [4.0, 3.0, 2.0, 1.0]);
    v["parallelism"]["virtual_pipeline_model_parallel_size"] = json!(5);
    let r = report(&v);
    assert!((r.memory.stages[0].microbatches_in_flight - 4.6).abs() < 1e-9);
}

#[test]
fn last_stage_output_activations_live_for_one_microbatch() {
    // Llama-3.1-70B: h 8192, 64 heads, 8 query groups × 128, ffn 28672 (SwiGLU), 80 layers, vocab 128256 padded to a
    // multiple of 128·TP = 1024: 129024. TP 8 with SP, PP 4 (20 layers per stage), seq 8192, mbs 1, selective.
    // One layer: norm in + QKV in 2·t·h/8 = 16,777,216 el; Q t·64·128/8 = 8,388,608, K+V one group per rank
    //   t·(128+128) = 2,097,152; O t·64·128/8 = 8,388,608 → 35,651,584 el = 71,303,168 B (selective: no LSE);
    //   MLP norm in/out 2·t·h/8·2 = 33,554,432 B; fc1 out 2·28672 + act 28672 = 86016: t·86016/8·2 = 176,160,768 B.
    //   Layer 281,018,368 B; 20 layers 5,620,367,360 B.
    // Output side: final norm in/out 2·t·h/8·2 = 33,554,432; bf16 logits + fp32 softmax t·129024/8·(2+4) =
    //   792,723,456 → 826,277,888 B.
    let mut v = plan(json!("llama-3.1-70b"), 64,
                     json!({"seq_length": 8192, "micro_batch_size": 1, "global_batch_size": 512, "recompute_granularity": "selective"}),
                     json!({"tensor_model_parallel_size": 8, "pipeline_model_parallel_size": 4, "sequence_parallel": true}));
    // 1F1B: the last stage has no warm-up, one microbatch in flight: 5,620,367,360 + 826,277,888 = 6,446,645,248.
    let s = &report(&v).memory.stages[3];
    assert_eq!(s.output_activations_bytes, 826_277_888);
    assert_eq!(s.activations_bytes, 6_446_645_248);
    // Interleaved, VPP 5 (4 layers per chunk): the last stage holds (0 + 4·4 + 1)/5 = 3.4 stage-microbatches of its
    // layers, but the output side only for the one microbatch whose last chunk ran forward and now runs backward:
    // 5,620,367,360 · 3.4 + 826,277,888 = 19,109,249,024 + 826,277,888 = 19,935,526,912 B
    // (not (5,620,367,360 + 826,277,888) · 3.4 = 21,918,596,843).
    v["parallelism"]["virtual_pipeline_model_parallel_size"] = json!(5);
    let s = &report(&v).memory.stages[3];
    assert!((s.microbatches_in_flight - 3.4).abs() < 1e-9);
    assert_eq!(s.output_activations_bytes, 826_277_888);
    assert!(s.activations_bytes.abs_diff(19_935_526_912) <= 1, "{}", s.activations_bytes);
    // Stages without the output layer have none.
    assert_eq!(report(&v).memory.stages[0].output_activations_bytes, 0);
}

#[test]
fn interleaved_in_flight_honours_microbatch_group_size() {
    // Llama-3.1-70B, TP 8, PP 4, VPP 5, 256 microbatches, N = microbatch_group_size_per_vp_stage = 8 (≥ PP, and
    // 256 mod 8 = 0, so the schedule accepts it). Stage 0 warm-up (4−0−1)·2 + (5−1)·8 = 38 chunk forwards, +1 = 39
    // chunks of 1/5 stage = 7.8 stage-microbatches; stage 3: 0 + 32 + 1 = 33 chunks = 6.6. The default N = PP = 4
    // gives (6 + 16 + 1)/5 = 4.6 and (16 + 1)/5 = 3.4.
    let mut v = plan(json!("llama-3.1-70b"), 64,
                     json!({"seq_length": 8192, "micro_batch_size": 1, "global_batch_size": 512, "recompute_granularity": "selective"}),
                     json!({"tensor_model_parallel_size": 8, "pipeline_model_parallel_size": 4, "sequence_parallel": true,
                            "virtual_pipeline_model_parallel_size": 5}));
    let flight = |v: &Value| report(v).memory.stages.iter().map(|s| s.microbatches_in_flight).collect::<Vec<_>>();
    let default = flight(&v);
    assert!((default[0] - 4.6).abs() < 1e-9 && (default[3] - 3.4).abs() < 1e-9, "{default:?}");
    v["parallelism"]["microbatch_group_size_per_vp_stage"] = json!(8);
    let grouped = flight(&v);
    assert!((grouped[0] - 7.8).abs() < 1e-9 && (grouped[3] - 6.6).abs() < 1e-9, "{grouped:?}");
}

fn peak(model: &str, tp: u64, pp: u64) -> Option<u64> {
    let v = plan(json!(model), 64,
                 json!({"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 256,
                        "recompute_granularity": "selective", "use_distributed_optimizer": true}),
                 json!({"tensor_model_parallel_size": tp, "pipeline_model_parallel_size": pp, "sequence_parallel": tp > 1}));
    let r = plan_value(&v).ok()?;
    // Only layouts Megatron accepts, apart from memory itself.
    let blocking = r.diagnostics.iter().any(|d| d.severity == meshplan_core::Severity::Error && d.code != "out-of-memory" && d.code != "low-memory-headroom");
    (!blocking).then_some(r.memory.peak_bytes)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn memory_never_rises_when_tp_or_pp_doubles(
        model in prop::sample::select(vec!["llama-3.1-8b", "llama-3.1-70b", "qwen3-30b-a3b", "mixtral-8x7b"]),
        tp_e in 0u32..3, pp_e in 0u32..3,
    ) {
        let (tp, pp) = (1u64 << tp_e, 1u64 << pp_e);
        if let (Some(a), Some(b)) = (peak(model, tp, pp), peak(model, tp * 2, pp)) {
            prop_assert!(b <= a, "{model}: TP {tp}→{}: {a} → {b}", tp * 2);
        }
        if let (Some(a), Some(b)) = (peak(model, tp, pp), peak(model, tp, pp * 2)) {
            prop_assert!(b <= a, "{model}: PP {pp}→{}: {a} → {b}", pp * 2);
        }
    }
}

#[test]
fn report_json_round_trips() {
    // The report as JSON reads back into an equal report (the web app and the JS API ship it as JSON).
    for v in [llama8b("full"), plan(json!("deepseek-v3"), 256, json!({"seq_length": 4096, "global_batch_size": 256}),
                                   json!({"pipeline_model_parallel_size": 8, "expert_model_parallel_size": 32,
                                          "expert_tensor_parallel_size": 1}))] {
        let r = report(&v);
        let text = serde_json::to_string(&r).unwrap();
        let back: Report = serde_json::from_str(&text).unwrap();
        assert_eq!(back, r);
    }
}

#[test]
fn kv_heads_are_not_split_below_one_per_rank() {
    // Llama-3.1-8B has 8 KV heads. From TP 8 to TP 16 (SP on) every saved tensor halves except K and V:
    // one KV head per rank at both sizes (attention.py, groups < TP). K+V per layer: t·(128 + 128)·2 B,
    // of which halving would have dropped half: A16 = A8/2 + 32 layers · t·256·2 B / 2 = A8/2 + t·256·32.
    let per_mb = |tp: u64| {
        let v = plan(json!("llama-3.1-8b"), 16, json!({"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 16}),
                     json!({"tensor_model_parallel_size": tp, "sequence_parallel": true}));
        report(&v).memory.stages[0].activations_per_microbatch_bytes
    };
    assert_eq!(per_mb(16), per_mb(8) / 2 + 4096 * 256 * 32);
}

#[test]
fn memory_alone_is_the_reports_memory() {
    // The page's sweep sizes variants with report::memory_value; it must say what the full report says, for valid
    // plans and for a split the rules reject (estimated over the nearest even split).
    let mut cases = vec![P { tp: 2, pp: 2, ..P::new(small_dense(), 8) }, P { tp: 2, ep: 8, ..P::new(small_moe(), 16) }];
    cases.push(P { pp: 3, ..P::new(small_dense(), 24) }); // 16 layers over 3 stages: uneven
    cases.push(P { pp: 2, vpp: Some(3), ..P::new(small_dense(), 8) }); // 8 layers per stage over 3 chunks: uneven
    for c in cases {
        let v = c.json();
        assert_eq!(meshplan_core::report::memory_value(&v).unwrap(), c.run().memory);
    }
    assert!(meshplan_core::report::memory_value(&serde_json::json!({"model": "no-such-model"})).is_err());
}

/// A 4-layer model small enough to count by hand, with one MTP layer and untied output: hidden 8, ffn 16 (SwiGLU), 2
/// heads in 2 groups of 4, vocabulary 32 (unpadded), RMSNorm, RoPE, no biases.
fn tiny_mtp() -> Value {
    json!({"num_layers": 4, "hidden_size": 8, "ffn_hidden_size": 16, "num_attention_heads": 2, "num_query_groups": 2,
           "kv_channels": 4, "vocab_size": 32, "make_vocab_size_divisible_by": 1, "gated_linear_unit": true,
           "add_bias_linear": false, "normalization": "RMSNorm", "position_embedding_type": "rope",
           "share_embeddings_and_output_weights": false, "mtp_num_layers": 1})
}

fn tiny_on_pp2(layout: Option<&str>) -> Report {
    let mut par = json!({"pipeline_model_parallel_size": 2, "overlap_p2p_comm": true});
    if let Some(l) = layout {
        par["pipeline_model_parallel_layout"] = json!(l);
    }
    // 8 GPUs (one node): DP 4, 8 / 4 = 2 microbatches, a multiple of PP for the interleaved schedule.
    report(&plan(tiny_mtp(), 8, json!({"seq_length": 16, "micro_batch_size": 1, "global_batch_size": 8}), par))
}

#[test]
fn modules_sit_where_the_layout_builds_them() {
    // A layer: QKV 8·(2 + 2·2)·4 = 192, output projection 2·4·8 = 64, SwiGLU fc1 8·2·16 = 256, fc2 16·8 = 128, two
    // norms 16 → 656. The MTP module: a layer + the 2h→h projection 2·8·8 = 128 + three norms 24 → 808. Embedding and
    // output layer 32·8 = 256 each; final norm 8.
    // Without a layout (PP 2): pp 0 = 2 layers + embedding = 1,568; pp 1 = 2 layers + output + final norm + MTP + the
    // MTP's own embedding copy = 1,312 + 256 + 8 + 808 + 256 = 2,640.
    let r = tiny_on_pp2(None);
    let dense: Vec<u64> = r.memory.stages.iter().map(|s| s.dense_parameters).collect();
    assert_eq!(dense, [1568, 2640]);
    assert_eq!(r.memory.stages[0].output_activations_bytes, 0);
    // Layout `Et|t|t|t|m|L` on PP 2 (VPP 3): pp 0 = [E t0] [t2] [m], pp 1 = [t1] [t3] [L]. The MTP chunk (pp 0, vpp 2) is
    // neither the first nor the last chunk: it builds its own embedding copy and output layer. pp 0 = 1,312 + 256 + 808 +
    // 256 + 256 = 2,888; pp 1 = 1,312 + output 256 + the final norm (with MTP it sits with the last decoder layer, t3)
    // 8 = 1,576.
    let r = tiny_on_pp2(Some("Et|t|t|t|m|L"));
    assert!(r.diagnostics.iter().all(|d| !d.is_error()), "{:?}", r.diagnostics);
    let dense: Vec<u64> = r.memory.stages.iter().map(|s| s.dense_parameters).collect();
    assert_eq!(dense, [2888, 1576]);
    assert_eq!(r.derived.layers_per_chunk, [vec![1, 1, 0], vec![1, 1, 0]]);
    let place = r.derived.pipeline_placement;
    assert_eq!((place.mtp.map(|c| (c.pipeline_rank, c.virtual_rank)), place.loss.pipeline_rank), (Some((0, 2)), 1));
    // The MTP's activations (a layer and its own logits) now sit on pp 0, the output's on pp 1.
    assert!(r.memory.stages.iter().all(|s| s.output_activations_bytes > 0));
}

#[test]
fn deepseek_v3_gb300_nvfp4_follows_its_layout() {
    // measured_memory.json row m26-020 (Megatron Bridge pull #3364, the DeepSeek-V3 256-GPU GB300 NVFP4 perf recipe):
    // `Et*4|(t*4|)*14tmL` on PP 2 × VPP 8. pp 0 builds t0–3, t8–11, …, t56–59 (32 layers) and the embedding; pp 1
    // t4–7, …, t52–55, t60 (29) and the MTP layer, the output layer and the MTP's embedding copy (research §2.7).
    let v = json!({"model": "deepseek-v3", "cluster": {"gpu": "gb300", "gpus_per_node": 4, "num_nodes": 64},
                   "training": {"seq_length": 4096, "micro_batch_size": 2, "global_batch_size": 4096, "precision": "fp4",
                                "use_distributed_optimizer": true, "recompute_granularity": "selective"},
                   "parallelism": {"tensor_model_parallel_size": 1, "pipeline_model_parallel_size": 2,
                                   "virtual_pipeline_model_parallel_size": 8, "expert_model_parallel_size": 32,
                                   "expert_tensor_parallel_size": 1, "sequence_parallel": false,
                                   "pipeline_model_parallel_layout": "Et*4|(t*4|)*14tmL"}});
    let r = report(&v);
    assert!(!r.diagnostics.iter().any(|d| d.code.as_str().starts_with("layout") || d.code == "layers-not-divisible-by-pp"), "{:?}", r.diagnostics);
    assert_eq!(r.derived.layers_per_stage, [32, 29]);
    assert_eq!(r.derived.layers_per_chunk, [vec![4; 8], [vec![4; 7], vec![1]].concat()]);
    let layers: Vec<u64> = r.memory.stages.iter().map(|s| s.num_layers).collect();
    assert_eq!(layers, [32, 29]);
    // DeepSeek-V3's first 3 layers are dense (moe_layer_freq), all on pp 0: its routed experts are 32 − 3 = 29 layers'
    // worth, pp 1's 29 + the MTP layer's (an MoE layer like the last decoder layer) = 30.
    let experts: Vec<u64> = r.memory.stages.iter().map(|s| s.expert_parameters).collect();
    assert_eq!(experts[0] / 29, experts[1] / 30);
    assert!(r.memory.stages[1].output_activations_bytes > 0 && r.memory.stages[0].output_activations_bytes == 0);
}
