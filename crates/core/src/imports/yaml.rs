//! The subset of YAML a Megatron Bridge run writes (`ConfigContainer.to_yaml`, OmegaConf's dump) and its example
//! override files use: nested block mappings by indentation, block sequences of scalars (`- mlp`), flow sequences
//! (`[0, 1]`) and mappings (`{a: 1, b: true}`), plain and quoted scalars, comments. Anchors, tags and multi-document
//! files are not read (their lines become strings or are reported by the caller as unrecognized).
//!
//! Bounded: nesting at most [`MAX_DEPTH`] deep; every line is visited once.

use serde_json::{Map, Value};

/// Deepest nesting read (a Bridge config nests 4 levels).
pub use crate::limits::MAX_YAML_DEPTH as MAX_DEPTH;

/// One meaningful line: its indentation and its text without the comment.
struct Line<'a> {
    indent: usize,
    text: &'a str,
}

/// The text of a line before an unquoted ` #` comment.
fn strip_comment(s: &str) -> &str {
    let (mut single, mut double) = (false, false);
    let mut prev_space = true;
    for (i, c) in s.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && prev_space => return &s[..i],
            _ => {}
        }
        prev_space = c.is_whitespace();
    }
    s
}

fn lines(text: &str) -> Vec<Line<'_>> {
    text.lines()
        .filter_map(|l| {
            let body = strip_comment(l).trim_end();
            let trimmed = body.trim_start();
            let skip = trimmed.is_empty() || trimmed == "---" || trimmed == "..." || trimmed.starts_with('%');
            (!skip).then(|| Line { indent: body.len() - trimmed.len(), text: trimmed })
        })
        .collect()
}

/// A YAML scalar (also the values of Hydra overrides and Megatron's argument dump, which spell them alike:
/// `null`/`None`/`~`, `true`/`True`, numbers, quoted strings, `[a, b]` lists; anything else is a string).
pub fn scalar(s: &str) -> Value {
    scalar_at(s, 0)
}

/// [`scalar`] at nesting `depth`: flow collections deeper than [`MAX_DEPTH`] stay strings (no recursion without bound).
fn scalar_at(s: &str, depth: usize) -> Value {
    let s = s.trim();
    match s {
        "" | "null" | "Null" | "NULL" | "None" | "~" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        "{}" => return Value::Object(Map::new()),
        _ => {}
    }
    if s.len() >= 2 && ((s.starts_with('\'') && s.ends_with('\'')) || (s.starts_with('"') && s.ends_with('"'))) {
        return Value::String(s[1..s.len() - 1].to_string());
    }
    let nested = |p: &str| scalar_at(p, depth + 1);
    if depth >= MAX_DEPTH {
        return Value::String(s.to_string());
    }
    if let Some(inner) = s.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
        return Value::Array(split_top(inner).into_iter().filter(|p| !p.trim().is_empty()).map(nested).collect());
    }
    if let Some(inner) = s.strip_prefix('(').and_then(|r| r.strip_suffix(')')).filter(|i| i.contains(',')) {
        return Value::Array(split_top(inner).into_iter().filter(|p| !p.trim().is_empty()).map(nested).collect());
    }
    // A flow mapping (`{overlap_grad_reduce: true, overlap_param_gather: true}`): each `key: value` entry; one that is
    // not leaves the whole a string.
    if let Some(inner) = s.strip_prefix('{').and_then(|r| r.strip_suffix('}')) {
        let entries: Option<Map<String, Value>> = split_top(inner)
            .into_iter()
            .filter(|p| !p.trim().is_empty())
            .map(|p| key_value(p.trim()).filter(|(k, _)| !k.is_empty()).map(|(k, v)| (k.to_string(), nested(v))))
            .collect();
        if let Some(map) = entries {
            return Value::Object(map);
        }
    }
    let plain = s.replace('_', "");
    if let Ok(n) = plain.parse::<u64>() {
        return Value::from(n);
    }
    if let Ok(n) = plain.parse::<i64>() {
        return Value::from(n);
    }
    if plain.chars().any(|c| c.is_ascii_digit()) && plain.chars().all(|c| c.is_ascii_digit() || ".eE+-".contains(c)) {
        if let Some(n) = plain.parse::<f64>().ok().filter(|x| x.is_finite()).and_then(serde_json::Number::from_f64) {
            return Value::Number(n);
        }
    }
    Value::String(s.to_string())
}

/// `a, [b, c], d` split at the commas outside brackets and quotes.
fn split_top(s: &str) -> Vec<&str> {
    let (mut depth, mut quote, mut start) = (0i32, None::<char>, 0);
    let mut out = Vec::new();
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '[' | '(' | '{') => depth += 1,
            (None, ']' | ')' | '}') => depth -= 1,
            (None, ',') if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// `key: value` split at the first `: ` (or a trailing `:`) outside quotes.
fn key_value(s: &str) -> Option<(&str, &str)> {
    let mut quote = None;
    let b = s.as_bytes();
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') if i == 0 => quote = Some(c),
            (None, ':') if i + 1 == b.len() || b[i + 1] == b' ' => {
                let key = s[..i].trim().trim_matches(|c| c == '"' || c == '\'');
                return Some((key, s[i + 1..].trim()));
            }
            _ => {}
        }
    }
    None
}

/// Parses the block at `lines[*i..]` whose lines are indented exactly `indent`.
fn block(ls: &[Line], i: &mut usize, indent: usize, depth: usize) -> Value {
    if ls.get(*i).is_some_and(|l| l.text.starts_with("- ") || l.text == "-") {
        let mut items = Vec::new();
        while let Some(l) = ls.get(*i).filter(|l| l.indent == indent && (l.text.starts_with("- ") || l.text == "-")) {
            *i += 1;
            items.push(scalar(l.text.trim_start_matches('-')));
            // Nested content under an item (a sequence of mappings) is skipped: Bridge's settings are not written so.
            while ls.get(*i).is_some_and(|n| n.indent > indent) {
                *i += 1;
            }
        }
        return Value::Array(items);
    }
    let mut map = Map::new();
    while let Some(l) = ls.get(*i).filter(|l| l.indent == indent) {
        *i += 1;
        let Some((key, rest)) = key_value(l.text) else { continue };
        let child_indent = ls.get(*i).map(|n| n.indent);
        let value = match child_indent {
            // A sequence may sit at the key's own indentation (`key:\n- a`).
            Some(ci) if rest.is_empty() && (ci > indent || (ci == indent && ls[*i].text.starts_with('-'))) => {
                if depth >= MAX_DEPTH {
                    while ls.get(*i).is_some_and(|n| n.indent >= ci && !(n.indent == indent && !n.text.starts_with('-'))) {
                        *i += 1;
                    }
                    Value::Null
                } else {
                    block(ls, i, ci, depth + 1)
                }
            }
            _ if rest == "|" || rest == ">" || rest.starts_with("|-") || rest.starts_with(">-") => {
                let mut text = Vec::new();
                while let Some(n) = ls.get(*i).filter(|n| n.indent > indent) {
                    text.push(n.text);
                    *i += 1;
                }
                Value::String(text.join(if rest.starts_with('|') { "\n" } else { " " }))
            }
            _ => scalar(rest),
        };
        map.insert(key.to_string(), value);
        // Lines indented deeper than this block that no key claimed are skipped.
        while ls.get(*i).is_some_and(|n| n.indent > indent) {
            *i += 1;
        }
    }
    Value::Object(map)
}

/// The document as a JSON value (an object for a mapping document).
pub fn parse(text: &str) -> Value {
    let ls = lines(text);
    let mut i = 0;
    let first = ls.first().map_or(0, |l| l.indent);
    let mut root = Map::new();
    // Top-level blocks; a line indented less than the first ends one and starts the next.
    while i < ls.len() {
        let before = i;
        let indent = ls[i].indent.min(first);
        match block(&ls, &mut i, indent, 0) {
            Value::Object(m) => root.extend(m),
            other => return other,
        }
        // A line no block takes (indented unlike any key before it) is skipped, so every pass moves on.
        if i == before {
            i += 1;
        }
    }
    Value::Object(root)
}

/// The most interpolations one value follows (`${a}` whose node is `${b}` …): OmegaConf's chains are short.
const MAX_INTERPOLATION_HOPS: usize = 8;

/// OmegaConf's node interpolations, resolved as NeMo 1's configs use them: a string that is exactly `${a.b}` (from the
/// root) or `${.b}` (relative: one dot the node's own mapping, each further dot one level up) becomes the scalar it
/// names (`max_position_embeddings: ${.encoder_seq_length}` in NeMo's megatron_gpt_config.yaml). Resolvers
/// (`${multiply:…}`, `${oc.env:…}`), text around an interpolation, and a path to no scalar stay strings.
pub fn interpolate(root: &mut Value) {
    let snapshot = root.clone();
    let mut at = Vec::new();
    walk(root, &mut at, &snapshot, 0);
}

fn walk(v: &mut Value, at: &mut Vec<String>, root: &Value, depth: usize) {
    match v {
        Value::Object(m) if depth < MAX_DEPTH => {
            for (k, child) in m.iter_mut() {
                at.push(k.clone());
                walk(child, at, root, depth + 1);
                at.pop();
            }
        }
        Value::String(s) => {
            if let Some(r) = resolve(s, at, root, 0) {
                *v = r;
            }
        }
        _ => {}
    }
}

/// The scalar `${…}` names from the node at path `at`.
fn resolve(s: &str, at: &[String], root: &Value, hops: usize) -> Option<Value> {
    let inner = s.strip_prefix("${")?.strip_suffix('}')?;
    if hops >= MAX_INTERPOLATION_HOPS || inner.is_empty() || inner.contains(['$', ':', '{', '}', ' ']) {
        return None;
    }
    let dots = inner.len() - inner.trim_start_matches('.').len();
    let base: &[String] = if dots > 0 { &at[..at.len().checked_sub(dots)?] } else { &[] };
    let target: Vec<String> = base.iter().cloned().chain(inner[dots..].split('.').map(str::to_string)).collect();
    let mut node = root;
    for k in &target {
        node = node.get(k.as_str())?;
    }
    match node {
        Value::String(t) if t.starts_with("${") => resolve(t, &target, root, hops + 1),
        Value::Object(_) | Value::Array(_) => None,
        v => Some(v.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nested_mappings_lists_and_scalars() {
        let text = "# c\nmodel:\n  _target_: x.Y\n  tp: 2 # two\n  act:\n    _call_: false\n    _target_: torch.nn.functional.silu\n  scope:\n  - mlp\n  - attn\n  eps: 1.0e-05\n  name: 'a: b'\n  none: null\ntrain:\n  gbs: 256\n  ranks: [0, 1]\n";
        let v = parse(text);
        assert_eq!(
            v,
            json!({"model": {"_target_": "x.Y", "tp": 2, "act": {"_call_": false, "_target_": "torch.nn.functional.silu"},
                   "scope": ["mlp", "attn"], "eps": 1.0e-05, "name": "a: b", "none": null},
                   "train": {"gbs": 256, "ranks": [0, 1]}})
        );
    }

    #[test]
    fn stray_indentation_moves_on() {
        assert_eq!(parse("a: 1\n      b: 2\nc: 3\n"), json!({"a": 1, "c": 3}));
        assert_eq!(parse("     x: 1\n  y: 2\n"), json!({"x": 1, "y": 2}));
    }

    #[test]
    fn omegaconf_interpolations() {
        let mut v = parse("model:\n  encoder_seq_length: 2048\n  max_position_embeddings: ${.encoder_seq_length}\n  data:\n    seq_length: ${model.encoder_seq_length}\n    up: ${..encoder_seq_length}\n  mp: ${multiply:${model.a}, 2}\n  loop: ${model.loop}\n  missing: ${.nope}\n");
        interpolate(&mut v);
        let m = &v["model"];
        assert_eq!((&m["max_position_embeddings"], &m["data"]["seq_length"], &m["data"]["up"]), (&serde_json::json!(2048), &serde_json::json!(2048), &serde_json::json!(2048)));
        assert_eq!((m["mp"].as_str(), m["loop"].as_str(), m["missing"].as_str()), (Some("${multiply:${model.a}, 2}"), Some("${model.loop}"), Some("${.nope}")));
    }

    #[test]
    fn flow_mappings_and_their_depth() {
        assert_eq!(scalar("{a: 1, b: [x, y], c: {d: true}}"), serde_json::json!({"a": 1, "b": ["x", "y"], "c": {"d": true}}));
        // Not `key: value` entries: a string, as before.
        assert_eq!(scalar("{a, b}"), Value::String("{a, b}".into()));
        // A megabyte of brackets is read without recursion past MAX_DEPTH (it would overflow the stack).
        let deep = format!("{}{}", "[".repeat(500_000), "]".repeat(500_000));
        assert!(matches!(scalar(&deep), Value::Array(_)));
        let deep = format!("{}1{}", "{a: ".repeat(100_000), "}".repeat(100_000));
        assert!(matches!(scalar(&deep), Value::Object(_)));
    }

    #[test]
    fn deep_nesting_is_bounded() {
        let mut text = String::new();
        for d in 0..200 {
            text.push_str(&" ".repeat(d));
            text.push_str("k:\n");
        }
        let _ = parse(&text);
    }
}
