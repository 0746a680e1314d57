//! The catalogue files (`data/*.json`) compiled in without their indentation: the whitespace between JSON tokens is
//! dropped (RFC 8259 §2: "insignificant whitespace is allowed before or after any of the six structural characters"),
//! so the page's wasm carries fewer bytes; every string and number is kept as written. The top-level keys no reader
//! of a file names ([`UNREAD`]: notes for the reviewer, the list of what was left out) are dropped too, as are the
//! top-level keys beside those a reader reads ([`ONLY_READ`]), the keys no reader reads inside each top-level member
//! ([`UNREAD_IN_EACH`]: the sources of values a struct takes only the `value` of) and inside each element of a
//! top-level array ([`UNREAD_IN_ELEMENTS`]: the model presets' notes). The files in `data/` stay the
//! readable, reviewed source, with every source; what the page's wasm need not carry is left out of its copy.

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
const UNREAD: [(&str, &[&str]); 4] = [
    ("bridge_recipes.json", &["comment", "skipped"]),
    ("recipes.json", &["comment", "source_repository", "without_recipe"]),
    ("perf_assumptions.json", &["comment"]),
    ("advice.json", &["comment"]),
];

/// Per file, the only top-level keys its reader reads ([`perf_data`] reads `constants` and the Advisor's tie band; the
/// calibration's other figures beside them are for docs/calibration.md and the reviewer).
const ONLY_READ: [(&str, &[&str]); 1] = [("perf_constants.json", &["constants", "median_abs_ratio_error"])];

/// Per file, the keys no reader reads inside each top-level member (perf.rs `Assumed` holds `value`, not `source`).
const UNREAD_IN_EACH: [(&str, &[&str]); 1] = [("perf_assumptions.json", &["source"])];

/// Per file, the keys no reader reads inside each element of its top-level array (a model preset's `notes`: prose for
/// the reviewer; `presets::ModelPreset` keeps the key, name, family, Hugging Face id, source and config).
const UNREAD_IN_ELEMENTS: [(&str, &[&str]); 1] = [("models.json", &["notes"])];

/// Without the feature `catalogue-sources` (the page's build), also the provenance no plan reads: each GPU's sources
/// and notes and each model preset's source, which only `presets::catalog` (the CLI's and the JS API's) returns.
const SOURCES_IN_ELEMENTS: [(&str, &[&str]); 2] = [("gpus.json", &["sources", "notes"]), ("models.json", &["source"])];

/// `json` (minified, an array) with the members named in `keys` dropped from each element that is an object.
fn drop_keys_in_elements(json: &str, keys: &[&str]) -> Option<String> {
    let elements: Vec<String> =
        element_ranges(json)?.into_iter().map(|r| if json[r.clone()].starts_with('{') { drop_keys(&json[r], keys) } else { json[r].to_string() }).collect();
    Some(format!("[{}]", elements.join(",")))
}

/// The byte range of each element of `json` (minified), or None when it is not an array.
fn element_ranges(json: &str) -> Option<Vec<std::ops::Range<usize>>> {
    if !json.starts_with('[') {
        return None;
    }
    let (mut depth, mut start) = (0usize, 1);
    let mut elements = Vec::new();
    for (i, c) in outside_strings(json) {
        match c {
            b'{' | b'[' => depth += 1,
            b'}' | b']' | b',' => {
                // A comma or the closing bracket of the array itself ends an element.
                if depth == 1 {
                    if i > start {
                        elements.push(start..i);
                    }
                    start = i + 1;
                }
                if c != b',' {
                    depth = depth.saturating_sub(1);
                }
            }
            _ => {}
        }
    }
    Some(elements)
}

/// The bytes of `json` outside its strings, with their offsets; each string's opening quote is kept (a string's
/// escapes, `\"` and `\\`, are followed).
fn outside_strings(json: &str) -> Vec<(usize, u8)> {
    let (mut in_string, mut escaped) = (false, false);
    let mut out = Vec::new();
    for (i, &c) in json.as_bytes().iter().enumerate() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        in_string = c == b'"';
        out.push((i, c));
    }
    out
}

/// `json` (minified, an object) without the top-level members named in `keys`.
fn drop_keys(json: &str, keys: &[&str]) -> String {
    keep_members(json, |key, _| !keys.contains(&key))
}

/// `json` (minified, an object) with only the top-level members named in `keys`.
fn only_keys(json: &str, keys: &[&str]) -> String {
    keep_members(json, |key, _| keys.contains(&key))
}

/// `json` (minified, an object) with the members named in `keys` dropped from each top-level member that is an object.
fn drop_keys_in_each(json: &str, keys: &[&str]) -> Option<String> {
    let members: Vec<String> = member_ranges(json)?
        .into_iter()
        .map(|r| {
            let member = &json[r];
            let (key, value) = split_member(member);
            if value.starts_with('{') { format!("\"{key}\":{}", drop_keys(value, keys)) } else { member.to_string() }
        })
        .collect();
    Some(format!("{{{}}}", members.join(",")))
}

/// A member `"key":value` as its key (unescaped keys only, as the data files' are) and its value.
fn split_member(member: &str) -> (&str, &str) {
    let end = member[1..].find('"').map_or(member.len(), |i| i + 1);
    (&member[1..end], member.get(end + 2..).unwrap_or(""))
}

/// `json` (minified, an object) with the top-level members `keep(key, value)` says yes to; any other text unchanged.
fn keep_members(json: &str, keep: impl Fn(&str, &str) -> bool) -> String {
    let Some(ranges) = member_ranges(json) else { return json.to_string() };
    let kept: Vec<&str> = ranges
        .into_iter()
        .map(|r| &json[r])
        .filter(|m| {
            let (key, value) = split_member(m);
            keep(key, value)
        })
        .collect();
    format!("{{{}}}", kept.join(","))
}

/// The byte range of each top-level member of `json` (minified), or None when it is not an object.
fn member_ranges(json: &str) -> Option<Vec<std::ops::Range<usize>>> {
    if !json.starts_with('{') {
        return None;
    }
    // Each top-level member as a byte range: from its key's quote to before the comma or brace that ends it.
    let (mut depth, mut start) = (0usize, None);
    let mut members = Vec::new();
    for (i, c) in outside_strings(json) {
        match c {
            b'"' => {
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
    Some(members)
}

/// The number members of `json` (minified, an object) as `key: f64` Rust field initialisers, each value through
/// `f64::from_str` and `{:?}` (a float literal that reads back as the same f64), or None when a member is no number.
fn number_fields(json: &str) -> Option<Vec<(String, String)>> {
    member_ranges(json)?
        .into_iter()
        .map(|r| {
            let (key, value) = split_member(&json[r]);
            let x: f64 = value.parse().ok()?;
            Some((key.to_string(), format!("{x:?}")))
        })
        .collect()
}

/// perf.rs's constants and assumptions as Rust constants (`perf_data.rs`), from the compiled-in JSON of the two perf
/// files: the page then carries neither the JSON nor serde's readers of the two structs. A struct field the file lacks,
/// or a key the struct lacks, does not compile; tests/data_minified.rs checks the values equal serde's reading of
/// the data files.
fn perf_data(constants: &str, assumptions: &str) -> Option<String> {
    let members: Vec<(&str, &str)> = member_ranges(constants)?.into_iter().map(|r| split_member(&constants[r])).collect();
    let inner = members.iter().find(|(k, _)| *k == "constants")?.1;
    let c = number_fields(inner)?;
    let ratio = members.iter().find(|(k, _)| *k == "median_abs_ratio_error")?.1.trim().to_string();
    ratio.parse::<f64>().ok()?;
    let a: Vec<(String, String)> = member_ranges(assumptions)?
        .into_iter()
        .map(|r| {
            let (key, value) = split_member(&assumptions[r]);
            let fields = number_fields(value)?;
            let (_, v) = fields.iter().find(|(k, _)| k == "value")?;
            Some((key.to_string(), v.clone()))
        })
        .collect::<Option<_>>()?;
    let c: Vec<String> = c.iter().map(|(k, v)| format!("    {k}: {v},")).collect();
    let a: Vec<String> = a.iter().map(|(k, v)| format!("    {k}: Assumed {{ value: {v} }},")).collect();
    Some(format!(
        "// Generated by crates/core/build.rs from data/perf_constants.json and data/perf_assumptions.json.\n\
         const COMPILED_CONSTANTS: Constants = Constants {{\n{}\n}};\n\
         const COMPILED_ASSUMPTIONS: Assumptions = Assumptions {{\n{}\n}};\n\
         const COMPILED_MEDIAN_ABS_RATIO_ERROR: f64 = {};\n",
        c.join("\n"),
        a.join("\n"),
        ratio
    ))
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
            let name_is = |f: &&str| *f == name.to_string_lossy();
            if let Some((_, keys)) = UNREAD.iter().find(|(f, _)| name_is(f)) {
                json = drop_keys(&json, keys);
            }
            if let Some((_, keys)) = ONLY_READ.iter().find(|(f, _)| name_is(f)) {
                json = only_keys(&json, keys);
            }
            if let Some((_, keys)) = UNREAD_IN_EACH.iter().find(|(f, _)| name_is(f)) {
                json = drop_keys_in_each(&json, keys).unwrap_or(json);
            }
            if let Some((_, keys)) = UNREAD_IN_ELEMENTS.iter().find(|(f, _)| name_is(f)) {
                json = drop_keys_in_elements(&json, keys).unwrap_or(json);
            }
            if env::var_os("CARGO_FEATURE_CATALOGUE_SOURCES").is_none()
                && let Some((_, keys)) = SOURCES_IN_ELEMENTS.iter().find(|(f, _)| name_is(f))
            {
                json = drop_keys_in_elements(&json, keys).unwrap_or(json);
            }
            if let Err(e) = fs::write(Path::new(&out).join(name), json) {
                panic!("build.rs: cannot write {}: {e}", name.to_string_lossy());
            }
        }
    }
    let read = |name: &str| fs::read_to_string(Path::new(&out).join(name)).unwrap_or_default();
    let Some(rust) = perf_data(&read("perf_constants.json"), &read("perf_assumptions.json")) else {
        panic!("build.rs: data/perf_constants.json or data/perf_assumptions.json is not an object of numbers as perf.rs reads");
    };
    if let Err(e) = fs::write(Path::new(&out).join("perf_data.rs"), rust) {
        panic!("build.rs: cannot write perf_data.rs: {e}");
    }
}
