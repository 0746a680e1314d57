//! Topology: which parallel groups leave the NVLink domain.

use super::fixes::{nearest_valid_etp, nearest_valid_tp};
use super::findings::{ETP, Findings, TP, d};
use crate::Code;
use crate::layout::{Layout, MAX_CROSSING_WORLD, MAX_LAYOUT_WORLD};
use crate::plan::Plan;

/// Topology rules: which groups leave the NVLink domain.
pub fn check_topology(p: &Plan, layout: &Layout, out: &mut impl Findings) {
    let domain = p.cluster.nvlink_domain_size;
    let world = p.world_size();
    if world > MAX_CROSSING_WORLD {
        out.add(Code::WorldTooLargeToLayOut, |code| {
            d(
                code,
                format!("world size {world} is more than the {MAX_CROSSING_WORLD} ranks whose NVLink crossings meshplan counts: the layout gives its order without the group lists or their crossings"),
                format!("plan at most {MAX_CROSSING_WORLD} GPUs to see which groups leave an NVLink domain, or read a rank's groups from its coordinates (layout::coordinates), which have no such limit"),
            )
        });
    } else if world > MAX_LAYOUT_WORLD {
        out.add(Code::WorldTooLargeToLayOut, |code| {
            d(
                code,
                format!("world size {world} is more than the {MAX_LAYOUT_WORLD} ranks whose rank groups meshplan lists: the layout gives its order and NVLink crossings without the group lists"),
                format!("plan at most {MAX_LAYOUT_WORLD} GPUs to see every group, or read a rank's groups from its coordinates (layout::coordinates), which have no such limit"),
            )
        });
    }
    for c in &layout.crossings {
        let (code, what, fix) = match c.kind.as_str() {
            "tp" => (
                Code::TpCrossesNvlink,
                "tensor-parallel",
                format!("keep tensor_model_parallel_size ≤ {domain} (the NVLink domain) and scale across domains with PP or DP"),
            ),
            "ep" if p.model.is_moe() => (
                Code::EpCrossesNvlink,
                "expert-parallel",
                format!("keep EP·ETP ≤ {domain} if the all-to-all is the bottleneck, or accept scale-out all-to-all"),
            ),
            "etp" if p.model.is_moe() => (
                Code::EtpCrossesNvlink,
                "expert-tensor-parallel",
                format!("keep expert_tensor_parallel_size within the NVLink domain of {domain} GPUs: each expert GEMM's all-gather and reduce-scatter then stays on NVLink"),
            ),
            "cp" => (Code::CpCrossesNvlink, "context-parallel", "keep CP inside a domain where possible, or use a2a+p2p".to_string()),
            _ => continue,
        };
        out.add(code, |code| {
            let diag = d(
                code,
                format!(
                    "{} of {} {what} groups span more than one NVLink domain of {domain} GPUs (up to {} domains)",
                    c.groups_crossing, c.total_groups, c.max_domains_spanned
                ),
                fix,
            );
            match code {
                Code::TpCrossesNvlink => match nearest_valid_tp(p, |c| domain % c == 0, false) {
                    Some(g) => diag.with_apply(TP, g),
                    None => diag,
                },
                // ETP groups sit at stride 1 of the expert mesh in Megatron's orders, so an ETP dividing the domain fits.
                Code::EtpCrossesNvlink => match nearest_valid_etp(p, |c| domain % c == 0) {
                    Some(e) => diag.with_apply(ETP, e),
                    None => diag,
                },
                _ => diag,
            }
        });
    }
}

