//! The source guide's advice tables, now data (`data/advice.json`): the file parses, it holds the guide's rows
//! (counted and read off `../shared/seed/parallelism-strategies.md` by hand), and the infos quote the row a plan
//! falls in.

mod common;

use common::{P, small_dense};
use meshplan_core::rules::advice::tables;
use meshplan_core::{Report, presets};
use serde_json::json;

fn info<'a>(r: &'a Report, code: &str) -> Option<&'a str> {
    r.diagnostics.iter().find(|d| d.code == code).map(|d| d.message.as_str())
}

#[test]
fn the_tables_hold_the_guides_rows() {
    let t = tables();
    // "Decision by Model Size": five dense rows (<1B, 1–10B, 10–70B, 70–175B, 175–500B), nine MoE rows.
    let bounds: Vec<Option<f64>> = t.dense_model_size.rows.iter().map(|r| r.below_billion_parameters).collect();
    assert_eq!(bounds, [Some(1.0), Some(10.0), Some(70.0), Some(175.0), None]);
    assert_eq!(t.moe_models.rows.len(), 9);
    assert!(t.moe_models.rows["deepseek-v3"].starts_with("DeepSeek-V3 671B/37B: TP 2, PP 16, EP 64"));
    // "Decision by Sequence Length": 2K–8K SP, 8K–32K CP = 2, 32K+ CP 4–8 (below 2K adds nothing).
    let seq: Vec<(u64, Option<u64>, bool, u64)> =
        t.sequence_length.rows.iter().map(|r| (r.from_tokens, r.below_tokens, r.sequence_parallel, r.context_parallel_size_at_least)).collect();
    assert_eq!(seq, [(2048, Some(8192), true, 0), (8192, Some(32768), false, 2), (32768, None, false, 4)]);
    for source in [&t.dense_model_size.source, &t.moe_models.source, &t.sequence_length.source] {
        assert!(source.starts_with("seed: Decision by"), "{source}");
    }
}

#[test]
fn every_moe_row_names_an_moe_preset() {
    for key in tables().moe_models.rows.keys() {
        let preset = presets::model(key).unwrap_or_else(|| panic!("no preset {key}"));
        assert!(preset.model_config().is_moe(), "{key} is not MoE");
    }
}

#[test]
fn the_infos_quote_the_row_the_plan_falls_in() {
    // Llama 3.1 8B has 8.03B parameters: the 1–10B dense row.
    let r = meshplan_core::plan_value(&json!({"model": "llama-3.1-8b", "cluster": {"gpu": "h100-sxm-80gb", "num_nodes": 1},
        "training": {"seq_length": 1024, "global_batch_size": 64}})).unwrap();
    assert!(info(&r, "model-size-advice").unwrap().ends_with("1–10B dense: TP = 2–4 + DP (8–16 GPUs)"), "{r:?}");
    // 1,024 tokens is below 2K: the sequence table adds nothing.
    assert_eq!(info(&r, "seq-length-advice"), None);

    // An MoE preset gets its own row; an MoE model the table lacks gets the general line.
    let r = meshplan_core::plan_value(&json!({"model": "qwen3-30b-a3b", "cluster": {"gpu": "h100-sxm-80gb", "num_nodes": 1},
        "training": {"seq_length": 4096, "global_batch_size": 64}})).unwrap();
    assert!(info(&r, "model-size-advice").unwrap().ends_with("Qwen3 30B-A3B: TP 4, PP 2, EP 4"));
    let r = meshplan_core::plan_value(&json!({"model": "mixtral-8x7b", "cluster": {"gpu": "h100-sxm-80gb", "num_nodes": 1},
        "training": {"seq_length": 4096, "global_batch_size": 64}})).unwrap();
    assert!(info(&r, "model-size-advice").unwrap().ends_with("MoE: size TP by active parameters (often 1–2), scale with EP, use PP for depth"));
}

#[test]
fn the_sequence_row_is_quiet_once_the_plan_follows_it() {
    let mut p = P::new(small_dense(), 8);
    // 4,096 tokens, TP 2 without SP: the 2K–8K row suggests SP; with SP it is quiet.
    p.tp = 2;
    p.sp = Some(false);
    assert!(info(&p.run(), "seq-length-advice").unwrap().contains("2K–8K"));
    p.sp = Some(true);
    assert_eq!(info(&p.run(), "seq-length-advice"), None);
    // At TP 1 there is no SP to add.
    p.tp = 1;
    p.sp = Some(false);
    assert_eq!(info(&p.run(), "seq-length-advice"), None);
    // 16,384 tokens: CP 2 from 8K; 65,536 tokens: CP 4–8 from 32K, so CP 2 is not enough there.
    p.seq = 16384;
    assert!(info(&p.run(), "seq-length-advice").unwrap().contains("8K–32K"));
    p.cp = 2;
    assert_eq!(info(&p.run(), "seq-length-advice"), None);
    p.seq = 65536;
    assert!(info(&p.run(), "seq-length-advice").unwrap().contains("≥ 32K"));
    p.cp = 4;
    assert_eq!(info(&p.run(), "seq-length-advice"), None);
}
