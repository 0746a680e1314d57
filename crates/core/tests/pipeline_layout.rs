//! `pipeline_model_parallel_layout` read as Megatron-Core's `PipelineParallelLayerLayout` reads it: the research's
//! 42-row table (notes R2a §2.8), Megatron's documented and unit-tested layouts, Megatron Bridge's recipe layouts, and
//! `account_for_*_in_pipeline_split`. Every expected split is worked by hand from the layout (stage i goes to pipeline
//! rank i mod PP, virtual chunk i div PP; a chunk's first layer is the count of `t` in all earlier stages), in the
//! comments or in the tables of the research notes, which restate Megatron's own tables.

use meshplan_core::pipeline::layout::{self, LayoutError, LayoutSpec, LayoutSplit};
use meshplan_core::pipeline::{self, ChunkRef, split_layers, split_layers_accounting};
use meshplan_core::rules::pipeline_layout::layout_code;
use proptest::prelude::*;
use serde_json::{Value, json};

fn text(s: &str) -> LayoutSpec {
    LayoutSpec::Text(s.to_string())
}

fn list(v: Value) -> LayoutSpec {
    match v {
        Value::Array(rows) => LayoutSpec::List(rows),
        other => panic!("a list: {other}"),
    }
}

fn ok(spec: &LayoutSpec, pp: u64, vpp: Option<u64>, layers: u64, mtp: u64) -> LayoutSplit {
    layout::split(spec, pp, vpp, layers, mtp).unwrap_or_else(|e| panic!("{spec:?} on PP {pp}: {e:?}"))
}

fn code(spec: &LayoutSpec, pp: u64, vpp: Option<u64>, layers: u64, mtp: u64) -> String {
    match layout::split(spec, pp, vpp, layers, mtp) {
        Ok(s) => panic!("{spec:?} on PP {pp} is accepted: {:?}", s.split.stages),
        Err(e) => layout_code(&e).as_str().to_string(),
    }
}

/// Each pipeline rank's chunks as (first layer, layer count), in chunk order.
fn chunks(l: &LayoutSplit) -> Vec<Vec<(u64, u64)>> {
    l.split.stages.iter().map(|s| s.iter().map(|c| (c.start, c.count)).collect()).collect()
}

/// Ranges written as in the research tables: `r(a, b)` is layers a..=b, `e()` an empty chunk.
fn r(a: u64, b: u64) -> (u64, u64) {
    (a, b - a + 1)
}

fn at(pp: u64, vpp: u64) -> ChunkRef {
    ChunkRef { pipeline_rank: pp, virtual_rank: vpp }
}

// ---------------------------------------------------------------------------------------------------------------
// The 42-row table, valid rows: exact layer ids per (pp, vpp)
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn row_1_megatron_doc_deepseek_v3_on_pp16() {
    // Doc table: pp 0 = E t0–2 | t33–34; pp k (1..13) = t(2k+1)–(2k+2) | t(2k+33)–(2k+34); pp 14 = t29–30 | m;
    // pp 15 = t31–32 | L. VPP 2; the MTP chunk is pp 14's last, not the last rank's: standalone.
    let l = ok(&text("Et*3|(tt|)*29,m|L"), 16, None, 61, 1);
    assert_eq!(l.vpp, 2);
    let c = chunks(&l);
    assert_eq!(c[0], [r(0, 2), r(33, 34)]);
    for k in 1..=13 {
        assert_eq!(c[k as usize], [r(2 * k + 1, 2 * k + 2), r(2 * k + 33, 2 * k + 34)], "pp {k}");
    }
    assert_eq!(c[14], [r(29, 30), (61, 0)]);
    assert_eq!(c[15], [r(31, 32), (61, 0)]);
    assert_eq!(l.split.placement.mtp, Some(at(14, 1)));
    assert_eq!((l.split.placement.embedding, l.split.placement.loss), (at(0, 0), at(15, 1)));
    assert!(l.mtp_standalone);
}

/// DeepSeek-V3 `Et*4|(t*4|)*14tmL` (Bridge's GB300 perf recipes): 16 stages of 4 layers, the last holding t60 m L.
fn deepseek_v3_16_stages() -> LayoutSpec {
    text("Et*4|(t*4|)*14tmL")
}

#[test]
fn row_2_deepseek_v3_on_pp2_vpp8() {
    // Research §2.7: pp 0 = t0–3, t8–11, …, t56–59 (8 chunks, 32 layers); pp 1 = t4–7, …, t52–55, t60 m L (29).
    let l = ok(&deepseek_v3_16_stages(), 2, Some(8), 61, 1);
    let c = chunks(&l);
    assert_eq!(c[0], (0..8).map(|v| r(8 * v, 8 * v + 3)).collect::<Vec<_>>());
    let mut pp1: Vec<_> = (0..7).map(|v| r(8 * v + 4, 8 * v + 7)).collect();
    pp1.push(r(60, 60));
    assert_eq!(c[1], pp1);
    assert_eq!(l.split.layers_per_stage(), [32, 29]);
    assert_eq!(l.split.placement.mtp, Some(at(1, 7)));
    assert!(!l.mtp_standalone);
}

#[test]
fn row_3_deepseek_v3_on_pp4_vpp4() {
    // Research §2.7: pp 0 = t0–3 | t16–19 | t32–35 | t48–51; pp 3 = t12–15 | t28–31 | t44–47 | t60 m L.
    let l = ok(&deepseek_v3_16_stages(), 4, Some(4), 61, 1);
    let c = chunks(&l);
    for p in 0..3u64 {
        assert_eq!(c[p as usize], (0..4).map(|v| r(16 * v + 4 * p, 16 * v + 4 * p + 3)).collect::<Vec<_>>(), "pp {p}");
    }
    assert_eq!(c[3], [r(12, 15), r(28, 31), r(44, 47), r(60, 60)]);
    assert_eq!(l.split.layers_per_stage(), [16, 16, 16, 13]);
}

#[test]
fn row_5_deepseek_v3_h100_on_pp8_vpp4() {
    // Research §2.7: pp 0 = t0 | t15–16 | t31–32 | t47–48; pp k (1..6) = t(2k−1)–2k | t(2k+15)–(2k+16) |
    // t(2k+31)–(2k+32) | t(2k+47)–(2k+48); pp 7 = t13–14 | t29–30 | t45–46 | m L. Decoders 7, 8×6, 6.
    let l = ok(&text("Et|(tt|)*30mL"), 8, Some(4), 61, 1);
    let c = chunks(&l);
    assert_eq!(c[0], [r(0, 0), r(15, 16), r(31, 32), r(47, 48)]);
    for k in 1..=6u64 {
        assert_eq!(c[k as usize], [r(2 * k - 1, 2 * k), r(2 * k + 15, 2 * k + 16), r(2 * k + 31, 2 * k + 32), r(2 * k + 47, 2 * k + 48)]);
    }
    assert_eq!(c[7], [r(13, 14), r(29, 30), r(45, 46), (61, 0)]);
    assert_eq!(l.split.layers_per_stage(), [7, 8, 8, 8, 8, 8, 8, 6]);
    assert_eq!(l.split.placement.mtp, Some(at(7, 3)));
}

#[test]
fn row_6_kimi_k2_h100_on_pp16_vpp2() {
    // Research §2.7: pp 0 = E t0 | t31–32; pp k = t(2k−1)–2k | t(2k+31)–(2k+32); pp 15 = t29–30 | L. Decoders 3, 4×14, 2.
    let l = ok(&text("Et|(tt|)*30L"), 16, Some(2), 61, 0);
    let c = chunks(&l);
    assert_eq!(c[0], [r(0, 0), r(31, 32)]);
    for k in 1..=14u64 {
        assert_eq!(c[k as usize], [r(2 * k - 1, 2 * k), r(2 * k + 31, 2 * k + 32)]);
    }
    assert_eq!(c[15], [r(29, 30), (61, 0)]);
    let mut per = vec![3];
    per.extend([4; 14]);
    per.push(2);
    assert_eq!(l.split.layers_per_stage(), per);
}

#[test]
fn row_8_llama3_70b_on_pp8_vpp5() {
    // Research §2.7: stage i = 8·vpp + pp holds t(2i)–(2i+1) up to stage 34; stage 35 (pp 3, vpp 4) t70–72; stages
    // 36–38 t73–74, t75–76, t77–78; stage 39 (pp 7, vpp 4) t79 L. Decoders 10, 10, 10, 11, 10, 10, 10, 9.
    let l = ok(&text("Et*2|(t*2|)*34,t*3|(t*2|)*3,tL"), 8, Some(5), 80, 0);
    let c = chunks(&l);
    for p in 0..8u64 {
        for v in 0..4u64 {
            let i = 8 * v + p;
            assert_eq!(c[p as usize][v as usize], r(2 * i, 2 * i + 1), "pp {p} vpp {v}");
        }
    }
    let last: Vec<_> = (0..8).map(|p| c[p][4]).collect();
    assert_eq!(last, [r(64, 65), r(66, 67), r(68, 69), r(70, 72), r(73, 74), r(75, 76), r(77, 78), r(79, 79)]);
    assert_eq!(l.split.layers_per_stage(), [10, 10, 10, 11, 10, 10, 10, 9]);
}

#[test]
fn row_9_qwen3_next_on_pp2_vpp4() {
    // Research §2.7: pp 0 = E t0–3 | t11–17 | t25–31 | t39–46; pp 1 = t4–10 | t18–24 | t32–38 | t47 m L.
    let l = ok(&text("Et*4|(t*7|)*5t*8|tmL"), 2, Some(4), 48, 1);
    let c = chunks(&l);
    assert_eq!(c[0], [r(0, 3), r(11, 17), r(25, 31), r(39, 46)]);
    assert_eq!(c[1], [r(4, 10), r(18, 24), r(32, 38), r(47, 47)]);
}

#[test]
fn rows_10_to_13_small_layouts() {
    // 10: PP 2, one chunk each: t0–6 | t7–13 m L; VPP 1.
    let l = ok(&text("Et*7|t*7mL"), 2, None, 14, 1);
    assert_eq!((l.vpp, chunks(&l)), (1, vec![vec![r(0, 6)], vec![r(7, 13)]]));
    // 11 (the doc's example of an empty stage): stages E, (empty), t, L; PP 2 → VPP 2: pp 0 = [E] [t0], pp 1 = [] [L].
    let l = ok(&text("E||t|L"), 2, None, 1, 0);
    assert_eq!((l.vpp, chunks(&l)), (2, vec![vec![(0, 0), r(0, 0)], vec![(0, 0), (1, 0)]]));
    // 12: the same on PP 4 → VPP 1: pp 2 holds t0.
    let l = ok(&text("E||t|L"), 4, None, 1, 0);
    assert_eq!(l.split.layers_per_stage(), [0, 0, 1, 0]);
    // 13 (Megatron test_forward_vpp): stages E | t0–2 | t3 | t4 | t5 | t6 | t7 m | L on PP 4 × VPP 2:
    // pp 0 = [] [t5], pp 1 = [t0–2] [t6], pp 2 = [t3] [t7 m], pp 3 = [t4] [L]; MTP on pp 2: standalone.
    let l = ok(&text("E|t*3|(t|)*4tm|L"), 4, None, 8, 1);
    assert_eq!(chunks(&l), [vec![(0, 0), r(5, 5)], vec![r(0, 2), r(6, 6)], vec![r(3, 3), r(7, 7)], vec![r(4, 4), (8, 0)]]);
    assert_eq!(l.split.placement.mtp, Some(at(2, 1)));
    assert!(l.mtp_standalone);
}

#[test]
fn rows_31_to_37_edge_forms() {
    // 31: `t*0` is empty: stages E | tL → pp 0 builds nothing, pp 1 t0.
    assert_eq!(ok(&text("Et*0|tL"), 2, None, 1, 0).split.layers_per_stage(), [0, 1]);
    // 33: `|*2` unrolls to `||`: stages E, (empty), tL on PP 3.
    assert_eq!(ok(&text("E|*2tL"), 3, None, 1, 0).split.layers_per_stage(), [0, 0, 1]);
    // 34: validation accepts a leading empty stage; E sits in stage 1, not on pp 0 where the embedding is built.
    let l = ok(&text("|Et|tL"), 3, None, 2, 0);
    assert_eq!((l.split.layers_per_stage(), l.embedding_stage, l.split.placement.embedding), (vec![0, 1, 1], 1, at(0, 0)));
    // 35: multi-digit counts.
    assert_eq!(chunks(&ok(&text("Et*10|t*10L"), 2, None, 20, 0)), [vec![r(0, 9)], vec![r(10, 19)]]);
    // 36: the list form.
    assert_eq!(chunks(&ok(&list(json!([["embedding", "decoder"], ["decoder", "loss"]])), 2, None, 2, 0)), [vec![r(0, 0)], vec![r(1, 1)]]);
    // 37: the list form strips and lowercases each name (`str.strip().lower()`).
    let l = ok(&list(json!([[" Embedding ", "DECODER"], ["decoder ", " LOSS"]])), 2, None, 2, 0);
    assert_eq!(l.split.layers_per_stage(), [1, 1]);
}

// ---------------------------------------------------------------------------------------------------------------
// The 42-row table, invalid rows: the code (Megatron's assertion, in Megatron's order)
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn invalid_rows_give_megatrons_error() {
    let t = text;
    let rows: &[(u32, LayoutSpec, u64, Option<u64>, u64, u64, &str)] = &[
        (4, t("Et*4|(tttt|)*14tmL"), 4, Some(2), 61, 1, "layout-vpp-conflict"),
        (7, t("Et|(tt|)*30L"), 16, None, 61, 1, "layout-mtp-count"),
        (14, t("Et*3|(tt|)*29,m|L"), 16, None, 61, 0, "layout-mtp-count"),
        (15, t("Et*3|(tt|)*29,m|L"), 16, None, 60, 1, "layout-decoder-count"),
        (16, t("Et*3|(tt|)*29,m|L"), 6, None, 61, 1, "layout-stages-not-divisible-by-pp"),
        (17, t("tE|tL"), 2, None, 2, 0, "layout-first-not-embedding"),
        (18, t("Et|t"), 2, None, 2, 0, "layout-last-not-loss"),
        (19, t("EEt|tL"), 2, None, 2, 0, "layout-embedding-count"),
        (20, t("Et|tLL"), 2, None, 2, 0, "layout-loss-count"),
        (21, t("Et|mtL"), 2, None, 2, 1, "layout-mtp-before-decoder"),
        (22, t("Etm|t|t|L"), 2, None, 3, 1, "layout-mtp-before-decoder"),
        (23, t("Et|tm|L|"), 2, None, 2, 1, "layout-mtp-not-last-chunk"),
        (24, t("Et|t|m|mL"), 4, None, 2, 2, "layout-mtp-split"),
        (25, t("Et|tx|L"), 3, None, 2, 0, "layout-char"),
        (26, t("Et |tL"), 2, None, 2, 0, "layout-char"),
        (27, t("ET|tL"), 2, None, 2, 0, "layout-char"),
        (28, t("Et*|tL"), 2, None, 2, 0, "layout-char"),
        (29, t("E(t|)tL"), 2, None, 2, 0, "layout-char"),
        (30, t("E((t|)*2)*2tL"), 2, None, 2, 0, "layout-char"),
        (32, t("E|*2tL"), 2, None, 1, 0, "layout-stages-not-divisible-by-pp"),
        (38, list(json!([["embedding"], ["encoder", "decoder", "loss"]])), 2, None, 1, 0, "layout-encoder"),
        (39, list(json!([[["embedding", "decoder"], ["decoder"]], ["decoder", "loss"]])), 2, None, 3, 0, "layout-list-form"),
        (42, t(""), 1, None, 0, 0, "layout-empty"),
    ];
    for (row, spec, pp, vpp, layers, mtp, want) in rows {
        assert_eq!(code(spec, *pp, *vpp, *layers, *mtp), *want, "row {row}");
    }
}

#[test]
fn invalid_rows_carry_megatrons_numbers() {
    let err = |s: &str, pp, vpp, layers, mtp| layout::split(&text(s), pp, vpp, layers, mtp).unwrap_err();
    // Row 4: 16 stages / PP 4 = 4 against the recipe's VPP 2.
    assert_eq!(err("Et*4|(tttt|)*14tmL", 4, Some(2), 61, 1), LayoutError::VppConflict { explicit: 2, detected: 4 });
    // Row 15: 3 + 29·2 = 61 decoders against num_layers 60.
    assert_eq!(err("Et*3|(tt|)*29,m|L", 16, None, 60, 1), LayoutError::DecoderCount { found: 61, num_layers: 60 });
    // Row 16: 32 stages over PP 6.
    assert_eq!(err("Et*3|(tt|)*29,m|L", 6, None, 61, 1), LayoutError::StagesNotDivisible { stages: 32, pp: 6 });
    // Row 23: `m` on pp 1, chunk 0 of 2.
    assert_eq!(err("Et|tm|L|", 2, None, 2, 1), LayoutError::MtpNotLastChunk { pp_rank: 1, vpp_rank: 0 });
    // Row 24: pp 2's last chunk holds 1 of the 2 MTP layers.
    assert_eq!(err("Et|t|m|mL", 4, None, 2, 2), LayoutError::MtpSplit { pp_rank: 2, found: 1, mtp_num_layers: 2 });
    // Row 25: Megatron's message names the character, the stage and the unrolled string.
    assert_eq!(err("Et|tx|L", 3, None, 2, 0), LayoutError::Char { ch: 'x', stage: "tx".into(), unrolled: "Et|tx|L".into() });
    // Row 30: `((t|)*2)*2` unrolls its first group to `(t|(t|`, then `)*2` to `))`: the `(` of stage `E(t` is first.
    assert_eq!(err("E((t|)*2)*2tL", 2, None, 2, 0), LayoutError::Char { ch: '(', stage: "E(t".into(), unrolled: "E(t|(t|))tL".into() });
    // Commas go before unrolling: `t*2,3` is `t*23`.
    assert_eq!(err("Et*2,3|L", 2, None, 2, 0), LayoutError::DecoderCount { found: 23, num_layers: 2 });
}

#[test]
fn rows_40_and_41_are_plan_rules() {
    use meshplan_core::plan_value;
    use meshplan_core::rules::{self, Codes};
    // 40: a layout with num_layers_in_first_pipeline_stage (megatron-core raises before reading the layout).
    let v = json!({"model": "llama-3.1-8b", "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 1},
                   "training": {"global_batch_size": 64},
                   "parallelism": {"pipeline_model_parallel_size": 2, "pipeline_model_parallel_layout": "Et*16|t*16L",
                                   "num_layers_in_first_pipeline_stage": 16}});
    let r = plan_value(&v).unwrap();
    assert!(r.diagnostics.iter().any(|d| d.code == "layout-with-uneven-stages"), "{:?}", r.diagnostics);
    // 41: a layout beside a hybrid pattern's segments.
    let (p, _) = meshplan_core::parse_plan(&v).unwrap();
    let mut codes = Codes::default();
    rules::pipeline_layout::hybrid(&p, 2, &mut codes);
    assert_eq!(codes.0, [meshplan_core::Code::HybridPatternWithLayout]);
}

// ---------------------------------------------------------------------------------------------------------------
// Megatron's unit tests and functional tests
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn megatron_parse_equivalences() {
    // tests/unit_tests/transformer/test_transformer_block.py test_parsing_layout_from_str: each string parses to the list.
    let t = |n: usize| vec!["decoder"; n];
    let with = |head: &[&'static str], n: usize, tail: &[&'static str]| -> Vec<&'static str> {
        head.iter().copied().chain(t(n)).chain(tail.iter().copied()).collect()
    };
    let mut deepseek8 = vec![with(&["embedding"], 3, &[])];
    deepseek8.extend(vec![t(2); 29]);
    deepseek8.extend([vec!["mtp"], vec!["loss"]]);
    let mut deepseek16 = vec![with(&["embedding"], 2, &[])];
    deepseek16.extend(vec![t(2); 29]);
    deepseek16.extend([t(1), vec!["mtp", "loss"]]);
    let cases: Vec<(u64, &str, Vec<Vec<&str>>, u64, u64, u64)> = vec![
        (2, "Et|t*4|t|tL", vec![with(&["embedding"], 1, &[]), t(4), t(1), with(&[], 1, &["loss"])], 7, 0, 2),
        (2, "E|t*6|t|L", vec![vec!["embedding"], t(6), t(1), vec!["loss"]], 7, 0, 2),
        (4, "E|t|t*2|t||(t|)*2,t*2,L", vec![vec!["embedding"], t(1), t(2), t(1), vec![], t(1), t(1), with(&[], 2, &["loss"])], 8, 0, 2),
        (8, "Et*3|(tt|)*29,m|L", deepseek8, 61, 1, 4),
        (16, "Et*2|(tt|)*29,t|mL", deepseek16, 61, 1, 2),
    ];
    for (pp, s, rows, layers, mtp, vpp) in cases {
        let from_text = ok(&text(s), pp, None, layers, mtp);
        let from_list = ok(&list(json!(rows)), pp, None, layers, mtp);
        assert_eq!(from_text, from_list, "{s}");
        assert_eq!(from_text.vpp, vpp, "{s}");
    }
    // test_layout_layer_number: the third layout's 1-based layer numbers are pp 0 [[], []], pp 1 [[1], [5]],
    // pp 2 [[2, 3], [6]], pp 3 [[4], [7, 8]].
    let l = ok(&text("E|t|t*2|t||(t|)*2,t*2,L"), 4, None, 8, 0);
    let numbers: Vec<Vec<Vec<u64>>> = l.split.stages.iter().map(|s| s.iter().map(|c| (c.start + 1..=c.start + c.count).collect()).collect()).collect();
    assert_eq!(numbers, vec![vec![vec![], vec![]], vec![vec![1], vec![5]], vec![vec![2, 3], vec![6]], vec![vec![4], vec![7, 8]]]);
}

#[test]
fn megatron_layer_builder_cases() {
    // test_transformer_block.py test_layer_builder, num_layers = 7.
    let t = |n: usize| vec!["decoder"; n];
    let l = |v: Value| list(v);
    let t_loss = [t(1), vec!["loss"]].concat();
    let e_t6 = [vec!["embedding"], t(6)].concat();
    assert_eq!(code(&l(json!([t(6), t_loss])), 2, Some(1), 7, 0), "layout-first-not-embedding");
    assert_eq!(code(&l(json!([e_t6, t(1)])), 2, Some(1), 7, 0), "layout-last-not-loss");
    let invalid: Vec<&str> = vec!["invalid_type"; 7].into_iter().chain(["loss"]).collect();
    assert_eq!(code(&l(json!([["embedding"], invalid])), 2, Some(1), 7, 0), "layout-char");
    assert_eq!(code(&l(json!([["embedding"], t(7), ["loss"]])), 2, Some(2), 7, 0), "layout-stages-not-divisible-by-pp");
    assert_eq!(code(&l(json!([[["embedding", "decoder"], t(4)], t(1), t_loss])), 2, Some(2), 7, 0), "layout-stages-not-divisible-by-pp");
    for ok_rows in [
        json!([["embedding", "decoder"], t(4), t(1), ["decoder", "loss"]]),
        json!([["embedding"], t(7), [], ["loss"]]),
        json!([["embedding"], t(6), t(1), ["loss"]]),
    ] {
        ok(&l(ok_rows), 2, Some(2), 7, 0);
    }
}

#[test]
fn megatron_functional_test_layouts() {
    // tests/functional_tests/test_cases/{mixtral,moe}/*/model_config.yaml: (layout, PP, layers, MTP) → stages / VPP.
    for (s, pp, layers, mtp, vpp) in [
        ("Et*7|t*7mL", 2, 14, 1, 1),
        ("Et*2|(tt|)*5t|tmL", 4, 14, 1, 2),
        ("Et*3|(tt|)*6tmL", 2, 16, 1, 4),
        ("Et*3|(tt|)*6mL", 2, 15, 1, 4),
        ("Et*3|(tt|)*6L", 2, 15, 0, 4),
        ("Et|(tt|)*6mL", 2, 13, 1, 4),
        // test_pipeline_layout.py test_forward_vpp (8 layers, 1 MTP, PP 4 × VPP 2).
        ("E|t*3|(t|)*5mL", 4, 8, 1, 2),
        ("E|t*3|(t|)*4tm|L", 4, 8, 1, 2),
        ("E|t*3|(t|)*3tt|m|L", 4, 8, 1, 2),
    ] {
        assert_eq!(ok(&text(s), pp, None, layers, mtp).vpp, vpp, "{s}");
    }
    // The last one puts `m` alone on pp 2, chunk 1.
    assert_eq!(ok(&text("E|t*3|(t|)*3tt|m|L"), 4, None, 8, 1).split.placement.mtp, Some(at(2, 1)));
}

// ---------------------------------------------------------------------------------------------------------------
// Megatron Bridge recipe layouts
// ---------------------------------------------------------------------------------------------------------------

#[test]
fn bridge_deepseek_v3_and_kimi_k2_list_maps() {
    // recipes/deepseek/h100/deepseek_v3.py _get_deepseek_v3_pipeline_layout (last = [m]*mtp + [L]):
    // (4,1) = [E+t16, t16, t16, t13+last]; (8,1) and (4,2) = [E+t8] + [t8]*6 + [t5+last]; (16,1), (8,2), (4,4), and
    // Kimi-K2's (2,8) = [E+t4] + [t4]*14 + [t+last].
    assert_eq!(ok(&text("Et*16|t*16|t*16|t*13mL"), 4, None, 61, 1).split.layers_per_stage(), [16, 16, 16, 13]);
    assert_eq!(ok(&text("Et*8|(t*8|)*6t*5mL"), 8, None, 61, 1).split.layers_per_stage(), [8, 8, 8, 8, 8, 8, 8, 5]);
    assert_eq!(ok(&text("Et*8|(t*8|)*6t*5mL"), 4, None, 61, 1).split.layers_per_stage(), [16, 16, 16, 13]);
    assert_eq!(ok(&deepseek_v3_16_stages(), 16, None, 61, 1).split.layers_per_stage(), [[4; 15].as_slice(), &[1]].concat());
    // Kimi-K2 (61 layers, no MTP) on PP 2 × VPP 8: as DeepSeek-V3's row 2 without the m.
    assert_eq!(ok(&text("Et*4|(t*4|)*14tL"), 2, None, 61, 0).split.layers_per_stage(), [32, 29]);
}

/// A Bridge list-form stage: `n` decoders (`t`), with the embedding first (`e`), or with the loss last (`last`).
fn t(n: usize) -> Vec<&'static str> {
    vec!["decoder"; n]
}

fn e(n: usize) -> Vec<&'static str> {
    [vec!["embedding"], t(n)].concat()
}

fn last(n: usize) -> Vec<&'static str> {
    [t(n), vec!["loss"]].concat()
}

#[test]
fn bridge_moonlight_and_olmoe_list_maps() {
    // recipes/moonlight/h100/moonlight_16b.py _get_moonlight_pipeline_layout (27 layers): (2,1) = [E+t14, t13+L];
    // (4,1) and (2,2) = [E+t7, t7, t7, t6+L]; (8,1) and (4,2) = [E+t4] + [t4]*6 + [t3+L] (checked against Bridge @ 067f987df).
    // recipes/olmoe/h100/olmoe_7b.py _get_olmoe_pipeline_layout (16 layers): (2,1) = [E+t8, t8+L]; (4,1) and (2,2) =
    // [E+t4, t4, t4, t4+L]. (layers, PP 2's two stages, the four stages, PP 2 × VPP 2's chunks.)
    for (layers, [a, b], [c, d, f, g], two_by_two) in [
        (27u64, [14, 13], [7, 7, 7, 6], [vec![r(0, 6), r(14, 20)], vec![r(7, 13), r(21, 26)]]),
        (16, [8, 8], [4, 4, 4, 4], [vec![r(0, 3), r(8, 11)], vec![r(4, 7), r(12, 15)]]),
    ] {
        assert_eq!(ok(&list(json!([e(a), last(b)])), 2, None, layers, 0).split.layers_per_stage(), [a, b].map(|n| n as u64));
        let four = list(json!([e(c), t(d), t(f), last(g)]));
        assert_eq!(ok(&four, 4, None, layers, 0).split.layers_per_stage(), [c, d, f, g].map(|n| n as u64));
        assert_eq!(chunks(&ok(&four, 2, None, layers, 0)), two_by_two);
    }
    // The (8,1) / (4,2) entry holds 4 + 6·4 + 3 = 31 decoders, not Moonlight's 27: Megatron would reject it (the
    // recipes only call the map with (1,1) and (2,1)).
    let eight = list(json!([e(4), t(4), t(4), t(4), t(4), t(4), t(4), last(3)]));
    assert_eq!(layout::split(&eight, 8, None, 27, 0).unwrap_err(), LayoutError::DecoderCount { found: 31, num_layers: 27 });
    assert_eq!(ok(&eight, 4, None, 31, 0).split.layers_per_stage(), [8, 8, 8, 3 + 4]);
}

#[test]
fn bridge_glm52_vpp2_layout_keeps_its_empty_chunks() {
    // recipes/glm/h100/glm5.py _GLM52_VPP2_LAYOUT on PP 13 × VPP 2 (78 layers, 1 MTP). Research §2.7: decoders per rank
    // 5, 5, 4, 8, 4, 8, 8, 4, 8, 4, 8, 8, 4; pp 2 chunk 0, pp 4 chunk 1, pp 7 chunk 0, pp 9 chunk 1, pp 12 chunk 0 empty.
    let s = "Et|t||tttt|tttt|tttt|tttt||tttt|tttt|tttt|tttt||tttt|tttt|tttt|tttt||tttt|tttt|tttt|tttt||tttt|tttt|ttttmL";
    let l = ok(&text(s), 13, None, 78, 1);
    assert_eq!(l.split.layers_per_stage(), [5, 5, 4, 8, 4, 8, 8, 4, 8, 4, 8, 8, 4]);
    let c = chunks(&l);
    assert_eq!((c[0][0], c[0][1], c[2][0], c[12][1]), (r(0, 0), r(34, 37), (2, 0), r(74, 77)));
    assert_eq!(l.split.placement.mtp, Some(at(12, 1)));
}

#[test]
fn bridge_glm52_pp_layouts() {
    // The other GLM-5.2 recipe layouts (78 layers, 1 MTP) at Bridge @067f987df: recipes/glm/h100/glm5.py
    // _GLM52_PP13_LAYOUT (PP 13) and _GLM52_PP19_200K_LAYOUT (PP 19), recipes/glm/gb200/glm5.py _GLM52_PP6_128K_LAYOUT
    // ("|".join(E + t*14, t*16, t*12, t*12, t*12, t*12 + mL), PP 6). One chunk a rank; E on pp 0, m and L on the last.
    let pp13 = "Etttttt|tttt|tttttttt|tttttttt|tttttttt|tttttttt|tttttttt|tttttttt|tttt|tttt|tttt|tttt|ttttmL";
    let l = ok(&text(pp13), 13, None, 78, 1);
    assert_eq!(l.vpp, 1);
    assert_eq!(l.split.layers_per_stage(), [6, 4, 8, 8, 8, 8, 8, 8, 4, 4, 4, 4, 4]);
    assert_eq!((l.split.placement.mtp, l.mtp_standalone), (Some(at(12, 0)), false));
    let pp19 = "Etttttt|tttt|tttt|tttt|tttt|tttt|tttt|tttt|tttt|tttt|tttt|tttt|tttt|tttt|tttt|tttt|tttt|tttt|ttttmL";
    let l = ok(&text(pp19), 19, None, 78, 1);
    assert_eq!(l.split.layers_per_stage(), [[6].as_slice(), &[4; 18]].concat());
    assert_eq!(chunks(&l)[18], [r(74, 77)]);
    let pp6 = ["E".to_string() + &"t".repeat(14), "t".repeat(16), "t".repeat(12), "t".repeat(12), "t".repeat(12), "t".repeat(12) + "mL"].join("|");
    let l = ok(&text(&pp6), 6, None, 78, 1);
    assert_eq!(l.split.layers_per_stage(), [14, 16, 12, 12, 12, 12]);
    assert_eq!(chunks(&l)[1], [r(14, 29)]);
    // The same strings on a PP that does not divide their stages, or for GLM-5's 1 MTP layer missing, are Megatron's
    // rejections.
    assert_eq!(code(&text(pp13), 4, None, 78, 1), "layout-stages-not-divisible-by-pp");
    assert_eq!(code(&text(&pp6), 6, None, 78, 0), "layout-mtp-count");
    assert_eq!(code(&text(pp19), 19, None, 92, 1), "layout-decoder-count");
}

#[test]
fn bridge_deepseek_v3_standalone_mtp_builder() {
    // recipes/deepseek/h100/deepseek_v3.py _build_standalone_mtp_layout(num_decoder_layers, total_stages, mtp_layers):
    // total_stages − 2 decoder stages (the first extra_decoder_layers of them one layer longer, E on the first), then
    // [m]*mtp alone, then [L] alone. DeepSeek-V3 (61 layers, 1 MTP) on PP 16: 14 decoder stages, 61 = 14·4 + 5 → five of
    // 5 and nine of 4; the m stage is pp 14, not the last rank: standalone, which Megatron-Core allows (its docs' "MTP
    // in a standalone stage").
    let mut stages: Vec<Vec<&str>> = (0..14).map(|i| vec!["decoder"; if i < 5 { 5 } else { 4 }]).collect();
    stages[0].insert(0, "embedding");
    stages.push(vec!["mtp"]);
    stages.push(vec!["loss"]);
    let spec = list(json!(stages));
    let l = ok(&spec, 16, None, 61, 1);
    assert_eq!(l.split.layers_per_stage(), [5, 5, 5, 5, 5, 4, 4, 4, 4, 4, 4, 4, 4, 4, 0, 0]);
    assert_eq!((l.split.placement.mtp, l.mtp_standalone), (Some(at(14, 0)), true));
    assert_eq!(l.split.placement.loss, at(15, 0));
    // The same 16 stages on PP 8 × VPP 2 (the builder takes PP·VPP): stage 14 is pp 6's second chunk, stage 15 pp 7's.
    let l = ok(&spec, 8, None, 61, 1);
    assert_eq!(l.vpp, 2);
    assert_eq!((l.split.placement.mtp, l.mtp_standalone, l.split.placement.loss), (Some(at(6, 1)), true, at(7, 1)));
    assert_eq!(chunks(&l)[0], [r(0, 4), r(37, 40)]);
    // On PP 4 × VPP 4 the m stage (14) is pp 2's last chunk: still its rank's last chunk, so valid and standalone.
    let l = ok(&spec, 4, None, 61, 1);
    assert_eq!((l.vpp, l.split.placement.mtp, l.mtp_standalone), (4, Some(at(2, 3)), true));
    // With 2 MTP layers the builder's [m, m] stage holds both; a model with 1 is Megatron's count error.
    assert_eq!(code(&spec, 16, None, 61, 2), "layout-mtp-count");
}

#[test]
fn bridge_kimi_k25_vl_and_k_exaone_layouts() {
    // recipes/kimi_vl/h100/kimi_k25_vl.py _get_kimi_k25_vl_pipeline_layout (61 layers, no MTP): (4,1) = [E+t16, t16,
    // t16, t13+L]; (8,1) / (4,2) = [E+t8] + [t8]*6 + [t5+L]; (16,1), (8,2), (4,4), (2,8) = [E+t4] + [t4]*14 + [t+L].
    assert_eq!(ok(&list(json!([e(16), t(16), t(16), last(13)])), 4, None, 61, 0).split.layers_per_stage(), [16, 16, 16, 13]);
    let eight = list(json!([e(8), t(8), t(8), t(8), t(8), t(8), t(8), last(5)]));
    assert_eq!(ok(&eight, 8, None, 61, 0).split.layers_per_stage(), [8, 8, 8, 8, 8, 8, 8, 5]);
    assert_eq!(ok(&eight, 4, None, 61, 0).split.layers_per_stage(), [16, 16, 16, 13]);
    let mut sixteen = vec![e(4)];
    sixteen.extend((0..14).map(|_| t(4)));
    sixteen.push(last(1));
    let sixteen = list(json!(sixteen));
    for (pp, vpp, per_rank) in [
        (16u64, 1u64, [[4u64; 15].as_slice(), &[1]].concat()),
        (8, 2, vec![8, 8, 8, 8, 8, 8, 8, 5]),
        (4, 4, vec![16, 16, 16, 13]),
        (2, 8, vec![32, 29]),
    ] {
        let l = ok(&sixteen, pp, None, 61, 0);
        assert_eq!((l.vpp, l.split.layers_per_stage()), (vpp, per_rank), "PP {pp}");
    }
    // recipes/exaone/h100/exaone_moe.py get_k_exaone_2_0_pipeline_layout (78 layers, 4 MTP): target =
    // ceil(82 / stages); the last stage holds target − 4 decoders, the 4 MTP layers and the loss; the other stages
    // share the rest, the first (with E) taking the remainder first. PP 16: target 6 → last t*2 m*4 L; 76 = 15·5 + 1 →
    // [E+t6] + [t5]*14. PP 8: target 11 → last t*7 m*4 L; 71 = 7·10 + 1 → [E+t11] + [t10]*6.
    let l = ok(&text("Et*6|(t*5|)*14t*2m*4L"), 16, None, 78, 4);
    assert_eq!(l.split.layers_per_stage(), [[6].as_slice(), &[5; 14], &[2]].concat());
    assert_eq!((l.split.placement.mtp, l.mtp_standalone), (Some(at(15, 0)), false));
    let l = ok(&text("Et*11|(t*10|)*6t*7mmmmL"), 8, None, 78, 4);
    assert_eq!(l.split.layers_per_stage(), [11, 10, 10, 10, 10, 10, 10, 7]);
    // Its 4 MTP layers split over two stages is Megatron's "all of the MTP layers must be in the same one virtual
    // pipeline stage" rejection; a decoder after an MTP layer its "decoder layers must be placed before MTP layers".
    assert_eq!(code(&text("Et*11|(t*10|)*5t*17m|mmmL"), 8, None, 78, 4), "layout-mtp-split");
    assert_eq!(code(&text("Et*11|(t*10|)*5t*9m|t*8mmmL"), 8, None, 78, 4), "layout-mtp-before-decoder");
}

#[test]
fn mtp_on_the_first_rank_is_what_megatrons_parser_says() {
    // Megatron-LM docs/user-guide/features/multi_token_prediction.md (@d98e8a64ddf3) says "Do not place MTP layers on the
    // first pipeline rank"; PipelineParallelLayerLayout.validate_layer_layout asserts only that no `m` sits in a chunk of
    // pp 0 other than its last (a case the last-chunk rule already rejects). So "Et|t|tm|L" on PP 2 (m in pp 0's second
    // and last chunk) passes Megatron's parser as a standalone MTP, and meshplan reads it the same way; "Etm|t|t|L" (m
    // in pp 0's first chunk) is rejected, by the decoder-order rule first, as Megatron's order of checks has it.
    let l = ok(&text("Et|t|tm|L"), 2, None, 3, 1);
    assert_eq!((l.vpp, l.split.placement.mtp, l.mtp_standalone), (2, Some(at(0, 1)), true));
    assert_eq!(code(&text("Etm|t|t|L"), 2, None, 3, 1), "layout-mtp-before-decoder");
    assert_eq!(code(&text("Etm|t|L|"), 2, None, 2, 1), "layout-mtp-before-decoder");
    assert_eq!(code(&text("Ettm|t|L|"), 2, None, 3, 1), "layout-mtp-before-decoder");
    assert_eq!(code(&text("Ettt|m|L|"), 2, None, 3, 1), "layout-mtp-not-last-chunk");
}

#[test]
fn megatron_cuda_graph_test_layout_first_and_last_layers() {
    // tests/unit_tests/transformer/test_cuda_graphs.py test_cuda_graph_determine_first_last_layer_logic, its layout row:
    // 14 layers on PP 4 × VPP 2 as [[E, t], [t, t] × 6, [t, L]]; golden 1-based first layer numbers per chunk
    // [1, 2, 4, 6, 8, 10, 12, 14] and last [1, 3, 5, 7, 9, 11, 13, 14] in stage order (stage = vpp·PP + pp).
    let mut stages = vec![json!(["embedding", "decoder"])];
    stages.extend((0..6).map(|_| json!(["decoder", "decoder"])));
    stages.push(json!(["decoder", "loss"]));
    let l = ok(&list(Value::Array(stages)), 4, None, 14, 0);
    assert_eq!(l.vpp, 2);
    let c = chunks(&l);
    let by_stage: Vec<(u64, u64)> = (0..8).map(|i| c[i % 4][i / 4]).collect();
    let first: Vec<u64> = by_stage.iter().map(|&(s, _)| s + 1).collect();
    let last: Vec<u64> = by_stage.iter().map(|&(s, n)| s + n).collect();
    assert_eq!(first, [1, 2, 4, 6, 8, 10, 12, 14]);
    assert_eq!(last, [1, 3, 5, 7, 9, 11, 13, 14]);
}

// ---------------------------------------------------------------------------------------------------------------
// Even layouts, fixes, account_for_*
// ---------------------------------------------------------------------------------------------------------------

proptest! {
    /// An even layout (k layers in each of PP·VPP stages, E first, L last) gives exactly `split_layers`' split.
    #[test]
    fn an_even_layout_reproduces_split_layers(pp in 1u64..9, vpp in 1u64..5, k in 1u64..5) {
        let stages = pp * vpp;
        let body: Vec<String> = (0..stages).map(|i| {
            let mut s = if i == 0 { "E".to_string() } else { String::new() };
            s.push_str(&"t".repeat(k as usize));
            if i == stages - 1 { s.push('L'); }
            s
        }).collect();
        let layers = stages * k;
        let l = ok(&text(&body.join("|")), pp, None, layers, 0);
        let even = split_layers(layers, pp, vpp, None, None).unwrap();
        prop_assert_eq!(l.split, even);
    }

    /// The layout a fix offers (`even_text`) is valid for its shape, whatever the shape.
    #[test]
    fn the_offered_layout_reads_back(layers in 0u64..200, mtp in 0u64..3, pp in 1u64..9, vpp in 1u64..5) {
        let s = layout::even_text(layers, mtp, pp * vpp);
        let l = layout::split(&text(&s), pp, None, layers, mtp);
        prop_assert!(l.is_ok(), "{} on PP {}: {:?}", s, pp, l);
        let per = l.unwrap().split.layers_per_stage();
        prop_assert!(per.iter().max().unwrap() - per.iter().min().unwrap() <= vpp, "{:?}", per);
    }
}

#[test]
fn the_offered_layout_folds_equal_stages() {
    // 61 layers over 16 stages: 61 = 16·3 + 13 → 13 stages of 4 then 3 of 3; E on the first, m L on the last; runs of
    // equal middle stages fold into (…|)*n.
    assert_eq!(layout::even_text(61, 1, 16), "Et*4|(t*4|)*12(t*3|)*2t*3mL");
    assert_eq!(layout::even_text(16, 0, 2), "Et*8|t*8L");
}

#[test]
fn account_for_embedding_and_loss_in_the_split() {
    // 6 layers + embedding + loss = 8 over PP 4: 2 per stage; pp 0 builds 2 − 1 = 1 (t0), pp 3 2 − 1 = 1 (t5).
    // get_transformer_layer_offset: pp·2 − 1 past the first stage → 1, 3, 5.
    let s = split_layers_accounting(6, 4, 1, None, None, true, true).unwrap();
    let c: Vec<Vec<(u64, u64)>> = s.stages.iter().map(|s| s.iter().map(|c| (c.start, c.count)).collect()).collect();
    assert_eq!(c, [vec![r(0, 0)], vec![r(1, 2)], vec![r(3, 4)], vec![r(5, 5)]]);
    // 14 + 2 = 16 over PP 4 × VPP 2: 2 per chunk; offset = vpp·8 + pp·2 − 1 past chunk (0, 0): (1, 0) → 1,
    // (0, 1) → 7, (3, 1) → 13 holding 2 − 1 = 1.
    let s = split_layers_accounting(14, 4, 2, None, None, true, true).unwrap();
    let c: Vec<Vec<(u64, u64)>> = s.stages.iter().map(|s| s.iter().map(|c| (c.start, c.count)).collect()).collect();
    assert_eq!(c, [vec![r(0, 0), r(7, 8)], vec![r(1, 2), r(9, 10)], vec![r(3, 4), r(11, 12)], vec![r(5, 6), r(13, 13)]]);
    // DeepSeek-V3's 61 layers on PP 2 with the embedding accounted: 62 / 2 = 31 → pp 0 t0–29, pp 1 t30–60.
    assert_eq!(split_layers_accounting(61, 2, 1, None, None, true, false).unwrap().layers_per_stage(), [30, 31]);
    // With the loss too, 63 does not divide by 2; 62 / 2 = 31 does not split into VPP 2.
    assert!(matches!(split_layers_accounting(61, 2, 1, None, None, true, true), Err(pipeline::SplitError::AccountedUneven { layers: 61, extra: 2, stages: 2 })));
    assert!(matches!(split_layers_accounting(61, 2, 2, None, None, true, false), Err(pipeline::SplitError::AccountedVirtualUneven { per_stage: 31, vpp: 2 })));
    assert_eq!(split_layers_accounting(8, 2, 1, Some(4), None, true, false), Err(pipeline::SplitError::AccountWithUneven));
}

#[test]
fn megatron_docstring_and_help_examples() {
    // transformer_config.py's docstring: 'E|(tt|)*2,(t|)*4,mL' — "vpp rank 0 pp rank 0 holds: embedding, pp rank 1~2:
    // decoder*2, pp rank 3: decoder; vpp rank 1 pp rank 0~2: decoder, pp rank 3: mtp, loss". Its 8 stages read that
    // way on PP 4 × VPP 2 (the docstring's "pp = 2, vpp = 4" does not match its own description): 2 + 2 + 4 = 8
    // decoders, 1 MTP.
    let l = ok(&text("E|(tt|)*2,(t|)*4,mL"), 4, None, 8, 1);
    assert_eq!(l.split.stages.iter().map(|s| s.iter().map(|c| c.count).collect()).collect::<Vec<Vec<u64>>>(), [[0, 1], [2, 1], [2, 1], [1, 0]]);
    assert_eq!(l.split.placement.mtp, Some(at(3, 1)));
    // --pipeline-model-parallel-layout's help: "E|(t|)*3,m|m||L", 8 stages with the two m in different stages; with 2
    // MTP layers Megatron rejects it on every PP that divides 8: on PP 1 and 2 an m is not in a rank's last chunk, on
    // PP 4 and 8 a rank's last chunk holds one m of two.
    let help = text("E|(t|)*3,m|m||L");
    assert_eq!(code(&help, 1, None, 3, 2), "layout-mtp-not-last-chunk");
    assert_eq!(code(&help, 2, None, 3, 2), "layout-mtp-not-last-chunk");
    assert_eq!(code(&help, 4, None, 3, 2), "layout-mtp-split");
    assert_eq!(code(&help, 8, None, 3, 2), "layout-mtp-split");
}

#[test]
fn a_plan_takes_its_vpp_from_the_layout() {
    use meshplan_core::plan_value;
    // 16 stages on PP 2: VPP 8 when the plan leaves it unset (transformer_config.py: set when detected > 1); PP 4 with
    // `E||t|L` (row 12) keeps VPP unset and may exceed the model's single layer.
    let plan = |model: Value, pp: u64, layout: &str| {
        json!({"model": model, "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 1},
               "training": {"global_batch_size": 64},
               "parallelism": {"pipeline_model_parallel_size": pp, "pipeline_model_parallel_layout": layout}})
    };
    // Llama-3.1-8B's 32 layers as `Et|(tt|)*14t*3L`: stages of 1, 14 × 2 and 3 layers; even stages on pp 0.
    let r = plan_value(&plan(json!("llama-3.1-8b"), 2, "Et|(tt|)*14t*3L")).unwrap();
    assert_eq!(r.plan.parallelism.virtual_pipeline_model_parallel_size, Some(8));
    assert_eq!(r.derived.layers_per_chunk, [vec![1, 2, 2, 2, 2, 2, 2, 2], vec![2, 2, 2, 2, 2, 2, 2, 3]]);
    let one_layer = json!({"num_layers": 1, "hidden_size": 1024, "ffn_hidden_size": 4096, "num_attention_heads": 8,
                           "num_query_groups": 8, "kv_channels": 128, "vocab_size": 32000});
    let r = plan_value(&plan(one_layer, 4, "E||t|L")).unwrap();
    assert_eq!(r.plan.parallelism.pipeline_model_parallel_size, 4);
    assert_eq!(r.plan.parallelism.virtual_pipeline_model_parallel_size, None);
    assert_eq!(r.derived.layers_per_stage, [0, 0, 1, 0]);
    assert!(!r.diagnostics.iter().any(|d| d.code == "pipeline-exceeds-layers" || d.code.as_str().starts_with("layout")), "{:?}", r.diagnostics);
}

#[test]
fn a_hybrid_patterns_segments_are_its_stages() {
    use meshplan_core::plan_value;
    // Nemotron-H 8B's 52-layer pattern cut by `|` into 4 segments of 13 on PP 2: segment i on rank i mod 2, chunk i div 2
    // (hybrid_layer_allocation.py select_pipeline_segment), VPP 4 / 2 = 2 set from the segments (arguments.py).
    let preset = meshplan_core::presets::model("nemotron-h-8b").unwrap();
    let pattern = preset.config["hybrid_layer_pattern"].as_str().unwrap().to_string();
    let cut = |n: usize| pattern.as_bytes().chunks(52 / n).map(|c| String::from_utf8(c.to_vec()).unwrap()).collect::<Vec<_>>().join("|");
    let plan = |pattern: String, par: Value| {
        json!({"model": {"preset": "nemotron-h-8b", "hybrid_layer_pattern": pattern},
               "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 1},
               "training": {"global_batch_size": 64}, "parallelism": par})
    };
    let r = plan_value(&plan(cut(4), json!({"pipeline_model_parallel_size": 2, "overlap_p2p_comm": true}))).unwrap();
    assert_eq!(r.plan.parallelism.virtual_pipeline_model_parallel_size, Some(2));
    assert_eq!(r.derived.layers_per_chunk, [vec![13, 13], vec![13, 13]]);
    let codes: Vec<&str> = r.diagnostics.iter().map(|d| d.code.as_str()).collect();
    assert!(codes.contains(&"hybrid-vpp-unsupported-in-bridge") && !r.diagnostics.iter().any(|d| d.is_error() && d.code.as_str().starts_with("hybrid")), "{codes:?}");
    // With a first-stage size beside the `|`: Megatron raises. On PP 4 the 4 segments are one per rank, no VPP.
    let r = plan_value(&plan(cut(4), json!({"pipeline_model_parallel_size": 2, "num_layers_in_first_pipeline_stage": 26}))).unwrap();
    assert!(r.diagnostics.iter().any(|d| d.code == "hybrid-pipes-with-first-last-stage"));
    let r = plan_value(&plan(cut(4), json!({"pipeline_model_parallel_size": 4, "tensor_model_parallel_size": 2}))).unwrap();
    assert_eq!(r.derived.layers_per_stage, [13, 13, 13, 13]);
    assert_eq!(r.plan.parallelism.virtual_pipeline_model_parallel_size, None);
    // Without `|` on PP 2: Megatron's legacy even split, 26 + 26; on PP 3 52 does not divide.
    let r = plan_value(&plan(pattern.clone(), json!({"pipeline_model_parallel_size": 2}))).unwrap();
    assert_eq!(r.derived.layers_per_stage, [26, 26]);
    let r = plan_value(&plan(pattern, json!({"pipeline_model_parallel_size": 3}))).unwrap();
    assert!(r.diagnostics.iter().any(|d| d.code == "hybrid-legacy-split-uneven"), "{:?}", r.diagnostics.iter().map(|d| d.code).collect::<Vec<_>>());
}
