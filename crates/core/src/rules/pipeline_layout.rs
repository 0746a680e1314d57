//! Explicit pipeline layouts: `pipeline_model_parallel_layout` and a hybrid pattern's `|` segments. Their errors come
//! from the split ([`crate::pipeline::layout::split`], [`crate::pipeline::split_from_segments`]); this file words them
//! (Megatron's own error text in each message) and checks what sits beside the split: other split settings given
//! with a layout, markers on empty stages, and what Megatron Bridge does with hybrid virtual stages.

use super::fixes::nearest_divisor;
use super::findings::{Findings, VPP, d};
use crate::pipeline::layout::{self, LayoutError, Slot};
use crate::pipeline::SegmentError;
use crate::plan::Plan;
use crate::{Code, Diagnostic};
use serde_json::Value;

const PP: &str = "parallelism.pipeline_model_parallel_size";
const FIRST: &str = "parallelism.num_layers_in_first_pipeline_stage";
const LAST: &str = "parallelism.num_layers_in_last_pipeline_stage";
const ACCOUNT_EMBEDDING: &str = "parallelism.account_for_embedding_in_pipeline_split";
const ACCOUNT_LOSS: &str = "parallelism.account_for_loss_in_pipeline_split";
pub(crate) const LAYOUT: &str = "parallelism.pipeline_model_parallel_layout";

/// The rule a layout error breaks.
pub fn layout_code(e: &LayoutError) -> Code {
    match e {
        LayoutError::TooLarge { .. } => Code::LayoutTooLarge,
        LayoutError::NotListOfLists { .. } | LayoutError::ElementType { .. } => Code::LayoutListForm,
        LayoutError::NotLayerType { .. } | LayoutError::Char { .. } => Code::LayoutChar,
        LayoutError::StagesNotDivisible { .. } => Code::LayoutStagesNotDivisibleByPp,
        LayoutError::VppConflict { .. } => Code::LayoutVppConflict,
        LayoutError::Empty => Code::LayoutEmpty,
        LayoutError::FirstNotEmbedding { .. } => Code::LayoutFirstNotEmbedding,
        LayoutError::LastNotLoss { .. } => Code::LayoutLastNotLoss,
        LayoutError::EmbeddingCount { .. } => Code::LayoutEmbeddingCount,
        LayoutError::LossCount { .. } => Code::LayoutLossCount,
        LayoutError::DecoderCount { .. } => Code::LayoutDecoderCount,
        LayoutError::MtpCount { .. } => Code::LayoutMtpCount,
        LayoutError::MtpBeforeDecoder => Code::LayoutMtpBeforeDecoder,
        LayoutError::MtpNotLastChunk { .. } => Code::LayoutMtpNotLastChunk,
        LayoutError::MtpSplit { .. } => Code::LayoutMtpSplit,
        LayoutError::Encoder => Code::LayoutEncoder,
    }
}

/// The shape a layout must have, for fixes that offer one: the model's layers and the pipeline's stages.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub num_layers: u64,
    pub mtp_num_layers: u64,
    pub pp: u64,
    pub vpp: u64,
}

impl Shape {
    pub fn of(p: &Plan) -> Shape {
        let par = &p.parallelism;
        Shape { num_layers: p.model.num_layers, mtp_num_layers: p.model.mtp_num_layers, pp: par.pp(), vpp: par.vpp() }
    }
    /// A valid layout of this shape (the even split written out).
    fn example(&self) -> String {
        layout::even_text(self.num_layers, self.mtp_num_layers, self.pp.saturating_mul(self.vpp))
    }
}

/// The pipeline size nearest `pp` that divides `stages` and, when there are several stages, is above 1 (PP 1 would turn
/// them into virtual stages without a pipeline).
fn stage_divisor(stages: u64, pp: u64) -> u64 {
    match nearest_divisor(stages, pp) {
        1 if stages > 1 => (2..=stages).find(|k| stages % k == 0).unwrap_or(stages),
        d => d,
    }
}

/// `s` cut to 80 characters for a message (a layout may be 65,536 long).
fn clip(s: &str) -> String {
    let mut out: String = s.chars().take(80).collect();
    if s.chars().nth(80).is_some() {
        out.push('…');
    }
    out
}

/// The diagnostic for a layout error; `shape` lets the fix offer a valid layout.
pub fn layout_diagnostic(e: &LayoutError, shape: Option<&Shape>) -> Diagnostic {
    let code = layout_code(e);
    let example = shape.map(|s| format!(" — e.g. \"{}\", Megatron's even split of {} layers over {} stages", s.example(), s.num_layers, s.pp * s.vpp));
    let example = example.unwrap_or_default();
    let layer = |s: &Slot| format!("LayerType.{}", s.name());
    match e {
        LayoutError::TooLarge { what, found, limit } => d(
            code,
            format!("pipeline_model_parallel_layout grows to {found} {what}, more than the {limit} this model can use (counted from its repetition counts; nothing was unrolled)"),
            format!("write one t per decoder layer and one m per MTP layer, one E and one L, over a multiple of pipeline_model_parallel_size stages (at most 16,384){example}"),
        ),
        LayoutError::NotListOfLists { kind } => d(
            code,
            format!("pipeline_model_parallel_layout must be a list of lists, but a stage is a {kind} (megatron-core: \"pipeline_model_parallel_layout must be a list of lists\")"),
            "write the list form as a flat list of stages, each a list of LayerType names: [[\"embedding\", \"decoder\"], [\"decoder\", \"loss\"]]".into(),
        ),
        LayoutError::ElementType { kind } => d(
            code,
            format!("elements in pipeline_model_parallel_layout must be LayerType or str, but got {kind} (the list form is one flat list of stages, PP·VPP long, not nested per rank)"),
            "write each stage as a list of LayerType names: \"embedding\", \"decoder\", \"mtp\", \"loss\"".into(),
        ),
        LayoutError::NotLayerType { name } => d(
            code,
            format!("{} is not a valid LayerType (pipeline_model_parallel_layout's list form)", clip(name)),
            "use the LayerType names embedding, decoder, mtp and loss (case and surrounding spaces do not matter)".into(),
        ),
        LayoutError::Char { ch, stage, unrolled } => d(
            code,
            format!(
                "Invalid layer character: {} (stage={:?}, layout_str={:?}), known layer characters: ['E', 'L', 't', 'm']",
                ch.escape_debug(),
                clip(stage),
                clip(unrolled)
            ),
            format!("use E (embedding), t (decoder layer), m (MTP layer), L (loss), | between stages, (…)*n and x*n to repeat (no nesting; commas are ignored){example}"),
        ),
        LayoutError::StagesNotDivisible { stages, pp } => {
            let good = stage_divisor(*stages, *pp);
            d(
                code,
                format!("pipeline_model_parallel_layout must be divisible by pipeline_model_parallel_size (len(layout)={stages}, pipeline_model_parallel_size={pp})"),
                format!("set pipeline_model_parallel_size to a divisor of the layout's {stages} stages (e.g. {good}), or write the layout with a multiple of {pp} stages"),
            )
            .with_apply(PP, good)
        }
        LayoutError::VppConflict { explicit, detected } => d(
            code,
            format!("virtual_pipeline_model_parallel_size conflicts with pipeline_model_parallel_layout, (virtual_pipeline_model_parallel_size={explicit}, detected_vpp_size={detected}): the layout's stages / PP give VPP {detected}"),
            format!("set virtual_pipeline_model_parallel_size to {detected} (or leave it unset: the layout sets it)"),
        )
        .with_apply(VPP, if *detected > 1 { Value::from(*detected) } else { Value::Null }),
        LayoutError::Empty => d(
            code,
            "pipeline_model_parallel_layout has no entries: megatron-core fails reading its first layer (IndexError)".into(),
            format!("write the embedding, the decoder layers and the loss{example}"),
        ),
        LayoutError::FirstNotEmbedding { got } => {
            d(code, format!("The first layer must be embedding, but got {}", layer(got)), format!("start the layout with E{example}"))
        }
        LayoutError::LastNotLoss { got } => d(code, format!("The last layer must be loss, but got {}", layer(got)), format!("end the layout with L{example}")),
        LayoutError::EmbeddingCount { found } => d(
            code,
            format!("Embedding must be specified exactly once (the layout has {found} E)"),
            format!("keep one E, at the start of the first stage{example}"),
        ),
        LayoutError::LossCount { found } => {
            d(code, format!("Loss must be specified exactly once (the layout has {found} L)"), format!("keep one L, at the end of the last stage{example}"))
        }
        LayoutError::DecoderCount { found, num_layers } => d(
            code,
            format!("Number of decoder layers {found} must match num_layers {num_layers}: the layout has {found} t, the model {num_layers} decoder layers"),
            format!(
                "write {num_layers} t ({} {} than now), or set num_layers = {found}{example}",
                found.abs_diff(*num_layers),
                if found > num_layers { "fewer" } else { "more" }
            ),
        ),
        LayoutError::MtpCount { found, mtp_num_layers } => d(
            code,
            format!("Number of mtp layers in layout must match mtp_num_layers: the layout has {found} m, the model mtp_num_layers = {mtp_num_layers}"),
            format!("write {mtp_num_layers} m, in the chunk that ends with L or alone in a rank's last chunk, or set mtp_num_layers = {found}{example}"),
        ),
        LayoutError::MtpBeforeDecoder => d(
            code,
            "decoder layers must be placed before MTP layers: a t follows an m in the layout's order (stage by stage)".into(),
            format!("move every m after the last t{example}"),
        ),
        LayoutError::MtpNotLastChunk { pp_rank, vpp_rank } => d(
            code,
            format!("Currently we restrict that the MTP should be always in the last virtual pipeline stage of that rank: the layout puts m on pipeline rank {pp_rank}, virtual chunk {vpp_rank}"),
            format!("move the m into a rank's last virtual chunk (the last PP stages of the layout), e.g. just before L{example}"),
        ),
        LayoutError::MtpSplit { pp_rank, found, mtp_num_layers } => d(
            code,
            format!("All of the MTP layers must be in the same one virtual pipeline stage: pipeline rank {pp_rank}'s last chunk holds {found} of the {mtp_num_layers} m"),
            format!("put all {mtp_num_layers} m in one stage{example}"),
        ),
        LayoutError::Encoder => d(
            code,
            "Encoder layer is not supported for flexible pipeline layout (NotImplementedError)".into(),
            "remove the \"encoder\" entries; the layout places decoder, MTP, embedding and loss only".into(),
        ),
    }
}

/// The rule a hybrid segment error breaks.
pub fn segment_code(e: &SegmentError) -> Code {
    match e {
        SegmentError::PipesWithFirstLast { .. } => Code::HybridPipesWithFirstLastStage,
        SegmentError::VppNeedsPipes { .. } => Code::HybridVppNeedsPipes,
        SegmentError::LegacyUneven { .. } => Code::HybridLegacySplitUneven,
        SegmentError::NotDivisible { .. } => Code::HybridSegmentsNotDivisibleByPp,
        SegmentError::VppConflict { .. } => Code::HybridVppConflict,
        SegmentError::TooMany { .. } => Code::LayoutTooLarge,
    }
}

/// The diagnostic for a hybrid segment error.
pub fn segment_diagnostic(e: &SegmentError) -> Diagnostic {
    let code = segment_code(e);
    match *e {
        SegmentError::PipesWithFirstLast { segments } => d(
            code,
            format!("Cannot specify num_layers_in_first_pipeline_stage or num_layers_in_last_pipeline_stage when hybrid_layer_pattern contains pipe ('|') separators: its {segments} segments already are the stages"),
            "unset num_layers_in_first/last_pipeline_stage (move the | in the pattern to size the stages)".into(),
        )
        .with_apply(FIRST, Value::Null)
        .with_apply(LAST, Value::Null),
        SegmentError::VppNeedsPipes { vpp } => d(
            code,
            format!("virtual_pipeline_model_parallel_size = {vpp} with a hybrid_layer_pattern without pipe ('|') separators: Virtual pipeline parallelism is not supported then"),
            "add | to the pattern to mark PP·VPP segments (VPP = segments / PP), or unset virtual_pipeline_model_parallel_size".into(),
        )
        .with_apply(VPP, Value::Null),
        SegmentError::LegacyUneven { layers, stages, uneven } => d(
            code,
            if uneven {
                format!("Middle layers ({layers}) must be evenly divisible by middle pipeline stages ({stages}) (hybrid_layer_pattern without |)")
            } else {
                format!("Number of layers ({layers}) must be evenly divisible by pipeline-model-parallel-size ({stages}) when no pipe separators are specified in the pattern")
            },
            format!(
                "add | to the pattern to set each stage's layers, or use a pipeline size that divides {layers} (e.g. {})",
                nearest_divisor(layers.max(1), stages.max(1))
            ),
        ),
        SegmentError::NotDivisible { segments, pp } => {
            let good = stage_divisor(segments, pp);
            d(
                code,
                format!("The number of pipe-delimited segments ({segments}) in hybrid_layer_pattern must be evenly divisible by pipeline_model_parallel_size ({pp})"),
                format!("set pipeline_model_parallel_size to a divisor of {segments} (e.g. {good}), or write a multiple of {pp} segments"),
            )
            .with_apply(PP, good)
        }
        SegmentError::VppConflict { explicit, detected } => d(
            code,
            format!("virtual_pipeline_model_parallel_size = {explicit}, but the hybrid pattern's segments give VPP = segments / PP = {detected} (Megatron-LM takes VPP from the segments only)"),
            format!("set virtual_pipeline_model_parallel_size to {detected}, or leave it unset"),
        )
        .with_apply(VPP, if detected > 1 { Value::from(detected) } else { Value::Null }),
        SegmentError::TooMany { segments } => d(
            code,
            format!("the hybrid pattern has {segments} | segments, more than the {} pipeline stages meshplan plans", crate::limits::MAX_PIPELINE_STAGES),
            "write one segment per (pipeline rank, virtual chunk)".into(),
        ),
    }
}

/// layout-with-uneven-stages: a layout with the other split settings (megatron-core raises before reading it).
pub fn conflicts(p: &Plan, out: &mut impl Findings) {
    let par = &p.parallelism;
    if par.pipeline_model_parallel_layout.is_none() {
        return;
    }
    let (first, last) = (par.num_layers_in_first_pipeline_stage, par.num_layers_in_last_pipeline_stage);
    let (e, l) = (par.account_for_embedding_in_pipeline_split, par.account_for_loss_in_pipeline_split);
    if first.is_none() && last.is_none() && !e && !l {
        return;
    }
    out.add(Code::LayoutWithUnevenStages, |code| {
        let py = |v: Option<u64>| v.map_or("None".to_string(), |v| v.to_string());
        let py_bool = |b: bool| if b { "True" } else { "False" };
        let mut diag = d(
            code,
            format!(
                "pipeline_model_parallel_layout cannot be set with other pipeline layout arguments. self.num_layers_in_first_pipeline_stage={}, self.num_layers_in_last_pipeline_stage={}, self.account_for_embedding_in_pipeline_split={}, self.account_for_loss_in_pipeline_split={}.",
                py(first),
                py(last),
                py_bool(e),
                py_bool(l)
            ),
            "the layout places every layer: unset num_layers_in_first/last_pipeline_stage and account_for_*_in_pipeline_split (or drop the layout)".into(),
        );
        for (path, set) in [(FIRST, first.is_some()), (LAST, last.is_some())] {
            if set {
                diag = diag.with_apply(path, Value::Null);
            }
        }
        for (path, set) in [(ACCOUNT_EMBEDDING, e), (ACCOUNT_LOSS, l)] {
            if set {
                diag = diag.with_apply(path, false);
            }
        }
        diag
    });
}

/// layout-marker-on-empty-stage: a valid layout whose `E` is not in its first stage or `L` not in its last; the
/// modules are built at (0, 0) and at the last chunk regardless.
pub fn markers(p: &Plan, out: &mut impl Findings) {
    let par = &p.parallelism;
    let Some(spec) = par.pipeline_model_parallel_layout.as_ref().filter(|_| p.model.hybrid_layer_pattern.is_none()) else { return };
    // Without splitting (the search asks this of every candidate with a layout): a string whose first letter is `E`
    // holds the embedding in stage 0, one whose last is `L` the loss in the last stage (commas are deleted first;
    // a group `(…)*n` or `x*n` ends in a digit). Either the split is valid and both markers sit where Megatron
    // builds them, or it fails, which the split's own error reports — nothing for this rule in both cases.
    if let layout::LayoutSpec::Text(t) = spec {
        let mut letters = t.chars().filter(|&c| c != ',');
        if letters.next() == Some('E') && letters.next_back() == Some('L') {
            return;
        }
    }
    let Ok(l) = layout::split(spec, par.pp(), par.virtual_pipeline_model_parallel_size, p.model.num_layers, p.model.mtp_num_layers) else { return };
    let stages = par.pp().saturating_mul(l.vpp);
    if l.embedding_stage == 0 && l.loss_stage + 1 == stages {
        return;
    }
    out.add(Code::LayoutMarkerOnEmptyStage, |code| {
        let mut what = Vec::new();
        if l.embedding_stage != 0 {
            what.push(format!("E is in stage {} after {} empty one(s), but the embedding is built on pipeline rank 0, chunk 0", l.embedding_stage, l.embedding_stage));
        }
        if l.loss_stage + 1 != stages {
            what.push(format!(
                "L is in stage {} of {stages}, but the output layer and loss are built on pipeline rank {}, chunk {}",
                l.loss_stage,
                par.pp() - 1,
                l.vpp - 1
            ));
        }
        d(code, format!("{}: meshplan sizes memory where Megatron builds them", what.join("; ")), "drop the leading / trailing empty stages (and use a pipeline size that divides the rest)".into())
    });
}

/// hybrid-vpp-unsupported-in-bridge and hybrid-pattern-with-layout: a hybrid pattern of `segments` `|` segments beside
/// the rest of the plan's pipeline settings (the split's own errors come from [`crate::pipeline::split_from_segments`]).
pub fn hybrid(p: &Plan, segments: u64, out: &mut impl Findings) {
    let par = &p.parallelism;
    if par.pipeline_model_parallel_layout.is_some() || par.account_for_embedding_in_pipeline_split || par.account_for_loss_in_pipeline_split {
        out.add(Code::HybridPatternWithLayout, |code| {
            let mut diag = d(
                code,
                "pipeline_model_parallel_layout / account_for_*_in_pipeline_split with a hybrid_layer_pattern: Megatron-LM asserts (\"Pipeline stage layout is defined by | separators in the pattern.\")".into(),
                "mark the stages with | in hybrid_layer_pattern and unset the layout and account_for_* settings".into(),
            );
            if par.pipeline_model_parallel_layout.is_some() {
                diag = diag.with_apply(LAYOUT, Value::Null);
            }
            for (path, set) in [(ACCOUNT_EMBEDDING, par.account_for_embedding_in_pipeline_split), (ACCOUNT_LOSS, par.account_for_loss_in_pipeline_split)] {
                if set {
                    diag = diag.with_apply(path, false);
                }
            }
            diag
        });
    }
    let pp = par.pp().max(1);
    if segments > pp && segments % pp == 0 {
        out.add(Code::HybridVppUnsupportedInBridge, |code| d(
            code,
            format!(
                "the hybrid pattern's {segments} segments on PP {pp} mean VPP = {}: Megatron-LM runs them, but Megatron Bridge asserts \"Virtual pipeline model parallelism is temporarily unsupported in Hybrid models\" (and with VPP unset builds only the first {pp} segments)",
                segments / pp
            ),
            format!("for a Bridge run write exactly {pp} segments (one per pipeline rank)"),
        ));
    }
}
