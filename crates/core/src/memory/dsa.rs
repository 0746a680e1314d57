//! What the DeepSeek Sparse Attention indexer saves per attention layer and microbatch (beside the MLA attention's own
//! tensors, which `activations` counts).
//!
//! The indexer scores every earlier key with `dsa_indexer_n_heads` heads of `dsa_indexer_head_dim` and keeps the
//! `dsa_indexer_topk` best per query; the sparse attention's backward reads those indices (int64, torch.topk).
//! Without an indexer loss (`dsa_indexer_loss_coeff` unset or 0, Megatron-Core's default) the indexer runs under
//! `torch.no_grad()` and its detached inputs leave nothing else saved. With a loss it trains: its forward runs with
//! autograd on detached copies of the hidden states `x` and the query latent `qr`, and FusedDSAIndexerLoss saves
//! q [s, b, heads·dim], weights [s, b, heads] and k [s_kv, b, dim] (k gathered over CP: every key of the sequence)
//! plus the main attention's query and key (detached views of tensors flash attention already saves: no new bytes);
//! linear_wk / linear_weights_proj save x and linear_wq_b saves qr, new copies only when sequence parallelism
//! gathered them over TP (the indexer's linears are "duplicated", whole on every TP rank); k_norm saves its input.
//! Selective `core_attn` recompute checkpoints DSAttention whole (the indexer is inside it) and full recompute the
//! whole layer: then nothing of this is kept.
// Source: megatron/core/transformer/experimental_attention_variant/dsa.py (NVIDIA/Megatron-LM@d98e8a64ddf3):
// DSAttention.forward (x, qr detached; torch.no_grad() unless training with dsa_indexer_loss_coeff > 0; k gathered
// over CP), DSAIndexer.forward_before_topk (SP gather of x and qr, linear_wq_b, linear_wk, k_norm,
// linear_weights_proj), FusedDSAIndexerLoss.forward (save_for_backward(q, weights, k, query, key, topk_indices));
// multi_latent_attention.py (checkpoint_core_attention wraps the core attention, DSAttention).

use super::shape::Shape;
use crate::plan::{Plan, Recompute};
use crate::settings::RecomputeModule;

/// Bytes one attention layer's indexer leaves saved for one microbatch on one GPU (0 without DSA).
pub(crate) fn bytes_per_layer(p: &Plan, sh: &Shape) -> f64 {
    let m = &p.model;
    let Some((heads, dim, topk)) = m.dsa() else { return 0.0 };
    let s = &p.training.settings;
    if s.recompute_granularity == Recompute::Full || s.recompute_modules_run().contains(&RecomputeModule::CoreAttn) {
        return 0.0;
    }
    let (heads, dim) = (heads as f64, dim as f64);
    // This CP rank's query rows of one microbatch (every row on each TP rank: the indexer is not split over TP).
    let rows = sh.tokens;
    let seq = p.training.seq_length as f64;
    let keys = p.training.micro_batch_size as f64 * seq;
    // The top-k indices [b, rows, min(topk, s)], int64.
    let indices = rows * (topk as f64).min(seq) * 8.0;
    if m.dsa_indexer_loss_coeff.unwrap_or(0.0) <= 0.0 {
        return indices;
    }
    // bf16: q, weights, the k_norm input, and k over every key of the sequence.
    let own = 2.0 * (rows * (heads * dim + heads + dim) + keys * dim);
    // The SP-gathered copies of x (h) and qr (q_lora_rank, or h without a query latent).
    let gathered = if sh.sp > 1.0 { 2.0 * rows * (m.hidden_size + m.q_lora_rank.unwrap_or(m.hidden_size)) as f64 } else { 0.0 };
    indices + own + gathered
}
