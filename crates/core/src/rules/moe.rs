//! Mixture of experts: expert parallelism against the model's experts, and the router and expert settings
//! Megatron checks.

use super::fixes::nearest_divisor;
use super::findings::{EP, ETP, Findings, d};
use crate::Code;
use crate::plan::Plan;

/// ep-requires-moe, etp-without-moe and experts-not-divisible-by-ep: whether EP and ETP fit the model's experts
/// (cheap; the search asks it per layout).
pub fn expert_parallel(p: &Plan, out: &mut impl Findings) {
    let (m, par) = (&p.model, &p.parallelism);
    let (tp, ep, etp, moe) = (par.tp(), par.ep(), par.etp(), m.is_moe());
    if !moe {
        if ep > 1 {
            out.add(Code::EpRequiresMoe, |code|
                d(
                    code,
                    format!("expert_model_parallel_size = {ep} on a dense model: it has no experts to distribute"),
                    "set expert_model_parallel_size = 1, or use an MoE model (num_moe_experts)".into(),
                )
                .with_apply(EP, 1),
            );
        }
        if !par.expert_tensor_parallel_size_defaulted && etp != tp && etp > 1 {
            out.add(Code::EtpWithoutMoe, |code| d(
                code,
                format!("expert_tensor_parallel_size = {etp} has no effect on a dense model"),
                "remove expert_tensor_parallel_size".into(),
            ));
        }
    } else {
        let experts = m.num_experts();
        if experts % ep != 0 {
            out.add(Code::ExpertsNotDivisibleByEp, |code| {
                let good = nearest_divisor(experts, ep);
                d(
                    code,
                    format!("num_moe_experts = {experts} is not divisible by expert_model_parallel_size = {ep}: each EP rank must hold the same number of experts"),
                    format!("set expert_model_parallel_size to {good} (a divisor of {experts})"),
                )
                .with_apply(EP, good)
            });
        }
    }
}

/// topk-exceeds-experts, topk-one-needs-pre-softmax, moe-bias-needs-etp1 and etp-default.
pub fn router_and_experts(p: &Plan, out: &mut impl Findings) {
    let (m, par) = (&p.model, &p.parallelism);
    let (tp, ep, etp) = (par.tp(), par.ep(), par.etp());
    if !m.is_moe() {
        return;
    }
    let experts = m.num_experts();
    if m.moe_router_topk > experts {
        out.add(Code::TopkExceedsExperts, |code| d(
            code,
            format!("moe_router_topk = {} exceeds num_moe_experts = {experts}", m.moe_router_topk),
            format!("set moe_router_topk ≤ {experts}"),
        ));
    }
    if m.moe_router_topk == 1 && !m.moe_router_pre_softmax {
        out.add(Code::TopkOneNeedsPreSoftmax, |code| d(
            code,
            "moe_router_topk = 1 with softmax scoring and moe_router_pre_softmax = false: the single routing weight would always be 1".into(),
            "set moe_router_pre_softmax = true, or moe_router_topk ≥ 2".into(),
        ));
    }
    if m.add_bias_linear && etp > 1 {
        out.add(Code::MoeBiasNeedsEtp1, |code|
            d(
                code,
                format!("add_bias_linear = true with expert_tensor_parallel_size = {etp}: Megatron's grouped experts do not support biases with ETP > 1"),
                "set expert_tensor_parallel_size = 1 or add_bias_linear = false".into(),
            )
            .with_apply(ETP, 1),
        );
    }
    if par.expert_tensor_parallel_size_defaulted && ep > 1 && tp > 1 {
        out.add(Code::EtpDefault, |code|
            d(
                code,
                format!(
                    "expert_tensor_parallel_size was not given, so this plan uses megatron-core's default ETP = TP = {tp}; Megatron Bridge would use ETP = 1 because EP = {ep} > 1"
                ),
                "set expert_tensor_parallel_size explicitly so both launchers build the same expert mesh".into(),
            )
            .with_apply(ETP, 1),
        );
    }
}
