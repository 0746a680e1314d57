//! meshplan's memory against published measurements (reference/measured_memory.json):
//!
//!     cargo run --release -p meshplan-core --example memory_rows [-- --terms]
//!
//! For every row: the measured allocator peak, meshplan's allocator peak for the row's plan as published, and for
//! the plan with the settings of the recipe its source names added (`recipe_settings`), with the errors. Rows the
//! source reported at iteration 1 also get that iteration's peak, read off the same terms: before the first optimizer
//! step the Adam moments do not exist yet (Megatron-Core creates them lazily in the step), and TE CUDA graphs are
//! captured only after their warm-up iterations. `--terms` prints every stage's labelled terms of the recipe plan.
//! A measurement, not a test: nothing is fitted per row (docs/memory-validation.md discusses each row).

use meshplan_core::memory::{MemoryReport, Phase, StageMemory, TermKey};
use serde_json::Value;

const ROWS: &str = include_str!("../../../reference/measured_memory.json");

/// Megatron Bridge prints GB = 1e9 B (train_utils.py report_memory); the rows are in GB.
const GB: f64 = 1e9;

fn merge(base: &mut Value, extra: &Value) {
    if let (Some(b), Some(e)) = (base.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            match b.get_mut(k) {
                Some(slot) if slot.is_object() && v.is_object() => merge(slot, v),
                _ => {
                    b.insert(k.clone(), v.clone());
                }
            }
        }
    }
}

fn term(s: &StageMemory, key: TermKey) -> u64 {
    s.terms.iter().filter(|t| t.key == key).map(|t| t.bytes).sum()
}

/// The allocator peak at iteration 1: no Adam moments before the first step, no CUDA-graph buffers before capture.
fn iteration_one(s: &StageMemory) -> u64 {
    let (moments, graphs) = (term(s, TermKey::OptimizerMoments), term(s, TermKey::CudaGraphBuffers));
    (s.forward_backward_bytes.saturating_sub(moments + graphs)).max(s.optimizer_step_bytes.saturating_sub(graphs))
}

/// The stage the row's measurement comes from: rank 0 when the metric says so, else the peak stage.
fn measured_stage<'a>(row: &Value, m: &'a MemoryReport) -> Option<&'a StageMemory> {
    let rank0 = row["metric"].as_str().is_some_and(|t| t.contains("rank 0"));
    if rank0 { m.stages.first() } else { m.stages.iter().max_by_key(|s| s.allocated_bytes) }
}

fn main() {
    let show_terms = std::env::args().any(|a| a == "--terms");
    let rows: Value = serde_json::from_str(ROWS).expect("reference/measured_memory.json is JSON");
    println!(
        "{:9} {:>8} | {:>9} {:>6} | {:>9} {:>6} {:>5} {:>15} | {:>7} {:>6}",
        "row", "measured", "published", "error", "+recipe", "error", "stage", "bound by", "iter 1", "error"
    );
    let (mut within, mut known) = (0, 0);
    for row in rows["rows"].as_array().into_iter().flatten() {
        let measured = row["measured_peak_gb"].as_f64().unwrap_or(f64::NAN);
        let published = meshplan_core::report::memory_value(&row["plan"]).ok();
        let mut with_recipe = row["plan"].clone();
        merge(&mut with_recipe, &row["recipe_settings"]);
        let recipe = meshplan_core::report::memory_value(&with_recipe).ok();
        let err = |gb: f64| format!("{:+.1}%", 100.0 * (gb - measured) / measured);
        let (pub_gb, pub_err) = match published.as_ref().and_then(|m| measured_stage(row, m)) {
            Some(s) => (format!("{:.1}", s.allocated_bytes as f64 / GB), err(s.allocated_bytes as f64 / GB)),
            None => ("-".into(), "-".into()),
        };
        let Some(m) = recipe.as_ref() else {
            println!("{:9} {measured:8.1} | {pub_gb:>9} {pub_err:>6} | no report", row["id"].as_str().unwrap_or("?"));
            continue;
        };
        let Some(s) = measured_stage(row, m) else { continue };
        let gb = s.allocated_bytes as f64 / GB;
        let iter1 = row["reported_at_iteration"].as_u64() == Some(1);
        let (it_gb, it_err) = if iter1 {
            let peak = m.stages.iter().map(iteration_one).max().unwrap_or(0) as f64 / GB;
            (format!("{peak:.1}"), err(peak))
        } else {
            ("".into(), "".into())
        };
        let compared = if iter1 { it_gb.parse::<f64>().unwrap_or(gb) } else { gb };
        known += 1;
        if ((compared - measured) / measured).abs() <= 0.10 {
            within += 1;
        }
        let bound = match s.bound_by {
            Phase::OptimizerStep => "optimizer step",
            _ => "forward/backward",
        };
        println!(
            "{:9} {measured:8.1} | {pub_gb:>9} {pub_err:>6} | {gb:9.1} {:>6} {:>5} {bound:>15} | {it_gb:>7} {it_err:>6}",
            row["id"].as_str().unwrap_or("?"),
            err(gb),
            s.pipeline_rank
        );
        if show_terms {
            for st in &m.stages {
                println!(
                    "    stage {} ({} layers, {:.2} microbatches in flight): allocated {:.2} GB, fwd/bwd {:.2}, step {:.2}, device {:.2}, host {:.2}",
                    st.pipeline_rank,
                    st.num_layers,
                    st.microbatches_in_flight,
                    st.allocated_bytes as f64 / GB,
                    st.forward_backward_bytes as f64 / GB,
                    st.optimizer_step_bytes as f64 / GB,
                    st.total_bytes as f64 / GB,
                    st.host_bytes as f64 / GB
                );
                for t in &st.terms {
                    println!("      {:>9.3} GB  {:<16} {}", t.bytes as f64 / GB, t.phase.label(), t.label);
                }
            }
        }
    }
    println!("{within}/{known} within 10% (with the recipe's settings; iteration-1 rows at iteration 1)");
}
