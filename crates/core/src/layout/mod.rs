//! Rank groups exactly as Megatron-Core builds them.
//!
//! Megatron-Core (`megatron/core/parallel_state.py`) numbers ranks as a mixed-radix number
//! over an order string such as `tp-cp-ep-dp-pp`: the leftmost token varies fastest. Two
//! `RankGenerator`s share that order: the dense one, `RankGenerator(tp, ep=1, dp, pp, cp)`,
//! and the expert one, `RankGenerator(tp=etp, ep, dp=edp, pp, cp=1)`. Every group kind is
//! the set of ranks that differ only in a chosen subset of dimensions (a mask), built by
//! `generate_masked_orthogonal_rank_groups`. This module has that one mechanism: [`Meshes`] (in
//! `mesh.rs`) describes both generators — the normalised order and each dimension's size and stride —
//! and everything is read off it: the groups ([`build_layout`]), a rank's digits ([`coordinates`]),
//! the NVLink crossings (`crossing.rs`: counted without materialising a group, per kind or per group)
//! and the step-time model's link per group kind ([`Meshes::fits_domain`]). Each [`GroupKind`] just
//! names a generator and a Megatron token. `order.rs` reads the order string as Megatron does.
//!
//! The `gtp_remat` axis that current Megatron-Core injects into the order has size 1 unless
//! generalized tensor parallelism is enabled; a size-1 axis changes no group, so it is not
//! modelled here.

mod crossing;
mod mesh;
mod order;

use serde::{Deserialize, Serialize};

use crate::{Code, Diagnostic};

pub use crossing::{CrossingCount, GroupShape};
pub use mesh::{Mesh, Meshes};
pub use order::{Dim, normalize_order};

#[cfg(test)]
use mesh::mask_of;

/// The largest world whose groups [`build_layout`] lists (see `limits.rs` for why); above it the layout carries its
/// order and NVLink crossings without the group lists. [`coordinates`] has no such limit.
pub use crate::limits::{MAX_CROSSING_WORLD, MAX_LAYOUT_WORLD};

/// Megatron-Core's default order (`initialize_model_parallel`, and training without
/// `--use-tp-pp-dp-mapping`).
pub const DEFAULT_ORDER: &str = "tp-cp-ep-dp-pp";

/// The order Megatron training uses with `--use-tp-pp-dp-mapping`.
pub const TP_PP_DP_ORDER: &str = "tp-cp-ep-pp-dp";

/// Parallel sizes; the data-parallel sizes follow from the world size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MeshSizes {
    pub tp: u64,
    pub pp: u64,
    pub cp: u64,
    pub ep: u64,
    /// Expert tensor parallel size (Megatron's default for it is `tp`).
    pub etp: u64,
}

/// Every group of each kind, as lists of global ranks (each list ascending).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Groups {
    /// Dense generator, token `tp`.
    pub tp: Vec<Vec<u32>>,
    /// Dense generator, token `cp`.
    pub cp: Vec<Vec<u32>>,
    /// Dense generator, token `dp`.
    pub dp: Vec<Vec<u32>>,
    /// Dense generator, token `dp-cp`.
    pub dp_cp: Vec<Vec<u32>>,
    /// Dense generator, token `pp`.
    pub pp: Vec<Vec<u32>>,
    /// Dense generator, token `tp-pp` (Megatron's model-parallel group).
    pub tp_pp: Vec<Vec<u32>>,
    /// Expert generator, token `ep`.
    pub ep: Vec<Vec<u32>>,
    /// Expert generator, token `tp`.
    pub etp: Vec<Vec<u32>>,
    /// Expert generator, token `dp`.
    pub edp: Vec<Vec<u32>>,
}

/// How many groups of one kind contain ranks from more than one NVLink domain.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Crossing {
    /// [`GroupKind::key`], e.g. `"tp"`, `"dp_cp"`, `"ep"`.
    pub kind: String,
    pub groups_crossing: u64,
    pub total_groups: u64,
    pub max_domains_spanned: u64,
}

/// All rank groups of one plan, with a per-rank index for O(1) [`Layout::group_index`].
#[derive(Serialize, Deserialize, Clone, Debug)]
#[serde(from = "LayoutFields")]
pub struct Layout {
    /// The normalised order actually used (lowercase, missing size-1 dimensions appended).
    pub order: String,
    pub groups: Groups,
    /// Kinds with at least one group spanning several NVLink domains, in [`GroupKind::all`] order.
    pub crossings: Vec<Crossing>,
    /// Built from `groups` on construction and on deserialisation; call
    /// [`Layout::reindex`] after editing `groups` by hand.
    #[serde(skip)]
    index: RankIndex,
}

/// A rank's digit along every dimension of both meshes.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Coordinates {
    pub tp: u64,
    pub cp: u64,
    pub dp: u64,
    /// The same in the dense and the expert mesh (Megatron-Core asserts their pipeline groups agree).
    pub pp: u64,
    pub etp: u64,
    pub ep: u64,
    pub edp: u64,
}

/// The kinds of group meshplan reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupKind {
    Tp,
    Cp,
    Dp,
    DpCp,
    Pp,
    TpPp,
    Ep,
    Etp,
    Edp,
}

impl GroupKind {
    /// Upstream: none (meshplan's reporting order).
    pub fn all() -> [GroupKind; 9] {
        use GroupKind::*;
        [Tp, Cp, Dp, DpCp, Pp, TpPp, Ep, Etp, Edp]
    }

    /// Upstream: none (position in [`GroupKind::all`], used by the per-rank index).
    fn slot(self) -> usize {
        self as usize
    }

    /// Upstream: none (the JSON key of this kind in [`Groups`]).
    pub fn key(&self) -> &'static str {
        match self {
            GroupKind::Tp => "tp",
            GroupKind::Cp => "cp",
            GroupKind::Dp => "dp",
            GroupKind::DpCp => "dp_cp",
            GroupKind::Pp => "pp",
            GroupKind::TpPp => "tp_pp",
            GroupKind::Ep => "ep",
            GroupKind::Etp => "etp",
            GroupKind::Edp => "edp",
        }
    }

    /// Upstream: none (a human label for the UI).
    pub fn label(&self) -> &'static str {
        match self {
            GroupKind::Tp => "Tensor parallel",
            GroupKind::Cp => "Context parallel",
            GroupKind::Dp => "Data parallel",
            GroupKind::DpCp => "Data + context parallel",
            GroupKind::Pp => "Pipeline parallel",
            GroupKind::TpPp => "Model parallel (tensor + pipeline)",
            GroupKind::Ep => "Expert parallel",
            GroupKind::Etp => "Expert tensor parallel",
            GroupKind::Edp => "Expert data parallel",
        }
    }

    /// Upstream: parallel_state.py, initialize_model_parallel (groups built from `expert_decoder_rank_generator`).
    pub fn is_expert(&self) -> bool {
        matches!(self, GroupKind::Ep | GroupKind::Etp | GroupKind::Edp)
    }

    /// Upstream: parallel_state.py, RankGenerator.get_mask (the dimensions of [`GroupKind::megatron_token`]).
    pub(crate) fn mask(self) -> u8 {
        mesh::mask_of(self.megatron_token())
    }

    /// Upstream: parallel_state.py, initialize_model_parallel (the `get_ranks(token)` each group is built from).
    pub fn megatron_token(&self) -> &'static str {
        match self {
            GroupKind::Tp | GroupKind::Etp => "tp",
            GroupKind::Cp => "cp",
            GroupKind::Dp | GroupKind::Edp => "dp",
            GroupKind::DpCp => "dp-cp",
            GroupKind::Pp => "pp",
            GroupKind::TpPp => "tp-pp",
            GroupKind::Ep => "ep",
        }
    }
}

impl Groups {
    /// Upstream: none (field access by kind).
    pub fn of(&self, kind: GroupKind) -> &Vec<Vec<u32>> {
        match kind {
            GroupKind::Tp => &self.tp,
            GroupKind::Cp => &self.cp,
            GroupKind::Dp => &self.dp,
            GroupKind::DpCp => &self.dp_cp,
            GroupKind::Pp => &self.pp,
            GroupKind::TpPp => &self.tp_pp,
            GroupKind::Ep => &self.ep,
            GroupKind::Etp => &self.etp,
            GroupKind::Edp => &self.edp,
        }
    }
}

impl Layout {
    /// Upstream: none (meshplan-only constructor; builds the per-rank index).
    pub fn new(order: String, groups: Groups, crossings: Vec<Crossing>) -> Layout {
        let index = RankIndex::build(&groups);
        Layout { order, groups, crossings, index }
    }

    /// Upstream: none (field access by kind).
    pub fn groups_of(&self, kind: GroupKind) -> &Vec<Vec<u32>> {
        self.groups.of(kind)
    }

    /// Upstream: none (meshplan-only; a table lookup, O(1)).
    /// Which group of `kind` holds `rank`, or `None` for a rank outside the layout.
    pub fn group_index(&self, kind: GroupKind, rank: u32) -> Option<usize> {
        self.index.get(kind, rank)
    }

    /// Upstream: none (meshplan-only). Every group holding `rank`: its kind, index and ranks, in [`GroupKind::all`]
    /// order (none for a rank outside the layout).
    pub fn groups_of_rank(&self, rank: u32) -> Vec<(GroupKind, usize, &[u32])> {
        GroupKind::all()
            .iter()
            .filter_map(|&k| {
                let i = self.group_index(k, rank)?;
                Some((k, i, self.groups_of(k).get(i)?.as_slice()))
            })
            .collect()
    }

    /// Upstream: none (the number of ranks laid out).
    pub fn world(&self) -> u64 {
        self.index.world as u64
    }

    /// Upstream: none (meshplan-only NVLink analysis, for the grid).
    /// Whether group `group` of `kind` holds ranks of more than one NVLink domain of `nvlink_domain_size`
    /// ranks (0 read as 1): its first and last rank lie in different domains, as [`Meshes::group_crosses`]
    /// computes from the mesh. `false` for a group that does not exist. O(1).
    pub fn group_crosses(&self, kind: GroupKind, group: usize, nvlink_domain_size: u64) -> bool {
        let domain = nvlink_domain_size.max(1);
        self.groups.of(kind).get(group).is_some_and(|g| match (g.first(), g.last()) {
            (Some(&first), Some(&last)) => u64::from(first) / domain != u64::from(last) / domain,
            _ => false,
        })
    }

    /// Upstream: none (meshplan-only NVLink analysis, for the grid).
    /// Whether the group of `kind` that holds `rank` crosses an NVLink domain ([`Layout::group_crosses`]);
    /// `false` for a rank outside the layout. O(1).
    pub fn rank_crosses(&self, kind: GroupKind, rank: u32, nvlink_domain_size: u64) -> bool {
        self.group_index(kind, rank).is_some_and(|g| self.group_crosses(kind, g, nvlink_domain_size))
    }

    /// Upstream: none (rebuilds the per-rank index after `groups` was edited).
    pub fn reindex(&mut self) {
        self.index = RankIndex::build(&self.groups);
    }
}

impl PartialEq for Layout {
    /// Upstream: none (the index is derived from `groups`, so it is not compared).
    fn eq(&self, other: &Self) -> bool {
        self.order == other.order && self.groups == other.groups && self.crossings == other.crossings
    }
}

/// The serialised fields of a [`Layout`]; deserialising rebuilds the index.
#[derive(Deserialize)]
struct LayoutFields {
    order: String,
    groups: Groups,
    crossings: Vec<Crossing>,
}

impl From<LayoutFields> for Layout {
    /// Upstream: none (serde glue).
    fn from(f: LayoutFields) -> Layout {
        Layout::new(f.order, f.groups, f.crossings)
    }
}

impl Coordinates {
    /// Upstream: none (meshplan-only).
    /// The rank's position inside its group of a one-dimension kind; `None` for `DpCp` and `TpPp`.
    pub fn in_group(&self, kind: GroupKind) -> Option<u64> {
        match kind {
            GroupKind::Tp => Some(self.tp),
            GroupKind::Cp => Some(self.cp),
            GroupKind::Dp => Some(self.dp),
            GroupKind::Pp => Some(self.pp),
            GroupKind::Ep => Some(self.ep),
            GroupKind::Etp => Some(self.etp),
            GroupKind::Edp => Some(self.edp),
            GroupKind::DpCp | GroupKind::TpPp => None,
        }
    }
}

/// Group index of every rank for every kind: `slots[kind * world + rank]`, `u32::MAX` for none.
#[derive(Clone, Debug, Default)]
struct RankIndex {
    world: usize,
    slots: Vec<u32>,
}

impl RankIndex {
    /// Upstream: none (meshplan-only; scatters each group's position to its ranks).
    fn build(groups: &Groups) -> RankIndex {
        // Every kind partitions the world, so the tp groups' total length is the world.
        let world = groups.tp.iter().map(Vec::len).sum::<usize>();
        let mut slots = vec![u32::MAX; world.saturating_mul(GroupKind::all().len())];
        for kind in GroupKind::all() {
            let base = kind.slot().saturating_mul(world);
            for (g, group) in groups.of(kind).iter().enumerate() {
                let g = u32::try_from(g).unwrap_or(u32::MAX);
                for &rank in group {
                    let rank = rank as usize;
                    if rank < world
                        && let Some(slot) = slots.get_mut(base.saturating_add(rank))
                    {
                        *slot = g;
                    }
                }
            }
        }
        RankIndex { world, slots }
    }

    /// Upstream: none (table lookup).
    fn get(&self, kind: GroupKind, rank: u32) -> Option<usize> {
        let rank = rank as usize;
        if rank >= self.world {
            return None;
        }
        let slot = *self.slots.get(kind.slot().saturating_mul(self.world).saturating_add(rank))?;
        (slot != u32::MAX).then_some(slot as usize)
    }
}

/// Upstream: parallel_state.py, initialize_model_parallel (every `get_ranks` call of the dense and
/// expert generators that meshplan reports).
pub fn build_layout(world: u64, sizes: &MeshSizes, order: &str, nvlink_domain_size: u64) -> Result<Layout, Diagnostic> {
    // Checking the sizes and the order costs nothing per rank: their errors come first, whatever the world.
    let meshes = Meshes::resolve(world, sizes, order)?;
    // Above the listing limit the groups are left out (the report says so); crossings are counted from the mesh,
    // up to their own limit.
    if world > MAX_CROSSING_WORLD {
        return Ok(Layout::new(meshes.order_string(), Groups::default(), Vec::new()));
    }
    if world > MAX_LAYOUT_WORLD {
        return Ok(Layout::new(meshes.order_string(), Groups::default(), meshes.crossings(nvlink_domain_size)));
    }
    let of = |kind: GroupKind| meshes.mesh_of(kind).groups(kind.mask());
    let groups = Groups {
        tp: of(GroupKind::Tp),
        cp: of(GroupKind::Cp),
        dp: of(GroupKind::Dp),
        dp_cp: of(GroupKind::DpCp),
        pp: of(GroupKind::Pp),
        tp_pp: of(GroupKind::TpPp),
        ep: of(GroupKind::Ep),
        etp: of(GroupKind::Etp),
        edp: of(GroupKind::Edp),
    };
    Ok(Layout::new(meshes.order_string(), groups, meshes.crossings(nvlink_domain_size)))
}

/// Upstream: parallel_state.py, generate_masked_orthogonal_rank_groups (`decompose` of a rank
/// over the ordered sizes of the dense and the expert RankGenerator).
pub fn coordinates(rank: u64, world: u64, sizes: &MeshSizes, order: &str) -> Result<Coordinates, Diagnostic> {
    let m = Meshes::resolve(world, sizes, order)?;
    if rank >= world {
        return Err(Diagnostic::new(
            Code::RankOutOfRange,
            format!("rank {rank} is outside a world of {world} ranks (0 to {})", world - 1),
            format!("Ask for a rank from 0 to {}.", world - 1),
        ));
    }
    Ok(Coordinates {
        tp: m.dense.coordinate(rank, Dim::Tp),
        cp: m.dense.coordinate(rank, Dim::Cp),
        dp: m.dense.coordinate(rank, Dim::Dp),
        pp: m.dense.coordinate(rank, Dim::Pp),
        etp: m.expert.coordinate(rank, Dim::Tp),
        ep: m.expert.coordinate(rank, Dim::Ep),
        edp: m.expert.coordinate(rank, Dim::Dp),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use proptest::test_runner::TestCaseError;
    use std::collections::BTreeSet;

    fn sizes(tp: u64, pp: u64, cp: u64, ep: u64, etp: u64) -> MeshSizes {
        MeshSizes { tp, pp, cp, ep, etp }
    }

    fn lay(world: u64, s: MeshSizes, order: &str) -> Layout {
        build_layout(world, &s, order, 8).unwrap_or_else(|d| panic!("{world} {s:?} {order}: {d:?}"))
    }

    fn code(r: Result<impl std::fmt::Debug, Diagnostic>) -> Code {
        match r {
            Ok(v) => panic!("expected an error, got {v:?}"),
            Err(d) => {
                assert!(d.is_error());
                d.code
            }
        }
    }

    fn singletons(world: u32) -> Vec<Vec<u32>> {
        (0..world).map(|r| vec![r]).collect()
    }

    // The docstring of initialize_model_parallel: 16 GPUs, tp = 2, pp = 4, default order.
    #[test]
    fn megatron_docstring_tp2_pp4() {
        // dp = 16 / (2·4) = 2; with cp = ep = 1 the order tp-cp-ep-dp-pp gives
        // rank = tp + 2·dp + 4·pp.
        let l = lay(16, sizes(2, 4, 1, 1, 2), DEFAULT_ORDER);
        assert_eq!(l.order, "tp-cp-ep-dp-pp");
        // Docstring: "8 tensor model-parallel groups: [g0, g1], [g2, g3], ..., [g14, g15]".
        let tp: Vec<Vec<u32>> = (0..8).map(|i| vec![2 * i, 2 * i + 1]).collect();
        assert_eq!(l.groups.tp, tp);
        // Docstring: "8 data_parallel groups: [g0, g2], [g1, g3], [g4, g6], [g5, g7], ...".
        let dp = vec![
            vec![0, 2], vec![1, 3], vec![4, 6], vec![5, 7],
            vec![8, 10], vec![9, 11], vec![12, 14], vec![13, 15],
        ];
        assert_eq!(l.groups.dp, dp);
        // Docstring: "4 pipeline model-parallel groups: [g0, g4, g8, g12], [g1, g5, g9, g13], ...".
        let pp = vec![vec![0, 4, 8, 12], vec![1, 5, 9, 13], vec![2, 6, 10, 14], vec![3, 7, 11, 15]];
        assert_eq!(l.groups.pp, pp);
        // tp-pp: members tp + 4·pp = {0,1,4,5,8,9,12,13}, one group per dp (bases 0 and 2).
        assert_eq!(l.groups.tp_pp, vec![vec![0, 1, 4, 5, 8, 9, 12, 13], vec![2, 3, 6, 7, 10, 11, 14, 15]]);
        assert_eq!(l.groups.cp, singletons(16));
        assert_eq!(l.groups.dp_cp, dp);
        // Expert mesh with etp = tp = 2, ep = 1: expert dp = 16 / (2·1·4) = 2, same layout.
        assert_eq!(l.groups.etp, tp);
        assert_eq!(l.groups.ep, singletons(16));
        assert_eq!(l.groups.edp, dp);
        // NVLink domains of 8: only pp and tp-pp groups (ranks 0..15 step 4) leave a domain.
        assert_eq!(
            l.crossings,
            vec![
                Crossing { kind: "pp".into(), groups_crossing: 4, total_groups: 4, max_domains_spanned: 2 },
                Crossing { kind: "tp_pp".into(), groups_crossing: 2, total_groups: 2, max_domains_spanned: 2 },
            ]
        );
        // Rank 13 = 1 + 2·0 + 4·3.
        assert_eq!(l.group_index(GroupKind::Tp, 13), Some(6));
        assert_eq!(l.group_index(GroupKind::Pp, 13), Some(1));
        assert_eq!(l.group_index(GroupKind::Dp, 13), Some(7));
        assert_eq!(l.group_index(GroupKind::Tp, 16), None);
        let c = coordinates(13, 16, &sizes(2, 4, 1, 1, 2), DEFAULT_ORDER).unwrap();
        assert_eq!(c, Coordinates { tp: 1, cp: 0, dp: 0, pp: 3, etp: 1, ep: 0, edp: 0 });
    }

    // The context_parallel_size docstring: 8 GPUs, tp = 4, cp = 2.
    #[test]
    fn megatron_docstring_tp4_cp2() {
        // dp = 8 / (4·2) = 1; rank = tp + 4·cp.
        let l = lay(8, sizes(4, 1, 2, 1, 4), DEFAULT_ORDER);
        // Docstring: "[GPU0, GPU4], [GPU1, GPU5], [GPU2, GPU6], and [GPU3, GPU7]".
        assert_eq!(l.groups.cp, vec![vec![0, 4], vec![1, 5], vec![2, 6], vec![3, 7]]);
        // Docstring: "One chunk is processed by GPU0-3, the other chunk is processed by GPU4-7".
        assert_eq!(l.groups.tp, vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
        assert_eq!(l.groups.dp, singletons(8));
        assert_eq!(l.groups.dp_cp, l.groups.cp);
    }

    #[test]
    fn context_parallel_with_expert_parallel() {
        // world 16, tp = cp = pp = 2 → dp = 16 / 8 = 2.
        // Dense strides in tp-cp-ep-dp-pp: tp 1, cp 2, ep (size 1) 4, dp 4, pp 8.
        let s = sizes(2, 2, 2, 2, 2);
        let l = lay(16, s, DEFAULT_ORDER);
        // cp: r and r + 2, bases tp + 4·dp + 8·pp = 0, 1, 4, 5, 8, 9, 12, 13.
        let cp = vec![
            vec![0, 2], vec![1, 3], vec![4, 6], vec![5, 7],
            vec![8, 10], vec![9, 11], vec![12, 14], vec![13, 15],
        ];
        assert_eq!(l.groups.cp, cp);
        // dp: r and r + 4, bases tp + 2·cp + 8·pp = 0, 1, 2, 3, 8, 9, 10, 11.
        let dp = vec![
            vec![0, 4], vec![1, 5], vec![2, 6], vec![3, 7],
            vec![8, 12], vec![9, 13], vec![10, 14], vec![11, 15],
        ];
        assert_eq!(l.groups.dp, dp);
        // dp-cp: offsets 2·cp + 4·dp = 0, 2, 4, 6; bases tp + 8·pp = 0, 1, 8, 9.
        assert_eq!(l.groups.dp_cp, vec![vec![0, 2, 4, 6], vec![1, 3, 5, 7], vec![8, 10, 12, 14], vec![9, 11, 13, 15]]);
        // pp: r and r + 8.
        assert_eq!(l.groups.pp, (0..8).map(|r| vec![r, r + 8]).collect::<Vec<_>>());
        // tp-pp: offsets tp + 8·pp = 0, 1, 8, 9; bases 2·cp + 4·dp = 0, 2, 4, 6.
        assert_eq!(l.groups.tp_pp, vec![vec![0, 1, 8, 9], vec![2, 3, 10, 11], vec![4, 5, 12, 13], vec![6, 7, 14, 15]]);
        // Expert mesh: etp 2, cp 1, ep 2, expert dp = 16 / (2·2·2) = 2, pp 2.
        // Strides: etp 1, ep 2, dp 4, pp 8 — ep lands where dense cp was.
        assert_eq!(l.groups.ep, cp);
        assert_eq!(l.groups.edp, dp);
        // Rank 13 = 1 + 2·0 + 4·1 + 8·1 in both meshes.
        let c = coordinates(13, 16, &s, DEFAULT_ORDER).unwrap();
        assert_eq!(c, Coordinates { tp: 1, cp: 0, dp: 1, pp: 1, etp: 1, ep: 0, edp: 1 });
    }

    #[test]
    fn moe_world8_tp2_ep8_etp1() {
        // Dense: dp = 8 / 2 = 4; rank = tp + 2·dp.
        let l = build_layout(8, &sizes(2, 1, 1, 8, 1), DEFAULT_ORDER, 4).unwrap();
        assert_eq!(l.groups.tp, vec![vec![0, 1], vec![2, 3], vec![4, 5], vec![6, 7]]);
        assert_eq!(l.groups.dp, vec![vec![0, 2, 4, 6], vec![1, 3, 5, 7]]);
        // Expert: expert dp = 8 / (1·8·1) = 1; ep stride = etp·cp = 1, so one group of all 8.
        assert_eq!(l.groups.ep, vec![(0..8).collect::<Vec<u32>>()]);
        assert_eq!(l.groups.etp, singletons(8));
        assert_eq!(l.groups.edp, singletons(8));
        // Domains of 4 ranks: dp groups {0,2,4,6} and the ep group span domains 0 and 1.
        let kinds: Vec<&str> = l.crossings.iter().map(|c| c.kind.as_str()).collect();
        assert_eq!(kinds, ["dp", "dp_cp", "ep"]);
        assert_eq!(l.crossings[2], Crossing { kind: "ep".into(), groups_crossing: 1, total_groups: 1, max_domains_spanned: 2 });
        let c = coordinates(5, 8, &sizes(2, 1, 1, 8, 1), DEFAULT_ORDER).unwrap();
        // 5 = 1 + 2·2 densely; 5 = ep 5 in the expert mesh.
        assert_eq!(c, Coordinates { tp: 1, cp: 0, dp: 2, pp: 0, etp: 0, ep: 5, edp: 0 });
    }

    #[test]
    fn tp_pp_dp_mapping_order() {
        // --use-tp-pp-dp-mapping: world 16, tp = 2, pp = 2 → dp = 4.
        // Strides in tp-cp-ep-pp-dp: tp 1, cp 2, ep 2, pp 2, dp 4.
        let l = lay(16, sizes(2, 2, 1, 1, 2), TP_PP_DP_ORDER);
        assert_eq!(l.order, "tp-cp-ep-pp-dp");
        // pp: r and r + 2, bases tp + 4·dp = 0, 1, 4, 5, 8, 9, 12, 13.
        let pp = vec![
            vec![0, 2], vec![1, 3], vec![4, 6], vec![5, 7],
            vec![8, 10], vec![9, 11], vec![12, 14], vec![13, 15],
        ];
        assert_eq!(l.groups.pp, pp);
        // dp: r + 4·k, bases tp + 2·pp = 0, 1, 2, 3.
        let dp = vec![vec![0, 4, 8, 12], vec![1, 5, 9, 13], vec![2, 6, 10, 14], vec![3, 7, 11, 15]];
        assert_eq!(l.groups.dp, dp);
        // tp-pp: offsets 0, 1, 2, 3 — model-parallel groups are contiguous blocks of 4.
        assert_eq!(l.groups.tp_pp, vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7], vec![8, 9, 10, 11], vec![12, 13, 14, 15]]);

        // MoE on this order: etp = 1, ep = 2 → expert dp = 16 / (1·2·2) = 4 = dp, as required when
        // pp is not last. Expert strides: ep 1, pp 2, dp 4, so the pp groups agree.
        let l = lay(16, sizes(2, 2, 1, 2, 1), TP_PP_DP_ORDER);
        assert_eq!(l.groups.pp, pp);
        assert_eq!(l.groups.ep, (0..8).map(|i| vec![2 * i, 2 * i + 1]).collect::<Vec<_>>());
        assert_eq!(l.groups.edp, dp);
    }

    #[test]
    fn order_normalisation() {
        let s = sizes(2, 2, 1, 1, 2);
        assert_eq!(normalize_order("tp-cp-ep-dp-pp", &s).unwrap(), "tp-cp-ep-dp-pp");
        // Lowercased; missing size-1 tokens appended in name_to_size order (tp, pp, dp, ep, cp).
        assert_eq!(normalize_order("TP-DP-PP", &s).unwrap(), "tp-dp-pp-ep-cp");
        assert_eq!(normalize_order("pp-tp", &s).unwrap(), "pp-tp-dp-ep-cp");
        assert_eq!(lay(8, s, "Tp-Pp-Dp").order, "tp-pp-dp-ep-cp");
        // tp may be left out only when both tp and etp are 1.
        assert_eq!(normalize_order("cp-ep-dp-pp", &sizes(1, 1, 1, 1, 1)).unwrap(), "cp-ep-dp-pp-tp");
        assert_eq!(code(normalize_order("cp-ep-dp-pp", &sizes(1, 1, 1, 1, 2))), "order-missing-dimension");
        // dp is unknown to normalize_order, but build_layout refuses it missing when dp > 1.
        assert_eq!(normalize_order("tp-pp", &s).unwrap(), "tp-pp-dp-ep-cp");
        assert_eq!(code(build_layout(8, &s, "tp-pp", 8)), "order-missing-dimension");
        assert_eq!(lay(4, s, "tp-pp").order, "tp-pp-dp-ep-cp");
    }

    #[test]
    fn order_errors_name_the_token() {
        let s = sizes(1, 1, 1, 8, 1);
        let d = build_layout(8, &s, "tp-cp-dp-pp", 8).unwrap_err();
        assert_eq!(d.code, "order-missing-dimension");
        assert!(d.message.contains("\"ep\"") && d.message.contains("ep = 8"), "{}", d.message);
        assert!(d.fix.contains("tp-cp-ep-dp-pp"), "{}", d.fix);

        let d = normalize_order("tp-xp-dp-pp", &s).unwrap_err();
        assert_eq!(d.code, "order-invalid");
        assert!(d.message.contains("\"xp\""), "{}", d.message);
        let d = normalize_order("tp-etp-ep-dp-pp", &s).unwrap_err();
        assert!(d.message.contains("\"etp\"") && d.fix.contains("expert tp"), "{d:?}");
        let d = normalize_order("", &s).unwrap_err();
        assert!(d.code == "order-invalid" && d.message.contains("empty"), "{d:?}");
        let d = normalize_order("tp--pp", &s).unwrap_err();
        assert!(d.message.contains("position 2"), "{}", d.message);
        let d = normalize_order("tp-dp-TP", &s).unwrap_err();
        assert!(d.message.contains("more than once"), "{}", d.message);
        // Megatron does not strip whitespace: " tp" is an unknown token.
        assert_eq!(code(normalize_order(" tp-dp-pp", &s)), "order-invalid");
        // Long garbage is cut in the message.
        let d = normalize_order(&"x".repeat(10_000), &s).unwrap_err();
        assert!(d.message.len() < 300, "{}", d.message.len());
    }

    #[test]
    fn pipeline_agreement_rules() {
        // world 16, tp 2, pp 2, ep 4, etp 1: dp = 16 / 4 = 4, expert dp = 16 / (1·4·2) = 2.
        let s = sizes(2, 2, 1, 4, 1);
        assert_eq!(lay(16, s, DEFAULT_ORDER).groups.edp.len(), 8);
        // pp not last and dp ≠ expert dp: initialize_model_parallel's first assertion.
        assert_eq!(code(build_layout(16, &s, TP_PP_DP_ORDER, 8)), "order-pp-not-last");
        // The assertion reads the order as written: uppercase "PP" does not end with "pp".
        let d = build_layout(16, &s, "TP-CP-EP-DP-PP", 8).unwrap_err();
        assert_eq!(d.code, "order-pp-not-last");
        assert!(d.message.contains("case-sensitively"), "{}", d.message);
        // ... which does not matter with pp = 1 (world 8: dp 4, expert dp 2).
        assert_eq!(lay(8, sizes(2, 1, 1, 4, 1), "TP-CP-EP-DP-PP").order, DEFAULT_ORDER);

        // tp-pp-cp-ep-dp, tp 2, etp 1, pp 2, ep 2: dp = 16/4 = 4 = expert dp = 16/(1·2·2), so the first
        // assertion passes, but pp has stride tp = 2 densely and etp = 1 for experts.
        let s = sizes(2, 2, 1, 2, 1);
        let d = build_layout(16, &s, "tp-pp-cp-ep-dp", 8).unwrap_err();
        assert_eq!(d.code, "order-pp-groups-differ");
        let r = Meshes::resolve_sizes(16, &s, "tp-pp-cp-ep-dp").unwrap();
        assert_ne!(r.dense.groups(mask_of("pp")), r.expert.groups(mask_of("pp")));
        // Same sizes, tp = etp: strides agree.
        assert_eq!(lay(16, sizes(2, 2, 1, 1, 2), "tp-pp-cp-ep-dp").groups.pp.len(), 8);
    }

    #[test]
    fn size_and_world_errors() {
        assert_eq!(code(build_layout(12, &sizes(8, 1, 1, 1, 8), DEFAULT_ORDER, 8)), "world-not-divisible-dense");
        // Expert: etp·ep·pp = 1·16·2 = 32 does not divide 16.
        let d = build_layout(16, &sizes(2, 2, 1, 16, 1), DEFAULT_ORDER, 8).unwrap_err();
        assert_eq!(d.code, "world-not-divisible-expert");
        assert!(d.message.contains("32"), "{}", d.message);
        assert_eq!(code(build_layout(0, &sizes(1, 1, 1, 1, 1), DEFAULT_ORDER, 8)), "mesh-size-zero");
        let d = build_layout(8, &sizes(1, 1, 1, 0, 1), DEFAULT_ORDER, 8).unwrap_err();
        assert!(d.code == "mesh-size-zero" && d.message.starts_with("ep"), "{d:?}");
        assert_eq!(code(normalize_order(DEFAULT_ORDER, &sizes(0, 1, 1, 1, 1))), "mesh-size-zero");
        // Past the listing limit: the order and the crossings, no group lists. One DP group of 2^16 + 8 ranks spans
        // ⌈(2^16 + 8)/8⌉ = 8,193 domains of 8.
        let big_world = build_layout(MAX_LAYOUT_WORLD + 8, &sizes(1, 1, 1, 1, 1), DEFAULT_ORDER, 8).unwrap();
        assert!(big_world.groups.dp.is_empty() && big_world.groups.tp.is_empty());
        let dp = big_world.crossings.iter().find(|c| c.kind == "dp").unwrap();
        assert_eq!((dp.groups_crossing, dp.total_groups, dp.max_domains_spanned), (1, 1, 8193));
        // Sizes of 2^24 with a world of 2^21: products up to 2^72, no overflow.
        let big = 1u64 << 24;
        assert_eq!(code(build_layout(1 << 21, &sizes(big, big, big, big, big), DEFAULT_ORDER, 8)), "world-not-divisible-dense");
        assert_eq!(code(build_layout(1 << 21, &sizes(u64::MAX, u64::MAX, u64::MAX, 1, 1), DEFAULT_ORDER, 8)), "world-not-divisible-dense");
        assert_eq!(code(coordinates(8, 8, &sizes(2, 1, 1, 1, 2), DEFAULT_ORDER)), "rank-out-of-range");
        // coordinates has no world limit.
        let c = coordinates(u64::MAX - 1, u64::MAX, &sizes(1, 1, 1, 1, 1), DEFAULT_ORDER).unwrap();
        assert_eq!(c.dp, u64::MAX - 1);
    }

    #[test]
    fn nvlink_domain_zero_is_one_and_singletons_never_cross() {
        let s = sizes(2, 1, 1, 1, 2);
        let zero = build_layout(4, &s, DEFAULT_ORDER, 0).unwrap();
        let one = build_layout(4, &s, DEFAULT_ORDER, 1).unwrap();
        assert_eq!(zero.crossings, one.crossings);
        // Groups of size > 1 are tp, dp, dp_cp, tp_pp, etp, edp; cp, pp, ep are singletons.
        let kinds: Vec<&str> = one.crossings.iter().map(|c| c.kind.as_str()).collect();
        assert_eq!(kinds, ["tp", "dp", "dp_cp", "tp_pp", "etp", "edp"]);
        assert!(build_layout(4, &s, DEFAULT_ORDER, 4).unwrap().crossings.is_empty());
    }

    #[test]
    fn json_shape_and_round_trip() {
        let l = lay(16, sizes(2, 2, 2, 2, 2), DEFAULT_ORDER);
        let v = serde_json::to_value(&l).unwrap();
        let top: BTreeSet<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(top, BTreeSet::from(["order", "groups", "crossings"]));
        let keys: BTreeSet<&str> = v["groups"].as_object().unwrap().keys().map(String::as_str).collect();
        let expected: BTreeSet<&str> = GroupKind::all().iter().map(|k| k.key()).collect();
        assert_eq!(keys, expected);
        let back: Layout = serde_json::from_value(v).unwrap();
        assert_eq!(back, l);
        for kind in GroupKind::all() {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.key());
            for r in 0..16 {
                assert_eq!(back.group_index(kind, r), l.group_index(kind, r));
            }
        }
        assert_eq!(back.world(), 16);
        // Garbage groups deserialise without panicking; out-of-range ranks are simply not indexed.
        let junk = r#"{"order":"x","crossings":[],"groups":{"tp":[[4000000000],[0]],"cp":[],"dp":[[1,1,1]],
            "dp_cp":[],"pp":[],"tp_pp":[],"ep":[],"etp":[],"edp":[]}}"#;
        let j: Layout = serde_json::from_str(junk).unwrap();
        assert_eq!(j.group_index(GroupKind::Tp, 0), Some(1));
        assert_eq!(j.group_index(GroupKind::Tp, 1), None);
        assert_eq!(j.group_index(GroupKind::Dp, 1), Some(0));
        assert_eq!(j.group_index(GroupKind::Dp, 0), None);
    }

    #[test]
    fn group_kind_metadata() {
        let expert: Vec<GroupKind> = GroupKind::all().into_iter().filter(GroupKind::is_expert).collect();
        assert_eq!(expert, [GroupKind::Ep, GroupKind::Etp, GroupKind::Edp]);
        for (i, kind) in GroupKind::all().into_iter().enumerate() {
            assert_eq!(kind.slot(), i, "the per-rank index relies on declaration order = all() order");
        }
        for kind in GroupKind::all() {
            assert!(!kind.label().is_empty());
            assert!(kind.megatron_token().split('-').all(|t| Dim::from_token(t).is_some()));
        }
    }

    #[test]
    fn sixteen_k_ranks_are_consistent() {
        // 16,384 ranks: tp 8, cp 2, pp 4 → dp 256; etp 1, ep 8 → expert dp 512.
        let s = sizes(8, 4, 2, 8, 1);
        let l = build_layout(16_384, &s, DEFAULT_ORDER, 8).unwrap();
        check_layout(&l, 16_384, &s, DEFAULT_ORDER).unwrap();
    }

    /// Run with `cargo test -p meshplan-core --profile bench layout_timing -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn layout_timing() {
        let s = sizes(8, 4, 2, 8, 1);
        let runs = 50u32;
        let start = std::time::Instant::now();
        for _ in 0..runs {
            std::hint::black_box(build_layout(16_384, &s, DEFAULT_ORDER, 8).unwrap());
        }
        let per = start.elapsed() / runs;
        let l = build_layout(16_384, &s, DEFAULT_ORDER, 8).unwrap();
        let start = std::time::Instant::now();
        let mut sum = 0usize;
        for kind in GroupKind::all() {
            for r in 0..16_384 {
                sum += l.group_index(kind, r).unwrap_or(0);
            }
        }
        let lookups = start.elapsed();
        println!("build_layout(16384 ranks): {per:?} per layout; 9 × 16384 group_index: {lookups:?} ({sum})");
    }

    fn divisors(n: u64) -> Vec<u64> {
        (1..=n).filter(|d| n.is_multiple_of(*d)).collect()
    }

    /// A valid mesh: world = tp·cp·pp·dp ≤ 4096 and etp·ep dividing world / pp.
    fn mesh_case() -> impl Strategy<Value = (u64, MeshSizes)> {
        let dim = prop::sample::select(vec![1u64, 1, 2, 3, 4, 8]);
        (dim.clone(), dim.clone(), dim.clone(), dim, any::<prop::sample::Index>(), any::<prop::sample::Index>()).prop_map(
            |(tp, cp, pp, dp, i, j)| {
                let world = tp * cp * pp * dp;
                let d1 = divisors(world / pp);
                let etp = d1[i.index(d1.len())];
                let d2 = divisors(world / pp / etp);
                let ep = d2[j.index(d2.len())];
                (world, sizes(tp, pp, cp, ep, etp))
            },
        )
    }

    fn permutation() -> impl Strategy<Value = Vec<&'static str>> {
        Just(vec!["tp", "cp", "ep", "dp", "pp"]).prop_shuffle()
    }

    fn order_case() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(DEFAULT_ORDER.to_string()),
            Just(TP_PP_DP_ORDER.to_string()),
            permutation().prop_map(|v| v.join("-")),
        ]
    }

    /// Every invariant a Megatron layout must satisfy.
    fn check_layout(l: &Layout, world: u64, s: &MeshSizes, order: &str) -> Result<(), TestCaseError> {
        let dp = world / (s.tp * s.pp * s.cp);
        let edp = world / (s.etp * s.ep * s.pp);
        prop_assert_eq!(dp * s.tp * s.pp * s.cp, world);
        prop_assert_eq!(edp * s.etp * s.ep * s.pp, world);
        prop_assert_eq!(l.world(), world);
        let n = world as usize;
        for kind in GroupKind::all() {
            let size = match kind {
                GroupKind::Tp => s.tp,
                GroupKind::Cp => s.cp,
                GroupKind::Dp => dp,
                GroupKind::DpCp => dp * s.cp,
                GroupKind::Pp => s.pp,
                GroupKind::TpPp => s.tp * s.pp,
                GroupKind::Ep => s.ep,
                GroupKind::Etp => s.etp,
                GroupKind::Edp => edp,
            };
            let groups = l.groups_of(kind);
            prop_assert_eq!(groups.len() as u64 * size, world, "{:?}", kind);
            let mut seen = vec![0u8; n];
            for (g, group) in groups.iter().enumerate() {
                prop_assert_eq!(group.len() as u64, size, "{:?}", kind);
                prop_assert!(group.windows(2).all(|w| w[0] < w[1]), "{:?} not ascending", kind);
                for &r in group {
                    seen[r as usize] += 1;
                    prop_assert_eq!(l.group_index(kind, r), Some(g));
                }
            }
            prop_assert!(seen.iter().all(|&c| c == 1), "{:?}: not a partition", kind);
            prop_assert_eq!(l.group_index(kind, world as u32), None);
        }
        // Combined groups contain the groups of their parts.
        let within = |part: GroupKind, whole: GroupKind| {
            l.groups_of(part).iter().all(|g| g.iter().all(|&r| l.group_index(whole, r) == l.group_index(whole, g[0])))
        };
        prop_assert!(within(GroupKind::Tp, GroupKind::TpPp) && within(GroupKind::Pp, GroupKind::TpPp));
        prop_assert!(within(GroupKind::Cp, GroupKind::DpCp) && within(GroupKind::Dp, GroupKind::DpCp));

        // Coordinates: the mixed-radix digits of the rank, and positions within groups.
        let coords: Vec<Coordinates> = (0..world).map(|r| coordinates(r, world, s, order).unwrap()).collect();
        let dims: Vec<&str> = l.order.split('-').collect();
        let (mut sd, mut se) = (1u64, 1u64);
        let mut dense = vec![0u64; n];
        let mut expert = vec![0u64; n];
        for t in dims {
            for (r, c) in coords.iter().enumerate() {
                let (d, e, dn, en) = match t {
                    "tp" => (c.tp, c.etp, s.tp, s.etp),
                    "cp" => (c.cp, 0, s.cp, 1),
                    "ep" => (0, c.ep, 1, s.ep),
                    "dp" => (c.dp, c.edp, dp, edp),
                    _ => (c.pp, c.pp, s.pp, s.pp),
                };
                prop_assert!(d < dn && e < en);
                dense[r] += d * sd;
                expert[r] += e * se;
            }
            let (dn, en) = match t {
                "tp" => (s.tp, s.etp),
                "cp" => (s.cp, 1),
                "ep" => (1, s.ep),
                "dp" => (dp, edp),
                _ => (s.pp, s.pp),
            };
            sd *= dn;
            se *= en;
        }
        prop_assert!(dense.iter().enumerate().all(|(r, &v)| v == r as u64));
        prop_assert!(expert.iter().enumerate().all(|(r, &v)| v == r as u64));
        for kind in GroupKind::all() {
            let Some(_) = coords[0].in_group(kind) else { continue };
            for group in l.groups_of(kind) {
                for (i, &r) in group.iter().enumerate() {
                    prop_assert_eq!(coords[r as usize].in_group(kind), Some(i as u64), "{:?}", kind);
                }
            }
        }
        Ok(())
    }

    /// Naive crossings: distinct domains per group via a set.
    fn naive_crossings(l: &Layout, domain: u64) -> Vec<Crossing> {
        GroupKind::all()
            .into_iter()
            .filter_map(|kind| {
                let spans: Vec<u64> = l
                    .groups_of(kind)
                    .iter()
                    .map(|g| g.iter().map(|&r| u64::from(r) / domain).collect::<BTreeSet<_>>().len() as u64)
                    .collect();
                let crossing = spans.iter().filter(|&&s| s > 1).count() as u64;
                (crossing > 0).then(|| Crossing {
                    kind: kind.key().into(),
                    groups_crossing: crossing,
                    total_groups: spans.len() as u64,
                    max_domains_spanned: spans.iter().copied().max().unwrap_or(0),
                })
            })
            .collect()
    }

    proptest! {
        #[test]
        fn layouts_match_megatron_invariants((world, s) in mesh_case(), order in order_case(), domain in 1u64..=16) {
            let r = Meshes::resolve_sizes(world, &s, &order).expect("a full order always resolves");
            let pp_groups_agree = r.dense.groups(mask_of("pp")) == r.expert.groups(mask_of("pp"));
            let pp_last_rule = order.ends_with("pp") || s.pp == 1 || r.dense.size(Dim::Dp) == r.expert.size(Dim::Dp);
            match build_layout(world, &s, &order, domain) {
                Ok(l) => {
                    prop_assert!(pp_groups_agree && pp_last_rule);
                    check_layout(&l, world, &s, &order)?;
                    prop_assert_eq!(&l.crossings, &naive_crossings(&l, domain));
                    prop_assert_eq!(&l.order, &order);
                }
                Err(d) => {
                    prop_assert!(!order.ends_with("pp"), "pp-last orders always lay out: {:?}", d);
                    prop_assert!(!(pp_groups_agree && pp_last_rule), "{:?}", d);
                    let expected = if pp_last_rule { "order-pp-groups-differ" } else { "order-pp-not-last" };
                    prop_assert_eq!(d.code.as_str(), expected);
                }
            }
        }

        #[test]
        fn missing_tokens_follow_megatron(
            (world, s) in mesh_case(),
            perm in permutation(),
            drop in prop::collection::vec(any::<bool>(), 5),
            upper in prop::collection::vec(any::<bool>(), 5),
        ) {
            let kept: Vec<String> = perm.iter().zip(&drop).zip(&upper)
                .filter(|((_, d), _)| !**d)
                .map(|((t, _), u)| if *u { t.to_uppercase() } else { t.to_string() })
                .collect();
            let order = kept.join("-");
            let dp = world / (s.tp * s.pp * s.cp);
            let edp = world / (s.etp * s.ep * s.pp);
            let need = |t: &str| match t {
                "tp" => s.tp.max(s.etp), "pp" => s.pp, "dp" => dp.max(edp), "ep" => s.ep, _ => s.cp,
            };
            let dropped: Vec<&str> = perm.iter().zip(&drop).filter(|(_, d)| **d).map(|(t, _)| *t).collect();
            let result = Meshes::resolve_sizes(world, &s, &order);
            if kept.is_empty() {
                prop_assert_eq!(code(result.map(|r| r.order_string())), "order-invalid");
            } else if dropped.iter().any(|t| need(t) != 1) {
                prop_assert_eq!(code(result.map(|r| r.order_string())), "order-missing-dimension");
            } else {
                let mut expected: Vec<&str> = perm.iter().zip(&drop).filter(|(_, d)| !**d).map(|(t, _)| *t).collect();
                expected.extend(["tp", "pp", "dp", "ep", "cp"].into_iter().filter(|t| dropped.contains(t)));
                let r = result.map_err(|d| TestCaseError::fail(format!("{d:?}")))?;
                prop_assert_eq!(r.order_string(), expected.join("-"));
            }
            // normalize_order ignores dp: it agrees whenever dp is not the reason.
            let n = normalize_order(&order, &s);
            if !kept.is_empty() && !dropped.iter().any(|t| *t != "dp" && need(t) != 1) {
                prop_assert!(n.is_ok(), "{:?}", n);
            } else {
                prop_assert!(n.is_err());
            }
        }

        #[test]
        fn bad_input_never_panics(
            world in prop_oneof![0u64..=4096, (MAX_LAYOUT_WORLD + 1)..=u64::MAX, Just(u64::MAX)],
            any_world in any::<u64>(),
            rank in any::<u64>(),
            sz in prop::collection::vec(prop_oneof![0u64..=9, Just(1u64 << 24), Just(u64::MAX), any::<u64>()], 5),
            order in prop_oneof![
                "\\PC{0,30}",
                prop::collection::vec(
                    prop::sample::select(vec!["tp", "TP", "cp", "ep", "dp", "pp", "Pp", "", "x", " tp", "etp", "gtp_remat", "-", "ß"]),
                    0..8,
                ).prop_map(|v| v.join("-")),
            ],
            domain in any::<u64>(),
        ) {
            let s = sizes(sz[0], sz[1], sz[2], sz[3], sz[4]);
            if let Ok(l) = build_layout(world, &s, &order, domain) {
                check_layout(&l, world, &s, &order)?;
            }
            let _ = normalize_order(&order, &s);
            if let Ok(c) = coordinates(rank, any_world, &s, &order) {
                prop_assert!(rank < any_world && c.tp < s.tp && c.pp < s.pp && c.ep < s.ep);
            }
        }
    }
}
