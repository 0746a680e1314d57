//! The state-space mixers against tensor and context parallelism: Mamba-2 heads and B/C groups, Gated DeltaNet key and
//! value heads. Each rule applies only to a model that has such layers.

use super::fixes::{nearest_divisor, nearest_valid_cp, nearest_valid_tp};
use super::findings::{CP, Findings, TP, d};
use crate::Code;
use crate::derive::Derived;
use crate::model::Mixer;
use crate::plan::Plan;

/// The nearest TP every width rule accepts (one pick for all of them, so one fix clears them all).
fn width_tp(p: &Plan) -> u64 {
    nearest_valid_tp(p, |_| true, false).unwrap_or(1)
}

/// Whether CP = `cp` splits the Mamba heads and groups as mamba_context_parallel.py requires at the plan's TP.
fn mamba_cp_ok(heads: u64, groups: u64, tp: u64, cp: u64) -> bool {
    let (heads_tp, groups_tp) = (heads / tp.max(1), groups / tp.max(1));
    cp <= 1 || (heads_tp % cp == 0 && groups_tp > 0 && if groups_tp < cp { cp % groups_tp == 0 } else { groups_tp % cp == 0 })
}

/// mamba-heads-not-divisible-by-tp, mamba-groups-not-divisible-by-tp, mamba-heads-not-divisible-by-groups,
/// mamba-heads-not-divisible-by-tp-cp, mamba-groups-not-divisible-by-cp.
// Source: megatron/core/ssm/mamba_mixer.py MambaMixer.__init__ l.262–274 and mamba_context_parallel.py
// MambaContextParallel.__init__ l.106–129 (assert texts quoted in each message).
pub fn mamba(p: &Plan, dv: &Derived, out: &mut impl Findings) {
    let m = &p.model;
    if dv.kinds(m).run_where(|k| k.mixer == Mixer::Mamba) == 0 {
        return;
    }
    let (tp, cp) = (p.parallelism.tp().max(1), p.parallelism.cp().max(1));
    let (heads, groups) = (m.mamba_heads(), m.mamba_groups());
    for (name, n, code) in [("mamba_num_heads", heads, Code::MambaHeadsNotDivisibleByTp), ("mamba_num_groups", groups, Code::MambaGroupsNotDivisibleByTp)] {
        if n % tp != 0 {
            out.add(code, |code| {
                let good = width_tp(p);
                let megatron = if name == "mamba_num_heads" { "nheads must be evenly divisble by tp_size" } else { "ngroups must be evenly divisible by tp_size" };
                d(
                    code,
                    format!("{name} = {n} is not divisible by tensor_model_parallel_size = {tp} ({n} mod {tp} = {}): Megatron asserts \"{megatron}\"", n % tp),
                    format!("set tensor_model_parallel_size to {good}, the nearest TP that divides {n} and passes the other TP width rules"),
                )
                .with_apply(TP, good)
            });
        }
    }
    if groups == 0 || heads % groups != 0 {
        out.add(Code::MambaHeadsNotDivisibleByGroups, |code| d(
            code,
            format!("mamba_num_heads = {heads} is not divisible by mamba_num_groups = {groups}: Megatron asserts \"nheads must be evenly divisible by ngroups\""),
            format!("set mamba_num_groups to a divisor of {heads} (e.g. {})", nearest_divisor(heads, groups)),
        ));
    }
    if cp <= 1 || heads % tp != 0 || groups % tp != 0 {
        return;
    }
    let (heads_tp, groups_tp) = (heads / tp, groups / tp);
    let good_cp = || nearest_valid_cp(p, |c| mamba_cp_ok(heads, groups, tp, c)).unwrap_or(1);
    if heads_tp % cp != 0 {
        out.add(Code::MambaHeadsNotDivisibleByTpCp, |code| {
            let good = good_cp();
            d(
                code,
                format!("mamba_num_heads / TP = {heads}/{tp} = {heads_tp} heads per TP rank do not split over context_parallel_size = {cp}: Megatron asserts \"nheads must be evenly divisible by tp_size * cp_size\" (Mamba splits heads over CP ranks by all-to-all)"),
                format!("set context_parallel_size to {good}, the nearest CP that divides the heads and groups per TP rank (and the sequence)"),
            )
            .with_apply(CP, good)
        });
    }
    let groups_bad = groups_tp == 0 || if groups_tp < cp { cp % groups_tp != 0 } else { groups_tp % cp != 0 };
    if groups_bad {
        out.add(Code::MambaGroupsNotDivisibleByCp, |code| {
            let good = good_cp();
            let megatron = if groups_tp < cp { "cp_size must be evenly divisible by ngroups/tp_size" } else { "ngroups must be evenly divisible by tp_size * cp_size" };
            d(
                code,
                format!("mamba_num_groups / TP = {groups}/{tp} = {groups_tp} groups per TP rank against context_parallel_size = {cp}: Megatron asserts \"{megatron}\" (fewer groups than CP ranks are replicated, so CP must be a multiple of them; more must split evenly)"),
                format!("set context_parallel_size to {good}, the nearest CP that divides the heads and groups per TP rank (and the sequence)"),
            )
            .with_apply(CP, good)
        });
    }
}

/// gdn-value-heads-not-multiple-of-key-heads, gdn-key-heads-not-divisible-by-tp-cp,
/// gdn-value-heads-not-divisible-by-tp-cp, gdn-needs-linear-attention-freq.
// Source: megatron/core/transformer/transformer_config.py __post_init__ l.1474–1509 (texts quoted in each message). They
// run for experimental_attention_variant gated_delta_net; hybrid G layers divide the same heads unchecked
// (gated_delta_net/common.py l.185–190), so meshplan applies them to those too.
pub fn gated_delta_net(p: &Plan, dv: &Derived, out: &mut impl Findings) {
    let m = &p.model;
    if m.gated_delta_net_variant() && m.hybrid_layer_pattern.is_none() && m.linear_attention_freq.is_none() {
        out.add(Code::GdnNeedsLinearAttentionFreq, |code| d(
            code,
            "experimental_attention_variant = gated_delta_net without linear_attention_freq: Megatron asserts \"linear_attention_freq must be set for linear gdn.\" (meshplan plans every layer as full attention)".into(),
            "set model.linear_attention_freq (e.g. 4: every 4th layer full attention, the rest Gated DeltaNet)".into(),
        ));
    }
    if dv.kinds(m).run_where(|k| k.mixer == Mixer::GatedDeltaNet) == 0 {
        return;
    }
    let (tp, cp) = (p.parallelism.tp().max(1), p.parallelism.cp().max(1));
    let (_, _, key_heads, value_heads, _) = m.gdn_dims();
    if key_heads == 0 || value_heads % key_heads != 0 {
        out.add(Code::GdnValueHeadsNotMultipleOfKeyHeads, |code| d(
            code,
            format!("linear_num_value_heads ({value_heads}) must be a multiple of linear_num_key_heads ({key_heads})."),
            format!("set linear_num_value_heads to a multiple of {key_heads} (e.g. {})", key_heads.max(1) * value_heads.div_ceil(key_heads.max(1)).max(1)),
        ));
    }
    let tp_cp = tp.saturating_mul(cp);
    for (name, n, code) in [
        ("linear_num_key_heads", key_heads, Code::GdnKeyHeadsNotDivisibleByTpCp),
        ("linear_num_value_heads", value_heads, Code::GdnValueHeadsNotDivisibleByTpCp),
    ] {
        if n % tp_cp != 0 {
            out.add(code, |code| {
                let message = format!(
                    "self.{name}={n} must be a multiple of (self.tensor_model_parallel_size={tp} * self.context_parallel_size={cp}). ({n} mod {tp_cp} = {})",
                    n % tp_cp
                );
                if n % tp != 0 {
                    let good = width_tp(p);
                    d(code, message, format!("set tensor_model_parallel_size to {good}, the nearest TP that divides {n} and passes the other TP width rules"))
                        .with_apply(TP, good)
                } else {
                    let good = nearest_valid_cp(p, |c| key_heads % (tp * c) == 0 && value_heads % (tp * c) == 0).unwrap_or(1);
                    d(code, message, format!("set context_parallel_size to {good}, the nearest CP that divides both head counts per TP rank (and the sequence)"))
                        .with_apply(CP, good)
                }
            });
        }
    }
}

