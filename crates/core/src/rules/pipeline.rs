//! Pipeline parallelism: virtual stages, uneven first/last stages, the layer split, and what the interleaved
//! schedule needs of the microbatches.

use super::fixes::nearest_divisor;
use super::pipeline_layout::{self as layout, Shape};
use super::findings::{Findings, GBS, VPP, d};
use crate::derive::Derived;
use crate::pipeline::SplitError;
use crate::plan::Plan;
use crate::{Code, Diagnostic};

/// The smallest microbatch count M' ≥ `mb` the interleaved schedule accepts with group size `group` ≥ `pp`:
/// M' ≥ group and M' mod group ∈ {0} ∪ [pp, group).
pub fn interleaved_microbatches_at_least(mb: u64, group: u64, pp: u64) -> u64 {
    let group = group.max(1);
    let m = mb.max(group);
    let r = m % group;
    if r == 0 || r >= pp {
        m
    } else if pp < group {
        m.saturating_add(pp - r)
    } else {
        m.saturating_add(group - r)
    }
}

/// Uneven first and last stages that make `layers` split over `stages` ≥ 2 pipeline stages as evenly as Megatron-Core
/// allows (`num_layers_in_first/last_pipeline_stage`, the middle stages even: transformer_block.py
/// get_num_layers_to_build): (first, last, middle) with the largest stage as small as it can be, each edge ≥ 1 and the
/// first (which also builds the embedding) taking the odd layer. 61 layers on 16 stages: 14 middle stages of 4, and
/// 61 − 56 = 5 = 3 + 2 at the edges (3 middle layers would leave 19 for the edges, 10 on one: worse).
pub fn uneven_edges(layers: u64, stages: u64) -> Option<(u64, u64, u64)> {
    if stages < 2 || layers < stages {
        return None;
    }
    let middles = stages - 2;
    let per = layers / stages;
    // The middle stages' size near the even share; the edges take the rest.
    [per, per + 1]
        .into_iter()
        .filter_map(|m| {
            let rest = layers.checked_sub(m.checked_mul(middles)?)?;
            let (first, last) = (rest.div_ceil(2), rest / 2);
            (last >= 1 && (middles == 0 || m >= 1)).then_some((first, last, m))
        })
        .min_by_key(|&(f, l, m)| (f.max(l).max(m), f.abs_diff(m)))
}

/// The rule a failing layer split breaks.
pub fn split_code(e: &SplitError) -> Code {
    match e {
        SplitError::Uneven { .. } => Code::LayersNotDivisibleByPp,
        SplitError::VirtualUneven { .. } => Code::LayersNotDivisibleByVpp,
        SplitError::TooManyEdgeLayers { .. } => Code::UnevenStagesTooManyLayers,
        SplitError::EdgeNeedsPipeline => Code::UnevenStagesNeedPp,
        SplitError::AccountWithUneven => Code::AccountForWithUnevenStages,
        SplitError::AccountedUneven { .. } => Code::LayersNotDivisibleByPp,
        SplitError::AccountedVirtualUneven { .. } => Code::LayersNotDivisibleByVpp,
        SplitError::Layout(e) => layout::layout_code(e),
        SplitError::Segments(e) => layout::segment_code(e),
    }
}

/// The diagnostic for a layer split that fails.
pub fn split_diagnostic(e: &SplitError) -> Diagnostic {
    split_diagnostic_in(None, e)
}

/// The diagnostic for a layer split of plan `p` that fails: a layout's fix can then offer a layout of its shape.
pub fn split_diagnostic_for(p: &Plan, e: &SplitError) -> Diagnostic {
    let diag = split_diagnostic_in(Some(&Shape::of(p)), e);
    let par = &p.parallelism;
    // The whole model over all the stages (no edge sizes given yet): offer the edges that make it divide.
    match *e {
        SplitError::Uneven { layers, stages }
            if stages == par.pp() && par.num_layers_in_first_pipeline_stage.is_none() && par.num_layers_in_last_pipeline_stage.is_none() =>
        {
            match uneven_edges(layers, stages) {
                Some((first, last, _)) => diag
                    .with_apply("parallelism.num_layers_in_first_pipeline_stage", first)
                    .with_apply("parallelism.num_layers_in_last_pipeline_stage", last),
                None => diag,
            }
        }
        _ => diag,
    }
}

fn split_diagnostic_in(shape: Option<&Shape>, e: &SplitError) -> Diagnostic {
    let code = split_code(e);
    match *e {
        SplitError::Layout(ref e) => layout::layout_diagnostic(e, shape),
        SplitError::Segments(ref e) => layout::segment_diagnostic(e),
        SplitError::AccountWithUneven => d(
            code,
            "num_layers_in_first_pipeline_stage and num_layers_in_last_pipeline_stage cannot beset at the same time with account_for_embedding_in_pipeline_splitand account_for_loss_in_pipeline_split (megatron-core ValueError)".into(),
            "use either the uneven first/last stage sizes or account_for_embedding/loss_in_pipeline_split, not both".into(),
        ),
        SplitError::AccountedUneven { layers, extra, stages } => d(
            code,
            format!(
                "{layers} layers + {extra} accounted for the embedding/loss = {} do not divide evenly over {stages} pipeline stages (account_for_*_in_pipeline_split)",
                layers + extra
            ),
            format!(
                "use a pipeline size that divides {} (e.g. {}), or change account_for_embedding/loss_in_pipeline_split",
                layers + extra,
                nearest_divisor(layers + extra, stages.max(1))
            ),
        ),
        SplitError::AccountedVirtualUneven { per_stage, vpp } => d(
            code,
            format!("a pipeline stage of {per_stage} layers (the embedding/loss accounted as layers) does not split into {vpp} virtual chunks"),
            format!("set virtual_pipeline_model_parallel_size to a divisor of {per_stage} (e.g. {})", nearest_divisor(per_stage.max(1), vpp)),
        )
        .with_apply(VPP, nearest_divisor(per_stage.max(1), vpp)),
        SplitError::Uneven { layers, stages } => d(
            code,
            format!("{layers} layers do not divide evenly over {stages} pipeline stages"),
            format!(
                "use a pipeline size that divides {layers} (e.g. {}), or set num_layers_in_first_pipeline_stage / num_layers_in_last_pipeline_stage so the rest divides",
                nearest_divisor(layers, stages.max(1))
            ),
        ),
        SplitError::VirtualUneven { layers, vpp } => d(
            code,
            format!("a pipeline stage of {layers} layers does not split into {vpp} virtual chunks"),
            format!("set virtual_pipeline_model_parallel_size to a divisor of {layers} (e.g. {})", nearest_divisor(layers.max(1), vpp)),
        )
        .with_apply(VPP, nearest_divisor(layers.max(1), vpp)),
        SplitError::TooManyEdgeLayers { first, last, layers } => d(
            code,
            format!("num_layers_in_first_pipeline_stage ({first}) + num_layers_in_last_pipeline_stage ({last}) exceed num_layers = {layers}"),
            "lower the first/last stage layer counts".into(),
        ),
        SplitError::EdgeNeedsPipeline => d(
            code,
            "num_layers_in_first/last_pipeline_stage is set but pipeline_model_parallel_size = 1".into(),
            "remove the first/last stage layer counts or use pipeline_model_parallel_size > 1".into(),
        ),
    }
}

impl From<&SplitError> for Diagnostic {
    fn from(e: &SplitError) -> Self {
        split_diagnostic(e)
    }
}

/// vpp-requires-pp, uneven-stage-zero-layers and uneven-stages-empty-middle: the stage settings Megatron's config
/// checks before any split (cheap; the search asks it per pipeline shape).
pub fn stages(p: &Plan, out: &mut impl Findings) {
    let (m, par) = (&p.model, &p.parallelism);
    let (pp, vpp) = (par.pp(), par.vpp());
    if par.virtual_pipeline_model_parallel_size.is_some_and(|v| v > 1) && pp == 1 {
        out.add(Code::VppRequiresPp, |code| match par.pipeline_model_parallel_layout {
            // The layout's stages are the virtual stages: unsetting VPP would not help (the layout sets it again).
            Some(_) => d(
                code,
                format!("pipeline_model_parallel_layout has {vpp} stages on pipeline_model_parallel_size = 1: they become {vpp} virtual stages of one rank, and interleaving needs several pipeline stages"),
                format!("set pipeline_model_parallel_size to a divisor of {vpp} above 1 (one stage per rank: {vpp}), or write the layout as one stage"),
            ),
            None => d(
                code,
                format!("virtual_pipeline_model_parallel_size = {vpp} with pipeline_model_parallel_size = 1: interleaving needs several pipeline stages"),
                "unset virtual_pipeline_model_parallel_size, or use pipeline_model_parallel_size > 1".into(),
            )
            .with_apply(VPP, serde_json::Value::Null),
        });
    }
    // TransformerConfig.__post_init__ (uneven pipeline): first/last must be > 0, and the middle stages get layers
    // exactly when there are middle stages ("Mismatch: … middle layers remaining but … middle PP stages").
    let (first, last) = (par.num_layers_in_first_pipeline_stage, par.num_layers_in_last_pipeline_stage);
    if pp > 1 && (first.is_some() || last.is_some()) {
        for (name, v) in [("num_layers_in_first_pipeline_stage", first), ("num_layers_in_last_pipeline_stage", last)] {
            if v == Some(0) {
                out.add(Code::UnevenStageZeroLayers, |code|
                    d(
                        code,
                        format!("{name} = 0: megatron-core requires it to be larger than 0"),
                        format!("unset {name}, or set it to at least {}", vpp),
                    )
                    .with_apply(&format!("parallelism.{name}"), serde_json::Value::Null),
                );
            }
        }
        let (f, l) = (first.unwrap_or(0), last.unwrap_or(0));
        let mid_stages = pp - u64::from(first.is_some()) - u64::from(last.is_some());
        let mid_layers = m.num_layers.saturating_sub(f.saturating_add(l));
        if f.saturating_add(l) <= m.num_layers && mid_stages > 0 && mid_layers == 0 {
            out.add(Code::UnevenStagesEmptyMiddle, |code| d(
                code,
                format!(
                    "num_layers_in_first/last_pipeline_stage = {f} + {l} take all {} layers, leaving 0 layers for the {mid_stages} middle pipeline stage(s)",
                    m.num_layers
                ),
                format!("lower the first/last counts so that the {mid_stages} middle stage(s) get a whole multiple of {vpp} layers each, or lower pipeline_model_parallel_size"),
            ));
        }
    }
}

/// interleaved-microbatches and vpp-microbatch-group-below-pp: what the interleaved schedule needs of the step's
/// microbatches. Judged only when the batch divides (gbs-not-divisible reports the rest).
pub fn interleaved(p: &Plan, dv: &Derived, out: &mut impl Findings) {
    let par = &p.parallelism;
    let (pp, vpp, dp) = (par.pp(), par.vpp(), dv.data_parallel_size);
    let unit = p.training.micro_batch_size.saturating_mul(dp);
    let gbs = dv.global_batch_size;
    if dp == 0 || vpp <= 1 || pp <= 1 || gbs % unit != 0 || gbs < unit {
        return;
    }
    // megatron/core/pipeline_parallel/schedules.py forward_backward_pipelining_with_interleaving: with
    // N = microbatch_group_size_per_vp_stage (default PP), ValueError unless PP ≤ N ≤ M, RuntimeError if
    // 0 < M mod N < PP. With the default N = PP that is M ≥ PP and M mod PP = 0.
    let group = par.microbatch_group_size_per_vp_stage.unwrap_or(pp);
    let mb = dv.num_microbatches;
    if group < pp {
        out.add(Code::VppMicrobatchGroupBelowPp, |code|
            d(
                code,
                format!("microbatch_group_size_per_vp_stage = {group} is below pipeline_model_parallel_size = {pp}: the interleaved schedule needs it in [PP, M] = [{pp}, {mb}]"),
                format!("set microbatch_group_size_per_vp_stage to {pp} (megatron-core's default, PP), or unset it"),
            )
            .with_apply("parallelism.microbatch_group_size_per_vp_stage", pp),
        );
    } else if group > mb || (mb % group != 0 && mb % group < pp) {
        let good_mb = interleaved_microbatches_at_least(mb, group, pp);
        let good_gbs = good_mb.saturating_mul(unit);
        let why = if group > mb {
            format!("{mb} microbatches are fewer than microbatch_group_size_per_vp_stage = {group} (it must lie in [PP, M] = [{pp}, {mb}])")
        } else {
            format!(
                "{mb} microbatches leave a last group of {mb} mod {group} = {} (microbatch_group_size_per_vp_stage = {group}); it must be 0 or at least PP = {pp}",
                mb % group
            )
        };
        let alt = if mb >= pp { format!(", or set microbatch_group_size_per_vp_stage = {mb}") } else { String::new() };
        out.add(Code::InterleavedMicrobatches, |code|
            d(code, format!("the interleaved schedule rejects this step: {why}"), format!("set global_batch_size to {good_gbs} ({good_mb} microbatches){alt}, or drop virtual pipeline stages"))
                .with_apply(GBS, good_gbs),
        );
    }
}

/// vpp-pp2-needs-overlap-p2p, few-microbatches and pp-without-vpp: how the pipeline schedule runs.
pub fn schedule(p: &Plan, dv: &Derived, split_failed: bool, out: &mut impl Findings) {
    let (m, par) = (&p.model, &p.parallelism);
    let (pp, vpp, dp) = (par.pp(), par.vpp(), dv.data_parallel_size);
    let unit = p.training.micro_batch_size.saturating_mul(dp);
    // Megatron-LM's overlap_p2p_comm is on unless --no-overlap-p2p-communication (arguments.py:3118), and Bridge's
    // CommOverlapConfig sets it with VPP: only a plan turning it off meets the assert.
    if dp > 0 && vpp > 1 && pp == 2 && par.overlap_p2p_comm == Some(false) {
        out.add(Code::VppPp2NeedsOverlapP2p, |code|
            d(
                code,
                format!(
                    "virtual_pipeline_model_parallel_size = {vpp} with pipeline_model_parallel_size = 2 and overlap_p2p_comm = false: Megatron-LM (validate_args) asserts PP > 2 for the interleaved schedule without p2p overlap, since the two stages would exchange several sends and receives in one batch"
                ),
                "set overlap_p2p_comm = true (Megatron-LM: drop --no-overlap-p2p-communication; it is on by default), or use pipeline_model_parallel_size ≥ 3".into(),
            )
            .with_apply("parallelism.overlap_p2p_comm", true),
        );
    }
    if dp > 0 && pp > 1 && dv.num_microbatches > 0 && dv.num_microbatches < pp {
        out.add(Code::FewMicrobatches, |code| d(
            code,
            format!("{} microbatches over {pp} pipeline stages: the pipeline never fills (bubble {:.0}%)", dv.num_microbatches, 100.0 * dv.pipeline_bubble_fraction.min(9.99)),
            format!("raise global_batch_size to at least {} for {pp} microbatches per step", unit.saturating_mul(pp)),
        ));
    }
    if pp > 1 && vpp == 1 && !split_failed {
        let per_stage = m.num_layers / pp;
        if per_stage >= 2 {
            out.add(Code::PpWithoutVpp, |code| d(
                code,
                format!("PP = {pp} without interleaving: bubble = (PP−1)/m = {:.1}% of the step", 100.0 * dv.pipeline_bubble_fraction),
                if par.pipeline_model_parallel_layout.is_some() {
                    format!("write pipeline_model_parallel_layout with 2·{pp} stages or more (a multiple of {pp}): its stages / PP are the virtual stages")
                } else {
                    format!("set virtual_pipeline_model_parallel_size to a divisor of {per_stage} layers per stage (e.g. {})", nearest_divisor(per_stage, 2))
                },
            ));
        }
    }
}

/// gemma4-dense-pipeline: Megatron Bridge builds Gemma 4's dense models (E2B, E4B, 31B) on one pipeline stage only.
// Source: Megatron Bridge src/megatron/bridge/models/gemma/gemma4_bridge.py (enable_moe_block false →
// Gemma4DenseProvider) and gemma4_provider.py Gemma4DenseProvider.provide (raises NotImplementedError for
// pipeline_model_parallel_size ≠ 1 or a vp_stage).
pub fn gemma4_dense(p: &Plan, out: &mut impl Findings) {
    let m = &p.model;
    let dense_gemma4 = !m.is_moe() && (m.per_layer_embed_dim.is_some() || m.num_kv_shared_layers > 0 || m.attention_k_eq_v);
    let pp = p.parallelism.pp();
    if dense_gemma4 && pp > 1 {
        out.add(Code::Gemma4DensePipeline, |code| {
            d(
                code,
                format!("pipeline_model_parallel_size = {pp} for a dense Gemma 4 model: Megatron Bridge's Gemma4DenseProvider builds it at pipeline_model_parallel_size 1 only"),
                "set pipeline_model_parallel_size to 1 (and virtual_pipeline_model_parallel_size to null); split the model with tensor_model_parallel_size, or shard its state with the distributed optimizer".to_string(),
            )
            .with_apply("parallelism.pipeline_model_parallel_size", 1)
        });
    }
}
