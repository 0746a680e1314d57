//! The one description of a Megatron-Core mesh: a normalised order and, for each dimension, its size
//! and its stride (the product of the sizes before it). Everything else in [`crate::layout`] — the
//! rank groups, the per-rank coordinates, the NVLink crossings — and the step-time model's choice of
//! link per group kind are read off this description.
//!
//! Allocation-free: a [`Meshes`] is two small `Copy` values, built from the order string without
//! allocating unless the order is refused (the message is built then).

use crate::layout::order::{Dim, check_nonzero, complete_order, join_order, parse_order, quoted};
use crate::layout::{DEFAULT_ORDER, GroupKind, MeshSizes};
use crate::{Code, Diagnostic};

/// Upstream: parallel_state.py, RankGenerator.get_mask (tokens of a `get_ranks` string → mask).
pub(crate) fn mask_of(token: &str) -> u8 {
    token.split('-').filter_map(Dim::from_token).fold(0, |mask, d| mask | d.bit())
}

/// One `RankGenerator`: a normalised order and the size of each dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mesh {
    pub(crate) order: [Dim; 5],
    /// Indexed by `Dim as usize`.
    pub(crate) size: [u64; 5],
}

/// Runs of dimensions of a mesh, innermost first: their sizes and their global strides. Adjacent
/// dimensions on the same side of a mask are merged into one run (their mixed-radix digits together
/// count `0..product` in steps of the first one's stride) and dimensions of size 1 are left out, so a
/// group kind's own dimensions (at most two) make at most two runs.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Axes {
    pub(crate) len: usize,
    pub(crate) size: [u64; 5],
    pub(crate) stride: [u64; 5],
}

impl Axes {
    /// Upstream: none (helper). `adjacent`: the previous dimension of the mesh is on this side too.
    fn push(&mut self, size: u64, stride: u64, adjacent: bool) {
        if adjacent && let Some(last) = self.len.checked_sub(1) {
            self.size[last] = self.size[last].saturating_mul(size);
            return;
        }
        if let (Some(sz), Some(st)) = (self.size.get_mut(self.len), self.stride.get_mut(self.len)) {
            *sz = size;
            *st = stride;
            self.len += 1;
        }
    }

    /// Upstream: parallel_state.py, generate_masked_orthogonal_rank_groups (`prefix_product(shape)[-1]`).
    pub(crate) fn count(&self) -> u64 {
        self.size[..self.len].iter().fold(1u64, |n, &s| n.saturating_mul(s))
    }

    /// Upstream: none. The largest value minus the smallest: Σ (size − 1) · stride.
    pub(crate) fn extent(&self) -> u64 {
        (0..self.len).fold(0u64, |e, i| e.saturating_add(self.size[i].saturating_sub(1).saturating_mul(self.stride[i])))
    }

    /// Upstream: parallel_state.py, generate_masked_orthogonal_rank_groups (`decompose` then
    /// `inner_product` with the strides, for every index in turn).
    pub(crate) fn values(&self) -> MixedRadix {
        MixedRadix { axes: *self, digit: [0; 5], value: 0, left: self.count() }
    }

    /// Upstream: parallel_state.py, generate_masked_orthogonal_rank_groups (`decompose(index, shape)` then
    /// `inner_product` with the strides): the `index`-th value, `None` past the last.
    pub(crate) fn value(&self, index: u64) -> Option<u64> {
        if index >= self.count() {
            return None;
        }
        let (mut rest, mut value) = (index, 0u64);
        for i in 0..self.len {
            let size = self.size[i].max(1);
            value = value.saturating_add((rest % size).saturating_mul(self.stride[i]));
            rest /= size;
        }
        Some(value)
    }
}

/// Enumerates `sum(digit[i] * stride[i])` with digit 0 varying fastest.
pub(crate) struct MixedRadix {
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
    /// Upstream: parallel_state.py, RankGenerator.__init__ (`order` after normalisation).
    pub fn order(&self) -> [Dim; 5] {
        self.order
    }

    /// Upstream: parallel_state.py, RankGenerator.__init__ (`ordered_size`).
    pub fn size(&self, d: Dim) -> u64 {
        self.size[d as usize]
    }

    /// Upstream: parallel_state.py, generate_masked_orthogonal_rank_groups (`global_stride = prefix_product(parallel_size)`).
    pub fn stride(&self, d: Dim) -> u64 {
        let mut stride = 1u64;
        for &o in &self.order {
            if o == d {
                break;
            }
            stride = stride.saturating_mul(self.size(o));
        }
        stride
    }

    /// Upstream: parallel_state.py, RankGenerator (`world_size`, the product of the sizes; saturating).
    pub fn world(&self) -> u64 {
        self.size.iter().fold(1u64, |w, &s| w.saturating_mul(s))
    }

    /// Upstream: parallel_state.py, generate_masked_orthogonal_rank_groups (`decompose`: `(index // d) % s`).
    pub fn coordinate(&self, rank: u64, d: Dim) -> u64 {
        (rank / self.stride(d).max(1)) % self.size(d).max(1)
    }

    /// Upstream: parallel_state.py, generate_masked_orthogonal_rank_groups (masked_shape/stride,
    /// unmasked_shape/stride), with adjacent dimensions of one side merged into runs.
    pub(crate) fn split(&self, mask: u8) -> (Axes, Axes) {
        let (mut masked, mut unmasked) = (Axes::default(), Axes::default());
        let mut stride = 1u64;
        let mut previous_masked = None;
        for &d in &self.order {
            // A dimension of size 1 adds no value and moves no stride: it neither makes a run nor splits one.
            if self.size(d) == 1 {
                continue;
            }
            let is_masked = mask & d.bit() != 0;
            let side = if is_masked { &mut masked } else { &mut unmasked };
            side.push(self.size(d), stride, previous_masked == Some(is_masked));
            previous_masked = Some(is_masked);
            stride = stride.saturating_mul(self.size(d));
        }
        (masked, unmasked)
    }

    /// Upstream: parallel_state.py, generate_masked_orthogonal_rank_groups.
    /// Only called on meshes whose world is at most `MAX_LAYOUT_WORLD`, so ranks fit `u32`.
    pub(crate) fn groups(&self, mask: u8) -> Vec<Vec<u32>> {
        let (masked, unmasked) = self.split(mask);
        // Offsets of a group's members from its first rank, ascending.
        let offsets: Vec<u32> = masked.values().map(|v| v as u32).collect();
        unmasked
            .values()
            .map(|base| offsets.iter().map(|&o| base as u32 + o).collect())
            .collect()
    }
}

/// Both `RankGenerator`s of one plan, sharing one normalised order: the dense mesh
/// `RankGenerator(tp, ep=1, dp, pp, cp)` and the expert mesh `RankGenerator(tp=etp, ep, dp=edp, pp, cp=1)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meshes {
    pub dense: Mesh,
    pub expert: Mesh,
}

impl Meshes {
    /// Upstream: parallel_state.py, initialize_model_parallel (from the world-size checks to the two
    /// assertions after building `expert_decoder_rank_generator`): the meshes Megatron-Core builds, or
    /// the diagnostic of the first check it would fail.
    pub fn resolve(world: u64, sizes: &MeshSizes, order: &str) -> Result<Meshes, Diagnostic> {
        let meshes = Meshes::resolve_sizes(world, sizes, order)?;
        check_pipeline_agreement(order, sizes.pp, &meshes)?;
        Ok(meshes)
    }

    /// Upstream: parallel_state.py, initialize_model_parallel (sizes, then both RankGenerator
    /// constructions), without the pipeline-agreement assertions.
    pub(crate) fn resolve_sizes(world: u64, sizes: &MeshSizes, order: &str) -> Result<Meshes, Diagnostic> {
        check_nonzero(Some(world), sizes)?;
        parse_order(order)?;
        let dp = divide_world(world, [sizes.tp, sizes.pp, sizes.cp], false)?;
        let edp = divide_world(world, [sizes.etp, sizes.ep, sizes.pp], true)?;
        Meshes::with_data_parallel(sizes, dp, edp, order)
    }

    /// Upstream: parallel_state.py, RankGenerator.__init__ (both constructions) for known data-parallel
    /// sizes `dp` (dense) and `edp` (expert), without the world-size checks: the order is lowercased,
    /// checked and completed as Megatron-Core does. For callers that have the sizes already (the
    /// step-time model); sizes of 0 are refused.
    pub fn with_data_parallel(sizes: &MeshSizes, dp: u64, edp: u64, order: &str) -> Result<Meshes, Diagnostic> {
        check_nonzero(None, sizes)?;
        if let Some((name, _)) = [("dp", dp), ("expert dp", edp)].into_iter().find(|(_, v)| *v == 0) {
            return Err(Diagnostic::new(
                Code::MeshSizeZero,
                format!("{name} is 0: the world size is not a multiple of the other parallel sizes"),
                "Use a world size that is a multiple of tp × pp × cp and of etp × ep × pp.",
            ));
        }
        let given = parse_order(order)?;
        let dims = complete_order(order, &given, sizes, Some((dp, edp)))?;
        Ok(Meshes::from_dims(dims, sizes, dp, edp))
    }

    /// Upstream: parallel_state.py, initialize_model_parallel (`order="tp-cp-ep-dp-pp"`, the default):
    /// the meshes of Megatron's default order for these sizes, every size of 0 read as 1.
    pub fn default_order(sizes: &MeshSizes, dp: u64, edp: u64) -> Meshes {
        let one = |s: u64| s.max(1);
        let sizes = MeshSizes { tp: one(sizes.tp), pp: one(sizes.pp), cp: one(sizes.cp), ep: one(sizes.ep), etp: one(sizes.etp) };
        Meshes::from_dims(DEFAULT_DIMS, &sizes, one(dp), one(edp))
    }

    /// Upstream: parallel_state.py, initialize_model_parallel (`RankGenerator(tp, ep=1, dp, pp, cp)` and
    /// `RankGenerator(tp=etp, ep, dp=edp, pp, cp=1)`).
    fn from_dims(dims: [Dim; 5], sizes: &MeshSizes, dp: u64, edp: u64) -> Meshes {
        Meshes {
            dense: Mesh { order: dims, size: [sizes.tp, sizes.pp, dp, 1, sizes.cp] },
            expert: Mesh { order: dims, size: [sizes.etp, sizes.pp, edp, sizes.ep, 1] },
        }
    }

    /// Upstream: parallel_state.py, RankGenerator.__init__ (the normalised order both generators share).
    pub fn order(&self) -> [Dim; 5] {
        self.dense.order
    }

    /// Upstream: parallel_state.py, RankGenerator.__init__ (`order + "-" + name`).
    pub fn order_string(&self) -> String {
        join_order(&self.dense.order)
    }

    /// Upstream: parallel_state.py, initialize_model_parallel (groups of expert kinds come from
    /// `expert_decoder_rank_generator`, the others from `decoder_rank_generator`).
    pub fn mesh_of(&self, kind: GroupKind) -> &Mesh {
        if kind.is_expert() { &self.expert } else { &self.dense }
    }
}

/// Megatron's default order, as dimensions.
const DEFAULT_DIMS: [Dim; 5] = [Dim::Tp, Dim::Cp, Dim::Ep, Dim::Dp, Dim::Pp];

/// Upstream: parallel_state.py, initialize_model_parallel (`assert order.endswith("pp") or ...`
/// and `assert decoder_rank_generator.get_ranks("pp") == expert_decoder_rank_generator.get_ranks("pp")`).
fn check_pipeline_agreement(raw_order: &str, pp: u64, m: &Meshes) -> Result<(), Diagnostic> {
    let (dp, edp) = (m.dense.size(Dim::Dp), m.expert.size(Dim::Dp));
    // Upstream tests the order exactly as passed in: not lowercased, not normalised.
    if !raw_order.ends_with("pp") && pp != 1 && edp != dp {
        return Err(Diagnostic::new(
            Code::OrderPpNotLast,
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
    let (sd, se) = (m.dense.stride(Dim::Pp), m.expert.stride(Dim::Pp));
    if pp != 1 && sd != se {
        return Err(Diagnostic::new(
            Code::OrderPpGroupsDiffer,
            format!(
                "with order \"{}\", consecutive pipeline stages are {sd} ranks apart in the dense mesh but {se} \
                 in the expert mesh, so the dense and expert pipeline groups differ; Megatron-Core asserts they \
                 are the same",
                m.order_string()
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
        (Code::WorldNotDivisibleExpert, "etp × ep × pp", "etp, ep or pp")
    } else {
        (Code::WorldNotDivisibleDense, "tp × pp × cp", "tp, pp or cp")
    };
    Err(Diagnostic::new(
        code,
        format!("world size {world} is not divisible by {names} = {a} × {b} × {c} = {product}"),
        format!("Use a world size that is a multiple of {product}, or change {fix_names} so that their product divides {world}."),
    ))
}
