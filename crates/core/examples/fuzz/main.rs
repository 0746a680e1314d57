//! A fuzz harness that needs no nightly toolchain: generates plan files, runs every entry point of the core on each,
//! and reports how many ran, how many panicked and the slowest.
//!
//! ```sh
//! cargo run --profile fuzz -p meshplan-core --example fuzz -- 1000000            # inputs [--seed N] [--search-every K]
//! ```
//!
//! The `fuzz` profile is the release build with panics that unwind, so a panic is caught, counted and saved; under
//! `--release` (panic = abort) the first panic is saved and ends the run.
//!
//! Inputs come from three generators in turn: a structured one (a plan with every field drawn from plausible and
//! hostile values of every kind: huge, zero, negative, fractional, string, null, nested, long lists — for the plan's
//! fields and for a Hugging Face `config.json`'s), value-level mutations of the seed plans (the model presets, the
//! README example, the measured-memory plans and Hugging Face configs in `fuzz_seeds.json`) and byte-level
//! mutations of their text. Each input runs through `plan_str`, `memory_value` and every export; every K-th one
//! (default 1,000) also through `search_str`, timed apart. Panicking inputs (the first five) and the slowest input are
//! written to `target/fuzz/`.

use meshplan_core::search::{SearchOptions, search_str};
use meshplan_core::{ExportKind, export, plan_str, presets, report::memory_value};
use serde_json::{Map, Value, json};
use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// SplitMix64: small, fast and reproducible from a seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

#[path = "../tests/common/fields.rs"]
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
fn number(rng: &mut Rng) -> Value {
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
fn any_value(rng: &mut Rng, depth: u32) -> Value {
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
        16 => json!("x".repeat(*rng.pick(&[0usize, 255, 256, 257, 10_000, 1 << 20]))),
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
fn structured(rng: &mut Rng) -> Value {
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
fn mutate_value(rng: &mut Rng, seed: &Value) -> Value {
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
fn mutate_bytes(rng: &mut Rng, text: &str, other: &str) -> String {
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
fn seeds() -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for (i, m) in presets::models().iter().enumerate() {
        let moe = m.config.get("num_moe_experts").is_some_and(|e| !e.is_null());
        out.push(json!({"model": m.key, "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 8 << (i % 4)},
            "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 1024, "recompute_granularity": "selective",
                         "use_distributed_optimizer": true, "precision": if i % 3 == 0 { "fp8" } else { "bf16" }},
            "parallelism": {"tensor_model_parallel_size": 8, "pipeline_model_parallel_size": 1 << (i % 3),
                            "expert_model_parallel_size": if moe { 8 } else { 1 }, "sequence_parallel": true}}));
    }
    out.push(serde_json::from_str(include_str!("../../../examples/llama-3.1-70b.json")).expect("the README example is JSON"));
    out.push(serde_json::from_str(include_str!("../../../examples/qwen3-30b-a3b-recipe.json")).expect("the README recipe example is JSON"));
    // A plan naming each Megatron Bridge recipe (recipes.rs): the mutations reach `recipe` and the merged sections.
    for r in meshplan_core::recipes::all().iter().step_by(7) {
        out.push(json!({"recipe": r.name, "cluster": {"gpu": "h100-sxm-80gb", "num_nodes": 4}}));
    }
    let file: Value = serde_json::from_str(include_str!("fuzz_seeds.json")).expect("fuzz_seeds.json is JSON");
    out.extend(file["plans"].as_array().into_iter().flatten().cloned());
    for hf in file["hf_configs"].as_array().into_iter().flatten() {
        out.push(json!({"model": {"hf_config": hf}, "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "num_nodes": 4},
                        "training": {"seq_length": 4096, "global_batch_size": 256}, "parallelism": {"tensor_model_parallel_size": 2}}));
    }
    out
}

thread_local! {
    static CURRENT: RefCell<String> = const { RefCell::new(String::new()) };
    static PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Runs `f`, returning its answer (None if it panicked, the message kept for the report) and how long it took.
fn timed<T>(f: impl FnOnce() -> T) -> (Duration, Option<T>, Option<String>) {
    let start = Instant::now();
    let out = catch_unwind(AssertUnwindSafe(f));
    let took = start.elapsed();
    match out {
        Ok(v) => (took, Some(v), None),
        Err(_) => (took, None, Some(PANIC.with(|p| p.borrow_mut().take()).unwrap_or_default())),
    }
}

/// Everything the page and the CLI run on a plan file: plan it, size its memory, write every export. Returns whether
/// it was planned (not an input error) and whether the plan was valid.
fn run_plan(text: &str) -> (bool, bool) {
    let mut outcome = (false, false);
    if let Ok(report) = plan_str(text) {
        outcome = (true, report.valid);
        for kind in ExportKind::ALL {
            std::hint::black_box(export(kind, &report.plan, &report));
        }
    }
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        std::hint::black_box(memory_value(&v).ok());
    }
    outcome
}

fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|l| l.strip_prefix("VmHWM:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

struct Tally {
    runs: u64,
    panics: u64,
    slowest: (Duration, String),
    over_one_second: u64,
}

impl Tally {
    fn record(&mut self, dir: &std::path::Path, text: &str, took: Duration, panic: Option<String>, what: &str) {
        self.runs += 1;
        if took > Duration::from_secs(1) {
            self.over_one_second += 1;
        }
        if took > self.slowest.0 {
            self.slowest = (took, text.to_string());
        }
        if let Some(message) = panic {
            self.panics += 1;
            if self.panics <= 5 {
                let path = dir.join(format!("{what}-panic-{}.json", self.panics));
                let _ = std::fs::write(&path, text);
                eprintln!("PANIC in {what} ({message}); input saved to {}", path.display());
            }
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse::<u64>().ok());
    let inputs = args.first().and_then(|a| a.parse::<u64>().ok()).unwrap_or(10_000);
    let search_every = flag("--search-every").unwrap_or(1_000).max(1);
    let mut rng = Rng(flag("--seed").unwrap_or(1));
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/fuzz");
    let _ = std::fs::create_dir_all(&dir);
    let abort_path = dir.join("abort-input.json");
    std::panic::set_hook(Box::new(move |info| {
        let message = info.to_string();
        // Under panic = abort nothing returns from here: keep the input that did it.
        CURRENT.with(|c| {
            let _ = std::fs::write(&abort_path, c.borrow().as_bytes());
        });
        PANIC.with(|p| *p.borrow_mut() = Some(message));
    }));
    let seeds = seeds();
    let texts: Vec<String> = seeds.iter().map(|s| serde_json::to_string_pretty(s).unwrap_or_default()).collect();
    let opts = SearchOptions::default();
    let mut plans = Tally { runs: 0, panics: 0, slowest: (Duration::ZERO, String::new()), over_one_second: 0 };
    let mut searches = Tally { runs: 0, panics: 0, slowest: (Duration::ZERO, String::new()), over_one_second: 0 };
    let (mut planned, mut valid_plans, mut searched_valid) = (0u64, 0u64, 0u64);
    let start = Instant::now();
    println!("fuzz: {inputs} inputs from {} seeds, every {search_every}th also searched", seeds.len());
    for i in 0..inputs {
        let text = match i % 3 {
            0 => serde_json::to_string(&structured(&mut rng)).unwrap_or_default(),
            1 => {
                let k = rng.below(seeds.len() as u64) as usize;
                serde_json::to_string(&mutate_value(&mut rng, &seeds[k])).unwrap_or_default()
            }
            _ => {
                let (a, b) = (rng.below(texts.len() as u64) as usize, rng.below(texts.len() as u64) as usize);
                mutate_bytes(&mut rng, &texts[a], &texts[b])
            }
        };
        CURRENT.with(|c| c.replace(text.clone()));
        let (took, outcome, panic) = timed(|| run_plan(&text));
        plans.record(&dir, &text, took, panic, "plan");
        let (read, valid) = outcome.unwrap_or_default();
        (planned, valid_plans) = (planned + u64::from(read), valid_plans + u64::from(valid));
        if i % search_every == 0 {
            let (took, found, panic) = timed(|| search_str(&text, &opts).map(|r| r.valid).unwrap_or(0));
            searches.record(&dir, &text, took, panic, "search");
            searched_valid += u64::from(found.unwrap_or(0) > 0);
        }
        if (i + 1) % 100_000 == 0 {
            println!("  {} inputs, {} panics, slowest {:?}, {:?} elapsed", i + 1, plans.panics + searches.panics, plans.slowest.0, start.elapsed());
        }
    }
    let _ = std::fs::write(dir.join("slowest-plan.json"), &plans.slowest.1);
    let _ = std::fs::write(dir.join("slowest-search.json"), &searches.slowest.1);
    let clip = |s: &str| s.chars().take(300).collect::<String>();
    println!("{planned} inputs planned (the rest are input errors: not JSON, no model, …), {valid_plans} of them valid; {searched_valid} searches found a valid layout");
    println!("plan_str + memory_value + {} exports: {} inputs, {} panics, {} over 1 s, slowest {:?} ({} bytes): {}",
        ExportKind::ALL.len(), plans.runs, plans.panics, plans.over_one_second, plans.slowest.0, plans.slowest.1.len(), clip(&plans.slowest.1));
    println!("search_str: {} inputs, {} panics, {} over 1 s, slowest {:?} ({} bytes): {}",
        searches.runs, searches.panics, searches.over_one_second, searches.slowest.0, searches.slowest.1.len(), clip(&searches.slowest.1));
    println!("elapsed {:?}; peak RSS {} KB; slowest inputs and panics in {}", start.elapsed(), peak_rss_kb().map_or("?".into(), |k| k.to_string()), dir.display());
}
