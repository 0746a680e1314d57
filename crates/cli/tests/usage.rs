//! The command line itself: `--help` for every command, usage errors that name the bad argument (exit status 2),
//! and every spelling of the flags README.md documents.

mod common;
use common::run;

/// Each command with the flags README.md's CLI table gives it.
const COMMANDS: &[(&str, &[&str])] = &[
    ("plan", &["--format", "-f", "<FILE>"]),
    ("search", &["--top", "-n", "--format", "-f", "<FILE>"]),
    ("size", &["--tokens", "--steps", "--deadline", "--gpu-hours", "--nodes", "--batch-tokens", "--efficiency", "--format", "<FILE>"]),
    ("export", &["--kind", "-k", "<FILE>"]),
    ("presets", &["--format", "-f"]),
    ("explain", &["<CODE>"]),
];

#[test]
fn every_command_has_help_that_lists_its_flags() {
    for (command, flags) in COMMANDS {
        for args in [vec![*command, "--help"], vec![*command, "-h"], vec!["help", *command]] {
            let (code, out, err) = run(&args, None);
            assert_eq!(code, 0, "{args:?}: {err}");
            assert!(out.contains(&format!("Usage: meshplan {command}")), "{args:?}:\n{out}");
            for flag in *flags {
                assert!(out.contains(flag), "{args:?} does not mention {flag}:\n{out}");
            }
        }
    }
    // The top-level help lists the five commands and the exit statuses.
    for args in [["--help"], ["-h"], ["help"]] {
        let (code, out, _) = run(&args, None);
        assert_eq!(code, 0, "{args:?}");
        for (command, _) in COMMANDS {
            assert!(out.lines().any(|l| l.trim_start().starts_with(command)), "{args:?} lists no {command}:\n{out}");
        }
        assert!(out.contains("0 valid, 1 the plan has errors") && out.contains("2 unreadable input"), "{out}");
    }
}

#[test]
fn help_shows_the_defaults() {
    // README: the table is the default format, the search lists 5 layouts, export prints every kind.
    let (_, out, _) = run(&["search", "--help"], None);
    assert!(out.contains("[default: 5]") && out.contains("[default: table]"), "{out}");
    let (_, out, _) = run(&["export", "--help"], None);
    assert!(out.contains("[default: all]"), "{out}");
}

#[test]
fn an_unknown_flag_is_named() {
    for args in [vec!["plan", "-", "--bogus"], vec!["search", "-", "--frobnicate=3"], vec!["presets", "-x"]] {
        let bad = args[args.len() - 1].split('=').next().unwrap();
        let (code, out, err) = run(&args, Some("{}"));
        assert_eq!(code, 2, "{args:?}");
        assert!(err.contains(&format!("'{bad}'")), "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?} printed {out}");
    }
    // A flag of another command is not this command's: --kind belongs to export.
    let (code, _, err) = run(&["plan", "-", "--kind", "slurm"], Some("{}"));
    assert_eq!(code, 2);
    assert!(err.contains("'--kind'"), "{err}");
}

#[test]
fn a_missing_value_is_named() {
    for (args, flag) in [
        (["plan", "-", "--format"], "--format"),
        (["search", "-", "--top"], "--top"),
        (["export", "-", "--kind"], "--kind"),
        (["presets", "-f", ""], "--format"),
    ] {
        let (code, out, err) = run(&args, Some("{}"));
        assert_eq!(code, 2, "{args:?}");
        assert!(err.contains(flag), "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}");
    }
}

#[test]
fn a_bad_format_names_the_allowed_values() {
    for args in [vec!["plan", "-", "--format", "xml"], vec!["presets", "--format=yaml"], vec!["search", "-", "-f", "csv"]] {
        let (code, _, err) = run(&args, Some("{}"));
        assert_eq!(code, 2, "{args:?}");
        assert!(err.contains("--format") && err.contains("possible values: table, json"), "{args:?}: {err}");
    }
    // The export kinds: ExportKind's five keys and all.
    let (code, _, err) = run(&["export", "-", "--kind", "pdf"], Some("{}"));
    assert_eq!(code, 2);
    assert!(err.contains("'pdf'") && err.contains("possible values: bridge, bridge-cli, megatron-lm, slurm, plan, all"), "{err}");
    // --top counts layouts: 0 and words are refused, naming the flag.
    for top in ["0", "two", "-1"] {
        let (code, _, err) = run(&["search", "-", "--top", top], Some("{}"));
        assert_eq!(code, 2, "--top {top}");
        assert!(err.contains("--top") && err.contains("≥ 1"), "--top {top}: {err}");
    }
}

#[test]
fn missing_and_extra_arguments_are_usage_errors() {
    for (args, named) in [
        (vec!["plan"], "<FILE>"),
        (vec!["search", "--top", "3"], "<FILE>"),
        (vec!["export"], "<FILE>"),
        (vec!["explain"], "<CODE>"),
        (vec!["plan", "a.json", "b.json"], "'b.json'"),
        (vec!["frobnicate"], "'frobnicate'"),
    ] {
        let (code, out, err) = run(&args, None);
        assert_eq!(code, 2, "{args:?}");
        assert!(err.contains(named), "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}");
    }
    // No command at all: the usage on standard error, status 2 (as before clap).
    let (code, out, err) = run(&[], None);
    assert_eq!(code, 2);
    assert!(out.is_empty() && err.contains("Usage: meshplan <COMMAND>"), "{err}");
}

/// The README example's plan, read from standard input.
fn example() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/llama-3.1-70b.json")).unwrap()
}

#[test]
fn every_spelling_of_format_reads_the_same() {
    // The README example: Llama 3.1 70B on 8 nodes of 8 H100s; TP 8 · PP 4 gives dense DP 64/32 = 2.
    let plan = example();
    for args in [
        vec!["plan", "-", "--format", "json"],
        vec!["plan", "-", "--format=json"],
        vec!["plan", "-", "-f", "json"],
        vec!["plan", "-fjson", "-"],
        vec!["plan", "--format", "table", "-", "--format", "json"],
    ] {
        let (code, out, err) = run(&args, Some(&plan));
        assert_eq!(code, 0, "{args:?}: {err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        assert_eq!(v["derived"]["data_parallel_size"], 2, "{args:?}");
    }
    for args in [vec!["plan", "-"], vec!["plan", "-", "--format", "table"], vec!["plan", "-", "--format", "text"]] {
        let (code, out, _) = run(&args, Some(&plan));
        assert_eq!(code, 0, "{args:?}");
        assert!(out.starts_with("Llama 3.1 70B on 8 × NVIDIA H100 SXM5 80GB (64 GPUs, NVLink domain 8)\n"), "{args:?}:\n{out}");
    }
}

#[test]
fn export_kind_and_search_top_short_forms() {
    let plan = example();
    // -k slurm: one export, no "==>" header; 8 nodes of 8 GPUs.
    let (code, out, _) = run(&["export", "-", "-k", "slurm"], Some(&plan));
    assert_eq!(code, 0);
    assert!(out.starts_with("#!/bin/bash\n") && out.contains("#SBATCH --nodes=8\n") && !out.contains("==>"), "{out}");
    // The default is every kind: five headers, in ExportKind::ALL's order.
    let (_, out, _) = run(&["export", "-"], Some(&plan));
    let headers: Vec<&str> = out.lines().filter(|l| l.starts_with("==> ")).map(|l| l.split(' ').nth(1).unwrap()).collect();
    assert_eq!(headers, ["bridge", "bridge-cli", "megatron-lm", "slurm", "plan"]);
    // -n 2 lists two candidates.
    let (code, out, err) = run(&["search", "-", "-n", "2", "-f", "json"], Some(&plan));
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["candidates"].as_array().map(Vec::len), Some(2));
}

#[test]
fn version_names_the_package() {
    for flag in ["--version", "-V"] {
        let (code, out, _) = run(&[flag], None);
        assert_eq!(code, 0);
        assert_eq!(out, format!("meshplan {}\n", env!("CARGO_PKG_VERSION")));
    }
}

#[test]
fn output_into_a_closed_pipe_is_not_a_crash() {
    // `meshplan plan FILE --format json | head -1`: the reader goes away after the first line. meshplan must not
    // panic (status 101, "failed printing to stdout"); it stops writing and keeps the plan's status, 0. The README
    // example on 64 nodes: 512 ranks in each of 9 group kinds, one rank per pretty-printed line, is over 64 KiB, more
    // than a pipe buffers, so the write meets the closed pipe whether or not it starts before the reader is gone.
    use std::io::Write;
    use std::process::{Command, Stdio};
    let plan = example().replace("\"num_nodes\": 8", "\"num_nodes\": 64");
    let mut child = Command::new(env!("CARGO_BIN_EXE_meshplan"))
        .args(["plan", "-", "--format", "json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    child.stdin.take().unwrap().write_all(plan.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}
