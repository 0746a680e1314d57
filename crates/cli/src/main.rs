//! `meshplan`: the command-line shell over meshplan-core.
//!
//! Exit status: 0 = valid plan, 1 = the plan has errors (the report is still printed), 2 = unreadable input.

use meshplan_core::{Report, Severity, presets, rules};
use std::process::ExitCode;

mod table;

const USAGE: &str = "\
meshplan — parallelism planner for Megatron-Core / Megatron Bridge training

USAGE:
    meshplan plan FILE [--format table|json]     validate a plan and estimate memory per pipeline stage
    meshplan presets [--format table|json]       list the model presets and the GPU catalogue
    meshplan explain CODE                        explain a diagnostic code
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
}

fn parse_args(raw: Vec<String>) -> Result<Args, String> {
    let mut it = raw.into_iter();
    let command = it.next().ok_or_else(|| USAGE.to_string())?;
    let mut positional = Vec::new();
    let mut format = Format::Table;
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
            s if s.starts_with("--") => return Err(format!("unknown option {s}\n\n{USAGE}")),
            _ => positional.push(a),
        }
    }
    Ok(Args { command, positional, format })
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
    let [path] = args.positional.as_slice() else {
        eprintln!("meshplan plan: expected one FILE\n\n{USAGE}");
        return ExitCode::from(2);
    };
    let text = match read_input(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("meshplan: {e}");
            return ExitCode::from(2);
        }
    };
    let report: Report = match meshplan_core::plan_json(&text) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("meshplan: {e}");
            return ExitCode::from(2);
        }
    };
    match args.format {
        Format::Json => print_json(&report),
        Format::Table => print!("{}", table::report(&report)),
    }
    if report.valid { ExitCode::SUCCESS } else { ExitCode::from(1) }
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
        other => {
            eprintln!("meshplan: unknown command {other:?}\n\n{USAGE}");
            ExitCode::from(2)
        }
    }
}
