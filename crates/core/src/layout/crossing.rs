//! Which rank groups leave an NVLink domain, counted from the mesh description alone (no group is
//! materialised). NVLink domain `k` holds ranks `k·D .. (k+1)·D` (`D` = `nvlink_domain_size`, 0 read as 1).
//!
//! The arithmetic: the groups of one kind are `base + O`, where `O` (the offsets, the mixed-radix values of
//! the kind's dimensions) is the same for every group and `base` runs over the mixed-radix values of the
//! other dimensions. A group spans more than one domain exactly when its first and last rank do:
//! `base mod D + extent ≥ D`, with `extent = max(O)`. How many domains it spans depends on `base mod D` only.
//! A run of base dimensions with stride `s` and `n` values repeats its residues mod `D` every
//! `D / gcd(s, D)` values, so the bases are visited one per residue class, each weighed by how many bases
//! share it: at most as many steps as there are groups, usually a handful (none at all for a dimension whose
//! stride is a multiple of `D`).

use crate::layout::mesh::{Axes, Meshes};
use crate::layout::{Crossing, GroupKind};

/// How the groups of one kind sit on NVLink domains.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CrossingCount {
    /// Groups whose ranks lie in more than one domain.
    pub groups_crossing: u64,
    pub total_groups: u64,
    /// The most domains one group spans (1 when none crosses; 0 when there are no groups).
    pub max_domains_spanned: u64,
}

/// The shape shared by every group of one kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupShape {
    /// Ranks per group.
    pub size: u64,
    /// Number of groups.
    pub count: u64,
    /// Last rank minus first rank of every group.
    pub extent: u64,
    /// The smallest block of consecutive ranks, starting at a multiple of its own size, that holds a
    /// whole group: the stride of the group's outermost dimension of size > 1 times that size (1 for
    /// single-rank groups).
    pub block: u64,
}

impl Meshes {
    /// Upstream: parallel_state.py, generate_masked_orthogonal_rank_groups (the masked and unmasked
    /// shapes of the kind's `get_ranks` token).
    pub fn group_shape(&self, kind: GroupKind) -> GroupShape {
        let (masked, unmasked) = self.mesh_of(kind).split(kind.mask());
        let outer = (0..masked.len).rev().find(|&i| masked.size[i] > 1);
        GroupShape {
            size: masked.count(),
            count: unmasked.count(),
            extent: masked.extent(),
            block: outer.map_or(1, |i| masked.stride[i].saturating_mul(masked.size[i])),
        }
    }

    /// Upstream: none (meshplan's link choice for the step-time model). Whether a group of `kind` fits one
    /// NVLink domain of `domain` ranks when placed at a block boundary: its [`GroupShape::block`] is at most
    /// `domain`. When `domain` is a multiple of the block this is exactly "no group crosses"
    /// ([`Meshes::crossing`]); when it is not (72-GPU NVL72 domains over power-of-two meshes) some blocks
    /// straddle two domains, which a job placed at domain boundaries avoids.
    pub fn fits_domain(&self, kind: GroupKind, domain: u64) -> bool {
        let shape = self.group_shape(kind);
        shape.size <= 1 || shape.block <= domain.max(1)
    }

    /// Upstream: none (meshplan's link model for the step-time model). How many NVLink domains of `domain` ranks
    /// one group of `kind` spans when placed at a domain boundary (its first rank a multiple of `domain`, as
    /// [`Meshes::fits_domain`] assumes): 1 for a group inside one domain, its size when its ranks are `domain` or
    /// more apart. Work: one step per value of the group's outer dimensions.
    pub fn domains_per_group(&self, kind: GroupKind, domain: u64) -> u64 {
        let (masked, _) = self.mesh_of(kind).split(kind.mask());
        if masked.count() <= 1 {
            return 1;
        }
        domains_spanned(0, &masked, domain.max(1)).max(1)
    }

    /// Upstream: none (meshplan-only NVLink analysis). How many groups of `kind` span more than one
    /// NVLink domain of `domain` ranks, out of how many, and the most domains one spans.
    /// Work: one step per residue class of the group bases (at most the number of groups), plus the
    /// members of each group that could be the widest so far.
    pub fn crossing(&self, kind: GroupKind, domain: u64) -> CrossingCount {
        let (masked, unmasked) = self.mesh_of(kind).split(kind.mask());
        count_crossings(&masked, &unmasked, domain.max(1))
    }

    /// Upstream: none. [`Meshes::crossing`] of every kind with at least one crossing group, in
    /// [`GroupKind::all`] order: the `crossings` of a [`crate::layout::Layout`].
    pub fn crossings(&self, domain: u64) -> Vec<Crossing> {
        GroupKind::all()
            .into_iter()
            .filter_map(|kind| {
                let c = self.crossing(kind, domain);
                (c.groups_crossing > 0).then(|| Crossing {
                    kind: kind.key().to_string(),
                    groups_crossing: c.groups_crossing,
                    total_groups: c.total_groups,
                    max_domains_spanned: c.max_domains_spanned,
                })
            })
            .collect()
    }

    /// Upstream: none. Whether group number `group` of `kind` (numbered as Megatron-Core lists them, the
    /// order of [`crate::layout::Groups`]) spans more than one NVLink domain; `false` past the last group.
    pub fn group_crosses(&self, kind: GroupKind, group: u64, domain: u64) -> bool {
        let (masked, unmasked) = self.mesh_of(kind).split(kind.mask());
        let domain = domain.max(1);
        unmasked.value(group).is_some_and(|base| base / domain != base.saturating_add(masked.extent()) / domain)
    }
}

/// One representative base per residue class mod `domain`, with the number of bases in the class.
struct ResidueClasses {
    /// Per run of base dimensions: the stride mod `domain`, the values visited (`min(n, period)`), the
    /// period of its residues and its size `n`.
    step: [u64; 5],
    visits: [u64; 5],
    period: [u64; 5],
    size: [u64; 5],
    len: usize,
    digit: [u64; 5],
    domain: u64,
    done: bool,
}

impl ResidueClasses {
    /// Upstream: none (number theory: `k·s mod D` has period `D / gcd(s, D)` in `k`).
    fn new(bases: &Axes, domain: u64) -> ResidueClasses {
        let mut r = ResidueClasses {
            step: [0; 5],
            visits: [1; 5],
            period: [1; 5],
            size: [1; 5],
            len: bases.len,
            digit: [0; 5],
            domain,
            done: bases.count() == 0,
        };
        for i in 0..bases.len {
            let step = bases.stride[i] % domain;
            let period = domain / gcd(step, domain);
            r.step[i] = step;
            r.period[i] = period;
            r.size[i] = bases.size[i];
            r.visits[i] = bases.size[i].min(period);
        }
        r
    }
}

impl Iterator for ResidueClasses {
    /// (base mod domain, number of bases with that digit pattern mod each run's period).
    type Item = (u64, u64);

    /// Upstream: none (odometer over the visited digits, digit 0 fastest).
    fn next(&mut self) -> Option<(u64, u64)> {
        if self.done {
            return None;
        }
        let mut residue = 0u128;
        let mut weight = 1u64;
        for i in 0..self.len {
            let j = self.digit[i];
            residue += u128::from(j) * u128::from(self.step[i]) % u128::from(self.domain);
            // Digits k < n with k ≡ j (mod period).
            weight = weight.saturating_mul((self.size[i] - 1 - j) / self.period[i] + 1);
        }
        self.done = true;
        for i in 0..self.len {
            self.digit[i] += 1;
            if self.digit[i] < self.visits[i] {
                self.done = false;
                break;
            }
            self.digit[i] = 0;
        }
        Some(((residue % u128::from(self.domain)) as u64, weight))
    }
}

/// Upstream: none (Euclid).
fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a.max(1) } else { gcd(b, a % b) }
}

/// Upstream: none. See the module documentation.
fn count_crossings(offsets: &Axes, bases: &Axes, domain: u64) -> CrossingCount {
    let total = bases.count();
    let mut count = CrossingCount { groups_crossing: 0, total_groups: total, max_domains_spanned: u64::from(total > 0) };
    let size = offsets.count();
    if size <= 1 || total == 0 {
        return count;
    }
    if offsets.extent() < domain {
        // A group is narrower than a domain: it spans one domain, or two when a multiple of `domain` lies in
        // (first, last]. Counted by whichever walk is shorter: the residue classes of the bases, or the domain
        // boundaries the bases reach (few when the domain is wide, as the residue classes are many then).
        let crossing = if residue_steps(bases, domain) <= boundaries(offsets, bases, domain) {
            crossing_by_residues(offsets, bases, domain)
        } else {
            crossing_by_boundaries(offsets, bases, domain)
        };
        count.groups_crossing = crossing.min(total);
        count.max_domains_spanned = if crossing > 0 { 2 } else { 1 };
        return count;
    }
    // Every group spans more than one domain; the widest is looked for among the residue classes, until no group
    // can be wider.
    count.groups_crossing = total;
    let extent = u128::from(offsets.extent());
    let d = u128::from(domain);
    // No group touches more domains than it has ranks, nor more than its extent can reach.
    let widest_possible = u128::from(size).min(extent.div_ceil(d) + 1) as u64;
    for (residue, _) in ResidueClasses::new(bases, domain) {
        let reachable = ((u128::from(residue) + extent) / d + 1).min(u128::from(size)) as u64;
        if reachable > count.max_domains_spanned {
            count.max_domains_spanned = count.max_domains_spanned.max(domains_spanned(residue, offsets, domain));
        }
        if count.max_domains_spanned >= widest_possible {
            break;
        }
    }
    count
}

/// Upstream: none. Steps of the residue-class walk: one per visited digit combination.
fn residue_steps(bases: &Axes, domain: u64) -> u128 {
    let r = ResidueClasses::new(bases, domain);
    r.visits[..r.len].iter().map(|&v| u128::from(v)).product()
}

/// Upstream: none. The domain boundaries `t·domain` (t ≥ 1) a group's last rank can reach.
fn boundaries(offsets: &Axes, bases: &Axes, domain: u64) -> u128 {
    (u128::from(bases.extent()) + u128::from(offsets.extent())) / u128::from(domain)
}

/// Upstream: none. Groups (of extent below `domain`) whose first rank `b` has `b mod domain + extent ≥ domain`,
/// one step per residue class of the bases.
fn crossing_by_residues(offsets: &Axes, bases: &Axes, domain: u64) -> u64 {
    let reach = u128::from(domain - offsets.extent());
    ResidueClasses::new(bases, domain)
        .filter(|&(residue, _)| u128::from(residue) >= reach)
        .fold(0u64, |n, (_, weight)| n.saturating_add(weight))
}

/// Upstream: none. Groups (of extent `e` below `domain`) that cross a boundary `t·domain`: those whose first rank
/// lies in `[t·domain − e, t·domain − 1]`, counted by [`bases_at_most`], one step per boundary. A group this narrow
/// crosses at most one boundary, so the sum counts each once.
fn crossing_by_boundaries(offsets: &Axes, bases: &Axes, domain: u64) -> u64 {
    let (e, d) = (u128::from(offsets.extent()), u128::from(domain));
    let mut n = 0u128;
    for t in 1..=boundaries(offsets, bases, domain) {
        n += bases_at_most(bases, t * d - 1) - bases_at_most(bases, t * d - e - 1);
    }
    n.min(u128::from(u64::MAX)) as u64
}

/// Upstream: none (digit counting). How many values `Σ digit[i]·stride[i]` of `axes` are at most `x`. The runs'
/// strides ascend and the values of the runs below one are smaller than its stride (they are dimensions below it
/// in one mixed radix), so from the top run down: every digit below `⌊x / stride⌋` counts all lower values, and
/// the lower runs count what is left of `x` under that digit.
fn bases_at_most(axes: &Axes, x: u128) -> u128 {
    // lower[i]: how many values the runs below run i take.
    let mut lower = [1u128; 5];
    for i in 1..axes.len {
        lower[i] = lower[i - 1] * u128::from(axes.size[i - 1]);
    }
    let (mut x, mut n) = (x, 0u128);
    for i in (0..axes.len).rev() {
        let (size, stride) = (u128::from(axes.size[i]), u128::from(axes.stride[i]));
        let digit = (x / stride).min(size - 1);
        n += digit * lower[i];
        x -= digit * stride;
    }
    n + 1
}

/// Upstream: none. Distinct domains of the ranks `first + offsets`. The innermost run of `offsets` (stride
/// `s`, `n` values) puts each copy of itself — one per value of the outer runs, ascending and disjoint —
/// on `n` distinct domains when `s ≥ D`, else on every domain from its first rank's to its last's; two
/// consecutive copies share at most one domain, the last of one and the first of the next.
fn domains_spanned(first: u64, offsets: &Axes, domain: u64) -> u64 {
    if offsets.len == 0 {
        return 1;
    }
    let (n, s) = (offsets.size[0], offsets.stride[0]);
    let inner_extent = n.saturating_sub(1).saturating_mul(s);
    let mut outer = *offsets;
    outer.size[0] = 1;
    let mut spans = 0u64;
    let mut previous_last = None;
    for o in outer.values() {
        let start = first.saturating_add(o);
        let (lo, hi) = (start / domain, start.saturating_add(inner_extent) / domain);
        let covered = if s >= domain { n } else { hi - lo + 1 };
        spans = spans.saturating_add(covered) - u64::from(previous_last == Some(lo));
        previous_last = Some(hi);
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::{GroupKind, MeshSizes, build_layout};
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn sizes(tp: u64, pp: u64, cp: u64, ep: u64, etp: u64) -> MeshSizes {
        MeshSizes { tp, pp, cp, ep, etp }
    }

    /// Counts over materialised groups, the way a reader would: distinct domains per group via a set.
    fn naive(groups: &[Vec<u32>], domain: u64) -> (CrossingCount, Vec<bool>) {
        let spans: Vec<u64> =
            groups.iter().map(|g| g.iter().map(|&r| u64::from(r) / domain).collect::<BTreeSet<_>>().len() as u64).collect();
        let count = CrossingCount {
            groups_crossing: spans.iter().filter(|&&s| s > 1).count() as u64,
            total_groups: groups.len() as u64,
            max_domains_spanned: spans.iter().copied().max().unwrap_or(0),
        };
        (count, spans.iter().map(|&s| s > 1).collect())
    }

    #[test]
    fn nvl72_dp_groups_straddle_rank_72() {
        // 128 ranks, tp 2, pp 4 → dp 16; default order tp-cp-ep-dp-pp: tp stride 1, dp stride 2, pp stride 32.
        // A dp group is b + 2k (k < 16), b = t + 32·p: ranks b..b+30. Domains of 72 ranks: it crosses iff
        // b mod 72 ≥ 42. Bases 0, 1, 32, 33, 64, 65, 96, 97 (mod 72: 24, 25): only 64 and 65 cross, over 2 domains.
        let m = Meshes::resolve(128, &sizes(2, 4, 1, 1, 2), "tp-cp-ep-dp-pp").unwrap();
        let c = m.crossing(GroupKind::Dp, 72);
        assert_eq!(c, CrossingCount { groups_crossing: 2, total_groups: 8, max_domains_spanned: 2 });
        let crossing: Vec<u64> = (0..8).filter(|&g| m.group_crosses(GroupKind::Dp, g, 72)).collect();
        // Group numbers: t fastest, then p: group 4 has base 64, group 5 base 65.
        assert_eq!(crossing, [4, 5]);
        assert!(!m.group_crosses(GroupKind::Dp, 8, 72), "no ninth group");
        // Its aligned block is 2·16 = 32 ≤ 72: the step-time model prices dp at NVLink all the same.
        assert_eq!(m.group_shape(GroupKind::Dp), GroupShape { size: 16, count: 8, extent: 30, block: 32 });
        assert!(m.fits_domain(GroupKind::Dp, 72));
        // With 64-rank domains (a multiple of 32) nothing crosses.
        assert_eq!(m.crossing(GroupKind::Dp, 64).groups_crossing, 0);
    }

    #[test]
    fn expert_groups_span_the_domains_their_ranks_reach() {
        // 1,024 ranks, tp 2, pp 8 → dp 64; ep 64, etp 1 → edp 2. Expert mesh etp-ep-edp-pp: ep stride 1, so an ep group
        // is 64 consecutive ranks: 64 / 8 = 8 HGX domains of 8, and 1 NVL72 domain (ranks 0..63 < 72).
        let m = Meshes::resolve(1024, &sizes(2, 8, 1, 64, 1), "tp-cp-ep-dp-pp").unwrap();
        assert_eq!(m.domains_per_group(GroupKind::Ep, 8), 8);
        assert_eq!(m.domains_per_group(GroupKind::Ep, 72), 1);
        // etp 2: ep stride 2, 64 ranks over 0..126: 16 domains of 8; 2 of 72 (0..71 and 72..126).
        let m = Meshes::resolve(1024, &sizes(2, 8, 1, 64, 2), "tp-cp-ep-dp-pp").unwrap();
        assert_eq!(m.domains_per_group(GroupKind::Ep, 8), 16);
        assert_eq!(m.domains_per_group(GroupKind::Ep, 72), 2);
        // pp groups of 8 ranks 128 apart: one domain each.
        assert_eq!(m.domains_per_group(GroupKind::Pp, 8), 8);
        // A single-rank group (cp 1) spans one domain.
        assert_eq!(m.domains_per_group(GroupKind::Cp, 8), 1);
    }

    #[test]
    fn sixteen_million_ranks_are_counted_without_groups() {
        // 2^24 ranks, tp 8, cp 2, pp 16 → dp 2^16. Default order strides: tp 1, cp 8, dp 16, pp 2^20. Domains of 72.
        let m = Meshes::resolve(1 << 24, &sizes(8, 16, 2, 1, 8), "tp-cp-ep-dp-pp").unwrap();
        // tp: 8 consecutive ranks at multiples of 8, and 72 = 9·8: none crosses.
        assert_eq!(m.crossing(GroupKind::Tp, 72).groups_crossing, 0);
        // pp: stride 2^20 ≥ 72, so each of the 2^20 groups has its 16 ranks in 16 domains.
        assert_eq!(m.crossing(GroupKind::Pp, 72), CrossingCount { groups_crossing: 1 << 20, total_groups: 1 << 20, max_domains_spanned: 16 });
        // dp: extent 16·(2^16 − 1) = 1,048,560 > 72, so all 256 groups cross. Stride 16 < 72 skips no domain:
        // spans = ⌊(ρ + 1,048,560)/72⌋ + 1 for ρ = base mod 72, i.e. 14,564 if ρ < 48, else 14,565. Bases are
        // t + 8c + 2^20·p with 2^20 ≡ 40 (mod 72); p = 3 gives ρ = 120 mod 72 = 48, so the widest is 14,565.
        assert_eq!(m.crossing(GroupKind::Dp, 72), CrossingCount { groups_crossing: 256, total_groups: 256, max_domains_spanned: 14_565 });
    }

    #[test]
    fn every_kind_of_the_docstring_layout() {
        // initialize_model_parallel's docstring: 16 ranks, tp 2, pp 4 (dp 2). Groups listed there:
        // pp [g0, g4, g8, g12] … cross domains of 8 (two each); tp [g0, g1] … and dp [g0, g2] … do not.
        let m = Meshes::resolve(16, &sizes(2, 4, 1, 1, 2), "tp-cp-ep-dp-pp").unwrap();
        assert_eq!(m.crossing(GroupKind::Pp, 8), CrossingCount { groups_crossing: 4, total_groups: 4, max_domains_spanned: 2 });
        assert_eq!(m.crossing(GroupKind::Tp, 8), CrossingCount { groups_crossing: 0, total_groups: 8, max_domains_spanned: 1 });
        assert_eq!(m.crossing(GroupKind::Dp, 8).groups_crossing, 0);
        // Singleton groups (cp 1) never cross.
        assert_eq!(m.crossing(GroupKind::Cp, 1), CrossingCount { groups_crossing: 0, total_groups: 16, max_domains_spanned: 1 });
    }

    #[test]
    fn a_wide_domain_is_walked_by_its_boundaries() {
        // The fuzz harness's slowest input (427 s): 5,455,910 GPUs a node × 524,288 nodes (2.86·10^12 ranks), TP 64,
        // NVLink domains of 2^40 ranks. A TP group's 64 ranks are consecutive from a multiple of 64, and 2^40 is a
        // multiple of 64: none crosses. The bases' residues mod 2^40 are 4.5·10^10 classes; the boundaries 2.
        let world = 5_455_910u64 * 524_288;
        let m = Meshes::resolve(world, &sizes(64, 1, 1, 1, 64), "tp-cp-ep-dp-pp").unwrap();
        assert_eq!(m.crossing(GroupKind::Tp, 1 << 40), CrossingCount { groups_crossing: 0, total_groups: world / 64, max_domains_spanned: 1 });
        // Domains of 2^40 − 1 ranks (odd: the residues never repeat early): the TP group [b, b + 63] crosses the
        // boundary t·(2^40 − 1), t = 1, 2, when it holds it and does not start on it: bases b = 64k with
        // t·D − 63 ≤ b ≤ t·D − 1: one multiple of 64 in every 63 consecutive numbers ending at t·D − 1, unless t·D is
        // itself a multiple of 64 (it is not: D is odd, t < 64). So 2 groups, each over 2 domains.
        let d = (1u64 << 40) - 1;
        assert_eq!(m.crossing(GroupKind::Tp, d), CrossingCount { groups_crossing: 2, total_groups: world / 64, max_domains_spanned: 2 });
        // DP groups (one per TP rank, 4.5·10^10 ranks 64 apart) are wider than a domain: all 64 cross. Stride 64 skips
        // no domain, so group b spans ⌊(b + extent) / 2^40⌋ + 1 domains; its last rank is below the world,
        // 2.86·10^12 < 3·2^40: 3 domains.
        let c = m.crossing(GroupKind::Dp, 1 << 40);
        assert_eq!((c.groups_crossing, c.total_groups, c.max_domains_spanned), (64, 64, 3));
    }

    /// Both walks of a narrow group's crossings agree with each other and with the materialised groups.
    fn both_walks(m: &Meshes, kind: GroupKind, domain: u64) -> (u64, u64) {
        let (masked, unmasked) = m.mesh_of(kind).split(kind.mask());
        (crossing_by_residues(&masked, &unmasked, domain), crossing_by_boundaries(&masked, &unmasked, domain))
    }

    fn dim() -> impl Strategy<Value = u64> {
        prop::sample::select(vec![1u64, 1, 2, 3, 4, 5, 6, 8])
    }

    fn divisors(n: u64) -> Vec<u64> {
        (1..=n).filter(|d| n.is_multiple_of(*d)).collect()
    }

    proptest! {
        /// The arithmetic against the materialised groups, for every kind, any order Megatron accepts (with
        /// tokens of size 1 left out or in upper case), meshes whose pp groups disagree, and any domain size.
        #[test]
        fn counts_match_materialised_groups(
            (tp, cp, pp, dp) in (dim(), dim(), dim(), dim()),
            (i, j) in (any::<prop::sample::Index>(), any::<prop::sample::Index>()),
            perm in Just(vec!["tp", "cp", "ep", "dp", "pp"]).prop_shuffle(),
            upper in any::<bool>(),
            domain in prop_oneof![1u64..=20, 21u64..=200, Just(72u64), Just(u64::MAX)],
        ) {
            let world = tp * cp * pp * dp;
            let d1 = divisors(world / pp);
            let etp = d1[i.index(d1.len())];
            let d2 = divisors(world / pp / etp);
            let ep = d2[j.index(d2.len())];
            let s = sizes(tp, pp, cp, ep, etp);
            let order = if upper { perm.join("-").to_uppercase() } else { perm.join("-") };
            let m = Meshes::resolve_sizes(world, &s, &order).expect("a full order resolves");
            for kind in GroupKind::all() {
                let groups = m.mesh_of(kind).groups(kind.mask());
                let (expected, per_group) = naive(&groups, domain.max(1));
                prop_assert_eq!(m.crossing(kind, domain), expected, "{:?} {} world {} domain {}", kind, order, world, domain);
                if m.group_shape(kind).extent < domain.max(1) && groups[0].len() > 1 {
                    let g = expected.groups_crossing;
                    prop_assert_eq!(both_walks(&m, kind, domain.max(1)), (g, g), "{:?} {} domain {}", kind, order, domain);
                }
                for (g, &crosses) in per_group.iter().enumerate() {
                    prop_assert_eq!(m.group_crosses(kind, g as u64, domain), crosses, "{:?} group {}", kind, g);
                }
                let shape = m.group_shape(kind);
                // Group 0 starts at rank 0, a domain boundary: the domains it spans, counted by a set.
                prop_assert_eq!(m.domains_per_group(kind, domain), naive(&groups[..1], domain.max(1)).0.max_domains_spanned.max(1));
                prop_assert_eq!(shape.count, groups.len() as u64);
                prop_assert_eq!(shape.size, groups[0].len() as u64);
                for g in &groups {
                    let (first, last) = (u64::from(g[0]), u64::from(*g.last().unwrap()));
                    prop_assert_eq!(last - first, shape.extent);
                    prop_assert_eq!(first / shape.block, last / shape.block, "{:?}: a group inside one aligned block", kind);
                }
                // A domain that is a multiple of the block: fitting it is exactly "no group crosses".
                if domain != u64::MAX && domain % shape.block == 0 {
                    prop_assert_eq!(m.fits_domain(kind, domain), expected.groups_crossing == 0);
                }
            }
            if let Ok(l) = build_layout(world, &s, &order, domain) {
                for kind in GroupKind::all() {
                    let (_, per_group) = naive(l.groups_of(kind), domain.max(1));
                    for (g, &crosses) in per_group.iter().enumerate() {
                        prop_assert_eq!(l.group_crosses(kind, g, domain), crosses);
                        for &r in &l.groups_of(kind)[g] {
                            prop_assert_eq!(l.rank_crosses(kind, r, domain), crosses);
                        }
                    }
                }
            }
        }
    }
}
