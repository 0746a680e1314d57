//! `meshplan`: the command-line shell over meshplan-core.
//!
//! Exit status: 0 = valid plan, 1 = the plan has errors (the report is still printed), 2 = unreadable input.

use meshplan_core::{ExportKind, Report, Severity, presets, rules};
use std::process::ExitCode;

mod table;

const USAGE: &str = "\
meshplan — parallelism planner for Megatron-Core / Megatron Bridge training

USAGE:
    meshplan plan FILE [--format table|json]     validate a plan and estimate memory per pipeline stage
    meshplan search FILE [--top N] [--format table|json]
                                                 search layouts for the plan's model, cluster and batch
                                                 (parallelism may be absent); exit 1 if none fits
    meshplan presets [--format table|json]       list the model presets and the GPU catalogue
    meshplan explain CODE                        explain a diagnostic code
    meshplan export FILE [--kind KIND]           print a launcher export of the plan; KIND is
                                                 bridge, bridge-cli, megatron-lm, slurm, plan or all (default)
    meshplan --help | --version

FILE may be - for standard input. Exit status: 0 valid, 1 the plan has errors, 2 unreadable input.";

#[derive(Clone, Copy, PartialEq)]
enum Format {
    Table,
    Json,
}

struct Args {
    command: String,
    positional: Vec<String>,
    format: Format,
    kind: Option<String>,
    top: Option<String>,
}

fn parse_args(raw: Vec<String>) -> Result<Args, String> {
    let mut it = raw.into_iter();
    let command = it.next().ok_or_else(|| USAGE.to_string())?;
    let mut positional = Vec::new();
    let mut format = Format::Table;
    let mut kind = None;
    let mut top = None;
    while let Some(a) = it.next() {
        match a.as_str() {
            "--format" | "-f" => {
                format = match it.next().as_deref() {
                    Some("json") => Format::Json,
                    Some("table") | Some("text") => Format::Table,
                    Some(other) => return Err(format!("unknown format {other:?}: use table or json")),
                    None => return Err("--format needs a value: table or json".into()),
                }
            }
            s if s.starts_with("--format=") => {
                format = match &s["--format=".len()..] {
                    "json" => Format::Json,
                    "table" | "text" => Format::Table,
                    other => return Err(format!("unknown format {other:?}: use table or json")),
                }
            }
            "--kind" | "-k" => kind = Some(it.next().ok_or("--kind needs a value: bridge, bridge-cli, megatron-lm, slurm, plan or all")?),
            s if s.starts_with("--kind=") => kind = Some(s["--kind=".len()..].to_string()),
            "--top" | "-n" => top = Some(it.next().ok_or("--top needs a number")?),
            s if s.starts_with("--top=") => top = Some(s["--top=".len()..].to_string()),
            s if s.starts_with("--") => return Err(format!("unknown option {s}\n\n{USAGE}")),
            _ => positional.push(a),
        }
    }
    Ok(Args { command, positional, format, kind, top })
}

fn read_input(path: &str) -> Result<String, String> {
    if path == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s).map_err(|e| format!("cannot read standard input: {e}"))?;
        Ok(s)
    } else {
        std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))
    }
}

fn print_json<T: serde::Serialize>(value: &T) {
    match serde_json::to_string_pretty(value) {
        Ok(s) => println!("{s}"),
        Err(e) => eprintln!("meshplan: cannot encode the report: {e}"),
    }
}

fn cmd_plan(args: &Args) -> ExitCode {
    let report = match read_report("plan", args) {
        Ok(r) => r,
        Err(code) => return code,
    };
    match args.format {
        Format::Json => print_json(&report),
        Format::Table => print!("{}", table::report(&report)),
    }
    if report.valid { ExitCode::SUCCESS } else { ExitCode::from(1) }
}

/// Reads and plans the one FILE argument; exit status 2 (with a message) when it cannot.
fn read_report(command: &str, args: &Args) -> Result<Report, ExitCode> {
    let [path] = args.positional.as_slice() else {
        eprintln!("meshplan {command}: expected one FILE\n\n{USAGE}");
        return Err(ExitCode::from(2));
    };
    let text = read_input(path).map_err(|e| {
        eprintln!("meshplan: {e}");
        ExitCode::from(2)
    })?;
    meshplan_core::plan_json(&text).map_err(|e| {
        eprintln!("meshplan: {e}");
        ExitCode::from(2)
    })
}

fn cmd_export(args: &Args) -> ExitCode {
    let kinds: Vec<ExportKind> = match args.kind.as_deref() {
        None | Some("all") => ExportKind::ALL.to_vec(),
        Some(k) => match ExportKind::from_key(k) {
            Some(kind) => vec![kind],
            None => {
                eprintln!("meshplan export: unknown kind {k:?}: use bridge, bridge-cli, megatron-lm, slurm, plan or all");
                return ExitCode::from(2);
            }
        },
    };
    let report = match read_report("export", args) {
        Ok(r) => r,
        Err(code) => return code,
    };
    for (i, kind) in kinds.iter().enumerate() {
        if kinds.len() > 1 {
            if i > 0 {
                println!();
            }
            println!("==> {} ({}) <==", kind.key(), kind.label());
        }
        print!("{}", meshplan_core::export(*kind, &report.plan, &report));
    }
    if report.valid {
        ExitCode::SUCCESS
    } else {
        eprintln!("meshplan: the plan has errors (run `meshplan plan` to see them); the export was printed anyway");
        ExitCode::from(1)
    }
}

fn cmd_search(args: &Args) -> ExitCode {
    let [path] = args.positional.as_slice() else {
        eprintln!("meshplan search: expected one FILE\n\n{USAGE}");
        return ExitCode::from(2);
    };
    let top = match args.top.as_deref().map(str::parse::<usize>) {
        None => 5,
        Some(Ok(n)) if n >= 1 => n,
        _ => {
            eprintln!("meshplan search: --top needs a whole number ≥ 1");
            return ExitCode::from(2);
        }
    };
    let text = match read_input(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("meshplan: {e}");
            return ExitCode::from(2);
        }
    };
    let opts = meshplan_core::search::SearchOptions { top, ..Default::default() };
    let result = match meshplan_core::search::search_str(&text, &opts) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("meshplan: {e}");
            return ExitCode::from(2);
        }
    };
    match args.format {
        Format::Json => print_json(&result),
        Format::Table => print!("{}", table::search(&result)),
    }
    if result.candidates.is_empty() {
        eprintln!("meshplan search: {}", table::nothing_fits(&result));
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn cmd_presets(args: &Args) -> ExitCode {
    let catalog = presets::catalog();
    match args.format {
        Format::Json => print_json(&catalog),
        Format::Table => print!("{}", table::presets(&catalog)),
    }
    ExitCode::SUCCESS
}

fn cmd_explain(args: &Args) -> ExitCode {
    let [code] = args.positional.as_slice() else {
        eprintln!("meshplan explain: expected one CODE (e.g. meshplan explain sp-requires-tp)");
        return ExitCode::from(2);
    };
    match rules::rule(code) {
        Some(r) => {
            let sev = match r.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
                Severity::Info => "info",
            };
            println!("{} ({sev})\n\n{}\n\nSource: {}", r.code, r.summary, r.source);
            ExitCode::SUCCESS
        }
        None => {
            let codes: Vec<&str> = rules::RULES.iter().map(|r| r.code).collect();
            match meshplan_core::fields::nearest(code, &codes) {
                Some(n) => eprintln!("meshplan: no diagnostic code {code:?}; did you mean {n:?}?"),
                None => eprintln!("meshplan: no diagnostic code {code:?}; known codes:\n  {}", codes.join("\n  ")),
            }
            ExitCode::from(2)
        }
    }
}

fn main() -> ExitCode {
    let raw: Vec<String> = std::env::args().skip(1).collect();
    if raw.is_empty() || raw[0] == "--help" || raw[0] == "-h" || raw[0] == "help" {
        println!("{USAGE}");
        return if raw.is_empty() { ExitCode::from(2) } else { ExitCode::SUCCESS };
    }
    if raw[0] == "--version" || raw[0] == "-V" {
        println!("meshplan {}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    let args = match parse_args(raw) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("meshplan: {e}");
            return ExitCode::from(2);
        }
    };
    let _ = presets::models();
    match args.command.as_str() {
        "plan" => cmd_plan(&args),
        "presets" => cmd_presets(&args),
        "explain" => cmd_explain(&args),
        "export" => cmd_export(&args),
        "search" => cmd_search(&args),
        other => {
            eprintln!("meshplan: unknown command {other:?}\n\n{USAGE}");
            ExitCode::from(2)
        }
    }
}
