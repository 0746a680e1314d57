//! The vision encoder as a block of its own: its parameters, where it sits in the pipeline, what freezing it leaves,
//! its activations and its FLOPs — each worked by hand on a small encoder.

use meshplan_core::plan_value;
use serde_json::{Value, json};

/// A two-layer ViT (h 64, f 256, 4 heads, biases, LayerNorm), patches of 3·14·14 = 588 inputs, 4 patches per token,
/// a merger 256 → 256 → 2048, and 1000 other parameters; beside a 16-layer 2048-wide language model.
///
/// By hand: per layer q/k/v/o 4·64² = 16,384, fc1 + fc2 2·64·256 = 32,768, column biases 3·64 + 256 = 448 → 49,600
/// split over TP; two LayerNorms 4·64 = 256 and the o / fc2 biases 128 → 384 replicated. Two layers 99,200 + 768;
/// patch embedding 588·64 = 37,632; extra 1000; projector 256·256 + 256·2048 = 589,824. Encoder 728,424.
const ENCODER: u64 = 728_424;

fn plan(training: Value, parallelism: Value) -> meshplan_core::Report {
    plan_with(training, parallelism, json!({}))
}

/// [`plan`] with `vision` merged into the encoder's vision_config.
fn plan_with(training: Value, parallelism: Value, vision: Value) -> meshplan_core::Report {
    let mut t = json!({"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 1024, "recompute_granularity": "selective",
                       "use_distributed_optimizer": true, "precision": "bf16"});
    t.as_object_mut().unwrap().extend(training.as_object().unwrap().clone());
    let mut par = json!({"tensor_model_parallel_size": 1, "pipeline_model_parallel_size": 1, "sequence_parallel": false});
    par.as_object_mut().unwrap().extend(parallelism.as_object().unwrap().clone());
    let model = json!({"num_layers": 16, "hidden_size": 2048, "ffn_hidden_size": 5632, "num_attention_heads": 16, "num_query_groups": 8,
        "kv_channels": 128, "vocab_size": 32000, "gated_linear_unit": true, "add_bias_linear": false,
        "vision_config": {"num_layers": 2, "hidden_size": 64, "ffn_hidden_size": 256, "num_attention_heads": 4, "patch_dim": 588,
                          "patches_per_token": 4, "projector": [[256, 256], [256, 2048]], "extra_parameters": 1000}});
    let mut model = model;
    model["vision_config"].as_object_mut().unwrap().extend(vision.as_object().unwrap().clone());
    // Megatron-Core's plain defaults: the terms are worked out at them.
    plan_value(&json!({"model": model, "defaults": "megatron-core", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 1},
                       "training": t, "parallelism": par}))
    .unwrap()
}

fn term(r: &meshplan_core::Report, stage: usize, key: &str) -> u64 {
    let st = &r.memory.stages[stage];
    st.terms.iter().filter(|t| serde_json::to_value(t.key).unwrap() == json!(key)).map(|t| t.bytes).sum()
}

#[test]
fn parameters_by_hand_in_the_total_not_the_active() {
    let r = plan(json!({"image_tokens_per_sample": 256}), json!({}));
    assert_eq!(r.derived.vision_encoder_parameters, ENCODER);
    assert_eq!(r.derived.total_parameters - r.derived.active_parameters, ENCODER);
}

#[test]
fn frozen_keeps_weights_only_trained_adds_grads_and_optimizer() {
    let frozen = plan(json!({"image_tokens_per_sample": 256, "freeze_vision_model": true, "freeze_vision_projection": true}), json!({}));
    let trained = plan(json!({"image_tokens_per_sample": 256}), json!({}));
    // bf16 weights: 2 B a parameter, its own term either way.
    assert_eq!(term(&frozen, 0, "vision_encoder_weights"), 2 * ENCODER);
    assert_eq!(term(&trained, 0, "vision_encoder_weights"), 2 * ENCODER);
    // Trained: an fp32 main grad (4 B, grad_reduce_in_fp32 under bf16) and, sharded over DP 8 by the distributed
    // optimizer, fp32 master weights and two Adam moments (12 B / 8 a parameter).
    let grads = trained.memory.stages[0].gradients_bytes - frozen.memory.stages[0].gradients_bytes;
    assert_eq!(grads, 4 * ENCODER);
    let optim = (trained.memory.stages[0].optimizer_bytes - frozen.memory.stages[0].optimizer_bytes) as f64;
    assert!((optim - 12.0 * ENCODER as f64 / 8.0).abs() <= 2.0, "{optim}");
    // Frozen: nothing saved for backward in the encoder or the projector.
    assert_eq!(term(&frozen, 0, "vision_encoder_activations"), 0);
}

#[test]
fn activations_by_hand_on_the_first_stage_only() {
    // 256 image tokens × 4 = 1024 patches per microbatch. Per layer and patch (16-bit, TP 1, no SP, no dropout, flash
    // attention): q, k, v, attention output 4·2·64 = 512, fc1 output and GELU output 2·2·256 = 1024, the inputs of
    // linear_qkv and fc1 and of the two norms 4·2·64 = 512 → 2048 B; × 2 layers × 1024 patches = 4,194,304. Projector
    // inputs: 256 tokens × 2 B × (256 + 256) = 262,144. Total 4,456,448 per microbatch.
    let r = plan(json!({"image_tokens_per_sample": 256}), json!({}));
    assert_eq!(term(&r, 0, "vision_encoder_activations"), 4_456_448);
    // PP 2 (the 1F1B schedule keeps 2 microbatches in flight on the first stage): the encoder's weights and activations
    // sit on stage 0, none on stage 1.
    let r = plan(json!({"image_tokens_per_sample": 256}), json!({"pipeline_model_parallel_size": 2}));
    assert_eq!(term(&r, 0, "vision_encoder_weights"), 2 * ENCODER);
    assert_eq!(term(&r, 0, "vision_encoder_activations"), 2 * 4_456_448);
    assert_eq!(term(&r, 1, "vision_encoder_weights") + term(&r, 1, "vision_encoder_activations"), 0);
    // Full recompute keeps each encoder layer's input only: 2·64 B per patch and layer → 2·1024·128 = 262,144, plus
    // the projector's 262,144.
    let r = plan(json!({"image_tokens_per_sample": 256, "recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 1}), json!({}));
    assert_eq!(term(&r, 0, "vision_encoder_activations"), 524_288);
}

#[test]
fn tp_splits_the_encoders_projections_and_the_row_parallel_projector_input_sequence_parallel_does_not_reach_it() {
    // TP 2 with sequence parallelism on the language model. The encoder's config is built with sequence_parallel False
    // (Megatron Bridge get_vision_model_config), so per layer and patch: the TP-split tensors (q, k, v, attention
    // output, fc1 and GELU outputs, linear_qkv / fc1 inputs … 2048 − 4·2·64 = 1536 B by activations_by_hand_on_the_first
    // _stage_only's count minus the four h-wide ones) halve, 768 B, and the four h-wide norm inputs and residuals stay
    // whole, 512 B → 1280 B × 2 layers × 1024 patches = 2,621,440. Projector: linear_fc1's input whole (256 tokens × 2 B
    // × 256 = 131,072), linear_fc2's (row-parallel, the column-parallel output) halved: 65,536. Total 2,818,048.
    let r = plan(json!({"image_tokens_per_sample": 256}), json!({"tensor_model_parallel_size": 2, "sequence_parallel": true}));
    assert_eq!(term(&r, 0, "vision_encoder_activations"), 2_818_048);
    // Context parallelism does not split the images (every CP rank encodes its samples' images): CP 2 leaves the term
    // as at CP 1.
    let one = plan(json!({"image_tokens_per_sample": 256, "seq_length": 4096}), json!({}));
    let two = plan(json!({"image_tokens_per_sample": 256, "seq_length": 4096}), json!({"context_parallel_size": 2}));
    assert_eq!(term(&two, 0, "vision_encoder_activations"), term(&one, 0, "vision_encoder_activations"));
}

#[test]
fn an_encoder_whole_on_every_tp_rank() {
    // tensor_model_parallel_size 1 in the vision_config (as the Gemma 4 import writes it: Megatron Bridge builds the
    // Hugging Face tower unsplit on each TP rank): at TP 2 each rank holds all 728,424 parameters (2 B each) and saves
    // what TP 1 saves, 4,456,448 B per microbatch (activations_by_hand_on_the_first_stage_only).
    let whole = plan_with(json!({"image_tokens_per_sample": 256}), json!({"tensor_model_parallel_size": 2}), json!({"tensor_model_parallel_size": 1}));
    assert_eq!(term(&whole, 0, "vision_encoder_weights"), 2 * ENCODER);
    assert_eq!(term(&whole, 0, "vision_encoder_activations"), 4_456_448);
    // The default splits over the language model's TP: layers' GEMMs 2·49,600 = 99,200 and the projector 589,824 halve,
    // the replicated 768 + 37,632 + 1000 stay: 344,512 + 39,400 = 383,912 parameters, 767,824 B.
    let split = plan(json!({"image_tokens_per_sample": 256}), json!({"tensor_model_parallel_size": 2}));
    assert_eq!(term(&split, 0, "vision_encoder_weights"), 767_824);
    // An encoder TP above the language model's is the language model's.
    let above = plan_with(json!({"image_tokens_per_sample": 256}), json!({"tensor_model_parallel_size": 2}), json!({"tensor_model_parallel_size": 8}));
    assert_eq!(term(&above, 0, "vision_encoder_weights"), 767_824);
}

#[test]
fn flops_by_hand_trained_and_frozen() {
    // Per global batch: 1024 sequences × 256 image tokens = 262,144 tokens, × 4 = 1,048,576 patches, one image of 1024
    // patches per sequence. Forward per patch: GEMMs 2·(588·64 + 2·49,152) = 271,872; attention 2 layers × 4·64·1024 =
    // 524,288. Per token: projector 2·589,824 = 1,179,648.
    let fwd_encoder = 1_048_576.0 * (271_872.0 + 524_288.0);
    let fwd_projector = 262_144.0 * 1_179_648.0;
    let r = plan(json!({"image_tokens_per_sample": 256}), json!({}));
    let split = meshplan_core::perf::flop_split(&r.plan, &r.derived);
    // Trained: forward and backward, ×3.
    assert_eq!(split.vision_encoder, 3.0 * (fwd_encoder + fwd_projector));
    // Frozen encoder and projector: forward only.
    let r = plan(json!({"image_tokens_per_sample": 256, "freeze_vision_model": true, "freeze_vision_projection": true}), json!({}));
    assert_eq!(meshplan_core::perf::flop_split(&r.plan, &r.derived).vision_encoder, fwd_encoder + fwd_projector);
    // Frozen encoder, trained projector: the projector's weight gradient too (×2), no input gradient.
    let r = plan(json!({"image_tokens_per_sample": 256, "freeze_vision_model": true}), json!({}));
    assert_eq!(meshplan_core::perf::flop_split(&r.plan, &r.derived).vision_encoder, fwd_encoder + 2.0 * fwd_projector);
    // Two images per sequence halve each image's patches and so the attention.
    let r = plan(json!({"image_tokens_per_sample": 256, "images_per_sample": 2}), json!({}));
    let two = meshplan_core::perf::flop_split(&r.plan, &r.derived).vision_encoder;
    assert_eq!(two, 3.0 * (1_048_576.0 * (271_872.0 + 262_144.0) + fwd_projector));
}

#[test]
fn exports_say_what_they_cannot_write() {
    use meshplan_core::{ExportKind, export};
    let r = plan(json!({"image_tokens_per_sample": 256, "freeze_vision_model": true}), json!({}));
    for kind in [ExportKind::Bridge, ExportKind::BridgeCli, ExportKind::MegatronLm] {
        let text = export(kind, &r.plan, &r);
        assert!(text.contains("the 2-layer vision encoder and its projector are not written"), "{kind:?}:\n{text}");
    }
    // The freeze switch is Bridge's model field; Megatron-LM says it has no flag.
    assert!(export(ExportKind::Bridge, &r.plan, &r).contains("cfg.model.freeze_vision_model = True"));
    assert!(export(ExportKind::MegatronLm, &r.plan, &r).contains("freeze_vision_model = True: Megatron-LM has no flag"));
}

#[test]
fn dsa_and_nope_fields_are_written_in_megatron_names() {
    use meshplan_core::{ExportKind, export};
    let model = json!({"num_layers": 4, "hidden_size": 1024, "ffn_hidden_size": 2048, "num_attention_heads": 16, "vocab_size": 32000,
        "gated_linear_unit": true, "add_bias_linear": false, "multi_latent_attention": true, "q_lora_rank": 512, "kv_lora_rank": 256,
        "qk_head_dim": 64, "qk_pos_emb_head_dim": 32, "v_head_dim": 64, "experimental_attention_variant": "dsa",
        "dsa_indexer_n_heads": 8, "dsa_indexer_head_dim": 64, "dsa_indexer_topk": 512, "no_rope_freq": 4});
    let r = plan_value(&json!({"model": model, "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 1},
                               "training": {"seq_length": 2048, "micro_batch_size": 1, "global_batch_size": 64}})).unwrap();
    // The indexer by hand: wq_b 512·8·64 = 262,144; wk 1024·64 = 65,536; k_norm 128; weights_proj 1024·8 = 8,192 →
    // 336,000 a layer, all duplicated over TP.
    assert_eq!(r.plan.model.dsa_indexer_params(), 336_000);
    let lm = export(ExportKind::MegatronLm, &r.plan, &r);
    for flag in ["--experimental-attention-variant dsa", "--dsa-indexer-n-heads 8", "--dsa-indexer-head-dim 64", "--dsa-indexer-topk 512", "--no-rope-freq 4"] {
        assert!(lm.lines().any(|l| l.trim() == flag), "{flag}:\n{lm}");
    }
}

#[test]
fn the_encoder_makes_the_first_pipeline_stage_the_slowest() {
    // BF16: every GEMM, the attention core and the logits at one rate, so compute time is proportional to FLOPs. The
    // encoder's FLOPs V = 3·(fwd_encoder + fwd_projector) by hand (flops_by_hand_trained_and_frozen); T the step's.
    let v = 3.0 * (1_048_576.0 * (271_872.0 + 524_288.0) + 262_144.0 * 1_179_648.0);
    let one = plan(json!({"image_tokens_per_sample": 256}), json!({}));
    let two = plan(json!({"image_tokens_per_sample": 256}), json!({"pipeline_model_parallel_size": 2}));
    let t = meshplan_core::perf::flop_split(&one.plan, &one.derived).total();
    // The output layer's logits run on the last stage: G = tokens·6·h·V = 1024·4096·6·2048·32,000 per step, 1.18 of a
    // layer (per token 6·2048·32,000 = 393,216,000 against 6·(2048·(2048 + 2·1024) + 2048·2048 + 3·2048·5632) +
    // 6·2048·4096 = 333,447,168). PP 2 splits the 16 layers 8 | 8: stage 1's 8 layers and the logits outweigh stage 0's
    // 8 layers and the small encoder, so the step follows stage 1: × 2·((T − V − G)/2 + G')/T'. Same 8
    // GPUs, so the even compute per GPU is the same at PP 1 and PP 2.
    // The output layer runs at the rate of its width V/TP = 32,000 against h/TP = 2048 (perf.rs: vocabulary-parallel),
    // so in FLOPs at the layers' rate it counts G' = G·w(2048)/w(32,000), w(x) = x/(x + w₀); the step's T' = T − G + G'.
    let g = 1024.0 * 4096.0 * 6.0 * 2048.0 * 32_000.0;
    let w0 = meshplan_core::perf::constants().gemm_width_half;
    let w = |x: f64| x / (x + w0);
    let g_rate = g * w(2048.0) / w(32_000.0);
    let t_rate = t - g + g_rate;
    let (p1, p2) = (one.performance.unwrap(), two.performance.unwrap());
    let ratio = p2.breakdown.compute_s / p1.breakdown.compute_s;
    let expect = 2.0 * ((t - v - g) / 2.0 + g_rate) / t_rate;
    assert!((ratio / expect - 1.0).abs() < 1e-9, "{ratio} vs {expect}");
    // One layer off the last stage (num_layers_in_last_pipeline_stage 7: 9 | 7): now the encoder's stage is the
    // slowest, 9 layers and the encoder: × 2·(9·(T − V − G)/16 + V)/T', its per-layer terms × 9/8.
    let moved = plan(json!({"image_tokens_per_sample": 256}), json!({"pipeline_model_parallel_size": 2, "num_layers_in_last_pipeline_stage": 7}));
    let pm = moved.performance.unwrap();
    let expect = 2.0 * (9.0 * (t - v - g) / 16.0 + v) / t_rate;
    let ratio = pm.breakdown.compute_s / p1.breakdown.compute_s;
    assert!((ratio / expect - 1.0).abs() < 1e-9, "{ratio} vs {expect}");
    // Without the encoder the same split gives 2·9·(T − V − G)/16/T': the encoder adds 2·V/T' (≈ 2.8e-4) to the slowest stage.
    assert!(ratio > 2.0 * 9.0 * (t - v - g) / 16.0 / t_rate + 1e-4);
    assert!((pm.breakdown.memory_bound_s / p1.breakdown.memory_bound_s - 9.0 / 8.0).abs() < 1e-9);
    // 8 | 8: the per-layer terms are an even half's.
    assert!((p2.breakdown.memory_bound_s / p1.breakdown.memory_bound_s - 1.0).abs() < 1e-9);
}
