//! The entry points the harness drives, each as the CLI and the page call it, and the inputs each is fed.

use crate::plans::{self, Rng};
use crate::text;
use meshplan_core::imports::{self, Format, ImportOptions};
use meshplan_core::limits::MAX_PLAN_BYTES;
use meshplan_core::search::{SearchOptions, search_str};
use meshplan_core::{ExportKind, Report, export, oom, plan_str, plan_value, report::memory_value, share};
use serde_json::Value;
use std::path::Path;

/// One entry point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    /// `plan_str`, `memory_value` and every export: `meshplan plan`, the page's report, the JS API.
    Plan,
    /// `imports::import_plan` read as one format (or the detected one) and the plan file written: `meshplan import`
    /// and the page's import box.
    Import(Option<Format>),
    /// `oom::parse_message`: the OOM reader without a plan.
    Oom,
    /// `oom::explain` against a planned seed: `meshplan oom` and the page's "Explain an OOM".
    OomWithPlan,
    /// A page URL hash's `plan=` / `base=` read by `share::decode_shared`, or a kept plan by `share::vet`.
    Share,
    /// `search_str` with any `top`: `meshplan search`, the search worker, the JS API's `search(input, top)`.
    Search,
}

impl Kind {
    pub fn all() -> Vec<Kind> {
        let mut out = vec![Kind::Plan];
        out.extend(Format::ALL.iter().map(|&f| Kind::Import(Some(f))));
        out.extend([Kind::Import(None), Kind::Oom, Kind::OomWithPlan, Kind::Share, Kind::Search]);
        out
    }

    pub fn name(self) -> String {
        match self {
            Kind::Plan => "plan_str + memory_value + exports".into(),
            Kind::Import(Some(f)) => format!("import --from {}", f.key()),
            Kind::Import(None) => "import (format detected)".into(),
            Kind::Oom => "oom::parse_message (no plan)".into(),
            Kind::OomWithPlan => "oom::explain (with a plan)".into(),
            Kind::Share => "share link (decode_shared, vet)".into(),
            Kind::Search => "search_str (any top)".into(),
        }
    }
}

/// The seeds every generator mutates.
pub struct Corpus {
    pub plans: Vec<Value>,
    pub plan_texts: Vec<String>,
    /// Launch scripts, argument dumps, Bridge YAML and overrides: the import tests' files and every export of the seed
    /// plans (each import format's own text).
    pub imports: Vec<String>,
    pub ooms: Vec<String>,
    /// Seed plans with their reports, for `oom::explain`.
    pub planned: Vec<(Value, Report)>,
}

/// PyTorch ≥ 2.1's message (c10/cuda/CUDACachingAllocator.cpp), in meshplan's own words and numbers.
const OOM_LINE: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.11 GiB of which 1.02 GiB is free. Of the allocated memory 74.21 GiB is allocated by PyTorch, and 1.80 GiB is reserved by PyTorch but unallocated.";

impl Corpus {
    pub fn load() -> Corpus {
        let plans = plans::seeds();
        let plan_texts: Vec<String> = plans.iter().map(|s| serde_json::to_string_pretty(s).unwrap_or_default()).collect();
        let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
        let mut imports = text::files(&data.join("imports"));
        imports.extend(text::files(&data.join("import_corpus")));
        let mut planned = Vec::new();
        for v in plans.iter().step_by(4) {
            if let Ok(r) = plan_value(v) {
                imports.extend(ExportKind::ALL.iter().map(|&k| export(k, &r.plan, &r)));
                planned.push((v.clone(), r));
            }
        }
        let mut ooms = text::files(&data.join("oom"));
        ooms.push(OOM_LINE.to_string());
        Corpus { plans, plan_texts, imports, ooms, planned }
    }
}

/// A plan file's text: structured, value-mutated, byte-mutated, char-mutated (Unicode in names and values), or about
/// a mebibyte long.
pub fn plan_text(rng: &mut Rng, c: &Corpus) -> String {
    let k = rng.below(c.plans.len() as u64) as usize;
    let other = &c.plan_texts[rng.below(c.plan_texts.len() as u64) as usize];
    match rng.below(100) {
        0..30 => serde_json::to_string(&plans::structured(rng)).unwrap_or_default(),
        30..60 => serde_json::to_string(&plans::mutate_value(rng, &c.plans[k])).unwrap_or_default(),
        60..85 => plans::mutate_bytes(rng, &c.plan_texts[k], other),
        85..98 => text::mutate(rng, &c.plan_texts[k], other),
        _ => text::around(rng, &c.plan_texts[k], MAX_PLAN_BYTES),
    }
}

/// Free text from `seeds`, mutated, or about a mebibyte of it.
fn free_text(rng: &mut Rng, seeds: &[String]) -> String {
    let a = &seeds[rng.below(seeds.len() as u64) as usize];
    let b = &seeds[rng.below(seeds.len() as u64) as usize];
    match rng.below(100) {
        0..5 => a.clone(),
        5..98 => text::mutate(rng, a, b),
        _ => text::around(rng, a, MAX_PLAN_BYTES),
    }
}

/// An OOM log: a seed mutated, padded so that a multi-byte character straddles the reader's 4,000-byte cut, or about
/// a mebibyte.
fn oom_text(rng: &mut Rng, c: &Corpus) -> String {
    if rng.chance(5) {
        let pad = 3999usize.saturating_sub(OOM_LINE.len() - OOM_LINE.find("Tried").unwrap_or(0));
        return format!("{OOM_LINE}{}{}", "x".repeat(pad), text::unicode(rng, 16));
    }
    free_text(rng, &c.ooms)
}

/// A page URL hash carrying a plan (`#plan=<base64url>`, sometimes with `base=` and flags, sometimes not base64url at
/// all), or a kept plan's text (no `#`).
fn share_text(rng: &mut Rng, c: &Corpus) -> String {
    let encode = |t: &str| share::base64url_encode(t.as_bytes());
    match rng.below(10) {
        0..6 => format!("#plan={}", encode(&plan_text(rng, c))),
        6 => format!("#embed=1&base={}&plan={}", encode(&plan_text(rng, c)), encode(&plan_text(rng, c))),
        7 => {
            let noise = text::unicode(rng, 64);
            format!("#plan={}", text::mutate(rng, &encode(&c.plan_texts[0]), &noise))
        }
        8 => {
            let len: usize = *rng.pick(&[64 * 1024, 64 * 1024 + 4, 1 << 20]);
            format!("#plan={}", "A".repeat(len))
        }
        _ => plan_text(rng, c),
    }
}

pub fn input(kind: Kind, rng: &mut Rng, c: &Corpus) -> String {
    match kind {
        Kind::Plan | Kind::Search => plan_text(rng, c),
        Kind::Import(Some(Format::Plan)) => plan_text(rng, c),
        Kind::Import(_) => free_text(rng, &c.imports),
        Kind::Oom | Kind::OomWithPlan => oom_text(rng, c),
        Kind::Share => share_text(rng, c),
    }
}

/// Runs `kind` on `text` (`pick` chooses the seed plan, the rank, the `top`). Returns whether the input was read (not
/// an input error).
pub fn run(kind: Kind, text: &str, pick: u64, c: &Corpus) -> bool {
    match kind {
        Kind::Plan => {
            let read = plan_str(text).map(|r| ExportKind::ALL.iter().for_each(|&k| drop(std::hint::black_box(export(k, &r.plan, &r)))));
            if let Ok(v) = meshplan_core::plan::read_json(text) {
                std::hint::black_box(memory_value(&v).ok());
            }
            read.is_ok()
        }
        Kind::Import(from) => {
            let opts = ImportOptions { from, ..Default::default() };
            imports::import_plan(text, &opts).map(|(_, p, _)| std::hint::black_box(export::plan_json(&p))).is_ok()
        }
        Kind::Oom => oom::parse_message(text).is_ok(),
        Kind::OomWithPlan => {
            let (v, r) = &c.planned[(pick % c.planned.len() as u64) as usize];
            let rank = [None, Some(0), Some(pick >> 8), Some(u64::MAX)][(pick % 4) as usize];
            oom::explain(v, r, text, rank).is_ok()
        }
        Kind::Share => match text.strip_prefix('#') {
            Some(_) => ["plan", "base"].iter().filter_map(|k| share::hash_param(text, k)).map(share::decode_shared).all(|r| r.is_ok()),
            None => meshplan_core::plan::read_json(text).is_ok_and(|v| share::vet(&v).is_ok()),
        },
        Kind::Search => {
            let top = [1usize, 5, 1000, 1_000_000_000, usize::MAX][(pick % 5) as usize];
            search_str(text, &SearchOptions { top, ..Default::default() }).is_ok()
        }
    }
}
