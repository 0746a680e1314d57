//! The exports, checked line by line against values worked out from the plan by hand.

use meshplan_core::export::{self, ExportKind, bridge_recipe, comment_text};
use meshplan_core::{Report, parse_plan, plan_value, presets};
use serde_json::{Value, json};

fn report(v: Value) -> Report {
    plan_value(&v).expect("plannable")
}

/// Lines that are code: not blank, not a comment; a trailing `  # note` is cut off.
fn code_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.split("  # ").next().unwrap_or(l).trim_end().to_string())
        .collect()
}

/// The words of a ` \`-continued command after `--recipe X`, one per line as printed.
fn command_lines(text: &str) -> Vec<String> {
    text.lines().filter(|l| l.starts_with("  ")).map(|l| l.trim().trim_end_matches(" \\").to_string()).collect()
}

/// Llama 3.1 70B, TP=4 PP=4 with SP on 64 H200s (8 nodes × 8), 8K tokens, GBS 512, selective recompute
/// (H200: at TP 4 without CP the first stage needs more than an H100's 80 GB). Megatron-Core's plain defaults: the
/// export lines below are written by hand for them.
fn llama70b() -> Value {
    json!({
        "defaults": "megatron-core",
        "model": "llama-3.1-70b",
        "cluster": {"gpu": "h200-sxm-141gb", "gpus_per_node": 8, "num_nodes": 8},
        "training": {"seq_length": 8192, "micro_batch_size": 1, "global_batch_size": 512,
                     "recompute_granularity": "selective", "use_distributed_optimizer": true, "precision": "bf16"},
        "parallelism": {"tensor_model_parallel_size": 4, "pipeline_model_parallel_size": 4, "sequence_parallel": true}
    })
}

#[test]
fn llama70b_bridge_python_line_by_line() {
    let r = report(llama70b());
    assert!(r.valid, "{:?}", r.diagnostics);
    let text = export::export(ExportKind::Bridge, &r.plan, &r);
    // W = 64, TP·PP·CP = 16 → DP = 4; ETP defaults to TP = 4, so expert DP = 64/(4·1·4) = 4;
    // microbatches = 512 / (1·4) = 128.
    assert!(text.contains("dense DP = W/(TP·PP·CP) = 64/(4·4·1) = 4; expert DP = W/(PP·EP·ETP) = 64/(4·1·4) = 4; 128 microbatches of 1"));
    assert!(text.contains("#   from megatron.bridge.recipes import llama31_70b_pretrain_config"));
    assert!(text.contains("# Launch with CUDA_DEVICE_MAX_CONNECTIONS=1"));
    assert_eq!(
        code_lines(&text),
        [
            "cfg.model.tensor_model_parallel_size = 4",
            "cfg.model.pipeline_model_parallel_size = 4",
            "cfg.model.virtual_pipeline_model_parallel_size = None",
            "cfg.model.context_parallel_size = 1",
            "cfg.model.expert_model_parallel_size = 1",
            "cfg.model.expert_tensor_parallel_size = 4",
            "cfg.model.sequence_parallel = True",
            "cfg.model.pipeline_model_parallel_layout = None",
            "cfg.model.num_layers_in_first_pipeline_stage = None",
            "cfg.model.num_layers_in_last_pipeline_stage = None",
            "cfg.train.global_batch_size = 512",
            "cfg.train.micro_batch_size = 1",
            "cfg.model.seq_length = 8192",
            "cfg.dataset.seq_length = 8192",
            // Every settings row at the value the plan runs, group by group, so the recipe's own values cannot
            // change what was planned: Megatron-Core's defaults here, the plan's selective recompute and
            // distributed optimizer, and bf16_mixed (whose grad_reduce_in_fp32 = True is the plan's too).
            "import torch",
            "cfg.optimizer.use_distributed_optimizer = True",
            "cfg.ddp.use_distributed_optimizer = True",
            "cfg.optimizer.optimizer = \"adam\"",
            "cfg.optimizer.use_precision_aware_optimizer = False",
            "cfg.optimizer.main_params_dtype = torch.float32",
            "cfg.optimizer.main_grads_dtype = torch.float32",
            "cfg.optimizer.exp_avg_dtype = torch.float32",
            "cfg.optimizer.exp_avg_sq_dtype = torch.float32",
            "cfg.optimizer.store_param_remainders = True",
            "cfg.ddp.num_distributed_optimizer_instances = 1",
            "cfg.mixed_precision = \"bf16_mixed\"",
            "cfg.model.disable_parameter_transpose_cache = False",
            "cfg.model.recompute_granularity = \"selective\"",
            "cfg.model.recompute_method = None",
            "cfg.model.recompute_num_layers = None",
            "cfg.model.recompute_modules = None",
            "cfg.model.distribute_saved_activations = False",
            "cfg.optimizer.optimizer_cpu_offload = False",
            // No offload: Megatron-Core's 0.0 (the plan's default 1.0 applies only with optimizer_cpu_offload).
            "cfg.optimizer.optimizer_offload_fraction = 0.0",
            "cfg.model.cpu_offloading = False",
            "cfg.model.cpu_offloading_num_layers = 0",
            "cfg.model.fine_grained_activation_offloading = False",
            "cfg.model.offload_modules = []",
            "cfg.ddp.use_megatron_fsdp = False",
            "cfg.dist.use_megatron_fsdp = False",
            "cfg.ddp.data_parallel_sharding_strategy = \"no_shard\"",
            "cfg.ddp.overlap_grad_reduce = False",
            "cfg.ddp.overlap_param_gather = False",
            "cfg.optimizer.overlap_param_gather = False",
            "cfg.model.cuda_graph_impl = \"none\"",
            "cfg.model.cuda_graph_modules = []",
            "cfg.model.cuda_graph_scope = None",
            // A dense model: no MoE dispatch lines. No communication-overlap setting is on, but the recipe the launch
            // names (llama31_70b_pretrain_config, Bridge recipes/llama/h100/llama3.py) turns TP overlap on: restated off.
            "cfg.comm_overlap.tp_comm_overlap = False",
            "cfg.model.cross_entropy_loss_fusion = False",
            "cfg.model.cross_entropy_fusion_impl = \"native\"",
        ]
    );
}

#[test]
fn llama70b_bridge_launch_line_by_line() {
    let r = report(llama70b());
    let text = export::export(ExportKind::BridgeCli, &r.plan, &r);
    let first = text.lines().find(|l| !l.starts_with('#')).unwrap();
    // TP = 4 > 1, so the environment carries CUDA_DEVICE_MAX_CONNECTIONS=1; 8 GPUs per node, 8 nodes.
    assert_eq!(first, "CUDA_DEVICE_MAX_CONNECTIONS=1 uv run python -m torch.distributed.run --nproc_per_node=8 --nnodes=8 \\");
    assert_eq!(
        command_lines(&text),
        [
            "--node_rank=\"${NODE_RANK:?set NODE_RANK to this node's index, 0..7}\" --master_addr=\"${MASTER_ADDR:?set MASTER_ADDR to node 0's address}\" --master_port=\"${MASTER_PORT:-29500}\"",
            "scripts/training/run_recipe.py",
            "--recipe llama31_70b_pretrain_config",
            "model.tensor_model_parallel_size=4",
            "model.pipeline_model_parallel_size=4",
            "model.virtual_pipeline_model_parallel_size=null",
            "model.context_parallel_size=1",
            "model.expert_model_parallel_size=1",
            "model.expert_tensor_parallel_size=4",
            "model.sequence_parallel=True",
            "model.pipeline_model_parallel_layout=null",
            "model.num_layers_in_first_pipeline_stage=null",
            "model.num_layers_in_last_pipeline_stage=null",
            "train.global_batch_size=512",
            "train.micro_batch_size=1",
            "model.seq_length=8192",
            "dataset.seq_length=8192",
            // The same settings as the Python form, in Hydra's grammar (dtypes by name; lists quoted for the shell).
            "optimizer.use_distributed_optimizer=True",
            "ddp.use_distributed_optimizer=True",
            "optimizer.optimizer=adam",
            "optimizer.use_precision_aware_optimizer=False",
            "optimizer.main_params_dtype=fp32",
            "optimizer.main_grads_dtype=fp32",
            "optimizer.exp_avg_dtype=fp32",
            "optimizer.exp_avg_sq_dtype=fp32",
            "optimizer.store_param_remainders=True",
            "ddp.num_distributed_optimizer_instances=1",
            "mixed_precision=bf16_mixed",
            "model.disable_parameter_transpose_cache=False",
            "model.recompute_granularity=selective",
            "model.recompute_method=null",
            "model.recompute_num_layers=null",
            "model.recompute_modules=null",
            "model.distribute_saved_activations=False",
            "optimizer.optimizer_cpu_offload=False",
            "optimizer.optimizer_offload_fraction=0.0",
            "model.cpu_offloading=False",
            "model.cpu_offloading_num_layers=0",
            "model.fine_grained_activation_offloading=False",
            "'model.offload_modules=[]'",
            "ddp.use_megatron_fsdp=False",
            "dist.use_megatron_fsdp=False",
            "ddp.data_parallel_sharding_strategy=no_shard",
            "ddp.overlap_grad_reduce=False",
            "ddp.overlap_param_gather=False",
            "optimizer.overlap_param_gather=False",
            "model.cuda_graph_impl=none",
            "'model.cuda_graph_modules=[]'",
            "model.cuda_graph_scope=null",
            // The named recipe turns TP overlap on; the plan has it off.
            "comm_overlap.tp_comm_overlap=False",
            "model.cross_entropy_loss_fusion=False",
            "model.cross_entropy_fusion_impl=native",
            "train.train_iters=3",
            "scheduler.lr_warmup_iters=0",
            "validation.eval_iters=0 validation.eval_interval=0",
            "checkpoint.save_interval=0",
            "logger.log_interval=1",
        ]
    );
    assert!(text.ends_with("logger.log_interval=1\n"), "the command ends without a dangling continuation");
}

#[test]
fn llama70b_megatron_lm_line_by_line() {
    let r = report(llama70b());
    let text = export::export(ExportKind::MegatronLm, &r.plan, &r);
    assert_eq!(
        code_lines(&text),
        [
            "export CUDA_DEVICE_MAX_CONNECTIONS=1",
            "MEGATRON_ARGS=(",
            "--tensor-model-parallel-size 4",
            "--pipeline-model-parallel-size 4",
            "--context-parallel-size 1",
            "--expert-model-parallel-size 1",
            "--expert-tensor-parallel-size 4",
            "--sequence-parallel",
            "--micro-batch-size 1",
            "--global-batch-size 512",
            "--seq-length 8192",
            "--recompute-granularity selective",
            "--use-distributed-optimizer",
            "--bf16",
            // Llama 3.1 70B: 80 layers, h = 8192, ffn 28672, 64 heads in 8 KV groups of 128 channels.
            "--num-layers 80",
            "--hidden-size 8192",
            "--ffn-hidden-size 28672",
            "--num-attention-heads 64",
            "--group-query-attention",
            "--num-query-groups 8",
            "--kv-channels 128",
            "--max-position-embeddings 131072",
            "--position-embedding-type rope",
            "--normalization RMSNorm",
            "--swiglu",
            "--disable-bias-linear",
            "--untie-embeddings-and-output-weights",
            "--make-vocab-size-divisible-by 128",
            ")",
        ]
    );
}

#[test]
fn llama70b_slurm_line_by_line() {
    let r = report(llama70b());
    let text = export::export(ExportKind::Slurm, &r.plan, &r);
    let lines: Vec<&str> = text.lines().collect();
    // sbatch reads #SBATCH lines only before the first command, so they come straight after the shebang.
    assert_eq!(
        lines[..6],
        [
            "#!/bin/bash",
            "#SBATCH --job-name=meshplan-llama-3-1-70b",
            "#SBATCH --nodes=8",
            "#SBATCH --ntasks-per-node=8",
            "#SBATCH --gpus-per-node=8",
            "#SBATCH --exclusive",
        ]
    );
    // 64 GPUs; min_gpus = 4·max(4·1, 1·4) = 16 (2 nodes of 8); the full product 4·4·1·1·4 = 64.
    assert!(lines.contains(&"# world size W = 8 nodes × 8 GPUs = 64"));
    assert!(lines.contains(
        &"# min_gpus = PP·max(TP·CP, EP·ETP) = 4·max(4·1, 1·4) = 16 (2 node(s) of 8); the full product PP·TP·CP·EP·ETP = 64 would over-allocate"
    ));
    assert!(lines.contains(&"# W = 64 = 4 × 16: the extra multiples become data parallelism (DP and expert DP grow together)"));
    assert!(lines.contains(&"export CUDA_DEVICE_MAX_CONNECTIONS=1"));
    assert!(lines.contains(&"srun --nodes=8 --ntasks-per-node=8 --gpus-per-node=8 --kill-on-bad-exit=1 \\"));
    assert!(lines.contains(&"  --recipe llama31_70b_pretrain_config \\"));
    assert!(lines.contains(&"  model.tensor_model_parallel_size=4 \\"));
    assert!(text.contains("  mixed_precision=bf16_mixed \\\n"));
    assert!(text.ends_with("  model.cross_entropy_fusion_impl=native\n"));
}

/// The seed's MoE example: PP=1, TP=2, CP=1, EP=8, ETP=1 — min_gpus 8, not the full product 16.
fn seed_moe(num_nodes: u64) -> Value {
    json!({
        "model": "olmoe-1b-7b",
        "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": num_nodes},
        "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 64, "use_distributed_optimizer": true},
        "parallelism": {"tensor_model_parallel_size": 2, "expert_model_parallel_size": 8, "expert_tensor_parallel_size": 1,
                        "sequence_parallel": true}
    })
}

#[test]
fn moe_min_gpus_comment_matches_the_seed() {
    // 8 GPUs: dense DP = 8/2 = 4, expert DP = 8/8 = 1 (seed "Scaling above the minimum").
    let r = report(seed_moe(1));
    let text = export::export(ExportKind::Slurm, &r.plan, &r);
    assert!(text.contains("#SBATCH --nodes=1\n"));
    assert!(text.contains(
        "# min_gpus = PP·max(TP·CP, EP·ETP) = 1·max(2·1, 8·1) = 8 (1 node(s) of 8); the full product PP·TP·CP·EP·ETP = 16 would over-allocate\n"
    ));
    assert!(text.contains("dense DP = W/(TP·PP·CP) = 8/(2·1·1) = 4; expert DP = W/(PP·EP·ETP) = 8/(1·8·1) = 1;"));
    // 16 and 32 GPUs: DP 8 / EDP 2 and DP 16 / EDP 4.
    for (nodes, dp, edp) in [(2, 8, 2), (4, 16, 4)] {
        let r = report(seed_moe(nodes));
        let text = export::export(ExportKind::Slurm, &r.plan, &r);
        let w = nodes * 8;
        assert!(text.contains(&format!("#SBATCH --nodes={nodes}\n")));
        assert!(text.contains(&format!("dense DP = W/(TP·PP·CP) = {w}/(2·1·1) = {dp}; expert DP = W/(PP·EP·ETP) = {w}/(1·8·1) = {edp};")));
        assert!(text.contains(&format!("# W = {w} = {} × 8:", w / 8)));
    }
    // ETP was given: no default note, and both Bridge and Megatron-LM get ETP = 1 explicitly.
    let py = export::bridge_python(&r.plan, &r);
    assert!(py.contains("cfg.model.expert_tensor_parallel_size = 1\n"));
    assert!(py.contains("cfg.model.expert_model_parallel_size = 8\n"));
    let lm = export::megatron_lm(&r.plan, &r);
    assert!(lm.contains("  --expert-tensor-parallel-size 1\n"));
    assert!(lm.contains("  --num-experts 64\n  --moe-router-topk 8\n"));
}

#[test]
fn etp_default_is_written_out_with_a_note_for_moe() {
    // EP = 8 with ETP unset: megatron-core's ETP = TP = 2, written explicitly because Bridge would pick 1.
    let mut v = seed_moe(1);
    v["parallelism"].as_object_mut().unwrap().remove("expert_tensor_parallel_size");
    let r = report(v);
    let py = export::bridge_python(&r.plan, &r);
    assert!(py.contains("cfg.model.expert_tensor_parallel_size = 2  # the plan left ETP unset"));
    // …and the plan file keeps it unset, so it reads back the same way.
    assert!(export::plan_json(&r.plan).contains("\"expert_tensor_parallel_size\": null"));
}

#[test]
fn deepseek_v3_uneven_stages_mla_mtp_and_fp8() {
    // 61 layers over PP=16: 1 on the first stage, 60 over the other 15.
    let r = report(json!({
        "model": "deepseek-v3",
        "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 128},
        "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 8192,
                     "recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 1,
                     "use_distributed_optimizer": true, "precision": "fp8"},
        "parallelism": {"tensor_model_parallel_size": 2, "pipeline_model_parallel_size": 16, "expert_model_parallel_size": 64,
                        "expert_tensor_parallel_size": 1, "sequence_parallel": true, "num_layers_in_first_pipeline_stage": 1}
    }));
    let lm = export::megatron_lm(&r.plan, &r);
    for line in [
        "  --decoder-first-pipeline-num-layers 1",
        "  --recompute-granularity full",
        "  --recompute-method uniform",
        "  --recompute-num-layers 1",
        // H100: current (tensorwise) scaling, FP8 parameter gather with the distributed optimizer.
        "  --bf16",
        "  --fp8-format hybrid",
        "  --fp8-recipe tensorwise",
        "  --fp8-param-gather",
        // 3 dense layers then 58 MoE layers.
        "  --moe-layer-freq '([0]*3+[1]*58)'",
        "  --moe-shared-expert-intermediate-size 2048",
        "  --multi-latent-attention",
        "  --q-lora-rank 1536",
        "  --kv-lora-rank 512",
        "  --qk-head-dim 128",
        "  --qk-pos-emb-head-dim 64",
        "  --v-head-dim 128",
        "  --mtp-num-layers 1",
    ] {
        assert!(lm.lines().any(|l| l == line), "missing {line:?} in\n{lm}");
    }
    // MLA: no GQA flags, no kv-channels (Megatron-LM asserts GQA and MLA are exclusive).
    assert!(!lm.contains("--group-query-attention") && !lm.contains("--kv-channels"));
    assert!(!lm.contains("--decoder-last-pipeline-num-layers"));
    // The plan leaves first_last_layers_bf16 unstated: tuned defaults take DeepSeek-V3's H100 FP8-CS perf recipe's value,
    // false (Megatron-Bridge@067f987df03b perf_recipes/_common.py:112 turns off the current-scaling recipe's BF16
    // first/last layers for every perf benchmark), not the library recipe's true, and the export says so by omission.
    assert!(!lm.lines().any(|l| l.trim() == "--first-last-layers-bf16"), "{lm}");
    let a = r.assumptions.iter().find(|a| a.key == "first_last_layers_bf16").expect("listed");
    assert_eq!(a.value, json!(false));
    assert!(a.source.contains("perf."), "{}", a.source);
    let py = export::bridge_python(&r.plan, &r);
    assert!(py.contains("#   cfg = deepseek_v3_pretrain_config()"));
    assert!(py.contains("cfg.model.num_layers_in_first_pipeline_stage = 1\n"));
    assert!(py.contains("cfg.model.num_layers_in_last_pipeline_stage = None\n"));
    assert!(py.contains("cfg.model.recompute_granularity = \"full\"\ncfg.model.recompute_method = \"uniform\"\ncfg.model.recompute_num_layers = 1\n"));
    // The current-scaling mixed-precision recipe with the perf recipe's override of its BF16 first/last layers.
    assert!(py.contains("cfg.mixed_precision = get_mixed_precision_config(\"bf16_with_fp8_current_scaling_mixed\")\n"), "{py}");
    assert!(py.contains("cfg.mixed_precision.first_last_layers_bf16 = False\n"), "{py}");
}

#[test]
fn precision_recipes_follow_the_gpu() {
    let mut v = llama70b();
    v["training"]["precision"] = json!("fp8");
    v["cluster"]["gpu"] = json!("b200");
    let r = report(v.clone());
    assert!(export::bridge_python(&r.plan, &r).contains("cfg.mixed_precision = \"bf16_with_mxfp8_mixed\"\n"));
    let lm = export::megatron_lm(&r.plan, &r);
    assert!(lm.contains("  --fp8-format e4m3\n  --fp8-recipe mxfp8\n  --fp8-param-gather\n  --reuse-grad-buf-for-mxfp8-param-ag\n"));

    // Without the distributed optimizer, FP8 parameter gathering is turned off (Megatron-LM refuses it).
    v["training"]["use_distributed_optimizer"] = json!(false);
    v["cluster"]["gpu"] = json!("h100-sxm-80gb");
    let r = report(v.clone());
    let py = export::bridge_python(&r.plan, &r);
    assert!(py.contains(
        "cfg.mixed_precision = get_mixed_precision_config(\"bf16_with_fp8_current_scaling_mixed\")\ncfg.mixed_precision.fp8_param_gather = False"
    ));
    assert!(!py.contains("cfg.mixed_precision = \"bf16_with_fp8_current_scaling_mixed\""));
    assert!(py.contains("cfg.optimizer.use_distributed_optimizer = False\ncfg.ddp.use_distributed_optimizer = False\n"));
    let lm = export::megatron_lm(&r.plan, &r);
    assert!(!lm.contains("--fp8-param-gather") && !lm.contains("--use-distributed-optimizer"));

    for (precision, bridge, flag) in [("fp16", "fp16_mixed", "--fp16"), ("fp4", "bf16_with_nvfp4_mixed", "--fp4-format e2m1")] {
        v["training"]["precision"] = json!(precision);
        v["cluster"]["gpu"] = json!("b200");
        let r = report(v.clone());
        assert!(export::bridge_python(&r.plan, &r).contains(&format!("\"{bridge}\"")), "{precision}");
        assert!(export::megatron_lm(&r.plan, &r).contains(&format!("  {flag}\n")), "{precision}");
    }
    v["training"]["precision"] = json!("fp32");
    let r = report(v);
    assert!(export::bridge_python(&r.plan, &r).contains("cfg.mixed_precision = None\ncfg.model.bf16 = False\ncfg.model.fp16 = False\n"));
    let lm = export::megatron_lm(&r.plan, &r);
    assert!(!lm.contains("--bf16") && !lm.contains("--fp16"));
}

#[test]
fn vpp_microbatch_group_and_tp_pp_dp_order() {
    let mut v = llama70b();
    v["parallelism"]["virtual_pipeline_model_parallel_size"] = json!(5);
    v["parallelism"]["microbatch_group_size_per_vp_stage"] = json!(4);
    v["parallelism"]["order"] = json!("tp-cp-ep-pp-dp");
    let r = report(v);
    let lm = export::megatron_lm(&r.plan, &r);
    assert!(lm.contains("  --num-virtual-stages-per-pipeline-rank 5\n"));
    assert!(lm.contains("  --microbatch-group-size-per-virtual-pipeline-stage 4\n"));
    assert!(lm.contains("  --use-tp-pp-dp-mapping\n"));
    let cli = export::bridge_launch(&r.plan, &r);
    assert!(cli.contains("  model.virtual_pipeline_model_parallel_size=5 \\\n"));
    assert!(cli.contains("  model.microbatch_group_size_per_vp_stage=4 \\\n"));
    assert!(cli.contains("  dist.use_tp_pp_dp_mapping=True \\\n"));
}

#[test]
fn single_node_without_tp_has_no_rendezvous_or_env() {
    let r = report(json!({
        "model": "llama-3.1-8b",
        "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 1},
        "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 64, "use_distributed_optimizer": true},
        "parallelism": {}
    }));
    let cli = export::bridge_launch(&r.plan, &r);
    assert!(cli.contains("\nuv run python -m torch.distributed.run --nproc_per_node=8 --nnodes=1 \\\n  scripts/training/run_recipe.py \\\n"));
    assert!(!cli.contains("CUDA_DEVICE_MAX_CONNECTIONS") && !cli.contains("NODE_RANK"));
    // DP = 8, GBS 64 → 8 microbatches.
    assert!(cli.contains("= 8; 8 microbatches of 1"));
}

#[test]
fn custom_model_gets_a_marked_placeholder_and_its_architecture() {
    let r = report(json!({
        "model": {"name": "my model", "num_layers": 24, "hidden_size": 2048, "num_attention_heads": 16, "num_query_groups": 4,
                  "ffn_hidden_size": 5632, "gated_linear_unit": true, "activation_func": "silu", "add_bias_linear": false,
                  "normalization": "RMSNorm", "position_embedding_type": "rope", "vocab_size": 50000},
        "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 1},
        "training": {"seq_length": 2048, "micro_batch_size": 2, "global_batch_size": 64},
        "parallelism": {"tensor_model_parallel_size": 2, "sequence_parallel": true}
    }));
    assert_eq!(bridge_recipe(&r.plan.model_key), None);
    let cli = export::bridge_launch(&r.plan, &r);
    assert!(cli.contains("  --recipe \"${RECIPE:?set RECIPE to a Megatron Bridge recipe for this model}\" \\\n"));
    assert!(cli.contains("# RECIPE is a placeholder"));
    for o in ["model.num_layers=24", "model.num_query_groups=4", "model.activation_func=silu", "model.normalization=RMSNorm", "model.num_moe_experts=null"] {
        assert!(cli.contains(&format!("  {o} \\\n")), "{o}");
    }
    let py = export::bridge_python(&r.plan, &r);
    assert!(py.contains("cfg.model.vocab_size = 50000\n") && py.contains("cfg.model.activation_func = \"silu\"\n"));
    assert!(export::slurm(&r.plan, &r).contains("#SBATCH --job-name=meshplan-custom\n"));
}

#[test]
fn every_preset_round_trips_through_the_plan_file() {
    let presets = presets::models();
    assert!(presets.len() >= 18);
    for (i, preset) in presets.iter().enumerate() {
        let precision = ["bf16", "fp8", "fp16", "fp32"][i % 4];
        let recompute = ["none", "selective", "full"][i % 3];
        let v = json!({
            "model": preset.key,
            "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 4},
            "training": {"seq_length": 4096, "micro_batch_size": 1, "precision": precision,
                         "recompute_granularity": recompute},
            "parallelism": {"tensor_model_parallel_size": 2, "pipeline_model_parallel_size": 2, "sequence_parallel": true,
                            "virtual_pipeline_model_parallel_size": if i % 2 == 0 { Value::Null } else { json!(2) }}
        });
        let r = report(v);
        let text = export::plan_json(&r.plan);
        let (back, diags) = parse_plan(&serde_json::from_str(&text).unwrap()).unwrap();
        assert_eq!(back, r.plan, "{}", preset.key);
        assert!(diags.is_empty(), "{}: {diags:?}", preset.key);
        assert_eq!(back.model_key, preset.key);
        // Every export of every preset carries the plan's TP 2 and PP 2 in its own syntax (the plan may be invalid;
        // the exports still print), and the slurm and launch exports its 4 nodes.
        let (vpp_py, vpp_cli) = if i % 2 == 0 { ("None", "null") } else { ("2", "2") };
        let expected = [
            (ExportKind::Bridge, vec![
                "cfg.model.tensor_model_parallel_size = 2".to_string(),
                "cfg.model.pipeline_model_parallel_size = 2".into(),
                format!("cfg.model.virtual_pipeline_model_parallel_size = {vpp_py}"),
            ]),
            (ExportKind::BridgeCli, vec![
                "  model.tensor_model_parallel_size=2 \\".into(),
                "  model.pipeline_model_parallel_size=2 \\".into(),
                format!("  model.virtual_pipeline_model_parallel_size={vpp_cli} \\"),
            ]),
            (ExportKind::MegatronLm, vec!["  --tensor-model-parallel-size 2".into(), "  --pipeline-model-parallel-size 2".into()]),
            (ExportKind::Slurm, vec!["#SBATCH --nodes=4".into(), "  model.tensor_model_parallel_size=2 \\".into()]),
            (ExportKind::Plan, vec!["    \"tensor_model_parallel_size\": 2,".into(), "    \"pipeline_model_parallel_size\": 2,".into()]),
        ];
        assert_eq!(expected.each_ref().map(|(k, _)| *k), ExportKind::ALL);
        for (kind, lines) in expected {
            let text = export::export(kind, &r.plan, &r);
            for line in lines {
                assert!(text.lines().any(|l| l.split("  # ").next() == Some(line.as_str())), "{}: {kind:?} lacks {line:?}:\n{text}", preset.key);
            }
        }
        assert!(export::export(ExportKind::BridgeCli, &r.plan, &r).contains(" --nnodes=4 "), "{}", preset.key);
    }
}

#[test]
fn other_plans_round_trip_too() {
    let plans = [
        // Modified preset (custom key, "(modified)" name), explicit ETP, uneven stages, microbatch group.
        json!({"model": {"preset": "deepseek-v3", "num_layers": 62, "moe_layer_freq": 1},
               "cluster": {"gpu": "gb200", "gpus_per_node": 4, "num_nodes": 64, "nvlink_domain_size": 72},
               "training": {"seq_length": 8192, "micro_batch_size": 2, "global_batch_size": 1024, "recompute_granularity": "full",
                            "recompute_method": "block", "recompute_num_layers": 2, "use_distributed_optimizer": true, "precision": "fp8"},
               "parallelism": {"tensor_model_parallel_size": 1, "pipeline_model_parallel_size": 8, "expert_model_parallel_size": 32,
                               "expert_tensor_parallel_size": 1, "num_layers_in_first_pipeline_stage": 5, "num_layers_in_last_pipeline_stage": 9,
                               "microbatch_group_size_per_vp_stage": 8, "order": "tp-cp-ep-pp-dp"}}),
        // A Hugging Face config.
        json!({"model": {"hf_config": {"model_type": "llama", "num_hidden_layers": 16, "hidden_size": 2048, "intermediate_size": 8192,
                                       "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
                                       "tie_word_embeddings": true, "max_position_embeddings": 131072}},
               "cluster": {"gpu": "a100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 1},
               "training": {"seq_length": 2048, "micro_batch_size": 4, "precision": "fp16"},
               "parallelism": {"context_parallel_size": 2}}),
        // Megatron defaults almost everywhere.
        json!({"model": {"num_layers": 12}, "cluster": {"gpu": "l40s"}}),
    ];
    for v in plans {
        let r = report(v);
        let text = export::plan_json(&r.plan);
        let (back, diags) = parse_plan(&serde_json::from_str(&text).unwrap()).unwrap();
        assert_eq!(back, r.plan);
        assert!(diags.iter().all(|d| d.code != "unknown-field" && d.code != "invalid-value"), "{diags:?}");
    }
}

const HOSTILE: &str = "Evil\"'`$(touch /tmp/pwned)`; rm -rf ~ #\n#SBATCH --nodes=999\r\nimport os; os.system('id')\u{2028}\u{202E}gnp.exe\u{0}\u{1b}[31m";

fn hostile_plan(name: &str, order: &str) -> Value {
    json!({
        "model": {"name": name, "num_layers": 8, "hidden_size": 1024, "num_attention_heads": 16},
        "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 2},
        "training": {"seq_length": 2048, "micro_batch_size": 1},
        "parallelism": {"tensor_model_parallel_size": 2, "pipeline_model_parallel_size": 2, "sequence_parallel": true, "order": order}
    })
}

#[test]
fn hostile_names_and_orders_stay_inside_comments() {
    let benign = report(hostile_plan("Benign", "tp-cp-ep-dp-pp"));
    let evil = report(hostile_plan(HOSTILE, &format!("pp-dp-{HOSTILE}")));
    assert_eq!(evil.plan.model_name, HOSTILE);
    for kind in ExportKind::ALL {
        let text = export::export(kind, &evil.plan, &evil);
        if kind == ExportKind::Plan {
            // JSON escapes it, and it reads back byte for byte.
            let (back, _) = parse_plan(&serde_json::from_str(&text).unwrap()).unwrap();
            assert_eq!(back.model_name, HOSTILE);
            assert_eq!(back.parallelism.order, evil.plan.parallelism.order);
            continue;
        }
        // No extra line (a newline in the name would have started a new command or #SBATCH directive)
        // beyond two comments: the note on the unknown order and the warning that the plan is invalid.
        let benign_text = export::export(kind, &benign.plan, &benign);
        assert!(text.lines().count() <= benign_text.lines().count() + 2, "{kind:?}:\n{text}");
        for line in text.lines() {
            let t = line.trim_start();
            for bad in ["pwned", "rm -rf", "os.system", "gnp.exe", "999", "Evil"] {
                if line.contains(bad) {
                    assert!(t.starts_with('#'), "{kind:?}: {bad:?} outside a comment: {line:?}");
                    assert!(!t.starts_with("#SBATCH"), "{kind:?}: injected directive {line:?}");
                }
            }
        }
        assert!(!text.contains(['\r', '\0', '\u{1b}', '\u{2028}', '\u{202E}']), "{kind:?}");
    }
    assert_eq!(comment_text("a\nb\u{2029}c\u{2066}d"), "a b c d");
    assert_eq!(comment_text("\n\t"), "(unnamed)");
}

#[test]
fn invalid_plans_carry_a_warning() {
    // 16 heads cannot split over TP = 3.
    let mut v = hostile_plan("x", "tp-cp-ep-dp-pp");
    v["parallelism"]["tensor_model_parallel_size"] = json!(3);
    let r = report(v);
    assert!(!r.valid);
    for kind in [ExportKind::Bridge, ExportKind::BridgeCli, ExportKind::MegatronLm, ExportKind::Slurm] {
        let text = export::export(kind, &r.plan, &r);
        assert!(text.lines().any(|l| l.starts_with("# WARNING: meshplan finds") && l.contains("heads-not-divisible-by-tp")), "{kind:?}");
    }
}

#[test]
fn kinds_have_stable_keys() {
    let keys: Vec<&str> = ExportKind::ALL.iter().map(|k| k.key()).collect();
    assert_eq!(keys, ["bridge", "bridge-cli", "megatron-lm", "slurm", "plan"]);
    for k in ExportKind::ALL {
        assert_eq!(ExportKind::from_key(k.key()), Some(k));
        assert_eq!(serde_json::to_value(k).unwrap(), json!(k.key()));
    }
    assert_eq!(ExportKind::from_key("all"), None);
}

#[test]
fn overlap_p2p_comm_reaches_every_export() {
    // PP 2 with VPP. Megatron-LM's flag is the store_false --no-overlap-p2p-communication (arguments.py:3118): on is
    // its default and writes nothing, off writes the flag; Bridge's comm_overlap.overlap_p2p_comm either way.
    for on in [true, false] {
        let mut v = llama70b();
        v["parallelism"]["pipeline_model_parallel_size"] = json!(2);
        v["parallelism"]["virtual_pipeline_model_parallel_size"] = json!(2);
        v["parallelism"]["overlap_p2p_comm"] = json!(on);
        let r = report(v);
        let mlm = export::export(ExportKind::MegatronLm, &r.plan, &r);
        assert_eq!(mlm.contains("  --no-overlap-p2p-communication\n"), !on, "{mlm}");
        assert!(!mlm.contains("--overlap-p2p-communication"), "{mlm}");
        let py = if on { "True" } else { "False" };
        assert!(code_lines(&export::export(ExportKind::Bridge, &r.plan, &r)).contains(&format!("cfg.comm_overlap.overlap_p2p_comm = {py}")));
        let file: Value = serde_json::from_str(&export::export(ExportKind::Plan, &r.plan, &r)).unwrap();
        assert_eq!(file["parallelism"]["overlap_p2p_comm"], json!(on));
        assert_eq!(parse_plan(&file).unwrap().0.parallelism.overlap_p2p_comm, Some(on));
    }
}

#[test]
fn a_new_blackwell_gpu_gets_mxfp8_from_its_data_alone() {
    // A GPU added to the catalogue after this code was written: only its data says it is Blackwell with MXFP8.
    let mut v = llama70b();
    v["training"]["precision"] = json!("fp8");
    let (mut plan, _) = parse_plan(&v).unwrap();
    let mut gpu = presets::gpu("h200-sxm-141gb").unwrap().clone();
    gpu.key = "future-blackwell-288gb".into();
    gpu.name = "A future Blackwell GPU".into();
    gpu.generation = "Blackwell".into();
    gpu.fp8_recipe = Some(presets::Fp8Recipe::Mxfp8);
    plan.cluster.gpu = gpu.key.clone();
    plan.gpu = gpu;
    let r = meshplan_core::plan_resolved(&plan, Vec::new());
    // Megatron Bridge's MXFP8 recipe (mixed_precision.py bf16_with_mxfp8_mixed: fp8 e4m3, fp8_recipe mxfp8, FP8
    // parameter gather, grad buffer reused for the MXFP8 all-gather), and Megatron-LM's flags for the same.
    let py = export::bridge_python(&plan, &r);
    assert!(py.contains("cfg.mixed_precision = \"bf16_with_mxfp8_mixed\"\n"), "{py}");
    assert!(py.contains("# fp8 on Blackwell: MXFP8 block scaling\n"), "{py}");
    let lm = export::megatron_lm(&plan, &r);
    assert!(lm.contains("  --fp8-format e4m3\n  --fp8-recipe mxfp8\n  --fp8-param-gather\n  --reuse-grad-buf-for-mxfp8-param-ag\n"), "{lm}");
    // The same GPU said to be per-tensor scaled gets the current-scaling recipe instead.
    let mut plan = plan;
    plan.gpu.fp8_recipe = Some(presets::Fp8Recipe::Tensorwise);
    let lm = export::megatron_lm(&plan, &meshplan_core::plan_resolved(&plan, Vec::new()));
    assert!(lm.contains("  --fp8-format hybrid\n  --fp8-recipe tensorwise\n  --first-last-layers-bf16\n"), "{lm}");
}

#[test]
fn every_gpu_names_its_generation_and_fp8_recipe_with_sources() {
    for g in presets::gpus() {
        assert!(!g.generation.is_empty(), "{}: no generation", g.key);
        for field in ["generation", "fp8_recipe"] {
            assert!(g.sources[field].as_str().is_some_and(|s| s.len() > 20), "{}: no source for {field}", g.key);
        }
        // An FP8 recipe exactly when the GPU has FP8 tensor cores.
        assert_eq!(g.fp8_recipe.is_some(), g.dense_fp8_tflops.is_some(), "{}", g.key);
        // Transformer Engine: MXFP8 needs Blackwell (SM 10.0) tensor cores; Megatron Bridge's Blackwell perf configs use it.
        assert_eq!(g.fp8_recipe == Some(presets::Fp8Recipe::Mxfp8), g.generation == "Blackwell", "{}", g.key);
    }
    let generation = |key: &str| presets::gpu(key).unwrap().generation.as_str();
    assert_eq!(generation("h100-sxm-80gb"), "Hopper");
    assert_eq!(generation("gb200"), "Blackwell");
    assert_eq!(generation("a100-sxm-80gb"), "Ampere");
}

#[test]
fn every_preset_has_its_bridge_recipe_decided_once_with_a_source() {
    let file: Value = serde_json::from_str(include_str!("../data/recipes.json")).unwrap();
    let with: Vec<&str> = file["recipes"].as_array().unwrap().iter().map(|r| r["model"].as_str().unwrap()).collect();
    let without: Vec<&str> = file["without_recipe"].as_array().unwrap().iter().map(|r| r["model"].as_str().unwrap()).collect();
    for m in presets::models() {
        let n = with.iter().chain(&without).filter(|k| **k == m.key).count();
        assert_eq!(n, 1, "{}: listed {n} times in recipes.json", m.key);
    }
    assert_eq!(with.len() + without.len(), presets::models().len(), "recipes.json names a model that is not a preset");
    assert_eq!(presets::bridge_recipes().len(), with.len());
    for r in presets::bridge_recipes() {
        // Written as code (`--recipe NAME`, `from megatron.bridge.recipes import NAME`): a Python identifier only.
        assert!(r.recipe.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'), "{}", r.recipe);
        assert!(r.source.starts_with("src/megatron/bridge/recipes/"), "{}: {}", r.model, r.source);
        assert_eq!(bridge_recipe(&r.model), Some(r.recipe.as_str()));
    }
    // Checked by hand against NVIDIA-NeMo/Megatron-Bridge @ 067f987df03b (llama/llama3.py aliases
    // llama31_70b_pretrain_32gpu_h100_bf16_config as llama31_70b_pretrain_config; gpt/__init__.py does not re-export
    // gpt3_175b_pretrain_config, so GPT-3 keeps the H100 name).
    assert_eq!(bridge_recipe("llama-3.1-70b"), Some("llama31_70b_pretrain_config"));
    assert_eq!(bridge_recipe("gpt3-175b"), Some("gpt3_175b_pretrain_32gpu_h100_bf16_config"));
    assert_eq!(bridge_recipe("mixtral-8x7b"), None);
}

/// DeepSeek-V3 on 256 GB300 with Bridge's perf-recipe layout (measured_memory.json m26-020), VPP left for the layout.
fn deepseek_layout(layout: Value) -> Value {
    json!({"model": "deepseek-v3", "cluster": {"gpu": "gb300", "gpus_per_node": 4, "num_nodes": 64},
           "training": {"seq_length": 4096, "micro_batch_size": 2, "global_batch_size": 4096, "precision": "fp4",
                        "use_distributed_optimizer": true, "recompute_granularity": "selective"},
           "parallelism": {"tensor_model_parallel_size": 1, "pipeline_model_parallel_size": 2, "expert_model_parallel_size": 32,
                           "expert_tensor_parallel_size": 1, "pipeline_model_parallel_layout": layout}})
}

#[test]
fn the_layout_is_written_back_as_given() {
    let r = report(deepseek_layout(json!("Et*4|(t*4|)*14tmL")));
    // Bridge: the string as given, the VPP its 16 stages / PP 2 = 8 imply, and the account_for_* settings a layout
    // excludes written off (a recipe could have them on); no note that meshplan plans the split itself.
    let py = export::export(ExportKind::Bridge, &r.plan, &r);
    let lines = code_lines(&py);
    for want in [
        "cfg.model.virtual_pipeline_model_parallel_size = 8",
        "cfg.model.pipeline_model_parallel_layout = \"Et*4|(t*4|)*14tmL\"",
        "cfg.model.account_for_embedding_in_pipeline_split = False",
        "cfg.model.account_for_loss_in_pipeline_split = False",
    ] {
        assert!(lines.iter().any(|l| l == want), "{want} not in\n{py}");
    }
    assert!(!py.contains("meshplan plans the split"), "{py}");
    // The launch command quotes the string for Hydra (whose grammar reads `(`, `)` and `*`) and for the shell.
    let cli = export::export(ExportKind::BridgeCli, &r.plan, &r);
    assert!(command_lines(&cli).iter().any(|l| l == "'model.pipeline_model_parallel_layout=\"Et*4|(t*4|)*14tmL\"'"), "{cli}");
    // Megatron-LM: --pipeline-model-parallel-layout, and no --num-virtual-stages-per-pipeline-rank (validate_args
    // takes at most one of them; the layout sets VPP).
    let mlm = export::export(ExportKind::MegatronLm, &r.plan, &r);
    assert!(mlm.contains("\n  --pipeline-model-parallel-layout 'Et*4|(t*4|)*14tmL'\n"), "{mlm}");
    assert!(!mlm.contains("--num-virtual-stages-per-pipeline-rank"), "{mlm}");
}

#[test]
fn a_list_layout_is_written_as_a_list() {
    // Moonlight-style list form for DeepSeek-V3's 61 layers on PP 2: [E + t×31, t×30 + m + L] (names normalized).
    let first: Vec<&str> = [" Embedding"].into_iter().chain(std::iter::repeat_n("decoder", 31)).collect();
    let last: Vec<&str> = std::iter::repeat_n("DECODER", 30).chain(["mtp", "loss"]).collect();
    let r = report(deepseek_layout(json!([first, last])));
    assert!(r.diagnostics.iter().all(|d| !d.code.as_str().starts_with("layout")), "{:?}", r.diagnostics);
    let py = export::export(ExportKind::Bridge, &r.plan, &r);
    let t = |n: usize| vec!["\"decoder\""; n].join(", ");
    let want = format!("cfg.model.pipeline_model_parallel_layout = [[\"embedding\", {}], [{}, \"mtp\", \"loss\"]]", t(31), t(30));
    assert!(code_lines(&py).contains(&want), "{py}");
    let cli = export::export(ExportKind::BridgeCli, &r.plan, &r);
    let d = |n: usize| vec!["decoder"; n].join(",");
    assert!(cli.contains(&format!("model.pipeline_model_parallel_layout=[[embedding,{}],[{},mtp,loss]]", d(31), d(30))), "{cli}");
    // Megatron-LM takes the string form only: the same layout in letters.
    let mlm = export::export(ExportKind::MegatronLm, &r.plan, &r);
    assert!(mlm.contains(&format!("--pipeline-model-parallel-layout 'E{}|{}mL'", "t".repeat(31), "t".repeat(30))), "{mlm}");
}

#[test]
fn a_layout_megatron_rejects_is_never_written_as_code() {
    // A quote and a newline in the layout (layout-char): the exports name the problem instead of writing it.
    let r = report(deepseek_layout(json!("Et*4'\n|(t*4|)*14tmL")));
    assert!(r.diagnostics.iter().any(|d| d.code == "layout-char"));
    for kind in ExportKind::ALL {
        let text = export::export(kind, &r.plan, &r);
        if kind != ExportKind::Plan {
            assert!(!text.contains("t*4'"), "{kind:?}:\n{text}");
        }
    }
    let py = export::export(ExportKind::Bridge, &r.plan, &r);
    assert!(py.contains("cfg.model.pipeline_model_parallel_layout = None  # the plan's layout has characters Megatron rejects"), "{py}");
}

#[test]
fn layouts_and_accounted_splits_round_trip_through_the_plan_file() {
    for v in [
        deepseek_layout(json!("Et*4|(t*4|)*14tmL")),
        deepseek_layout(json!([["embedding", "decoder"], ["decoder", "loss"]])),
        json!({"model": "llama-3.1-8b", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 1},
               "parallelism": {"pipeline_model_parallel_size": 2, "account_for_embedding_in_pipeline_split": true,
                               "account_for_loss_in_pipeline_split": true}}),
    ] {
        let r = report(v);
        let text = export::export(ExportKind::Plan, &r.plan, &r);
        let (back, _) = parse_plan(&serde_json::from_str(&text).unwrap()).unwrap();
        assert_eq!(back, r.plan, "{text}");
    }
    // Llama-3.1-8B, 32 layers + embedding + loss = 34 over PP 2: 17 per stage, so 16 decoder layers each.
    let r = report(json!({"model": "llama-3.1-8b", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 1},
                          "parallelism": {"pipeline_model_parallel_size": 2, "account_for_embedding_in_pipeline_split": true,
                                          "account_for_loss_in_pipeline_split": true}}));
    assert_eq!(r.derived.layers_per_stage, [16, 16]);
    let mlm = export::export(ExportKind::MegatronLm, &r.plan, &r);
    assert!(mlm.contains("\n  --account-for-embedding-in-pipeline-split\n  --account-for-loss-in-pipeline-split\n"), "{mlm}");
}

#[test]
fn heterogeneous_layers_are_written_in_megatron_core_keys() {
    // Llama-3.3-Nemotron-Super-49B (no Bridge recipe: the Python export writes the architecture): its blocks as
    // Megatron-Core's HeterogeneousTransformerConfig reads them (attention num_query_groups, ffn ffn_hidden_size), which
    // read back give the same 49,867,145,216 parameters; Megatron-LM's export says how to pass them as a file.
    let r = plan_value(&json!({"model": "llama-3.3-nemotron-super-49b", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 1},
                               "training": {"seq_length": 4096, "global_batch_size": 64}})).unwrap();
    let py = export::export(ExportKind::Bridge, &r.plan, &r);
    let line = py.lines().find(|l| l.starts_with("cfg.model.heterogeneous_layers_config_encoded_json = '")).expect("the blocks are written");
    let text = line.split_once(" = '").unwrap().1.trim_end_matches('\'');
    let blocks: Value = serde_json::from_str(text).unwrap();
    let list = blocks["block_configs"].as_array().unwrap();
    assert_eq!(list.len(), 80);
    let layers = r.plan.model.heterogeneous_layers.as_ref().unwrap();
    for (b, l) in list.iter().zip(layers) {
        assert_eq!(b["attention"]["no_op"], json!(!l.attention));
        assert_eq!(b["ffn"]["ffn_hidden_size"], json!(l.ffn_hidden_size));
    }
    let mut model = serde_json::to_value(&r.plan.model).unwrap();
    model.as_object_mut().unwrap().remove("heterogeneous_layers");
    model["heterogeneous_layers_config_encoded_json"] = json!(text);
    let back = plan_value(&json!({"model": model, "cluster": {"gpu": "h100-sxm-80gb"}})).unwrap();
    assert_eq!(back.derived.total_parameters, 49_867_145_216);
    assert!(export::export(ExportKind::BridgeCli, &r.plan, &r).contains("heterogeneous_layers_config_encoded_json (the per-layer blocks) cannot be a launch override"));
    let lm = export::export(ExportKind::MegatronLm, &r.plan, &r);
    assert!(lm.contains("add --heterogeneous-layers-config-path heterogeneous_layers.json") && lm.contains("{\"block_configs\":["), "{lm}");
}

/// Transformer Engine's fused loss: the Megatron-LM flags carry it as the plan runs it, and say that Megatron-LM's
/// validate_args refuses it (arguments.py l.1697-1702) and what to launch instead.
#[test]
fn megatron_lm_flags_say_megatron_lm_refuses_the_te_loss() {
    let mut plan = llama70b();
    plan["training"]["cross_entropy_loss_fusion"] = json!(true);
    plan["training"]["cross_entropy_fusion_impl"] = json!("te");
    let r = report(plan);
    let text = export::export(ExportKind::MegatronLm, &r.plan, &r);
    assert!(text.lines().any(|l| l.trim() == "--cross-entropy-fusion-impl te"), "{text}");
    assert!(text.contains("Megatron-LM's validate_args refuses it") && text.contains("launch with --cross-entropy-fusion-impl native"), "{text}");
    // Megatron-Core's own fused kernel: no note.
    let mut plan = llama70b();
    plan["training"]["cross_entropy_loss_fusion"] = json!(true);
    let r = report(plan);
    assert!(!export::export(ExportKind::MegatronLm, &r.plan, &r).contains("refuses it"));
}
