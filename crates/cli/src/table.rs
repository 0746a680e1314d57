//! Readable text for the terminal: the same report as the JSON, laid out as tables.

use meshplan_core::memory::Location;
use meshplan_core::presets::Catalog;
use meshplan_core::pipeline::{ChunkRef, layout};
use meshplan_core::remedy::{self, Remedy};
use meshplan_core::{Report, Severity};
use std::fmt::Write;

fn gib(bytes: u64) -> String {
    format!("{:.2}", bytes as f64 / (1u64 << 30) as f64)
}

fn billions(n: u64) -> String {
    format!("{:.2}B", n as f64 / 1e9)
}

/// The pipeline's chunks, one line per rank in Megatron's pretty_repr style (`E t*4 | t*4 | … | t*1 m L`), when the
/// plan has virtual stages or a layout.
fn pipeline(r: &Report, s: &mut String) {
    let par = &r.plan.parallelism;
    let layout = par.pipeline_model_parallel_layout.as_ref();
    if layout.is_none() && par.vpp() <= 1 {
        return;
    }
    let d = &r.derived;
    let text = layout.map(|l| layout::as_text(l).unwrap_or_else(|| "(list form)".into()));
    let stages: usize = d.layers_per_chunk.iter().map(Vec::len).sum();
    let what = text.map_or("virtual chunks".to_string(), |t| format!("layout {}", clipped(&t, 100)));
    let _ = writeln!(s, "\nPipeline {what} ({stages} chunks: PP {} × VPP {})", par.pp(), par.vpp());
    let place = &d.pipeline_placement;
    let mtp = r.plan.model.mtp_num_layers;
    for (rank, chunks) in d.layers_per_chunk.iter().enumerate() {
        let rank = rank as u64;
        let cells: Vec<String> = chunks
            .iter()
            .enumerate()
            .map(|(v, &n)| {
                let here = |c: &ChunkRef| c.pipeline_rank == rank && c.virtual_rank == v as u64;
                let mut parts = Vec::new();
                if here(&place.embedding) {
                    parts.push("E".to_string());
                }
                if n > 0 {
                    parts.push(format!("t*{n}"));
                }
                if place.mtp.as_ref().is_some_and(here) {
                    parts.push(if mtp == 1 { "m".into() } else { format!("m*{mtp}") });
                }
                if here(&place.loss) {
                    parts.push("L".to_string());
                }
                if parts.is_empty() { "(empty)".to_string() } else { parts.join(" ") }
            })
            .collect();
        let _ = writeln!(s, "  pp {rank:<4}{}", cells.join(" | "));
    }
}

/// The first lines: model, cluster, and the recipe the plan starts from.
fn title(r: &Report, s: &mut String) {
    let (p, d) = (&r.plan, &r.derived);
    let _ = writeln!(
        s,
        "{} on {} × {} ({} GPUs, NVLink domain {})",
        p.model_name, p.cluster.num_nodes, p.gpu.name, d.world_size, p.cluster.nvlink_domain_size
    );
    if let Some(recipe) = &p.recipe {
        let _ = writeln!(s, "from Megatron Bridge recipe {recipe} (the plan's own keys override it)");
    }
}

/// The settings the plan leaves unstated, with the value planned, grouped by their source (a perf recipe's, or
/// Megatron-Core's default): one line per source, then its `key = value` pairs wrapped at [`ASSUMED_WIDTH`].
fn assumptions(r: &Report, s: &mut String) {
    if r.assumptions.is_empty() {
        return;
    }
    let _ = writeln!(s, "\nAssumed (speed and memory settings the plan leaves unstated; \"defaults\": \"megatron-core\" for plain defaults)");
    for (source, group) in meshplan_core::tuned::by_source(&r.assumptions) {
        let _ = writeln!(s, "  {source}:");
        let mut line = String::new();
        for a in group {
            let pair = format!("{} = {}", a.key, a.value);
            if !line.is_empty() && line.len() + 2 + pair.len() > ASSUMED_WIDTH {
                let _ = writeln!(s, "    {line}");
                line.clear();
            }
            if !line.is_empty() {
                line.push_str(", ");
            }
            line.push_str(&pair);
        }
        let _ = writeln!(s, "    {line}");
    }
}

/// Where the assumed `key = value` pairs wrap (characters after the indent).
const ASSUMED_WIDTH: usize = 110;

/// Bridge's published throughput for the plan's perf recipe, beside the prediction.
fn published(r: &Report, s: &mut String) {
    if let Some(pb) = &r.published {
        let m = &pb.measured;
        let _ = writeln!(
            s,
            "  published {}: {:.0} TFLOP/s/GPU ({:.0} tokens/s/GPU); meshplan: {:.0} ({:+.0}%) — {}",
            m.release, m.model_tflops_per_gpu, m.tokens_per_s_per_gpu, pb.predicted_model_tflops_per_gpu, 100.0 * pb.error, m.source
        );
    }
}

fn clipped(t: &str, n: usize) -> String {
    let mut out: String = t.chars().take(n).collect();
    if t.chars().nth(n).is_some() {
        out.push('…');
    }
    out
}

pub fn report(r: &Report, remedies: &[Remedy]) -> String {
    let mut s = String::new();
    let p = &r.plan;
    let par = &p.parallelism;
    let d = &r.derived;
    title(r, &mut s);
    let _ = writeln!(
        s,
        "TP {} · PP {}{} · CP {} · EP {} · ETP {} · SP {} · order {}",
        par.tp(),
        par.pp(),
        par.virtual_pipeline_model_parallel_size.map(|v| format!(" (VPP {v})")).unwrap_or_default(),
        par.cp(),
        par.ep(),
        par.etp(),
        if par.sequence_parallel { "on" } else { "off" },
        par.order
    );
    let _ = writeln!(s, "\n{}", if r.valid { "VALID" } else { "INVALID" });
    for diag in &r.diagnostics {
        let tag = match diag.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        };
        let _ = writeln!(s, "  {tag}[{}]: {}\n      fix: {}", diag.code, diag.message, diag.fix);
        // The same re-planned fixes the page lists under the diagnostic, best first.
        for r in remedy::for_diagnostic(diag, remedies) {
            let _ = writeln!(s, "      re-planned: {} → {}", r.edits_text(), r.prediction());
        }
    }
    assumptions(r, &mut s);
    let _ = writeln!(s, "\nDerived");
    let rows: Vec<(&str, String)> = vec![
        ("world size", d.world_size.to_string()),
        ("data parallel (dense)", d.data_parallel_size.to_string()),
        ("expert data parallel", d.expert_data_parallel_size.to_string()),
        ("min GPUs", format!("{} ({} nodes)", d.min_gpus, d.nodes_needed)),
        ("microbatches", d.num_microbatches.to_string()),
        ("pipeline bubble", format!("{:.1}%", 100.0 * d.pipeline_bubble_fraction)),
        ("padded vocab", d.padded_vocab_size.to_string()),
        ("parameters", format!("{} total, {} active", billions(d.total_parameters), billions(d.active_parameters))),
        ("layers per stage", format!("{:?}", d.layers_per_stage)),
    ];
    for (k, v) in rows {
        let _ = writeln!(s, "  {k:<24}{v}");
    }
    pipeline(r, &mut s);
    let m = &r.memory;
    let _ = writeln!(s, "\nMemory per GPU (GiB)");
    let _ = writeln!(s, "  {:>5} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}", "stage", "layers", "params", "grads", "optim", "activ", "overhead", "total");
    for st in &m.stages {
        let _ = writeln!(
            s,
            "  {:>5} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            st.pipeline_rank,
            st.num_layers,
            gib(st.parameters_bytes),
            gib(st.gradients_bytes),
            gib(st.optimizer_bytes),
            gib(st.activations_bytes),
            gib(st.overhead_bytes),
            gib(st.total_bytes)
        );
    }
    let _ = writeln!(
        s,
        "  peak {} of {} GiB: {}",
        gib(m.peak_bytes),
        gib(m.gpu_memory_bytes),
        if m.fits { "fits" } else { "DOES NOT FIT" }
    );
    // Megatron-LM prints max allocated in MiB, Megatron Bridge in GB (1e9 B): the GB figure compares with Bridge's log.
    let _ = writeln!(s, "  {:>5} {:>10} {:>12} {:>9} {:>9}  {:<16} {:>9}", "stage", "allocated", "(Bridge GB)", "reserved", "device", "bound by", "host/node");
    for st in &m.stages {
        let _ = writeln!(
            s,
            "  {:>5} {:>10} {:>12} {:>9} {:>9}  {:<16} {:>9}",
            st.pipeline_rank,
            gib(st.allocated_bytes),
            format!("{:.2} GB", st.allocated_bytes as f64 / 1e9),
            gib(st.reserved_bytes),
            gib(st.total_bytes),
            st.bound_by.label(),
            gib(st.host_bytes_per_node)
        );
    }
    match (m.host_memory_per_node_bytes, m.host_fits) {
        (Some(cap), Some(fits)) => {
            let _ = writeln!(s, "  host {} of {} GiB per node: {}", gib(m.host_bytes_per_node), gib(cap), if fits { "fits" } else { "DOES NOT FIT" });
        }
        _ if m.host_bytes_per_node > 0 => {
            let _ = writeln!(s, "  host {} GiB per node (cluster.host_memory_per_node_gb not known: not checked)", gib(m.host_bytes_per_node));
        }
        _ => {}
    }
    // The peak stage's labelled terms that hold memory, each with when it is held and whether Megatron's max allocated
    // counts it (every stage's, zeros included, are in the JSON report's memory.stages[].terms).
    if let Some(peak) = m.stages.iter().find(|st| st.total_bytes == m.peak_bytes) {
        let _ = writeln!(s, "  terms of stage {} (the peak stage; --format json has every stage's)", peak.pipeline_rank);
        for t in peak.terms.iter().filter(|t| t.bytes > 0) {
            let counted = match (t.location, t.allocated) {
                (Location::Host, _) => "host",
                (_, true) => "allocated",
                (_, false) => "not allocated",
            };
            let _ = writeln!(s, "  {:>9}  {:<16} {:<13} {}", gib(t.bytes), t.phase.label(), counted, t.label);
        }
    }
    if let Some(perf) = &r.performance {
        let b = &perf.breakdown;
        let _ = writeln!(s, "\nPerformance (estimate; MFU vs the dense {} peak; communication: its exposed share)", p.training.settings.precision.key());
        let _ = writeln!(
            s,
            "  step {:.3} s · {:.0} tokens/s/GPU · {:.1} model TFLOP/s/GPU · MFU {:.1}% · {:.0} GPU-hours per 1T tokens",
            perf.step_time_s,
            perf.tokens_per_s_per_gpu,
            perf.model_tflops_per_gpu,
            100.0 * perf.mfu,
            perf.gpu_hours_per_trillion_tokens
        );
        published(r, &mut s);
        let share = |x: f64| if perf.step_time_s > 0.0 { 100.0 * x / perf.step_time_s } else { 0.0 };
        for (k, v) in b.terms() {
            let _ = writeln!(s, "  {k:<24}{v:>9.4} s {:>5.1}%", share(v));
        }
    }
    if let Some(l) = &r.layout {
        let _ = writeln!(s, "\nRank groups (order {})", l.order);
        for (name, groups) in [
            ("tp", &l.groups.tp),
            ("cp", &l.groups.cp),
            ("dp", &l.groups.dp),
            ("pp", &l.groups.pp),
            ("ep", &l.groups.ep),
            ("etp", &l.groups.etp),
            ("edp", &l.groups.edp),
        ] {
            let shown: Vec<String> = groups.iter().take(4).map(|g| format!("{g:?}")).collect();
            let more = if groups.len() > 4 { format!(" … ({} groups)", groups.len()) } else { String::new() };
            let _ = writeln!(s, "  {name:<4}{}{more}", shown.join(" "));
        }
        for c in &l.crossings {
            let _ = writeln!(s, "  {} groups crossing NVLink domains: {} of {}", c.kind, c.groups_crossing, c.total_groups);
        }
    }
    s
}

pub fn presets(c: &Catalog) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "Models");
    let _ = writeln!(s, "  {:<20} {:<26} {:>10} {:>10}  {}", "key", "name", "total", "active", "hf_id");
    for m in &c.models {
        let _ = writeln!(s, "  {:<20} {:<26} {:>10} {:>10}  {}", m.key, m.name, billions(m.total_parameters), billions(m.active_parameters), m.hf_id);
    }
    let _ = writeln!(s, "\nGPUs");
    let _ = writeln!(s, "  {:<16} {:<44} {:>6} {:>8} {:>8} {:>7}", "key", "name", "GB", "BF16 TF", "FP8 TF", "NVLink");
    for g in &c.gpus {
        let _ = writeln!(
            s,
            "  {:<16} {:<44} {:>6} {:>8} {:>8} {:>7}",
            g.key,
            g.name,
            g.memory_gb,
            g.dense_bf16_tflops,
            g.dense_fp8_tflops.map(|v| v.to_string()).unwrap_or("-".into()),
            g.nvlink_domain_size
        );
    }
    s
}

/// The Megatron Bridge recipes a plan may name (`"recipe": NAME`), one line each.
pub fn recipes(all: &[meshplan_core::recipes::Recipe]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "\nMegatron Bridge recipes (plan key \"recipe\"; {})", meshplan_core::recipes::source_repository());
    let width = all.iter().map(|r| r.name.chars().count()).max().unwrap_or(0);
    for r in all {
        // A recipe whose model has no preset shows the Hugging Face id its model is built from.
        let model = r.preset().or(r.hf_model_id.as_deref()).unwrap_or("(model built in the recipe)");
        let _ = writeln!(s, "  {:<width$}  {model:<26} {}", r.name, r.description);
    }
    s
}

/// Why no layout was returned: the smallest peak memory found against the GPU's, and the commonest rejections.
pub fn nothing_fits(r: &meshplan_core::search::SearchResult) -> String {
    let mut codes: Vec<(&String, &u64)> = r.rejected_by.iter().collect();
    codes.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let top: Vec<String> = codes.iter().take(3).map(|(c, n)| format!("{c} ×{n}")).collect();
    let peak = match r.smallest_peak_bytes {
        Some(p) => format!("the smallest peak found is {} GiB per GPU against {} GiB", gib(p), gib(r.gpu_memory_bytes)),
        None => "no layout passed the rules".to_string(),
    };
    format!("no layout fits on {} GPUs ({} evaluated): {peak}; rejected by {}", r.world_size, r.evaluated, top.join(", "))
}

pub fn search(r: &meshplan_core::search::SearchResult) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{} layouts evaluated, {} valid, {} skipped by memory, on {} GPUs", r.evaluated, r.valid, r.pruned_by_memory, r.world_size);
    for note in &r.notes {
        let _ = writeln!(s, "note: {note}");
    }
    if r.candidates.is_empty() {
        let _ = writeln!(s, "{}", nothing_fits(r));
        return s;
    }
    let _ = writeln!(
        s,
        "\n  {:>2} {:>3} {:>3} {:>4} {:>3} {:>4} {:>4} {:>3} {:>4} {:<10} {:>5} {:>10} {:>8} {:>6} {:>9}",
        "#", "TP", "PP", "VPP", "CP", "EP", "ETP", "SP", "MBS", "recompute", "dopt", "tok/s/GPU", "TFLOP/s", "MFU", "peak GiB"
    );
    for (i, c) in r.candidates.iter().enumerate() {
        let p = &c.parallelism;
        let t = &c.training;
        let recompute = match t.recompute_granularity {
            meshplan_core::plan::Recompute::None => "none",
            meshplan_core::plan::Recompute::Selective => "selective",
            meshplan_core::plan::Recompute::Full => "full",
        };
        let _ = writeln!(
            s,
            "  {:>2} {:>3} {:>3} {:>4} {:>3} {:>4} {:>4} {:>3} {:>4} {:<10} {:>5} {:>10.0} {:>8.1} {:>5.1}% {:>9}",
            i + 1,
            p.tensor_model_parallel_size,
            p.pipeline_model_parallel_size,
            p.virtual_pipeline_model_parallel_size.map_or("-".to_string(), |v| v.to_string()),
            p.context_parallel_size,
            p.expert_model_parallel_size,
            p.expert_tensor_parallel_size,
            if p.sequence_parallel { "on" } else { "off" },
            t.micro_batch_size,
            recompute,
            if t.use_distributed_optimizer { "yes" } else { "no" },
            c.tokens_per_s_per_gpu,
            c.model_tflops_per_gpu,
            100.0 * c.mfu,
            gib(c.peak_bytes)
        );
    }
    for (i, c) in r.candidates.iter().enumerate() {
        let _ = writeln!(s, "\n#{} why", i + 1);
        let speed = c.training.speed_parts();
        if !speed.is_empty() {
            let _ = writeln!(s, "  - runs with: {}", speed.join(", "));
        }
        for w in &c.why {
            let _ = writeln!(s, "  - {w}");
        }
    }
    let _ = writeln!(s, "\nPareto front (peak memory vs throughput): {} layouts", r.pareto.len());
    for p in &r.pareto {
        let q = &p.parallelism;
        let _ = writeln!(
            s,
            "  {:>9} GiB {:>10.0} tok/s/GPU  TP {} PP {} CP {} EP {} mbs {}",
            gib(p.peak_bytes),
            p.tokens_per_s_per_gpu,
            q.tensor_model_parallel_size,
            q.pipeline_model_parallel_size,
            q.context_parallel_size,
            q.expert_model_parallel_size,
            p.training.micro_batch_size
        );
    }
    s
}
