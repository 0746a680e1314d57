//! The catalogue files (`data/*.json`) compiled in without their indentation: the whitespace between JSON tokens is
//! dropped (RFC 8259 §2: "insignificant whitespace is allowed before or after any of the six structural characters"),
//! so the page's wasm carries fewer bytes; every string and number is kept as written. The files in `data/` stay
//! the readable, reviewed source.

use std::{env, fs, path::Path};

/// `json` with the whitespace outside its strings removed (a string's escapes, `\"` and `\\`, are followed).
fn minify(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in json.chars() {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if !matches!(c, ' ' | '\t' | '\n' | '\r') {
            in_string = c == '"';
            out.push(c);
        }
    }
    out
}

fn main() {
    let out = env::var("OUT_DIR").unwrap_or_default();
    println!("cargo:rerun-if-changed=data");
    let Ok(dir) = fs::read_dir("data") else { return };
    for entry in dir.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "json") {
            println!("cargo:rerun-if-changed={}", path.display());
            let text = fs::read_to_string(&path).unwrap_or_default();
            let name = path.file_name().unwrap_or_default();
            if let Err(e) = fs::write(Path::new(&out).join(name), minify(&text)) {
                panic!("build.rs: cannot write {}: {e}", name.to_string_lossy());
            }
        }
    }
}
