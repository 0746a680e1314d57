//! Nearest valid values for the fixes the rules name: divisors, multiples, and the nearest TP every width rule accepts.

use crate::model::{Ffn, Mixer, ModelConfig};
use crate::plan::Plan;

/// Divisors of `n` (n ≥ 1), ascending; n is at most 2^40 here, so trial division to √n is cheap.
fn divisors(n: u64) -> Vec<u64> {
    let mut small = Vec::new();
    let mut large = Vec::new();
    let mut i = 1u64;
    while i.saturating_mul(i) <= n && i <= (1 << 21) {
        if n % i == 0 {
            small.push(i);
            if i != n / i {
                large.push(n / i);
            }
        }
        i += 1;
    }
    small.extend(large.into_iter().rev());
    small
}

/// The divisor of `n` nearest to `x` (ties go to the smaller one), for "nearest valid value" fixes.
pub fn nearest_divisor(n: u64, x: u64) -> u64 {
    divisors(n.max(1)).into_iter().min_by_key(|&v| (v.abs_diff(x), v)).unwrap_or(1)
}

/// The smallest multiple of `m` that is ≥ x.
pub fn round_up(x: u64, m: u64) -> u64 {
    x.div_ceil(m.max(1)).saturating_mul(m.max(1))
}

pub fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Least common multiple, saturating; lcm(0, x) is taken as x so a zero never reaches a modulus.
pub fn lcm(a: u64, b: u64) -> u64 {
    let (a, b) = (a.max(1), b.max(1));
    (a / gcd(a, b)).saturating_mul(b)
}

/// Whether TP = `c` passes the width rules: heads, query groups (multiple or divisor), dense and shared FFN, and the
/// state-space mixers' heads and groups (Mamba-2 heads and groups, Gated DeltaNet key and value heads).
pub fn tp_widths_divide(m: &ModelConfig, c: u64) -> bool {
    let c = c.max(1);
    let g = m.num_query_groups.max(1);
    let kinds = m.kind_totals();
    let dense_divides = kinds.table.kinds().iter().filter(|k| k.ffn == Ffn::Dense).all(|k| m.dense_width(*k) % c == 0);
    let mamba = kinds.run_where(|k| k.mixer == Mixer::Mamba) > 0;
    let gdn = kinds.run_where(|k| k.mixer == Mixer::GatedDeltaNet) > 0;
    let (_, _, key_heads, value_heads, _) = m.gdn_dims();
    // Window layers with their own shape (sliding_attention_setting) split their heads and groups over TP alike.
    let window = kinds.run_where(|k| k.mixer == Mixer::WindowAttention) > 0;
    let w = m.attention_shape(Mixer::WindowAttention);
    let wg = w.num_query_groups.max(1);
    m.num_attention_heads % c == 0
        && (!window || (w.num_attention_heads % c == 0 && (wg % c == 0 || c % wg == 0)))
        && (m.multi_latent_attention || g % c == 0 || c % g == 0)
        && dense_divides
        && m.moe_shared_expert_intermediate_size.filter(|&s| m.is_moe() && s > 0).is_none_or(|s| s % c == 0)
        && (!mamba || (m.mamba_heads() % c == 0 && m.mamba_groups() % c == 0))
        && (!gdn || (key_heads % c == 0 && value_heads % c == 0))
        // DeepSeek-V4's output groups split over TP (deepseek_v4_hybrid_attention.py: o_groups % tp_size == 0).
        && (!m.is_dsv4() || m.dsv4_output().0 % c == 0)
}

/// The candidate nearest `current` (ties to the smaller), preferring one that divides `per` (keeping a data-parallel
/// size whole); with `whole_dp` only such a one will do.
fn nearest_of(candidates: &[u64], current: u64, per: u64, whole_dp: bool) -> Option<u64> {
    let pick = |fits_world: bool| {
        candidates.iter().copied().filter(|&c| !fits_world || (per > 0 && per % c == 0)).min_by_key(|&c| (c.abs_diff(current), c))
    };
    pick(true).or_else(|| if whole_dp { None } else { pick(false) })
}

/// The TP nearest to the plan's that passes every TP width rule (heads, query groups, dense and shared FFN, the
/// state-space mixers' heads and groups, see [`tp_widths_divide`]) and `also`, for "set tensor_model_parallel_size to
/// …" fixes. Prefers a TP that divides world/(PP·CP), so the dense data-parallel size stays whole; with `whole_dp` only
/// such a TP will do (None if none does). Ties go to the smaller TP. TP = 1 passes the width rules, so without
/// `whole_dp` and `also` there is always one.
// TP must divide num_attention_heads (attention.py), so the candidates are its divisors.
pub fn nearest_valid_tp(p: &Plan, also: impl Fn(u64) -> bool, whole_dp: bool) -> Option<u64> {
    let (tp, m) = (p.parallelism.tp(), &p.model);
    let pp_cp = p.parallelism.pp().saturating_mul(p.parallelism.cp()).max(1);
    let w = p.world_size();
    let per = if w % pp_cp == 0 { w / pp_cp } else { 0 };
    let candidates: Vec<u64> = divisors(m.num_attention_heads.max(1)).into_iter().filter(|&c| tp_widths_divide(m, c) && also(c)).collect();
    nearest_of(&candidates, tp, per, whole_dp)
}

/// The CP nearest to the plan's that `ok` accepts and the sequence allows (seq_length a multiple of
/// [`seq_multiple`]), among the divisors of world/(TP·PP), so the data-parallel size stays whole.
pub fn nearest_valid_cp(p: &Plan, ok: impl Fn(u64) -> bool) -> Option<u64> {
    let par = &p.parallelism;
    let tp_pp = par.tp().saturating_mul(par.pp()).max(1);
    let w = p.world_size();
    let per = if w % tp_pp == 0 { w / tp_pp } else { 1 };
    let seq = p.training.seq_length;
    let candidates: Vec<u64> = divisors(per.max(1))
        .into_iter()
        .filter(|&c| ok(c) && seq % seq_multiple(c, par.tp(), par.sequence_parallel) == 0)
        .collect();
    nearest_of(&candidates, par.cp(), per, true)
}

/// The ETP nearest to the plan's that divides `moe_ffn_hidden_size` (experts.py splits each expert's FFN over ETP) and
/// passes `also`, for "set expert_tensor_parallel_size to …" fixes. Prefers an ETP that divides world/(PP·EP), so the
/// expert data-parallel size stays whole (the world rule's own fix); ties go to the smaller ETP. ETP = 1 divides every
/// width, so unless `also` refuses it there is always one.
pub fn nearest_valid_etp(p: &Plan, also: impl Fn(u64) -> bool) -> Option<u64> {
    let par = &p.parallelism;
    let pp_ep = par.pp().saturating_mul(par.ep()).max(1);
    let w = p.world_size();
    let per = if w % pp_ep == 0 { w / pp_ep } else { 0 };
    let candidates: Vec<u64> = divisors(p.model.moe_ffn().max(1)).into_iter().filter(|&c| also(c)).collect();
    nearest_of(&candidates, par.etp(), per, false)
}

/// The multiple seq_length must be: 2·CP when CP > 1 (the load-balanced CP split), CP·TP with sequence parallelism
/// (the CP-local sequence scattered over TP); both together give CP·lcm(2, TP).
pub fn seq_multiple(cp: u64, tp: u64, sequence_parallel: bool) -> u64 {
    let cp_part = if cp > 1 { 2 * cp } else { 1 };
    let sp_part = if sequence_parallel && tp > 1 { cp.saturating_mul(tp) } else { 1 };
    lcm(cp_part, sp_part)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_divisor_picks_closest() {
        // Divisors of 8 are 1, 2, 4, 8: 3 is equally far from 2 and 4, ties go low.
        assert_eq!(nearest_divisor(8, 3), 2);
        assert_eq!(nearest_divisor(64, 6), 4);
        assert_eq!(nearest_divisor(61, 16), 1);
        assert_eq!(nearest_divisor(96, 10), 8);
    }
}
