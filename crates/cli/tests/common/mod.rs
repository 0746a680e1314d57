//! Runs the built `meshplan` binary as a user would.
#![allow(dead_code)]

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// `meshplan ARGS`, with `stdin` piped in when given.
pub fn meshplan(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_meshplan"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn meshplan");
    let pipe = child.stdin.take();
    if let (Some(s), Some(mut pipe)) = (stdin, pipe) {
        // A usage error makes meshplan exit before it reads the plan; the closed pipe is then expected.
        if let Err(e) = pipe.write_all(s.as_bytes()) {
            assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
        }
    }
    child.wait_with_output().expect("meshplan runs")
}

/// (exit status, stdout, stderr) of `meshplan ARGS`.
pub fn run(args: &[&str], stdin: Option<&str>) -> (i32, String, String) {
    let out = meshplan(args, stdin);
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}
