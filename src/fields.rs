//! What each editable field is: its plan path, a short label, and what Megatron does with it
//! (shown as the control's tooltip, which also names the Megatron field). The parallelism fields are the core's
//! parallelism table's rows ([`meshplan_core::parallelism::PARALLELISM`]), one each, in its order.

use meshplan_core::parallelism::{PARALLELISM as PARALLELISM_ROWS, ParSetting};

#[derive(Clone, Copy)]
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

const fn of_row(r: &ParSetting) -> FieldInfo {
    f(r.path, r.label, r.help)
}

/// The parallelism table's rows as fields, row for row.
const fn parallelism_fields<const N: usize>() -> [FieldInfo; N] {
    let mut out = [f("", "", ""); N];
    let mut i = 0;
    while i < N {
        out[i] = of_row(&PARALLELISM_ROWS[i]);
        i += 1;
    }
    out
}

/// Every row of the parallelism table, in its order (the Parallelism panel picks each row's control by its kind).
pub static PARALLELISM: [FieldInfo; PARALLELISM_ROWS.len()] = parallelism_fields();

pub const DISTRIBUTED_OPTIMIZER: FieldInfo =
    f("training.use_distributed_optimizer", "Distributed optimizer", "shards optimizer states over data-parallel ranks");
pub const RECOMPUTE: FieldInfo =
    f("training.recompute_granularity", "Recompute", "activation recomputation: none, selective (attention core) or full");
pub const PRECISION: FieldInfo = f("training.precision", "Precision", "bf16, fp16, fp8 or fp4 training (--bf16, --fp8-format …)");
pub const GPU: FieldInfo = f("cluster.gpu", "GPU", "the accelerator; sets memory, speeds and the NVLink domain");

/// Every field the page edits: the model's, the cluster's, the training's, the parallelism table's and the selects.
pub fn all() -> impl Iterator<Item = &'static FieldInfo> {
    let selects: [&'static FieldInfo; 4] = [&GPU, &RECOMPUTE, &PRECISION, &DISTRIBUTED_OPTIMIZER];
    MODEL.iter().chain(CLUSTER).chain(TRAINING).chain(PARALLELISM.iter()).chain(selects)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parallelism_fields_are_the_core_table_row_for_row() {
        let paths: Vec<&str> = PARALLELISM.iter().map(|f| f.path).collect();
        let rows: Vec<&str> = PARALLELISM_ROWS.iter().map(|r| r.path).collect();
        assert_eq!(paths, rows);
        // The labels and tooltips the panel showed before the table (TP … ETP, the stage sizes, the switches).
        let by_path = |p: &str| PARALLELISM.iter().find(|f| f.path == p).unwrap();
        assert_eq!(by_path("parallelism.expert_tensor_parallel_size").label, "ETP");
        assert_eq!(
            by_path("parallelism.sequence_parallel").tooltip(),
            "Megatron: sequence_parallel — shards LayerNorm/dropout activations over TP; needs TP > 1"
        );
        assert_eq!(by_path("parallelism.order").label, "Rank order");
    }
}
