//! Every row of the settings table reaches every export, in each tool's own names and spellings (worked out by hand
//! from the row's source: Bridge's config paths and override grammar, Megatron-LM's flags), and a recipe-shaped plan
//! line by line.

use meshplan_core::settings::SETTINGS;
use meshplan_core::{ExportKind, export, plan_value};
use serde_json::{Value, json};

/// The small dense model of the rules tests (16 layers, hidden 2048), or its MoE sibling (64 experts, top-4), on one
/// node of 8 H100, TP 2 with SP (so TP overlap is valid), distributed optimizer, bf16.
fn plan(moe: bool, training: Value) -> Value {
    let mut model = json!({"num_layers": 16, "hidden_size": 2048, "ffn_hidden_size": 5632, "num_attention_heads": 16,
                           "num_query_groups": 8, "kv_channels": 128, "vocab_size": 32000, "gated_linear_unit": true,
                           "add_bias_linear": false});
    if moe {
        model["num_moe_experts"] = json!(64);
        model["moe_router_topk"] = json!(4);
        model["moe_ffn_hidden_size"] = json!(512);
    }
    let mut t = json!({"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 256, "use_distributed_optimizer": true});
    for (k, v) in training.as_object().unwrap() {
        t[k] = v.clone();
    }
    // Megatron-Core's plain defaults: each case exports its own row, not what tuned defaults would add beside it.
    json!({"model": model, "defaults": "megatron-core", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 1}, "training": t,
           "parallelism": {"tensor_model_parallel_size": 2, "pipeline_model_parallel_size": 1, "sequence_parallel": true,
                           "expert_tensor_parallel_size": 1}})
}

/// One row's case: the training fields to set, whether the model is MoE, the Python line, the launch-command word (or
/// text of its note) and the Megatron-LM line (None: Megatron-LM's default, nothing written).
struct RowCase {
    key: &'static str,
    moe: bool,
    training: Value,
    python: &'static [&'static str],
    launch: &'static [&'static str],
    mlm: Option<&'static str>,
}

fn row(key: &'static str, training: Value, python: &'static [&'static str], launch: &'static [&'static str], mlm: Option<&'static str>) -> RowCase {
    RowCase { key, moe: false, training, python, launch, mlm }
}

fn moe_row(key: &'static str, training: Value, python: &'static [&'static str], launch: &'static [&'static str], mlm: Option<&'static str>) -> RowCase {
    RowCase { key, moe: true, training, python, launch, mlm }
}


fn cases() -> Vec<RowCase> {
    vec![
        row("recompute_granularity", json!({"recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 1}),
            &["cfg.model.recompute_granularity = \"full\""], &["model.recompute_granularity=full"], Some("--recompute-granularity full")),
        row("recompute_method", json!({"recompute_granularity": "full", "recompute_method": "block", "recompute_num_layers": 2}),
            &["cfg.model.recompute_method = \"block\""], &["model.recompute_method=block"], Some("--recompute-method block")),
        row("recompute_num_layers", json!({"recompute_granularity": "full", "recompute_method": "block", "recompute_num_layers": 2}),
            &["cfg.model.recompute_num_layers = 2"], &["model.recompute_num_layers=2"], Some("--recompute-num-layers 2")),
        row("use_distributed_optimizer", json!({"use_distributed_optimizer": true}),
            &["cfg.optimizer.use_distributed_optimizer = True", "cfg.ddp.use_distributed_optimizer = True"],
            &["optimizer.use_distributed_optimizer=True", "ddp.use_distributed_optimizer=True"], Some("--use-distributed-optimizer")),
        // H100 fp8: Bridge's current-scaling recipe; Megatron-LM's hybrid format.
        row("precision", json!({"precision": "fp8"}), &["cfg.mixed_precision = \"bf16_with_fp8_current_scaling_mixed\""],
            &["mixed_precision=bf16_with_fp8_current_scaling_mixed"], Some("--fp8-format hybrid")),
        row("optimizer", json!({"optimizer": "sgd"}), &["cfg.optimizer.optimizer = \"sgd\""], &["optimizer.optimizer=sgd"], Some("--optimizer sgd")),
        // bf16_mixed keeps fp32 grads; the bf16 buffer is a field of the recipe object (Python) and not reachable by an
        // override; Megatron-LM's --bf16 needs --grad-reduce-in-bf16.
        row("grad_reduce_in_fp32", json!({"grad_reduce_in_fp32": false}), &["cfg.mixed_precision.grad_reduce_in_fp32 = False"],
            &["bf16_mixed sets grad_reduce_in_fp32=True; the plan runs grad_reduce_in_fp32=False"], Some("--grad-reduce-in-bf16")),
        row("use_precision_aware_optimizer", json!({"use_precision_aware_optimizer": true}), &["cfg.optimizer.use_precision_aware_optimizer = True"],
            &["optimizer.use_precision_aware_optimizer=True"], Some("--use-precision-aware-optimizer")),
        // Bridge holds the dtypes as torch.dtype; its override parser reads the short names back (str_to_dtype).
        row("main_params_dtype", json!({"use_precision_aware_optimizer": true, "main_params_dtype": "fp16"}), &["cfg.optimizer.main_params_dtype = torch.float16"],
            &["optimizer.main_params_dtype=fp16"], Some("--main-params-dtype fp16")),
        row("main_grads_dtype", json!({"use_precision_aware_optimizer": true, "main_grads_dtype": "bf16"}), &["cfg.optimizer.main_grads_dtype = torch.bfloat16"],
            &["optimizer.main_grads_dtype=bf16"], Some("--main-grads-dtype bf16")),
        // fp8 moments are torch.uint8 (Megatron-LM's dtype_map); "fp8" in an override would become float8_e4m3fn.
        row("exp_avg_dtype", json!({"use_precision_aware_optimizer": true, "exp_avg_dtype": "fp8"}), &["cfg.optimizer.exp_avg_dtype = torch.uint8"],
            &["set cfg.optimizer.exp_avg_dtype = torch.uint8 in Python"], Some("--exp-avg-dtype fp8")),
        row("exp_avg_sq_dtype", json!({"use_precision_aware_optimizer": true, "exp_avg_sq_dtype": "fp16"}), &["cfg.optimizer.exp_avg_sq_dtype = torch.float16"],
            &["optimizer.exp_avg_sq_dtype=fp16"], Some("--exp-avg-sq-dtype fp16")),
        // No Megatron-LM flag: a note names the OptimizerConfig field.
        row("store_param_remainders", json!({"store_param_remainders": false}), &["cfg.optimizer.store_param_remainders = False"],
            &["optimizer.store_param_remainders=False"], Some("# store_param_remainders = False: Megatron-LM has no flag; set OptimizerConfig.store_param_remainders in code")),
        row("num_distributed_optimizer_instances", json!({"num_distributed_optimizer_instances": 2}), &["cfg.ddp.num_distributed_optimizer_instances = 2"],
            &["ddp.num_distributed_optimizer_instances=2"], Some("--num-distributed-optimizer-instances 2")),
        // The recipe picks Bridge's delayed-scaling recipe; delayed is Megatron-LM's default, so no flag.
        row("fp8_recipe", json!({"precision": "fp8", "fp8_recipe": "delayed"}), &["cfg.mixed_precision = \"bf16_with_fp8_delayed_scaling_mixed\""],
            &["mixed_precision=bf16_with_fp8_delayed_scaling_mixed"], None),
        row("fp8_param_gather", json!({"precision": "fp8", "fp8_param_gather": false}), &["cfg.mixed_precision.fp8_param_gather = False"],
            &["bf16_with_fp8_current_scaling_mixed sets fp8_param_gather=True; the plan runs fp8_param_gather=False"], None),
        row("fp4_param_gather", json!({"precision": "fp4", "fp4_param_gather": false}), &["cfg.mixed_precision.fp4_param_gather = False"],
            &["bf16_with_nvfp4_mixed sets fp4_param_gather=True; the plan runs fp4_param_gather=False"], None),
        RowCase {
            key: "reuse_grad_buf_for_mxfp8_param_ag",
            moe: false,
            training: json!({"precision": "fp8", "reuse_grad_buf_for_mxfp8_param_ag": false, "__gpu": "b200"}),
            python: &["cfg.mixed_precision.reuse_grad_buf_for_mxfp8_param_ag = False"],
            launch: &["bf16_with_mxfp8_mixed sets reuse_grad_buf_for_mxfp8_param_ag=True; the plan runs reuse_grad_buf_for_mxfp8_param_ag=False"],
            mlm: None,
        },
        row("fp8_amax_history_len", json!({"precision": "fp8", "fp8_recipe": "delayed", "fp8_amax_history_len": 16}), &["cfg.mixed_precision.fp8_amax_history_len = 16"],
            &["bf16_with_fp8_delayed_scaling_mixed sets fp8_amax_history_len=1024; the plan runs fp8_amax_history_len=16"], Some("--fp8-amax-history-len 16")),
        row("first_last_layers_bf16", json!({"precision": "fp8", "first_last_layers_bf16": false}), &["cfg.mixed_precision.first_last_layers_bf16 = False"],
            &["bf16_with_fp8_current_scaling_mixed sets first_last_layers_bf16=True; the plan runs first_last_layers_bf16=False"], None),
        row("num_layers_at_start_in_bf16", json!({"precision": "fp8", "num_layers_at_start_in_bf16": 2}), &["cfg.mixed_precision.num_layers_at_start_in_bf16 = 2"],
            &["sets num_layers_at_start_in_bf16=1; the plan runs num_layers_at_start_in_bf16=2"], Some("--num-layers-at-start-in-bf16 2")),
        row("num_layers_at_end_in_bf16", json!({"precision": "fp8", "num_layers_at_end_in_bf16": 3}), &["cfg.mixed_precision.num_layers_at_end_in_bf16 = 3"],
            &["sets num_layers_at_end_in_bf16=1; the plan runs num_layers_at_end_in_bf16=3"], Some("--num-layers-at-end-in-bf16 3")),
        row("disable_parameter_transpose_cache", json!({"disable_parameter_transpose_cache": true}), &["cfg.model.disable_parameter_transpose_cache = True"],
            &["model.disable_parameter_transpose_cache=True"],
            Some("# disable_parameter_transpose_cache = True: Megatron-LM has no flag; set TransformerConfig.disable_parameter_transpose_cache (excluded from Megatron-LM's generated arguments) in code")),
        // Lists: Python lists, Hydra [a,b] (quoted for the shell), Megatron-LM nargs='+' words.
        row("recompute_modules", json!({"recompute_granularity": "selective", "recompute_modules": ["mlp", "core_attn"]}),
            &["cfg.model.recompute_modules = [\"mlp\", \"core_attn\"]"], &["'model.recompute_modules=[mlp,core_attn]'"], Some("--recompute-modules mlp core_attn")),
        row("distribute_saved_activations", json!({"distribute_saved_activations": true}), &["cfg.model.distribute_saved_activations = True"],
            &["model.distribute_saved_activations=True"], Some("--distribute-saved-activations")),
        row("optimizer_cpu_offload", json!({"optimizer_cpu_offload": true}), &["cfg.optimizer.optimizer_cpu_offload = True", "cfg.optimizer.optimizer_offload_fraction = 1.0"],
            &["optimizer.optimizer_cpu_offload=True", "optimizer.optimizer_offload_fraction=1.0"], Some("--optimizer-cpu-offload")),
        row("optimizer_offload_fraction", json!({"optimizer_cpu_offload": true, "optimizer_offload_fraction": 0.5}), &["cfg.optimizer.optimizer_offload_fraction = 0.5"],
            &["optimizer.optimizer_offload_fraction=0.5"], Some("--optimizer-offload-fraction 0.5")),
        row("fine_grained_activation_offloading", json!({"fine_grained_activation_offloading": true, "offload_modules": ["core_attn"]}),
            &["cfg.model.fine_grained_activation_offloading = True"], &["model.fine_grained_activation_offloading=True"], Some("--fine-grained-activation-offloading")),
        row("offload_modules", json!({"fine_grained_activation_offloading": true, "offload_modules": ["core_attn", "attn_proj"]}),
            &["cfg.model.offload_modules = [\"core_attn\", \"attn_proj\"]"], &["'model.offload_modules=[core_attn,attn_proj]'"], Some("--offload-modules core_attn attn_proj")),
        // Layer-level offloading: Megatron-LM's only flag is the layer count (validate_args turns the switch on).
        row("cpu_offloading", json!({"cpu_offloading": true, "cpu_offloading_num_layers": 1}), &["cfg.model.cpu_offloading = True"],
            &["model.cpu_offloading=True"],
            Some("# cpu_offloading = True: Megatron-LM has no flag; set TransformerConfig.cpu_offloading (--cpu-offloading-num-layers above 0 turns it on) in code")),
        row("cpu_offloading_num_layers", json!({"cpu_offloading": true, "cpu_offloading_num_layers": 1}), &["cfg.model.cpu_offloading_num_layers = 1"],
            &["model.cpu_offloading_num_layers=1"], Some("--cpu-offloading-num-layers 1")),
        row("use_megatron_fsdp", json!({"use_megatron_fsdp": true}), &["cfg.ddp.use_megatron_fsdp = True", "cfg.dist.use_megatron_fsdp = True"],
            &["ddp.use_megatron_fsdp=True", "dist.use_megatron_fsdp=True"], Some("--use-megatron-fsdp")),
        // Megatron-LM's own default is optim_grads_params, so with FSDP on the strategy is always written.
        row("data_parallel_sharding_strategy", json!({"use_megatron_fsdp": true, "data_parallel_sharding_strategy": "optim_grads"}),
            &["cfg.ddp.data_parallel_sharding_strategy = \"optim_grads\""], &["ddp.data_parallel_sharding_strategy=optim_grads"], Some("--data-parallel-sharding-strategy optim_grads")),
        row("overlap_grad_reduce", json!({"overlap_grad_reduce": true}), &["cfg.ddp.overlap_grad_reduce = True"], &["ddp.overlap_grad_reduce=True"], Some("--overlap-grad-reduce")),
        row("overlap_param_gather", json!({"overlap_grad_reduce": true, "overlap_param_gather": true}), &["cfg.ddp.overlap_param_gather = True", "cfg.optimizer.overlap_param_gather = True"],
            &["ddp.overlap_param_gather=True", "optimizer.overlap_param_gather=True"], Some("--overlap-param-gather")),
        row("cuda_graph_impl", json!({"cuda_graph_impl": "transformer_engine"}), &["cfg.model.cuda_graph_impl = \"transformer_engine\""],
            &["model.cuda_graph_impl=transformer_engine"], Some("--cuda-graph-impl transformer_engine")),
        // Written as Megatron-Core's cuda_graph_modules, the deprecated scope cleared so a recipe's cannot clash.
        row("cuda_graph_scope", json!({"cuda_graph_impl": "transformer_engine", "cuda_graph_scope": ["attn", "mlp"]}),
            &["cfg.model.cuda_graph_modules = [\"attn\", \"mlp\"]", "cfg.model.cuda_graph_scope = None"],
            &["'model.cuda_graph_modules=[attn,mlp]'", "model.cuda_graph_scope=null"], Some("--cuda-graph-modules attn mlp")),
        moe_row("moe_token_dispatcher_type", json!({"moe_token_dispatcher_type": "alltoall"}), &["cfg.model.moe_token_dispatcher_type = \"alltoall\""],
            &["model.moe_token_dispatcher_type=alltoall"], Some("--moe-token-dispatcher-type alltoall")),
        moe_row("moe_flex_dispatcher_backend", json!({"moe_token_dispatcher_type": "flex", "moe_flex_dispatcher_backend": "hybridep"}),
            &["cfg.model.moe_flex_dispatcher_backend = \"hybridep\""], &["model.moe_flex_dispatcher_backend=hybridep"], Some("--moe-flex-dispatcher-backend hybridep")),
        moe_row("moe_expert_capacity_factor", json!({"moe_expert_capacity_factor": 1.25}), &["cfg.model.moe_expert_capacity_factor = 1.25"],
            &["model.moe_expert_capacity_factor=1.25"], Some("--moe-expert-capacity-factor 1.25")),
        moe_row("moe_pad_expert_input_to_capacity", json!({"moe_expert_capacity_factor": 1.0, "moe_pad_expert_input_to_capacity": true}),
            &["cfg.model.moe_pad_expert_input_to_capacity = True"], &["model.moe_pad_expert_input_to_capacity=True"], Some("--moe-pad-expert-input-to-capacity")),
        moe_row("moe_router_force_load_balancing", json!({"moe_router_force_load_balancing": true}), &["cfg.model.moe_router_force_load_balancing = True"],
            &["model.moe_router_force_load_balancing=True"], Some("--moe-router-force-load-balancing")),
        // meshplan's own input: no tool has it.
        moe_row("moe_routing_imbalance_factor", json!({"moe_routing_imbalance_factor": 1.5}), &[], &[], None),
        row("cp_comm_type", json!({"cp_comm_type": "a2a"}), &["cfg.model.cp_comm_type = \"a2a\""], &["model.cp_comm_type=a2a"], Some("--cp-comm-type a2a")),
        row("tp_comm_overlap", json!({"tp_comm_overlap": true}), &["cfg.comm_overlap.tp_comm_overlap = True"], &["comm_overlap.tp_comm_overlap=True"], Some("--tp-comm-overlap")),
        moe_row("overlap_moe_expert_parallel_comm", json!({"overlap_moe_expert_parallel_comm": true}),
            &["cfg.comm_overlap.overlap_moe_expert_parallel_comm = True"], &["comm_overlap.overlap_moe_expert_parallel_comm=True"],
            Some("--overlap-moe-expert-parallel-comm")),
        row("defer_embedding_wgrad_compute", json!({"defer_embedding_wgrad_compute": true}), &["cfg.comm_overlap.defer_embedding_wgrad_compute = True"],
            &["comm_overlap.defer_embedding_wgrad_compute=True"], Some("--defer-embedding-wgrad-compute")),
        row("wgrad_deferral_limit", json!({"defer_embedding_wgrad_compute": true, "wgrad_deferral_limit": 22}), &["cfg.comm_overlap.wgrad_deferral_limit = 22"],
            &["comm_overlap.wgrad_deferral_limit=22"], Some("--wgrad-deferral-limit 22")),
        // The attention kernel: TransformerConfig fields, Megatron-LM flags generated from them.
        row("transformer_impl", json!({"transformer_impl": "local"}), &["cfg.model.transformer_impl = \"local\""], &["model.transformer_impl=local"],
            Some("--transformer-impl local")),
        row("attention_backend", json!({"attention_backend": "unfused"}), &["cfg.model.attention_backend = \"unfused\""],
            &["model.attention_backend=unfused"], Some("--attention-backend unfused")),
        row("attention_dropout", json!({"attention_dropout": 0.0}), &["cfg.model.attention_dropout = 0.0"], &["model.attention_dropout=0.0"],
            Some("--attention-dropout 0.0")),
        // The loss kernel: ModelParallelConfig fields, Megatron-LM flags generated from them.
        row("cross_entropy_loss_fusion", json!({"cross_entropy_loss_fusion": true}), &["cfg.model.cross_entropy_loss_fusion = True"],
            &["model.cross_entropy_loss_fusion=True"], Some("--cross-entropy-loss-fusion")),
        row("cross_entropy_fusion_impl", json!({"cross_entropy_loss_fusion": true, "cross_entropy_fusion_impl": "te"}),
            &["cfg.model.cross_entropy_fusion_impl = \"te\""], &["model.cross_entropy_fusion_impl=te"], Some("--cross-entropy-fusion-impl te")),
        // PEFT: Bridge's cfg.peft object (its fields by path); Megatron-LM has none (a note).
        row("peft", json!({"peft": "lora"}), &[], &[],
            Some("# peft = \"lora\": Megatron-LM has no flag; set Megatron Bridge's ConfigContainer.peft = LoRA(...) (Megatron-LM has no PEFT) in code")),
        row("lora_dim", json!({"peft": "lora", "lora_dim": 16}), &["cfg.peft.dim = 16"], &["peft.dim=16"],
            Some("# lora_dim = 16: Megatron-LM has no flag; set Megatron Bridge's LoRA(dim=...) (Megatron-LM has no PEFT) in code")),
        row("lora_target_modules", json!({"peft": "lora", "lora_target_modules": ["linear_qkv"]}), &["cfg.peft.target_modules = [\"linear_qkv\"]"],
            &["'peft.target_modules=[linear_qkv]'"],
            Some("# lora_target_modules = [\"linear_qkv\"]: Megatron-LM has no flag; set Megatron Bridge's LoRA(target_modules=...) (Megatron-LM has no PEFT) in code")),
        // meshplan's own inputs (the sanity alarm): no tool has them.
        row("measured_tflops_per_gpu", json!({"measured_tflops_per_gpu": 400.0}), &[], &[], None),
        row("measured_tokens_per_s_per_gpu", json!({"measured_tokens_per_s_per_gpu": 1000.0}), &[], &[], None),
        // Bridge's VLM providers' freeze switches; Megatron-LM's pretrain_gpt has none (its multimodal example calls
        // LLaVAModel.freeze).
        row("freeze_vision_model", json!({"__vision": true, "freeze_vision_model": true}), &["cfg.model.freeze_vision_model = True"],
            &["model.freeze_vision_model=True"],
            Some("# freeze_vision_model = True: Megatron-LM has no flag; set LLaVAModel.freeze(freeze_vision_model=True) (examples/multimodal: --freeze-ViT) in code")),
        row("freeze_vision_projection", json!({"__vision": true, "freeze_vision_projection": true}), &["cfg.model.freeze_vision_projection = True"],
            &["model.freeze_vision_projection=True"],
            Some("# freeze_vision_projection = True: Megatron-LM has no flag; set LLaVAModel.freeze(freeze_vision_projection=True) in code")),
        // meshplan's own inputs: the data, not a tool's setting.
        row("image_tokens_per_sample", json!({"__vision": true, "image_tokens_per_sample": 256}), &[], &[], None),
        row("images_per_sample", json!({"__vision": true, "image_tokens_per_sample": 256, "images_per_sample": 2}), &[], &[], None),
    ]
}

fn lines(text: &str) -> Vec<String> {
    text.lines().map(|l| l.split("  # ").next().unwrap_or(l).trim().to_string()).collect()
}

#[test]
fn every_row_reaches_every_export() {
    let cases = cases();
    let covered: Vec<&str> = cases.iter().map(|c| c.key).collect();
    let missing: Vec<&str> = SETTINGS.iter().map(|r| r.key).filter(|k| !covered.contains(k)).collect();
    assert!(missing.is_empty(), "rows without an export case: {missing:?}");
    for c in cases {
        let mut training = c.training.clone();
        let gpu = training.as_object_mut().unwrap().remove("__gpu");
        let vision = training.as_object_mut().unwrap().remove("__vision");
        let mut p = plan(c.moe, training);
        if vision.is_some() {
            // A model with a vision encoder (the vision-encoder rows are written for such a model only).
            p["model"]["vision_config"] = json!({"num_layers": 2, "hidden_size": 64, "ffn_hidden_size": 256, "num_attention_heads": 4, "patch_dim": 588});
        }
        if let Some(g) = gpu {
            p["cluster"]["gpu"] = g;
        }
        let r = plan_value(&p).unwrap();
        let py = lines(&export(ExportKind::Bridge, &r.plan, &r));
        for line in c.python {
            assert!(py.iter().any(|l| l == line), "{}: Python lacks {line:?}:\n{}", c.key, py.join("\n"));
        }
        let cli = export(ExportKind::BridgeCli, &r.plan, &r);
        let words: Vec<String> = cli.lines().map(|l| l.trim().trim_end_matches(" \\").to_string()).collect();
        for w in c.launch {
            let found = if w.contains(' ') { cli.contains(w) } else { words.iter().any(|l| l == w) };
            assert!(found, "{}: the launch command lacks {w:?}:\n{cli}", c.key);
        }
        // The Slurm script launches the same overrides (and notes) as the launch command.
        let slurm = export(ExportKind::Slurm, &r.plan, &r);
        let slurm_words: Vec<String> = slurm.lines().map(|l| l.trim().trim_end_matches(" \\").to_string()).collect();
        for w in c.launch {
            let found = if w.contains(' ') { slurm.contains(w) } else { slurm_words.iter().any(|l| l == w) };
            assert!(found, "{}: the Slurm script lacks {w:?}:\n{slurm}", c.key);
        }
        let lm = export(ExportKind::MegatronLm, &r.plan, &r);
        let lm_lines: Vec<&str> = lm.lines().map(str::trim).collect();
        match c.mlm {
            Some(l) => assert!(lm_lines.contains(&l), "{}: Megatron-LM lacks {l:?}:\n{lm}", c.key),
            None => {
                let flag = format!("--{}", c.key.replace('_', "-"));
                assert!(!lm.contains(&flag), "{}: Megatron-LM writes its default {flag}:\n{lm}", c.key);
            }
        }
        if c.key == "moe_routing_imbalance_factor" {
            for kind in [ExportKind::Bridge, ExportKind::BridgeCli, ExportKind::MegatronLm] {
                assert!(!export(kind, &r.plan, &r).contains("imbalance"), "{kind:?}");
            }
        }
    }
}

#[test]
fn offloaded_moe_recipe_line_by_line() {
    // Qwen3-30B-A3B as Bridge PR #3062 ran it (TP2 PP2 EP4 on 16 H100, full recompute, 100% optimizer offload) with a
    // precision-aware optimizer holding fp8/bf16 moments, bf16 grads and HybridEP — every non-default row.
    let r = plan_value(&json!({
        "defaults": "megatron-core",
        "model": "qwen3-30b-a3b", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 2},
        "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 512, "use_distributed_optimizer": true,
                     "recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 1,
                     "optimizer_cpu_offload": true, "use_precision_aware_optimizer": true, "exp_avg_dtype": "fp8", "exp_avg_sq_dtype": "bf16",
                     "grad_reduce_in_fp32": false, "moe_token_dispatcher_type": "flex", "moe_flex_dispatcher_backend": "hybridep",
                     "moe_router_force_load_balancing": true},
        "parallelism": {"tensor_model_parallel_size": 2, "pipeline_model_parallel_size": 2, "expert_model_parallel_size": 4,
                        "expert_tensor_parallel_size": 1, "sequence_parallel": true}
    }))
    .unwrap();
    let lm = export(ExportKind::MegatronLm, &r.plan, &r);
    let training: Vec<&str> = lm.lines().map(str::trim).skip_while(|l| *l != "# training").skip(1).take_while(|l| *l != "# model").collect();
    assert_eq!(
        training,
        [
            "--micro-batch-size 1",
            "--global-batch-size 512",
            "--seq-length 4096",
            "--recompute-granularity full",
            "--recompute-method uniform",
            "--recompute-num-layers 1",
            "--use-distributed-optimizer",
            "--bf16",
            // bf16 reduces in fp32 unless told otherwise.
            "--grad-reduce-in-bf16",
            "--use-precision-aware-optimizer",
            "--exp-avg-dtype fp8",
            "--exp-avg-sq-dtype bf16",
            // The fraction is Megatron-LM's default 1.0: no flag.
            "--optimizer-cpu-offload",
            "--moe-token-dispatcher-type flex",
            "--moe-flex-dispatcher-backend hybridep",
            "--moe-router-force-load-balancing",
        ]
    );
    let py = lines(&export(ExportKind::Bridge, &r.plan, &r));
    for line in [
        "cfg.optimizer.exp_avg_dtype = torch.uint8",
        "cfg.optimizer.exp_avg_sq_dtype = torch.bfloat16",
        "cfg.mixed_precision = get_mixed_precision_config(\"bf16_mixed\")",
        "cfg.mixed_precision.grad_reduce_in_fp32 = False",
        "cfg.optimizer.optimizer_cpu_offload = True",
        // Megatron-Core's and Bridge's own default would offload nothing: the plan's 1.0 is written.
        "cfg.optimizer.optimizer_offload_fraction = 1.0",
        "cfg.model.moe_flex_dispatcher_backend = \"hybridep\"",
    ] {
        assert!(py.iter().any(|l| l == line), "lacks {line:?}");
    }
    assert_eq!(py.iter().filter(|l| l.as_str() == "import torch").count(), 1);
    assert!(!py.iter().any(|l| l == "cfg.mixed_precision = \"bf16_mixed\""), "the string form is replaced by the recipe object");
    // The launch command: fp8 moments and the recipe's grad buffer cannot be overrides; both are named.
    let cli = export(ExportKind::BridgeCli, &r.plan, &r);
    assert!(!cli.contains("optimizer.exp_avg_dtype="));
    assert!(cli.contains("  optimizer.exp_avg_sq_dtype=bf16 \\\n"));
    assert!(cli.contains("# Optimizer & gradients: exp_avg_dtype = fp8 is torch.uint8 in Bridge"));
    assert!(cli.contains("# Low precision: bf16_mixed sets grad_reduce_in_fp32=True; the plan runs grad_reduce_in_fp32=False"));
    assert!(cli.contains("  mixed_precision=bf16_mixed \\\n"));
}

/// Fine-grained activation offloading needs NVTE_CPU_OFFLOAD_V1=1 in the launch environment (Megatron Bridge's
/// `_validate_fine_grained_activation_offloading` raises without it on TE >= 2.10): every launching export sets it,
/// the Python overrides say so; without offloading none does.
#[test]
fn activation_offloading_sets_its_launch_environment() {
    let on = plan_value(&plan(false, json!({"fine_grained_activation_offloading": true, "offload_modules": ["core_attn"]}))).unwrap();
    let off = plan_value(&plan(false, json!({}))).unwrap();
    let expect = [
        (ExportKind::Bridge, "# Launch with NVTE_CPU_OFFLOAD_V1=1 in the environment (fine-grained activation offloading)."),
        (ExportKind::BridgeCli, "CUDA_DEVICE_MAX_CONNECTIONS=1 NVTE_CPU_OFFLOAD_V1=1 uv run python -m torch.distributed.run"),
        (ExportKind::MegatronLm, "export NVTE_CPU_OFFLOAD_V1=1"),
        (ExportKind::Slurm, "export NVTE_CPU_OFFLOAD_V1=1"),
    ];
    for (kind, line) in expect {
        let text = export(kind, &on.plan, &on);
        assert!(text.lines().any(|l| l.trim().starts_with(line)), "{kind:?} lacks {line:?}:\n{text}");
        assert!(!export(kind, &off.plan, &off).contains("NVTE_CPU_OFFLOAD_V1"), "{kind:?} sets it without offloading");
    }
}

/// The Slurm sizing states the host memory offloading needs per node, against the cluster's; none without offloading.
/// Full optimizer offload of the small model at TP 2, DP 4: Bridge without the precision-aware optimizer moves the Adam
/// moments (and keeps the fp32 master), so the host holds F·16/d per parameter — what the report's
/// host_bytes_per_node says, shown in GiB to two places.
#[test]
fn slurm_states_the_host_memory_offloading_needs() {
    let r = plan_value(&plan(false, json!({"optimizer_cpu_offload": true, "optimizer_offload_fraction": 1.0}))).unwrap();
    let host = r.memory.host_bytes_per_node;
    assert!(host > 0);
    // Each stage's per-node figure (what `meshplan plan`'s host/node column prints) is its per-GPU host bytes times
    // the node's GPUs; the report's is the largest stage's.
    for st in &r.memory.stages {
        assert_eq!(st.host_bytes_per_node, st.host_bytes * r.plan.cluster.gpus_per_node);
    }
    assert_eq!(host, r.memory.stages.iter().map(|s| s.host_bytes_per_node).max().unwrap());
    let slurm = export(ExportKind::Slurm, &r.plan, &r);
    let line = format!("# host memory: offloading holds {:.2} GiB per node on the CPU of the node's", host as f64 / (1u64 << 30) as f64);
    assert!(slurm.lines().any(|l| l.starts_with(&line)), "{line:?}:\n{slurm}");
    let none = plan_value(&plan(false, json!({}))).unwrap();
    assert!(!export(ExportKind::Slurm, &none.plan, &none).contains("# host memory"));
}

/// A full-iteration CUDA graph cannot capture the NaN check: Bridge's ConfigContainer.validate asserts
/// rerun_state_machine.check_for_nan_in_loss = False, Megatron-LM's validate_args --no-check-for-nan-in-loss-and-grad.
/// Per-layer graphs leave it alone.
#[test]
fn full_iteration_graphs_turn_the_nan_check_off() {
    let full = plan_value(&plan(false, json!({"cuda_graph_impl": "full_iteration"}))).unwrap();
    let py = lines(&export(ExportKind::Bridge, &full.plan, &full));
    assert!(py.iter().any(|l| l == "cfg.rerun_state_machine.check_for_nan_in_loss = False"), "{}", py.join("\n"));
    for kind in [ExportKind::BridgeCli, ExportKind::Slurm] {
        let text = export(kind, &full.plan, &full);
        assert!(text.lines().any(|l| l.trim().trim_end_matches(" \\") == "rerun_state_machine.check_for_nan_in_loss=False"), "{kind:?}:\n{text}");
    }
    let lm = export(ExportKind::MegatronLm, &full.plan, &full);
    assert!(lm.lines().any(|l| l.trim() == "--no-check-for-nan-in-loss-and-grad"), "{lm}");
    // Read back, the companion is understood, not listed as unread.
    for kind in [ExportKind::Bridge, ExportKind::BridgeCli, ExportKind::MegatronLm, ExportKind::Slurm] {
        let (imported, _, _) = meshplan_core::imports::import_plan(&export(kind, &full.plan, &full), &Default::default()).unwrap();
        assert!(imported.unrecognized.iter().all(|u| !u.name.contains("nan")), "{kind:?}: {:?}", imported.unrecognized);
    }
    let te = plan_value(&plan(false, json!({"cuda_graph_impl": "transformer_engine"}))).unwrap();
    for kind in [ExportKind::Bridge, ExportKind::BridgeCli, ExportKind::MegatronLm, ExportKind::Slurm] {
        let text = export(kind, &te.plan, &te);
        assert!(!text.contains("check_for_nan") && !text.contains("check-for-nan"), "{kind:?}:\n{text}");
    }
}
