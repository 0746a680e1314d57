//! Which layers each pipeline stage (and each virtual chunk) builds, and the pipeline schedule's numbers.
//!
//! Three ways to split the decoder layers, each giving a [`StageSplit`]: Megatron's even split with optional uneven
//! first/last stages and `account_for_*_in_pipeline_split` ([`split_layers_accounting`]), an explicit
//! `pipeline_model_parallel_layout` ([`layout`]), and a hybrid layer pattern's `|` segments ([`segments`]).

pub mod layout;
pub mod segments;

pub use layout::{LayoutError, LayoutSpec, LayoutSplit};
pub use segments::{SegmentError, split_from_segments};

use serde::{Deserialize, Serialize};

/// Layers of one model chunk: `start..start + count` in model order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chunk {
    pub virtual_rank: u64,
    pub start: u64,
    pub count: u64,
}

/// One model chunk: a pipeline rank and one of its virtual chunks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ChunkRef {
    pub pipeline_rank: u64,
    pub virtual_rank: u64,
}

/// Where the modules that are not decoder layers are built.
// megatron/core/models/gpt/gpt_model.py: the embedding where pre_process (is_pipeline_first_stage: pp 0, vpp 0), the
// output layer and loss where post_process (is_pipeline_last_stage: last pp, last vpp), wherever a layout's `E` and
// `L` sit; the MTP block where multi_token_prediction.py mtp_on_this_rank says (a layout's `m`, else the last chunk).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    pub embedding: ChunkRef,
    /// The output layer, the loss (and, without MTP, the final norm).
    pub loss: ChunkRef,
    /// The chunk that builds the MTP layers; None when the model has none.
    pub mtp: Option<ChunkRef>,
}

impl Placement {
    /// Megatron's placement without a layout: embedding on (0, 0), output, loss and MTP on (PP − 1, VPP − 1).
    pub fn default_for(pp: u64, vpp: u64) -> Placement {
        let last = ChunkRef { pipeline_rank: pp.max(1) - 1, virtual_rank: vpp.max(1) - 1 };
        Placement { embedding: ChunkRef::default(), loss: last, mtp: Some(last) }
    }
}

/// Layer assignment of every pipeline stage, one entry per pipeline rank.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageSplit {
    pub stages: Vec<Vec<Chunk>>,
    /// Where the embedding, the output layer and the MTP layers are built.
    #[serde(default)]
    pub placement: Placement,
}

impl StageSplit {
    /// A split with Megatron's placement of embedding, output and MTP on `vpp` chunks per stage.
    pub fn new(stages: Vec<Vec<Chunk>>, vpp: u64) -> StageSplit {
        let placement = Placement::default_for(stages.len() as u64, vpp);
        StageSplit { stages, placement }
    }
    pub fn layers_per_stage(&self) -> Vec<u64> {
        self.layer_counts().collect()
    }
    /// Layers of each stage, in pipeline order.
    pub fn layer_counts(&self) -> impl Iterator<Item = u64> + '_ {
        self.stages.iter().map(|s| s.iter().map(|c| c.count).sum())
    }
    /// Layers of each virtual chunk of `stage`, in chunk order.
    pub fn chunk_counts(&self, stage: usize) -> impl Iterator<Item = u64> + '_ {
        self.stages.get(stage).into_iter().flatten().map(|c| c.count)
    }
    /// Every layer index of `stage`, in model order.
    pub fn layer_indices(&self, stage: usize) -> impl Iterator<Item = u64> + '_ {
        self.stages.get(stage).into_iter().flatten().flat_map(|c| c.start..c.start + c.count)
    }
    /// The pipeline rank whose chunks hold decoder layer `layer` (0-based), if any.
    pub fn stage_of_layer(&self, layer: u64) -> Option<usize> {
        self.stages.iter().position(|s| s.iter().any(|c| (c.start..c.start + c.count).contains(&layer)))
    }
}

/// The nearest split to an invalid one, so memory can still be shown: layers dealt as evenly as possible
/// over `pp` stages (the first `num_layers % pp` stages take one more), one chunk each.
pub fn balanced_split(num_layers: u64, pp: u64) -> StageSplit {
    let pp = pp.clamp(1, num_layers.max(1));
    let (base, extra) = (num_layers / pp, num_layers % pp);
    let mut start = 0;
    let stages = (0..pp)
        .map(|rank| {
            let count = base + u64::from(rank < extra);
            let chunk = Chunk { virtual_rank: 0, start, count };
            start += count;
            vec![chunk]
        })
        .collect();
    StageSplit::new(stages, 1)
}

/// Why a layer split fails; the rules module turns these into diagnostics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SplitError {
    /// num_layers (or the middle part) does not divide over the stages; `layers`, `stages`.
    Uneven { layers: u64, stages: u64 },
    /// A stage's layers do not divide into `vpp` chunks.
    VirtualUneven { layers: u64, vpp: u64 },
    /// First + last stage layers exceed the model.
    TooManyEdgeLayers { first: u64, last: u64, layers: u64 },
    /// Uneven first/last stages need PP > 1 (or PP > 2 with both and a middle).
    EdgeNeedsPipeline,
    /// `account_for_*_in_pipeline_split` together with uneven first/last stages.
    AccountWithUneven,
    /// `layers` plus the `extra` accounted embedding/loss do not divide over `stages`.
    AccountedUneven { layers: u64, extra: u64, stages: u64 },
    /// A stage of `per_stage` accounted layers does not split into `vpp` chunks.
    AccountedVirtualUneven { per_stage: u64, vpp: u64 },
    /// An invalid `pipeline_model_parallel_layout`.
    Layout(LayoutError),
    /// Hybrid `|` segments that do not map onto the pipeline.
    Segments(SegmentError),
}

/// Splits `num_layers` over `pp` stages × `vpp` chunks, with optional uneven first/last stages.
// Source: megatron/core/transformer/transformer_block.py `get_num_layers_to_build` and
// transformer_layer.py `get_transformer_layer_offset`: chunks are laid out virtual-rank-major
// (chunk v of stage p holds model chunk v·PP + p), first/last stage counts are split evenly over their
// virtual chunks, the middle layers evenly over the middle stages.
pub fn split_layers(num_layers: u64, pp: u64, vpp: u64, first: Option<u64>, last: Option<u64>) -> Result<StageSplit, SplitError> {
    split_layers_accounting(num_layers, pp, vpp, first, last, false, false)
}

/// As [`split_layers`], with Megatron's `account_for_embedding_in_pipeline_split` / `account_for_loss_in_pipeline_split`:
/// the embedding and the loss each count as one more layer of the even split, so the first chunk (pp 0, vpp 0) builds
/// one decoder layer fewer, and the last chunk (last pp, last vpp) one fewer.
// Source: megatron/core/transformer/transformer_block.py get_num_layers_to_build (num_layers + e + l over PP, then VPP;
// minus one on the first/last chunk), transformer_layer.py get_transformer_layer_offset (the offset minus one past the
// first chunk when the embedding is accounted), transformer_config.py __post_init__ (ValueError with uneven stages).
pub fn split_layers_accounting(
    num_layers: u64,
    pp: u64,
    vpp: u64,
    first: Option<u64>,
    last: Option<u64>,
    embedding: bool,
    loss: bool,
) -> Result<StageSplit, SplitError> {
    let pp = pp.max(1);
    if embedding || loss {
        if first.is_some() || last.is_some() {
            return Err(SplitError::AccountWithUneven);
        }
        return accounted_split(num_layers, pp, vpp.max(1), embedding, loss);
    }
    let vpp = vpp.max(1);
    let (f, l) = (first.unwrap_or(0), last.unwrap_or(0));
    if (first.is_some() || last.is_some()) && pp == 1 {
        return Err(SplitError::EdgeNeedsPipeline);
    }
    if f.saturating_add(l) > num_layers {
        return Err(SplitError::TooManyEdgeLayers { first: f, last: l, layers: num_layers });
    }
    if pp > num_layers {
        // Every stage builds at least one layer. Plans read by `plan::parse_plan` never get here (it bounds PP by the
        // layers first); this keeps a plan built by hand from allocating per stage for more stages than layers.
        return Err(SplitError::Uneven { layers: num_layers, stages: pp });
    }
    let middle_stages = pp - u64::from(first.is_some()) - u64::from(last.is_some());
    let middle_layers = num_layers - f - l;
    let per_middle = if middle_stages == 0 {
        if middle_layers != 0 {
            return Err(SplitError::Uneven { layers: middle_layers, stages: 0 });
        }
        0
    } else {
        if middle_layers % middle_stages != 0 {
            return Err(SplitError::Uneven { layers: middle_layers, stages: middle_stages });
        }
        middle_layers / middle_stages
    };
    let stage_layers = |p: u64| -> u64 {
        if p == 0 && first.is_some() {
            f
        } else if p == pp - 1 && last.is_some() {
            l
        } else {
            per_middle
        }
    };
    for p in 0..pp {
        let n = stage_layers(p);
        if n % vpp != 0 {
            return Err(SplitError::VirtualUneven { layers: n, vpp });
        }
    }
    // Chunks only for stages with layers: each of those has at least VPP layers (it divides into VPP chunks), so
    // there are at most num_layers chunks, however large PP and VPP are. A stage without layers (the empty middle an
    // uneven split can leave, which the rules report) has no chunks.
    let filled: Vec<usize> = (0..pp).filter(|&p| stage_layers(p) > 0).map(|p| p as usize).collect();
    let mut stages: Vec<Vec<Chunk>> = vec![Vec::new(); pp as usize];
    for &p in &filled {
        stages[p].reserve_exact(vpp as usize);
    }
    let mut next = 0u64;
    for v in 0..if filled.is_empty() { 0 } else { vpp } {
        for &p in &filled {
            let count = stage_layers(p as u64) / vpp;
            stages[p].push(Chunk { virtual_rank: v, start: next, count });
            next += count;
        }
    }
    Ok(StageSplit::new(stages, vpp))
}

/// The even split with the embedding and/or the loss counted as a layer (see [`split_layers_accounting`]).
fn accounted_split(num_layers: u64, pp: u64, vpp: u64, embedding: bool, loss: bool) -> Result<StageSplit, SplitError> {
    let extra = u64::from(embedding) + u64::from(loss);
    let total = num_layers.saturating_add(extra);
    if pp > num_layers || total % pp != 0 {
        // PP ≤ num_layers also bounds the chunks below: each stage holds total / PP ≥ 1 slots, VPP of them at most.
        return Err(SplitError::AccountedUneven { layers: num_layers, extra, stages: pp });
    }
    let per_stage = total / pp;
    if per_stage % vpp != 0 {
        return Err(SplitError::AccountedVirtualUneven { per_stage, vpp });
    }
    let per_chunk = per_stage / vpp;
    let mut stages: Vec<Vec<Chunk>> = (0..pp).map(|_| Vec::with_capacity(vpp as usize)).collect();
    let mut next = 0u64;
    for v in 0..vpp {
        for (p, stage) in stages.iter_mut().enumerate() {
            let first_chunk = embedding && p == 0 && v == 0;
            let last_chunk = loss && p as u64 == pp - 1 && v == vpp - 1;
            let count = per_chunk - u64::from(first_chunk) - u64::from(last_chunk);
            stage.push(Chunk { virtual_rank: v, start: next, count });
            next += count;
        }
    }
    Ok(StageSplit::new(stages, vpp))
}

/// Fraction of the step the pipeline idles: (PP − 1) / (VPP · m).
// Source: Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters", §2.2 (eq. for the
// interleaved schedule's bubble, (p − 1)/(v·m)).
pub fn bubble_fraction(pp: u64, vpp: u64, microbatches: u64) -> f64 {
    if microbatches == 0 {
        return 0.0;
    }
    (pp.saturating_sub(1)) as f64 / (vpp.max(1) as f64 * microbatches as f64)
}

/// Microbatches whose activations stage `rank` holds at its peak.
// 1F1B: stage p keeps PP − p microbatches in flight (Narayanan 2021 §2.2.1). Interleaved: the warm-up of
// megatron/core/pipeline_parallel/schedules.py `get_pp_rank_microbatches` runs (PP − p − 1)·2 + (VPP − 1)·N chunk
// forwards before the first backward, N = microbatch_group_size_per_vp_stage (default PP), plus the one in steady
// state (each 1F1B step runs a forward, then a backward); each chunk is 1/VPP of the stage's layers, so in units of
// whole-stage microbatches that is that count / VPP.
pub fn microbatches_in_flight(pp: u64, vpp: u64, group: u64, rank: u64, microbatches: u64) -> f64 {
    let pp = pp.max(1);
    let vpp = vpp.max(1);
    let rank = rank.min(pp - 1);
    if pp == 1 {
        return 1.0;
    }
    if vpp == 1 {
        return (pp - rank).min(microbatches.max(1)) as f64;
    }
    let total_chunks = microbatches.max(1).saturating_mul(vpp);
    let warmup = (pp - rank - 1).saturating_mul(2).saturating_add((vpp - 1).saturating_mul(group.max(1))).min(total_chunks);
    (warmup + 1).min(total_chunks) as f64 / vpp as f64
}

/// Microbatches whose last-chunk activations the last stage holds at its peak: what only the last model chunk
/// saves (final norm, logits, loss, MTP) is alive for this many microbatches, not for [`microbatches_in_flight`].
// megatron/core/pipeline_parallel/schedules.py: under 1F1B (`forward_backward_pipelining_without_interleaving`) the
// last stage has no warm-up (PP − (PP − 1) − 1 = 0), so each forward is followed by its own backward: 1. Interleaved
// (`forward_backward_pipelining_with_interleaving`): the last rank's warm-up is (VPP − 1)·N, exactly the first group's
// forwards of chunks 0..VPP−2 (`get_schedule_table`), so the steady state pairs the forward of the last chunk for a
// microbatch with that chunk's backward for the same microbatch: 1 when M is a multiple of N (always with the default
// N = PP). A partial last group of r = M mod N microbatches shifts that pairing, and up to min(1 + (VPP − 1)·(N − r), r)
// last-chunk forwards are alive at once (worked through get_schedule_table in pipeline tests).
pub fn last_chunk_in_flight(pp: u64, vpp: u64, group: u64, microbatches: u64) -> u64 {
    let group = group.max(1);
    let r = microbatches % group;
    if pp <= 1 || vpp <= 1 || r == 0 {
        return 1;
    }
    (vpp - 1).saturating_mul(group - r).saturating_add(1).min(r).max(1)
}

/// Microbatches whose last-chunk activations pipeline rank `rank` holds at its peak: [`last_chunk_in_flight`] on the
/// last rank; on another rank (a layout's standalone MTP chunk) its last chunk's forward for a microbatch comes
/// 2·(PP − 1 − rank) chunk-steps before that chunk's backward.
// megatron/core/pipeline_parallel/schedules.py (interleaved): rank r runs W = (PP − r − 1)·2 + (VPP − 1)·N warm-up
// forwards, then forward W + k with backward k. In forward order chunk c of microbatch j of group g is g·N·VPP + c·N + j,
// in backward order chunk VPP − 1 of it is g·N·VPP + j, so its backward runs at step g·N·VPP + j + W = its forward step
// + 2·(PP − r − 1). The last chunk's forwards are N steps in a row every N·VPP steps, so a window of 2·(PP − r − 1) + 1
// steps holds at most q·N + min(N, rest) of them (q whole periods and a rest). Without interleaving the rank's one
// chunk is its whole stage: PP − r microbatches (1F1B).
pub fn last_chunk_in_flight_at(pp: u64, vpp: u64, group: u64, rank: u64, microbatches: u64) -> u64 {
    let pp = pp.max(1);
    if rank >= pp - 1 {
        return last_chunk_in_flight(pp, vpp, group, microbatches);
    }
    let m = microbatches.max(1);
    if vpp <= 1 {
        return (pp - rank).min(m);
    }
    let group = group.max(1);
    let window = 2 * (pp - 1 - rank) + 1;
    let period = group.saturating_mul(vpp);
    let alive = (window / period).saturating_mul(group).saturating_add(group.min(window % period));
    alive.min(m).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn balanced_split_deals_layers_evenly() {
        // DeepSeek-V3's 61 layers over 16 stages: 61 = 16·3 + 13, so 13 stages of 4 and 3 of 3.
        let s = balanced_split(61, 16);
        let per = s.layers_per_stage();
        assert_eq!(per[..13], [4; 13]);
        assert_eq!(per[13..], [3; 3]);
        assert_eq!(s.layer_indices(15).collect::<Vec<_>>(), [58, 59, 60]);
        // More stages than layers: one layer each, never an empty stage.
        assert_eq!(balanced_split(2, 8).layers_per_stage(), [1, 1]);
    }

    #[test]
    fn even_split_without_vpp() {
        // 32 layers over PP=4: 8 per stage, stage 1 starts at layer 8.
        let s = split_layers(32, 4, 1, None, None).unwrap();
        assert_eq!(s.layers_per_stage(), vec![8, 8, 8, 8]);
        assert_eq!(s.stages[1][0], Chunk { virtual_rank: 0, start: 8, count: 8 });
    }

    #[test]
    fn interleaved_chunks_are_virtual_rank_major() {
        // 16 layers, PP=2, VPP=2: 4 layers per chunk; stage 0 holds layers 0–3 and 8–11, stage 1 4–7 and 12–15.
        let s = split_layers(16, 2, 2, None, None).unwrap();
        assert_eq!(s.stages[0], vec![Chunk { virtual_rank: 0, start: 0, count: 4 }, Chunk { virtual_rank: 1, start: 8, count: 4 }]);
        assert_eq!(s.stages[1], vec![Chunk { virtual_rank: 0, start: 4, count: 4 }, Chunk { virtual_rank: 1, start: 12, count: 4 }]);
    }

    #[test]
    fn deepseek_v3_uneven_stages() {
        // 61 layers, PP=16 with a 1-layer first stage: the other 60 split 4 per stage over 15 stages.
        let s = split_layers(61, 16, 1, Some(1), None).unwrap();
        assert_eq!(s.layers_per_stage()[0], 1);
        assert!(s.layers_per_stage()[1..].iter().all(|&n| n == 4));
        assert_eq!(s.layers_per_stage().iter().sum::<u64>(), 61);
        // 61 does not divide over 16 stages evenly.
        assert_eq!(split_layers(61, 16, 1, None, None), Err(SplitError::Uneven { layers: 61, stages: 16 }));
    }

    #[test]
    fn empty_stages_get_no_chunks() {
        // 8 layers all in the first stage, PP = 4, VPP = 8: stages 1–3 build nothing (an error the rules report), and
        // the first stage's 8 layers make 8 one-layer chunks, 0..8 — 8 chunks in all, not PP·VPP = 32.
        let s = split_layers(8, 4, 8, Some(8), None).unwrap();
        assert_eq!(s.layers_per_stage(), [8, 0, 0, 0]);
        assert_eq!(s.stages[0].iter().map(|c| (c.start, c.count)).collect::<Vec<_>>(), (0..8).map(|i| (i, 1)).collect::<Vec<_>>());
        assert!(s.stages[1..].iter().all(Vec::is_empty));
        // More stages than layers never split, whatever the edges: 32 layers over 2^24 stages.
        assert_eq!(split_layers(32, 1 << 24, 1, Some(32), None), Err(SplitError::Uneven { layers: 32, stages: 1 << 24 }));
    }

    #[test]
    fn bubble_matches_narayanan() {
        // p = 8, m = 32: (8 − 1)/32 = 0.21875; interleaved v = 4: 7/128.
        assert!((bubble_fraction(8, 1, 32) - 0.21875).abs() < 1e-12);
        assert!((bubble_fraction(8, 4, 32) - 7.0 / 128.0).abs() < 1e-12);
    }

    #[test]
    fn in_flight_1f1b() {
        // PP=4 with 1F1B: stage 0 holds 4 microbatches, stage 3 one.
        assert_eq!(microbatches_in_flight(4, 1, 4, 0, 16), 4.0);
        assert_eq!(microbatches_in_flight(4, 1, 4, 3, 16), 1.0);
        // Fewer microbatches than stages caps it.
        assert_eq!(microbatches_in_flight(4, 1, 4, 0, 2), 2.0);
        // The last stage has no warm-up: its last-chunk activations live for one microbatch.
        assert_eq!(last_chunk_in_flight(4, 1, 4, 16), 1);
    }

    #[test]
    fn in_flight_interleaved() {
        // PP=4, VPP=2, stage 0: warm-up (4−0−1)·2 + (2−1)·4 = 10 chunk forwards, +1 = 11 chunks = 5.5 stage-microbatches.
        assert_eq!(microbatches_in_flight(4, 2, 4, 0, 16), 5.5);
        // last stage: (0)·2 + 4 = 4, +1 = 5 chunks = 2.5.
        assert_eq!(microbatches_in_flight(4, 2, 4, 3, 16), 2.5);
    }

    #[test]
    fn in_flight_honours_microbatch_group_size() {
        // PP=4, VPP=2, N = microbatch_group_size_per_vp_stage = 8, 16 microbatches (32 chunk forwards).
        // Stage 0: (4−0−1)·2 + (2−1)·8 = 14 warm-up forwards, +1 = 15 chunks = 7.5 stage-microbatches (5.5 with N = 4).
        assert_eq!(microbatches_in_flight(4, 2, 8, 0, 16), 7.5);
        // Stage 3: 0 + 8 = 8, +1 = 9 chunks = 4.5.
        assert_eq!(microbatches_in_flight(4, 2, 8, 3, 16), 4.5);
        // Only 3 microbatches (6 chunk forwards): the warm-up of 14 is capped at all 6, i.e. 3 stage-microbatches.
        assert_eq!(microbatches_in_flight(4, 2, 8, 0, 3), 3.0);
    }

    #[test]
    fn last_chunk_in_flight_on_other_ranks_follows_the_schedule_order() {
        // Brute force from schedules.py's order: rank r runs W = 2·(PP − r − 1) + (VPP − 1)·N warm-up forwards, then
        // at step s forward s, then backward s − W. Forward item g·N·VPP + c·N + j is chunk c of microbatch g·N + j;
        // backward item g·N·VPP + c'·N + j is chunk VPP − 1 − c' of it. Count the last chunk's forwards whose backward
        // has not run, after each step's forward.
        for (pp, vpp, n, m) in [(2u64, 8u64, 2u64, 16u64), (4, 2, 4, 16), (8, 4, 8, 64), (4, 3, 4, 12), (16, 2, 16, 32)] {
            for r in 0..pp - 1 {
                let w = 2 * (pp - r - 1) + (vpp - 1) * n;
                let total = m * vpp;
                let (mut alive, mut peak) = (std::collections::BTreeSet::new(), 0);
                for s in 0..total + w {
                    if s < total && (s % (n * vpp)) / n == vpp - 1 {
                        alive.insert(s / (n * vpp) * n + s % n);
                    }
                    peak = peak.max(alive.len() as u64);
                    if s >= w && s - w < total && (s - w) % (n * vpp) / n == 0 {
                        alive.remove(&((s - w) / (n * vpp) * n + (s - w) % n));
                    }
                }
                assert_eq!(last_chunk_in_flight_at(pp, vpp, n, r, m), peak, "PP {pp} VPP {vpp} N {n} rank {r}");
            }
        }
        // Without interleaving the last chunk is the stage: PP − r microbatches (1F1B).
        assert_eq!(last_chunk_in_flight_at(4, 1, 4, 1, 16), 3);
        // The last rank is last_chunk_in_flight's.
        assert_eq!(last_chunk_in_flight_at(2, 2, 3, 1, 5), 2);
    }

    #[test]
    fn last_chunk_in_flight_follows_the_schedule_table() {
        // Default N = PP with M a multiple of it: one microbatch's last chunk at a time.
        assert_eq!(last_chunk_in_flight(4, 5, 4, 256), 1);
        // PP=2, VPP=2, N=3, M=5 (5 mod 3 = 2 ≥ PP, which the schedule accepts). get_schedule_table:
        // group 0 = (mb,chunk) (0,0)(1,0)(2,0)(0,1)(1,1)(2,1); group 1 (last, 2 microbatches) = (3,0)(4,0)(3,1)(4,1).
        // Last rank: warm-up (2−1−1)·2 + (2−1)·3 = 3 = F(0,0)F(1,0)F(2,0). Steady step k runs forward k+3, then
        // backward k (the same table with chunks reversed): k=0..2 pair F(mb,1) with B(mb,1) for mb 0,1,2; k=3,4:
        // F(3,0)/B(0,0), F(4,0)/B(1,0); k=5: F(3,1) — chunk 1 of mb 3 alive — with B(2,0); k=6: F(4,1) with mb 3's
        // chunk 1 still alive (B(3,1) is this step's backward): 2 at once. Formula: min(1 + (2−1)·(3−2), 2) = 2.
        assert_eq!(last_chunk_in_flight(2, 2, 3, 5), 2);
        assert_eq!(last_chunk_in_flight(2, 2, 3, 6), 1);
    }
}
