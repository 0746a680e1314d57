//! Rank groups exactly as Megatron-Core builds them.
//!
//! Megatron-Core (`megatron/core/parallel_state.py`) numbers ranks as a mixed-radix number
//! over an order string such as `tp-cp-ep-dp-pp`: the leftmost token varies fastest. Two
//! `RankGenerator`s share that order: the dense one, `RankGenerator(tp, ep=1, dp, pp, cp)`,
//! and the expert one, `RankGenerator(tp=etp, ep, dp=edp, pp, cp=1)`. Every group kind is
//! the set of ranks that differ only in a chosen subset of dimensions (a mask), built by
//! `generate_masked_orthogonal_rank_groups`. This module has that one mechanism (the
//! private `Mesh::groups`); each [`GroupKind`] just names a generator and a Megatron token.
//!
//! The `gtp_remat` axis that current Megatron-Core injects into the order has size 1 unless
//! generalized tensor parallelism is enabled; a size-1 axis changes no group, so it is not
//! modelled here.

use serde::{Deserialize, Serialize};

use crate::Diagnostic;

/// The largest world [`build_layout`] materialises; [`coordinates`] has no such limit.
pub const MAX_LAYOUT_WORLD: u64 = 1 << 21;

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

    /// Upstream: none (the number of ranks laid out).
    pub fn world(&self) -> u64 {
        self.index.world as u64
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

/// One dimension of a `RankGenerator`, i.e. one token of the order string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dim {
    Tp = 0,
    Pp = 1,
    Dp = 2,
    Ep = 3,
    Cp = 4,
}

impl Dim {
    /// Upstream: parallel_state.py, RankGenerator.__init__ (`name_to_size` key order, in which
    /// missing tokens are appended).
    const ALL: [Dim; 5] = [Dim::Tp, Dim::Pp, Dim::Dp, Dim::Ep, Dim::Cp];

    /// Upstream: parallel_state.py, RankGenerator.__init__ (`name_to_size` keys).
    fn token(self) -> &'static str {
        match self {
            Dim::Tp => "tp",
            Dim::Pp => "pp",
            Dim::Dp => "dp",
            Dim::Ep => "ep",
            Dim::Cp => "cp",
        }
    }

    /// Upstream: parallel_state.py, RankGenerator.__init__ (`self.name_to_size[token]`).
    fn from_token(token: &str) -> Option<Dim> {
        Dim::ALL.into_iter().find(|d| d.token() == token)
    }

    /// Upstream: none (bit of this dimension in a mask).
    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// Upstream: parallel_state.py, RankGenerator.get_mask (tokens of a `get_ranks` string → mask).
fn mask_of(token: &str) -> u8 {
    token.split('-').filter_map(Dim::from_token).fold(0, |mask, d| mask | d.bit())
}

/// One `RankGenerator`: a normalised order and the size of each dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Mesh {
    order: [Dim; 5],
    /// Indexed by `Dim as usize`.
    size: [u64; 5],
}

/// Some dimensions of a mesh, in order: their sizes and their global strides.
#[derive(Clone, Copy, Debug, Default)]
struct Axes {
    len: usize,
    size: [u64; 5],
    stride: [u64; 5],
}

impl Axes {
    /// Upstream: none (helper).
    fn push(&mut self, size: u64, stride: u64) {
        if let (Some(sz), Some(st)) = (self.size.get_mut(self.len), self.stride.get_mut(self.len)) {
            *sz = size;
            *st = stride;
            self.len += 1;
        }
    }

    /// Upstream: parallel_state.py, generate_masked_orthogonal_rank_groups (`prefix_product(shape)[-1]`).
    fn count(&self) -> u64 {
        self.size[..self.len].iter().fold(1u64, |n, &s| n.saturating_mul(s))
    }

    /// Upstream: parallel_state.py, generate_masked_orthogonal_rank_groups (`decompose` then
    /// `inner_product` with the strides, for every index in turn).
    fn values(&self) -> MixedRadix {
        MixedRadix { axes: *self, digit: [0; 5], value: 0, left: self.count() }
    }
}

/// Enumerates `sum(digit[i] * stride[i])` with digit 0 varying fastest.
struct MixedRadix {
    axes: Axes,
    digit: [u64; 5],
    value: u64,
    left: u64,
}

impl Iterator for MixedRadix {
    type Item = u64;

    /// Upstream: parallel_state.py, generate_masked_orthogonal_rank_groups (`decompose` +
    /// `inner_product`, incrementally).
    fn next(&mut self) -> Option<u64> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let out = self.value;
        for i in 0..self.axes.len {
            self.digit[i] += 1;
            self.value = self.value.saturating_add(self.axes.stride[i]);
            if self.digit[i] < self.axes.size[i] {
                break;
            }
            self.value = self.value.saturating_sub(self.axes.size[i].saturating_mul(self.axes.stride[i]));
            self.digit[i] = 0;
        }
        Some(out)
    }

    /// Upstream: none (exact length, so `collect` allocates once).
    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = usize::try_from(self.left).unwrap_or(usize::MAX);
        (left, Some(left))
    }
}

impl Mesh {
    /// Upstream: parallel_state.py, RankGenerator.__init__ (`ordered_size`).
    fn size(&self, d: Dim) -> u64 {
        self.size[d as usize]
    }

    /// Upstream: parallel_state.py, generate_masked_orthogonal_rank_groups (`global_stride = prefix_product(parallel_size)`).
    fn stride(&self, d: Dim) -> u64 {
        let mut stride = 1u64;
        for &o in &self.order {
            if o == d {
                break;
            }
            stride = stride.saturating_mul(self.size(o));
        }
        stride
    }

    /// Upstream: parallel_state.py, generate_masked_orthogonal_rank_groups (`decompose`: `(index // d) % s`).
    fn coordinate(&self, rank: u64, d: Dim) -> u64 {
        (rank / self.stride(d).max(1)) % self.size(d).max(1)
    }

    /// Upstream: parallel_state.py, generate_masked_orthogonal_rank_groups (masked_shape/stride, unmasked_shape/stride).
    fn split(&self, mask: u8) -> (Axes, Axes) {
        let (mut masked, mut unmasked) = (Axes::default(), Axes::default());
        let mut stride = 1u64;
        for &d in &self.order {
            let side = if mask & d.bit() != 0 { &mut masked } else { &mut unmasked };
            side.push(self.size(d), stride);
            stride = stride.saturating_mul(self.size(d));
        }
        (masked, unmasked)
    }

    /// Upstream: parallel_state.py, generate_masked_orthogonal_rank_groups.
    /// Only called on meshes whose world is at most `MAX_LAYOUT_WORLD`, so ranks fit `u32`.
    fn groups(&self, mask: u8) -> Vec<Vec<u32>> {
        let (masked, unmasked) = self.split(mask);
        // Offsets of a group's members from its first rank, ascending.
        let offsets: Vec<u32> = masked.values().map(|v| v as u32).collect();
        unmasked
            .values()
            .map(|base| offsets.iter().map(|&o| base as u32 + o).collect())
            .collect()
    }
}

/// Both generators of one plan, after every upstream check passed.
struct Resolved {
    order: String,
    dense: Mesh,
    expert: Mesh,
}

/// Upstream: parallel_state.py, initialize_model_parallel (from the world-size checks to the
/// two assertions after building `expert_decoder_rank_generator`).
fn resolve(world: u64, sizes: &MeshSizes, order: &str) -> Result<Resolved, Diagnostic> {
    let r = resolve_meshes(world, sizes, order)?;
    check_pipeline_agreement(order, sizes.pp, &r)?;
    Ok(r)
}

/// Upstream: parallel_state.py, initialize_model_parallel (sizes, then both RankGenerator constructions).
fn resolve_meshes(world: u64, sizes: &MeshSizes, order: &str) -> Result<Resolved, Diagnostic> {
    check_nonzero(Some(world), sizes)?;
    let given = parse_order(order)?;
    let dp = divide_world(world, [sizes.tp, sizes.pp, sizes.cp], false)?;
    let edp = divide_world(world, [sizes.etp, sizes.ep, sizes.pp], true)?;
    let dims = complete_order(order, &given, sizes, Some((dp, edp)))?;
    let dense = Mesh { order: dims, size: [sizes.tp, sizes.pp, dp, 1, sizes.cp] };
    let expert = Mesh { order: dims, size: [sizes.etp, sizes.pp, edp, sizes.ep, 1] };
    Ok(Resolved { order: join_order(&dims), dense, expert })
}

/// Upstream: parallel_state.py, initialize_model_parallel (`assert order.endswith("pp") or ...`
/// and `assert decoder_rank_generator.get_ranks("pp") == expert_decoder_rank_generator.get_ranks("pp")`).
fn check_pipeline_agreement(raw_order: &str, pp: u64, r: &Resolved) -> Result<(), Diagnostic> {
    let (dp, edp) = (r.dense.size(Dim::Dp), r.expert.size(Dim::Dp));
    // Upstream tests the order exactly as passed in: not lowercased, not normalised.
    if !raw_order.ends_with("pp") && pp != 1 && edp != dp {
        return Err(Diagnostic::error(
            "order-pp-not-last",
            format!(
                "order {} does not end with \"pp\" and pp = {pp}, so Megatron-Core requires the dense and \
                 expert data-parallel sizes to match, but dp = {dp} and expert dp = {edp} \
                 (Megatron-Core checks the order as written, case-sensitively)",
                quoted(raw_order)
            ),
            format!(
                "End the order with \"pp\" in lowercase (e.g. \"{DEFAULT_ORDER}\"), or choose etp × ep equal to \
                 tp × cp so that expert dp equals dp."
            ),
        ));
    }
    // The pp groups of two meshes with the same world and pp size are equal exactly when pp has
    // the same stride in both (each group is base + k × stride, bases enumerated in rank order).
    let (sd, se) = (r.dense.stride(Dim::Pp), r.expert.stride(Dim::Pp));
    if pp != 1 && sd != se {
        return Err(Diagnostic::error(
            "order-pp-groups-differ",
            format!(
                "with order \"{}\", consecutive pipeline stages are {sd} ranks apart in the dense mesh but {se} \
                 in the expert mesh, so the dense and expert pipeline groups differ; Megatron-Core asserts they \
                 are the same",
                r.order
            ),
            format!(
                "Put \"pp\" last (e.g. \"{DEFAULT_ORDER}\"), or make the product of the sizes before \"pp\" \
                 the same for the dense mesh (tp, cp, dp) and the expert mesh (etp, ep, expert dp)."
            ),
        ));
    }
    Ok(())
}

/// Upstream: parallel_state.py, initialize_model_parallel (`world_size % model_size` and
/// `world_size % expert_tensor_model_pipeline_parallel_size`); returns the data-parallel size.
fn divide_world(world: u64, factors: [u64; 3], expert: bool) -> Result<u64, Diagnostic> {
    let product = factors.iter().fold(1u128, |p, &f| p.saturating_mul(u128::from(f)));
    if product != 0 && u128::from(world) % product == 0 {
        return Ok((u128::from(world) / product) as u64);
    }
    let [a, b, c] = factors;
    let (code, names, fix_names) = if expert {
        ("world-not-divisible-expert", "etp × ep × pp", "etp, ep or pp")
    } else {
        ("world-not-divisible-dense", "tp × pp × cp", "tp, pp or cp")
    };
    Err(Diagnostic::error(
        code,
        format!("world size {world} is not divisible by {names} = {a} × {b} × {c} = {product}"),
        format!("Use a world size that is a multiple of {product}, or change {fix_names} so that their product divides {world}."),
    ))
}

/// Upstream: none (Megatron-Core would divide by zero or build empty groups; meshplan refuses).
fn check_nonzero(world: Option<u64>, sizes: &MeshSizes) -> Result<(), Diagnostic> {
    let named = [
        ("world size", world.unwrap_or(1)),
        ("tp", sizes.tp),
        ("pp", sizes.pp),
        ("cp", sizes.cp),
        ("ep", sizes.ep),
        ("etp", sizes.etp),
    ];
    match named.iter().find(|(_, v)| *v == 0) {
        Some((name, _)) => Err(Diagnostic::error(
            "mesh-size-zero",
            format!("{name} is 0; every parallel size and the world size must be at least 1"),
            format!("Set {name} to 1 or more (1 means the dimension is not split)."),
        )),
        None => Ok(()),
    }
}

/// The dimensions named by an order string, in the order given.
struct GivenOrder {
    dims: [Dim; 5],
    len: usize,
}

impl GivenOrder {
    /// Upstream: parallel_state.py, RankGenerator.__init__ (`name not in order`).
    fn contains(&self, d: Dim) -> bool {
        self.dims[..self.len].contains(&d)
    }
}

/// Upstream: parallel_state.py, RankGenerator.__init__ (`order.lower()`, `order.split("-")`,
/// `self.name_to_size[token]`); duplicates are refused here, upstream silently builds wrong groups.
fn parse_order(order: &str) -> Result<GivenOrder, Diagnostic> {
    let lower = order.to_lowercase();
    let fix = format!(
        "Write the dimensions tp, cp, ep, dp and pp once each, separated by single '-', e.g. \"{DEFAULT_ORDER}\" \
         (Megatron's default) or \"{TP_PP_DP_ORDER}\" (--use-tp-pp-dp-mapping); the expert mesh reuses \"tp\" \
         for expert tp and \"dp\" for expert dp."
    );
    let mut given = GivenOrder { dims: [Dim::Tp; 5], len: 0 };
    for (i, token) in lower.split('-').enumerate() {
        let Some(d) = Dim::from_token(token) else {
            let what = if order.is_empty() {
                "the order is empty".to_string()
            } else if token.is_empty() {
                format!("order {} has an empty token at position {}", quoted(order), i + 1)
            } else {
                format!(
                    "order {} has the unknown token {}; Megatron-Core knows tp, cp, ep, dp and pp",
                    quoted(order),
                    quoted(token)
                )
            };
            return Err(Diagnostic::error("order-invalid", what, fix));
        };
        if given.contains(d) {
            return Err(Diagnostic::error(
                "order-invalid",
                format!("order {} names {} more than once", quoted(order), quoted(d.token())),
                fix,
            ));
        }
        // Five distinct known tokens at most, so this slot exists.
        if let Some(slot) = given.dims.get_mut(given.len) {
            *slot = d;
            given.len += 1;
        }
    }
    Ok(given)
}

/// Upstream: parallel_state.py, RankGenerator.__init__ (a missing token of size 1 is appended,
/// in `name_to_size` order; one of any other size raises). `dps` is (dp, expert dp) when known.
fn complete_order(
    raw: &str,
    given: &GivenOrder,
    sizes: &MeshSizes,
    dps: Option<(u64, u64)>,
) -> Result<[Dim; 5], Diagnostic> {
    let mut dims = given.dims;
    let mut len = given.len;
    for d in Dim::ALL {
        if given.contains(d) {
            continue;
        }
        let (largest, what) = match d {
            Dim::Tp => (sizes.tp.max(sizes.etp), format!("tp = {} and etp = {}", sizes.tp, sizes.etp)),
            Dim::Pp => (sizes.pp, format!("pp = {}", sizes.pp)),
            Dim::Dp => match dps {
                Some((dp, edp)) => (dp.max(edp), format!("dp = {dp} and expert dp = {edp}")),
                None => (1, String::new()),
            },
            Dim::Ep => (sizes.ep, format!("ep = {}", sizes.ep)),
            Dim::Cp => (sizes.cp, format!("cp = {}", sizes.cp)),
        };
        if largest != 1 {
            return Err(Diagnostic::error(
                "order-missing-dimension",
                format!(
                    "order {} leaves out \"{}\" but {what}; Megatron-Core appends only dimensions of size 1",
                    quoted(raw),
                    d.token()
                ),
                format!(
                    "Add \"{}\" to the order, e.g. \"{DEFAULT_ORDER}\" (Megatron's default) or \"{TP_PP_DP_ORDER}\".",
                    d.token()
                ),
            ));
        }
        if let Some(slot) = dims.get_mut(len) {
            *slot = d;
            len += 1;
        }
    }
    Ok(dims)
}

/// Upstream: parallel_state.py, RankGenerator.__init__ (`order + "-" + name`).
fn join_order(dims: &[Dim; 5]) -> String {
    dims.iter().map(|d| d.token()).collect::<Vec<_>>().join("-")
}

/// Upstream: none (quotes user text for a message, cut to 40 characters).
fn quoted(s: &str) -> String {
    const MAX: usize = 40;
    if s.chars().count() <= MAX {
        format!("{s:?}")
    } else {
        let cut: String = s.chars().take(MAX).collect();
        format!("{cut:?}…")
    }
}

/// Upstream: parallel_state.py, RankGenerator.__init__ (order normalisation).
/// Lowercases `order`, checks every token, and appends the missing dimensions of size 1 in
/// Megatron's `name_to_size` order (tp, pp, dp, ep, cp). The data-parallel sizes are not known
/// here, so a missing "dp" is appended; [`build_layout`] also refuses it when dp or expert dp > 1.
pub fn normalize_order(order: &str, sizes: &MeshSizes) -> Result<String, Diagnostic> {
    check_nonzero(None, sizes)?;
    let given = parse_order(order)?;
    let dims = complete_order(order, &given, sizes, None)?;
    Ok(join_order(&dims))
}

/// Upstream: parallel_state.py, initialize_model_parallel (every `get_ranks` call of the dense and
/// expert generators that meshplan reports).
pub fn build_layout(world: u64, sizes: &MeshSizes, order: &str, nvlink_domain_size: u64) -> Result<Layout, Diagnostic> {
    if world > MAX_LAYOUT_WORLD {
        return Err(Diagnostic::error(
            "world-too-large-to-lay-out",
            format!("world size {world} is more than the {MAX_LAYOUT_WORLD} ranks meshplan lays out group by group"),
            "Plan with at most 2,097,152 ranks, or use per-rank coordinates, which have no such limit.",
        ));
    }
    let r = resolve(world, sizes, order)?;
    let of = |kind: GroupKind| {
        let mesh = if kind.is_expert() { &r.expert } else { &r.dense };
        mesh.groups(mask_of(kind.megatron_token()))
    };
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
    let crossings = crossings(&groups, nvlink_domain_size);
    Ok(Layout::new(r.order, groups, crossings))
}

/// Upstream: none (meshplan-only NVLink analysis: domain = rank / nvlink_domain_size, 0 treated as 1).
fn crossings(groups: &Groups, nvlink_domain_size: u64) -> Vec<Crossing> {
    let domain = nvlink_domain_size.max(1);
    let mut out = Vec::new();
    for kind in GroupKind::all() {
        let list = groups.of(kind);
        let (mut crossing, mut widest) = (0u64, 0u64);
        for group in list {
            let spanned = domains_spanned(group, domain);
            crossing += u64::from(spanned > 1);
            widest = widest.max(spanned);
        }
        if crossing > 0 {
            out.push(Crossing {
                kind: kind.key().to_string(),
                groups_crossing: crossing,
                total_groups: list.len() as u64,
                max_domains_spanned: widest,
            });
        }
    }
    out
}

/// Upstream: none. Distinct domains of an ascending group: one plus the domain changes.
fn domains_spanned(group: &[u32], domain: u64) -> u64 {
    if group.is_empty() {
        return 0;
    }
    let changes = group.windows(2).filter(|w| u64::from(w[0]) / domain != u64::from(w[1]) / domain).count();
    changes as u64 + 1
}

/// Upstream: parallel_state.py, generate_masked_orthogonal_rank_groups (`decompose` of a rank
/// over the ordered sizes of the dense and the expert RankGenerator).
pub fn coordinates(rank: u64, world: u64, sizes: &MeshSizes, order: &str) -> Result<Coordinates, Diagnostic> {
    let r = resolve(world, sizes, order)?;
    if rank >= world {
        return Err(Diagnostic::error(
            "rank-out-of-range",
            format!("rank {rank} is outside a world of {world} ranks (0 to {})", world - 1),
            format!("Ask for a rank from 0 to {}.", world - 1),
        ));
    }
    Ok(Coordinates {
        tp: r.dense.coordinate(rank, Dim::Tp),
        cp: r.dense.coordinate(rank, Dim::Cp),
        dp: r.dense.coordinate(rank, Dim::Dp),
        pp: r.dense.coordinate(rank, Dim::Pp),
        etp: r.expert.coordinate(rank, Dim::Tp),
        ep: r.expert.coordinate(rank, Dim::Ep),
        edp: r.expert.coordinate(rank, Dim::Dp),
    })
}
