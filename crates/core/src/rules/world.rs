//! The world size against both meshes: dense data parallelism W/(TP·PP·CP) and expert data parallelism
//! W/(ETP·EP·PP) must be whole.
// Source: megatron/core/parallel_state.py initialize_model_parallel (both RankGenerators need W divisible by their
// mesh).

use super::fixes::{nearest_divisor, nearest_valid_tp, round_up};
use super::findings::{EP, Findings, TP, d};
use crate::Code;
use crate::plan::Plan;

/// world-not-divisible-dense and world-not-divisible-expert for the plan's world size.
pub fn meshes(p: &Plan, out: &mut impl Findings) {
    dense_mesh(p, out);
    expert_mesh(p, out);
}

/// world-not-divisible-dense: the world is a multiple of TP·PP·CP (cheap; the search asks it per layout).
pub fn dense_mesh(p: &Plan, out: &mut impl Findings) {
    let par = &p.parallelism;
    let (tp, pp, cp, w) = (par.tp(), par.pp(), par.cp(), p.world_size());
    let dense = tp.saturating_mul(pp).saturating_mul(cp);
    if dense != 0 && w % dense == 0 {
        return;
    }
    out.add(Code::WorldNotDivisibleDense, |code| {
        let good_tp = nearest_valid_tp(p, |_| true, true);
        let gpus = format!("use {} GPUs (the nearest multiple of {dense} at or above {w})", round_up(w, dense));
        let diag = d(
            code,
            format!("world size {w} is not a multiple of TP·PP·CP = {tp}·{pp}·{cp} = {dense}, so the dense data-parallel size {w}/{dense} is not whole"),
            match good_tp {
                Some(g) => format!("{gpus}, or set tensor_model_parallel_size to {g}, the nearest TP that divides {w}/(PP·CP) and the model's widths"),
                None => format!("{gpus}; no tensor_model_parallel_size fixes it, since PP·CP = {} does not divide {w} (or no TP that does also divides the model's widths)", pp.saturating_mul(cp)),
            },
        );
        match good_tp {
            Some(g) => diag.with_apply(TP, g),
            None => diag,
        }
    });
}

/// world-not-divisible-expert: the world is a multiple of ETP·EP·PP (cheap; the search asks it per layout).
pub fn expert_mesh(p: &Plan, out: &mut impl Findings) {
    let par = &p.parallelism;
    let (pp, ep, etp, w) = (par.pp(), par.ep(), par.etp(), p.world_size());
    let expert = etp.saturating_mul(ep).saturating_mul(pp);
    if expert != 0 && w % expert == 0 {
        return;
    }
    out.add(Code::WorldNotDivisibleExpert, |code| {
        let good_ep = nearest_divisor((w / pp.saturating_mul(etp).max(1)).max(1), ep);
        d(
            code,
            format!("world size {w} is not a multiple of ETP·EP·PP = {etp}·{ep}·{pp} = {expert}, so the expert data-parallel size is not whole"),
            format!("use {} GPUs, or set expert_model_parallel_size to {good_ep}", round_up(w, expert)),
        )
        .with_apply(EP, good_ep)
    });
}
