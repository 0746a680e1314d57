//! What every command shares with standard input and output: the FILE argument, the output format, reading
//! FILE or `-`, writing to a reader that may go away, and the exit status of unreadable input. Below `main` and
//! `trace`, which both use it.

use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args)]
pub(crate) struct Input {
    /// The plan file (JSON, Megatron names), or - for standard input
    #[arg(value_name = "FILE")]
    pub(crate) file: PathBuf,
}

#[derive(Clone, Copy, PartialEq, ValueEnum)]
pub(crate) enum Format {
    #[value(alias = "text")]
    Table,
    Json,
}

pub(crate) fn read_input(path: &Path) -> Result<String, String> {
    if path.as_os_str() == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s).map_err(|e| format!("cannot read standard input: {e}"))?;
        Ok(s)
    } else {
        std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
    }
}

/// Writes `text` to standard output. A reader that went away (`meshplan plan … | head`) is not an error of
/// the plan: the rest of the output is dropped quietly instead of panicking in `print!`.
pub(crate) fn emit(text: &str) {
    let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), text.as_bytes());
}

pub(crate) fn print_json<T: serde::Serialize>(value: &T) {
    match serde_json::to_string_pretty(value) {
        Ok(s) => emit(&(s + "\n")),
        Err(e) => eprintln!("meshplan: cannot encode the report: {e}"),
    }
}

/// Prints `message` and gives exit status 2 (unreadable input).
pub(crate) fn unreadable(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("meshplan: {message}");
    ExitCode::from(2)
}
