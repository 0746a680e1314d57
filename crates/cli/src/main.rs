//! `meshplan`: the command-line shell over meshplan-core.
//!
//! Exit status: 0 = valid plan, 1 = the plan has errors (the report is still printed), 2 = unreadable input or a
//! usage error (clap names the bad argument).

use clap::builder::PossibleValuesParser;
use clap::{Args, Parser, Subcommand};
use meshplan_core::{ExportKind, Report, Severity, presets, recipes, rules, settings};
use std::path::PathBuf;
use std::process::ExitCode;

mod size;
mod stdio;
mod table;
mod trace;

use stdio::{Format, Input, emit, print_json, read_input, unreadable};

const EXIT_STATUS: &str = "\
FILE may be - for standard input.
Exit status: 0 valid, 1 the plan has errors (the report is still printed), 2 unreadable input or a usage error.";

/// meshplan — parallelism planner for Megatron-Core / Megatron Bridge training
#[derive(Parser)]
#[command(name = "meshplan", version, after_help = EXIT_STATUS, arg_required_else_help = true, args_override_self = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Validate a plan, derive sizes, estimate memory per pipeline stage, list rank groups; unstated speed and memory
    /// settings take tuned defaults, listed under "Assumed" ("defaults": "megatron-core" for plain ones)
    #[command(after_help = EXIT_STATUS)]
    Plan {
        #[command(flatten)]
        input: Input,
        #[command(flatten)]
        output: Output,
    },
    /// Rank every valid layout for the plan's model, cluster and batch (parallelism may be absent); exit 1 if none fits
    #[command(after_help = EXIT_STATUS)]
    Search {
        #[command(flatten)]
        input: Input,
        /// How many layouts to list
        #[arg(short = 'n', long, value_name = "N", default_value_t = 5, value_parser = at_least_one, allow_negative_numbers = true)]
        top: usize,
        #[command(flatten)]
        output: Output,
    },
    /// Size the cluster: the best layout, time to train and GPU-hours at each node count, the fewest nodes meeting a
    /// deadline, the fastest run within a GPU-hour budget; exit 1 if no count holds the model or meets them
    #[command(after_help = EXIT_STATUS)]
    Size {
        #[command(flatten)]
        input: Input,
        #[command(flatten)]
        size: size::SizeArgs,
        #[command(flatten)]
        output: Output,
    },
    /// Print a launcher export of the plan: Bridge overrides, Bridge launch command, Megatron-LM flags, slurm, plan file
    #[command(after_help = EXIT_STATUS)]
    Export {
        #[command(flatten)]
        input: Input,
        /// Which export; all prints every one under a header
        #[arg(short, long, value_name = "KIND", default_value = "all", value_parser = export_kinds())]
        kind: String,
    },
    /// Read a Megatron-LM command line (started by torchrun, srun, mpirun or deepspeed, or by a Kubernetes manifest's
    /// containers), arguments block (or arguments as JSON, a W&B config, a printed Namespace(…), a --yaml-cfg file), Megatron Bridge overrides or config YAML (its recipe runner,
    /// train.sh and performance launcher included), a NeMo 2 command, recipe script or performance script, a NeMo 1
    /// config, an NVIDIA MLPerf Training config_*.sh, or a meshplan export, and print the plan file (unrecognized
    /// settings and assumptions on stderr); the plan keeps the launcher's own defaults ("defaults": "megatron-core"),
    /// not tuned ones (an MLPerf configuration's implementation is tuned: it keeps tuned defaults, listed)
    #[command(after_help = EXIT_STATUS)]
    Import {
        /// A Megatron-LM launch command or script, its arguments block, Bridge overrides, launch command or config
        /// YAML, a NeMo 2 or NeMo 1 launch or config, an MLPerf config_*.sh, a Kubernetes manifest (PyTorchJob, MPIJob,
        /// Job), or a meshplan export; - for standard input
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// What FILE is; detected when absent
        #[arg(long, value_name = "FORMAT", value_parser = PossibleValuesParser::new(["megatron-args", "bridge-overrides", "bridge-yaml", "plan"]))]
        from: Option<String>,
        /// A model preset for an input that names none (or instead of the one it names)
        #[arg(long, value_name = "PRESET")]
        model: Option<String>,
        /// The GPU (catalogue key) the run used; the input rarely names it
        #[arg(long, value_name = "GPU")]
        gpu: Option<String>,
        #[command(flatten)]
        output: Output,
    },
    /// Compare two plans: settings that differ, memory per stage by term, step time by term, findings that appear or
    /// disappear, rank-group kinds whose NVLink crossings change (exit 1 if B has errors)
    #[command(after_help = EXIT_STATUS)]
    Diff {
        /// The baseline plan file (A), or - for standard input
        #[arg(value_name = "A")]
        a: PathBuf,
        /// The plan file compared with it (B)
        #[arg(value_name = "B")]
        b: PathBuf,
        #[command(flatten)]
        output: Output,
    },
    /// Explain a CUDA out-of-memory message for a plan: the failing rank's stage and groups, the prediction term by
    /// term beside the message's numbers, fragmentation, overrun or a GPU shared with other processes, and the cheapest
    /// fixes by predicted step time
    #[command(after_help = EXIT_STATUS)]
    Oom {
        /// The plan file of the run, or any launch artefact `meshplan import` reads (its launch script, the arguments
        /// Megatron-LM printed, Bridge overrides or YAML), imported as that command does
        #[arg(value_name = "PLAN")]
        plan: PathBuf,
        /// A file holding the out-of-memory message (a log excerpt is fine), or - for standard input; without it, PLAN is
        /// the run's log, read for both: the arguments it printed and the message
        #[arg(value_name = "MESSAGE_FILE")]
        message: Option<PathBuf>,
        /// The global rank that failed (default: the message's [rankN] prefix, else torchrun's failure summary, else its
        /// local rank or GPU index on node 0)
        #[arg(long, value_name = "N")]
        rank: Option<u64>,
        /// A model preset, for a PLAN artefact that names none (or instead of the one it names), as `meshplan import`
        /// takes it
        #[arg(long, value_name = "PRESET")]
        model: Option<String>,
        /// The GPU (catalogue key) the run used, for a PLAN artefact that does not name it, as `meshplan import` takes it
        #[arg(long, value_name = "GPU")]
        gpu: Option<String>,
        #[command(flatten)]
        output: Output,
    },
    /// Draw the plan's pipeline schedule (1F1B or interleaved): each stage's forwards, backwards and bubble over the
    /// step, and its saved activations over time
    #[command(after_help = EXIT_STATUS)]
    Schedule {
        #[command(flatten)]
        input: Input,
        /// Columns of the text chart
        #[arg(long, value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u16).range(10..=1000))]
        width: u16,
        #[command(flatten)]
        output: Output,
    },
    /// List the model presets, the GPU catalogue and the Megatron Bridge recipes a plan may name
    Presets {
        #[command(flatten)]
        output: Output,
    },
    /// Explain a diagnostic code (what it means, where the rule comes from), a run setting (its names in
    /// Megatron-Core, Megatron Bridge and Megatron-LM, default, values and source) or a Megatron Bridge recipe (its
    /// source and every setting it carries)
    Explain {
        /// A diagnostic code, e.g. sp-requires-tp, or a setting, e.g. grad_reduce_in_fp32
        #[arg(value_name = "CODE")]
        code: String,
    },
}

#[derive(Args)]
struct Output {
    /// table (readable) or json (the stable JSON contract)
    #[arg(short, long, value_enum, value_name = "FORMAT", default_value_t = Format::Table)]
    format: Format,
}

/// `--top` takes a whole number of layouts, at least one.
fn at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err("needs a whole number ≥ 1".into()),
    }
}

/// `--kind` takes an export's key or `all`.
fn export_kinds() -> PossibleValuesParser {
    PossibleValuesParser::new(ExportKind::ALL.iter().map(|k| k.key()).chain(["all"]))
}

/// Reads and plans FILE; exit status 2 (with a message) when it cannot.
fn read_report(input: &Input) -> Result<Report, ExitCode> {
    let text = read_input(&input.file).map_err(unreadable)?;
    meshplan_core::plan_json(&text).map_err(unreadable)
}

fn cmd_plan(input: &Input, format: Format) -> ExitCode {
    let text = match read_input(&input.file) {
        Ok(t) => t,
        Err(e) => return unreadable(e),
    };
    let (plan, report) = match meshplan_core::plan::read_json(&text).and_then(|v| meshplan_core::plan_value(&v).map(|r| (v, r))) {
        Ok(x) => x,
        Err(e) => return unreadable(e),
    };
    // Every diagnostic's one-click fix re-planned, as the page lists them under each diagnostic.
    let remedies = meshplan_core::remedy::ranked(&plan, &report);
    match format {
        // The report, extended with `remedies` (the contract only grows).
        Format::Json => match serde_json::to_value(&report) {
            Ok(serde_json::Value::Object(mut m)) => {
                m.insert("remedies".into(), serde_json::to_value(&remedies).unwrap_or_default());
                print_json(&m)
            }
            _ => print_json(&report),
        },
        Format::Table => emit(&table::report(&report, &remedies)),
    }
    if report.valid { ExitCode::SUCCESS } else { ExitCode::from(1) }
}

fn cmd_export(input: &Input, kind: &str) -> ExitCode {
    // The parser accepts only the keys of ExportKind::ALL and "all".
    let kinds: Vec<ExportKind> = match ExportKind::from_key(kind) {
        Some(k) => vec![k],
        None => ExportKind::ALL.to_vec(),
    };
    let report = match read_report(input) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let mut text = String::new();
    for (i, kind) in kinds.iter().enumerate() {
        if kinds.len() > 1 {
            if i > 0 {
                text.push('\n');
            }
            text += &format!("==> {} ({}) <==\n", kind.key(), kind.label());
        }
        text += &meshplan_core::export(*kind, &report.plan, &report);
    }
    emit(&text);
    if report.valid {
        ExitCode::SUCCESS
    } else {
        eprintln!("meshplan: the plan has errors (run `meshplan plan` to see them); the export was printed anyway");
        ExitCode::from(1)
    }
}

fn cmd_search(input: &Input, top: usize, format: Format) -> ExitCode {
    let text = match read_input(&input.file) {
        Ok(t) => t,
        Err(e) => return unreadable(e),
    };
    let opts = meshplan_core::search::SearchOptions { top, ..Default::default() };
    let result = match meshplan_core::search::search_str(&text, &opts) {
        Ok(r) => r,
        Err(e) => return unreadable(e),
    };
    match format {
        Format::Json => print_json(&result),
        Format::Table => emit(&table::search(&result)),
    }
    if result.candidates.is_empty() {
        eprintln!("meshplan search: {}", table::nothing_fits(&result));
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn cmd_presets(format: Format) -> ExitCode {
    let catalog = presets::catalog();
    match format {
        Format::Json => {
            // The catalogue's keys, and `recipes`: the Megatron Bridge recipes a plan may name.
            let mut v = serde_json::to_value(&catalog).unwrap_or_default();
            if let Some(map) = v.as_object_mut() {
                map.insert("recipes".into(), serde_json::to_value(recipes::all()).unwrap_or_default());
                map.insert("recipes_source".into(), recipes::source_repository().into());
            }
            print_json(&v)
        }
        Format::Table => emit(&(table::presets(&catalog) + &table::recipes(recipes::all()))),
    }
    ExitCode::SUCCESS
}

fn cmd_explain(code: &str) -> ExitCode {
    if let Some(r) = rules::rule(code) {
        let sev = match r.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        };
        emit(&format!("{} ({sev})\n\n{}\n\nSource: {}\n", r.code, r.summary, r.source));
        return ExitCode::SUCCESS;
    }
    if let Some(s) = settings::setting(code) {
        emit(&s.explain());
        return ExitCode::SUCCESS;
    }
    if let Some(p) = meshplan_core::parallelism::row(code.trim()) {
        emit(&p.explain());
        return ExitCode::SUCCESS;
    }
    if let Some(r) = recipes::find(code.trim()) {
        emit(&r.explain());
        return ExitCode::SUCCESS;
    }
    let known: Vec<String> = rules::RULES.iter().map(|r| r.code.to_string()).collect();
    let parallelism = meshplan_core::parallelism::PARALLELISM.iter().map(|p| p.key);
    let codes: Vec<&str> = known.iter().map(String::as_str).chain(settings::all().map(|s| s.key)).chain(parallelism).collect();
    match meshplan_core::fields::nearest(code, &codes) {
        Some(n) => eprintln!("meshplan: no diagnostic code or setting {code:?}; did you mean {n:?}?"),
        None => eprintln!("meshplan: no diagnostic code or setting {code:?}; known codes and settings:\n  {}", codes.join("\n  ")),
    }
    ExitCode::from(2)
}

fn main() -> ExitCode {
    // Usage errors exit with status 2 and name the bad argument; --help and --version exit 0.
    let cli = Cli::parse();
    let _ = presets::models();
    match &cli.command {
        Command::Plan { input, output } => cmd_plan(input, output.format),
        Command::Search { input, top, output } => cmd_search(input, *top, output.format),
        Command::Size { input, size, output } => size::cmd_size(input, size, output.format),
        Command::Export { input, kind } => cmd_export(input, kind),
        Command::Import { file, from, model, gpu, output } => trace::cmd_import(file, from.as_deref(), model.clone(), gpu.clone(), output.format),
        Command::Diff { a, b, output } => trace::cmd_diff(a, b, output.format),
        Command::Oom { plan, message, rank, model, gpu, output } => {
            trace::cmd_oom(plan, message.as_deref(), *rank, (model.clone(), gpu.clone()), output.format)
        }
        Command::Schedule { input, width, output } => trace::cmd_schedule(input, *width as usize, output.format),
        Command::Presets { output } => cmd_presets(output.format),
        Command::Explain { code } => cmd_explain(code),
    }
}
