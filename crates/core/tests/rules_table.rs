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
