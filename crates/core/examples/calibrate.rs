//! Fits the performance model's free constants on published training runs and writes data/perf_constants.json.
//!
//!     cargo run --release -p meshplan-core --example calibrate [-- path/to/calibration_runs.json] [--check]
//!
//! Each run becomes a Plan (model preset or the published architecture, GPU, layout, batch, precision). The
//! measured rate is recomputed with meshplan's own FLOP count (Megatron's formula) from the published step time
//! or tokens/s, or taken from the published model TFLOP/s; measured and predicted MFU are both over the dense peak
//! of the run's precision, so rows whose MFU was published against another basis compare correctly. A deterministic
//! coordinate search over fixed grids minimises the median |MFU error|. With `--check` nothing is written.
#![allow(dead_code)]

use meshplan_core::perf::{self, Constants};
use meshplan_core::{Derived, Plan, plan_value};
use serde_json::{Value, json};

/// The published runs, kept in the repository (a copy of the shared reference file, sources per row).
pub const DEFAULT_RUNS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../reference/calibration_runs.json");

pub struct Run {
    pub id: String,
    pub label: String,
    pub plan: Plan,
    pub derived: Derived,
    /// Measured model FLOP/s per GPU over the dense peak of the run's precision.
    pub measured_mfu: f64,
}

fn u(r: &Value, k: &str) -> Option<u64> {
    r.get(k).and_then(Value::as_u64)
}
fn f(r: &Value, k: &str) -> Option<f64> {
    r.get(k).and_then(Value::as_f64)
}

/// Public architectures of models the runs name without a meshplan preset (from their published configs).
fn named_architecture(name: &str) -> Option<Value> {
    let n = name.to_ascii_lowercase();
    let llama2 = |l: u64, h: u64, a: u64, g: u64, ffn: u64| {
        json!({"num_layers": l, "hidden_size": h, "num_attention_heads": a, "num_query_groups": g, "ffn_hidden_size": ffn,
               "vocab_size": 32000, "gated_linear_unit": true, "activation_func": "silu", "normalization": "RMSNorm",
               "add_bias_linear": false, "position_embedding_type": "rope", "share_embeddings_and_output_weights": false})
    };
    // Llama 2 (meta-llama/Llama-2-*-hf config.json).
    if n.starts_with("llama2-7b") {
        return Some(llama2(32, 4096, 32, 32, 11008));
    }
    if n.starts_with("llama2-13b") {
        return Some(llama2(40, 5120, 40, 40, 13824));
    }
    if n.starts_with("llama2-70b") {
        return Some(llama2(80, 8192, 64, 8, 28672));
    }
    // Nemotron-4 15B (arXiv 2402.16819 Table 1): 32 layers, h 6144, 48 heads, 8 KV heads, squared-ReLU MLP 4h, vocab 256k.
    if n.starts_with("nemotron-4 15b") {
        return Some(json!({"num_layers": 32, "hidden_size": 6144, "num_attention_heads": 48, "num_query_groups": 8,
                           "ffn_hidden_size": 24576, "vocab_size": 256000, "gated_linear_unit": false,
                           "activation_func": "squared_relu", "add_bias_linear": false, "position_embedding_type": "rope",
                           "share_embeddings_and_output_weights": false}));
    }
    // Grok-1 (xai-org/grok-1 model.py): 64 layers, h 6144, 48 heads, 8 KV heads, 8 experts top-2, expert FFN 32768.
    if n.starts_with("grok-1") {
        return Some(json!({"num_layers": 64, "hidden_size": 6144, "num_attention_heads": 48, "num_query_groups": 8,
                           "kv_channels": 128, "ffn_hidden_size": 32768, "vocab_size": 131072, "gated_linear_unit": true,
                           "activation_func": "gelu", "add_bias_linear": false, "position_embedding_type": "rope",
                           "num_moe_experts": 8, "moe_router_topk": 2, "moe_ffn_hidden_size": 32768,
                           "share_embeddings_and_output_weights": false}));
    }
    None
}

/// The model object of a run: preset key, a named architecture, or the GPT-style `derived.arch` (FFN 4h, GELU).
fn model_of(r: &Value) -> Result<Value, String> {
    let layers = u(r, "num_layers_override");
    let mut m = if let Some(k) = r.get("model_key").and_then(Value::as_str) {
        if meshplan_core::presets::model(k).is_none() {
            return Err(format!("no preset {k}"));
        }
        json!({"preset": k})
    } else if let Some(a) = named_architecture(r["model"].as_str().unwrap_or("")) {
        a
    } else if let Some(a) = r.get("derived").and_then(|d| d.get("arch")) {
        let h = u(a, "hidden").ok_or("arch without hidden")?;
        // MHA FLOPs do not depend on the head count (q = heads·head_dim = h); when unpublished any divisor of h will do.
        let heads = u(a, "heads").unwrap_or(if h % 128 == 0 { h / 128 } else { (h / 64).max(1) });
        json!({"num_layers": u(a, "layers").ok_or("arch without layers")?, "hidden_size": h,
               "num_attention_heads": heads, "ffn_hidden_size": 4 * h,
               "vocab_size": u(a, "vocab").unwrap_or(51200), "activation_func": "gelu"})
    } else {
        return Err("architecture not published".into());
    };
    if let Some(l) = layers {
        m["num_layers"] = json!(l);
    }
    Ok(m)
}

/// Maps a published run to a plan, or says why it cannot be.
pub fn map_run(r: &Value) -> Result<Run, String> {
    let id = r["id"].as_str().unwrap_or("?").to_string();
    if r.get("task").and_then(Value::as_str) == Some("lora") {
        return Err("LoRA: frozen base weights, not the pretraining FLOP count".into());
    }
    let model = model_of(r)?;
    let gpu = match r.get("gpu_type").and_then(Value::as_str).unwrap_or("") {
        "H100-SXM-80GB" => "h100-sxm-80gb",
        "A100-SXM-80GB" => "a100-sxm-80gb",
        "GB200" => "gb200",
        "H800" => "h800",
        other => return Err(format!("GPU {other:?} not in the catalogue")),
    };
    let precision = match r.get("precision_normalized").and_then(Value::as_str) {
        Some("bf16") => "bf16",
        Some("fp16") => "fp16",
        Some(p) if p.contains("fp8") => "fp8",
        _ => return Err("precision not published".into()),
    };
    let n = u(r, "num_gpus").ok_or("GPU count not published")?;
    let (seq, gbs) = (u(r, "seq_len").ok_or("no seq_len")?, u(r, "gbs").ok_or("no global batch")?);
    let tp = u(r, "tp").unwrap_or(1);
    let recompute = match r.get("recompute").and_then(Value::as_str) {
        Some(s) if s.contains("full") => "full",
        Some(s) if s.contains("selective") || s.contains("recomputed") => "selective",
        // A row without the field may still state it in its notes ("full activation recompute was used").
        _ if r["notes"].as_str().unwrap_or("").to_ascii_lowercase().contains("full activation recompute") => "full",
        _ => "none",
    };
    let mut par = json!({"tensor_model_parallel_size": tp, "pipeline_model_parallel_size": u(r, "pp").unwrap_or(1),
                         "context_parallel_size": u(r, "cp").unwrap_or(1), "expert_model_parallel_size": u(r, "ep").unwrap_or(1),
                         "sequence_parallel": r.get("sequence_parallel").and_then(Value::as_bool).unwrap_or(tp > 1)});
    if let Some(v) = u(r, "vp").filter(|&v| v > 1) {
        par["virtual_pipeline_model_parallel_size"] = json!(v);
    }
    if let Some(e) = u(r, "etp") {
        par["expert_tensor_parallel_size"] = json!(e);
    }
    let plan_json = json!({"model": model, "cluster": {"gpu": gpu, "num_gpus": n},
        "training": {"seq_length": seq, "micro_batch_size": u(r, "mbs").unwrap_or(1), "global_batch_size": gbs,
                     "precision": precision, "recompute_granularity": recompute,
                     "use_distributed_optimizer": r.get("distributed_optimizer").and_then(Value::as_bool).unwrap_or(true)},
        "parallelism": par});
    let report = plan_value(&plan_json).map_err(|e| format!("plan: {}", e.message))?;
    if report.derived.world_size != n {
        return Err(format!("{n} GPUs is not a whole number of nodes"));
    }
    if report.performance.is_none() {
        return Err("layout does not divide the world size / batch".into());
    }
    let flops = perf::model_flops_per_step(&report.plan, &report.derived);
    let world = n as f64;
    // Measured model FLOP/s per GPU: our FLOP count over the published step time (or tokens/s); else the published
    // model TFLOP/s (Narayanan 2021 counts the recomputed forward too: ×3/4 removes it).
    let achieved = if let Some(t) = f(r, "step_time_s").filter(|&t| t > 0.0) {
        flops / t / world
    } else if let Some(tps) = f(r, "tokens_per_s_per_gpu").filter(|&x| x > 0.0) {
        flops / (report.derived.tokens_per_step as f64 / (tps * world)) / world
    } else if let Some(tf) = f(r, "model_tflops_per_gpu").or_else(|| Some(f(r, "mfu_percent")? / 100.0 * f(r, "mfu_peak_basis_tflops")?)) {
        let with_recompute = r["framework"].as_str().unwrap_or("").contains("2021");
        tf * 1e12 * if with_recompute { 0.75 } else { 1.0 }
    } else {
        return Err("no step time, tokens/s or TFLOP/s published".into());
    };
    let pf = perf::estimate(&report.plan, &report.derived);
    let peak = if pf.mfu > 0.0 { pf.model_tflops_per_gpu * 1e12 / pf.mfu } else { 0.0 };
    if peak <= 0.0 {
        return Err("no peak for the precision".into());
    }
    let label = format!("{} {}×{} {} tp{} pp{} cp{} ep{}", r["model"].as_str().unwrap_or("?"), n, gpu, precision, tp,
        u(r, "pp").unwrap_or(1), u(r, "cp").unwrap_or(1), u(r, "ep").unwrap_or(1));
    Ok(Run { id, label, plan: report.plan, derived: report.derived, measured_mfu: achieved / peak })
}

/// Runs mapped, and (id, reason) of those skipped.
pub type Loaded = (Vec<Run>, Vec<(String, String)>);

pub fn load(path: &str) -> Result<Loaded, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let rows: Vec<Value> = serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))?;
    let (mut runs, mut skipped) = (Vec::new(), Vec::new());
    for r in &rows {
        match map_run(r) {
            Ok(run) => runs.push(run),
            Err(why) => skipped.push((r["id"].as_str().unwrap_or("?").to_string(), why)),
        }
    }
    Ok((runs, skipped))
}

pub fn errors(runs: &[Run], c: &Constants) -> Vec<f64> {
    runs.iter().map(|r| perf::estimate_with(&r.plan, &r.derived, c).mfu - r.measured_mfu).collect()
}

/// (median, p90) of |error|.
pub fn summary(errs: &[f64]) -> (f64, f64) {
    let mut a: Vec<f64> = errs.iter().map(|e| e.abs()).collect();
    a.sort_by(f64::total_cmp);
    if a.is_empty() {
        return (0.0, 0.0);
    }
    let q = |p: f64| a[((a.len() - 1) as f64 * p).round() as usize];
    (q(0.5), q(0.9))
}

fn objective(runs: &[Run], c: &Constants) -> f64 {
    let (med, p90) = summary(&errors(runs, c));
    // Median first; p90 breaks ties between equally good medians.
    med + 1e-3 * p90
}

fn grid(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    (0..n).map(|i| ((lo + (hi - lo) * i as f64 / (n - 1) as f64) * 1e4).round() / 1e4).collect()
}

type Field = (&'static str, fn(&mut Constants) -> &mut f64, Vec<f64>);

pub fn fit(runs: &[Run]) -> Constants {
    let mut c = perf::DEFAULT_CONSTANTS;
    let fields: Vec<Field> = vec![
        ("bf16_efficiency", |c| &mut c.bf16_efficiency, grid(0.30, 0.95, 66)),
        ("fp8_efficiency", |c| &mut c.fp8_efficiency, grid(0.20, 0.80, 61)),
        ("gemm_width_half", |c| &mut c.gemm_width_half, grid(0.0, 1024.0, 33)),
        ("moe_efficiency", |c| &mut c.moe_efficiency, grid(0.2, 1.0, 33)),
        ("tp_exposed", |c| &mut c.tp_exposed, grid(0.0, 1.0, 21)),
        ("cp_exposed", |c| &mut c.cp_exposed, grid(0.0, 1.0, 21)),
        ("ep_exposed", |c| &mut c.ep_exposed, grid(0.0, 1.0, 21)),
        ("dp_exposed", |c| &mut c.dp_exposed, grid(0.0, 1.0, 21)),
    ];
    let mut best = objective(runs, &c);
    for _sweep in 0..6 {
        let before = best;
        for (_, get, values) in &fields {
            for &v in values {
                let mut t = c;
                *get(&mut t) = v;
                let o = objective(runs, &t);
                if o < best - 1e-12 {
                    best = o;
                    c = t;
                }
            }
        }
        if best >= before - 1e-12 {
            break;
        }
    }
    c
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let check = args.iter().any(|a| a == "--check");
    let path = args.iter().find(|a| !a.starts_with("--")).cloned().unwrap_or_else(|| DEFAULT_RUNS.to_string());
    let (runs, skipped) = match load(&path) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let c = if check { *perf::constants() } else { fit(&runs) };
    let errs = errors(&runs, &c);
    let (med, p90) = summary(&errs);
    println!("{:<9} {:>8} {:>8} {:>7}  run", "id", "measured", "model", "error");
    let mut order: Vec<usize> = (0..runs.len()).collect();
    order.sort_by(|&a, &b| errs[b].abs().total_cmp(&errs[a].abs()).then(a.cmp(&b)));
    for &i in &order {
        let r = &runs[i];
        println!("{:<9} {:>7.1}% {:>7.1}% {:>+6.1}  {}", r.id, 100.0 * r.measured_mfu, 100.0 * (r.measured_mfu + errs[i]), 100.0 * errs[i], r.label);
    }
    println!("\nskipped {} runs:", skipped.len());
    for (id, why) in &skipped {
        println!("  {id}: {why}");
    }
    println!("\nconstants: {}", serde_json::to_string_pretty(&c).unwrap_or_default());
    println!("runs used {} / skipped {}; median |MFU error| {:.2} pts, p90 {:.2} pts", runs.len(), skipped.len(), 100.0 * med, 100.0 * p90);
    if !check {
        let file = json!({
            "comment": "Fitted by `cargo run --release -p meshplan-core --example calibrate` on reference/calibration_runs.json (see docs/calibration.md). Do not edit by hand.",
            "runs_used": runs.len(), "runs_skipped": skipped.len(),
            "median_abs_mfu_error": (med * 1e4).round() / 1e4, "p90_abs_mfu_error": (p90 * 1e4).round() / 1e4,
            "constants": c,
        });
        let out = concat!(env!("CARGO_MANIFEST_DIR"), "/data/perf_constants.json");
        let text = serde_json::to_string_pretty(&file).unwrap_or_default() + "\n";
        if let Err(e) = std::fs::write(out, text) {
            eprintln!("error: {out}: {e}");
            std::process::exit(1);
        }
        println!("wrote {out}");
    }
}
