//! The model's widths against tensor parallelism: attention heads and query groups, the dense and shared-expert
//! FFN, the expert FFN against ETP, and the vocabulary.

use super::fixes::{nearest_divisor, nearest_valid_etp, nearest_valid_tp};
use super::findings::{ETP, Findings, TP, d};
use crate::Code;
use crate::derive::Derived;
use crate::model::{Ffn, Mixer};
use crate::plan::Plan;

/// The TP nearest to the plan's that passes every TP width rule: one pick for all of them, so applying any of their
/// fixes clears them all.
fn nearest_width_tp(p: &Plan) -> u64 {
    nearest_valid_tp(p, |_| true, false).unwrap_or(1)
}

/// heads-not-divisible-by-tp, query-groups-not-divisible-by-tp, query-groups-replicated,
/// heads-not-divisible-by-query-groups.
pub fn attention(p: &Plan, out: &mut impl Findings) {
    let (m, tp) = (&p.model, p.parallelism.tp());
    if m.num_attention_heads % tp != 0 {
        out.add(Code::HeadsNotDivisibleByTp, |code| {
            let width_tp = nearest_width_tp(p);
            d(
                code,
                format!("num_attention_heads = {} is not divisible by tensor_model_parallel_size = {tp}", m.num_attention_heads),
                format!("set tensor_model_parallel_size to {width_tp}, the nearest TP that divides {} and passes the other TP width rules", m.num_attention_heads),
            )
            .with_apply(TP, width_tp)
        });
    }
    if !m.multi_latent_attention {
        // megatron/core/transformer/transformer_config.py __post_init__: num_query_groups must be a multiple OR a
        // divisor of TP. With fewer groups than TP, attention.py gives each rank one KV group (replicated
        // TP/num_query_groups times) and all-gathers then slices the QKV output.
        let g = m.num_query_groups.max(1);
        if g % tp != 0 && tp % g != 0 {
            let good = nearest_width_tp(p);
            out.add(Code::QueryGroupsNotDivisibleByTp, |code|
                d(
                    code,
                    format!(
                        "num_query_groups = {g} is neither a multiple nor a divisor of tensor_model_parallel_size = {tp} ({g} mod {tp} = {}, {tp} mod {g} = {})",
                        g % tp,
                        tp % g
                    ),
                    format!(
                        "set tensor_model_parallel_size to {good}, the nearest TP that divides num_attention_heads = {} and is a multiple or divisor of {g}",
                        m.num_attention_heads
                    ),
                )
                .with_apply(TP, good),
            );
        } else if g < tp && m.num_attention_heads % tp == 0 {
            out.add(Code::QueryGroupsReplicated, |code| d(
                code,
                format!(
                    "num_query_groups = {g} < tensor_model_parallel_size = {tp}: megatron-core gives each TP rank one KV head, so every KV head is replicated on {tp}/{g} = {} ranks (QKV is all-gathered, then sliced)",
                    tp / g
                ),
                format!("nothing to fix; KV-projection compute and the KV cache are duplicated {}×, and cp_comm_type a2a cannot split one KV head per rank over CP > 1", tp / g),
            ));
        }
        if m.num_attention_heads % m.num_query_groups.max(1) != 0 {
            out.add(Code::HeadsNotDivisibleByQueryGroups, |code| d(
                code,
                format!("num_attention_heads = {} is not a multiple of num_query_groups = {}", m.num_attention_heads, m.num_query_groups),
                format!("set num_query_groups to a divisor of {} (e.g. {})", m.num_attention_heads, nearest_divisor(m.num_attention_heads, m.num_query_groups)),
            ));
        }
    }
}

/// heads-not-divisible-by-tp and query-groups-not-divisible-by-tp for the window layers' own attention shape, and
/// sliding-attention-setting-unused where the model has no such layers
/// (`sliding_attention_setting`, Step-3.5): Megatron builds those layers' attention with their heads and groups, which
/// TP splits as it splits the model's.
// Source: Megatron Bridge step35_provider.py Step35DecoderLayer (a deep copy of the config with the window layer's
// num_attention_heads / num_query_groups, checked by the same TransformerConfig / attention.py splits).
pub fn window_attention(p: &Plan, out: &mut impl Findings) {
    let (m, tp) = (&p.model, p.parallelism.tp());
    if !m.window_shape_differs() {
        if m.sliding_attention_setting.is_some() {
            out.add(Code::SlidingAttentionSettingUnused, |code| {
                let why = if m.window_size.is_none() { "the model has no sliding window (window_size)" } else { "its attention is MLA or Gated DeltaNet" };
                d(code, format!("model.sliding_attention_setting is set, but {why}: it is ignored"), "remove model.sliding_attention_setting, or give window_size ([left, 0]) and window_attn_skip_freq for its window layers".into())
                    .with_apply("model.sliding_attention_setting", serde_json::Value::Null)
            });
        }
        return;
    }
    let w = m.attention_shape(Mixer::WindowAttention);
    let g = w.num_query_groups.max(1);
    if w.num_attention_heads % tp != 0 {
        out.add(Code::HeadsNotDivisibleByTp, |code| {
            let good = nearest_width_tp(p);
            d(
                code,
                format!("the window layers' sliding_attention_setting.num_attention_heads = {} is not divisible by tensor_model_parallel_size = {tp}", w.num_attention_heads),
                format!("set tensor_model_parallel_size to {good}, the nearest TP that divides both attention shapes' heads and passes the other TP width rules"),
            )
            .with_apply(TP, good)
        });
    }
    if g % tp != 0 && tp % g != 0 {
        out.add(Code::QueryGroupsNotDivisibleByTp, |code| {
            let good = nearest_width_tp(p);
            d(
                code,
                format!("the window layers' sliding_attention_setting.num_query_groups = {g} is neither a multiple nor a divisor of tensor_model_parallel_size = {tp}"),
                format!("set tensor_model_parallel_size to {good}, the nearest TP that passes both attention shapes' head and group rules"),
            )
            .with_apply(TP, good)
        });
    }
}

/// ffn-not-divisible-by-tp (dense and shared-expert FFN) and moe-ffn-not-divisible-by-etp.
/// mtp-layer-unavailable: `mtp_layer` names a kind the model does not declare (or the model is hybrid); MTP is then
/// sized like the last decoder layer, as Megatron-Core's default spec builds it.
// Source: megatron/core/models/gpt/gpt_layer_specs.py get_gpt_mtp_block_spec (layer_specs[-1]); Megatron Bridge
// step35_bridge.py _MTPDenseLayerSpecsList (a spec of the model's own kinds, dense).
pub fn mtp_layer(p: &Plan, out: &mut impl Findings) {
    let m = &p.model;
    let Some(want) = m.mtp_layer.filter(|_| !m.mtp_layer_usable()) else { return };
    out.add(Code::MtpLayerUnavailable, |code| {
        let why = if m.hybrid_layer_pattern.is_some() { "the model is hybrid (its MTP pattern gives the MTP layers)".to_string() } else { format!("the model has no {} layers", want.name()) };
        let last = m.mtp_layer_kind().name();
        d(code, format!("model.mtp_layer asks for {} MTP layers, but {why}: it is ignored, each MTP depth is sized like the last decoder layer ({last})", want.name()),
          format!("remove model.mtp_layer, or name a kind the model has (the last decoder layer's: {last})"))
            .with_apply("model.mtp_layer", serde_json::Value::Null)
    });
}

pub fn ffn(p: &Plan, dv: &Derived, out: &mut impl Findings) {
    let (m, tp, etp) = (&p.model, p.parallelism.tp(), p.parallelism.etp());
    let moe = m.is_moe();
    let kinds = dv.kinds(m);
    let shared = m.moe_shared_expert_intermediate_size.filter(|&s| moe && s > 0);
    // Every dense MLP width the layers use (one, or one per kind of heterogeneous layer: each width once), then the
    // shared experts'.
    let table = kinds.table.kinds();
    let first_of_width = |i: usize| {
        let w = m.dense_width(table[i]);
        table[i].ffn == Ffn::Dense && !table[..i].iter().any(|p| p.ffn == Ffn::Dense && m.dense_width(*p) == w)
    };
    let dense = (0..table.len()).filter(|&i| first_of_width(i)).map(|i| ("ffn_hidden_size", Some(m.dense_width(table[i]))));
    for (name, width) in dense.chain([("moe_shared_expert_intermediate_size", shared)]) {
        if let Some(f) = width.filter(|&f| f % tp != 0) {
            out.add(Code::FfnNotDivisibleByTp, |code| {
                let width_tp = nearest_width_tp(p);
                d(
                    code,
                    format!("{name} = {f} is not divisible by tensor_model_parallel_size = {tp} ({f} mod {tp} = {})", f % tp),
                    format!("set tensor_model_parallel_size to {width_tp}, the nearest TP that divides {f} and passes the other TP width rules"),
                )
                .with_apply(TP, width_tp)
            });
        }
    }
    if moe && m.moe_ffn() % etp != 0 {
        let good = nearest_valid_etp(p, |_| true).unwrap_or(1);
        out.add(Code::MoeFfnNotDivisibleByEtp, |code|
            d(
                code,
                format!("moe_ffn_hidden_size = {} is not divisible by expert_tensor_parallel_size = {etp}", m.moe_ffn()),
                format!("set expert_tensor_parallel_size to {good}"),
            )
            .with_apply(ETP, good),
        );
    }

}

/// vocab-not-divisible-by-tp.
pub fn vocab(p: &Plan, dv: &Derived, out: &mut impl Findings) {
    let (m, tp) = (&p.model, p.parallelism.tp());
    // Vocabulary: Megatron-LM always pads (megatron/training/vocab_utils.py calculate_padded_vocab_size, from the
    // tokenizer's size); Megatron Bridge pads only a vocab_size it takes from the tokenizer (setup.py
    // _validate_and_set_vocab_size returns should_pad_vocab = False for a vocab_size the model config sets, as presets
    // and HF conversions do), and VocabParallelEmbedding's divide(vocab, TP) then asserts at model build.
    if m.vocab_size % tp != 0 {
        let padded = dv.padded_vocab_size;
        out.add(Code::VocabNotDivisibleByTp, |code|
            d(
                code,
                format!(
                    "vocab_size = {} is not divisible by tensor_model_parallel_size = {tp} ({} mod {tp} = {}): Megatron-LM pads it to {padded} (a multiple of make_vocab_size_divisible_by·TP = {}·{tp}), which this plan sizes; Megatron Bridge builds a vocab_size set in the model config unpadded (should_pad_vocab = False) and VocabParallelEmbedding fails dividing {} rows over {tp} ranks",
                    m.vocab_size,
                    m.vocab_size,
                    m.vocab_size % tp,
                    m.make_vocab_size_divisible_by,
                    m.vocab_size
                ),
                format!("for Megatron Bridge set vocab_size to the padded {padded} (or cfg.model.should_pad_vocab = True); Megatron-LM needs nothing"),
            )
            .with_apply("model.vocab_size", padded),
        );
    }

}
