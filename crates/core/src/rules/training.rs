//! Training settings: the global batch, activation recompute, and precision against the GPU and the GEMM shapes.

use super::fixes::{gcd, lcm, nearest_valid_tp, round_up};
use super::fixes::seq_multiple;
use super::findings::{Findings, GBS, SEQ, TP, d};
use crate::Code;
use crate::derive::Derived;
use crate::model::{Ffn, KindTotals, Mixer, ModelConfig};
use crate::plan::{Plan, Precision, Recompute, RecomputeMethod};

/// gbs-default and gbs-not-divisible: the global batch against micro-batch size × data parallelism.
pub fn batch(p: &Plan, dv: &Derived, out: &mut impl Findings) {
    let (t, pp) = (&p.training, p.parallelism.pp());
    let dp = dv.data_parallel_size;
    let mbs = t.micro_batch_size;
    let gbs = dv.global_batch_size;
    if dp > 0 && t.global_batch_size.is_none() {
        out.add(Code::GbsDefault, |code|
            d(
                code,
                format!(
                    "global_batch_size was not given: Megatron-LM sets it to micro_batch_size·DP = {mbs}·{dp} = {gbs}, one microbatch per step{}; Megatron Bridge asserts that train.global_batch_size is set",
                    if pp > 1 { format!(" (the {pp}-stage pipeline never fills)") } else { String::new() }
                ),
                format!("set global_batch_size explicitly ({gbs} is what this plan uses; a multiple of {gbs} gives more microbatches per step)"),
            )
            .with_apply(GBS, gbs),
        );
    }
    let unit = mbs.saturating_mul(dp);
    if dp > 0 && (gbs % unit != 0 || gbs < unit) {
        let good = round_up(gbs.max(1), unit);
        out.add(Code::GbsNotDivisible, |code|
            d(
                code,
                format!("global_batch_size = {gbs} is not divisible by micro_batch_size × data_parallel_size = {mbs} × {dp} = {unit}"),
                format!("set global_batch_size to {good} (or {}), a multiple of {unit}", good.saturating_sub(unit).max(unit)),
            )
            .with_apply(GBS, good),
        );
    }
}

/// full-recompute-needs-method, selective-recompute-forbids-method and selective-recompute-method-mlm: which
/// recompute settings go together.
pub fn recompute_config(p: &Plan, out: &mut impl Findings) {
    let t = &p.training;
    match t.settings.recompute_granularity {
        Recompute::Full if t.settings.recompute_method.is_none() || t.settings.recompute_num_layers.is_none() => {
            out.add(Code::FullRecomputeNeedsMethod, |code|
                d(
                    code,
                    "recompute_granularity = full needs recompute_method (uniform or block) and recompute_num_layers".into(),
                    "set recompute_method = \"uniform\" and recompute_num_layers = 1 (recompute every layer)".into(),
                )
                .with_apply("training.recompute_method", "uniform")
                .with_apply("training.recompute_num_layers", 1),
            );
        }
        // MCore TransformerConfig raises for recompute_num_layers with selective; only Megatron-LM's validate_args
        // asserts on recompute_method with selective (MCore, and so Bridge, ignore it).
        Recompute::Selective if t.settings.recompute_num_layers.is_some() => {
            out.add(Code::SelectiveRecomputeForbidsMethod, |code|
                d(
                    code,
                    format!(
                        "recompute_granularity = selective with recompute_num_layers = {}: megatron-core requires recompute_num_layers = None{}",
                        t.settings.recompute_num_layers.unwrap_or(0),
                        if t.settings.recompute_method.is_some() { " (and Megatron-LM also rejects recompute_method)" } else { "" }
                    ),
                    "remove recompute_num_layers (and recompute_method)".into(),
                )
                .with_apply("training.recompute_num_layers", serde_json::Value::Null),
            );
        }
        Recompute::Selective if t.settings.recompute_method.is_some() => {
            out.add(Code::SelectiveRecomputeMethodMlm, |code|
                d(
                    code,
                    "recompute_granularity = selective with recompute_method set: Megatron-LM (validate_args) asserts recompute_method is None for selective; megatron-core and Megatron Bridge ignore it".into(),
                    "remove recompute_method".into(),
                )
                .with_apply("training.recompute_method", serde_json::Value::Null),
            );
        }
        _ => {}
    }
}

/// recompute-num-layers-range, recompute-num-layers-clipped, mtp-block-recompute-skipped and
/// mtp-recompute-uniform-needs-one: what full recompute with a method and a layer count runs as.
pub fn recompute_num_layers(p: &Plan, dv: &Derived, split_failed: bool, out: &mut impl Findings) {
    let (m, t, vpp) = (&p.model, &p.training, p.parallelism.vpp());
    let complete = t.settings.recompute_method.is_some() && t.settings.recompute_num_layers.is_some();
    if t.settings.recompute_granularity != Recompute::Full || !complete {
        return;
    }
    // megatron/core/recompute.py: uniform steps layer_idx += recompute_num_layers (0 never advances) and
    // clips the last unit with min(); block recomputes the first recompute_num_layers layers of the chunk,
    // so a larger value recomputes them all. TransformerConfig checks only that the value is set.
    let n = t.settings.recompute_num_layers.unwrap_or(1);
    let uniform = t.settings.recompute_method == Some(RecomputeMethod::Uniform);
    // The largest model chunk of a valid split (a layout's chunks may differ; an even split's are equal).
    let largest_chunk = dv.layers_per_chunk.iter().flatten().max().copied();
    let per_chunk = largest_chunk.or_else(|| dv.layers_per_stage.iter().max().map(|&n| n / vpp.max(1))).filter(|_| !split_failed);
    if n == 0 && uniform {
        out.add(Code::RecomputeNumLayersRange, |code|
            d(
                code,
                "recompute_num_layers = 0 with recompute_method = uniform: megatron-core's uniform loop advances by recompute_num_layers per unit, so the first forward never ends".into(),
                "set recompute_num_layers = 1 (recompute every layer, one checkpoint per layer)".into(),
            )
            .with_apply("training.recompute_num_layers", 1),
        );
    } else if let Some(chunk) = per_chunk.filter(|&c| n > c || n == 0) {
        // checkpointed_forward runs over the layers of one model chunk (len(self.layers)): uniform checkpoints
        // [i, min(i + n, chunk)), block checkpoints layer i when i < n.
        let (what, fix, good) = if n == 0 {
            (
                "block recompute of 0 layers checkpoints no layer (layer_idx < 0 never holds): the run saves every activation, as without recompute, and this plan counts it so".to_string(),
                "set recompute_num_layers to at least 1 (the first layers of each chunk recomputed), or recompute_granularity to \"selective\" / \"none\" to say what runs".to_string(),
                1,
            )
        } else if uniform {
            (
                format!("megatron-core accepts it and clips each unit to the chunk (min(layer_idx + {n}, {chunk})): one checkpoint per chunk, the same as recompute_num_layers = {chunk}"),
                format!("set recompute_num_layers to {chunk}, which is what runs"),
                chunk,
            )
        } else {
            (
                format!("megatron-core accepts it and block recomputes every layer of each chunk (layer_idx < {n} for all {chunk}), the same as recompute_num_layers = {chunk}"),
                format!("set recompute_num_layers to {chunk}, which is what runs"),
                chunk,
            )
        };
        out.add(Code::RecomputeNumLayersClipped, |code|
            d(code, format!("recompute_num_layers = {n} with recompute_method = {} and at most {chunk} layers per model chunk: {what}", if uniform { "uniform" } else { "block" }), fix)
                .with_apply("training.recompute_num_layers", good),
        );
    }
    if m.mtp_num_layers > 0 && t.settings.recompute_method == Some(RecomputeMethod::Block) {
        out.add(Code::MtpBlockRecomputeSkipped, |code|
            d(
                code,
                format!(
                    "mtp_num_layers = {} with full block recompute: megatron-core recomputes the decoder's first {n} layers per chunk but not the MTP layers (\"recompute_method == 'block' is not supported for MTP yet. Skipping recompute.\"); their activations stay whole, as this plan counts them",
                    m.mtp_num_layers
                ),
                "to recompute the MTP layers too use recompute_method = \"uniform\" with recompute_num_layers = 1 (the MTP block requires 1)".into(),
            )
            .with_apply("training.recompute_method", "uniform")
            .with_apply("training.recompute_num_layers", 1),
        );
    }
    if m.mtp_num_layers > 0 && uniform && n != 1 && n != 0 {
        out.add(Code::MtpRecomputeUniformNeedsOne, |code|
            d(
                code,
                format!("mtp_num_layers = {} with full uniform recompute and recompute_num_layers = {n}: the MTP block asserts recompute_num_layers == 1", m.mtp_num_layers),
                "set recompute_num_layers = 1, or recompute_method = \"block\"".into(),
            )
            .with_apply("training.recompute_num_layers", 1),
        );
    }
}

/// precision-unsupported: the GPU has tensor cores for the precision (BF16 needs Ampere or later: the catalogue's
/// `no_bf16_tensor_cores`, e.g. V100, where Megatron runs `--fp16`).
pub fn precision(p: &Plan, dv: &Derived, out: &mut impl Findings) {
    let t = &p.training;
    if t.settings.precision == Precision::Bf16 && p.gpu.no_bf16_tensor_cores {
        out.add(Code::PrecisionUnsupported, |code|
            d(
                code,
                format!("{} has no bf16 tensor cores (BF16 arrived with Ampere)", p.gpu.name),
                "use precision = \"fp16\" (Megatron-LM --fp16, with its loss scaling), or a GPU that supports bf16".into(),
            )
            .with_apply("training.precision", "fp16"),
        );
    }
    let unsupported = match t.settings.precision {
        Precision::Fp8 => p.gpu.dense_fp8_tflops.is_none(),
        Precision::Fp4 => p.gpu.dense_fp4_tflops.is_none(),
        _ => false,
    };
    if unsupported {
        out.add(Code::PrecisionUnsupported, |code|
            d(
                code,
                format!("{} has no {} tensor cores", p.gpu.name, t.settings.precision.key()),
                "use precision = \"bf16\", or a GPU that supports it".into(),
            )
            .with_apply("training.precision", "bf16"),
        );
    }
    fp8_dims(p, dv, out);
}

/// fp8-dims-not-divisible: Transformer Engine's FP8 GEMMs need aligned token counts and rank-local widths.
fn fp8_dims(p: &Plan, dv: &Derived, out: &mut impl Findings) {
    let (m, t, par) = (&p.model, &p.training, &p.parallelism);
    let (tp, cp, seq, mbs) = (par.tp(), par.cp(), t.seq_length, t.micro_batch_size);
    let seq_multiple = seq_multiple(cp, tp, par.sequence_parallel);
    if matches!(t.settings.precision, Precision::Fp8 | Precision::Fp4) {
        // Transformer Engine utils.assert_dim_for_fp8_exec (called by Linear, LayerNormLinear, LayerNormMLP): the
        // product of all dims but the last must be divisible by 8 and the last by 16, for the input and for the
        // weight [out_per_partition, in_per_partition]. The column-parallel input is checked before the SP
        // all-gather, so the token count is seq/CP/(TP with SP)·MBS.
        let t_sp = if par.sequence_parallel && tp > 1 { tp } else { 1 };
        let local = cp.saturating_mul(t_sp);
        if seq % local == 0 {
            let tokens = (seq / local).saturating_mul(mbs);
            if tokens % 8 != 0 {
                let unit = local.saturating_mul(8 / gcd(8, mbs.max(1)));
                let good = round_up(seq, lcm(seq_multiple, unit));
                out.add(Code::Fp8DimsNotDivisible, |code|
                    d(
                        code,
                        format!(
                            "{} GEMMs need the rank-local token count divisible by 8: seq_length/(CP{})·micro_batch_size = {seq}/{local}·{mbs} = {tokens}, and {tokens} mod 8 = {}",
                            t.settings.precision.key(),
                            if t_sp > 1 { "·TP" } else { "" },
                            tokens % 8
                        ),
                        format!("set seq_length to {good} (local tokens {}), or a micro_batch_size that makes the count a multiple of 8", (good / local).saturating_mul(mbs)),
                    )
                    .with_apply(SEQ, good),
                );
            }
        }
        let kinds = dv.kinds(m);
        let bad = fp8_width_failures(m, &kinds, tp);
        if !bad.is_empty() {
            // Nearest TP that every TP width rule accepts and whose local widths align.
            let good_tp = nearest_valid_tp(p, |c| fp8_width_failures(m, &kinds, c).is_empty(), false);
            out.add(Code::Fp8DimsNotDivisible, |code| {
                let list: Vec<String> = bad.iter().map(|(name, v, k)| format!("{name} = {v} (mod {k} = {})", v % k)).collect();
                let diag = d(
                    code,
                    format!("{} GEMM weights need rank-local dims divisible by 16 (input side) and 8 (output side) at TP = {tp}: {}", t.settings.precision.key(), list.join(", ")),
                    match good_tp {
                        Some(g) => format!("set tensor_model_parallel_size to {g}, the nearest TP whose local widths all align"),
                        None => "no TP that divides num_attention_heads aligns every width: pad the model widths to multiples of 16·TP".into(),
                    },
                );
                match good_tp {
                    Some(g) => diag.with_apply(TP, g),
                    None => diag,
                }
            });
        }
    }
}

/// Rank-local GEMM dims that break TE's FP8 alignment at this TP: (what, value, modulus). Only TP-divisible
/// widths are checked (the divisibility rules report the rest); MLA attention and grouped experts are not modelled.
fn fp8_width_failures(m: &ModelConfig, kinds: &KindTotals, tp: u64) -> Vec<(String, u64, u64)> {
    let tp = tp.max(1);
    let mut bad = Vec::new();
    let mut need = |name: String, total: u64, k: u64| {
        if total % tp == 0 && (total / tp) % k != 0 {
            bad.push((name, total / tp, k));
        }
    };
    need("hidden_size".into(), m.hidden_size.saturating_mul(tp), 16);
    for mixer in [Mixer::Attention, Mixer::WindowAttention] {
        if m.multi_latent_attention || kinds.run_where(|k| k.mixer == mixer) == 0 {
            continue;
        }
        let sh = m.attention_shape(mixer);
        let q = sh.num_attention_heads.saturating_mul(sh.kv_channels);
        let qkv = sh.num_attention_heads.saturating_add(2 * sh.num_query_groups).saturating_mul(sh.kv_channels);
        need(format!("linear_qkv out/TP = {qkv}/{tp}"), qkv, 8);
        need(format!("linear_proj in/TP = {q}/{tp}"), q, 16);
    }
    let table = kinds.table.kinds();
    for (i, k) in table.iter().enumerate().filter(|(_, k)| k.ffn == Ffn::Dense) {
        // Each dense MLP width once (heterogeneous layers have several).
        let (glu, w) = (if m.gated_linear_unit { 2 } else { 1 }, m.dense_width(*k));
        if table[..i].iter().any(|p| p.ffn == Ffn::Dense && m.dense_width(*p) == w) {
            continue;
        }
        need(format!("linear_fc1 out/TP = {}/{tp}", glu * w), glu * w, 8);
        need(format!("linear_fc2 in/TP = {w}/{tp}"), w, 16);
    }
    if let Some(s) = m.moe_shared_expert_intermediate_size.filter(|&s| m.is_moe() && s > 0) {
        need(format!("shared expert fc2 in/TP = {s}/{tp}"), s, 16);
    }
    bad
}

