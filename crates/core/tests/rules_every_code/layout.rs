//! Explicit pipeline layouts: `pipeline_model_parallel_layout` (megatron/core/transformer/pipeline_parallel_layer_layout.py,
//! transformer_config.py), `account_for_*_in_pipeline_split`, and a hybrid pattern's `|` segments
//! (megatron/core/models/hybrid/hybrid_layer_allocation.py, megatron/training/arguments.py, Bridge hybrid_provider.py).
//! The dense model has 16 layers; on 8 GPUs with PP 2 the global batch of 1024 makes 256 microbatches.

use super::*;
use meshplan_core::pipeline::split_from_segments;
use meshplan_core::rules::{self, pipeline_layout};

const LAYOUT: &str = "parallelism.pipeline_model_parallel_layout";
const ACCOUNT_E: &str = "parallelism.account_for_embedding_in_pipeline_split";

/// The dense model on PP `pp` with `layout`, and more edits.
fn laid(pp: u64, layout: Value, edits: &[(&str, Value)]) -> Probe {
    probe(dense(), &[&[(PP, json!(pp)), (LAYOUT, layout)], edits].concat())
}

/// The dense model with one MTP layer.
fn dense_mtp(mtp: u64) -> Value {
    set(&dense(), &[("mtp_num_layers", json!(mtp))])
}

fn laid_mtp(mtp: u64, pp: u64, layout: &str) -> Probe {
    probe(dense_mtp(mtp), &[(PP, json!(pp)), (LAYOUT, json!(layout))])
}

/// A hybrid pattern's split as the report would word its error (None when it splits).
fn segments(segs: &[u64], pp: u64, vpp: Option<u64>, first: Option<u64>) -> Option<Value> {
    let e = split_from_segments(segs, pp, vpp, first, None).err()?;
    Some(serde_json::to_value(rules::split_diagnostic(&e)).expect("a diagnostic serializes"))
}

/// The hybrid pipeline rules for `segs` segments beside the dense plan on PP 2 (with `layout` when given); the first.
fn hybrid(segs: u64, layout: Option<&str>) -> Option<Value> {
    let mut v = plan(dense());
    v["parallelism"]["pipeline_model_parallel_size"] = json!(2);
    if let Some(l) = layout {
        v["parallelism"]["pipeline_model_parallel_layout"] = json!(l);
    }
    let (p, _) = meshplan_core::parse_plan(&v).expect("plannable");
    let mut out = Vec::new();
    pipeline_layout::hybrid(&p, segs, &mut out);
    out.first().map(|d| serde_json::to_value(d).expect("a diagnostic serializes"))
}

pub fn cases() -> Vec<Case> {
    let even = || json!("Et*8|t*8L");
    let t = |n: usize| vec!["decoder"; n];
    let t_loss = |n: usize| [t(n), vec!["loss"]].concat();
    let rows = |first: Vec<&'static str>, last: Vec<&'static str>| json!([first, last]);
    vec![
        // Embedding accounted beside a first-stage size: megatron-core raises; the first-stage size alone splits 8 + 8.
        case("account-for-with-uneven-stages", Kind::Error, pp(2, &[(FIRST, json!(8)), (ACCOUNT_E, json!(true))]), pp(2, &[(FIRST, json!(8))])),
        // A layout beside a first-stage size; the fix unsets the size (the layout alone places 8 + 8).
        case("layout-with-uneven-stages", Kind::Error, laid(2, even(), &[(FIRST, json!(8))]), laid(2, even(), &[])).fix(&[(FIRST, Value::Null)]),
        // t*999999999: 10^9 entries counted before unrolling, against 16 + 0 + 2 + 16,383 = 16,401 for this model.
        case("layout-too-large", Kind::Error, laid(2, json!("Et*999999999|L"), &[]), laid(2, even(), &[])),
        // A stage nested per rank (`[[E, t], [t]]` as one row): its first element is a list, not a name.
        case(
            "layout-list-form",
            Kind::Error,
            laid(2, json!([json!([["embedding", "decoder"], t(7)]), t_loss(8)]), &[]),
            laid(2, rows([vec!["embedding"], t(8)].concat(), [t(8), vec!["loss"]].concat()), &[]),
        ),
        // `T` is not `t` (the letters are case-sensitive).
        case("layout-char", Kind::Error, laid(2, json!("Et*8|T*8L"), &[]), laid(2, even(), &[])),
        // 2 stages on PP 4: the divisor of 2 nearest 4 is 2 (one stage per rank on 8 GPUs, DP 4).
        case("layout-stages-not-divisible-by-pp", Kind::Error, laid(4, even(), &[]), laid(2, even(), &[])).fix(&[(PP, json!(2))]),
        // 4 stages on PP 2 give VPP 2, not the plan's 4; the fix writes 2 (with overlap_p2p_comm on, PP 2 interleaving
        // raises nothing else).
        case(
            "layout-vpp-conflict",
            Kind::Error,
            laid(2, json!("Et*4|(t*4|)*2t*4L"), &[(VPP, json!(4)), (OVERLAP, json!(true))]),
            laid(2, json!("Et*4|(t*4|)*2t*4L"), &[(VPP, json!(2)), (OVERLAP, json!(true))]),
        )
        .fix(&[(VPP, json!(2))]),
        // "" is one empty stage: no first entry (Megatron's IndexError).
        case("layout-empty", Kind::Error, laid(1, json!(""), &[]), laid(1, json!("Et*16L"), &[])),
        case("layout-first-not-embedding", Kind::Error, laid(1, json!("t*16EL"), &[]), laid(1, json!("Et*16L"), &[])),
        case("layout-last-not-loss", Kind::Error, laid(1, json!("Et*16"), &[]), laid(1, json!("Et*16L"), &[])),
        case("layout-embedding-count", Kind::Error, laid(1, json!("EEt*16L"), &[]), laid(1, json!("Et*16L"), &[])),
        case("layout-loss-count", Kind::Error, laid(1, json!("Et*16LL"), &[]), laid(1, json!("Et*16L"), &[])),
        // 15 t for 16 layers.
        case("layout-decoder-count", Kind::Error, laid(2, json!("Et*8|t*7L"), &[]), laid(2, even(), &[])),
        // An m for a model without MTP.
        case("layout-mtp-count", Kind::Error, laid(2, json!("Et*8|t*8mL"), &[]), laid(2, even(), &[])),
        // E t×8 m t×8 L in order: a decoder follows the MTP layer.
        case("layout-mtp-before-decoder", Kind::Error, laid_mtp(1, 2, "Et*8m|t*8L"), laid_mtp(1, 2, "Et*8|t*8mL")),
        // Stages Et8 | t8 m | L | (empty) on PP 2: m on pp 1, chunk 0 of 2. Moved to stage 2 (pp 0's last chunk) it is
        // valid: a standalone MTP stage.
        case("layout-mtp-not-last-chunk", Kind::Error, laid_mtp(1, 2, "Et*8|t*8m|L|"), laid_mtp(1, 2, "Et*8|t*8|m|L")),
        // PP 4, one chunk each: pp 2 holds one m, pp 3 the other. Both on pp 3 is valid.
        case("layout-mtp-split", Kind::Error, laid_mtp(2, 4, "Et*8|t*8|m|mL"), laid_mtp(2, 4, "Et*8|t*8||mmL")),
        case(
            "layout-encoder",
            Kind::Error,
            laid(2, rows([vec!["embedding"], t(8)].concat(), [vec!["encoder"], t(8), vec!["loss"]].concat()), &[]),
            laid(2, rows([vec!["embedding"], t(8)].concat(), [t(8), vec!["loss"]].concat()), &[]),
        ),
        // Stages (empty) | E t8 | t8 | L on PP 2 × VPP 2: E is in stage 1, yet the embedding is built on pp 0, chunk 0.
        case(
            "layout-marker-on-empty-stage",
            Kind::Warning,
            laid(2, json!("|Et*8|t*8|L"), &[(OVERLAP, json!(true))]),
            laid(2, json!("Et*8|t*8||L"), &[(OVERLAP, json!(true))]),
        ),
        // Hybrid segments of 4 layers: 3 over PP 2 do not divide (the fix: the divisor of 3 nearest 2 that pipelines,
        // 3 — PP 1 would make VPP 3 without a pipeline); 4 do (VPP 2).
        case("hybrid-segments-not-divisible-by-pp", Kind::Error, Probe::Call(|| segments(&[4, 4, 4], 2, None, None)), Probe::Call(|| segments(&[4, 4, 4, 4], 2, None, None)))
            .fix(&[(PP, json!(3))]),
        case(
            "hybrid-pipes-with-first-last-stage",
            Kind::Error,
            Probe::Call(|| segments(&[8, 8], 2, None, Some(8))),
            Probe::Call(|| segments(&[8, 8], 2, None, None)),
        )
        .fix(&[(FIRST, Value::Null), (LAST, Value::Null)]),
        case("hybrid-vpp-needs-pipes", Kind::Error, Probe::Call(|| segments(&[16], 2, Some(2), None)), Probe::Call(|| segments(&[16], 2, None, None)))
            .fix(&[(VPP, Value::Null)]),
        // 4 segments on PP 2 are VPP 2, not 4.
        case("hybrid-vpp-conflict", Kind::Error, Probe::Call(|| segments(&[4, 4, 4, 4], 2, Some(4), None)), Probe::Call(|| segments(&[4, 4, 4, 4], 2, Some(2), None)))
            .fix(&[(VPP, json!(2))]),
        // No `|`: 15 layers over PP 2 (Megatron's legacy even split); 16 divide.
        case("hybrid-legacy-split-uneven", Kind::Error, Probe::Call(|| segments(&[15], 2, None, None)), Probe::Call(|| segments(&[16], 2, None, None))),
        // 4 segments on PP 2 are VPP 2, which Bridge rejects for hybrid models; 2 segments are one per rank.
        case("hybrid-vpp-unsupported-in-bridge", Kind::Warning, Probe::Call(|| hybrid(4, None)), Probe::Call(|| hybrid(2, None))),
        case(
            "hybrid-pattern-with-layout",
            Kind::Error,
            Probe::Call(|| hybrid(2, Some("Et*8|t*8L"))),
            Probe::Call(|| hybrid(2, None)),
        )
        .fix(&[(LAYOUT, Value::Null)]),
    ]
}

fn pp(stages: u64, edits: &[(&str, Value)]) -> Probe {
    probe(dense(), &[&[(PP, json!(stages))], edits].concat())
}

#[test]
fn codes() {
    run(cases());
}
