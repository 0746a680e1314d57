//! Every diagnostic code the engine can emit is listed once in `rules::RULES`, so `meshplan explain`
//! knows it: scans the engine's source for kebab-case string literals outside the table and the tests.

use meshplan_core::{ExportKind, presets};
use meshplan_core::rules::{RULES, rule};
use std::collections::BTreeSet;

fn is_kebab(s: &str) -> bool {
    s.contains('-') && s.split('-').all(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()))
}

/// Kebab-case literals that are not diagnostic codes: rank-order strings, group and prose names.
fn is_not_a_code(s: &str) -> bool {
    let order_like = s.split('-').all(|w| ["tp", "cp", "ep", "dp", "pp", "etp", "edp"].contains(&w));
    let prose = ["context-parallel", "expert-parallel", "tensor-parallel", "world-not-divisible"].contains(&s);
    let preset = presets::model(s).is_some() || presets::gpu(s).is_some();
    let hf_family = ["deepseek-v2", "deepseek-v3", "kimi-k2"].contains(&s);
    let export_kind = ExportKind::from_key(s).is_some();
    let serde_attr = s == "kebab-case";
    order_like || prose || preset || hf_family || export_kind || serde_attr
}

fn literals_outside_table_and_tests() -> BTreeSet<String> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
    let mut found = BTreeSet::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        let code = match (code.find("rules! {"), code.find("\n}\n\n/// The rule entry")) {
            (Some(a), Some(b)) if a < b => format!("{}{}", &code[..a], &code[b..]),
            _ => code.to_string(),
        };
        for (i, part) in code.split('"').enumerate() {
            if i % 2 == 1 && is_kebab(part) {
                found.insert(part.to_string());
            }
        }
    }
    found
}

#[test]
fn every_emitted_code_is_in_the_rules_table() {
    let codes: Vec<_> = literals_outside_table_and_tests().into_iter().filter(|c| !is_not_a_code(c)).collect();
    assert!(codes.len() > 40, "scan found too few codes: {codes:?}");
    let missing: Vec<_> = codes.iter().filter(|c| rule(c).is_none()).collect();
    assert!(missing.is_empty(), "codes missing from RULES: {missing:?}");
}

#[test]
fn rule_codes_are_unique_kebab_case_with_a_source() {
    let mut seen = BTreeSet::new();
    for r in RULES {
        assert!(seen.insert(r.code), "duplicate {}", r.code);
        assert!(is_kebab(r.code), "{}", r.code);
        assert!(!r.summary.is_empty() && !r.source.is_empty(), "{}", r.code);
    }
}

mod sinks {
    use meshplan_core::rules::{self, Codes};
    use meshplan_core::{memory, parse_plan, pipeline, report, Diagnostic};
    use proptest::prelude::*;
    use serde_json::json;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// The search's codes-only sink sees exactly the findings, in order, that the full sink builds: every rule
        /// names the code of the diagnostic it builds, and no rule decides anything inside its message.
        #[test]
        fn codes_sink_matches_the_full_diagnostics(
            tp in 0u32..5, pp in 0u32..4, cp in 0u32..3, ep in 0u32..5, vpp in 0u64..4, nodes in 1u64..9,
            moe in proptest::bool::ANY, sp in proptest::bool::ANY, seq_e in 9u32..17, mbs in 1u64..5, gbs in 1u64..2048,
            recompute in proptest::sample::select(vec!["none", "selective", "full"]),
            first in proptest::option::of(0u64..20), precision in proptest::sample::select(vec!["bf16", "fp8", "fp32"]),
        ) {
            let model = if moe { "qwen3-30b-a3b" } else { "llama-3.1-8b" };
            let v = json!({"model": model, "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": nodes},
                "training": {"seq_length": 1u64 << seq_e, "micro_batch_size": mbs, "global_batch_size": gbs,
                             "recompute_granularity": recompute, "precision": precision},
                "parallelism": {"tensor_model_parallel_size": 1u64 << tp, "pipeline_model_parallel_size": 1u64 << pp,
                                "virtual_pipeline_model_parallel_size": if vpp > 1 { json!(vpp) } else { json!(null) },
                                "context_parallel_size": 1u64 << cp, "expert_model_parallel_size": if moe { 1u64 << ep } else { 1 },
                                "sequence_parallel": sp, "num_layers_in_first_pipeline_stage": first}});
            let Ok((p, _)) = parse_plan(&v) else { return Ok(()) };
            let par = &p.parallelism;
            let split = pipeline::split_layers(p.model.num_layers, par.pp(), par.vpp(), par.num_layers_in_first_pipeline_stage, None);
            let derived = report::derive(&p, split.as_ref().ok());
            let (mut full, mut codes): (Vec<Diagnostic>, Codes) = Default::default();
            rules::check(&p, &derived, split.as_ref().err(), &mut full);
            rules::check(&p, &derived, split.as_ref().err(), &mut codes);
            if let Ok(s) = &split {
                let mem = memory::estimate(&p, &derived, s);
                rules::check_memory(&p, &mem, &mut full);
                rules::check_memory(&p, &mem, &mut codes);
            }
            let full_codes: Vec<&str> = full.iter().map(|d| d.code.as_str()).collect();
            prop_assert_eq!(&full_codes, &codes.0);
            prop_assert_eq!(codes.first_error(), full.iter().find(|d| d.is_error()).map(|d| d.code.as_str()));
        }
    }
}
