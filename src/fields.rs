//! What each editable field is: its plan path, a short label, and what Megatron does with it
//! (shown as the control's tooltip, which also names the Megatron field).

pub struct FieldInfo {
    pub path: &'static str,
    pub label: &'static str,
    pub help: &'static str,
}

const fn f(path: &'static str, label: &'static str, help: &'static str) -> FieldInfo {
    FieldInfo { path, label, help }
}

impl FieldInfo {
    /// The Megatron field name: the last part of the path.
    pub fn megatron(&self) -> &'static str {
        self.path.rsplit('.').next().unwrap_or(self.path)
    }
    pub fn tooltip(&self) -> String {
        format!("Megatron: {} — {}", self.megatron(), self.help)
    }
}

pub const MODEL: &[FieldInfo] = &[
    f("model.num_layers", "Layers", "number of transformer layers"),
    f("model.hidden_size", "Hidden size", "width of the residual stream"),
    f("model.ffn_hidden_size", "FFN hidden size", "width of the dense MLP"),
    f("model.num_attention_heads", "Attention heads", "query heads per layer; must divide by TP"),
    f("model.num_query_groups", "Query groups (KV heads)", "grouped-query attention KV heads; must divide by TP"),
    f("model.kv_channels", "Head dim", "channels per attention head (kv_channels)"),
    f("model.vocab_size", "Vocabulary", "tokenizer vocabulary, padded to make_vocab_size_divisible_by × TP"),
    f("model.make_vocab_size_divisible_by", "Vocab padding", "the embedding is padded to a multiple of this × TP"),
    f("model.share_embeddings_and_output_weights", "Tied embeddings", "input embedding and output layer share one weight"),
    f("model.gated_linear_unit", "Gated MLP (SwiGLU)", "the MLP has a gate projection (three matrices)"),
    f("model.num_moe_experts", "Experts", "routed experts per MoE layer (empty: a dense model)"),
    f("model.moe_router_topk", "Top-k", "experts each token is routed to"),
    f("model.moe_ffn_hidden_size", "Expert FFN size", "width of each routed expert's MLP"),
    f("model.moe_shared_expert_intermediate_size", "Shared expert size", "width of the shared experts' MLP"),
    f("model.moe_layer_freq", "MoE layer frequency", "1 = every layer is MoE; or a 0/1 list per layer"),
    f("model.multi_latent_attention", "Multi-latent attention", "DeepSeek-style MLA instead of GQA"),
    f("model.q_lora_rank", "Q LoRA rank", "MLA query compression rank"),
    f("model.kv_lora_rank", "KV LoRA rank", "MLA key/value compression rank"),
    f("model.qk_head_dim", "QK head dim", "MLA query/key head dim without RoPE"),
    f("model.qk_pos_emb_head_dim", "QK RoPE dim", "MLA rotary part of the query/key head"),
    f("model.v_head_dim", "V head dim", "MLA value head dim"),
    f("model.mtp_num_layers", "MTP layers", "multi-token-prediction modules on the last stage"),
];

pub const CLUSTER: &[FieldInfo] = &[
    f("cluster.gpus_per_node", "GPUs per node", "torchrun --nproc_per_node; slurm --gpus-per-node"),
    f("cluster.num_nodes", "Nodes", "torchrun --nnodes; slurm --nodes"),
    f("cluster.nvlink_domain_size", "NVLink domain", "GPUs that share one NVLink/NVSwitch fabric (72 on NVL72)"),
];

pub const TRAINING: &[FieldInfo] = &[
    f("training.seq_length", "Sequence length", "tokens per sample (seq_length)"),
    f("training.micro_batch_size", "Micro-batch", "samples per GPU per forward/backward (micro_batch_size)"),
    f("training.global_batch_size", "Global batch", "samples per optimizer step; a multiple of micro-batch × DP"),
    f("training.recompute_num_layers", "Recompute layers", "with full recompute: layers per recompute unit"),
];

pub const PARALLELISM: &[FieldInfo] = &[
    f("parallelism.tensor_model_parallel_size", "TP", "tensor parallelism: splits every layer's matrices; keep it inside an NVLink domain"),
    f("parallelism.pipeline_model_parallel_size", "PP", "pipeline parallelism: splits the layers into stages"),
    f("parallelism.virtual_pipeline_model_parallel_size", "VPP", "interleaved schedule: model chunks per pipeline rank (shrinks the bubble)"),
    f("parallelism.context_parallel_size", "CP", "context parallelism: splits the sequence; seq_length must divide by 2·CP"),
    f("parallelism.expert_model_parallel_size", "EP", "expert parallelism: spreads routed experts over GPUs (MoE only)"),
    f("parallelism.expert_tensor_parallel_size", "ETP", "expert tensor parallelism: splits each expert; defaults to TP"),
    f("parallelism.num_layers_in_first_pipeline_stage", "First-stage layers", "uneven split: layers on pipeline stage 0"),
    f("parallelism.num_layers_in_last_pipeline_stage", "Last-stage layers", "uneven split: layers on the last pipeline stage"),
];

/// Megatron-Core's explicit split; the help restates TransformerConfig.pipeline_model_parallel_layout's docstring.
pub const LAYOUT: FieldInfo = f(
    "parallelism.pipeline_model_parallel_layout",
    "Pipeline layout",
    "explicit split: E embedding, t decoder layer, m MTP layer, L loss, | between stages; (…)*n and x*n repeat, commas are \
     ignored. Stage i goes to pipeline rank i mod PP, virtual chunk i div PP, so VPP = stages / PP. \
     E.g. Et*3|(tt|)*29,m|L (DeepSeek-V3 on PP 16). A JSON list of stage lists ([[\"embedding\", \"decoder\"], …]) is the list form",
);
pub const ACCOUNT_EMBEDDING: FieldInfo = f(
    "parallelism.account_for_embedding_in_pipeline_split",
    "Embedding counts as a layer",
    "the embedding takes one layer's place in the even split: the first stage builds one decoder layer fewer",
);
pub const ACCOUNT_LOSS: FieldInfo = f(
    "parallelism.account_for_loss_in_pipeline_split",
    "Loss counts as a layer",
    "the loss takes one layer's place in the even split: the last stage builds one decoder layer fewer",
);
pub const SEQUENCE_PARALLEL: FieldInfo =
    f("parallelism.sequence_parallel", "Sequence parallel", "shards LayerNorm/dropout activations over TP; needs TP > 1");
pub const ORDER: FieldInfo =
    f("parallelism.order", "Rank order", "the order in which Megatron-Core lays the dimensions over ranks, fastest first");
pub const DISTRIBUTED_OPTIMIZER: FieldInfo =
    f("training.use_distributed_optimizer", "Distributed optimizer", "shards optimizer states over data-parallel ranks");
pub const RECOMPUTE: FieldInfo =
    f("training.recompute_granularity", "Recompute", "activation recomputation: none, selective (attention core) or full");
pub const PRECISION: FieldInfo = f("training.precision", "Precision", "bf16, fp16, fp8 or fp4 training (--bf16, --fp8-format …)");
pub const GPU: FieldInfo = f("cluster.gpu", "GPU", "the accelerator; sets memory, speeds and the NVLink domain");
