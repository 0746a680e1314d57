//! Where each plan field that is not a row of the settings table comes from in the tools' own spellings (the settings
//! rows carry their Bridge paths and Megatron-LM flags themselves, [`crate::settings::SETTINGS`]): the parallel layout
//! (the rows of [`crate::parallelism::PARALLELISM`], whose names this module reads), the batch ([`BATCH`]), and the
//! model's TransformerConfig fields as Megatron-LM's flags spell them ([`MODEL`]). The exports write every such name
//! through [`bridge`], [`flag`] and [`model_flag`], and the imports read them back through [`by_flag`] and
//! [`by_bridge`]; the round-trip tests (`tests/imports.rs`, `tests/parallelism_table.rs`) hold every export to reading
//! back as the same plan.
//!
//! It sits above `parallelism` (the table it reads) and below `export` and `imports`.

pub use crate::parallelism::{Arg, Name};
use crate::parallelism::PARALLELISM_DOCS;

const fn n(plan: &'static str, bridge: &'static [&'static str], mlm: Option<(&'static str, Arg)>) -> Name {
    Name { plan, bridge, mlm }
}

use Arg::{Flag, FlagFalse, Value};

/// The batch.
// Sources: Megatron-LM megatron/training/arguments.py (--seq-length is a literal add_argument name; --micro-batch-size
// and --global-batch-size are generated from TrainingConfig); Bridge training/config.py (TrainingConfig, dataset
// seq_length).
pub const BATCH: &[Name] = &[
    n("training.micro_batch_size", &["train.micro_batch_size"], Some(("--micro-batch-size", Value))),
    n("training.global_batch_size", &["train.global_batch_size"], Some(("--global-batch-size", Value))),
    n("training.seq_length", &["dataset.seq_length", "model.seq_length", "dataset.sequence_length"], Some(("--seq-length", Value))),
];

/// The model's Megatron-LM flags (Bridge spells these `model.<field>`, the plan's own names).
// Source: export.rs megatron_lm_model and layer_kind_fields (each flag checked there against Megatron-LM
// arguments.py / ArgumentGroupFactory); --use-rotary-position-embeddings and --no-position-embedding are the older
// spellings arguments.py still maps onto position_embedding_type.
pub const MODEL: &[Name] = &[
    n("model.num_layers", &[], Some(("--num-layers", Value))),
    n("model.hidden_size", &[], Some(("--hidden-size", Value))),
    n("model.ffn_hidden_size", &[], Some(("--ffn-hidden-size", Value))),
    n("model.num_attention_heads", &[], Some(("--num-attention-heads", Value))),
    n("model.num_query_groups", &[], Some(("--num-query-groups", Value))),
    n("model.kv_channels", &[], Some(("--kv-channels", Value))),
    n("model.max_position_embeddings", &[], Some(("--max-position-embeddings", Value))),
    n("model.position_embedding_type", &[], Some(("--position-embedding-type", Value))),
    n("model.normalization", &[], Some(("--normalization", Value))),
    n("model.make_vocab_size_divisible_by", &[], Some(("--make-vocab-size-divisible-by", Value))),
    n("model.vocab_size", &[], Some(("--vocab-size", Value))),
    n("model.add_bias_linear", &[], Some(("--disable-bias-linear", FlagFalse))),
    n("model.add_qkv_bias", &[], Some(("--add-qkv-bias", Flag))),
    n("model.qk_layernorm", &[], Some(("--qk-layernorm", Flag))),
    n("model.share_embeddings_and_output_weights", &[], Some(("--untie-embeddings-and-output-weights", FlagFalse))),
    n("model.num_moe_experts", &[], Some(("--num-experts", Value))),
    n("model.moe_router_topk", &[], Some(("--moe-router-topk", Value))),
    n("model.moe_ffn_hidden_size", &[], Some(("--moe-ffn-hidden-size", Value))),
    n("model.moe_shared_expert_intermediate_size", &[], Some(("--moe-shared-expert-intermediate-size", Value))),
    n("model.moe_layer_freq", &[], Some(("--moe-layer-freq", Value))),
    n("model.moe_router_pre_softmax", &[], Some(("--moe-router-pre-softmax", Flag))),
    n("model.multi_latent_attention", &[], Some(("--multi-latent-attention", Flag))),
    n("model.q_lora_rank", &[], Some(("--q-lora-rank", Value))),
    n("model.kv_lora_rank", &[], Some(("--kv-lora-rank", Value))),
    n("model.qk_head_dim", &[], Some(("--qk-head-dim", Value))),
    n("model.qk_pos_emb_head_dim", &[], Some(("--qk-pos-emb-head-dim", Value))),
    n("model.v_head_dim", &[], Some(("--v-head-dim", Value))),
    n("model.mtp_num_layers", &[], Some(("--mtp-num-layers", Value))),
    n("model.hybrid_layer_pattern", &[], Some(("--hybrid-layer-pattern", Value))),
    n("model.hybrid_override_pattern", &[], Some(("--hybrid-override-pattern", Value))),
    n("model.mamba_state_dim", &[], Some(("--mamba-state-dim", Value))),
    n("model.mamba_head_dim", &[], Some(("--mamba-head-dim", Value))),
    n("model.mamba_num_groups", &[], Some(("--mamba-num-groups", Value))),
    n("model.mamba_num_heads", &[], Some(("--mamba-num-heads", Value))),
    n("model.experimental_attention_variant", &[], Some(("--experimental-attention-variant", Value))),
    n("model.linear_attention_freq", &[], Some(("--linear-attention-freq", Value))),
    n("model.linear_key_head_dim", &[], Some(("--linear-key-head-dim", Value))),
    n("model.linear_value_head_dim", &[], Some(("--linear-value-head-dim", Value))),
    n("model.linear_num_key_heads", &[], Some(("--linear-num-key-heads", Value))),
    n("model.linear_num_value_heads", &[], Some(("--linear-num-value-heads", Value))),
    n("model.linear_conv_kernel_dim", &[], Some(("--linear-conv-kernel-dim", Value))),
    n("model.attention_output_gate", &[], Some(("--attention-output-gate", Flag))),
    n("model.moe_shared_expert_gate", &[], Some(("--moe-shared-expert-gate", Flag))),
    n("model.moe_latent_size", &[], Some(("--moe-latent-size", Value))),
    n("model.mtp_use_repeated_layer", &[], Some(("--mtp-use-repeated-layer", Flag))),
    n("model.softmax_type", &[], Some(("--softmax-type", Value))),
    n("model.window_size", &[], Some(("--window-size", Value))),
    n("model.window_attn_skip_freq", &[], Some(("--window-attn-skip-freq", Value))),
    n("model.dsa_indexer_n_heads", &[], Some(("--dsa-indexer-n-heads", Value))),
    n("model.dsa_indexer_head_dim", &[], Some(("--dsa-indexer-head-dim", Value))),
    n("model.dsa_indexer_topk", &[], Some(("--dsa-indexer-topk", Value))),
    n("model.dsa_indexer_loss_coeff", &[], Some(("--dsa-indexer-loss-coeff", Value))),
    n("model.no_rope_freq", &[], Some(("--no-rope-freq", Value))),
];

/// Every layout and batch name: the parallelism rows', then [`BATCH`].
fn layout_and_batch() -> impl Iterator<Item = &'static Name> {
    PARALLELISM_DOCS.iter().map(|d| &d.name).chain(BATCH)
}

/// The Megatron-LM flag `flag` (with or without its leading dashes, `-` or `_` between words) of a layout, batch or
/// model field.
pub fn by_flag(flag: &str) -> Option<&'static Name> {
    let key = canonical_flag(flag);
    layout_and_batch().chain(MODEL).find(|n| n.mlm.is_some_and(|(f, _)| f == key))
}

/// `--tensor_model_parallel_size`, `tensor-model-parallel-size` → `--tensor-model-parallel-size` (argparse accepts
/// dashes; Megatron's argument dump and some launchers write the underscore spelling).
pub fn canonical_flag(flag: &str) -> String {
    format!("--{}", flag.trim_start_matches('-').replace('_', "-"))
}

/// The Bridge path `path` of a layout or batch field, and its rank among the paths of that field (0 decides).
pub fn by_bridge(path: &str) -> Option<(&'static Name, usize)> {
    layout_and_batch().find_map(|n| n.bridge.iter().position(|b| *b == path).map(|i| (n, i)))
}

/// The deciding Bridge path of the layout or batch field `plan` ("" for a path that is neither, which the round-trip
/// tests would catch).
pub fn bridge(plan: &str) -> &'static str {
    layout_and_batch().find(|n| n.plan == plan).and_then(|n| n.bridge.first().copied()).unwrap_or("")
}

/// The Megatron-LM flag of the layout or batch field `plan` ("" for a path that is neither).
pub fn flag(plan: &str) -> &'static str {
    layout_and_batch().find(|n| n.plan == plan).and_then(|n| n.mlm.map(|(f, _)| f)).unwrap_or("")
}

/// The Megatron-LM flag of the model field `plan` ("" for a field [`MODEL`] does not list, which the export tests
/// catch: every flag the Megatron-LM export writes is read back).
pub fn model_flag(plan: &str) -> &'static str {
    MODEL.iter().find(|n| n.plan == plan).and_then(|n| n.mlm.map(|(f, _)| f)).unwrap_or("")
}

/// A parallelism row's switch (a `store_true` flag / Bridge bool that selects one value of the row, such as
/// `--use-tp-pp-dp-mapping` for the order): the row's plan path and the value the switch selects.
fn switch_where(pick: impl Fn(&crate::parallelism::Switch) -> bool) -> Option<(&'static str, &'static str)> {
    PARALLELISM_DOCS.iter().find_map(|d| d.switch.filter(|s| pick(s)).map(|s| (d.name.plan, s.value)))
}

/// The parallelism switch whose Megatron-LM flag is `flag` (any spelling [`canonical_flag`] reads).
pub fn switch_by_flag(flag: &str) -> Option<(&'static str, &'static str)> {
    let key = canonical_flag(flag);
    switch_where(|s| s.mlm == key)
}

/// The parallelism switch at Bridge path `path`.
pub fn switch_by_bridge(path: &str) -> Option<(&'static str, &'static str)> {
    switch_where(|s| s.bridge == path)
}

/// What wrappers that run Megatron call Megatron's settings, and the Megatron-LM flag or Bridge path each is: a
/// fine-tuning toolkit's environment and argument names and an RL framework's trainer config. A name ending in `.` is
/// a prefix: the rest is a Megatron field (`actor_rollout_ref.actor.megatron.tensor_model_parallel_size`).
// Sources: ms-swift docs "Megatron-SWIFT" command-line parameters (NPROC_PER_NODE / NNODES in the environment of
// `megatron sft|pt`, --max_length the sequence length, --model the Hugging Face id); verl
// verl/trainer/config/ppo_megatron_trainer.yaml (actor_rollout_ref.actor.megatron.*, actor_rollout_ref.model.path,
// trainer.n_gpus_per_node, trainer.nnodes); NVIDIA-NeMo/RL examples/configs/grpo_math_1B_megatron.yaml (policy.model_name,
// policy.train_global_batch_size, policy.train_micro_batch_size, policy.max_total_sequence_length,
// policy.megatron_cfg.*, cluster.gpus_per_node, cluster.num_nodes).
pub const WRAPPERS: &[(&str, &str)] = &[
    ("NPROC_PER_NODE", "--nproc-per-node"),
    ("NNODES", "--nnodes"),
    ("--max-length", "--seq-length"),
    ("--model", "model.hf_model_id"),
    // verl's nested Megatron configs, matched before their section's prefix (verl/trainer/config/engine/megatron.yaml
    // override_transformer_config — TransformerConfig fields, recompute among them — and override_ddp_config;
    // actor.optim.override_optimizer_config, Megatron-Core's OptimizerConfig).
    ("actor_rollout_ref.actor.megatron.override_transformer_config.", "model."),
    ("actor_rollout_ref.actor.megatron.override_ddp_config.", "ddp."),
    ("actor_rollout_ref.actor.optim.override_optimizer_config.", "optimizer."),
    ("actor_rollout_ref.actor.megatron.", "model."),
    ("actor_rollout_ref.model.path", "model.hf_model_id"),
    ("trainer.n_gpus_per_node", "--nproc-per-node"),
    ("trainer.nnodes", "--nnodes"),
    // NeMo-RL's Megatron sections (examples/configs/grpo_math_1B_megatron.yaml: megatron_cfg.optimizer is Megatron-Core's
    // OptimizerConfig, megatron_cfg.distributed_data_parallel_config its DistributedDataParallelConfig).
    ("policy.megatron_cfg.optimizer.", "optimizer."),
    ("policy.megatron_cfg.distributed_data_parallel_config.", "ddp."),
    ("policy.megatron_cfg.", "model."),
    // inclusionAI/AReaL's actor (areal/api/cli_args.py: actor.megatron holds Megatron's names, its ddp section
    // Megatron-Core's DistributedDataParallelConfig).
    ("actor.megatron.ddp.", "ddp."),
    ("actor.megatron.", "model."),
    // alibaba/ROLL's actor (roll/distributed/strategy/megatron_strategy.py: strategy_config holds Megatron's names).
    ("actor_train.strategy_args.strategy_config.", "model."),
    ("policy.model_name", "model.hf_model_id"),
    ("policy.max_total_sequence_length", "dataset.seq_length"),
    ("policy.train_global_batch_size", "train.global_batch_size"),
    ("policy.train_micro_batch_size", "train.micro_batch_size"),
    ("cluster.gpus_per_node", "--nproc-per-node"),
    ("cluster.num_nodes", "--nnodes"),
    // NeMo 2 (`nemo llm pretrain --factory … trainer.strategy.…=…`): nemo/lightning/pytorch/strategies/
    // megatron_strategy.py MegatronStrategy takes Megatron-Core's parallel sizes by their own names and a
    // DistributedDataParallelConfig as `ddp`; the Lightning Trainer's num_nodes and devices; MockDataModule /
    // PreTrainingDataModule's seq_length, micro_batch_size, global_batch_size; the model's TransformerConfig as
    // `model.config`, the OptimizerConfig as `optim.config`; the precision plugin by the mixed-precision recipe's name.
    ("trainer.strategy.ddp.", "ddp."),
    ("trainer.strategy.", "model."),
    ("trainer.num_nodes", "--nnodes"),
    ("trainer.devices", "--nproc-per-node"),
    ("trainer.plugins", "mixed_precision"),
    ("data.seq_length", "dataset.seq_length"),
    ("data.micro_batch_size", "train.micro_batch_size"),
    ("data.global_batch_size", "train.global_batch_size"),
    ("model.config.", "model."),
    ("optim.config.", "optimizer."),
    // NeMo 1 (examples/nlp/language_modeling/conf/megatron_gpt_config.yaml): the batch and sequence under `model`,
    // recompute as activations_checkpoint_*, the linear biases as `bias` (megatron_base_model.py maps them onto
    // TransformerConfig). Its names whose values change too (activation, optim.name, trainer.precision) are
    // `imports::bridge` `nemo1`'s.
    ("model.micro_batch_size", "train.micro_batch_size"),
    ("model.global_batch_size", "train.global_batch_size"),
    ("model.encoder_seq_length", "dataset.seq_length"),
    ("model.activations_checkpoint_granularity", "model.recompute_granularity"),
    ("model.activations_checkpoint_method", "model.recompute_method"),
    ("model.activations_checkpoint_num_layers", "model.recompute_num_layers"),
    ("model.bias", "model.add_bias_linear"),
    // NeMo 1's communication overlaps (megatron_gpt_config.yaml: ub_tp_comm_overlap, defer_embedding_wgrad_compute, and
    // the optimizer's overlap_grad_sync / overlap_param_sync, which megatron_base_model.py passes to Megatron-Core's
    // DistributedDataParallelConfig as overlap_grad_reduce / overlap_param_gather).
    ("model.ub_tp_comm_overlap", "comm_overlap.tp_comm_overlap"),
    ("model.defer_embedding_wgrad_compute", "comm_overlap.defer_embedding_wgrad_compute"),
    ("model.optim.overlap_grad_sync", "ddp.overlap_grad_reduce"),
    ("model.optim.overlap_param_sync", "ddp.overlap_param_gather"),
    // NVIDIA's MLPerf Training implementations (NeMo / Megatron Bridge): a `config_<SYSTEM>_<N>x<G>x<MINIBS>x….sh` exports
    // the run's sizes, which run.sub and the implementation's YAML pass on (mlcommons/training_results_v5.0 and v5.1
    // NVIDIA/benchmarks/llama31_405b, llama31_8b, gpt3: config_DGXH100_64x8x288xtp8pp8cp2.sh, config_common.sh). Their
    // value-changing names (MINIBS per data-parallel rank, FP8 / FP8_HYBRID / FP8_RECIPE, FP4) are `imports::mlm`'s.
    ("DGXNNODES", "--nnodes"),
    ("DGXNGPU", "--nproc-per-node"),
    ("TENSOR_MODEL_PARALLEL", "--tensor-model-parallel-size"),
    ("PIPELINE_MODEL_PARALLEL", "--pipeline-model-parallel-size"),
    ("INTERLEAVED_PIPELINE", "--num-virtual-stages-per-pipeline-rank"),
    ("CONTEXT_PARALLEL", "--context-parallel-size"),
    ("EXPERT_PARALLEL", "--expert-model-parallel-size"),
    ("SEQ_PARALLEL", "--sequence-parallel"),
    ("MICRO_BATCH_SIZE", "--micro-batch-size"),
    ("TP_COMM_OVERLAP", "--tp-comm-overlap"),
    ("USE_DIST_OPTIMIZER", "--use-distributed-optimizer"),
    ("OVERLAP_GRAD_REDUCE", "--overlap-grad-reduce"),
    ("OVERLAP_PARAM_GATHER", "--overlap-param-gather"),
    ("FP8_PARAM_GATHER", "--fp8-param-gather"),
    ("ASYM_PP_EMBED", "--account-for-embedding-in-pipeline-split"),
    ("ASYM_PP_LOSS", "--account-for-loss-in-pipeline-split"),
    ("ACT_CKPT_GRANULARITY", "--recompute-granularity"),
    ("ACT_CKPT_METHOD", "--recompute-method"),
    ("ACT_CKPT_NUM_LAYERS", "--recompute-num-layers"),
];

/// The names only an MLPerf configuration exports: one of them makes the text one (`imports::mlm`).
pub const MLPERF_MARKERS: [&str; 3] = ["DGXNNODES", "DGXNGPU", "MINIBS"];

/// The MLPerf names whose values change on the way to a Megatron setting, read by `imports::mlm`.
pub const MLPERF_VALUES: [&str; 5] = ["MINIBS", "FP8", "FP8_HYBRID", "FP8_RECIPE", "FP4"];

/// Wrappers' switches for settings Megatron-LM has no flag for, and the plan path each sets: LoRA fine-tuning as a
/// toolkit or an RL trainer spells it, and Bridge's `peft` chosen by name (its recipes' `peft="lora"`).
// Sources: ms-swift docs "Megatron-SWIFT" command-line parameters (--train_type full|lora, --lora_rank, default 8);
// verl verl/trainer/config/ppo_megatron_trainer.yaml (actor_rollout_ref.model.lora_rank, 0 = no LoRA); Megatron
// Bridge recipes' finetune functions (peft: "lora" | "dora" | None).
pub const WRAPPER_SETTINGS: &[(&str, &str)] = &[
    ("--train-type", "training.peft"),
    ("--lora-rank", "training.lora_dim"),
    ("actor_rollout_ref.model.lora_rank", "training.lora_dim"),
    ("peft", "training.peft"),
];

/// The plan path a wrapper's switch sets (see [`WRAPPER_SETTINGS`]).
pub fn wrapper_setting(name: &str) -> Option<&'static str> {
    WRAPPER_SETTINGS.iter().find(|(w, _)| *w == name).map(|(_, p)| *p)
}

/// A wrapper's `train_type` / Bridge's `peft` value as the plan's `peft`: LoRA and its variants train adapters on a
/// frozen base (`lora`); `full` and `none` train every parameter.
pub fn peft_value(v: &str) -> Option<&'static str> {
    match v.trim().trim_matches(['"', '\'']).to_ascii_lowercase().as_str() {
        "lora" | "qlora" | "dora" | "lora_ga" | "longlora" | "lora-ga" => Some("lora"),
        "full" | "none" | "null" | "" => Some("none"),
        _ => None,
    }
}

/// A wrapper's name for a Megatron setting (see [`WRAPPERS`]): the Megatron-LM flag or Bridge path it stands for.
pub fn wrapper(name: &str) -> Option<String> {
    WRAPPERS.iter().find_map(|(w, m)| match w.strip_suffix('.') {
        Some(_) => name.strip_prefix(w).map(|rest| format!("{m}{rest}")),
        None => (*w == name).then(|| m.to_string()),
    })
}
