//! The shapes that set activation sizes on one GPU (tokens per microbatch and CP rank, TP, SP, ETP, the keys an
//! unfused attention scores): what the activations, the MoE dispatcher, the DSA indexer and the tensor list all size
//! from, below each of them.

use crate::plan::Plan;

/// The shapes that set activation sizes on one GPU.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shape {
    /// Tokens of one microbatch on this CP rank: micro_batch_size · seq_length / CP.
    pub tokens: f64,
    pub tp: f64,
    /// Divisor of the tensors SP shards along the sequence (TP with sequence_parallel, else 1).
    pub sp: f64,
    pub etp: f64,
    /// Keys per query whose scores an unfused core attention materialises (seq_length / CP), 0 with flash or fused
    /// attention; and whether its dropout saves a mask and an output beside the probabilities.
    pub scores_keys: f64,
    pub scores_dropout: bool,
}

impl Shape {
    pub fn of(p: &Plan) -> Shape {
        let par = &p.parallelism;
        let tp = par.tp().max(1) as f64;
        let s = &p.training.settings;
        Shape {
            tokens: p.training.micro_batch_size as f64 * p.training.seq_length as f64 / par.cp().max(1) as f64,
            tp,
            sp: if par.sequence_parallel { tp } else { 1.0 },
            etp: par.etp().max(1) as f64,
            scores_keys: if unfused_attention(p) { p.training.seq_length as f64 / par.cp().max(1) as f64 } else { 0.0 },
            scores_dropout: s.attention_dropout > 0.0,
        }
    }

    /// Tokens of one microbatch held by this rank along the sequence.
    pub fn local(&self) -> f64 {
        self.tokens / self.sp
    }
}

/// Whether core attention runs unfused, materialising the s² scores: Megatron-Core's own DotProductAttention
/// (`transformer_impl` local, `attention_backend` local) or Transformer Engine's UnfusedDotProductAttention
/// (`attention_backend` unfused).
// ML megatron/core/models/gpt/gpt_layer_specs.py get_gpt_layer_local_spec (core_attention=DotProductAttention);
// megatron/core/models/common/language_module/language_module.py l.129-147 (NVTE_UNFUSED_ATTN=1 only for unfused).
pub(crate) fn unfused_attention(p: &Plan) -> bool {
    use crate::settings::{AttnBackend, TransformerImpl};
    let s = &p.training.settings;
    s.transformer_impl == TransformerImpl::Local || matches!(s.attention_backend, AttnBackend::Unfused | AttnBackend::Local)
}
