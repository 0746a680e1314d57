//! A hybrid layer pattern's `|` segments on the pipeline: segment i is the layers of pipeline rank i mod PP, virtual
//! chunk i div PP, as Megatron-Core's `select_pipeline_segment` builds them
//! (megatron/core/models/hybrid/hybrid_layer_allocation.py), and VPP = segments / PP as megatron/training/arguments.py
//! derives it. A pattern without `|` on PP > 1 is Megatron's legacy even split (or uneven first/last stages), without
//! VPP. The pattern itself (its layer kinds) is read by the model; this module needs only each segment's layer count.

use super::{Chunk, SplitError, StageSplit, split_layers};
use crate::limits::MAX_PIPELINE_STAGES;

/// Why a hybrid pattern's segments do not map onto the pipeline (the split errors of the legacy path stay
/// [`SplitError`]s of their own kind).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SegmentError {
    /// `|` segments together with num_layers_in_first/last_pipeline_stage.
    PipesWithFirstLast { segments: u64 },
    /// No `|` on PP > 1 with virtual pipeline stages requested.
    VppNeedsPipes { vpp: u64 },
    /// No `|` on PP > 1: `layers` do not divide over `pp` (`uneven`: the middle layers between first/last stages).
    LegacyUneven { layers: u64, stages: u64, uneven: bool },
    /// The segment count does not divide by PP.
    NotDivisible { segments: u64, pp: u64 },
    /// An explicit virtual_pipeline_model_parallel_size other than segments / PP.
    VppConflict { explicit: u64, detected: u64 },
    /// More segments than [`MAX_PIPELINE_STAGES`].
    TooMany { segments: u64 },
}

/// VPP as Megatron-LM's arguments.py derives it from the segments: segments / PP when there are more segments than
/// ranks (and they divide), else none.
pub fn derived_vpp(segments: u64, pp: u64) -> Option<u64> {
    let pp = pp.max(1);
    (segments > pp && segments % pp == 0).then_some(segments / pp)
}

/// The split of a hybrid pattern whose `|` segments have `segments[i]` layers each (one segment, the whole pattern,
/// when it has no `|`), on `pp` ranks with the plan's explicit VPP and first/last stage sizes.
// Source: hybrid_layer_allocation.py select_pipeline_segment (l.377–493: pipes with first/last sizes raise; one segment
// on PP > 1 is the legacy split and rejects vp_stage; segment index vp_stage·PP + pp_rank, its offset the sum of the
// earlier segments) and arguments.py (segments % PP, VPP = segments / PP).
pub fn split_from_segments(segments: &[u64], pp: u64, explicit_vpp: Option<u64>, first: Option<u64>, last: Option<u64>) -> Result<StageSplit, SplitError> {
    let pp = pp.max(1);
    let whole = [0];
    let segments = if segments.is_empty() { &whole[..] } else { segments };
    let s = segments.len() as u64;
    let fail = |e| Err(SplitError::Segments(e));
    if s > MAX_PIPELINE_STAGES {
        return fail(SegmentError::TooMany { segments: s });
    }
    if s > 1 && (first.is_some() || last.is_some()) {
        return fail(SegmentError::PipesWithFirstLast { segments: s });
    }
    if s == 1 && pp > 1 {
        if let Some(vpp) = explicit_vpp.filter(|&v| v > 1) {
            return fail(SegmentError::VppNeedsPipes { vpp });
        }
        return match split_layers(segments[0], pp, 1, first, last) {
            Err(SplitError::Uneven { layers, stages }) => {
                fail(SegmentError::LegacyUneven { layers, stages, uneven: first.is_some() || last.is_some() })
            }
            other => other,
        };
    }
    if s % pp != 0 {
        return fail(SegmentError::NotDivisible { segments: s, pp });
    }
    let vpp = s / pp;
    if let Some(v) = explicit_vpp.filter(|&v| v != vpp) {
        return fail(SegmentError::VppConflict { explicit: v, detected: vpp });
    }
    if first.is_some() || last.is_some() {
        // One segment on one rank: the uneven sizes have no other stage (the non-hybrid rule's error).
        return Err(SplitError::EdgeNeedsPipeline);
    }
    let mut stages: Vec<Vec<Chunk>> = (0..pp).map(|_| Vec::with_capacity(vpp as usize)).collect();
    let mut next = 0u64;
    for (i, &count) in segments.iter().enumerate() {
        let (rank, chunk) = (i as u64 % pp, i as u64 / pp);
        stages[rank as usize].push(Chunk { virtual_rank: chunk, start: next, count });
        next = next.saturating_add(count);
    }
    Ok(StageSplit::new(stages, vpp))
}
