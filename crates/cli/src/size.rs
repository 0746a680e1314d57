//! `meshplan size`: the cluster sizing (core `size::size_str`) as a table or its JSON. Prints only.

use crate::stdio::{Format, Input, emit, print_json, read_input, unreadable};
use clap::Args;
use meshplan_core::size::{SizeRequest, SizeResult};
use std::fmt::Write;
use std::process::ExitCode;

/// What to size, as the core reads it (each flag's text goes to `SizeRequest` unchanged).
#[derive(Args)]
pub(crate) struct SizeArgs {
    /// Tokens to train: 15T, 500B, 1.5e12
    #[arg(long, value_name = "N")]
    tokens: Option<String>,
    /// Or training steps (Megatron's train_iters) at the plan's global batch
    #[arg(long, value_name = "N")]
    steps: Option<String>,
    /// Wall-clock deadline: 30d, 12h, 2w
    #[arg(long, value_name = "DURATION")]
    deadline: Option<String>,
    /// GPU-hour budget: 500k, 2M
    #[arg(long = "gpu-hours", value_name = "N")]
    gpu_hours: Option<String>,
    /// Node counts to try: 16..512 (default 1 up to 65,536 GPUs)
    #[arg(long, value_name = "A..B")]
    nodes: Option<String>,
    /// Global batch the run accepts, in tokens per step: 4M..16M (instead of the plan's global_batch_size)
    #[arg(long = "batch-tokens", value_name = "A..B")]
    batch_tokens: Option<String>,
    /// Share of the best smaller count's throughput per GPU below which adding nodes stops paying (default 0.8)
    #[arg(long, value_name = "SHARE")]
    efficiency: Option<String>,
}

impl SizeArgs {
    fn request(&self) -> SizeRequest {
        SizeRequest {
            tokens: self.tokens.clone(),
            steps: self.steps.clone(),
            deadline: self.deadline.clone(),
            gpu_hours: self.gpu_hours.clone(),
            nodes: self.nodes.clone(),
            batch_tokens: self.batch_tokens.clone(),
            efficiency: self.efficiency.clone(),
        }
    }
}

/// Exit 0 when a count holds the model (and meets the deadline and the budget, where given), 1 when none does, 2 when
/// the input cannot be read.
pub(crate) fn cmd_size(input: &Input, args: &SizeArgs, format: Format) -> ExitCode {
    let text = match read_input(&input.file) {
        Ok(t) => t,
        Err(e) => return unreadable(e),
    };
    let r = match meshplan_core::size::size_str(&text, &args.request()) {
        Ok(r) => r,
        Err(e) => return unreadable(e),
    };
    match format {
        Format::Json => print_json(&r),
        Format::Table => emit(&table(&r)),
    }
    let missed = [
        (r.min_gpus.is_none(), "no count of the range holds the model".to_string()),
        (r.options.deadline_s.is_some() && r.fewest_nodes_meeting_deadline.is_none(), "no count tried meets the deadline".into()),
        (r.options.gpu_hours.is_some() && r.fastest_within_budget.is_none(), "no count tried fits the GPU-hour budget".into()),
    ];
    match missed.iter().find(|m| m.0) {
        Some((_, why)) => {
            eprintln!("meshplan size: {why}");
            ExitCode::from(1)
        }
        None => ExitCode::SUCCESS,
    }
}

fn days(s: f64) -> String {
    format!("{:.1}", s / 86_400.0)
}

fn layout(q: &meshplan_core::size::SizePoint) -> String {
    let Some(c) = &q.best else { return "-".into() };
    let p = &c.parallelism;
    let mut s = format!("TP{} PP{}", p.tensor_model_parallel_size, p.pipeline_model_parallel_size);
    if let Some(v) = p.virtual_pipeline_model_parallel_size {
        let _ = write!(s, " VPP{v}");
    }
    for (name, x) in [("CP", p.context_parallel_size), ("EP", p.expert_model_parallel_size)] {
        if x > 1 {
            let _ = write!(s, " {name}{x}");
        }
    }
    let _ = write!(s, " mbs{}", c.training.micro_batch_size);
    s
}

/// The sizing as a table: one row per count, then the answers and what was assumed.
pub(crate) fn table(r: &SizeResult) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{} on {} ({} per node), seq_length {}", r.model, r.gpu, r.gpus_per_node, r.seq_length);
    let _ = writeln!(
        s,
        "\n  {:>6} {:>7} {:>6} {:<26} {:>9} {:>10} {:>10} {:>6} {:>8} {:>5}  note",
        "nodes", "GPUs", "GBS", "layout", "days", "GPU-hours", "tok/s/GPU", "MFU", "peak GiB", "eff"
    );
    for q in &r.points {
        let mut note = Vec::new();
        if q.meets_deadline == Some(true) {
            note.push("meets deadline");
        }
        if q.within_budget == Some(true) {
            note.push("within budget");
        }
        let line = match (&q.best, q.time_to_train_s, q.gpu_hours) {
            (Some(c), Some(t), Some(h)) => format!(
                "  {:>6} {:>7} {:>6} {:<26} {:>9} {:>10.0} {:>10.0} {:>5.1}% {:>8.1} {:>4.0}%  {}",
                q.num_nodes,
                q.gpus,
                q.global_batch_size,
                layout(q),
                days(t),
                h,
                c.tokens_per_s_per_gpu,
                100.0 * c.mfu,
                c.peak_bytes as f64 / (1u64 << 30) as f64,
                100.0 * q.scaling_efficiency.unwrap_or(0.0),
                note.join(", ")
            ),
            _ => {
                let why = q.no_fit.as_ref().map_or(String::new(), |f| format!("{} [{}]", f.message, f.code));
                format!("  {:>6} {:>7} {:>6} {why}", q.num_nodes, q.gpus, q.global_batch_size)
            }
        };
        let _ = writeln!(s, "{line}");
    }
    s.push('\n');
    answers(r, &mut s);
    for (title, lines) in [("Assumed", &r.assumptions), ("Notes", &r.notes)] {
        if !lines.is_empty() {
            let _ = writeln!(s, "\n{title}:");
            for a in lines {
                let _ = writeln!(s, "  - {a}");
            }
        }
    }
    s
}

fn answers(r: &SizeResult, s: &mut String) {
    let at = |n: Option<u64>| r.points.iter().find(|q| Some(q.num_nodes) == n);
    let describe = |q: &meshplan_core::size::SizePoint| {
        format!(
            "{} nodes ({} GPUs), {}, {} days, {:.0} GPU-hours",
            q.num_nodes,
            q.gpus,
            layout(q),
            days(q.time_to_train_s.unwrap_or(0.0)),
            q.gpu_hours.unwrap_or(0.0)
        )
    };
    match r.min_gpus {
        Some(g) => _ = writeln!(s, "Fewest GPUs that hold the model: {g}"),
        None => _ = writeln!(s, "No count of {}..{} nodes holds the model", r.node_range.0, r.node_range.1),
    }
    if let Some(d) = r.options.deadline_s {
        match at(r.fewest_nodes_meeting_deadline) {
            Some(q) => _ = writeln!(s, "Fewest nodes meeting the {}-day deadline: {}", days(d), describe(q)),
            None => _ = writeln!(s, "No count tried meets the {}-day deadline", days(d)),
        }
    }
    if let Some(h) = r.options.gpu_hours {
        match at(r.fastest_within_budget) {
            Some(q) => _ = writeln!(s, "Fastest run within {h:.0} GPU-hours: {}", describe(q)),
            None => _ = writeln!(s, "No count tried fits {h:.0} GPU-hours"),
        }
    }
    if let Some(q) = at(r.fastest) {
        let _ = writeln!(s, "Fastest run tried: {}", describe(q));
    }
    if let Some(n) = r.efficiency_below_threshold_at {
        let _ = writeln!(s, "Throughput per GPU falls below {:.0}% of the best smaller count's at {n} nodes", 100.0 * r.efficiency_threshold);
    }
}
