//! The plan generators: structured plans (every plan field and Hugging Face `config.json` field drawn from plausible
//! and hostile values), value-level and byte-level mutations of the seed plans, and the seeds themselves.

use crate::text;
use meshplan_core::presets;
use serde_json::{Map, Value, json};

/// SplitMix64: small, fast and reproducible from a seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

#[path = "../../tests/common/fields.rs"]
mod fields;
use fields::{HF_FIELDS, PLAN_FIELDS};

/// The plan fields of one section.
fn fields_of(section: &str) -> Vec<&'static str> {
    PLAN_FIELDS.iter().filter(|(s, _)| *s == section).map(|(_, k)| *k).collect()
}

const WORDS: &[&str] = &[
    "tp-cp-ep-dp-pp", "tp-cp-ep-pp-dp", "TP-CP-EP-DP-PP", "pp-dp-ep-cp-tp", "tp-pp", "tp--pp", "", "selective", "full",
    "none", "uniform", "block", "bf16", "fp8", "fp4", "fp16", "fp32", "rope", "learned_absolute", "silu", "gelu", "RMSNorm",
    "LayerNorm", "h100-sxm-80gb", "b200", "gb200-nvl72", "a100-sxm-80gb", "llama-3.1-8b", "deepseek-v3", "qwen3_moe",
    "deepseek_v3", "mixtral", "llama", "olmoe", "kimi_k2", "glm4_moe", "<script>", "\u{202e}x", "🦀",
];

/// A number a plan might hold, or one built to hurt.
pub fn number(rng: &mut Rng) -> Value {
    match rng.below(14) {
        0..=4 => json!(1u64 << rng.below(8)),
        5 => json!(rng.below(200)),
        6 => json!(rng.below(1 << 17)),
        7 => json!(*rng.pick(&[0u64, 1, 3, 61, 96, 126, 1 << 14, (1 << 14) + 1, 1 << 16, (1 << 16) + 1, 1 << 20, 1 << 24, (1 << 24) + 1])),
        8 => json!(*rng.pick(&[1u64 << 32, 1 << 40, (1 << 40) + 1, 1 << 53, u64::MAX, u64::MAX - 1, 8_648_640, 55_440])),
        9 => json!(-(rng.below(1 << 20) as i64) - 1),
        10 => json!(*rng.pick(&[0.5, 4.0, 1e300, -0.0, 1e-300, 2.5, 8.000000001, 9.007_199_254_740_993e15])),
        11 => json!((1u64 << rng.below(24)) * (1 + rng.below(9))),
        12 => json!(rng.below(1 << 25)),
        _ => json!(i64::MIN),
    }
}

/// A value of any kind: mostly plausible, sometimes hostile (long lists and strings, nesting, wrong types).
pub fn any_value(rng: &mut Rng, depth: u32) -> Value {
    match rng.below(20) {
        0..=9 => number(rng),
        10 | 11 => json!(rng.chance(50)),
        12 | 13 => json!(*rng.pick(WORDS)),
        14 => Value::Null,
        15 => {
            let len = *rng.pick(&[0u64, 1, 2, 16, 61, 300, 5_000, 20_000, 100_000]);
            let ones = rng.chance(70);
            json!((0..len).map(|i| if ones { json!(i % 2) } else { json!(i) }).collect::<Vec<_>>())
        }
        16 => {
            let len = *rng.pick(&[0usize, 255, 256, 257, 10_000, 1 << 20]);
            if rng.chance(50) { json!("x".repeat(len)) } else { json!(text::unicode(rng, len)) }
        }
        17 if depth < 4 => json!([any_value(rng, depth + 1), any_value(rng, depth + 1)]),
        18 if depth < 4 => json!({"k": any_value(rng, depth + 1), "preset": any_value(rng, depth + 1)}),
        _ => {
            let depth = rng.below(300) as usize;
            serde_json::from_str(&format!("{}{}", "[".repeat(depth.min(120)), "]".repeat(depth.min(120)))).unwrap_or(Value::Null)
        }
    }
}

fn section(rng: &mut Rng, fields: &[&'static str], fill: u64) -> Value {
    let mut m = Map::new();
    for f in fields {
        if rng.chance(fill) {
            m.insert(f.to_string(), any_value(rng, 0));
        }
    }
    if rng.chance(5) {
        m.insert(format!("unknown_{}", rng.below(1000)), any_value(rng, 0));
    }
    Value::Object(m)
}

/// A plan from scratch, every section drawn field by field.
pub fn structured(rng: &mut Rng) -> Value {
    let model = match rng.below(4) {
        0 => json!(presets::models()[rng.below(presets::models().len() as u64) as usize].key),
        1 => json!({"hf_config": section(rng, HF_FIELDS, 60)}),
        2 => {
            let mut m = section(rng, &fields_of("model"), 30);
            m["preset"] = json!(presets::models()[rng.below(presets::models().len() as u64) as usize].key);
            m
        }
        _ => section(rng, &fields_of("model"), 50),
    };
    let mut plan = json!({"model": model, "cluster": section(rng, &fields_of("cluster"), 60), "training": section(rng, &fields_of("training"), 50),
                          "parallelism": section(rng, &fields_of("parallelism"), 40)});
    if rng.chance(80) {
        plan["cluster"]["gpu"] = json!(presets::gpus()[rng.below(presets::gpus().len() as u64) as usize].key);
    }
    plan
}

/// Every object field of `v`, as a path of keys.
fn paths(v: &Value, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    if let Value::Object(m) = v {
        for (k, x) in m {
            prefix.push(k.clone());
            out.push(prefix.clone());
            paths(x, prefix, out);
            prefix.pop();
        }
    }
}

fn at<'a>(v: &'a mut Value, path: &[String]) -> Option<&'a mut Value> {
    path.iter().try_fold(v, |v, k| v.get_mut(k.as_str()))
}

/// A seed with a few fields replaced, removed or added.
pub fn mutate_value(rng: &mut Rng, seed: &Value) -> Value {
    let mut v = seed.clone();
    let mut all = Vec::new();
    paths(&v, &mut Vec::new(), &mut all);
    for _ in 0..1 + rng.below(4) {
        if all.is_empty() {
            break;
        }
        let path = rng.pick(&all).clone();
        match rng.below(10) {
            0 => {
                if let Some((last, parent)) = path.split_last() {
                    if let Some(Value::Object(m)) = at(&mut v, parent) {
                        m.remove(last);
                    }
                }
            }
            1 => {
                if let Some((_, parent)) = path.split_last() {
                    let field = if rng.chance(20) { *rng.pick(HF_FIELDS) } else { rng.pick(PLAN_FIELDS).1 };
                    if let Some(Value::Object(m)) = at(&mut v, parent) {
                        m.insert(field.to_string(), any_value(rng, 0));
                    }
                }
            }
            _ => {
                if let Some(x) = at(&mut v, &path) {
                    *x = any_value(rng, 0);
                }
            }
        }
    }
    v
}

/// A seed's text with bytes flipped, spans cut, repeated or spliced from another seed, numbers made huge.
pub fn mutate_bytes(rng: &mut Rng, text: &str, other: &str) -> String {
    let mut b = text.as_bytes().to_vec();
    for _ in 0..1 + rng.below(6) {
        let n = b.len().max(1) as u64;
        let i = rng.below(n) as usize;
        match rng.below(7) {
            0 if !b.is_empty() => {
                let last = b.len() - 1;
                b[i.min(last)] = rng.next() as u8;
            }
            1 => b.splice(i.min(b.len())..i.min(b.len()), rng.pick(&[&b"9999999999999999999"[..], b"-1", b"1e308", b".5", b"0", b"null", b"[", b"]", b"{", b"}", b"\"", b","]).iter().copied()).for_each(drop),
            2 => {
                let j = (i + rng.below(64) as usize).min(b.len());
                b.drain(i.min(j)..j);
            }
            3 => {
                let j = (i + rng.below(64) as usize).min(b.len());
                let span: Vec<u8> = b[i.min(j)..j].to_vec();
                for _ in 0..rng.below(50) {
                    b.splice(j..j, span.iter().copied()).for_each(drop);
                }
            }
            4 => {
                let o = other.as_bytes();
                let k = rng.below(o.len().max(1) as u64) as usize;
                b.truncate(i.min(b.len()));
                b.extend_from_slice(&o[k.min(o.len())..]);
            }
            5 => {
                // Every digit run at i made larger.
                if let Some(pos) = b[i.min(b.len())..].iter().position(u8::is_ascii_digit) {
                    let at = i.min(b.len()) + pos;
                    b.splice(at..at, rng.pick(&[&b"1677721"[..], b"99999999", b"18446744073709551"]).iter().copied()).for_each(drop);
                }
            }
            _ => {}
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

/// The seed plans: every model preset on a typical layout, the README's examples, every 7th Bridge recipe, the measured-memory plans and the
/// Hugging Face configs of `fuzz_seeds.json`.
pub fn seeds() -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for (i, m) in presets::models().iter().enumerate() {
        let moe = m.config.get("num_moe_experts").is_some_and(|e| !e.is_null());
        out.push(json!({"model": m.key, "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 8 << (i % 4)},
            "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 1024, "recompute_granularity": "selective",
                         "use_distributed_optimizer": true, "precision": if i % 3 == 0 { "fp8" } else { "bf16" }},
            "parallelism": {"tensor_model_parallel_size": 8, "pipeline_model_parallel_size": 1 << (i % 3),
                            "expert_model_parallel_size": if moe { 8 } else { 1 }, "sequence_parallel": true}}));
    }
    out.push(serde_json::from_str(include_str!("../../../../examples/llama-3.1-70b.json")).expect("the README example is JSON"));
    out.push(serde_json::from_str(include_str!("../../../../examples/qwen3-30b-a3b-recipe.json")).expect("the README recipe example is JSON"));
    // A plan naming each Megatron Bridge recipe (recipes.rs): the mutations reach `recipe` and the merged sections.
    for r in meshplan_core::recipes::all().iter().step_by(7) {
        out.push(json!({"recipe": r.name, "cluster": {"gpu": "h100-sxm-80gb", "num_nodes": 4}}));
    }
    let file: Value = serde_json::from_str(include_str!("../fuzz_seeds.json")).expect("fuzz_seeds.json is JSON");
    out.extend(file["plans"].as_array().into_iter().flatten().cloned());
    for hf in file["hf_configs"].as_array().into_iter().flatten() {
        out.push(json!({"model": {"hf_config": hf}, "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 4},
                        "training": {"seq_length": 4096, "global_batch_size": 256}, "parallelism": {"tensor_model_parallel_size": 2}}));
    }
    out
}

