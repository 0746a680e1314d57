//! Where the advisor ranks NVIDIA's published, tuned layouts: for every Megatron Bridge performance-table run in a runs
//! file (`reference/calibration_runs.json` by default; `reference/validation_runs.json` has the same schema), search
//! the same model preset, GPU, GPU count, sequence length, global batch and precision, and report the rank of the
//! published layout (TP, PP, VPP, CP, EP, micro-batch) among the search's picks, and its predicted throughput against
//! the best predicted (planned directly, best of the recompute variants, when it is not among the picks).
//!
//! ```text
//! cargo run --release -p meshplan-core --example advisor_ranks                      # the calibration runs
//! cargo run --release -p meshplan-core --example advisor_ranks -- reference/validation_runs.json
//! ```
//!
//! Each search's base plan says nothing of `defaults`, so the search runs each layout with the speed settings tuned
//! defaults assume where Megatron accepts them for it (`search::read_for_search`, docs/advisor.md); `--tuned` states
//! `"defaults": "tuned"` (the same), `--plain` asks for Megatron-Core's plain defaults (the search before issue 23's
//! ask 5).
//!
//! With `--recipe-settings`, each search starts from the speed settings of the row's Megatron Bridge perf recipe
//! (`reference/bridge_perf_settings.json` where present: overlapped DP communication, CUDA graphs, the MoE dispatcher
//! and its backend, EP all-to-all overlap, recompute modules for the selective variant) instead of the plan defaults.
//!
//! Rows whose layout is not a Megatron-Core one the search proposes (Megatron-FSDP, a model without a preset) are
//! listed and left out of the summary. The figures are in docs/advisor.md.

use meshplan_core::pipeline::layout::even_text;
use meshplan_core::plan_value;
use meshplan_core::search::{self, Candidate, SearchOptions};
use serde_json::{Value, json};

#[path = "shared/bridge_entry.rs"]
mod shared;
use std::time::Instant;

/// How many picks the search returns here: enough to find a published layout ranked below the top 5.
const TOP: usize = 50;

fn u(r: &Value, k: &str) -> Option<u64> {
    r.get(k).and_then(Value::as_u64)
}

/// The plan precision and FP8 recipe of a published precision. Bridge 25.09 rows without one ran the table's primary
/// FP8 recipe (per-tensor current scaling, the page's footnote; the parenthesised variant is its own row).
fn precision_of(r: &Value) -> (&'static str, Option<&'static str>) {
    match r.get("precision_normalized").and_then(Value::as_str) {
        Some("bf16") => ("bf16", None),
        Some("fp8_blockwise") => ("fp8", Some("blockwise")),
        Some("fp8_block32x32") | Some("mxfp8") => ("fp8", Some("mxfp8")),
        Some(p) if p.contains("fp4") => ("fp4", None),
        _ => ("fp8", Some("tensorwise")),
    }
}

/// The Bridge perf-recipe entry of a row.
fn recipe_entry<'a>(settings: &'a [Value], r: &Value, recipe: Option<&str>) -> Option<&'a Value> {
    let name = shared::entry_name(r, recipe)?;
    settings.iter().find(|e| e["name"].as_str() == Some(name.as_str()))
}

/// Writes the recipe entry's speed settings into the search's base plan (the layout and recompute granularity stay
/// the search's to choose).
fn apply_recipe(t: &mut Value, e: &Value) {
    t["overlap_grad_reduce"] = json!(true);
    t["overlap_param_gather"] = json!(true);
    for key in ["cuda_graph_impl", "cuda_graph_scope", "recompute_modules"] {
        if !e[key].is_null() {
            t[key] = e[key].clone();
        }
    }
    // Bridge's MoE recipes set the alltoall dispatcher (settings.rs, moe_token_dispatcher_type); a flex backend
    // turns it into flex.
    if e["expert_model_parallel_size"].as_u64().is_some_and(|ep| ep > 1) {
        t["moe_token_dispatcher_type"] = json!("alltoall");
    }
    if let Some(b) = e["moe_flex_dispatcher_backend"].as_str() {
        t["moe_token_dispatcher_type"] = json!("flex");
        t["moe_flex_dispatcher_backend"] = json!(b);
    }
    if e["moe_a2a_overlap"].as_bool() == Some(true) {
        t["overlap_moe_expert_parallel_comm"] = json!(true);
    }
}

fn gpu_of(r: &Value) -> Option<&'static str> {
    Some(match r.get("gpu_type").and_then(Value::as_str)? {
        "H100-SXM-80GB" => "h100-sxm-80gb",
        "H200" | "H200-SXM-141GB" => "h200-sxm-141gb",
        "B200" => "b200",
        "B300" => "b300",
        "GB200" => "gb200",
        "GB300" => "gb300",
        _ => return None,
    })
}

/// The published layout: TP, PP, VPP, CP, EP, micro-batch.
type Layout = [u64; 6];

fn layout_of(c: &Candidate) -> Layout {
    let p = &c.parallelism;
    [
        p.tensor_model_parallel_size,
        p.pipeline_model_parallel_size,
        p.virtual_pipeline_model_parallel_size.unwrap_or(1),
        p.context_parallel_size,
        p.expert_model_parallel_size,
        c.training.micro_batch_size,
    ]
}

/// The published layout planned directly: the best throughput over the recompute variants the search tries, with the
/// distributed optimizer; a layout the split cannot divide gets the even `pipeline_model_parallel_layout`. Err: the
/// first error code of the best-fitting variant.
fn planned(base: &Value, l: Layout, etp: Option<u64>, layers: u64, mtp: u64) -> Result<f64, String> {
    let mut first_error = String::from("no variant");
    let mut best: Option<f64> = None;
    // The search's variants: no, selective and full recompute, and where memory is tight the optimizer on the CPU and
    // the module lists it tries (search.rs MODULE_SUBSETS, OFFLOAD_FRACTIONS); a variant the rules reject is skipped.
    let variants: [(&str, Option<Value>, Option<f64>); 9] = [
        ("none", None, None),
        ("selective", None, None),
        ("full", None, None),
        ("none", None, Some(1.0)),
        ("none", None, Some(0.5)),
        ("selective", Some(json!(["mlp"])), None),
        ("selective", Some(json!(["layernorm"])), None),
        ("selective", Some(json!(["moe_act"])), None),
        ("selective", Some(json!(["layernorm", "moe_act"])), None),
    ];
    for (recompute, modules, offload) in variants {
        let mut v = base.clone();
        if let Some(m) = modules {
            v["training"]["recompute_modules"] = m;
        }
        if let Some(f) = offload {
            v["training"]["optimizer_cpu_offload"] = json!(true);
            v["training"]["optimizer_offload_fraction"] = json!(f);
        }
        let mut par = json!({"tensor_model_parallel_size": l[0], "pipeline_model_parallel_size": l[1],
            "context_parallel_size": l[3], "expert_model_parallel_size": l[4], "sequence_parallel": l[0] > 1});
        if l[2] > 1 {
            par["virtual_pipeline_model_parallel_size"] = json!(l[2]);
        }
        if let Some(e) = etp {
            par["expert_tensor_parallel_size"] = json!(e);
        }
        if l[1] > 1 && layers % (l[1] * l[2]) != 0 {
            par["pipeline_model_parallel_layout"] = json!(even_text(layers, mtp, l[1] * l[2]));
        }
        v["parallelism"] = par;
        v["training"]["micro_batch_size"] = json!(l[5]);
        // As the search does: EP > 1 on Megatron-Core's default allgather dispatcher runs alltoall (with tuned defaults
        // the plan takes the recipe's dispatcher, or alltoall where Megatron rejects it).
        if l[4] > 1 && v["training"]["moe_token_dispatcher_type"].is_null() && v["defaults"] == json!("megatron-core") {
            v["training"]["moe_token_dispatcher_type"] = json!("alltoall");
        }
        v["training"]["recompute_granularity"] = json!(recompute);
        v["training"]["use_distributed_optimizer"] = json!(true);
        if recompute == "full" {
            v["training"]["recompute_method"] = json!("uniform");
            v["training"]["recompute_num_layers"] = json!(1);
        }
        let Ok(rep) = plan_value(&v) else { continue };
        match (&rep.performance, rep.diagnostics.iter().find(|d| d.is_error())) {
            (Some(p), None) => best = Some(best.map_or(p.tokens_per_s_per_gpu, |b: f64| b.max(p.tokens_per_s_per_gpu))),
            (_, Some(d)) if best.is_none() => first_error = d.code.as_str().to_string(),
            _ => {}
        }
    }
    best.ok_or(first_error)
}

#[derive(Default)]
struct Tally {
    rows: u64,
    top1: u64,
    top5: u64,
    within10: u64,
    in_space: u64,
    nothing: u64,
    ratios: Vec<f64>,
    ms: Vec<f64>,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let with_recipe = args.iter().any(|a| a == "--recipe-settings");
    // --tuned: the search's base plan asks for tuned defaults (crate::tuned): the nearest perf recipe's speed settings
    // for what the row leaves unstated (docs/tuned.md).
    let tuned = args.iter().any(|a| a == "--tuned");
    let plain = args.iter().any(|a| a == "--plain");
    let path = args.iter().find(|a| !a.starts_with("--")).cloned().unwrap_or_else(|| "reference/calibration_runs.json".into());
    let settings: Vec<Value> = match std::fs::read_to_string("reference/bridge_perf_settings.json") {
        Ok(t) if with_recipe => serde_json::from_str(&t).expect("a JSON list of recipe entries"),
        _ => Vec::new(),
    };
    let mut with_settings = 0u64;
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let runs: Vec<Value> = serde_json::from_str(&text).expect("a JSON list of runs");
    let mut t = Tally::default();
    println!("{:<13} {:<16} {:<6} {:>5} {:<8} {:<28} {:>5} {:>6} {:>8} {:>7}  best pick", "id", "model", "gpu", "gpus", "prec", "published TP/PP/VPP/CP/EP/mbs", "found", "rank", "pub/best", "ms");
    for r in &runs {
        let id = r["id"].as_str().unwrap_or("?");
        let bridge_table = r["source_type"] == "vendor_benchmark_table" && r["framework"].as_str().unwrap_or("").contains("Megatron-Bridge");
        if !bridge_table {
            continue;
        }
        let model = r["model_key"].as_str().filter(|m| *m != "None");
        let (Some(model), Some(gpu)) = (model, gpu_of(r)) else {
            println!("{id:<13} skipped: no model preset or GPU ({:?}, {:?})", r["model"], r["gpu_type"]);
            continue;
        };
        if u(r, "fsdp").unwrap_or(0) > 0 {
            println!("{id:<13} skipped: Megatron-FSDP (not in the search space) {model} {gpu}");
            continue;
        }
        let (precision, recipe) = precision_of(r);
        let mut base = json!({"model": model, "cluster": {"gpu": gpu, "num_gpus": u(r, "num_gpus").unwrap_or(0)},
            "training": {"seq_length": u(r, "seq_len").unwrap_or(4096), "global_batch_size": u(r, "gbs").unwrap_or(1),
                         "precision": precision}});
        if let Some(rc) = recipe {
            base["training"]["fp8_recipe"] = json!(rc);
        }
        if tuned {
            base["defaults"] = json!("tuned");
        }
        if plain {
            base["defaults"] = json!("megatron-core");
        }
        if let Some(e) = recipe_entry(&settings, r, recipe) {
            apply_recipe(&mut base["training"], e);
            with_settings += 1;
        }
        let published: Layout = [
            u(r, "tp").unwrap_or(1),
            u(r, "pp").unwrap_or(1),
            u(r, "vp").unwrap_or(1).max(1),
            u(r, "cp").unwrap_or(1),
            u(r, "ep").unwrap_or(1),
            u(r, "mbs").unwrap_or(1),
        ];
        let opts = SearchOptions { top: TOP, ..SearchOptions::default() };
        let start = Instant::now();
        let res = match search::search_value(&base, &opts) {
            Ok(res) => res,
            Err(e) => {
                println!("{id:<13} search error: {}", e.message);
                continue;
            }
        };
        let ms = start.elapsed().as_secs_f64() * 1e3;
        let Some(best) = res.candidates.first() else {
            // Counted as searched, and as a miss on every measure.
            t.rows += 1;
            t.nothing += 1;
            println!("{id:<13} no layout found: {:?}", res.rejected_by);
            continue;
        };
        let rank = res.candidates.iter().position(|c| layout_of(c) == published);
        // Whether the search proposes the published layout at all: every valid layout within its TP, CP and micro-batch.
        let narrow = SearchOptions { top: 100_000, max_tp: published[0], max_cp: published[3], micro_batch_sizes: vec![published[5]] };
        let in_space = rank.is_some()
            || search::search_value(&base, &narrow).is_ok_and(|r| r.candidates.iter().any(|c| layout_of(c) == published));
        t.in_space += u64::from(in_space);
        let (layers, mtp) = match meshplan_core::parse_plan(&base) {
            Ok((p, _)) => (p.model.num_layers, p.model.mtp_num_layers),
            Err(_) => (0, 0),
        };
        let pub_tps = match rank {
            Some(i) => Ok(res.candidates[i].tokens_per_s_per_gpu),
            // Bridge's MoE perf recipes set expert_tensor_parallel_size 1 where the table leaves ETP out.
            None => planned(&base, published, u(r, "etp").or((published[4] > 1).then_some(1)), layers, mtp),
        };
        let ratio = pub_tps.as_ref().map(|x| x / best.tokens_per_s_per_gpu).ok();
        t.rows += 1;
        t.ms.push(ms);
        t.top1 += u64::from(rank == Some(0));
        t.top5 += u64::from(rank.is_some_and(|i| i < 5));
        t.within10 += u64::from(ratio.is_some_and(|x| x >= 0.9));
        if let Some(x) = ratio {
            t.ratios.push(x);
        }
        let bl = layout_of(best);
        println!(
            "{id:<13} {model:<16} {gpu:<6} {:>5} {:<8} {:<28} {:>5} {:>6} {:>8} {:>7.1}  {}",
            u(r, "num_gpus").unwrap_or(0),
            recipe.unwrap_or(precision),
            format!("{}/{}/{}/{}/{}/{}", published[0], published[1], published[2], published[3], published[4], published[5]),
            if in_space { "yes" } else { "no" },
            rank.map_or(format!(">{TOP}"), |i| (i + 1).to_string()),
            match (&pub_tps, ratio) {
                (_, Some(x)) => format!("{:.2}", x),
                (Err(code), _) => code.chars().take(8).collect(),
                _ => "-".into(),
            },
            ms,
            format!("{}/{}/{}/{}/{}/{} {:?}", bl[0], bl[1], bl[2], bl[3], bl[4], bl[5], best.training.recompute_granularity).to_lowercase()
        );
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    };
    let n = t.rows.max(1) as f64;
    if with_recipe {
        println!("\nrecipe settings applied to {with_settings} searches");
    }
    println!(
        "\n{} runs searched ({} found no layout): published layout proposed by the search {} ({:.0}%), top-1 {} ({:.0}%), top-5 {} ({:.0}%), within 10% of the best predicted {} ({:.0}%); median published/best {:.2}; search median {:.0} ms, max {:.0} ms",
        t.rows,
        t.nothing,
        t.in_space,
        100.0 * t.in_space as f64 / n,
        t.top1,
        100.0 * t.top1 as f64 / n,
        t.top5,
        100.0 * t.top5 as f64 / n,
        t.within10,
        100.0 * t.within10 as f64 / n,
        median(&mut t.ratios),
        median(&mut t.ms),
        t.ms.iter().copied().fold(0.0, f64::max)
    );
}
