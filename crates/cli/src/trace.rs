//! The commands that trace a run back to its configuration: `import`, `diff`, `oom`, `schedule`. Printing only: the
//! core computes everything.

use crate::stdio::{Format, Input, emit, print_json, read_input, unreadable};
use meshplan_core::imports::{self, ImportOptions};
use std::process::ExitCode;

/// `--format table` prints the plan file (notes and settings not read on stderr); json prints
/// `{format, plan, unrecognized, notes, diagnostics}`.
pub fn cmd_import(file: &std::path::Path, from: Option<&str>, model: Option<String>, gpu: Option<String>, format: Format) -> ExitCode {
    let text = match read_input(file) {
        Ok(t) => t,
        Err(e) => return unreadable(e),
    };
    let opts = ImportOptions { from: from.and_then(imports::Format::from_key), model, gpu, ..ImportOptions::default() };
    let (imported, plan, diags) = match imports::import_plan(&text, &opts) {
        Ok(r) => r,
        Err(e) => return unreadable(e),
    };
    let plan_file = meshplan_core::export::plan_json(&plan);
    match format {
        Format::Json => {
            let plan_value: serde_json::Value = serde_json::from_str(&plan_file).unwrap_or_default();
            print_json(&serde_json::json!({
                "format": imported.format,
                "plan": plan_value,
                "unrecognized": imported.unrecognized,
                "notes": imported.notes,
                "diagnostics": diags,
            }));
        }
        Format::Table => {
            emit(&plan_file);
            // One write: a long list of settings not read should not cost a system call a line.
            let mut err = format!("meshplan import: read as {}\n", imported.format.key());
            for n in &imported.notes {
                err += &format!("meshplan import: note: {n}\n");
            }
            for d in &diags {
                err += &format!("meshplan import: {}[{}]: {}\n", format!("{:?}", d.severity).to_lowercase(), d.code.as_str(), d.message);
            }
            if !imported.unrecognized.is_empty() {
                err += &format!("meshplan import: {} settings not read:\n", imported.unrecognized.len());
                for u in &imported.unrecognized {
                    err += &format!("  {} = {} ({})\n", u.name, u.value, u.why);
                }
            }
            let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), err.as_bytes());
        }
    }
    // The plan file is printed either way; a value it could not take (an error diagnostic) is exit status 1, as for
    // every command's plan with errors.
    match diags.iter().any(|d| d.severity == meshplan_core::Severity::Error) {
        true => ExitCode::from(1),
        false => ExitCode::SUCCESS,
    }
}

fn gib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

fn signed_gib(delta: i64) -> String {
    format!("{:+.2}", delta as f64 / (1u64 << 30) as f64)
}

fn value_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "(unset)".into(),
        other => other.to_string(),
    }
}

fn report_of(path: &std::path::Path) -> Result<meshplan_core::Report, ExitCode> {
    let text = read_input(path).map_err(unreadable)?;
    meshplan_core::plan_json(&text).map_err(unreadable)
}

pub fn cmd_diff(a: &std::path::Path, b: &std::path::Path, format: Format) -> ExitCode {
    let (ra, rb) = match (report_of(a), report_of(b)) {
        (Ok(x), Ok(y)) => (x, y),
        (Err(code), _) | (_, Err(code)) => return code,
    };
    let d = meshplan_core::diff::diff(&ra, &rb);
    match format {
        Format::Json => print_json(&d),
        Format::Table => emit(&diff_table(&d)),
    }
    if d.b_valid { ExitCode::SUCCESS } else { ExitCode::from(1) }
}

/// A stage's layers for people: "layers 0–19, 40–59" (inclusive), the first four ranges and a count of the rest.
fn layers_text(ranges: &[[u64; 2]]) -> String {
    if ranges.is_empty() {
        return "no layers".into();
    }
    let shown: Vec<String> = ranges.iter().take(4).map(|[a, b]| if b - a == 1 { a.to_string() } else { format!("{a}–{}", b - 1) }).collect();
    let more = if ranges.len() > 4 { format!(", … ({} ranges)", ranges.len()) } else { String::new() };
    format!("layers {}{more}", shown.join(", "))
}

/// "stage 1 (layers 20–39) → stage 2 (layers 20–29)   16.50 →  12.25 GiB  -4.25"; one side when both are alike.
fn stage_pair_row(s: &meshplan_core::diff::StageDelta) -> String {
    let side = |r: Option<u64>, layers: &[[u64; 2]]| r.map_or("(none)".to_string(), |r| format!("stage {r} ({})", layers_text(layers)));
    let (a, b) = (side(s.a_pipeline_rank, &s.a_layers), side(s.b_pipeline_rank, &s.b_layers));
    let which = if a == b { a } else { format!("{a} → {b}") };
    format!("{which:<56} {:>8.2} → {:>8.2} GiB  {}", gib(s.a_total_bytes), gib(s.b_total_bytes), signed_gib(s.delta_bytes))
}

fn diff_table(d: &meshplan_core::diff::Diff) -> String {
    let mut out = String::new();
    let valid = |v: bool| if v { "VALID" } else { "INVALID" };
    out += &format!("A {} → B {}\n\nSettings that differ (A → B)\n", valid(d.a_valid), valid(d.b_valid));
    if d.settings.is_empty() {
        out += "  none\n";
    }
    for c in &d.settings {
        out += &format!("  {:<48} {} → {}\n", c.path, value_text(&c.a), value_text(&c.b));
    }
    out += &format!(
        "\nMemory per GPU: peak {:.2} → {:.2} GiB ({}) of {:.2} → {:.2} GiB\n",
        gib(d.a_peak_bytes),
        gib(d.b_peak_bytes),
        signed_gib(d.b_peak_bytes as i64 - d.a_peak_bytes as i64),
        gib(d.gpu_memory_bytes.0),
        gib(d.gpu_memory_bytes.1)
    );
    if let Some(p) = &d.peak_stages {
        out += &format!("  peak: {}\n", stage_pair_row(p));
    }
    out += "  stages paired by the decoder layers they hold (A → B)\n";
    for s in &d.stages_by_layers {
        out += &format!("  {}\n", stage_pair_row(s));
        for t in &s.terms {
            out += &format!("      {:<44} {:>8.2} → {:>8.2}  {}\n", t.label, gib(t.a_bytes), gib(t.b_bytes), signed_gib(t.delta_bytes));
        }
    }
    match (d.a_step_time_s, d.b_step_time_s) {
        (Some(x), Some(y)) => {
            out += &format!("\nStep time {x:.3} → {y:.3} s ({:+.3} s)\n", y - x);
            for t in &d.step_time {
                out += &format!("  {:<12} {:>10.4} → {:>10.4} s  {:+.4}\n", t.term, t.a_s, t.b_s, t.delta_s);
            }
        }
        _ => out += "\nStep time: not estimated for both plans (a mesh does not divide the world)\n",
    }
    out += "\nFindings\n";
    if d.findings_added.is_empty() && d.findings_removed.is_empty() {
        out += "  the same codes\n";
    }
    for f in &d.findings_added {
        out += &format!("  + {}[{}]: {}\n", f.severity, f.code, f.message);
    }
    for f in &d.findings_removed {
        out += &format!("  - {}[{}]: {}\n", f.severity, f.code, f.message);
    }
    out += "\nRank groups crossing NVLink domains\n";
    if d.crossings.is_empty() {
        out += "  no change\n";
    }
    for c in &d.crossings {
        out += &format!("  {:<6} {} of {} groups → {} of {} groups\n", c.kind, c.a_groups_crossing, c.a_total_groups, c.b_groups_crossing, c.b_total_groups);
    }
    out
}

pub fn cmd_oom(plan: &std::path::Path, message: Option<&std::path::Path>, rank: Option<u64>, (model, gpu): (Option<String>, Option<String>), format: Format) -> ExitCode {
    let read = |p: &std::path::Path| read_input(p).map_err(unreadable);
    let plan_text = match read(plan) {
        Ok(t) => t,
        Err(code) => return code,
    };
    // Without a message file, PLAN is the run's log: the arguments it printed and the message after them.
    let message_text = match message.map(read) {
        None => plan_text.clone(),
        Some(Ok(t)) => t,
        Some(Err(code)) => return code,
    };
    let opts = ImportOptions { model, gpu, ..ImportOptions::default() };
    let value = match plan_of(&plan_text, message.map(|_| message_text.as_str()), &opts) {
        Ok(v) => v,
        Err(e) => return unreadable(e),
    };
    let report = match meshplan_core::plan_value(&value) {
        Ok(r) => r,
        Err(e) => return unreadable(e),
    };
    let x = match meshplan_core::oom::explain_log(&value, &report, &message_text, rank) {
        Ok(x) => x,
        Err(e) => return unreadable(e),
    };
    match format {
        Format::Json => print_json(&x),
        Format::Table => {
            let all: Vec<String> = std::iter::once(&x.first).chain(&x.other_ranks).map(oom_table).collect();
            emit(&all.join("\n────────\n\n"))
        }
    }
    ExitCode::SUCCESS
}

/// The run's plan: a plan file, or any launch artefact `meshplan import` reads (a launch script, the printed arguments —
/// a log holding them —, Bridge overrides or YAML), imported as `meshplan import` does, with what it read and assumed
/// said on stderr.
/// An artefact that names no GPU takes the one the log beside it says (an environment report, else the message's device
/// capacity); PLAN alone is the run's log, read for its printed arguments (`imports::import_log`).
fn plan_of(text: &str, message: Option<&str>, opts: &ImportOptions) -> Result<serde_json::Value, meshplan_core::plan::InputError> {
    // A plan file is the plan (its model and GPU stated); --model and --gpu are for artefacts that leave them out.
    if text.trim_start().starts_with('{') && imports::detect(text) == imports::Format::Plan {
        if opts.model.is_some() || opts.gpu.is_some() {
            let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), b"meshplan oom: note: PLAN is a plan file: its own model and GPU are used, --model and --gpu are for launch artefacts\n");
        }
        return meshplan_core::plan::read_json(text);
    }
    let imported = match message {
        None => imports::import_log(text, opts)?,
        Some(log) => imports::import_beside(text, log, opts)?,
    };
    let mut err = format!("meshplan oom: the plan is read from PLAN as {}, as `meshplan import` reads it\n", imported.format.key());
    for n in &imported.notes {
        err += &format!("meshplan oom: note: {n}\n");
    }
    let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), err.as_bytes());
    Ok(imported.plan)
}

fn opt_gib(b: Option<u64>) -> String {
    b.map_or("—".into(), |b| format!("{:.2}", gib(b)))
}

fn oom_table(x: &meshplan_core::oom::Explanation) -> String {
    let m = &x.message;
    // A failure outside the allocator (cuBLAS, NCCL, a CUDA runtime call) states no size or device.
    let what = match (m.requested_bytes, m.gpu_index) {
        (0, None) => "no size or GPU in the message".to_string(),
        (r, g) => format!("{:.2} GiB requested on GPU {}", gib(r), g.map_or("?".into(), |g| g.to_string())),
    };
    let (head, who) = if m.form == "memory-report" {
        ("Memory report, no out-of-memory".to_string(), "Rank")
    } else {
        (format!("Out of memory ({} message, {}): {what}", m.form, m.device), "Failing rank")
    };
    let mut out = format!(
        "{head}\n\n{who} {} ({})\n  pipeline stage {}{}\n",
        x.rank,
        x.rank_source,
        x.pipeline_stage,
        x.phase.as_ref().map_or(String::new(), |p| format!(", {p}"))
    );
    if let Some(n) = &m.note {
        out += &format!("  {n}\n");
    }
    if let Some(f) = &m.location {
        let what = if f.what.is_empty() { String::new() } else { format!(" — {}", f.what) };
        out += &format!("  traceback: {}:{} in {}{what}\n", f.file, f.line, f.function);
    }
    out += &oom_named(x);
    if let Some(c) = &x.coordinates {
        out += &format!("  coordinates tp {} cp {} dp {} pp {} · ep {} etp {} edp {}\n", c.tp, c.cp, c.dp, c.pp, c.ep, c.etp, c.edp);
    }
    for (kind, ranks) in &x.groups {
        let shown: Vec<String> = ranks.iter().take(16).map(|r| r.to_string()).collect();
        let more = if ranks.len() > 16 { format!(", … ({} ranks)", ranks.len()) } else { String::new() };
        out += &format!("  {kind:<6} [{}{more}]\n", shown.join(", "));
    }
    out += "\nMessage vs meshplan's prediction for this stage (GiB)\n";
    for c in &x.compared {
        out += &format!("  {:<40} {:>9} {:>9}\n", c.what, opt_gib(c.message_bytes), opt_gib(c.predicted_bytes));
    }
    out += "\nPredicted terms of the stage (GiB)\n";
    for t in &x.predicted_terms {
        out += &format!("  {:<60} {:>8.2}  {} · {}\n", t.label, gib(t.bytes), t.phase, t.location);
    }
    out += &format!("\nCause: {}\n", x.cause_text);
    for t in &x.over_budget {
        out += &format!("  over budget: {} {:.2} GiB\n", t.label, gib(t.bytes));
    }
    if !x.assumptions.is_empty() {
        out += "\nAssumed (not in the plan)\n";
        for a in &x.assumptions {
            out += &format!("  {a}\n");
        }
    }
    if !x.fixes.is_empty() {
        out += "\nFixes: those that fit first, then those that shrink the named tensor, then cheapest (predicted peak, step time and its change)\n";
    } else if !matches!(x.cause, meshplan_core::oom::Cause::MemoryReport | meshplan_core::oom::Cause::HostMemory) {
        out += "\nFixes: none (the cause and the notes say why)\n";
    }
    for (i, f) in x.fixes.iter().enumerate() {
        let t = f.step_time_s.map_or("—".into(), |t| format!("{t:.3} s"));
        let dt = f.step_time_delta_s.map_or(String::new(), |d| format!(" ({d:+.3} s)"));
        let fits = if f.fits { "fits" } else { "still over" };
        let shrinks = if f.shrinks_culprit { " · shrinks the named tensor" } else { "" };
        out += &format!("  {}. {}\n     peak {:.2} GiB ({fits}{shrinks}) · step {t}{dt}\n", i + 1, f.change, gib(f.peak_bytes));
        if let Some(c) = &f.caveat {
            out += &format!("     ({c})\n");
        }
    }
    for n in &x.notes {
        out += &format!("note: {n}\n");
    }
    out
}

/// The allocation the request was, the value it implies, or the nearest tensors.
fn oom_named(x: &meshplan_core::oom::Explanation) -> String {
    let n = &x.named;
    let mut out = String::new();
    if let Some(c) = &n.culprit {
        out += &format!("  the request is {} — {:.2} GiB predicted ({})\n", c.label, gib(c.predicted_bytes), c.phase);
    }
    if let Some(i) = &n.implied {
        out += &format!("  {}\n", i.text);
    }
    for (path, v) in &x.corrections {
        out += &format!("  correction: {path} = {v}\n");
    }
    if n.culprit.is_none() && !n.nearest.is_empty() {
        out += "  no tensor of the plan is the request's size; the nearest:\n";
        for c in &n.nearest {
            out += &format!("    {} — {:.2} GiB ({:.2}× the request)\n", c.label, gib(c.predicted_bytes), 1.0 / c.ratio.max(f64::MIN_POSITIVE));
        }
    }
    out
}

pub fn cmd_schedule(input: &Input, width: usize, format: Format) -> ExitCode {
    let report = match report_of(&input.file) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let s = match meshplan_core::schedule::schedule(&report) {
        Ok(s) => s,
        Err(d) => return unreadable(format!("{}: {}\n  fix: {}", d.code.as_str(), d.message, d.fix)),
    };
    match format {
        Format::Json => print_json(&s),
        Format::Table => emit(&gantt(&s, width)),
    }
    ExitCode::SUCCESS
}

/// One row per stage: a forward shows its microbatch's last digit, a backward a letter (a = microbatch 0, …), `.` idle;
/// under it, the stage's saved activations against the largest stage's peak (` .:-=+*#%@`).
fn gantt(s: &meshplan_core::schedule::Schedule, width: usize) -> String {
    let mut out = format!(
        "{} schedule · PP {} · VPP {} · {} microbatches (groups of {}) · forward {:.2} ms, backward {:.2} ms per stage and microbatch\n",
        s.kind,
        s.pp,
        s.vpp,
        s.microbatches,
        s.group,
        s.forward_s * 1e3,
        s.backward_s * 1e3
    );
    out += &format!(
        "step (pipeline part) {:.3} s · bubble {:.1}% of busy time (idle/busy; (PP−1)/(VPP·m) = {:.1}%)\n\n",
        s.makespan_s,
        100.0 * s.bubble_fraction,
        100.0 * s.even_bubble_fraction
    );
    let col = s.makespan_s / width as f64;
    let peak = s.stages.iter().map(|st| st.peak_activation_bytes).max().unwrap_or(0).max(1);
    const LEVELS: &[u8] = b" .:-=+*#%@";
    for st in &s.stages {
        let mut row = vec![b'.'; width];
        for o in &st.ops {
            let (a, b) = ((o.start_s / col) as usize, ((o.end_s / col).ceil() as usize).min(width));
            let ch = if o.kind == "F" { b'0' + (o.microbatch % 10) as u8 } else { b'a' + (o.microbatch % 26) as u8 };
            for c in row.iter_mut().take(b).skip(a) {
                *c = ch;
            }
        }
        let mut mem = vec![b' '; width];
        for (i, m) in mem.iter_mut().enumerate() {
            let t = (i as f64 + 0.5) * col;
            let bytes = st.activation_bytes.iter().take_while(|(at, _)| *at <= t).last().map_or(0, |x| x.1);
            *m = LEVELS[((bytes as f64 / peak as f64) * (LEVELS.len() - 1) as f64).round() as usize];
        }
        out += &format!("  pp {:>3} |{}| idle {:.1}%\n", st.pipeline_rank, String::from_utf8_lossy(&row), 100.0 * st.idle_s / s.makespan_s.max(f64::MIN_POSITIVE));
        out += &format!(
            "  act    |{}| peak {:.2} GiB = {:.1} microbatches (memory model: {:.1})\n",
            String::from_utf8_lossy(&mem),
            gib(st.peak_activation_bytes),
            st.peak_in_flight,
            st.memory_model_in_flight
        );
    }
    out
}
