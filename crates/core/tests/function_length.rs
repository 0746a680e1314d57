//! No function over 150 lines outside tests, in any crate of the workspace: the core, the CLI, the search worker
//! and the page (the root package's `src/`). A function is counted from the line of its `fn` to the line of its
//! closing brace; comments, strings and character literals are blanked before braces are counted, and
//! `#[cfg(test)]` / `#[test]` items are skipped. A function that would truly read worse split goes in `ALLOWED`
//! with its reason.

use std::path::{Path, PathBuf};

/// The longest function a reader is asked to hold in their head.
const MAX_LINES: usize = 150;

/// Functions allowed past `MAX_LINES`, as `(file relative to the workspace root, fn name, why)`. Keep it short.
const ALLOWED: &[(&str, &str, &str)] = &[];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The source directories scanned, relative to the workspace root.
const ROOTS: &[&str] = &["crates/core/src", "crates/core/build.rs", "crates/core/examples", "crates/cli/src", "crates/search-worker/src", "src"];

/// Every Rust file of `ROOTS`.
fn scanned_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in ROOTS {
        rust_files(&workspace().join(dir), &mut files);
    }
    files
}

fn rust_files(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        let mut entries: Vec<_> = std::fs::read_dir(path).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort();
        for entry in entries {
            rust_files(&entry, out);
        }
    } else if path.extension().is_some_and(|e| e == "rs") {
        out.push(path.to_path_buf());
    }
}

/// The source with every comment, string literal (plain, byte, raw) and character literal replaced by spaces,
/// newlines kept, so that braces and lines can be counted on what is left. Lifetimes (`'a`) are kept.
fn blank(text: &str) -> String {
    let s: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    // Push `s[from..to]` as blanks (newlines kept).
    let blanked = |out: &mut String, from: usize, to: usize| {
        for &c in &s[from..to.min(s.len())] {
            out.push(if c == '\n' { '\n' } else { ' ' });
        }
    };
    let ident_char = |c: char| c.is_alphanumeric() || c == '_';
    while i < s.len() {
        let c = s[i];
        let next = s.get(i + 1).copied();
        let prev_ident = i > 0 && ident_char(s[i - 1]);
        if c == '/' && next == Some('/') {
            let end = (i..s.len()).find(|&j| s[j] == '\n').unwrap_or(s.len());
            blanked(&mut out, i, end);
            i = end;
        } else if c == '/' && next == Some('*') {
            // Block comments nest in Rust.
            let (mut depth, mut j) = (0usize, i);
            while j < s.len() {
                if s[j] == '/' && s.get(j + 1) == Some(&'*') {
                    depth += 1;
                    j += 2;
                } else if s[j] == '*' && s.get(j + 1) == Some(&'/') {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blanked(&mut out, i, j);
            i = j;
        } else if !prev_ident && (c == 'r' || (c == 'b' && next == Some('r'))) && raw_string_start(&s, i).is_some() {
            let (hashes, open) = raw_string_start(&s, i).unwrap();
            // The closing quote followed by as many `#`.
            let mut j = open + 1;
            while j < s.len() && !(s[j] == '"' && (1..=hashes).all(|k| s.get(j + k) == Some(&'#'))) {
                j += 1;
            }
            let end = (j + 1 + hashes).min(s.len());
            blanked(&mut out, i, end);
            i = end;
        } else if c == '"' || (c == 'b' && next == Some('"') && !prev_ident) {
            let open = if c == 'b' { i + 1 } else { i };
            let mut j = open + 1;
            while j < s.len() && s[j] != '"' {
                j += if s[j] == '\\' { 2 } else { 1 };
            }
            blanked(&mut out, i, j + 1);
            i = j + 1;
        } else if c == '\'' || (c == 'b' && next == Some('\'') && !prev_ident) {
            let open = if c == 'b' { i + 1 } else { i };
            match char_literal_end(&s, open) {
                Some(end) => {
                    blanked(&mut out, i, end);
                    i = end;
                }
                // A lifetime or a label: keep it.
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// At `s[i]` = `r` or `br`: a raw string's `#` count and the index of its opening quote.
fn raw_string_start(s: &[char], i: usize) -> Option<(usize, usize)> {
    let mut j = if s[i] == 'b' { i + 2 } else { i + 1 };
    let mut hashes = 0;
    while s.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    (s.get(j) == Some(&'"')).then_some((hashes, j))
}

/// At `s[open]` = `'`: the index past a character literal (`'a'`, `'\n'`, `'\u{1F600}'`, `'\''`), or `None` for a
/// lifetime or label (`'a`, `'static`, `'outer:`).
fn char_literal_end(s: &[char], open: usize) -> Option<usize> {
    match s.get(open + 1)? {
        '\\' => {
            let close = (open + 2..s.len().min(open + 14)).find(|&j| s[j] == '\'' && j > open + 2)?;
            Some(close + 1)
        }
        _ => (s.get(open + 2) == Some(&'\'')).then_some(open + 3),
    }
}

/// The index of the brace that closes the one at `open` (in blanked text).
fn matching_brace(b: &[u8], open: usize) -> usize {
    let mut depth = 0usize;
    for (j, &c) in b.iter().enumerate().skip(open) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return j;
                }
            }
            _ => {}
        }
    }
    b.len().saturating_sub(1)
}

/// The index of the `{` that opens the item starting at `from`, or `None` if the item ends at a `;` first (a
/// declaration without a body). Parentheses and brackets are skipped, so `[u8; 4]` ends nothing.
fn item_body(b: &[u8], from: usize) -> Option<usize> {
    let mut depth = 0i32;
    for (j, &c) in b.iter().enumerate().skip(from) {
        match c {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth -= 1,
            b'{' if depth == 0 => return Some(j),
            b';' if depth == 0 => return None,
            _ => {}
        }
    }
    None
}

/// The braces opened minus closed, or `None` if a prefix closes more than it opened.
fn brace_balance(code: &str) -> Option<i64> {
    let mut depth = 0i64;
    for c in code.bytes() {
        depth += match c {
            b'{' => 1,
            b'}' => -1,
            _ => 0,
        };
        if depth < 0 {
            return None;
        }
    }
    Some(depth)
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Every function with a body in `text`: (name, first line, lines from its `fn` to its closing brace), test items
/// (`#[cfg(test)]`, `#[test]`) skipped.
fn functions(text: &str) -> Vec<(String, usize, usize)> {
    let code = blank(text);
    let b = code.as_bytes();
    let line_of = |at: usize| 1 + b[..at].iter().filter(|&&c| c == b'\n').count();
    let mut found = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let rest = &code[i..];
        if rest.starts_with("#[cfg(test)]") || rest.starts_with("#[test]") || rest.starts_with("#[cfg(all(test") {
            // Skip the item the attribute marks: up to its body's closing brace, or its `;`.
            let after = i + rest.find(']').unwrap() + 1;
            i = match item_body(b, after) {
                Some(open) => matching_brace(b, open) + 1,
                None => after,
            };
            continue;
        }
        let at_word = i == 0 || !is_ident(b[i - 1]);
        if at_word && rest.starts_with("fn") && b.get(i + 2).is_some_and(|c| c.is_ascii_whitespace()) {
            let name: String = rest[2..].trim_start().chars().take_while(|&c| c.is_alphanumeric() || c == '_').collect();
            if !name.is_empty() {
                if let Some(open) = item_body(b, i + 2) {
                    let close = matching_brace(b, open);
                    let first = line_of(i);
                    found.push((name, first, line_of(close) - first + 1));
                }
            }
        }
        i += 1;
    }
    found
}

#[test]
fn no_function_is_over_150_lines() {
    let root = workspace();
    let files = scanned_files();
    assert!(files.len() > 100, "the scan found only {} files", files.len());
    let mut too_long = Vec::new();
    let mut counted = 0;
    for path in &files {
        let rel = path.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
        let text = std::fs::read_to_string(path).unwrap();
        // The blanking read the file as the compiler does: its braces balance, and never close more than opened
        // (a string or comment misread would swallow or expose braces).
        assert_eq!(brace_balance(&blank(&text)), Some(0), "{rel}: braces do not balance once comments and literals are blanked");
        for (name, line, lines) in functions(&text) {
            counted += 1;
            let allowed = ALLOWED.iter().any(|&(file, f, _)| file == rel && f == name);
            if lines > MAX_LINES && !allowed {
                too_long.push(format!("{rel}:{line} fn {name}: {lines} lines"));
            }
        }
    }
    assert!(counted > 1000, "the scan found only {counted} functions");
    assert!(too_long.is_empty(), "functions over {MAX_LINES} lines (split them, or name one in ALLOWED with why):\n{}", too_long.join("\n"));
}

#[test]
fn every_allowed_function_still_exists_and_is_long() {
    let root = workspace();
    for &(file, name, why) in ALLOWED {
        assert!(!why.is_empty(), "{file} fn {name}: no reason given");
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let lines = functions(&text).into_iter().filter(|(n, _, _)| n == name).map(|(_, _, l)| l).max();
        assert!(lines.is_some_and(|l| l > MAX_LINES), "{file} fn {name} is allowed but no longer over {MAX_LINES} lines ({lines:?}): drop it from ALLOWED");
    }
}

#[test]
fn the_scanner_counts_what_a_reader_sees() {
    // Braces inside strings, raw strings, byte strings, chars and comments do not count; lifetimes and labels do not
    // start a char literal; test items are skipped; declarations without a body are not functions.
    let sample = r####"
trait T { fn declared(&self) -> u8; }
fn tricky<'a>(x: &'a str) -> [u8; 2] {
    let s = "}}} \" {";
    let r = r#"}" }"#;
    let b = b'}';
    let c = '{';
    let e = '\'';
    let u = '\u{7D}';
    /* } /* nested { */ } */
    // }
    'outer: loop { break 'outer; }
    let f: fn(u8) -> u8 = id;
    [0, 1]
}
fn id(x: u8) -> u8 { x }
#[cfg(test)]
mod tests {
    fn hidden() {}
}
#[test]
fn also_hidden() {}
fn after_tests() {
}
"####;
    let found = functions(sample);
    let names: Vec<_> = found.iter().map(|(n, _, _)| n.as_str()).collect();
    assert_eq!(names, ["tricky", "id", "after_tests"]);
    assert_eq!(found[0], ("tricky".to_string(), 3, 13));
    assert_eq!(found[1].2, 1);
    assert_eq!(found[2], ("after_tests".to_string(), 23, 2));

    // And a long function is caught: 151 lines from `fn` to `}`.
    let long = format!("fn long() {{\n{}}}\n", "    let x = 1;\n".repeat(149));
    assert_eq!(functions(&long), [("long".to_string(), 1, 151)]);
    assert!(functions(&long)[0].2 > MAX_LINES);

    // Misread literals show as unbalanced braces.
    assert_eq!(brace_balance(&blank(sample)), Some(0));
    assert_eq!(brace_balance("fn f() { \"}\" }"), None);
}

/// The longest functions, to see how close the code is to the limit:
/// `cargo test -p meshplan-core --test function_length -- --ignored --nocapture`.
#[test]
#[ignore]
fn print_longest() {
    let root = workspace();
    let files = scanned_files();
    let mut all = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        for (name, line, lines) in functions(&text) {
            all.push((lines, format!("{}:{line} {name}", path.strip_prefix(&root).unwrap().display())));
        }
    }
    all.sort();
    println!("{} files, {} fns", files.len(), all.len());
    for (l, n) in all.iter().rev().take(25) {
        println!("{l} {n}");
    }
}
