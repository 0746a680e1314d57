//! `scripts/contract-checks.sh`, which CI (`.ci/run` → `scripts/test-all.sh`) runs over `../shared/checks`: a check
//! that crashed has checked nothing, so a check that raises, exits non-zero or prints a `FAIL` line fails the run, and
//! no category of failure is excused. Before the script existed, test-all ran each check with `|| true` and looked
//! only for `FAIL` lines (except `FAIL query-groups-not-divisible:`), so the crashing and excused checks below passed.

use std::path::{Path, PathBuf};
use std::process::Command;

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/contract-checks.sh")
}

/// True (and says so) where there is no python3 to run a check with.
fn no_python() -> bool {
    let missing = !Command::new("python3").arg("--version").output().is_ok_and(|o| o.status.success());
    if missing {
        eprintln!("no python3: the contract checks cannot run here");
    }
    missing
}

/// Runs the script over a directory holding `checks` (file name, Python source) and returns its exit status and
/// what it printed on standard error.
fn run(name: &str, checks: &[(&str, &str)]) -> (i32, String) {
    let dir = std::env::temp_dir().join(format!("meshplan-contract-checks-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (file, source) in checks {
        std::fs::write(dir.join(file), source).unwrap();
    }
    let out = Command::new("bash").arg(script()).arg(env!("CARGO_BIN_EXE_meshplan")).arg(&dir).output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// A check that drives the binary as the shared checks do and passes.
const PASSES: &str = r#"
import json, subprocess, sys
out = subprocess.run([sys.argv[1], "presets", "--format", "json"], capture_output=True, text=True, check=True)
assert "llama-3.1-8b" in [m["key"] for m in json.loads(out.stdout)["models"]]
print("PASS presets: 1/1")
"#;

#[test]
fn a_check_that_passes_passes() {
    if no_python() {
        return;
    }
    let (status, stderr) = run("pass", &[("ok.py", PASSES)]);
    assert_eq!(status, 0, "{stderr}");
}

#[test]
fn a_check_that_crashes_fails_the_run() {
    if no_python() {
        return;
    }
    // A traceback with no FAIL line (the old loop's `|| true` let it pass).
    let (status, stderr) = run("crash", &[("ok.py", PASSES), ("crash.py", "print('checking')\nraise KeyError('models')\n")]);
    assert_eq!(status, 1, "{stderr}");
    assert!(stderr.contains("crash.py failed") && stderr.contains("KeyError"), "{stderr}");
    assert!(!stderr.contains("ok.py failed"), "{stderr}");
}

#[test]
fn a_traceback_caught_and_printed_fails_the_run() {
    if no_python() {
        return;
    }
    let source = "import traceback\ntry:\n    1 / 0\nexcept Exception:\n    traceback.print_exc()\nprint('PASS 0/0')\n";
    let (status, stderr) = run("caught", &[("caught.py", source)]);
    assert_eq!(status, 1, "{stderr}");
}

#[test]
fn a_non_zero_exit_fails_the_run() {
    if no_python() {
        return;
    }
    let (status, stderr) = run("exit", &[("exit.py", "import sys\nprint('PASS 3/3')\nsys.exit(3)\n")]);
    assert_eq!(status, 1, "{stderr}");
    assert!(stderr.contains("exit status 3"), "{stderr}");
}

#[test]
fn no_fail_line_is_excused() {
    if no_python() {
        return;
    }
    // The category the old loop excused, and any other.
    for line in ["FAIL query-groups-not-divisible: expected an error", "FAIL sp-requires-tp: no error"] {
        let (status, stderr) = run("fail", &[("fail.py", &format!("print({line:?})\nprint('done')\n"))]);
        assert_eq!(status, 1, "{line}: {stderr}");
    }
}

#[test]
fn an_empty_check_directory_fails_the_run() {
    // Nothing checked is not a pass (no python needed: the script stops before running one).
    let (status, _) = run("empty", &[]);
    assert_eq!(status, 1);
}
