//! The catalogue files (`data/*.json`) compiled in without their indentation: the whitespace between JSON tokens is
//! dropped (RFC 8259 §2: "insignificant whitespace is allowed before or after any of the six structural characters"),
//! so the page's wasm carries fewer bytes; every string and number is kept as written. The top-level keys no reader
//! of a file names ([`UNREAD`]: notes for the reviewer, the list of what was left out) are dropped too. The files in
//! `data/` stay the readable, reviewed source.

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

/// Per file, the top-level keys its reader does not read (recipes.rs `RecipesFile` reads `source_repository` and
/// `recipes`; presets.rs `RecipesFile` reads `recipes`). tests/data_minified.rs checks the rest is the file's value.
const UNREAD: [(&str, &[&str]); 2] =
    [("bridge_recipes.json", &["comment", "skipped"]), ("recipes.json", &["comment", "source_repository", "without_recipe"])];

/// `json` (minified, an object) without the top-level members named in `keys`.
fn drop_keys(json: &str, keys: &[&str]) -> String {
    // Each top-level member as a byte range: from its key's quote to before the comma or brace that ends it.
    let b = json.as_bytes();
    let (mut depth, mut in_string, mut escaped, mut start) = (0usize, false, false, None);
    let mut members = Vec::new();
    for (i, &c) in b.iter().enumerate() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => {
                in_string = true;
                if depth == 1 && start.is_none() {
                    start = Some(i);
                }
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' | b',' => {
                if depth == 1 {
                    if let Some(s) = start.take() {
                        members.push(s..i);
                    }
                }
                if c != b',' {
                    depth = depth.saturating_sub(1);
                }
            }
            _ => {}
        }
    }
    let kept: Vec<&str> = members
        .into_iter()
        .map(|r| &json[r])
        .filter(|m| !keys.iter().any(|k| m.starts_with(&format!("\"{k}\":"))))
        .collect();
    if !json.starts_with('{') { json.to_string() } else { format!("{{{}}}", kept.join(",")) }
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
            let mut json = minify(&text);
            if let Some((_, keys)) = UNREAD.iter().find(|(f, _)| *f == name.to_string_lossy()) {
                json = drop_keys(&json, keys);
            }
            if let Err(e) = fs::write(Path::new(&out).join(name), json) {
                panic!("build.rs: cannot write {}: {e}", name.to_string_lossy());
            }
        }
    }
}
