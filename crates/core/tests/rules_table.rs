//! Every diagnostic code is one row of `codes::RULES`, so `meshplan explain` knows it. The type `Code` is generated
//! from the table, so an emit site cannot name a code without a row; these tests hold the rest: the table is
//! well formed, the type and the table agree, and no engine source spells a code as a string (which would bypass
//! the type), outside the table and the tests.

use meshplan_core::codes::{Code, RULES, Severity, rule};
use meshplan_core::{Diagnostic, InputError};
use std::collections::BTreeSet;

fn is_kebab(s: &str) -> bool {
    s.contains('-') && s.split('-').all(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()))
}

/// Kebab-case string literals in the engine's sources, leaving out `codes.rs` (the table) and `#[cfg(test)]` modules.
fn literals_outside_table_and_tests() -> BTreeSet<String> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
    let mut found = BTreeSet::new();
    let mut files = vec![std::path::PathBuf::from(dir)];
    while let Some(path) = files.pop() {
        if path.is_dir() {
            files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        if path.file_name().is_some_and(|n| n == "codes.rs") || path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        for (i, part) in code.split('"').enumerate() {
            if i % 2 == 1 && is_kebab(part) {
                found.insert(part.to_string());
            }
        }
    }
    found
}

#[test]
fn no_engine_source_spells_a_code_as_a_string() {
    let literals = literals_outside_table_and_tests();
    // The scan works: it sees the rank-order strings and prose names the sources do spell.
    assert!(literals.contains("tp-cp-ep-dp-pp") && literals.contains("tensor-parallel"), "scan found {literals:?}");
    let spelled: Vec<_> = literals.iter().filter(|c| rule(c).is_some()).collect();
    assert!(spelled.is_empty(), "codes spelled as strings instead of `Code::…`: {spelled:?}");
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

#[test]
fn the_code_type_and_the_table_agree() {
    assert_eq!(Code::ALL.len(), RULES.len());
    for (&c, r) in Code::ALL.iter().zip(RULES) {
        assert_eq!(r.id, c);
        assert_eq!(c.as_str(), r.code);
        assert_eq!(c.rule().code, r.code);
        assert_eq!(c.severity(), r.severity);
        assert_eq!(Code::parse(r.code), Some(c));
        assert_eq!(c.to_string(), r.code);
        assert!(c == r.code && r.code == c);
    }
    assert_eq!(Code::parse("no-such-code"), None);
}

#[test]
fn codes_serialize_as_their_kebab_string() {
    // The JSON contract: a diagnostic's "code" is the same string it was before codes were typed.
    let d = Diagnostic::new(Code::TpCrossesNvlink, "m", "f");
    let v = serde_json::to_value(&d).unwrap();
    assert_eq!(v, serde_json::json!({"severity": "warning", "code": "tp-crosses-nvlink", "message": "m", "fix": "f"}));
    assert_eq!(serde_json::from_value::<Diagnostic>(v).unwrap(), d);
    let e = InputError::new(Code::UnknownGpu, "m", "f");
    assert_eq!(serde_json::to_value(&e).unwrap(), serde_json::json!({"code": "unknown-gpu", "message": "m", "fix": "f"}));
    assert_eq!(e.to_string(), "error[unknown-gpu]: m\n  fix: f");
    assert!(serde_json::from_str::<Code>("\"not-a-code\"").is_err());
}

#[test]
fn a_diagnostic_takes_its_severity_from_the_table() {
    // Rows picked by hand from the table: one of each severity.
    assert_eq!(Diagnostic::new(Code::OutOfMemory, "", "").severity, Severity::Error);
    assert_eq!(Diagnostic::new(Code::LowMemoryHeadroom, "", "").severity, Severity::Warning);
    assert_eq!(Diagnostic::new(Code::MinGpus, "", "").severity, Severity::Info);
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
            prop_assert_eq!(codes.first_error(), full.iter().find(|d| d.is_error()).map(|d| d.code));
        }
    }
}

#[test]
fn input_codes_are_those_whose_source_is_meshplan_input() {
    // is_input is decided at compile time from the same table the sources come from.
    for r in RULES {
        assert_eq!(r.id.is_input(), r.source.starts_with("meshplan input"), "{}", r.code);
    }
    assert!(Code::UnknownField.is_input());
    assert!(!Code::OutOfMemory.is_input());
}
